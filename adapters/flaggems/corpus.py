"""The FlagGems benchmark corpus, read statically: no import, so names resolve anywhere.

Every `def test_*` in `benchmark/**/test_*.py` is one node. Its op name is the function name
without `test_`; its marks are the decorators `@pytest.mark.<name>` (the op marks FlagGems
uses as ids, plus skip/skipif/parametrize).
"""
from __future__ import annotations

import ast
import difflib
from dataclasses import dataclass, field
from pathlib import Path

from harness.common import log
from harness.common.errors import quoted
from harness.common.memo import by_file

from .classes import op_names

NON_OP_MARKS = {"parametrize", "skip", "skipif", "xfail", "usefixtures", "filterwarnings",
                "timeout", "tryfirst", "trylast"}


def xfail_condition(text: str) -> bool:
    """Whether an `xfail` mark's source text gives a condition (a positional argument or
    `condition=`): then it applies only where that holds."""
    try:
        tree = ast.parse(text.lstrip("@"), mode="eval")
    except SyntaxError:
        return True
    call = tree.body if isinstance(tree.body, ast.Call) else None
    return bool(call and (call.args or any(k.arg == "condition" for k in call.keywords)))


class CorpusError(ValueError):
    """A name that does not resolve, with suggestions."""


@dataclass(frozen=True)
class TestNode:
    repo: str              # "flaggems" or "vllm"
    root: Path             # repository root (holds benchmark/)
    file: str              # path relative to root, e.g. benchmark/test_sort.py
    function: str          # test_perf_sort
    marks: tuple[str, ...] = ()       # op marks, e.g. ("sort",)
    skip_marks: tuple[str, ...] = ()  # source text of skip / skipif decorators
    parametrized: bool = False
    op_names: tuple[str, ...] = ()    # `op_name=` of its Benchmark constructors (scan with index)

    @property
    def op(self) -> str:
        return self.function[len("test_"):] if self.function.startswith("test_") else self.function

    @property
    def file_stem(self) -> str:
        return Path(self.file).stem[len("test_"):] if Path(self.file).stem.startswith("test_") \
            else Path(self.file).stem

    @property
    def unconditional_skip(self) -> bool:
        """A `skip` mark, or an `xfail` without condition (not `skipif`): skipped on every
        machine."""
        return any(m.split("(")[0].strip().endswith(".skip") or (
            m.split("(")[0].strip().endswith(".xfail") and not xfail_condition(m))
            for m in self.skip_marks)

    @property
    def node_id(self) -> str:
        return f"{self.file}::{self.function}"

    @property
    def qualified(self) -> str:
        """The unambiguous short name: `op` when op and file agree, else `op:file`."""
        name = self.op if self.op == self.file_stem else f"{self.op}:{self.file_stem}"
        return f"vllm:{name}" if self.repo == "vllm" else name


