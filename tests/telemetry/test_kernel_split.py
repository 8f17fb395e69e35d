"""--kernel-split: the per-kernel split of the op's device time from a profiler's events, the
file it writes, and its place in a run (after each case is timed, never inside the timing;
one line and no file where the backend's kernels are invisible to torch's profiler)."""
from __future__ import annotations

import dataclasses
from types import SimpleNamespace

from click.testing import CliRunner
from torch.autograd import DeviceType

from conftest import CPU_FAST, FakeBackend
from harness.cli import main
from harness.run.runner import run_op
from harness.telemetry import kernel_split as ks
from scripted import plan_for


def event(name, start, end, device=DeviceType.CUDA):
    return SimpleNamespace(name=name, device_type=device,
                           time_range=SimpleNamespace(start=start, end=end))


# Two calls of an op: a scan kernel (30 + 32 µs), an add kernel (8 + 10 µs) and a memset,
# beside the host-side events the profiler records too.
EVENTS = [event("aten::cumsum", 0, 100, DeviceType.CPU), event("cudaLaunchKernel", 1, 3,
                                                              DeviceType.CPU),
          event("scan_kernel", 10, 40), event("add_kernel", 40, 48),
          event("Memset (Device)", 48, 50),
          event("scan_kernel", 110, 142), event("add_kernel", 142, 152),
          event("Memset (Device)", 152, 154)]


def test_device_events_are_summed_per_kernel_and_shared_out():
    found = ks.device_events(EVENTS)
    assert [n for n, _ in found].count("scan_kernel") == 2 and "aten::cumsum" not in dict(found)
    rows = ks.split_rows(ks.aggregate(found), op_calls=2)
    assert [(r["kernel"], r["calls"], r["time_us"], r["per_call_us"]) for r in rows] == [
        ("scan_kernel", 2, 31.0, 31.0), ("add_kernel", 2, 9.0, 9.0),
        ("Memset (Device)", 2, 2.0, 2.0)]
    assert [r["share"] for r in rows] == [0.7381, 0.2143, 0.0476]
    # Per call of the op, the kernels' times add up to its device time per call.
    assert sum(r["time_us"] for r in rows) == 42.0
    assert ks.split_rows(ks.aggregate(ks.device_events(EVENTS[:2])), 2) == []
    # The span of a call: its first device event's start to its last one's end (40 and 44
    # µs: no idle time inside a call here), the gap between the two calls left out.
    assert ks.device_span(EVENTS, 2) == 42.0
    gapped = [event("k1", 0, 10), event("k2", 12, 20), event("k1", 100, 110),
              event("k2", 113, 120)]
    rows = ks.split_rows(ks.aggregate(ks.device_events(gapped)), op_calls=2)
    assert sum(r["time_us"] for r in rows) == 17.5 and ks.device_span(gapped, 2) == 20.0
    assert ks.device_span(EVENTS[:2], 2) is None               # no device event
    assert ks.device_span(gapped[:3], 2) is None               # calls that launch alike?
    unlike = [event("k1", 0, 10), event("k2", 12, 20), event("k3", 30, 38),
              event("k1", 100, 110)]                   # 3 launches, then 1: cut 2 + 2, unlike
    assert ks.device_span(unlike, 2) is None


class Profiled(FakeBackend):
    """A device backend whose kernels a profiler sees (the profiler itself is faked)."""

    def profiler_activities(self):
        return ["device"]


def test_a_run_profiles_each_timed_case_after_its_timing(tmp_path, monkeypatch, sure_rule,
                                                         fast_budget):
    log: list[str] = []

    def fake_profile(fn, calls, activities, synchronize):
        assert activities == ["device"]
        log.append("profile")
        for _ in range(calls):
            fn()
        return EVENTS
    monkeypatch.setattr(ks, "torch_profile", fake_profile)
    plan = plan_for(["ok", "raise", "ok"], tmp_path, sure_rule, fast_budget, Profiled())
    plan.options = dataclasses.replace(plan.options, kernel_split=True)
    adapter_cases = plan.adapter.cases

    def counted_cases(*args, **kwargs):
        for case in adapter_cases(*args, **kwargs):
            under_test = case.under_test

            def calling(*a, f=under_test, **k):
                log.append("call")
                return f(*a, **k)
            yield dataclasses.replace(case, under_test=calling)
    plan.adapter.cases = counted_cases
    result = run_op(plan, "op", echo=lambda _: None)

    # Each successful case: its timed calls, then one profiler pass of PROFILED_CALLS calls
    # that nothing timed comes after; the failed case is not profiled.
    passes = [i for i, entry in enumerate(log) if entry == "profile"]
    assert len(passes) == 2
    assert log[passes[1] + 1:] == ["call"] * ks.PROFILED_CALLS
    assert log[passes[0] + 1:passes[0] + 1 + ks.PROFILED_CALLS] == ["call"] * ks.PROFILED_CALLS
    assert all(r.gems.n >= sure_rule.min_samples for r in result.rows if r.gems)
    lines = (result.run_dir / ks.FILE_NAME).read_text().splitlines()
    header = lines[0].split("\t")
    assert header == list(ks.COLUMNS)
    rows = [dict(zip(header, line.split("\t"))) for line in lines[1:]]
    assert [(r["shape"], r["kernel"]) for r in rows] == [
        ("8x0", "scan_kernel"), ("8x0", "add_kernel"), ("8x0", "Memset (Device)"),
        ("8x2", "scan_kernel"), ("8x2", "add_kernel"), ("8x2", "Memset (Device)")]
    first = rows[0]
    assert (first["dtype"], first["occurrence"], first["calls"], first["op_calls"]) == \
        ("float32", "0", "2", str(ks.PROFILED_CALLS))
    # time_us is per call of the op: 62 µs of scan over PROFILED_CALLS calls.
    assert float(first["time_us"]) == round(62 / ks.PROFILED_CALLS, 3)
    assert float(first["op_latency_us"]) == round(result.rows[0].gems_ms * 1000, 3)
    # 6 device events do not cut into PROFILED_CALLS calls of the same launches: no span
    assert first["op_span_us"] == ""
    # the timer that measured op_latency_us (host here: the CPU backend)
    assert first["op_timer"] == result.rows[0].gems.timer


