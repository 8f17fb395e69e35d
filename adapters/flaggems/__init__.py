"""The FlagGems adapter: FlagGems' own `benchmark/` corpus, driven without pytest.

For an op it finds the benchmark test function statically, imports FlagGems and the test
module, calls the function with `Benchmark.run` patched so that every Benchmark it builds is
collected instead of run, then turns each collected Benchmark into cases exactly as its
`run()` would measure them: `init_user_config()`, `get_input_iter(dtype)`,
`unpack_to_args_kwargs`, torch baseline vs the gems function (`gems_op`, else `torch_op`
inside `flag_gems.use_gems(exclude=["zero_"])`). It never times anything.
"""
from __future__ import annotations

import contextlib
import importlib
import importlib.util
import inspect
import os
import sys
from pathlib import Path
from typing import Iterator, Sequence

from ..base import Adapter, Case, CaseInputs, UnknownOp, UnsupportedDtype
from .corpus import Corpus, CorpusError, TestNode
from .marks import expand_calls

FLAGGEMS_DIR_ENV = "FLAGGEMS_DIR"
FLAGGEMS_VLLM_DIR_ENV = "FLAGGEMS_VLLM_DIR"
PACKAGES = {"flaggems": "flag_gems", "vllm": "flaggems_vllm"}
# Classes whose own run()/get_latency() change what is measured; not reproduced.
_SUPPORTED_OVERRIDES = {"Benchmark"}


def _failure(reason: str, detail: str):
    from harness.errors import CaseFailure

    def build():
        raise CaseFailure(reason, detail)
    return build


def _outcome_exceptions():
    """pytest.skip / pytest.fail raise BaseException subclasses: name them explicitly."""
    import pytest
    return pytest.skip.Exception, pytest.fail.Exception


def _one_line(exc: BaseException) -> str:
    from harness.errors import one_line
    return one_line(getattr(exc, "msg", None) or exc)


