"""Shared test fixtures: a scriptable fake device backend, small timing budgets and the paths
of the repository and of the test data, defined once here for every test module."""
from __future__ import annotations

import contextlib
import fcntl
import os
import signal
import sys
import time
from pathlib import Path

import pytest

TESTS = Path(__file__).resolve().parent
ROOT = TESTS.parent
FIXTURES = TESTS / "fixtures"
FAKE_FLAGGEMS = FIXTURES / "fake_flaggems"
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

# Everything on the CPU runs Triton through its interpreter.
os.environ.setdefault("TRITON_INTERPRET", "1")
# no idle gap between two processes' holds of a device lock (tests that want it set it)
os.environ.setdefault("ZLH_DEVICE_COOL_S", "0")

from backends.cuda import CUDA_FATAL, CUDA_POISONED  # noqa: E402
from backends.base import Backend, DeviceIdentity  # noqa: E402
from harness.measure.stopping import Budget, StoppingRule  # noqa: E402

# ir_kernels keeps triton.language as it is at import, before any test runs a kernel through
# the interpreter (which patches it): imported here, first, so that the snapshot is pristine
# whichever test module of this process runs first.
import ir_kernels  # noqa: E402,F401


# ---- bytecode for the zlh processes tests start ---------------------------------------------
# Where PYTHONDONTWRITEBYTECODE is set (some CI hosts set it), every `zlh` process a test starts
# compiled zlh's sources afresh: about 0.3 s of CPU on each of the suite's hundreds of process
# starts. The first pytest process (not an xdist worker) compiles them once into the usual
# __pycache__ folders, which those processes read (the variable stops writing, not reading),
# and removes what it wrote when the run ends.
_COMPILED = [ROOT / "harness", ROOT / "adapters", ROOT / "backends", TESTS / "fixtures",
             TESTS / "examples"]
_written: list[Path] = []


def _bytecode_files() -> set[Path]:
    return {p for top in (*_COMPILED, TESTS) for p in top.rglob("__pycache__/*.pyc")}


def _default_signal_dispositions() -> None:
    """The suite tests what zlh does on SIGINT and SIGHUP, so the processes it starts must not
    inherit them ignored, however the suite was started (a shell's background job ignores
    SIGINT, `nohup` SIGHUP): both get their defaults back in every pytest process. (To keep a
    run alive past a hangup, start it under `setsid`, not `nohup`.)"""
    if signal.getsignal(signal.SIGINT) is signal.SIG_IGN:
        signal.signal(signal.SIGINT, signal.default_int_handler)
    if signal.getsignal(signal.SIGHUP) is signal.SIG_IGN:
        signal.signal(signal.SIGHUP, signal.SIG_DFL)


def pytest_configure(config):
    _default_signal_dispositions()
    if not sys.flags.dont_write_bytecode or hasattr(config, "workerinput"):
        return
    import compileall
    before = _bytecode_files()
    for folder in _COMPILED:
        compileall.compile_dir(folder, quiet=2)
    compileall.compile_dir(TESTS, maxlevels=0, quiet=2)     # helpers that zlh processes import
    _written.extend(sorted(_bytecode_files() - before))


def pytest_unconfigure(config):
    for path in _written:
        with contextlib.suppress(OSError):
            path.unlink()
            path.parent.rmdir()          # once empty


@pytest.fixture(autouse=True)
def _output_width_of_no_terminal(monkeypatch):
    """zlh cuts table lines to $COLUMNS where it is set; a test runner may set it (pytest-xdist
    gives its workers COLUMNS=80), so every test starts without it, as a pipe would."""
    monkeypatch.delenv("COLUMNS", raising=False)
    monkeypatch.delenv("LINES", raising=False)


