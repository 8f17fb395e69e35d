"""The user adapter: cases you write yourself (`harness.Case`), from a Python object
(`harness.bench_cases`) or a `module:attr` named on the command line (`zlh bench --cases`).

The cases are loaded once the backend is active (the first time their dtypes are asked
for), so a module or function that defines Triton kernels gets them interpreted on the
`cpu` backend and compiled elsewhere. The runner times them like any adapter's cases; this
adapter never times anything.
"""
from __future__ import annotations

import inspect
from typing import Any, Iterator, Sequence

from harness.common import spelling
from harness.common.errors import UsageError, quoted

from ..base import Adapter, Case as RunnerCase, MissingShapes
from .case import Case, check_close, dtype_name
from .source import cases_by_op, check_provider, default_op, import_spec, parse_spec

PYTHON_OBJECT = "python object"


class UserAdapter(Adapter):
    name = "user"
    checks_outputs = True

    def __init__(self, cases: str | None = None, source: Any = None, **_):
        """`cases`: a `module:attr` spec; `source`: the cases as a Python object."""
        if cases is None and source is None:
            raise UsageError("adapter user needs --cases MODULE:ATTR (cases given to "
                             "harness.bench_cases as Python objects cannot be re-run from "
                             "the command line; name them as module:attr to do so)")
        if cases is not None:
            parse_spec(cases)
        self.spec = cases
        self.source = source
        self._by_op: dict[str | None, list[Case]] | None = None

    # ---- loading ----------------------------------------------------------------------------
    def _loaded(self) -> dict[str | None, list[Case]]:
        if self._by_op is None:
            if self.spec is not None:
                self._by_op = cases_by_op(self.check_source(), self._where())
            else:
                self._by_op = cases_by_op(self.source, "cases")
        return self._by_op

    def _where(self) -> str:
        """`--cases SPEC` on the command line, `cases SPEC` to a Python caller."""
        return f"{spelling.option('cases')} {self.spec}"

    def check_source(self) -> Any:
        """The object `--cases` names, once it is one that can give cases (checked without
        calling it; see check_provider); None for cases given as a Python object."""
        if self.spec is None:
            return None
        obj = import_spec(self.spec)
        check_provider(obj, self._where())
        return obj

    def _cases(self, op: str) -> list[Case]:
        by_op = self._loaded()
        if None in by_op:
            return by_op[None]
        if op not in by_op:
            known = ", ".join(map(str, by_op))
            raise UsageError(f"unknown op {quoted(op)} for these user cases (ops: {known}); name "
                             f"one of them")
        return by_op[op]

    # ---- the adapter interface -------------------------------------------------------------
    def available(self) -> tuple[bool, str]:
        return True, ""

    def ops(self) -> list[str]:
        by_op = self._by_op or {}
        return [op for op in by_op if op is not None]

    def resolve(self, op: str) -> str:
        """Any name: one op's cases take the name they are given; a dict of ops is checked
        once it is loaded (after the backend is active)."""
        if not isinstance(op, str) or not op.strip():
            raise UsageError(f"op must be a non-empty name, got {op!r}")
        if any(ch < " " or ch == "\x7f" for ch in op.strip()) or \
                len(op.strip().splitlines()) > 1:      # (U+2028 too): tables, file names
            raise UsageError(f"op name {op.strip()!r} holds a control character (a tab, a "
                             f"line break): name the op without one")
        return op.strip()

    def dtypes(self, op: str, backend) -> list[str]:
        return list(dict.fromkeys(case.dtype for case in self._cases(op)))

    def check_shapes(self, op: str, shapes, level: str) -> None:
        if shapes is not None:
            raise MissingShapes("--shapes does not apply to user cases: each Case builds its "
                                "own inputs")

    def cases(self, op: str, dtypes: Sequence[str] | None, shapes, level: str,
              backend, device: str) -> Iterator[RunnerCase]:
        wanted = set(dtypes) if dtypes else None
        for case in self._cases(op):
            if wanted is not None and case.dtype not in wanted:
                continue
            yield RunnerCase(
                op=op, dtype=case.dtype, shape=case.shape, shape_detail=case.shape_detail,
                build=case.build, baseline=case.baseline, under_test=case.fn,
                check=case.checker(),
                metrics=case.metrics if (case.bytes or case.flops) else None,
                variant=case.name)

    def shapes_used(self, op: str) -> dict:
        if self._by_op is None:
            return {}
        return {op: {"shape_desc": "user case", "shapes": [c.shape for c in self._cases(op)]}}

    def identity(self, op: str | None = None) -> dict:
        out = {"adapter": self.name, "cases": self.spec or PYTHON_OBJECT}
        if self._by_op:
            first = next(iter(self._by_op.values()))[0]
            module = inspect.getmodule(first.fn)
            out["fn_module"] = getattr(module, "__name__", None)
            out["fn_file"] = getattr(module, "__file__", None)
        return out


__all__ = ["UserAdapter", "Case", "check_close", "dtype_name", "default_op", "parse_spec",
           "PYTHON_OBJECT"]
