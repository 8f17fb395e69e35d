"""Atomic file writes: write a temp file beside the target, fsync, rename over it.

A reader (or a crash) sees either the old file or the new one, never half of one. JSON is
written strictly: NaN and infinities become null (most JSON readers reject bare NaN), and
files get the usual permissions (0666 minus the umask), not mkstemp's private 0600.
"""
from __future__ import annotations

import csv
import errno
import hashlib
import io
import json
import math
import os
import stat
import tempfile
from pathlib import Path

from .documents import NotFinite, loads_json
from .errors import UsageError
from .schema import check_readable, stamp


def _umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask


_FILE_MODE = 0o666 & ~_umask()


def atomic_write_text(path: str | os.PathLike, text: str) -> Path:
    return atomic_write_bytes(path, text.encode("utf-8"))


def atomic_write_bytes(path: str | os.PathLike, data: bytes, mode: int | None = None) -> Path:
    """`data` as the whole of `path`, or `path` untouched: a temporary file beside it,
    synced, then renamed over it. `mode`: the new file's permission bits (default: what a
    new file gets under the umask)."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        with os.fdopen(fd, "wb") as handle:
            handle.write(data)
            handle.flush()
            os.fsync(handle.fileno())
        os.chmod(tmp, _FILE_MODE if mode is None else mode)
        os.replace(tmp, path)
    except BaseException as exc:
        try:
            os.unlink(tmp)
        except FileNotFoundError:
            pass
        if isinstance(exc, OSError) and exc.filename in (None, tmp):
            # a failed write names the file it was for, not the temporary one (os.replace
            # names both)
            if exc.errno is not None and exc.filename2 is not None:
                raise type(exc)(exc.errno, exc.strerror, str(path)) from None
            exc.filename = str(path)
        raise
    return path


def overwrite_in_place(path: str | os.PathLike, text: str) -> bool:
    """Last resort when the disk is full: rewrite an existing file in place, which needs no
    new space, if the new text fits in the space the file already holds. False (nothing
    written) when it does not fit or the file cannot be opened."""
    data = text.encode("utf-8")
    try:
        fd = os.open(path, os.O_WRONLY)
    except OSError:
        return False
    try:
        st = os.fstat(fd)
        if len(data) > max(st.st_size, st.st_blocks * 512):
            return False
        os.pwrite(fd, data, 0)
        os.ftruncate(fd, len(data))
        os.fsync(fd)
        return True
    except OSError:
        return False
    finally:
        os.close(fd)


def json_safe(value):
    """A copy of `value` with NaN and infinities as None, tuples as lists."""
    if isinstance(value, float) and not math.isfinite(value):
        return None
    if isinstance(value, dict):
        return {k: json_safe(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [json_safe(v) for v in value]
    return value


def to_json(obj, indent: int | None = 2) -> str:
    """Strict JSON text (no NaN/Infinity); objects json cannot encode are written as str."""
    separators = None if indent else (",", ":")
    return json.dumps(json_safe(obj), indent=indent, separators=separators, allow_nan=False,
                      default=str)


def atomic_write_json(path: str | os.PathLike, obj) -> Path:
    """A JSON document, atomically; an object gets `schema_version` (when it has none) and
    `zlh_version` first (see schema.py): every JSON file zlh writes goes through here or
    through `schema.stamp`."""
    if isinstance(obj, dict):
        obj = stamp(obj)
    return atomic_write_text(path, to_json(obj) + "\n")


def _named_path(path: str | os.PathLike, flag: str, kind: str) -> Path:
    """`path` as a Path, refused with a one-line UsageError when it is empty, its text cannot
    name a file here, or it is a link to nothing (`kind`: what an empty path is not)."""
    if str(path) == "":
        raise UsageError(f"{flag}: an empty path is not {kind}")
    check_path_text(path, flag)
    target = Path(path)
    _refuse_broken_link(target, flag, path)
    return target


def check_output_dir(path: str | os.PathLike, flag: str, create: bool = False) -> Path:
    """A directory zlh is about to write under: refused with a one-line UsageError when it is
    a file (or a device such as /dev/null), cannot be created, or is not writable. With
    `create`, made (with its parents) now; otherwise only the nearest existing ancestor is
    checked, so a refusal leaves nothing behind."""
    target = _named_path(path, flag, "a directory")
    if target.exists() and not target.is_dir():
        raise UsageError(f"{flag} {path}: exists and is not a directory")
    existing = target
    while not existing.exists() and existing != existing.parent:
        existing = existing.parent
    if not existing.is_dir():
        raise UsageError(f"{flag} {path}: {existing} is not a directory")
    if not os.access(existing, os.W_OK | os.X_OK):
        why = "read-only file system" if _read_only(existing) else "permission denied"
        raise UsageError(f"{flag} {path}: cannot write under {existing} ({why})")
    if existing != target and not create:
        try:                   # /proc and the like: writable to root, yet takes no new folder
            tempfile.TemporaryDirectory(dir=existing).cleanup()
        except OSError as exc:
            raise UsageError(f"{flag} {path}: cannot create a directory under {existing} "
                             f"({exc.strerror or exc})") from None
    if create:
        try:
            target.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            raise UsageError(f"{flag} {path}: cannot create the directory "
                             f"({exc.strerror or exc})") from None
    return target


def check_output_file(path: str | os.PathLike, flag: str) -> Path:
    """A file zlh is about to write (atomically, beside it): refused with a one-line
    UsageError when the path is empty, is a directory or a device (/dev/null), or its folder
    cannot take a new file. Nothing is created."""
    target = _named_path(path, flag, "a file")
    if target.exists() and not target.is_file():
        kind = "a directory" if target.is_dir() else "not a regular file"
        raise UsageError(f"{flag} {path}: exists and is {kind}")
    folder = check_output_dir(target.parent, f"{flag} {path}:")
    if folder.is_dir():
        try:                                 # /proc and the like: a folder that takes no file
            tempfile.TemporaryFile(dir=folder).close()
        except OSError as exc:
            raise UsageError(f"{flag} {path}: cannot create a file in {folder} "
                             f"({exc.strerror or exc})") from None
    return target


def keep_first(path: str | os.PathLike, suffix: str) -> Path | None:
    """A copy of `path` beside it named + `suffix`, made once (atomically) and never replaced:
    however often a file is recomputed, the copy holds it as it was the first time (what the
    command that measured wrote). The copy's path, or None when neither exists."""
    path = Path(path)
    copy = path.with_name(path.name + suffix)
    if copy.is_file():
        return copy
    if not path.is_file():
        return None
    return atomic_write_bytes(copy, path.read_bytes())


