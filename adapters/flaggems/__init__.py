"""The FlagGems adapter: FlagGems' own `benchmark/` corpus, driven without pytest.

For an op it finds the benchmark test function statically, imports FlagGems and the test
module, calls the function with `Benchmark.run` patched so that every Benchmark it builds is
collected instead of run, then turns each collected Benchmark into cases exactly as its
`run()` would measure them: `init_user_config()`, `get_input_iter(dtype)`,
`unpack_to_args_kwargs`, torch baseline vs the gems function (`gems_op`, else `torch_op`
inside `flag_gems.use_gems(exclude=["zero_"])`). It never times anything.
"""
from __future__ import annotations

import importlib
import importlib.util
import os
import sys
from pathlib import Path
from typing import Iterator, Sequence

from harness.common.errors import PreflightError
from harness.common import log

from ..base import Adapter, Case, UnknownOp, Unsupported, UnsupportedDtype
from ..device_inputs import DeviceInputs
from . import inject, inventory, model_shapes, notices, shapesets, tuners, upstream_config
from .cases import (_case_for, _install_capture, _jsonable, _one_line, _outcome_exceptions,
                    _status_case, _unsupported, collecting)
from .checkout import (FLAGGEMS_DIR_ENV, FLAGGEMS_VLLM_DIR_ENV, PACKAGES, checkout_root,
                       commit as _commit, node_checkout, split_call)
from .corpus import Corpus, CorpusError, TestNode
from .marks import expand_calls, select_call

# FlagGems' vendor name (GEMS_VENDOR) per zlh backend.
VENDORS = {"cuda": "nvidia", "musa": "mthreads", "rocm": "amd", "ascend": "ascend"}
# Classes whose own run()/get_latency() change what is measured; not reproduced.
_SUPPORTED_OVERRIDES = {"Benchmark"}


