"""A/B recipes (YAML): what differs between the sides, the ops, rounds, scrub patterns.

Every field is type-checked when the recipe is read, before anything runs: a string where a
list belongs would otherwise be read character by character (`ops: add` as ops a, d, d),
and YAML reads `off`/`no`/`yes` as booleans (`env_a: {X: off}` would set X=False).
"""
from __future__ import annotations

import yaml

from ..common.documents import loads_yaml
from ..common.errors import UsageError
from ..common.files import read_text
from ..common.limits import MAX_ROUNDS
from ..compile.ir.fingerprint import compile_scrub
from .sides import check_env_text

KEYS = ("name", "description", "ops", "switch", "env_a", "env_b", "python_a", "python_b",
        "rounds", "scrub", "bench_args", "check_upstream")
TEXT_KEYS = ("name", "description", "switch", "python_a", "python_b", "check_upstream")


def load_recipe(path: str) -> dict:
    try:
        spec = loads_yaml(read_text(path))
    except OSError as exc:
        raise UsageError(f"recipe {path} cannot be read: {exc.strerror}") from None
    except UnicodeDecodeError as exc:
        raise UsageError(f"recipe {path} cannot be read: {exc.reason}") from None
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f" at line {mark.line + 1}, column {mark.column + 1}" if mark else ""
        problem = getattr(exc, "problem", None) or str(exc).splitlines()[0]
        raise UsageError(f"recipe {path} is not valid YAML{where}: {problem}") from None
    except ValueError as exc:
        raise UsageError(f"recipe {path}: {exc}") from None
    if not isinstance(spec, dict):
        raise UsageError(f"recipe {path}: top level must be a mapping")
    unknown = set(spec) - set(KEYS)
    if unknown:
        raise UsageError(f"recipe {path}: unknown keys {', '.join(sorted(map(str, unknown)))}")
    check_recipe(spec, f"recipe {path}")
    return spec


AUTO = "auto"


def check_recipe(spec: dict, where: str) -> None:
    """Each field's type and range; a UsageError naming the first that is wrong."""
    for key in TEXT_KEYS:
        if key in spec and not isinstance(spec[key], str):
            raise UsageError(f"{where}: {key} must be a string{_hint(spec[key])}, "
                             f"got {spec[key]!r}")
    if "ops" in spec:
        ops = spec["ops"]
        if not isinstance(ops, list) or not ops or not all(
                isinstance(op, str) and op.strip() for op in ops):
            raise UsageError(f"{where}: ops must be a non-empty list of op names, e.g. "
                             f"[softmax, mm], got {ops!r}")
    if "rounds" in spec:
        rounds = spec["rounds"]
        if isinstance(rounds, str) and rounds.strip().lower() == AUTO:
            spec["rounds"] = AUTO              # as --rounds auto (its options on the command line)
        elif isinstance(rounds, bool) or not isinstance(rounds, int) or \
                not 1 <= rounds <= MAX_ROUNDS:
            raise UsageError(f"{where}: rounds must be a whole number from 1 to {MAX_ROUNDS} "
                             f"or auto, got {rounds!r}")
    for key in ("env_a", "env_b"):
        if key in spec and spec[key] is not None:
            _check_env(spec[key], f"{where}: {key}")
    if "scrub" in spec and spec["scrub"] is not None:
        scrub = spec["scrub"]
        if not isinstance(scrub, list) or not all(isinstance(p, str) for p in scrub):
            raise UsageError(f"{where}: scrub must be a list of regular expressions, "
                             f"got {scrub!r}")
        try:
            compile_scrub(scrub, default=False)
        except ValueError as exc:
            raise UsageError(f"{where}: scrub: {exc}") from None
    if "bench_args" in spec and not isinstance(spec["bench_args"], list):
        raise UsageError(f"{where}: bench_args must be a list of arguments, e.g. "
                         f"[--adapter, builtin], got {spec['bench_args']!r}")


def _check_env(env, where: str) -> None:
    if not isinstance(env, dict):
        raise UsageError(f"{where} must be a mapping NAME: value, got {env!r}")
    for name, value in env.items():
        if not isinstance(name, str) or not name or "=" in name:
            raise UsageError(f"{where}: {name!r} is not a variable name")
        if isinstance(value, bool) or value is None or not isinstance(value, (str, int, float)):
            raise UsageError(f"{where}.{name} is {value!r}, not a string{_hint(value)}")
        if "\0" in name or "\0" in str(value):
            raise UsageError(f"{where}.{name}: an environment variable cannot hold a NUL byte")
        check_env_text(name, str(value), where)


def _hint(value) -> str:
    if isinstance(value, bool):
        return (" (YAML reads yes/no/on/off/true/false as a boolean: quote it, e.g. "
                "'off' or '0')")
    if value is None:
        return " (an empty value: quote it, e.g. '')"
    return ""
