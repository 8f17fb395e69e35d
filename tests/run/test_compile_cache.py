"""A run's Triton compile cache: private and removed after the run; kept beside --out for a
later run (a screen's untimed run under --timing changed); another run's kept one loaded from
and left in place (the timed run of the same side and op), or, once it is gone, a private one
again, without an error."""
from __future__ import annotations

import json
from pathlib import Path

import harness
from harness.compile.caches import KEPT_PREFIX, remove_kept
from conftest import FAST_API


def bench(tmp_path: Path, out: str, **options) -> dict:
    shapes = tmp_path / "s.yaml"
    shapes.write_text("add: [[64]]\n")
    run = harness.bench("add", adapter="builtin", backend="cpu", shapes=str(shapes),
                        out=str(tmp_path / out), echo=lambda _: None, **FAST_API, **options)
    return json.loads((run.run_dir / "run.json").read_text())


def cache_of(info: dict) -> Path:
    return Path(info["caches"]["env"]["TRITON_CACHE_DIR"])


def test_a_private_cache_goes_with_its_run(tmp_path):
    info = bench(tmp_path, "own")
    assert cache_of(info).name == ".triton_cache" and cache_of(info).parent.name.startswith(
        ".cache-") and not cache_of(info).parent.exists()
    assert info["options"]["keep_compile_cache"] is False


def test_a_kept_cache_outlives_its_run_and_another_run_loads_from_it(tmp_path):
    info = bench(tmp_path, "untimed", isolate_tuner_cache=True, keep_compile_cache=True)
    kept = cache_of(info)
    assert kept.parent == tmp_path / "untimed" and kept.name.startswith(KEPT_PREFIX)
    assert info["options"]["keep_compile_cache"] is True
    # the tuner cache (and the rest of the private caches) went as ever
    assert not list((tmp_path / "untimed").glob(".cache-*"))
    assert kept.is_dir()               # made by the run even though the interpreter compiles
    (kept / "entry").write_text("kernel")
    info = bench(tmp_path, "timed", compile_cache=str(kept))
    assert cache_of(info) == kept and (kept / "entry").read_text() == "kernel"
    assert not list((tmp_path / "timed").glob(".cache-*"))
    remove_kept(tmp_path / "untimed")
    assert not kept.exists()
    remove_kept(tmp_path / "untimed")            # nothing left to remove: no error


def test_a_kept_cache_that_is_gone_gives_a_private_one(tmp_path):
    gone = tmp_path / "untimed" / f"{KEPT_PREFIX}20260101-000000-1"
    info = bench(tmp_path, "timed", compile_cache=str(gone))
    assert info["status"] == "complete" and info["options"]["compile_cache"] == str(gone)
    assert cache_of(info).name == ".triton_cache" and \
        cache_of(info).parent.parent == tmp_path / "timed"
    assert not gone.exists() and not list((tmp_path / "timed").glob(".cache-*"))
