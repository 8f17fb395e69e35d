"""The embedding API: measure, user cases through the runner, compare, compare_callables."""
import json
import math
import sys

import pytest
import torch
from click.testing import CliRunner

import harness
import user_kernels
from conftest import budget_args, FakeBackend, FAST_API
from harness.ab import orchestrate
from harness.ab.sides import ABPlan, Side
from harness.cli import main
from harness.common import markers
from harness.measure.measurement import Measurement
from harness.run.options import BenchOptions
from harness.store.reader import load_run

FAST = dict(FAST_API, min_samples=5, max_time_ms=30.0)
FAST_ARGS = budget_args(**FAST)


def one_line_error(excinfo, kind):
    assert isinstance(excinfo.value, kind), excinfo.value
    message = excinfo.value.message
    assert message and "\n" not in message and "Traceback" not in message
    return message


# ---- measure -------------------------------------------------------------------------------
def test_measure_times_a_triton_kernel_under_the_interpreter():
    x, y = torch.randn(4096), torch.randn(4096)
    # a cap far off and a loose error target: five samples however slow the host
    m = harness.measure(lambda: user_kernels.add(x, y), backend="cpu",
                        **dict(FAST, max_time_ms=30_000.0, target_rel_err=1.0))
    assert isinstance(m, Measurement)
    assert m.timer == "host" and m.fallback is None
    assert m.n >= 5 and len(m.samples_ms) == m.n and all(s > 0 for s in m.samples_ms)
    assert m.median > 0 and math.isfinite(m.rel_error)
    assert "fallback" not in m.to_dict()              # the stored form is unchanged


def test_a_failed_capture_is_event_timed_and_says_why(monkeypatch):
    fake = FakeBackend(capture_error=RuntimeError("operation not permitted when stream is "
                                                  "capturing"))
    monkeypatch.setattr(harness.embed.timing.backends, "get_backend", lambda name: fake)
    m = harness.measure(lambda: sum(range(200)), backend="fake", name="my_fn", **FAST)
    assert m.timer == "event"
    assert m.fallback.startswith(f"{markers.NO_GRAPH} op=my_fn phase=capture "
                                 f"reason=RuntimeError")
    again = Measurement.from_dict(json.loads(json.dumps(m.to_dict())))
    assert again.fallback == m.fallback and again.samples_ms == pytest.approx(m.samples_ms,
                                                                             rel=1e-5)
    assert Measurement.from_dict({"samples_ms": [1.0], "timer": "graph"}).fallback is None


@pytest.mark.parametrize("call, kind, words", [
    (lambda: harness.measure(3), harness.UsageError, "must be a callable"),
    (lambda: harness.measure(lambda x: x), harness.UsageError, "must take no arguments"),
    (lambda: harness.measure(print, backend="nope"), harness.UsageError, "unknown backend"),
    (lambda: harness.measure(print, backend="cpu", timer="graph"), harness.UsageError,
     "does not support graph capture"),
    (lambda: harness.measure(print, backend="cpu", min_samples=0), harness.UsageError,
     "min_samples"),
    (lambda: harness.compare_callables(print, print, backend="cpu", repeats=2),
     harness.UsageError, "unknown timing option repeats"),
    (lambda: harness.measure(print, backend="cpu", timer="fast"), harness.UsageError,
     "option timer: unknown value 'fast'"),
    (lambda: harness.compare_callables(print, "not a function"), harness.UsageError,
     "fb must be a callable"),
    (lambda: harness.compare_callables(print, print, rounds=0), harness.UsageError, "rounds"),
])
def test_bad_callables_and_options_are_one_line_usage_errors(call, kind, words):
    with pytest.raises(harness.ZlhError) as excinfo:
        call()
    assert words in one_line_error(excinfo, kind)
    assert excinfo.value.exit_code == 2


def test_a_callable_that_raises_is_a_callable_error_with_its_cause():
    def broken():
        raise ValueError("bad grid\nsecond line")

    with pytest.raises(harness.CallableError) as excinfo:
        harness.measure(broken, backend="cpu", name="broken", **FAST)
    message = one_line_error(excinfo, harness.CallableError)
    assert message.startswith("broken raised ValueError: bad grid") and "in broken" in message
    assert isinstance(excinfo.value.__cause__, ValueError)
    assert excinfo.value.exit_code == 1


