"""Shape files: YAML whose top-level keys are op names (or benchmark class names).

    softmax:
      shape_desc: "M, N"        # optional
      shapes:
        - [1024, 256]
        - [4096, 4096]
    add: [[4096], [1048576]]    # a bare list is accepted too

Loaded documents are normalised to {key: {"shapes": [[int, ...], ...], "shape_desc": str}}.
"""
from __future__ import annotations

import hashlib
from dataclasses import dataclass
from pathlib import Path

import yaml

from ..common.documents import loads_yaml
from ..common.files import SYMLINK_LOOP, link_loop


INT64_MAX = 2 ** 63 - 1


class ShapeFileError(ValueError):
    pass


@dataclass(frozen=True)
class ShapeFile:
    path: str
    sha256: str
    doc: dict


def load_shape_file(path: str) -> ShapeFile:
    file = Path(path)
    if not file.is_file():
        raise ShapeFileError(f"shape file {path}: {SYMLINK_LOOP}" if link_loop(file) else
                             f"shape file not found: {path}" if not file.exists() else
                             f"shape file {path} is a directory, not a file" if file.is_dir()
                             else f"shape file {path} is not a regular file")
    try:
        raw = file.read_bytes()
        data = loads_yaml(raw.decode("utf-8"))
    except (OSError, UnicodeDecodeError) as exc:
        raise ShapeFileError(f"shape file {path} cannot be read: {exc}") from exc
    except ValueError as exc:
        raise ShapeFileError(f"shape file {path}: {exc}") from exc
    except yaml.YAMLError as exc:
        where = getattr(exc, "problem_mark", None)
        at = f" at line {where.line + 1}" if where is not None else ""
        problem = getattr(exc, "problem", None) or str(exc).strip().splitlines()[0]
        raise ShapeFileError(f"shape file {path} is not valid YAML{at}: {problem}") from exc
    return ShapeFile(str(file), hashlib.sha256(raw).hexdigest(), normalise(data, path))


def normalise(data, origin: str = "shape file") -> dict:
    if not isinstance(data, dict) or not data:
        raise ShapeFileError(f"{origin}: top level must be a mapping of op or class names "
                             f"to shape lists")
    out = {}
    for key, entry in data.items():
        if not isinstance(key, str) or not key.strip():
            raise ShapeFileError(f"{origin}: top-level key {key!r} is not an op or class "
                                 f"name (quote it if it is one)")
        if isinstance(entry, dict):
            if "shapes" not in entry:
                raise ShapeFileError(f"{origin}: {key!r} has no `shapes` list (keys: "
                                     f"{', '.join(map(str, entry)) or 'none'})")
            unknown = sorted(map(str, set(entry) - {"shapes", "shape_desc"}))
            if unknown:                 # a misspelt key would be dropped without a word
                raise ShapeFileError(f"{origin}: {key!r} has an unknown key "
                                     f"{', '.join(unknown)} (an entry takes shapes and "
                                     f"shape_desc)")
            shapes, desc = entry.get("shapes"), entry.get("shape_desc", "")
            if not isinstance(desc, str):
                raise ShapeFileError(f"{origin}: {key!r} shape_desc must be a string, "
                                     f"got {desc!r}")
        else:
            shapes, desc = entry, ""
        if not isinstance(shapes, list) or not shapes:
            raise ShapeFileError(f"{origin}: {key!r} needs a non-empty list of shapes")
        out[key] = {"shapes": [_shape(s, key, origin) for s in shapes], "shape_desc": desc}
    return out


def _shape(value, key, origin):
    """A shape is a number or a list (FlagGems nests them: `[[640, 1536], 0, false]`).
    Adapters check what their ops need; here only negative sizes and odd types are refused."""
    if isinstance(value, bool) or not isinstance(value, (int, list, tuple)) or value == []:
        raise ShapeFileError(f"{origin}: {key!r} has an invalid shape {value!r} "
                             f"(expected a list of sizes)")
    if isinstance(value, int) and value < 0:
        raise ShapeFileError(f"{origin}: {key!r} has an invalid shape {value!r} (negative size)")
    if isinstance(value, int) and value > INT64_MAX:     # no tensor dimension can hold it
        raise ShapeFileError(f"{origin}: {key!r} has a size {value} beyond int64 (at most "
                             f"{INT64_MAX})")
    if isinstance(value, (list, tuple)):
        for item in value:
            if isinstance(item, (list, tuple)) or (isinstance(item, int) and
                                                   not isinstance(item, bool)):
                _shape(item, key, origin)
    return list(value) if isinstance(value, tuple) else value