PAGE_MARK = '<meta name="generator" content="zlh">'   # in the head of every page zlh writes


def check_page_file(path: str | os.PathLike, flag: str, force: bool) -> Path:
    """check_output_file for an HTML page: a file already there is replaced only when it is
    a page zlh wrote (PAGE_MARK in its first 4 KiB) or `force` — never a run's data or
    another file the user named by mistake."""
    target = check_output_file(path, flag)
    if force or not target.exists():
        return target
    try:
        with open(target, "rb") as handle:
            head = handle.read(4096)
    except OSError as exc:
        raise UsageError(f"{flag} {path}: cannot be read ({exc.strerror or exc})") from None
    if PAGE_MARK.encode() not in head:
        raise UsageError(f"{flag} {path} exists and is not a page zlh wrote; name another "
                         f"file, or add --force to replace it")
    return target


def check_new_file(path: str | os.PathLike, flag: str, force: bool) -> Path:
    """check_output_file, and a file already there is refused (its name and `--force`)
    unless `force`: a file the user named is replaced only when asked to."""
    target = check_output_file(path, flag)
    if not force and (target.exists() or target.is_symlink()):
        raise UsageError(f"{flag} {path} exists; add --force to replace it")
    return target


def _refuse_broken_link(target: Path, flag: str, path) -> None:
    """A symbolic link that leads nowhere (a loop, a missing target): `exists()` says False
    and writing through it would fail later with a less useful error."""
    if target.is_symlink() and not target.exists():
        raise UsageError(f"{flag} {path}: {BROKEN_LINK}")


def not_a_folder(path) -> str | None:
    """Why `path` is no folder to read (None: it is one): a symbolic link that leads nowhere,
    a file, or nothing there."""
    path = Path(path)
    if path.is_dir():
        return None
    if path.is_symlink() and not path.exists():
        return BROKEN_LINK
    return "not a folder (a file)" if path.exists() else "no such folder"


SYMLINK_LOOP = "a symbolic link loop (the link leads back to itself); name a real path"
BROKEN_LINK = "a symbolic link that leads nowhere (a loop or a missing target)"
NUL_IN_PATH = "a path cannot hold a NUL byte"


def check_path_text(path, what: str) -> None:
    """UsageError for a path no file can have: empty (`Path('')` would quietly mean the
    current directory) or holding a NUL byte (the system calls end in a ValueError)."""
    text = os.fspath(path) if isinstance(path, (str, os.PathLike)) else str(path)
    if isinstance(text, bytes):
        text = text.decode("utf-8", "replace")
    if not text:
        raise UsageError(f"{what}: an empty path; name a file or directory")
    if "\x00" in text:
        raise UsageError(f"{what} {text!r}: {NUL_IN_PATH}")