def test_compare_callables_says_it_is_within_one_process():
    slow, fast = (lambda: sum(range(40000))), (lambda: sum(range(2000)))
    result = harness.compare_callables(slow, fast, rounds=3, backend="cpu", **FAST)
    assert result.scope == "within-process" and result.interval == "rounds"
    assert "within one process" in str(result) and "zlh ab --rounds" in str(result)
    assert len(result.a) == len(result.b) == len(result.per_round_delta_pct) == 3
    assert result.delta_pct > 100 and result.direction == 1     # a 20x cheaper B is faster
    assert result.to_dict()["scope"] == "within-process"
    single = harness.compare_callables(fast, fast, rounds=1, backend="cpu", **FAST)
    assert single.interval == "samples" and "within one process" in single.summary()


# ---- the public Case -------------------------------------------------------------------------
def test_case_inputs_and_checks():
    x = torch.ones(3)
    case = harness.Case(fn=torch.neg, baseline=torch.neg, inputs=lambda: x, dtype=torch.float32,
                        shape=[3])
    assert case.dtype == "float32" and case.shape_detail == "3"
    assert case.build().args == (x,)
    assert harness.Case(fn=torch.neg, baseline=torch.neg, inputs=lambda: {"input": x},
                        dtype="float32", shape="three").build().kwargs == {"input": x}
    check = case.checker()
    check(x, x + 1e-7)
    with pytest.raises(AssertionError, match="relative error"):
        check(x, x * 2)
    from adapters.user import check_close
    with pytest.raises(AssertionError, match="output 1: .*int64"):
        check_close((x, torch.tensor([1, 2])), (x, torch.tensor([1, 3])))
    assert case.metrics(None, 1.0, 2.0) == {}


@pytest.mark.parametrize("changes, words", [
    ({"fn": 3}, "Case fn: expected a callable"),
    ({"inputs": (1, 2)}, "Case inputs: expected a callable"),
    ({"dtype": "float17"}, "Case dtype"),
    ({"shape": [3.5]}, "Case shape"),
    ({"bytes": -1}, "Case bytes: expected a positive number"),
    ({"check": "strict"}, "Case check"),
])
def test_bad_cases_are_one_line_usage_errors(changes, words):
    values = {**dict(fn=torch.neg, baseline=torch.neg, inputs=lambda: torch.ones(2),
                     dtype="float32", shape=[2]), **changes}
    with pytest.raises(harness.UsageError) as excinfo:
        harness.Case(**values)
    assert words in one_line_error(excinfo, harness.UsageError)


# ---- user cases through the runner -----------------------------------------------------------
def test_user_cases_record_then_replay_and_zlh_ab_compares(tmp_path):
    out = str(tmp_path / "runs")
    cases = user_kernels.add_cases(fn=user_kernels.tuned_add)
    run_a = harness.bench_cases(cases, op="my_add", out=out, echo=lambda _: None, **FAST)
    run_b = harness.bench_cases(cases, op="my_add", out=out, replay=str(run_a.run_dir),
                                echo=lambda _: None, **FAST)
    assert [r.status for r in run_a.rows + run_b.rows] == ["SUCCESS"] * 4
    assert run_a.rows[0].gbps("gems") > 0
    info_a, info_b = load_run(run_a.run_dir).info, load_run(run_b.run_dir).info
    assert info_a["adapter"]["adapter"] == "user" and info_a["caliber"]["timer"] == "host"
    assert info_a["autotune_mode"] == "record" and info_b["autotune_mode"] == "replay"
    assert info_b["autotune_fallbacks"] == {"key_missing": 0, "compile_failed": 0}
    records = json.loads((run_a.run_dir / "autotune" / "records.json").read_text())
    (kernel,) = [k for k in records["kernels"] if "tuned_add_kernel" in k]
    keys = sorted(records["kernels"][kernel])                    # one key per shape
    assert len(keys) == 2 and keys[0].startswith("(1000,") and keys[1].startswith("(4096,")
    assert (run_a.run_dir / "shapes.yaml").exists() and (run_a.run_dir / "ttgir").is_dir()

    cli = CliRunner()
    result = cli.invoke(main, ["ab", str(run_a.run_dir), str(run_b.run_dir), "--root",
                               str(tmp_path / "ab")])
    assert result.exit_code == 0, result.output
    assert "my_add" in result.output and "summary: 2 shapes" in result.output
    assert cli.invoke(main, ["show", str(run_a.run_dir)]).exit_code == 0
    assert cli.invoke(main, ["report", str(tmp_path / "ab")]).exit_code == 0

    report = harness.compare(run_a, run_b.run_dir, root=tmp_path / "api")
    assert isinstance(report, harness.ABReport) and len(report.rows) == 2
    assert {r.shape_detail for r in report.rows} == {"1000", "4096"}
    assert all(r.interval == "samples" for r in report.rows)
    assert cli.invoke(main, ["report", str(tmp_path / "api")]).exit_code == 0
    run_c = harness.bench_cases(cases, op="my_add", out=out, replay=str(run_a.run_dir),
                                echo=lambda _: None, **FAST)
    rounds = harness.compare([run_a, run_c], [run_b, run_b])
    assert all(r.interval == "rounds" for r in rounds.rows)