class FlagGemsAdapter(Adapter):
    name = "flaggems"
    uses_tuner_db = True

    def __init__(self, flaggems_dir: str | None = None, vllm_dir: str | None = None, **_):
        self.dirs = {
            "flaggems": flaggems_dir or os.environ.get(FLAGGEMS_DIR_ENV),
            "vllm": vllm_dir or os.environ.get(FLAGGEMS_VLLM_DIR_ENV),
        }
        self._corpora: dict[str, Corpus] = {}
        self._nodes: dict[str, TestNode] = {}
        self._loaded: dict[str, object] = {}      # repo -> benchmark.base module
        self._used: dict[str, dict] = {}
        self._config = None

    # ---- static: corpus and names (no import) ------------------------------------------
    def root(self, repo: str = "flaggems") -> Path:
        from harness.errors import PreflightError
        directory = self.dirs.get(repo)
        env = FLAGGEMS_DIR_ENV if repo == "flaggems" else FLAGGEMS_VLLM_DIR_ENV
        if not directory:
            raise PreflightError("flaggems_dir", f"no {repo} checkout given: pass --flaggems-dir"
                                 f"{'' if repo == 'flaggems' else '/--flaggems-vllm-dir'} "
                                 f"or set {env}")
        root = Path(directory).expanduser().resolve()
        if not (root / "benchmark").is_dir():
            raise PreflightError("flaggems_dir", f"{root} has no benchmark/ directory "
                                                 f"(is it a FlagGems checkout?)")
        return root

    def corpus(self, repo: str = "flaggems") -> Corpus:
        if repo not in self._corpora:
            self._corpora[repo] = Corpus.scan(self.root(repo), repo)
        return self._corpora[repo]

    def ops(self) -> list[str]:
        return sorted({n.qualified for n in self.corpus().nodes})

    def resolve(self, op: str) -> str:
        repo, name = ("vllm", op[len("vllm:"):]) if op.startswith("vllm:") else ("flaggems", op)
        try:
            node = self.corpus(repo).resolve(name)
        except CorpusError as exc:
            raise UnknownOp(str(exc)) from None
        key = node.qualified
        self._nodes[key] = node
        test_file = node.root / node.file
        if not test_file.is_file():
            from harness.errors import PreflightError
            raise PreflightError("test_file", f"{test_file} does not exist")
        return key

    def node(self, op: str) -> TestNode:
        return self._nodes[op] if op in self._nodes else self._nodes[self.resolve(op)]

    def available(self) -> tuple[bool, str]:
        missing = [m for m in ("triton", "pytest") if importlib.util.find_spec(m) is None]
        for repo in {n.repo for n in self._nodes.values()} or {"flaggems"}:
            package = PACKAGES[repo]
            src = self.root(repo) / "src"
            if not (src / package).is_dir() and importlib.util.find_spec(package) is None:
                missing.append(package)
        if missing:
            return False, f"python {sys.executable} cannot import {', '.join(missing)}"
        return True, ""

    # ---- dtypes and shapes ---------------------------------------------------------------
    def dtypes(self, op: str, backend) -> list[str]:
        import torch
        return sorted(n for n, v in vars(torch).items() if isinstance(v, torch.dtype))

    def default_dtypes(self, op: str, backend):
        return None   # each Benchmark's own dtypes, as upstream without --dtypes

    def check_dtypes(self, op: str, backend, wanted: Sequence[str]) -> list[str]:
        known = set(self.dtypes(op, backend))
        bad = [d for d in wanted if d not in known]
        if bad:
            raise UnsupportedDtype(f"unknown dtype {', '.join(bad)} (torch dtype names, e.g. "
                                   f"float16, bfloat16, float32, int32, complex64)")
        return list(wanted)

    def default_shape_mode(self) -> str:
        return "upstream"

    def shapes_used(self, op: str) -> dict:
        return self._used.get(op, {})

    # ---- import (once per process) -------------------------------------------------------
    def _load(self, repo: str, level: str, shape_file: str | None):
        from harness.errors import PreflightError
        root = self.root(repo)
        package = PACKAGES[repo]
        for path in (root / "src", root):
            if path.is_dir() and str(path) not in sys.path:
                sys.path.insert(0, str(path))
        if repo in self._loaded:
            self._configure(level, shape_file, root)
            return self._loaded[repo]
        try:
            importlib.import_module(package)
            conftest = importlib.import_module("benchmark.conftest")
        except Exception as exc:  # noqa: BLE001 - any import failure is a preflight failure
            raise PreflightError("import_flag_gems", f"python {sys.executable} cannot import "
                                 f"{package} from {root}: {_one_line(exc)}") from None
        # base.py binds `Config` from conftest at import: install ours first.
        conftest.Config = conftest.BenchConfig()
        self._config = conftest.Config
        self._configure(level, shape_file, root)
        base = importlib.import_module("benchmark.base")
        _install_capture(base.Benchmark)
        self._loaded[repo] = base
        return base

    def _configure(self, level: str, shape_file: str | None, root: Path) -> None:
        consts = importlib.import_module("benchmark.consts")
        config = self._config
        config.bench_level = consts.BenchLevel(level)
        config.mode = consts.BenchMode.KERNEL   # unused: zlh times; kept for code that reads it
        config.query = False
        config.user_desired_dtypes = None
        config.user_desired_metrics = None
        config.shape_file = shape_file or str(root / "benchmark" / "core_shapes.yaml")

    def prepare(self, ops, backend, level: str, shapes) -> None:
        for repo in sorted({self.node(op).repo for op in ops}):
            self._load(repo, level, shapes.path if shapes is not None else None)

    # ---- cases -------------------------------------------------------------------------------
    def cases(self, op: str, dtypes: Sequence[str] | None, shapes, level: str, backend,
              device: str) -> Iterator[Case]:
        node = self.node(op)
        base = self._load(node.repo, level, shapes.path if shapes is not None else None)
        self._used[op] = {}
        module_name = node.file[:-3].replace("/", ".")
        try:
            module = importlib.import_module(module_name)
        except _outcome_exceptions() as exc:
            yield _status_case(op, "module", "SKIP", f"import: {_one_line(exc)}")
            return
        except Exception as exc:  # noqa: BLE001
            yield _status_case(op, "module", "FAIL", f"import {module_name}: {_one_line(exc)}")
            return
        fn = getattr(module, node.function)
        for call in expand_calls(fn, module):
            label = call.id or "-"
            if call.skip:
                yield _status_case(op, label, "SKIP", call.skip)
                continue
            yield from self._call_cases(op, fn, call, base, dtypes, label)
        _empty_cache()

    def _call_cases(self, op, fn, call, base, dtypes, label) -> Iterator[Case]:
        skipped, failed = _outcome_exceptions()
        params = inspect.signature(fn).parameters
        unknown = [p for p in params if p not in call.kwargs and p != "monkeypatch"]
        if unknown:
            yield _status_case(op, label, "SKIP", f"UNSUPPORTED fixture {', '.join(unknown)}")
            return
        import pytest
        with contextlib.ExitStack() as stack:
            kwargs = dict(call.kwargs)
            if "monkeypatch" in params:
                kwargs["monkeypatch"] = stack.enter_context(pytest.MonkeyPatch.context())
            try:
                benches = _collect(fn, kwargs)
            except skipped as exc:
                yield _status_case(op, label, "SKIP", _one_line(exc))
                return
            except failed as exc:
                yield _status_case(op, label, "FAIL", _one_line(exc))
                return
            except Exception as exc:  # noqa: BLE001
                yield _status_case(op, label, "FAIL", f"{type(exc).__name__}: {_one_line(exc)}")
                return
            if not benches:
                yield _status_case(op, label, "SKIP", "the test function built no Benchmark")
            for bench in benches:
                yield from self._bench_cases(op, bench, base, dtypes, label)

    def _bench_cases(self, op, bench, base, dtypes, label) -> Iterator[Case]:
        import torch
        skipped, failed = _outcome_exceptions()
        unsupported = _unsupported(bench, base.Benchmark)
        if unsupported:
            yield _status_case(op, f"{label}:{bench.op_name}", "SKIP", f"UNSUPPORTED {unsupported}")
            return
        # set_metrics appends to the class-level DEFAULT_METRICS list: give this benchmark its own.
        bench.metrics = list(bench.metrics)
        if dtypes:
            wanted = [getattr(torch, d) for d in dtypes]
            usable = [d for d in wanted if d in bench.dtypes]
            if not usable:
                have = ", ".join(str(d).replace("torch.", "") for d in bench.dtypes)
                yield _status_case(op, bench.op_name, "SKIP",
                                   f"dtype {', '.join(dtypes)} not supported by "
                                   f"{bench.op_name} (supports {have})")
                return
            self._config.user_desired_dtypes = usable
        else:
            self._config.user_desired_dtypes = None
        try:
            bench.init_user_config()
        except skipped as exc:
            yield _status_case(op, bench.op_name, "SKIP", _one_line(exc))
            return
        except (failed, Exception) as exc:  # noqa: B014
            yield _status_case(op, bench.op_name, "FAIL", f"init_user_config: {_one_line(exc)}")
            return
        self._used[op][bench.op_name] = {"shapes": _jsonable(bench.shapes),
                                         "shape_desc": str(bench.shape_desc)}
        for dtype in bench.to_bench_dtypes:
            dtype_name = str(dtype).replace("torch.", "")
            inputs = bench.get_input_iter(dtype)
            while True:
                try:
                    item = next(inputs)
                except StopIteration:
                    break
                except skipped as exc:
                    yield _status_case(op, bench.op_name, "SKIP", _one_line(exc), dtype_name)
                    break
                except (failed, Exception) as exc:  # noqa: B014
                    yield _status_case(op, bench.op_name, "FAIL",
                                       f"get_input_iter: {_one_line(exc)}", dtype_name)
                    break
                yield _case_for(op, bench, dtype_name, item, label)

    def run_markers(self, op: str) -> list[str]:
        """FOREIGN_VENDOR_MODULE when another vendor's backend modules were imported."""
        vendor = os.environ.get("GEMS_VENDOR")
        try:
            import flag_gems
            vendor = getattr(flag_gems, "vendor_name", vendor)
        except Exception:  # noqa: BLE001
            return []
        backend_dir = Path(flag_gems.__file__).parent / "runtime" / "backend"
        vendors = sorted(p.name[1:] for p in backend_dir.glob("_*") if p.is_dir())
        loaded = set()
        for name in list(sys.modules):
            root = name.split(".")[-1] if name.startswith("flag_gems.runtime.backend._") else \
                name.split(".")[0]
            for other in vendors:
                if other != vendor and (root == f"_{other}" or
                                        root.startswith(f"_{other}_")):
                    loaded.add(other)
        from harness import markers
        return [markers.marker("FOREIGN_VENDOR_MODULE", active=vendor, loaded=other)
                for other in sorted(loaded)]

    def identity(self, op: str | None = None) -> dict:
        out = {"adapter": self.name}
        node = self._nodes.get(op) if op else None
        repo = node.repo if node else "flaggems"
        try:
            root = self.root(repo)
        except Exception:  # noqa: BLE001
            return out
        out.update({"repo": repo, "flaggems_dir": str(root), "commit": _commit(root)})
        if node:
            out["node"] = node.node_id
        package = sys.modules.get(PACKAGES[repo])
        if package is not None:
            out["version"] = getattr(package, "__version__", None)
            out["package_file"] = getattr(package, "__file__", None)
            out["vendor"] = getattr(package, "vendor_name", None)
        return out


