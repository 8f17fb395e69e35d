"""Process helpers shared by the fault tests."""
from __future__ import annotations


def alive(pid: int) -> bool:
    """`pid` exists and is not a zombie (Linux /proc)."""
    try:
        with open(f"/proc/{pid}/stat") as handle:
            return handle.read().split()[2] != "Z"
    except OSError:
        return False


def signal_when(args: list[str], ready: str, signum: int, cwd=None,
                seconds: float = 120) -> tuple[int, str]:
    """Start `python -m harness ARGS` in a session of its own, send it `signum` once a path
    matching the glob `ready` exists (e.g. the hung op's run.json), wait for it: (exit
    status, stderr)."""
    import glob
    import subprocess
    import sys
    import time
    child = subprocess.Popen([sys.executable, "-m", "harness", *args], cwd=cwd,
                             stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True,
                             start_new_session=True)
    try:
        deadline = time.time() + seconds
        while time.time() < deadline and child.poll() is None and not glob.glob(ready):
            time.sleep(0.05)
        assert glob.glob(ready), f"never appeared: {ready}\n{child.communicate()[1]}"
        child.send_signal(signum)
        _, err = child.communicate(timeout=60)
    finally:
        if child.poll() is None:
            child.kill()
    return child.returncode, err