def link_loop(path: str | os.PathLike) -> bool:
    """Whether `path` is, or passes through, a symbolic link loop: `exists()` and `is_dir()`
    say False for one, which a reader would otherwise report as missing."""
    try:
        os.stat(path)
    except OSError as exc:
        return exc.errno == errno.ELOOP
    except ValueError:                   # a NUL byte: no such path
        return False
    return False


def _read_only(path: Path) -> bool:
    try:
        return bool(os.statvfs(path).f_flag & os.ST_RDONLY)
    except (OSError, AttributeError):
        return False


def _open_regular(path: str | os.PathLike):
    """A binary handle on a regular file. A FIFO or a device is an OSError (`not a regular
    file`), a directory one too (`Is a directory`): reading them would wait for a writer
    forever or never end (/dev/zero). Readers turn the OSError into their one line."""
    fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK)
    try:                                 # before fdopen: it names a directory by its fd
        mode = os.fstat(fd).st_mode
    except OSError:
        os.close(fd)
        raise
    if not stat.S_ISREG(mode):
        os.close(fd)
        if stat.S_ISDIR(mode):
            raise IsADirectoryError(errno.EISDIR, os.strerror(errno.EISDIR), str(path))
        raise OSError(errno.EINVAL, "not a regular file (a pipe or device)", str(path))
    return os.fdopen(fd, "rb")


def read_bytes(path: str | os.PathLike) -> bytes:
    """The bytes of a regular file (see _open_regular)."""
    with _open_regular(path) as handle:
        return handle.read()


def read_text(path: str | os.PathLike, errors: str = "strict") -> str:
    """The UTF-8 text of a regular file (see read_bytes); UnicodeDecodeError otherwise
    (`errors` as for bytes.decode)."""
    return read_bytes(path).decode("utf-8", errors)


def sha256_file(path: str | os.PathLike) -> str:
    """sha256 of a regular file, read in chunks (see _open_regular: a FIFO is refused, not
    waited on)."""
    digest = hashlib.sha256()
    with _open_regular(path) as handle:
        for chunk in iter(lambda: handle.read(1 << 20), b""):
            digest.update(chunk)
    return digest.hexdigest()


def read_json_object(path: str | os.PathLike, missing: str, what: str = "a JSON object") -> dict:
    """A JSON object from `path`, or one UsageError line: `missing` when there is no file,
    `<path> is not <what> (a JSON object was expected, found <type>)` when it holds something
    else, else what is wrong with it (also: written with a newer schema than this zlh reads)."""
    path = Path(path)
    try:
        doc = loads_json(read_text(path))
    except FileNotFoundError:
        raise UsageError(missing) from None
    except IsADirectoryError:
        raise UsageError(f"{path} is a directory, not a file ({what} was expected)") from None
    except NotFinite as exc:
        raise UsageError(f"{path}: {exc}") from None
    except (OSError, UnicodeDecodeError, ValueError) as exc:
        if link_loop(path):
            raise UsageError(f"{path}: {SYMLINK_LOOP}") from None
        raise UsageError(f"{path} cannot be read: {read_failure(exc)}") from None
    if not isinstance(doc, dict):
        raise UsageError(f"{path} is not {what} (a JSON object was expected, found "
                         f"{type(doc).__name__})")
    return check_readable(doc, str(path))


def read_failure(exc: BaseException) -> str:
    """Why a file could not be read, in one line without the errno and path an OSError's
    text repeats (`not a regular file (a pipe or device)`, `Is a directory`); for a decode
    or parse error its first line."""
    if isinstance(exc, OSError) and exc.strerror:
        return exc.strerror
    first = str(exc).strip().splitlines()
    return first[0] if first else type(exc).__name__


def csv_text(columns, rows) -> str:
    """CSV with a header: one line per row (a mapping), the given columns in order; a
    missing value is empty, keys outside the columns are left out."""
    return csv_lines(columns, rows, header=True)


def csv_lines(columns, rows, header: bool = False) -> str:
    """`csv_text` without its header line (unless `header`): rows rendered once and kept, to
    be joined under a header later."""
    buf = io.StringIO()
    writer = csv.DictWriter(buf, fieldnames=list(columns), lineterminator="\n",
                            extrasaction="ignore", restval="")
    if header:
        writer.writeheader()
    for row in rows:
        writer.writerow(row)
    return buf.getvalue()
