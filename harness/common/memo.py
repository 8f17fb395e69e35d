"""Results computed from a file, kept for the life of the process while the file is unchanged.

A reused batch worker plans one run after another in one process; parsing the same
benchmark sources and shape files for every op cost it about a second per op. `by_file`
keeps a function's result per (file, arguments) and recomputes it as soon as the file's
size, modification or change time or inode differ — an edited checkout is read again,
never served stale.
"""
from __future__ import annotations

import copy
import functools
import os

LIMIT = 4096          # entries per function; the oldest go first


def file_key(path: str | os.PathLike) -> tuple:
    """What identifies one version of a file as a caller names it: (the path as given, the
    file it leads to, inode, size, mtime_ns, ctime_ns). The path as given is part of it:
    a result may depend on the name (a symlink's scan names the link), and ctime changes
    even when a copy keeps the modification time."""
    st = os.stat(path)
    return str(path), os.path.realpath(path), st.st_ino, st.st_size, st.st_mtime_ns, \
        st.st_ctime_ns


def by_file(fn=None, *, copies: bool = True):
    """Decorator for `fn(path, *args)`: the result is kept while `path` is unchanged and
    handed out as a deep copy (`copies=False`: as it is, for results nobody changes, e.g.
    tuples of frozen records). A raised exception is not kept; a file that cannot be
    stat'ed is passed through to `fn` uncached (it reports)."""
    if fn is None:
        return functools.partial(by_file, copies=copies)
    kept: dict = {}

    @functools.wraps(fn)
    def wrapper(path, *args):
        try:
            key = (file_key(path), args)
            hash(key)
        except (OSError, TypeError, ValueError, RuntimeError):   # a symlink loop, ...
            return fn(path, *args)
        if key not in kept:
            if len(kept) >= LIMIT:
                kept.pop(next(iter(kept)))
            kept[key] = fn(path, *args)
        return copy.deepcopy(kept[key]) if copies else kept[key]

    wrapper.cache_clear = kept.clear
    return wrapper
