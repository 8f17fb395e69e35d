"""Process helpers shared by the fault tests."""
from __future__ import annotations


def alive(pid: int) -> bool:
    """`pid` exists and is not a zombie (Linux /proc)."""
    try:
        with open(f"/proc/{pid}/stat") as handle:
            return handle.read().split()[2] != "Z"
    except OSError:
        return False