def test_a_failing_profiler_costs_only_the_split(tmp_path, monkeypatch, sure_rule,
                                                 fast_budget):
    def broken(*args):
        raise RuntimeError("CUPTI_ERROR_INSUFFICIENT_PRIVILEGES\nmore")
    monkeypatch.setattr(ks, "torch_profile", broken)
    plan = plan_for(["ok"], tmp_path, sure_rule, fast_budget, Profiled())
    plan.options = dataclasses.replace(plan.options, kernel_split=True)
    said: list[str] = []
    result = run_op(plan, "op", echo=said.append)
    assert result.status == "complete" and result.rows[0].status == "SUCCESS"
    assert not (result.run_dir / ks.FILE_NAME).exists()
    [line] = [s for s in said if s.startswith("kernel split:")]
    assert "the profiler failed (RuntimeError: CUPTI_ERROR_INSUFFICIENT_PRIVILEGES" in line


def test_cpu_backend_says_so_in_one_line_and_writes_nothing(tmp_path):
    out = tmp_path / "runs"
    result = CliRunner().invoke(main, ["bench", "add", *CPU_FAST, "--out", str(out),
                                       "--kernel-split"])
    assert result.exit_code == 0, result.output
    [line] = [x for x in result.output.splitlines() if "kernel split" in x]
    assert line.startswith("kernel split: not available on the cpu backend")
    [run_dir] = out.iterdir()
    assert not (run_dir / ks.FILE_NAME).exists()
    assert "kernel split: not available" in (run_dir / "run.log").read_text()


def test_backends_name_the_profiler_activity_that_sees_their_kernels(monkeypatch):
    import torch

    import backends
    cuda, rocm, cpu, musa = (backends.get_backend(n) for n in ("cuda", "rocm", "cpu", "musa"))
    # This host's torch has no device profiler: nobody gets one.
    assert cuda.profiler_activities() == [] or torch.cuda.is_available()
    activity = torch.profiler.ProfilerActivity
    monkeypatch.setattr(torch.profiler, "supported_activities",
                        lambda: {activity.CPU, activity.CUDA})
    assert cuda.profiler_activities() == rocm.profiler_activities() == [activity.CUDA]
    assert cpu.profiler_activities() == musa.profiler_activities() == []


def test_a_written_split_reads_back_with_its_sum_beside_the_latency(tmp_path):
    rows = ks.split_rows(ks.aggregate(ks.device_events(EVENTS)), op_calls=2)
    where = {"variant": "", "dtype": "float32", "shape": "[1024, 65536]", "occurrence": 0}
    other = dict(where, dtype="float16")
    table = [{**where, **r, "op_latency_us": 73.0, "op_span_us": 72.0} for r in rows]
    table += [{**other, **rows[0], "op_latency_us": None}]
    (tmp_path / ks.FILE_NAME).write_text(ks.tsv(table))
    back = ks.read_split(tmp_path)
    assert [r["kernel"] for r in back] == ["scan_kernel", "add_kernel", "Memset (Device)",
                                           "scan_kernel"]
    first, second = ks.case_sums(back)
    assert (first["dtype"], first["kernels"], first["kernels_us"], first["op_latency_us"]) == \
        ("float32", 3, 42.0, 73.0)
    # kernels + idle between them = the span, and the span stands beside the latency
    assert (first["idle_us"], first["span_us"], first["gap_pct"]) == (30.0, 72.0,
                                                                      round(100 / 73, 3))
    assert (second["kernels"], second["op_latency_us"], second["gap_pct"]) == (1, None, None)
    assert first["compared"] == "span"
    # Under the graph timer (named by the rows, or the run's timer for rows that do not name
    # one) replays have no host launch time between kernels: the kernels' sum stands beside
    # the latency, the span is still shown.
    graph = [{**r, "op_timer": "graph"} if r["dtype"] == "float32" else r for r in back]
    for sums in (ks.case_sums(graph), ks.case_sums(back, timer="graph")):
        assert (sums[0]["compared"], sums[0]["span_us"], sums[0]["gap_pct"]) == \
            ("kernels", 72.0, round(100 * 31 / 73, 3))
    event = [{**r, "op_timer": "event"} for r in back]
    assert ks.case_sums(event, timer="graph")[0]["compared"] == "span"
    assert ks.read_split(tmp_path / "missing") == []
    # A file written before spans were recorded: the kernels' sum stands beside the latency.
    old = ks.tsv([{**where, **r, "op_latency_us": 43.0} for r in rows])
    old_header = "\t".join(ks.COLUMNS[:-2])
    lines = [old_header] + [line.rsplit("\t", 2)[0] for line in old.splitlines()[1:]]
    (tmp_path / ks.FILE_NAME).write_text("\n".join(lines) + "\n")
    (only,) = ks.case_sums(ks.read_split(tmp_path))
    assert (only["span_us"], only["idle_us"], only["gap_pct"]) == (None, None,
                                                                   round(100 / 43, 3))
