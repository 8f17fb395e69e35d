"""A worker's last job (turns-fresh stops the worker after every run) skips the reset
between ops, which only a later op in the process would need; a standby's warm start makes
the checks a run makes before it starts, so its first run does not pay them."""
from harness.corpus import worker
from harness.store import compiler

ARGS = ["--adapter", "builtin", "--backend", "cpu", "--dtypes", "float32",
        "--warmup-ms", "0", "--min-samples", "1", "--min-time-ms", "0", "--max-time-ms", "1"]


def _job(tmp_path, **extra):
    return {"op": "add", "args": [*ARGS, "--out", str(tmp_path / "out")],
            "log": str(tmp_path / "op.log"), **extra}


def test_the_reset_runs_after_a_job_unless_it_is_the_workers_last(tmp_path, monkeypatch):
    resets = []
    monkeypatch.setattr(worker, "_reset", lambda options: resets.append(options) or 0)
    first = worker.run_job(_job(tmp_path / "1"))
    assert first["rc"] == 0 and len(resets) == 1 and first["held_bytes"] == 0
    last = worker.run_job(_job(tmp_path / "2", last=True))
    assert last["rc"] == 0 and len(resets) == 1
    assert last["held_bytes"] is None and last["state_changed"] == []
    assert list((tmp_path / "2" / "out").glob("*/results.jsonl"))      # the run itself ran


def test_a_warm_start_plans_the_lanes_op_ahead(tmp_path):
    from triton.runtime.cache import triton_key
    compiler._identity_at.cache_clear()
    triton_key.cache_clear()
    worker._warm({"op": "add", "args": [*ARGS, "--out", str(tmp_path / "out")]})
    assert compiler._identity_at.cache_info().currsize == 1      # the compiler's identity
    assert triton_key.cache_info().currsize == 1                 # Triton's own digest
    assert not (tmp_path / "out").exists()                       # a dry run: nothing written


def test_a_warm_start_makes_the_device_context_only_when_asked(tmp_path, monkeypatch):
    import backends
    activated = []
    cls = type(backends.backend_for("cpu"))
    monkeypatch.setattr(cls, "activate", lambda self, index: activated.append(index))
    spec = {"op": "add", "args": [*ARGS, "--out", str(tmp_path / "out")]}
    worker._warm(spec)
    assert activated == []                              # a batch's standby: imports only
    worker._warm({**spec, "activate": True})            # a turns-fresh spare
    assert activated == [0]


def test_a_warm_start_imports_what_a_first_call_imports_lazily(tmp_path, monkeypatch):
    from harness.compile import warm
    calls = []
    monkeypatch.setattr(warm, "import_first_call_modules", lambda: calls.append(1) or [])
    worker._warm({"op": "add", "args": [*ARGS, "--out", str(tmp_path / "out")]})
    assert calls == [1]