@pytest.fixture
def fresh_flaggems_modules():
    """The fake FlagGems checkouts' packages (flag_gems, flaggems_vllm, benchmark) imported
    afresh by each test and gone after it, with sys.path as it was (a test's own copy of a
    fixture tree is put on it too). Modules that use the fake checkouts ask for it with
    `pytestmark = pytest.mark.usefixtures("fresh_flaggems_modules")`."""
    trees = [FAKE_FLAGGEMS, FIXTURES / "fake_flaggems_vllm"]

    def purge():
        for name in list(sys.modules):
            if name.split(".")[0] in ("flag_gems", "flaggems_vllm", "benchmark"):
                del sys.modules[name]
        for path in [str(p) for tree in trees for p in (tree, tree / "src")]:
            while path in sys.path:
                sys.path.remove(path)
    purge()
    saved = list(sys.path)
    yield
    sys.path[:] = saved
    purge()


# ---- timing budgets ----------------------------------------------------------------------
# Tests check what zlh does with measurements, never how good they are: the fewest samples and
# milliseconds that still go through every step. A test whose behaviour needs more (an A/B that
# must see a slowdown) derives its budget from this one and says why.
FAST_API = {"warmup_ms": 1.0, "min_samples": 3, "min_time_ms": 0.0, "max_time_ms": 20.0}


def lock_free(path: Path, shared: bool = False) -> bool:
    """Whether another open file description could take the file lock at `path` now —
    exclusive, or (`shared`) shared — (a device lock held by this process blocks it as
    another process's would)."""
    fd = os.open(path, os.O_RDWR)
    try:
        fcntl.flock(fd, (fcntl.LOCK_SH if shared else fcntl.LOCK_EX) | fcntl.LOCK_NB)
    except BlockingIOError:
        return False
    finally:
        os.close(fd)
    return True


def budget_args(**change) -> list[str]:
    """FAST_API with `change` applied, as the options of `zlh bench` (and the commands that run
    it: ab, batch, screen, campaign, calibrate)."""
    return [part for key, value in {**FAST_API, **change}.items()
            for part in (f"--{key.replace('_', '-')}", f"{value:g}")]


FAST = budget_args()
CPU = ["--adapter", "builtin", "--backend", "cpu"]     # the builtin kernels, interpreted
CPU_FAST = [*CPU, *FAST]

# The --op-timeout of the corpus tests that run fault_hang beside ops which must PASS: one the
# passing ops cannot reach on a slow host, kept as short as that allows because fault_hang
# waits it out. It bounds the whole op after the worker is ready: the first op of a fresh worker
# imports Triton and interprets its first kernel, about 3 s on an idle two-core CI host (seen
# 3.9 s under load), and add's 8 cases and softmax's 6 (the overlap tests' shapes) took 3 s of
# CPU; a shared host may run a process at half speed and pause it for a second. At 4 s a busy
# host timed out add or softmax; 10 s left the overlap tests' ops a margin of about 3x.
FAULT_OP_TIMEOUT = "15"


class FakeEvent:
    def __init__(self):
        self.t = None

    def record(self):
        self.t = time.perf_counter()

    def synchronize(self):
        pass

    def elapsed_time(self, other) -> float:
        return (other.t - self.t) * 1e3


class FakeGraph:
    """Replays cost a little host time, so samples are positive."""

    replays = 0

    def replay(self):
        FakeGraph.replays += 1
        sum(range(300))


class FakeBackend(Backend):
    """A device backend whose capture behaviour a test scripts.

    capture_error: exception raised inside graph capture (None: capture records calls).
    rng_error: text returned by rng_usable (None: generator fine).
    device_error: text returned by device_usable (None: the device still works).
    """

    def __init__(self, capture_error=None, rng_error=None, deny=(), device_error=None):
        super().__init__(name="fake", torch_device_type="cpu", supports_graph=True,
                         supports_events=True, capture_deny=frozenset(deny),
                         fatal_patterns=CUDA_FATAL, poisoned_patterns=CUDA_POISONED)
        self.capture_error = capture_error
        self.rng_error = rng_error
        self.device_error = device_error
        self.captures = 0
        self.syncs = 0

    def synchronize(self):
        self.syncs += 1

    def event(self):
        return FakeEvent()

    def new_graph(self):
        return FakeGraph()

    @contextlib.contextmanager
    def graph_capture(self, graph):
        self.captures += 1
        yield graph
        if self.capture_error is not None:
            raise self.capture_error

    def rng_usable(self, index):
        return self.rng_error

    def device_usable(self):
        return self.device_error

    def identity(self, index):
        return DeviceIdentity(index, "Fake Device", "fake_arch", str(index))

    def l2_cache_bytes(self, index):
        return 1 << 20

    def read_telemetry(self, timeout_s=10.0):
        return None


