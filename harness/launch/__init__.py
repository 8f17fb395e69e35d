"""Processes: the parent side (launcher.py: start, stop, time out every child zlh runs) and,
re-exported from harness/common/process.py, the child side (ending with the command that
started it, SIGTERM handling, signals held while a run directory is created)."""
from ..common.process import (PARENT_ENV, HeldTermination, ParentGone, check_runnable,
                              child_env, die_with_parent, die_with_parent_if_asked,
                              terminate_handler)
from .launcher import (CRASH_RC, GRACE_S, INTERRUPT_GRACE_S, TIMEOUT_RC, Child, Finished,
                       capture, run, start, write_command)

__all__ = ["PARENT_ENV", "HeldTermination", "ParentGone", "check_runnable", "child_env",
           "die_with_parent", "die_with_parent_if_asked", "terminate_handler", "CRASH_RC",
           "GRACE_S", "INTERRUPT_GRACE_S", "TIMEOUT_RC", "Child", "Finished", "capture", "run",
           "start", "write_command"]
