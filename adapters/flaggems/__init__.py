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

from ..base import Adapter, Case, UnknownOp, UnsupportedDtype
from . import tuners
from .cases import (_case_for, _collect, _install_capture, _jsonable, _one_line,
                    _outcome_exceptions, _status_case, _unsupported)
from .corpus import Corpus, CorpusError, TestNode
from .marks import expand_calls

FLAGGEMS_DIR_ENV = "FLAGGEMS_DIR"
FLAGGEMS_VLLM_DIR_ENV = "FLAGGEMS_VLLM_DIR"
PACKAGES = {"flaggems": "flag_gems", "vllm": "flaggems_vllm"}
# FlagGems' vendor name (GEMS_VENDOR) per zlh backend.
VENDORS = {"cuda": "nvidia", "musa": "mthreads", "rocm": "amd", "ascend": "ascend"}
# Classes whose own run()/get_latency() change what is measured; not reproduced.
_SUPPORTED_OVERRIDES = {"Benchmark"}


class FlagGemsAdapter(Adapter):
    name = "flaggems"
    env_prefixes = ("FLAGGEMS_", "GEMS_", "USE_FLAGTUNE")
    version_packages = ("flag_gems", "flaggems_vllm")

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
        from harness.common.errors import PreflightError
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
            from harness.common.errors import PreflightError
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
        from harness.common.errors import PreflightError
        root = self.root(repo)
        package = PACKAGES[repo]
        for path in (root / "src", root):
            if path.is_dir() and str(path) not in sys.path:
                sys.path.insert(0, str(path))
        if repo in self._loaded:
            self._configure(level, shape_file, root)
            return self._loaded[repo]
        if package in sys.modules and not tuners.follow_environment():
            raise PreflightError("tuner_cache", "this FlagGems keeps its tuner DB where it was "
                                 "opened first; run each op in its own process "
                                 "(--fresh-process)")
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
        """Name the vendor (FlagGems reads GEMS_VENDOR at import), then import and configure
        FlagGems and its benchmark package."""
        vendor = VENDORS.get(backend.name)
        if vendor:
            os.environ.setdefault("GEMS_VENDOR", vendor)
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
        from harness.common import markers
        return [markers.marker("FOREIGN_VENDOR_MODULE", active=vendor, loaded=other)
                for other in sorted(loaded)]

    # ---- tuners, tuner cache, inventory -------------------------------------------------
    def tuner_support(self):
        return tuners.tuner_support()

    def tuner_cache(self, root, isolate: bool, environ):
        return tuners.tuner_cache(root, isolate, environ)

    def describe_ops(self, include_hidden: bool = False) -> list[dict]:
        rows = []
        # no checkout at all: the flaggems root's preflight error says what to pass
        for repo in [r for r in ("flaggems", "vllm") if self.dirs.get(r)] or ["flaggems"]:
            for node in self.corpus(repo).nodes:
                rows.append({"op": node.qualified, "repo": repo, "file": node.file,
                             "function": node.function, "marks": ",".join(node.marks) or "-",
                             "skip_marks": " | ".join(node.skip_marks) or "-",
                             "unconditional_skip": node.unconditional_skip})
        return rows

    def repo_of(self, op: str) -> str:
        return "vllm" if op.startswith("vllm:") else "flaggems"

    def reset_between_ops(self) -> None:
        _empty_cache()

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


def _empty_cache() -> None:
    try:
        from flag_gems.runtime import torch_device_fn
        torch_device_fn.empty_cache()
    except Exception:  # noqa: BLE001
        pass


def _commit(root: Path) -> str | None:
    from harness.store.identity import git_commit
    commit = git_commit(root)
    if commit:
        return commit
    stamp = root / "COMMIT"     # exported trees (git archive) may carry the commit in a file
    return stamp.read_text().strip() if stamp.is_file() else None