def importable_cases(mp: pytest.MonkeyPatch, folder: Path, name: str | None = None,
                     text: str | None = None) -> None:
    """A user cases module importable here and in every process zlh starts: `text` written as
    `folder/name.py` (when given), `folder`, the repository and tests/ on PYTHONPATH and
    `folder` on sys.path."""
    if text is not None:
        (folder / f"{name}.py").write_text(text)
    mp.setenv("PYTHONPATH", f"{folder}:{ROOT}:{ROOT / 'tests'}")
    mp.syspath_prepend(str(folder))


def install_plugin(site: Path, module: str, source: str, entry_points: str) -> Path:
    """A plugin package installed as pip leaves one: `module`.py and a `.dist-info` with its
    entry points, under `site` (put it on PYTHONPATH)."""
    (site / f"{module}.py").write_text(source)
    info = site / f"{module}-0.1.dist-info"
    info.mkdir()
    (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {module.replace('_', '-')}"
                                   f"\nVersion: 0.1\n")
    (info / "entry_points.txt").write_text(entry_points)
    (info / "RECORD").write_text(f"{module}.py,,\n")
    return site


@pytest.fixture
def fast_rule():
    return StoppingRule(min_samples=5, min_time_ms=1.0, max_time_ms=50.0, max_samples=200,
                        target_rel_err=0.01)


@pytest.fixture
def sure_rule():
    """fast_rule for tests that count samples: it stops at min_samples on any host (a loose
    error target), where fast_rule's 50 ms cap can end a paused process's sampling short."""
    return StoppingRule(min_samples=5, min_time_ms=1.0, max_time_ms=30_000.0, max_samples=200,
                        target_rel_err=1.0)


@pytest.fixture
def fast_budget():
    return Budget(warmup_ms=1.0, max_warmup_calls=5, estimate_calls=2, graph_replay_ms=0.5,
                  max_unroll=8, batch_ms=0.0, samples_per_sync=5)


@pytest.fixture
def fixture_text():
    return lambda name: (FIXTURES / name).read_text()


# ---- corpus roots made once -----------------------------------------------------------------
def _zlh_ok(*args) -> None:
    from click.testing import CliRunner

    from harness.cli import main
    result = CliRunner().invoke(main, [str(a) for a in args])
    assert result.exit_code == 0, result.output


@pytest.fixture(scope="session")
def corpus_batch(tmp_path_factory):
    """A finished `zlh batch` root on the CPU (add, softmax; FAST), made once for every test
    that reads it or damages a copy of it: tests never change it."""
    base = tmp_path_factory.mktemp("corpus_roots")
    shapes = base / "shapes.yaml"
    shapes.write_text("add: [[64]]\nsoftmax: [[4, 64]]\n")
    _zlh_ok("batch", *CPU_FAST, "--shapes", shapes, "--ops", "add,softmax",
            "--out", base / "batch", "-q")
    return base / "batch"


@pytest.fixture(scope="session")
def corpus_roots(corpus_batch):
    """corpus_batch's folder, with `screen` beside it (add, ZLH_BUILTIN_SLOW=0,1): the roots
    that tests damage or refuse, made once. Tests change copies only, never these."""
    base = corpus_batch.parent
    _zlh_ok("screen", *CPU_FAST, "--shapes", base / "shapes.yaml", "--ops", "add",
            "--switch", "ZLH_BUILTIN_SLOW=0,1", "--root", base / "screen")
    return base


@pytest.fixture(scope="session")
def corpus_campaign(corpus_roots):
    """corpus_roots/campaign: one round of the screen's NO_TRITON ops on device 0."""
    _zlh_ok("campaign", "--screen", corpus_roots / "screen", "--devices", "0", "--verdict",
            "NO_TRITON", "--rounds", "1", "--root", corpus_roots / "campaign")
    return corpus_roots / "campaign"