@dataclass
class Corpus:
    repo: str
    root: Path
    nodes: list[TestNode] = field(default_factory=list)

    @classmethod
    def scan(cls, root: str | Path, repo: str = "flaggems", index=None) -> "Corpus":
        """Every test function under `root/benchmark`; with a `classes.ClassIndex`, each
        node also carries the op names its Benchmark constructors are given."""
        root = Path(root)
        bench = root / "benchmark"
        corpus = cls(repo, root)
        classes = index.benchmark_names() if index is not None else None
        for path in sorted(bench.rglob("test_*.py")):
            try:
                corpus.nodes.extend(_scan_file(repo, root, path, classes))
            except (SyntaxError, UnicodeDecodeError) as exc:
                where = f" line {exc.lineno}" if getattr(exc, "lineno", None) else ""
                log.warning(f"WARNING {repo}: {path.relative_to(root)} cannot be read "
                            f"({type(exc).__name__}{where}): its benchmark functions are left "
                            f"out of the corpus")
        return corpus

    def resolve(self, name: str) -> TestNode:
        """`softmax`, `perf_sort:sort` (function:file), `softmax@softmax`, a node id."""
        if "::" in name:
            file_part, _, function = name.partition("::")
            hits = [n for n in self.nodes if n.function == function and
                    (file_part.endswith(n.file) or n.file.endswith(file_part.lstrip("./")))]
            return self._one(name, hits)
        op, file_stem = name, None
        for sep in (":", "@"):
            if sep in name:
                op, _, file_stem = name.partition(sep)
                file_stem = Path(file_stem).stem
                file_stem = file_stem[len("test_"):] if file_stem.startswith("test_") else file_stem
                break
        op = op[len("test_"):] if op.startswith("test_") else op
        hits = [n for n in self.nodes if n.op == op]
        if file_stem is not None:
            hits = [n for n in hits if n.file_stem == file_stem]
        elif not hits:
            hits = [n for n in self.nodes if op in n.marks]
        if len(hits) > 1 and file_stem is None:
            same_file = [n for n in hits if n.file_stem == op]
            hits = same_file if len(same_file) == 1 else hits
        return self._one(name, hits)

    def _one(self, name: str, hits: list[TestNode]) -> TestNode:
        if len(hits) == 1:
            return hits[0]
        if hits:
            choices = ", ".join(f"{n.op}@{n.file_stem}" for n in hits)
            raise CorpusError(f"op {name!r} is ambiguous in {self.repo}: {choices}")
        names = sorted({n.op for n in self.nodes} | {m for n in self.nodes for m in n.marks})
        close = difflib.get_close_matches(name.split(":")[0].split("@")[0], names, n=4, cutoff=0.6)
        hint = f"; did you mean {', '.join(close)}?" if close else ""
        raise CorpusError(f"unknown op {quoted(name)} in {self.repo} ({self.root}){hint}")


def _decorator_mark(dec: ast.expr) -> tuple[str, ast.expr] | None:
    """`@pytest.mark.NAME` or `@pytest.mark.NAME(...)` -> (NAME, node)."""
    target = dec.func if isinstance(dec, ast.Call) else dec
    if isinstance(target, ast.Attribute) and isinstance(target.value, ast.Attribute) \
            and target.value.attr == "mark":
        return target.attr, dec
    return None


def _scan_file(repo: str, root: Path, path: Path, classes: set | None = None) -> list[TestNode]:
    return list(_scan_source(path, repo, root,
                             frozenset(classes) if classes is not None else None))


@by_file(copies=False)
def _scan_source(path: Path, repo: str, root: Path, classes: frozenset | None) -> tuple:
    source = path.read_text(encoding="utf-8")
    tree = ast.parse(source, filename=str(path))
    module_skips = []
    for stmt in tree.body:
        if isinstance(stmt, ast.Assign) and any(isinstance(t, ast.Name) and t.id == "pytestmark"
                                                for t in stmt.targets):
            text = ast.get_source_segment(source, stmt.value) or ""
            if "skip" in text or "xfail" in text:
                module_skips.append(" ".join(text.split()))
    nodes = []
    for stmt in tree.body:
        if not isinstance(stmt, (ast.FunctionDef, ast.AsyncFunctionDef)) or \
                not stmt.name.startswith("test_"):
            continue
        marks, skips, parametrized = [], list(module_skips), False
        for dec in stmt.decorator_list:
            found = _decorator_mark(dec)
            if found is None:
                continue
            mark, node = found
            if mark in ("skip", "skipif", "xfail"):
                skips.append(" ".join((ast.get_source_segment(source, node) or mark).split()))
            elif mark == "parametrize":
                parametrized = True
            elif mark not in NON_OP_MARKS:
                marks.append(mark)
        names = tuple(op_names(stmt, tree, classes)) if classes is not None else ()
        nodes.append(TestNode(repo, root, str(path.relative_to(root)), stmt.name, tuple(marks),
                              tuple(skips), parametrized, names))
    return tuple(nodes)