def test_compare_refuses_two_record_runs_with_a_one_line_caliber_error(tmp_path):
    cases = user_kernels.add_cases(shapes=((1000,),))
    runs = [harness.bench_cases(cases, op="my_add", out=str(tmp_path), echo=lambda _: None,
                                **FAST) for _ in range(2)]
    with pytest.raises(harness.CaliberError) as excinfo:
        harness.compare(*runs)
    assert "both sides record" in one_line_error(excinfo, harness.CaliberError)
    assert excinfo.value.exit_code == 4
    report = harness.compare(*runs, allow_caliber_mismatch=True)
    assert any("both sides record" in p for p in report.caliber_problems)


def test_a_failing_user_case_fails_alone(tmp_path):
    def broken(x, y):
        raise RuntimeError("kernel exploded")

    cases = user_kernels.add_cases(shapes=((1000,),)) + [harness.Case(
        fn=broken, baseline=torch.add, inputs=lambda: user_kernels.two_inputs([8], torch.float32),
        dtype="float32", shape=[8])]
    run = harness.bench_cases(cases, op="my_add", out=str(tmp_path), echo=lambda _: None, **FAST)
    assert [r.status for r in run.rows] == ["SUCCESS", "FAILED"] and run.exit_code == 1
    assert "kernel exploded" in run.rows[1].markers[0]


def test_bench_cases_bad_input_is_a_one_line_usage_error(tmp_path):
    for call, words in [
        (lambda: harness.bench_cases([1, 2], out=str(tmp_path)), "item 0 (int) is not a harness.Case"),
        (lambda: harness.bench_cases([], out=str(tmp_path)), "holds no cases"),
        (lambda: harness.bench_cases("no_colon", out=str(tmp_path)), "MODULE:ATTR"),
        (lambda: harness.bench_cases({"a": user_kernels.add_cases()}, op="b", out=str(tmp_path)),
         "unknown op 'b' for these user cases (ops: a)"),
        (lambda: harness.bench_cases(user_kernels.add_cases(), adapter="builtin"),
         "adapter='builtin' does not apply"),
    ]:
        with pytest.raises(harness.UsageError) as excinfo:
            call()
        assert words in one_line_error(excinfo, harness.UsageError)


# ---- user cases named on the command line ----------------------------------------------------
USER_MODULE = '''
import os
import torch
import triton
import triton.language as tl
import harness


@triton.jit
def add_kernel(x_ptr, y_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offsets = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offsets < n
    x = tl.load(x_ptr + offsets, mask=mask)
    tl.store(out_ptr + offsets, x + tl.load(y_ptr + offsets, mask=mask), mask=mask)


def add(x, y):
    block = int(os.environ.get("USER_ADD_BLOCK", "1024"))
    out = torch.empty_like(x)
    add_kernel[(triton.cdiv(x.numel(), block),)](x, y, out, x.numel(), BLOCK=block)
    return out


def cases():
    return harness.Case.sweep(fn=add, baseline=torch.add,
                              make_inputs=lambda s, d: (torch.randn(s, dtype=d),
                                                        torch.randn(s, dtype=d)),
                              shapes=[[1000], [4096]])
'''


@pytest.fixture
def user_module(tmp_path, monkeypatch):
    """A user's module in the current directory, importable by name."""
    name = f"user_bench_{tmp_path.name.replace('-', '_')}"
    (tmp_path / f"{name}.py").write_text(USER_MODULE)
    (tmp_path / "broken_cases.py").write_text("raise RuntimeError('no GPU\\nhere')\n")
    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(sys, "path", list(sys.path))
    yield name
    for module in (name, "broken_cases"):
        sys.modules.pop(module, None)


