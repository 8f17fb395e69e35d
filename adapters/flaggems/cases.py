"""Benchmarks to cases: collecting the Benchmarks a FlagGems test function builds (its
`Benchmark.run` patched to collect instead of run), and turning one into zlh cases exactly as
its own `run()` would measure them. Nothing here times anything."""
from __future__ import annotations

import contextlib
import importlib
import inspect
import sys

from harness.common.errors import CaseFailure, one_line

from ..base import Case, CaseInputs


def _failure(reason: str, detail: str):

    def build():
        raise CaseFailure(reason, detail)
    return build


def _outcome_exceptions():
    """pytest.skip / pytest.fail raise BaseException subclasses: name them explicitly."""
    import pytest  # FlagGems' test runner: only collecting its cases needs it
    return pytest.skip.Exception, pytest.fail.Exception


def _one_line(exc: BaseException) -> str:
    return one_line(getattr(exc, "msg", None) or exc)


_COLLECTING: list | None = None


def _install_capture(benchmark_cls) -> None:
    """Patch `run` on Benchmark and on every subclass with its own `run`, now and later."""
    if getattr(benchmark_cls, "_zlh_capture", False):
        return

    def capture_run(self, *args, **kwargs):
        if _COLLECTING is None:   # not driving a test function: behave as before
            own = next(c.__dict__["_zlh_own_run"] for c in type(self).__mro__
                       if "_zlh_own_run" in c.__dict__)
            return own(self, *args, **kwargs)
        _COLLECTING.append(self)
        return None

    def patch(cls):
        # The run() this class would call: its own, or one a mixin ahead of Benchmark in its
        # MRO brings (upstream's parallel benchmarks); either is replaced on the class itself.
        owner = next(c for c in cls.__mro__ if "run" in c.__dict__)
        if owner.__dict__["run"] is not capture_run:
            cls._zlh_own_run, cls._zlh_run_owner = owner.__dict__["run"], owner.__name__
            cls.run = capture_run

    def walk(cls):
        patch(cls)
        for sub in cls.__subclasses__():
            walk(sub)

    original_init_subclass = benchmark_cls.__dict__.get("__init_subclass__")

    def init_subclass(cls, **kwargs):
        if original_init_subclass is not None:
            original_init_subclass.__func__(cls, **kwargs)
        else:
            super(benchmark_cls, cls).__init_subclass__(**kwargs)
        patch(cls)

    walk(benchmark_cls)
    benchmark_cls.__init_subclass__ = classmethod(init_subclass)
    benchmark_cls._zlh_capture = True


def _collect(fn, kwargs) -> list:
    global _COLLECTING
    previous, _COLLECTING = _COLLECTING, []
    try:
        fn(**kwargs)
        return _COLLECTING
    finally:
        _COLLECTING = previous


def _fixture_marker(obj):
    """pytest's marker on a fixture definition (pytest 8.4+ and older), else None."""
    return (getattr(obj, "_fixture_function_marker", None) or
            getattr(obj, "_pytestfixturefunction", None))


def module_autouse_fixtures(fn) -> list:
    """The autouse fixtures the test function's own module defines (e.g. one that installs
    Triton's allocator), as plain functions, in definition order. conftest.py's are
    upstream's harness chores (device cache clearing, query mode) and are not run."""
    module = sys.modules.get(getattr(fn, "__module__", ""), None)
    found = []
    for obj in vars(module).values() if module is not None else ():
        marker = _fixture_marker(obj)
        if marker is None or not getattr(marker, "autouse", False):
            continue
        unwrap = getattr(obj, "_get_wrapped_function", None)
        found.append(unwrap() if callable(unwrap) else getattr(obj, "__wrapped__", obj))
    return found


def _enter_fixture(stack: contextlib.ExitStack, fixture, monkeypatch) -> None:
    """Run a fixture's set-up now and its tear-down (a generator's rest) when `stack` ends."""
    params = inspect.signature(fixture).parameters
    unknown = [p for p in params if p != "monkeypatch"]
    if unknown:
        raise _FixtureUnsupported(f"{fixture.__name__} (autouse) needs {', '.join(unknown)}")
    result = fixture(**({"monkeypatch": monkeypatch()} if params else {}))
    if inspect.isgenerator(result):
        next(result, None)
        stack.callback(next, result, None)


class _FixtureUnsupported(Exception):
    pass


def _guarded(action, stage: str = ""):
    """(action(), None), or ([], (kind, reason)) for what upstream code raised: SKIP for
    pytest.skip or a fixture zlh cannot give, FAIL otherwise (`stage` starts the reason)."""
    skipped, failed = _outcome_exceptions()
    try:
        return action(), None
    except _FixtureUnsupported as exc:
        return [], ("SKIP", f"UNSUPPORTED fixture {exc}")
    except skipped as exc:
        return [], ("SKIP", _one_line(exc))
    except failed as exc:
        return [], ("FAIL", f"{stage}{_one_line(exc)}")
    except Exception as exc:  # noqa: BLE001
        return [], ("FAIL", f"{stage}{type(exc).__name__}: {_one_line(exc)}")


