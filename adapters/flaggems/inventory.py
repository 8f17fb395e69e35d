"""The corpus inventory behind `zlh ops --csv`, and `--verify-collect`.

One row per benchmark function of every named checkout: repo, op (function name without
`test_`), op_file (file stem without `test_`), function, marked_skip (the reason of a skip that
applies everywhere: `skip`, or `skipif` on a literal true condition), op_names (the `op_name=`
of its Benchmark constructors; f-strings as `*` patterns), then the name `zlh bench` takes, the
file, its conditional skips, and the backends whose skip-guard table marks it stale.

`--verify-collect` imports each function's module and calls the function with `Benchmark.run`
collecting instead of running — exactly as a bench does, without timing: `ok` (the op names
its Benchmarks really carry), `skipped` (every call skipped: the first reason), `unsupported`
(every Benchmark overrides `run()`/`get_latency()`, which zlh does not reproduce),
`import_error`, `error`, `no_benchmark`, or `not_verified` (a second checkout's `benchmark`
package cannot be imported beside the first one in one process).
"""
from __future__ import annotations

import importlib

from .cases import _one_line, _outcome_exceptions, _unsupported, collecting
from .classes import ClassIndex
from .corpus import Corpus, TestNode
from .marks import always_skipped, expand_calls

COLUMNS = ("repo", "op", "op_file", "function", "marked_skip", "op_names", "name", "file",
           "skipif", "stale_guards")
VERIFY_COLUMNS = ("collect", "collect_detail")


def unconditional_skip(skip_marks) -> str:
    """The reason of a skip (or xfail) mark that applies on every machine, else ''."""
    return next((r for r in map(always_skipped, skip_marks) if r), "")


def conditional_skips(skip_marks, marked: str) -> str:
    return " | ".join(t for t in skip_marks if not marked or "skipif" in t and marked not in t)


def rows(corpora: list[tuple[str, object]], backends) -> list[dict]:
    """Inventory rows for (repo, root) checkouts; `backends` give the skip-guard tables."""
    out = []
    for repo, root in corpora:
        corpus = Corpus.scan(root, repo, index=ClassIndex.scan(root))
        for node in corpus.nodes:
            marked = unconditional_skip(node.skip_marks)
            stale = sorted({b.name for b in backends for g in b.skip_guards
                            if g.stale and (g.file, g.function) == (node.file, node.function)})
            out.append({"repo": repo, "op": node.op, "op_file": node.file_stem,
                        "function": node.function, "marked_skip": marked,
                        "op_names": " ".join(node.op_names), "name": node.qualified,
                        "file": node.file, "skipif": conditional_skips(node.skip_marks, marked),
                        "stale_guards": " ".join(stale), "_node": node})
    return out


def verify(node: TestNode, backend, root_cls) -> tuple[str, str]:
    """(collect, detail) for one benchmark function, without timing anything; `root_cls` is
    the checkout's `Benchmark` (classes overriding its timing are `unsupported`)."""
    module_name = node.file[:-3].replace("/", ".")
    skipped, failed = _outcome_exceptions()
    try:
        module = importlib.import_module(module_name)
        fn = getattr(module, node.function)
    except skipped as exc:
        return "skipped", f"import: {_one_line(exc)}"
    except (failed, Exception) as exc:  # noqa: B014
        return "import_error", f"{type(exc).__name__}: {_one_line(exc)}"
    guards = [g for g in getattr(backend, "skip_guards", ()) if g.stale]
    calls = expand_calls(fn, module, lambda reason: any(
        g.matches(node.file, node.function, reason) for g in guards))
    names, reasons, unsupported = [], [], []
    for call in calls:
        if call.skip:
            reasons.append(call.skip)
            continue
        outcome = _collect_call(fn, call)
        if isinstance(outcome, tuple):
            return outcome
        if isinstance(outcome, str):
            reasons.append(outcome)
            continue
        for bench in outcome:
            why = _unsupported(bench, root_cls)
            (unsupported.append(why) if why else names.append(bench.op_name))
    if names:
        return "ok", " ".join(dict.fromkeys(names))
    if unsupported:
        return "unsupported", unsupported[0]
    if reasons and len(reasons) == len(calls):
        return "skipped", reasons[0]
    return "no_benchmark", "the function built no Benchmark"


def _collect_call(fn, call):
    """The Benchmarks one call builds; a skip reason (str); or ("error", detail)."""
    with collecting(fn, call) as (benches, problem):
        if problem is None:
            return benches
        kind, reason = problem
        return reason if kind == "SKIP" and not reason.startswith("UNSUPPORTED") else \
            ("error", reason)