# ---- helpers ---------------------------------------------------------------------------------
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
        if "run" in cls.__dict__ and cls.__dict__["run"] is not capture_run:
            cls._zlh_own_run = cls.__dict__["run"]
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


def _unsupported(bench, benchmark_cls) -> str | None:
    for cls in type(bench).__mro__:
        if cls is benchmark_cls or not isinstance(cls, type) or \
                not issubclass(cls, benchmark_cls):
            continue
        if "_zlh_own_run" in cls.__dict__:
            return f"{cls.__name__} overrides run(): its measurement is not reproduced"
        if "get_latency" in cls.__dict__:
            return f"{cls.__name__} overrides get_latency(): its measurement is not reproduced"
    return None


def _status_case(op: str, detail: str, kind: str, reason: str, dtype: str = "-") -> Case:
    """A case that only reports: SKIP (skipped) or FAIL (fails when built)."""
    return Case(op=op, dtype=dtype, shape=None, shape_detail=detail, variant=detail,
                build=_failure("benchmark_error", reason) if kind == "FAIL" else (lambda: None),
                baseline=lambda *a, **k: None, under_test=lambda *a, **k: None,
                skip_reason=reason if kind == "SKIP" else None)


def _case_for(op: str, bench, dtype_name: str, item, label: str) -> Case:
    import flag_gems
    args, kwargs = bench.unpack_to_args_kwargs(item)
    detail = _shape_detail(bench.record_shapes(*args, **kwargs))
    if bench.gems_op is not None:
        gems_fn, context = bench.gems_op, None
    else:
        gems_fn = bench.torch_op
        exclude = [] if bench.op_name == "zero_" else ["zero_"]
        # A fresh use_gems per entry: it is single-use. zero_ stays native so a timer's L2
        # flush is never routed through gems.
        context = lambda: flag_gems.use_gems(exclude=exclude)  # noqa: E731
    baseline, under_test = bench.torch_op, gems_fn
    if bench.is_backward:
        baseline, under_test = _backward(bench.torch_op), _backward(gems_fn)

    def metrics(inputs, torch_ms, gems_ms):
        out = {}
        wanted = bench.to_bench_metrics
        if "gbps" in wanted:
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
                      **({"call": label} if label != "-" else {})})


def _backward(op):
    """Time gradients as FlagGems does: forward once (lazily, under the caller's context),
    then `torch.autograd.grad` with retained graph on every call."""
    import torch
    state = {}

    def fn(*args, **kwargs):
        if "out" not in state:
            out = op(*args, **kwargs)
            state["out"], state["dout"] = out, torch.randn_like(out)
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


def _empty_cache() -> None:
    try:
        from flag_gems.runtime import torch_device_fn
        torch_device_fn.empty_cache()
    except Exception:  # noqa: BLE001
        pass


def _commit(root: Path) -> str | None:
    from harness.identity import git_commit
    commit = git_commit(root)
    if commit:
        return commit
    stamp = root / "COMMIT"     # exported trees (git archive) may carry the commit in a file
    return stamp.read_text().strip() if stamp.is_file() else None