@pytest.mark.e2e
def test_zlh_bench_cases_runs_a_module_and_zlh_ab_switches_it(user_module, tmp_path):
    spec = f"{user_module}:cases"
    result = CliRunner().invoke(main, ["bench", "--cases", spec, "--backend", "cpu", "--out",
                                       str(tmp_path / "runs"), "-q", *FAST_ARGS])
    assert result.exit_code == 0, result.output
    (run_dir,) = (tmp_path / "runs").glob("cases_*")
    info = load_run(run_dir).info
    assert info["options"]["cases"] == spec and info["adapter"]["cases"] == spec
    assert "--cases" in BenchOptions.from_run(info).to_argv()    # `zlh ab --replay` keeps it

    plan = ABPlan(ops=["cases"], a=Side("A", {"USER_ADD_BLOCK": "128"}, description="128"),
                  b=Side("B", {"USER_ADD_BLOCK": "1024"}, description="1024"),
                  options=BenchOptions.from_flat(cases=spec, backend="cpu", **FAST),
                  root=tmp_path / "ab")
    reports, code = orchestrate.run_ab(plan, echo=lambda _: None)
    assert code == 0 and len(reports[0].rows) == 2
    children = sorted((tmp_path / "ab").rglob("run.json"))
    modes = sorted(json.loads(p.read_text())["autotune_mode"] for p in children)
    assert modes == ["record", "replay"]
    assert all(json.loads(p.read_text())["options"]["cases"] == spec for p in children)


@pytest.mark.parametrize("args, code, words", [
    (["--cases", "nocolon"], 2, "--cases expects MODULE:ATTR"),
    (["--cases", "no_such_module_xyz:cases"], 2, "no module named 'no_such_module_xyz'"),
    (["--cases", "{module}:case"], 2, "has no attribute 'case'; did you mean cases?"),
    (["--cases", "{module}:add"], 2, "must take no arguments"),
    (["--cases", "{module}:os"], 3, "PREFLIGHT_FAILED check=cases --cases {module}:os names "
                                    "a module (os), not a case provider; expected a harness.Case"),
    (["--cases", "broken_cases:cases"], 3,
     "PREFLIGHT_FAILED check=import_cases --cases broken_cases:cases: importing broken_cases "
     "failed: no GPU"),
    (["--cases", "{module}:cases", "--adapter", "builtin"], 2, "cannot be combined"),
    (["op", "--adapter", "user"], 2, "adapter user needs --cases"),
    (["other", "--cases", "{module}:cases", "--shapes", "s.yaml"], 2,
     "--shapes does not apply to user cases"),
])
def test_bad_cases_on_the_command_line_are_one_line_errors(user_module, tmp_path, args, code,
                                                           words):
    (tmp_path / "s.yaml").write_text("other: [[1]]\n")
    args = [a.format(module=user_module) for a in args]
    words = words.format(module=user_module)
    result = CliRunner().invoke(main, ["bench", *args, "--backend", "cpu", "--out",
                                       str(tmp_path / "runs"), "-q"])
    assert result.exit_code == code, result.output
    lines = [ln for ln in result.output.splitlines() if ln.strip()]
    assert len(lines) == 1 and lines[0].startswith("zlh: ") and words in lines[0], lines


@pytest.mark.parametrize("attr, code, words", [
    ("os", 3, "PREFLIGHT_FAILED check=cases --cases {spec} names a module (os), not a case "
              "provider"),
    ("add", 2, "--cases {spec}: a function giving cases must take no arguments"),
])
def test_cases_that_give_no_cases_are_refused_before_any_op_runs(user_module, tmp_path, attr,
                                                                   code, words):
    """Before: batch and screen passed preflight, then every op FAILed after its retries."""
    spec = f"{user_module}:{attr}"
    for command in (["batch", "--ops", "cases", "--out", str(tmp_path / "runs")],
                    ["screen", "--ops", "cases", "--switch", "X=0,1", "--root",
                     str(tmp_path / "runs")]):
        result = CliRunner().invoke(main, [*command, "--cases", spec, "--backend", "cpu"])
        assert result.exit_code == code, result.output
        lines = [ln for ln in result.stderr.splitlines() if ln.strip()]
        assert lines == [lines[0]] and lines[0].startswith("zlh: " + words.format(spec=spec))
        assert not (tmp_path / "runs").exists()


def test_cases_option_round_trips_through_argv():
    from harness.cli.common import parse_bench_args
    options = BenchOptions.from_flat(cases="pkg.mod:cases", backend="cpu")
    argv = options.to_argv()
    assert argv[argv.index("--cases") + 1] == "pkg.mod:cases"
    assert BenchOptions.from_flat(**parse_bench_args(argv, "test")) == options
    with pytest.raises(harness.UsageError):
        BenchOptions.from_flat(cases=3)
