"""`zlh`'s commands load when asked for: a `zlh bench` process, which every run of a batch,
a screen or an A/B is, imports bench's module and not the other commands'; the name-to-module
table names every command in the module that defines it; a command loaded late still gets
the shared output options."""
import json
import subprocess
import sys

from harness.cli import main
from harness.cli.group import COMMAND_MODULES
from conftest import ROOT

PROBE = """
import json, sys
from harness.cli import main
bench = main.get_command(None, "bench")
print(json.dumps({"loaded": sorted(m for m in sys.modules if m.startswith("harness.cli.")),
                  "ab_report": "harness.ab.report" in sys.modules,
                  "options": sorted(o for p in bench.params for o in getattr(p, "opts", ()))}))
"""


def test_asking_for_bench_loads_bench_and_not_the_other_commands():
    done = subprocess.run([sys.executable, "-c", PROBE], cwd=ROOT, capture_output=True,
                          text=True, check=True)
    found = json.loads(done.stdout)
    others = {f"harness.cli.{m}" for m in COMMAND_MODULES.values()} - {"harness.cli.bench"}
    assert "harness.cli.bench" in found["loaded"] and not others & set(found["loaded"])
    assert not found["ab_report"]          # zlh ab's statistics: not a bench run's import
    assert {"--color", "-v", "-q"} <= set(found["options"])        # installed as it loaded


def test_every_command_is_listed_with_the_module_that_defines_it():
    assert set(main.commands) == set(COMMAND_MODULES)
    assert main.list_commands(None) == sorted(COMMAND_MODULES)
    for name, command in main.commands.items():
        assert command.callback.__module__ == f"harness.cli.{COMMAND_MODULES[name]}", name
    assert main.get_command(None, "no-such-command") is None