class FlagGemsAdapter(Adapter):
    name = "flaggems"
    env_prefixes = ("FLAGGEMS_", "GEMS_", "USE_FLAGTUNE")
    # USE_FLAGTUNE=1: FlagGems' @libtuner kernels tune over the FlagTune expanded config
    # space (runtime.ops_get_configs) instead of their default configs.
    tuning_switches = ("USE_FLAGTUNE",)
    version_packages = ("flag_gems", "flaggems_vllm")

    def __init__(self, flaggems_dir: str | None = None, vllm_dir: str | None = None, **_):
        self.dirs = {
            "flaggems": flaggems_dir or os.environ.get(FLAGGEMS_DIR_ENV),
            "vllm": vllm_dir or os.environ.get(FLAGGEMS_VLLM_DIR_ENV),
        }
        # How each checkout was found (run.json's adapter identity says it).
        self.found = {"flaggems": "--flaggems-dir" if flaggems_dir else FLAGGEMS_DIR_ENV,
                      "vllm": "--vllm" if vllm_dir else FLAGGEMS_VLLM_DIR_ENV}
        self._corpora: dict[str, Corpus] = {}
        self._nodes: dict[str, TestNode] = {}
        self._selected: dict[str, str] = {}        # op -> the one parametrized call it runs
        self._loaded: dict[str, object] = {}      # repo -> benchmark.base module
        self._used: dict[str, dict] = {}
        self._checked_files: set[Path] = set()     # core_shapes.yaml files that parse
        self._markers: dict[str, list[str]] = {}   # op -> adapter marker lines
        self._shape_doc: dict | None = None          # the zlh shape file, when one is given
        self._config = None
        self._drawn: dict[str, DeviceInputs] = {}  # op -> its inputs drawn on the device

    # ---- static: corpus and names (no import) ------------------------------------------
    def root(self, repo: str = "flaggems") -> Path:
        return checkout_root(self.dirs, self.found, repo)

    def corpus(self, repo: str = "flaggems") -> Corpus:
        if repo not in self._corpora:
            self._corpora[repo] = Corpus.scan(self.root(repo), repo)
        return self._corpora[repo]

    def ops(self) -> list[str]:
        return sorted({n.qualified for n in self.corpus().nodes})

    def resolve(self, op: str) -> str:
        """`name` or `name[CALL]`: CALL selects one parametrized call of the benchmark
        function by its pytest id (`grid_sample[dtype0]`, as in a pytest node id)."""
        repo, name = ("vllm", op[len("vllm:"):]) if op.startswith("vllm:") else ("flaggems", op)
        name, call = split_call(name)
        checkout = node_checkout(name)
        if checkout is not None and not self.dirs.get(repo):
            self.dirs[repo], self.found[repo] = str(checkout), "the op's node id"
            log.progress(f"FlagGems checkout: {checkout} (the op's node id)")
        try:
            node = self.corpus(repo).resolve(name)
        except CorpusError as exc:
            raise UnknownOp(str(exc)) from None
        key = node.qualified + (f"[{call}]" if call else "")
        self._nodes[key] = node
        if call:
            self._selected[key] = call
        test_file = node.root / node.file
        if not test_file.is_file():
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
    def check_shapes(self, op: str, shapes, level: str) -> None:
        """Without a shape file the benchmark reads the checkout's core_shapes.yaml: one
        that cannot be read fails the checkout (PREFLIGHT_FAILED), not every case."""
        path = self.root(self.node(op).repo) / "benchmark" / "core_shapes.yaml"
        if shapes is None and path.exists() and path not in self._checked_files:
            try:
                shapesets.core_shapes(path)
            except Unsupported as exc:
                raise PreflightError("flaggems_dir", str(exc)) from None
            self._checked_files.add(path)

    def dtypes(self, op: str, backend) -> list[str]:
        import torch  # heavy: imported only where used
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
        root = self.root(repo)
        package = PACKAGES[repo]
        for path in (root / "src", root):
            if path.is_dir() and str(path) not in sys.path:
                sys.path.insert(0, str(path))
        if repo in self._loaded:
            self._config = upstream_config.configure(sys.modules["benchmark.conftest"], level,
                                                     shape_file, root)
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
        self._config = upstream_config.configure(conftest, level, shape_file, root)
        base = importlib.import_module("benchmark.base")
        _install_capture(base.Benchmark)
        self._loaded[repo] = base
        return base

    def prepare(self, ops, backend, level: str, shapes) -> None:
        """Name the vendor (FlagGems reads GEMS_VENDOR at import), then import and configure
        FlagGems and its benchmark package."""
        vendor = VENDORS.get(backend.name)
        if vendor:
            os.environ.setdefault("GEMS_VENDOR", vendor)
        for repo in sorted({self.node(op).repo for op in ops}):
            self._load(repo, level, notices.upstream_shape_file(shapes))

    # ---- cases -------------------------------------------------------------------------------
    def cases(self, op: str, dtypes: Sequence[str] | None, shapes, level: str, backend,
              device: str) -> Iterator[Case]:
        node = self.node(op)
        base = self._load(node.repo, level, notices.upstream_shape_file(shapes))
        self._used[op], self._markers[op] = {}, []
        self._shape_doc = shapes.doc if shapes is not None else None
        self._drawn[op] = DeviceInputs(device, self.input_mode)
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
        ignored: list[str] = []
        guards = [g for g in getattr(backend, "skip_guards", ()) if g.stale]
        calls = expand_calls(fn, module, lambda reason: any(
            g.matches(node.file, node.function, reason) for g in guards), ignored)
        self._markers[op] += [notices.guard_marker(op, backend.name, node, r) for r in ignored]
        calls, missing = select_call(calls, self._selected.get(op), node.node_id)
        if missing:
            yield _status_case(op, self._selected[op], "FAIL", missing)
            return
        for call in calls:
            label = call.id or "-"
            if call.skip:
                yield _status_case(op, label, "SKIP", call.skip)
                continue
            yield from self._call_cases(op, fn, call, base, dtypes, label)
        _empty_cache()

    def _call_cases(self, op, fn, call, base, dtypes, label) -> Iterator[Case]:
        with collecting(fn, call) as (benches, problem):   # monkeypatch live while timed
            if problem is not None:
                yield _status_case(op, label, *problem)
                return
            if not benches:
                yield _status_case(op, label, "SKIP", "the test function built no Benchmark")
            for bench in benches:
                yield from self._bench_cases(op, bench, base, dtypes, label)

    def _bench_cases(self, op, bench, base, dtypes, label) -> Iterator[Case]:
        import torch  # heavy: imported only where used
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
        injection = self._inject(op, bench, base)
        used = injection.own if injection is not None and not injection.injected and \
            injection.own else bench.shapes      # what the class's own inputs really use
        self._used[op][bench.op_name] = {"shapes": _jsonable(used),
                                         "shape_desc": str(bench.shape_desc)}
        info = {"shapes": injection.note} if injection is not None else {}
        for dtype in bench.to_bench_dtypes:
            dtype_name = str(dtype).replace("torch.", "")
            inputs = (injection.inputs(dtype) if injection is not None and injection.inputs
                      else bench.get_input_iter(dtype))
            while True:
                try:
                    with self._drawn[op].scope():   # one case's inputs
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
                yield _case_for(op, bench, dtype_name, item, label, self._package(op), info)

    def _inject(self, op, bench, base):
        """With a zlh shape file: give hard-coding classes the file's shapes, or say why not."""
        if self._shape_doc is None:
            return None
        injection = inject.plan(bench, self._shape_doc, base.Benchmark)
        if injection is not None:
            line = injection.marker(op, bench.op_name)
            if line not in self._markers.setdefault(op, []):
                self._markers[op].append(line)
        return injection

    def run_markers(self, op: str) -> list[str]:
        """This op's shape-injection and skip-guard markers, then FOREIGN_VENDOR_MODULE when
        another vendor's backend modules were imported."""
        return list(self._markers.get(op, [])) + notices.foreign_vendor_markers()

    def inputs_record(self, op: str) -> dict:
        drawn = self._drawn.get(op)
        return drawn.record() if drawn is not None else super().inputs_record(op)

    def _package(self, op: str) -> str:
        return PACKAGES[self.node(op).repo]

    # ---- tuners, tuner cache, inventory -------------------------------------------------
    def tuner_support(self):
        only_vllm = "vllm" in self._loaded and "flaggems" not in self._loaded
        return tuners.tuner_support(package=PACKAGES["vllm" if only_vllm else "flaggems"])

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

    def inventory(self, verify: bool = False, backend=None, known_backends=()):
        """`zlh ops --csv` rows (inventory.py); `verify` imports the first named checkout's
        benchmark package and builds each function's Benchmarks without timing them."""
        repos = [r for r in ("flaggems", "vllm") if self.dirs.get(r)]
        items = inventory.rows([(r, self.root(r)) for r in repos], known_backends)
        columns = inventory.COLUMNS + (inventory.VERIFY_COLUMNS if verify else ())
        if verify and items:
            first = repos[0]
            vendor = VENDORS.get(getattr(backend, "name", ""))
            if vendor:
                os.environ.setdefault("GEMS_VENDOR", vendor)
            base = self._load(first, "core", None)
            for item in items:
                item["collect"], item["collect_detail"] = (
                    inventory.verify(item["_node"], backend, base.Benchmark)
                    if item["repo"] == first else
                    ("not_verified",
                     f"one checkout per process: run again with only {item['repo']}"))
                _empty_cache()
        return columns, [{k: v for k, v in item.items() if k != "_node"} for item in items]

    def derive_shape_set(self, kind: str, command: str):
        root = self.root("flaggems")
        commit = _commit(root)
        label = f"FlagGems {commit[:8] if commit else '(no commit)'}"
        derived = shapesets.derive(root, kind, label)
        return shapesets.render(derived, command), derived.dropped

    def model_shape_set(self, config: dict, tokens, tp: int, lm_head: bool, header) -> str:
        try:
            doc = model_shapes.from_config(config, list(tokens), tp, lm_head)
        except model_shapes.ConfigError as exc:
            raise Unsupported(str(exc)) from None
        return shapesets.render_document(header, doc)

    def unmatched_shape_keys(self, doc: dict) -> dict:
        if not any(self.dirs.values()):      # nothing to match: every key would be "unmatched"
            raise Unsupported(f"no FlagGems checkout to match the shape keys against; give "
                              f"--flaggems-dir DIR (or set {FLAGGEMS_DIR_ENV})")
        repos = [(self.root(r), r) for r in ("flaggems", "vllm") if self.dirs.get(r)]
        return shapesets.unmatched(doc, shapesets.KnownNames(repos))

    def identity(self, op: str | None = None) -> dict:
        out = {"adapter": self.name}
        node = self._nodes.get(op) if op else None
        repo = node.repo if node else "flaggems"
        try:
            root = self.root(repo)
        except Exception:  # noqa: BLE001
            return out
        out.update({"repo": repo, "flaggems_dir": str(root), "found_by": self.found.get(repo),
                    "commit": _commit(root)})
        if node:
            out["node"] = node.node_id + (f"[{self._selected[op]}]" if op in self._selected
                                          else "")
        package = sys.modules.get(PACKAGES[repo])
        if package is not None:
            out["version"] = getattr(package, "__version__", None)
            out["package_file"] = getattr(package, "__file__", None)
            out["vendor"] = getattr(package, "vendor_name", None)
        return out


def _empty_cache() -> None:
    try:
        from flag_gems.runtime import torch_device_fn  # heavy: imported only where used
        torch_device_fn.empty_cache()
    except Exception:  # noqa: BLE001
        pass
