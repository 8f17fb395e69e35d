"""A/B recipes (YAML): what differs between the sides, the ops, rounds, scrub patterns."""
from __future__ import annotations

from ..common.errors import UsageError

KEYS = ("name", "description", "ops", "switch", "env_a", "env_b", "python_a", "python_b",
        "rounds", "scrub", "bench_args", "check_upstream")


def load_recipe(path: str) -> dict:
    import yaml
    try:
        with open(path, encoding="utf-8") as handle:
            spec = yaml.safe_load(handle)
    except OSError as exc:
        raise UsageError(f"recipe {path} cannot be read: {exc.strerror}") from None
    except yaml.YAMLError as exc:
        raise UsageError(f"recipe {path} is not valid YAML: {exc}") from None
    if not isinstance(spec, dict):
        raise UsageError(f"recipe {path}: top level must be a mapping")
    unknown = set(spec) - set(KEYS)
    if unknown:
        raise UsageError(f"recipe {path}: unknown keys {', '.join(sorted(unknown))}")
    return spec
