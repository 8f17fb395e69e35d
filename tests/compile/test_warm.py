"""A warm spare imports ahead what a first call imports lazily, so that a fresh run's first
call of a pointwise op does not pay torch's type promotion (sympy) or Triton's code
generator inside its compile phase."""
import json
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]

PROBE = """
import json, sys, torch
from harness.compile import warm
from torch._prims_common import ELEMENTWISE_TYPE_PROMOTION_KIND, elementwise_dtypes
warmed = warm.import_first_call_modules()
held = set(sys.modules)
elementwise_dtypes(torch.empty(()), type_promotion_kind=ELEMENTWISE_TYPE_PROMOTION_KIND.DEFAULT)
print(json.dumps([sorted(set(sys.modules) - held), warmed,
                  'triton.compiler.code_generator' in sys.modules, 'sympy' in sys.modules]))
"""


def test_a_first_type_promotion_imports_nothing_after_the_warm_up():
    done = subprocess.run([sys.executable, "-c", PROBE], capture_output=True, text=True,
                          check=True, cwd=ROOT)
    new, warmed, generator, sympy = json.loads(done.stdout.strip().splitlines()[-1])
    assert new == []                                   # the first call imports nothing more
    assert sympy and generator
    assert warmed == ["torch type promotion", "triton.compiler.code_generator"]


def test_the_warm_up_skips_what_is_missing(monkeypatch):
    from harness.compile import warm
    monkeypatch.setattr(warm, "COMPILER_MODULES", ("no_such_compiler.code_generator",))
    assert warm.import_first_call_modules() == ["torch type promotion"]
