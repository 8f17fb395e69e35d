"""What a batch prints: the progress bar on a terminal and the final summary by status."""
from __future__ import annotations

from .outcome import CRASH, FAIL, PASS, POISONED, SKIP, TIMEOUT, Outcome


def bar(done: int, total: int, elapsed: float, eta: float) -> str:
    width = 30
    filled = int(width * done / max(total, 1))
    return (f"[{'#' * filled}{'.' * (width - filled)}] {done}/{total} "
            f"elapsed {clock(elapsed)} eta {clock(eta)}")


def clock(seconds: float) -> str:
    seconds = int(seconds)
    return f"{seconds // 3600}:{seconds // 60 % 60:02d}:{seconds % 60:02d}"


def final_summary(outcomes: dict[str, Outcome], left_out, wall_s: float) -> list[str]:
    counts = {s: sum(1 for o in outcomes.values() if o.status == s)
              for s in (PASS, SKIP, FAIL, TIMEOUT, CRASH, POISONED)}
    lines = [f"batch: {len(outcomes)} ops in {clock(wall_s)}: " +
             ", ".join(f"{s} {n}" for s, n in counts.items() if n)]
    if left_out:
        lines.append(f"left out: {len(left_out)} ops (skip marks or dismissed; see batch.json)")
    slowest = sorted(outcomes.items(), key=lambda kv: -kv[1].elapsed_s)[:5]
    if slowest:
        lines.append("slowest: " + ", ".join(f"{op} {o.elapsed_s:.1f}s" for op, o in slowest))
    for op, o in sorted(outcomes.items()):
        if o.status not in (PASS, SKIP):
            lines.append(f"  {o.status:<8} {op}: {o.reason}")
    return lines