@contextlib.contextmanager
def collecting(fn, call):
    """Call one test function call with `Benchmark.run` collecting. Yields (benchmarks, None),
    or ([], (kind, reason)) with kind SKIP (unknown fixture, pytest.skip) or FAIL. The test
    module's autouse fixtures run first, as pytest runs them; they and a `monkeypatch`
    argument stay live until the block ends (the cases are timed inside it)."""
    params = inspect.signature(fn).parameters
    unknown = [p for p in params if p not in call.kwargs and p != "monkeypatch"]
    if unknown:
        yield [], ("SKIP", f"UNSUPPORTED fixture {', '.join(unknown)}")
        return
    import pytest  # FlagGems' test runner: only collecting its cases needs it
    with contextlib.ExitStack() as stack:
        kwargs = dict(call.kwargs)
        patches = []

        def monkeypatch():
            if not patches:
                patches.append(stack.enter_context(pytest.MonkeyPatch.context()))
            return patches[0]
        if "monkeypatch" in params:
            kwargs["monkeypatch"] = monkeypatch()
        _, problem = _guarded(lambda: [_enter_fixture(stack, fixture, monkeypatch)
                                       for fixture in module_autouse_fixtures(fn)],
                              "autouse fixture: ")
        yield ([], problem) if problem else _guarded(lambda: _collect(fn, kwargs))


def _unsupported(bench, benchmark_cls) -> str | None:
    """Why zlh cannot reproduce this benchmark's measurement: a class before Benchmark in its
    MRO (a subclass or a mixin) that brings its own run() or get_latency(); else None."""
    for cls in type(bench).__mro__:
        if cls is benchmark_cls:
            return None
        if "_zlh_own_run" in cls.__dict__:
            owner = cls.__dict__.get("_zlh_run_owner", cls.__name__)
            return f"{owner} overrides run(): its measurement is not reproduced"
        if "get_latency" in cls.__dict__:
            return f"{cls.__name__} overrides get_latency(): its measurement is not reproduced"
    return None


def _status_case(op: str, detail: str, kind: str, reason: str, dtype: str = "-") -> Case:
    """A case that only reports: SKIP (skipped) or FAIL (fails when built)."""
    return Case(op=op, dtype=dtype, shape=None, shape_detail=detail, variant=detail,
                build=_failure("benchmark_error", reason) if kind == "FAIL" else (lambda: None),
                baseline=lambda *a, **k: None, under_test=lambda *a, **k: None,
                skip_reason=reason if kind == "SKIP" else None)


def _case_for(op: str, bench, dtype_name: str, item, label: str, package: str = "flag_gems",
              info: dict | None = None) -> Case:
    """`package` is the library whose `use_gems` routes torch ops (flag_gems, or
    flaggems_vllm for FlagGems-vllm's benchmarks); `info` annotates every case."""
    library = importlib.import_module(package)
    args, kwargs = bench.unpack_to_args_kwargs(item)
    detail = _shape_detail(bench.record_shapes(*args, **kwargs))
    if bench.gems_op is not None:
        gems_fn, context = bench.gems_op, None
    else:
        gems_fn = bench.torch_op
        exclude = [] if bench.op_name == "zero_" else ["zero_"]
        # A fresh use_gems per entry: it is single-use. The harness enters it around the
        # calls of the function under test only, never around its own device work.
        context = lambda: library.use_gems(exclude=exclude)  # noqa: E731
    baseline, under_test = bench.torch_op, gems_fn
    if bench.is_backward:
        baseline, under_test = _backward(bench.torch_op), _backward(gems_fn)

    def metrics(inputs, torch_ms, gems_ms):
        out = {}
        wanted = bench.to_bench_metrics
        if "gbps" in wanted:
            if torch_ms is not None:            # None: the baseline was not timed
                out["torch_gbps"] = bench.get_gbps(args, latency=torch_ms)
            out["gems_gbps"] = bench.get_gbps(args, latency=gems_ms)
        if "tflops" in wanted:
            out["tflops"] = bench.get_tflops(bench.torch_op, *args, **kwargs) / gems_ms / 1e12 * 1e3
        return out

    return Case(op=op, dtype=dtype_name, shape=None, shape_detail=detail,
                variant=bench.op_name + (f"[{label}]" if label != "-" else ""),
                build=lambda: CaseInputs(tuple(args), dict(kwargs)),
                baseline=baseline, under_test=under_test, under_test_context=context,
                metrics=metrics,
                info={"benchmark": type(bench).__name__, "op_name": bench.op_name,
                      **({"call": label} if label != "-" else {}), **(info or {})})


def _backward(op):
    """Time gradients as FlagGems does: forward once (lazily, under the caller's context),
    then `torch.autograd.grad` with retained graph on every call — forward again when
    called on other inputs (a placement's copy, the output check's), so that the gradient
    is of the inputs it is given."""
    import torch  # heavy: imported only where used
    state = {}

    def fn(*args, **kwargs):
        given = state.get("args")
        if given is None or len(given) != len(args) or any(
                a is not b for a, b in zip(args, given)):
            out = op(*args, **kwargs)
            state["out"], state["dout"], state["args"] = out, torch.randn_like(out), args
            state["xs"] = [a for a in args if torch.is_tensor(a) and a.requires_grad]
        return torch.autograd.grad((state["out"],), state["xs"], grad_outputs=(state["dout"],),
                                   retain_graph=True)
    return fn


def _shape_detail(parsed) -> str:
    def fmt(item):
        if hasattr(item, "__len__") and type(item).__name__ == "Size":
            return "x".join(str(d) for d in item) or "scalar"
        if isinstance(item, (list, tuple)):
            return "[" + ", ".join(fmt(i) for i in item) + "]"
        if isinstance(item, dict):
            return ", ".join(f"{k}={fmt(v)}" for k, v in item.items())
        return str(item).replace("torch.", "")
    if isinstance(parsed, tuple) and len(parsed) == 2 and isinstance(parsed[1], dict):
        return fmt(parsed[0])[1:-1] + ", " + fmt(parsed[1])
    if isinstance(parsed, list):
        return fmt(parsed)[1:-1]
    return fmt(parsed)


def _jsonable(value):
    if isinstance(value, (list, tuple)):
        return [_jsonable(v) for v in value]
    if isinstance(value, (int, float, str, bool)) or value is None:
        return value
    return str(value)
