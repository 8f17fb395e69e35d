"""Inputs upstream draws on the host and moves to the device, drawn on the device instead
(`--inputs device`, adapters/device_inputs.py): which calls are replaced, with what values,
and what run.json says. On the cpu backend the run's device is the CPU: the threshold, the
choice of calls and the seeded draw are what is tested."""
import importlib.util
import json
import runpy
import threading
import types

import numpy as np
import pytest
import torch
from click.testing import CliRunner

from adapters.device_inputs import (THRESHOLD, DeviceInputs, call_seed, caller_moves,
                                    factory_calls)
from adapters.flaggems import FlagGemsAdapter
from backends import backend_for
from conftest import FAKE_FLAGGEMS, ROOT, budget_args
from harness.cli import main
from harness.run.case import seed_everything
from harness.run.options import BenchOptions
from harness.store.caliber import Caliber
from harness.store.reader import read_rows

SUMMARY = runpy.run_path(str(ROOT / "tests" / "device" / "inputs_summary.py"))

SOURCE = '''import numpy as np
import torch
def moved(n): return torch.randint(0, 10, (n,), device="cpu").to("cpu")
def chained(n):
    return (torch.randint(0, 2, (n,), dtype=torch.int8, device="cpu") * 2 - 1).float().to(
        "cpu")
def kept(n):
    x = torch.randint(0, 10, (n,), device="cpu")
    return x.to("cpu")
def item(): return torch.randint(0, 10, (1,), device="cpu").item()
def own(n, g): return torch.randint(0, 10, (n,), generator=g).to("cpu")
def two(n): return torch.randint(0, 10, (n,)).to("cpu"), torch.randint(0, 10, (n,))
def cast(n): return torch.randint(0, 10, (n,), device="cpu").to(torch.float32)
def cast_then_move(n, dtype): return torch.randn(n).to(dtype).to(device="cpu")
def pick(n, k, replace, p=None): return np.random.choice(np.arange(n), size=k, replace=replace, p=p)
'''


@pytest.fixture
def source(tmp_path):
    path = tmp_path / "host_inputs.py"
    path.write_text(SOURCE)
    spec = importlib.util.spec_from_file_location("host_inputs", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return path, module


def test_only_large_device_bound_host_draws_are_replaced_with_seeded_ones(source):
    path, mod = source
    moved = {line: flag for (line, *_), (_, flag) in factory_calls(str(path)).items()}
    assert moved == {3: True, 5: True, 8: False, 10: False, 11: True, 12: True,  # 12: both
                     13: False, 14: True}
    for line, expected in ((3, True), (5, True), (8, False), (12, False)):   # no positions:
        frame = types.SimpleNamespace(f_code=types.SimpleNamespace(co_filename=str(path)),
                                      f_lineno=line)                       # by line; two on
        assert caller_moves(frame, "randint") is expected                 # line 12: neither
    drawing = DeviceInputs("cpu", threshold=16)
    original, choice = torch.randint, np.random.choice
    torch.manual_seed(3)
    with drawing.scope():
        assert torch.randint is not original
        first, second = mod.moved(64), mod.chained(64)
        mod.kept(64), mod.item(), mod.moved(8), mod.own(64, torch.Generator().manual_seed(1))
        pair = mod.two(64)                     # two calls on one line: only the moved one
        mod.cast(64)                                           # .to(dtype) alone: as written
        mod.cast_then_move(64, torch.float16)                  # randn: 4th replaced
        picked = mod.pick(64, 32, False)                       # a host index set: 5th
        assert picked.dtype == np.arange(1).dtype and len(set(picked.tolist())) == 32
        assert picked.min() >= 0 and picked.max() < 64
        mod.pick(8, 4, True), mod.pick(64, 4, True, np.full(64, 1 / 64))   # small; weighted
        elsewhere = []
        thread = threading.Thread(target=lambda: elsewhere.append(mod.moved(64)))
        thread.start()
        thread.join()                          # another thread's draw stays as written
    assert torch.randint is original and np.random.choice is choice   # restored
    assert drawing.record() == {"mode": "device", "threshold_elements": 16,
                                "replaced_calls": 5,
                                "replaced": {"numpy.random.choice": 1, "torch.randint": 3,
                                             "torch.randn": 1}}
    expected = torch.randint(0, 10, (64,), generator=torch.Generator().manual_seed(
        call_seed(3, 0)))
    assert torch.equal(first, expected)        # the run's seed and the call's position
    assert second.dtype == torch.float32 and set(second.unique().tolist()) == {-1.0, 1.0}
    assert torch.equal(pair[0], torch.randint(0, 10, (64,), generator=torch.Generator(
        ).manual_seed(call_seed(3, 2))))       # the third replaced call
    with pytest.raises(RuntimeError), drawing.scope():
        raise RuntimeError("the block fails")
    assert torch.randint is original
    upstream = DeviceInputs("cpu", mode="upstream")
    with upstream.scope():
        assert torch.randint is original
    assert upstream.record() == {"mode": "upstream"}


def _inputs(mode: str, seed: int):
    """The fixture op's cases as the runner makes them (seeded before each), and run.json's
    record."""
    cpu = backend_for("cpu")
    adapter = FlagGemsAdapter(flaggems_dir=str(FAKE_FLAGGEMS))
    adapter.set_input_mode(mode)
    op = adapter.resolve("bitwise_xor_host")
    adapter.prepare([op], cpu, "core", None)
    cases, out = adapter.cases(op, None, None, "core", cpu, "cpu"), []
    while True:
        seed_everything(seed)
        case = next(cases, None)
        if case is None:
            return out, adapter.inputs_record(op)
        out.append((case.dtype, case.build().args[:2]))


@pytest.mark.usefixtures("fresh_flaggems_modules")
def test_device_inputs_keep_dtype_shape_and_range_and_follow_the_seed():
    device, record = _inputs("device", 0)
    again, _ = _inputs("device", 0)
    other, _ = _inputs("device", 1)
    upstream, upstream_record = _inputs("upstream", 0)
    assert record == {"mode": "device", "threshold_elements": THRESHOLD, "replaced_calls": 4,
                      "replaced": {"torch.randint": 4}}
    assert upstream_record == {"mode": "upstream"}
    assert [d for d, _ in device] == ["int16", "int16", "int32", "int32"]
    for (dtype, tensors), (_, same), (_, another), (_, theirs) in zip(device, again, other,
                                                                      upstream):
        large = tensors[0].numel() >= THRESHOLD
        for mine, twin, diff, up in zip(tensors, same, another, theirs):
            assert mine.dtype == up.dtype and mine.shape == up.shape
            assert torch.equal(mine, twin)                  # same seed, same values
            assert torch.equal(mine, up) != large           # replaced above the threshold only
            assert not torch.equal(mine, diff)             # another seed, other values
            if large:
                info = torch.iinfo(mine.dtype)              # the range upstream asks for
                low, high = int(mine.min()), int(mine.max())
                assert info.min <= low and high < info.max
                assert high - low > 0.999 * (info.max - info.min)
    torch.manual_seed(0)                                    # upstream's own call, untouched
    info = torch.iinfo(torch.int16)
    assert torch.equal(upstream[0][1][0], torch.randint(info.min, info.max, (1 << 20,),
                                                        dtype=torch.int16))


@pytest.mark.usefixtures("fresh_flaggems_modules")
def test_run_json_says_how_inputs_were_made_and_runs_of_one_seed_agree(tmp_path):
    def bench(name, *args):
        result = CliRunner().invoke(main, [
            "bench", "bitwise_xor_host", "--flaggems-dir", str(FAKE_FLAGGEMS), "--backend",
            "cpu", "--adapter", "flaggems", "--dtypes", "int16", "--out", str(tmp_path / name),
            *budget_args(max_time_ms=5), *args])
        assert result.exit_code == 0, result.output
        (run,) = (tmp_path / name).iterdir()
        rows = read_rows(run / "results.jsonl")
        assert all(r.extra["inputs_s"] >= 0 for r in rows)  # each case's building time
        (tmp_path / name / "ops_status.csv").write_text(    # as a batch root has it
            f"op,status,elapsed_s,run_dir,notes\nbitwise_xor_host,PASS,1.5,{run.name},\n")
        summary = SUMMARY["summarize"](tmp_path / name)   # tests/device/check_inputs.sh's
        assert summary[0]["max_case_inputs_s"] == max(r.extra["inputs_s"] for r in rows)
        assert summary[0]["mode"] == (args[-1] if args else "device")
        return json.loads((run / "run.json").read_text()), [r.extra["output"] for r in rows]

    info, outputs = bench("a")
    _, same = bench("b")
    upstream, theirs = bench("c", "--inputs", "upstream")
    assert info["inputs"] == {"mode": "device", "threshold_elements": THRESHOLD,
                              "replaced_calls": 2, "replaced": {"torch.randint": 2}}
    assert info["caliber"]["inputs"] == "device" and info["inputs_s"] > 0
    assert upstream["inputs"] == {"mode": "upstream"}
    assert upstream["caliber"]["inputs"] == "upstream"
    assert outputs == same                       # both sides of an A/B draw the same values
    assert outputs[0] != theirs[0] and outputs[1] == theirs[1]   # large case only


def test_a_run_written_before_the_mode_reads_and_replays_as_upstream():
    """Such runs built every input as upstream does: their caliber reads `upstream`, and
    `zlh ab --replay` of one reproduces it with --inputs upstream (no needless refusal)."""
    options = BenchOptions(backend="cpu")
    caliber = {k: v for k, v in options.caliber_values().items() if k != "inputs"}
    info = {"options": options.run_record(), "caliber": caliber}
    assert BenchOptions.from_run(info).inputs == "upstream"
    assert BenchOptions.from_run({**info, "caliber": {**caliber, "inputs": "device"}}
                                 ).inputs == "device"
    full = {"backend": "cpu", "device": "host", "timer": "host", "shape_mode": "default",
            "tuner_cache": "none", **caliber}
    assert Caliber.from_dict(full).inputs == "upstream"
    assert [d.field for d in Caliber.from_dict(full).differences(
        Caliber.from_dict({**full, "inputs": "device"}))] == ["inputs"]
