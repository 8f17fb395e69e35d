"""Bad inputs to the corpus commands (batch, screen, partition, campaign, report/show on their
roots): one `zlh:` line and exit 2 for what would fail every op the same way, whether it came
from the command line or from a resumed root's files; a finished op whose run directory is
gone runs again with a warning instead of losing its rows without a word."""
from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from click.testing import CliRunner

from harness.cli import main
from harness.cli.batch import interrupted_hint
from harness.cli.devices import parse_devices
from harness.common.errors import UsageError
from harness.corpus.campaign import plan_campaign, write_plan
from harness.corpus.selection import parse_dismiss, parse_ops_file, select

from conftest import CPU_FAST

FAST = CPU_FAST


def run(args):
    return CliRunner().invoke(main, [str(a) for a in args])


def one_line(result, code: int, *fragments: str) -> str:
    assert result.exit_code == code, result.output
    assert result.exception is None or isinstance(result.exception, SystemExit), \
        result.exception
    assert "Traceback" not in result.output
    errors = [ln for ln in result.output.splitlines() if ln.startswith("zlh: ")]
    assert len(errors) == 1, result.output
    for fragment in fragments:
        assert fragment in errors[0], errors[0]
    return errors[0]


def listing(root: Path) -> list:
    return sorted(str(p.relative_to(root)) for p in root.rglob("*"))


@pytest.fixture(scope="module")
def roots(tmp_path_factory, corpus_batch):
    """conftest's batch (add, softmax), and a screen of both ops."""
    base = tmp_path_factory.mktemp("corpus")
    shapes = base / "shapes.yaml"
    shapes.write_text("add: [[64]]\nsoftmax: [[4, 64]]\n")
    (base / "batch").symlink_to(corpus_batch)
    screen = run(["screen", *FAST, "--shapes", shapes, "--ops", "add,softmax",
                  "--switch", "ZLH_BUILTIN_SLOW=0,1", "--root", base / "screen"])
    assert screen.exit_code == 0, screen.output
    return base


def copy(roots: Path, tmp_path: Path, name: str) -> Path:
    root = tmp_path / name
    shutil.copytree(roots / name, root, symlinks=True)
    return root


def edit_json(path: Path, edit) -> None:
    doc = json.loads(path.read_text())
    edit(doc)
    path.write_text(json.dumps(doc))


def opt(key, value):
    return lambda d: d["options"].__setitem__(key, value)


IMPOSSIBLE = [
    (opt("adapter", "nope"), "unknown adapter 'nope'"),
    (opt("dtypes", ["float99"]), "options.dtypes: unknown dtype float99"),
    (opt("shapes", "/nonexistent/shapes.yaml"), "shape file not found"),
    (opt("cases", "mod:attr"), "--cases names user cases"),
    (opt("device", 3), "--device 3: a corpus command spreads its ops over --devices"),
    (opt("l2", "flush"), "--l2 flush needs device events"),
    (opt("min_samples", 0), "field options: option min_samples: 0 is below its minimum"),
    (lambda d: d["ops"].append({"op": "nosuchop", "dtypes": None}), "unknown op 'nosuchop'"),
    (lambda d: d["ops"].append({"op": "add", "dtypes": None}), "op add is listed twice"),
    (lambda d: d["ops"][0].__setitem__("dtypes", ["float99"]), "op add: unknown dtype float99"),
    (lambda d: d.__setitem__("ops", []), "no op to run"),
    (lambda d: d.__setitem__("python", "/nonexistent/python"),
     "interpreter /nonexistent/python not found"),
    (lambda d: d.__setitem__("retries", 1000), "field retries: expected an integer from 0 to 5"),
    (lambda d: d.__setitem__("inventory", {"add": "x"}), "field inventory: expected an object"),
]


@pytest.mark.parametrize("edit,fragment", IMPOSSIBLE, ids=[f for _, f in IMPOSSIBLE])
@pytest.mark.e2e
def test_resumed_batch_with_an_impossible_plan_is_one_line(roots, tmp_path, edit, fragment):
    """Before: each op ran and FAILed (after its retries) with the same reason, an unknown
    dtype fell back silently to PASS, an op listed twice ran once, no ops was exit 0, and an
    inventory of the wrong type was a traceback. Now: one line naming batch.json, nothing run."""
    root = copy(roots, tmp_path, "batch")
    (root / "softmax" / ".complete").unlink()           # work left to do
    edit_json(root / "batch.json", edit)
    before = listing(root)
    one_line(run(["batch", "--resume", root]), 2, f"{root}/batch.json: ", fragment)
    assert listing(root) == before


NEW_BATCH = [(["--shapes", "/nonexistent/shapes.yaml"], "shape file not found"),
             (["--l2", "flush"], "--l2 flush needs device events"),
             (["--timer", "graph"], "does not support graph capture"),
             (["--device", "0"], "--device 0: a corpus command spreads its ops"),
             (["--op-timeout", "nan"], "nan is not a finite number"),
             (["--op-timeout", "inf"], "inf is not a finite number"),
             (["--devices", ""], "an empty value"),
             (["--devices", "0,,1"], "--devices expects indices such as 0,1,2"),
             (["--out", ""], "an empty value")]


@pytest.mark.parametrize("args,fragment", NEW_BATCH, ids=[f for _, f in NEW_BATCH])
def test_new_batch_with_an_option_failing_every_op_is_one_line(tmp_path, args, fragment):
    """Before: per-op FAIL for each (shape file, l2, timer), a traceback in a lane (nan), a
    batch that could never be resumed (inf was stored as null), '' read as the default."""
    out = ["--out", tmp_path / "b"] if "--out" not in args else []
    one_line(run(["batch", *FAST, "--ops", "add", *args, *out, "-q"]), 2, fragment)
    assert not (tmp_path / "b").exists()


def test_new_batch_under_a_folder_that_takes_none_is_one_line():
    """Before: exit 1 after the header was printed (the directory was made after the check)."""
    one_line(run(["batch", *FAST, "--ops", "add", "--out", "/proc/zlh-batch", "-q"]), 2,
             "--out /proc/zlh-batch: cannot create a directory under /proc")


@pytest.mark.parametrize("damage", ["gone", "run.json", "results.jsonl", "other op"])
@pytest.mark.e2e
def test_complete_naming_an_unreadable_run_runs_the_op_again(roots, tmp_path, damage):
    """Before: the op counted as finished and its rows vanished from summary.csv without a
    word. Now: a warning naming the .complete and the run, the op runs again, and the old
    folder is kept under .abandoned/."""
    root = copy(roots, tmp_path, "batch")
    run_dir = next((root / "add").glob("add_*"))
    if damage == "gone":
        shutil.rmtree(run_dir)
    elif damage == "other op":
        other = next((root / "softmax").glob("softmax_*"))
        edit_json(root / "add" / ".complete",
                  lambda d: d.__setitem__("run_dir", f"softmax/{other.name}"))
    else:
        (run_dir / damage).write_text("{garbage")
    result = run(["batch", "--resume", root, "-q"])
    assert result.exit_code == 0, result.output
    warning = next(ln for ln in result.output.splitlines() if ln.startswith("WARNING"))
    assert f"{root}/add/.complete names run" in warning and "add runs again" in warning
    summary = (root / "summary.csv").read_text()
    assert "\nadd," in summary and "\nsoftmax," in summary
    assert list((root / ".abandoned").iterdir())
    status = (root / "ops_status.csv").read_text()
    assert "resumed" in status.splitlines()[1]


@pytest.mark.e2e
def test_batch_resume_of_a_screen_side_is_refused(roots, tmp_path):
    """Before: side B resumed as a plain batch ran its ops without A's record."""
    root = copy(roots, tmp_path, "screen")
    (root / "B" / "add" / ".complete").unlink()
    before = listing(root)
    one_line(run(["batch", "--resume", root / "B"]), 2, "is side B of the screen",
             f"zlh screen --resume {root}")
    assert listing(root) == before


@pytest.mark.parametrize("damage,fragment", [
    ("folder", "batch table"), ("file", "is a file where the folder of op add belongs")])
@pytest.mark.e2e
def test_batch_resume_of_a_root_with_things_in_the_wrong_place(roots, tmp_path, damage,
                                                               fragment):
    """Before: a folder where ops_status.csv belongs failed after the first op (exit 1,
    naming a temp file); an op folder replaced by a file was called a damaged .complete."""
    root = copy(roots, tmp_path, "batch")
    if damage == "folder":
        (root / "ops_status.csv").unlink()
        (root / "ops_status.csv").mkdir()
    else:
        shutil.rmtree(root / "add")
        (root / "add").write_text("x")
    one_line(run(["batch", "--resume", root]), 2, fragment)
    one_line(run(["batch", "--resume", root / "add" if damage == "file" else tmp_path / "nope"]),
             2, "is a file, not a batch root" if damage == "file" else "is not a batch root")


def test_dismiss_entry_matching_no_op_is_said_once_per_line(tmp_path):
    """Before: a typo in the dismiss list dismissed nothing without a word."""
    import adapters
    path = tmp_path / "dismiss.txt"
    path.write_text("# reasons\nadd  # slow\nsoftmaks  # typo\nvllm:nothing  # gone\n")
    warned = []
    items, left = select(adapters.get_adapter("builtin"), False, ["add", "softmax", "add"],
                         None, dismiss=parse_dismiss(path), warn=warned.append)
    assert [i.op for i in items] == ["softmax"] and left == [("add", "dismissed: slow")]
    assert warned == [
        "WARNING: ops named more than once run once each (first occurrence kept): "
        "add (2 times)",
        f"WARNING: {path}:3: dismiss entry 'softmaks' matches no op of the corpus; it "
        f"dismisses nothing (check the name)",
        f"WARNING: {path}:4: dismiss entry 'vllm:nothing' matches no op of the corpus; it "
        f"dismisses nothing (check the name)"]


def test_ops_file_and_dismiss_list_with_a_byte_order_mark(tmp_path):
    """Before: an editor's byte-order mark became part of the first op name."""
    path = tmp_path / "ops.txt"
    path.write_bytes("\ufeffadd\nsoftmax::float32\n".encode("utf-8"))
    assert [i.op for i in parse_ops_file(str(path))] == ["add", "softmax"]
    path.write_bytes("\ufeffadd  # x\n".encode("utf-8"))
    assert dict(parse_dismiss(path)) == {"add": "x"}


@pytest.mark.parametrize("text", ["", "0,,1", ",", "0,", " ", "\u0660", "1.5", "0,0"])
def test_devices_with_an_empty_or_odd_element_are_refused(text):
    with pytest.raises(UsageError, match="--devices expects"):
        parse_devices(text)
    assert parse_devices(None) is None and parse_devices("1, 0") == [1, 0]


def test_ctrl_c_says_what_is_kept_and_how_to_go_on(tmp_path, capsys):
    def interrupted():
        raise KeyboardInterrupt
    (tmp_path / "batch.json").write_text("{}")      # the root as a batch leaves it at once
    with pytest.raises(SystemExit) as ended:
        interrupted_hint(tmp_path, "batch", interrupted)
    assert ended.value.code == 130
    assert capsys.readouterr().err.strip() == (
        f"zlh: interrupted; finished ops are kept under {tmp_path}: zlh batch --resume "
        f"{tmp_path} runs the others")


# ---- screen -------------------------------------------------------------------------------
SCREEN = [
    (lambda d: d["batch"]["options"].__setitem__("dtypes", ["float99"]), "--resume",
     "screen.json: options.dtypes: unknown dtype float99"),
    (lambda d: d["batch"]["ops"].append({"op": "nosuchop", "dtypes": None}), "--resume",
     "screen.json: unknown op 'nosuchop'"),
    (lambda d: d["B"].__setitem__("python", "/nonexistent/py"), "--resume",
     "screen.json: interpreter /nonexistent/py not found"),
    (lambda d: d.__setitem__("scrub", ["("]), "--rescore",
     "screen.json: field scrub: expected valid patterns"),
]


@pytest.mark.parametrize("edit,verb,fragment", SCREEN, ids=[f for _, _, f in SCREEN])
@pytest.mark.e2e
def test_screen_with_an_impossible_plan_is_one_line(roots, tmp_path, edit, verb, fragment):
    """Before: resumed ops FAILed one by one (or fell back silently); a stored scrub pattern
    that does not compile was ignored by --rescore."""
    root = copy(roots, tmp_path, "screen")
    for side in "AB":
        (root / side / "softmax" / ".complete").unlink()
    edit_json(root / "screen.json", edit)
    before = listing(root)
    one_line(run(["screen", verb, root]), 2, fragment)
    assert listing(root) == before


@pytest.mark.parametrize("table", [b"\xff\xfe garbage", b"op\tverdict\nadd\tX\textra\n"])
@pytest.mark.e2e
def test_rescore_writes_a_damaged_table_anew(roots, tmp_path, table):
    """Before: rescore refused because the table it was about to rewrite was damaged."""
    root = copy(roots, tmp_path, "screen")
    (root / "screen.tsv").write_bytes(table)
    result = run(["screen", "--rescore", root])
    assert result.exit_code == 0, result.output
    assert "previous verdicts shown as -" in result.output
    assert (root / "screen.tsv.before-rescore").read_bytes() == table
    assert "\nadd\t" in (root / "screen.tsv").read_text()


@pytest.mark.e2e
def test_rescore_says_which_runs_are_gone(roots, tmp_path):
    """Before: a lost side-A run turned the verdict into NO_ROWS without a word, and a lost
    side A wrote an empty table."""
    root = copy(roots, tmp_path, "screen")
    shutil.rmtree(next((root / "A" / "add").glob("add_*")))
    result = run(["screen", "--rescore", root])
    assert result.exit_code == 0, result.output
    assert f"{root}/A/add/.complete names run" in result.output
    assert "which is missing" in result.output
    table = (root / "screen.tsv").read_text()
    shutil.rmtree(root / "A")
    one_line(run(["screen", "--rescore", root]), 2, "no op has finished")
    assert (root / "screen.tsv").read_text() == table


@pytest.mark.e2e
def test_screen_resume_reruns_a_side_whose_run_is_gone(roots, tmp_path):
    root = copy(roots, tmp_path, "screen")
    shutil.rmtree(next((root / "B" / "add").glob("add_*")))
    result = run(["screen", "--resume", root])
    assert result.exit_code == 0, result.output
    assert f"{root}/B/add/.complete names run" in result.output
    assert "\nadd\t" in (root / "screen.tsv").read_text()


# ---- partition and campaign ---------------------------------------------------------------
def test_partition_refuses_a_row_without_op(tmp_path):
    path = tmp_path / "screen.tsv"
    path.write_text("op\telapsed_a\telapsed_b\tverdict\n\t1\t1\tIR_CHANGED\n")
    one_line(run(["partition", path, "--devices", "0"]), 2, "line 2 has no op name")


@pytest.fixture()
def campaign(roots, tmp_path):
    """A campaign root as a new campaign writes it (plan only; nothing run)."""
    plan = plan_campaign(tmp_path / "campaign", roots / "screen", [0], 1, [], ("NO_TRITON",))
    write_plan(plan)
    return plan.root


CAMPAIGN = [
    (lambda d: d.__setitem__("devices", "0"), "field devices: expected a non-empty list"),
    (lambda d: d.__setitem__("devices", [True]), "field devices: expected a non-empty list"),
    (lambda d: d.__setitem__("rounds", 1.5), "field rounds: expected an integer from 1 to 1000"),
    (lambda d: d.__setitem__("assignment", {"0": "add"}), "field assignment.0: expected a list"),
    (lambda d: d.__setitem__("assignment", {"1": ["add"]}), "keyed by the devices [0]"),
    (lambda d: d.__setitem__("assignment", {"0": ["nosuchop"]}),
     "weights_s: field nosuchop: expected a value"),
    (lambda d: d.__setitem__("scrub", "abc"), "field scrub: expected a list of strings"),
    (lambda d: d.__setitem__("scrub", ["("]), "field scrub: expected valid patterns"),
    (lambda d: d["options"].__setitem__("dtypes", ["float99"]), "unknown dtype float99"),
    (lambda d: d["options"].__setitem__("adapter", "nope"), "unknown adapter 'nope'"),
    (lambda d: d["A"].pop("python"), "A: field python: expected a value"),
    (lambda d: (d["assignment"]["0"].append("nosuchop"),
                d["weights_s"].__setitem__("nosuchop", 1.0)), "unknown op 'nosuchop'"),
]


@pytest.mark.parametrize("edit,fragment", CAMPAIGN, ids=[f for _, f in CAMPAIGN])
@pytest.mark.e2e
def test_campaign_resume_of_a_damaged_plan_is_one_line(campaign, edit, fragment):
    """Before: campaign.json was read by hand: '0' became device 0, a string of ops became
    letters, a device or op outside the plan was a KeyError traceback, rounds 1.5 became 1,
    and options or ops that cannot run failed on every card."""
    edit_json(campaign / "campaign.json", edit)
    one_line(run(["campaign", "--resume", campaign, "--dry-run"]), 2,
             f"{campaign}/campaign.json", fragment)


@pytest.mark.e2e
def test_campaign_resume_of_a_plan_with_nan_timeout(campaign):
    path = campaign / "campaign.json"
    path.write_text(path.read_text().replace('"timeout_s": 3600.0', '"timeout_s": NaN'))
    one_line(run(["campaign", "--resume", campaign, "--dry-run"]), 2,
             "field timeout_s: expected a finite number")


@pytest.mark.parametrize("args,fragment", [
    (["--extra-ops", "nosuchop"], "unknown op 'nosuchop'"),
    (["--only", "softmaks"], "--only softmaks: not an op of the screen"),
    (["--timeout", "nan"], "nan is not a finite number"),
    (["--root", ""], "an empty value")])
@pytest.mark.e2e
def test_new_campaign_with_a_bad_op_or_value_is_one_line(roots, args, fragment):
    """Before: an unknown extra op was planned and failed on its card; a typo in --only said
    there was no op; a NaN timeout was planned."""
    one_line(run(["campaign", "--screen", roots / "screen", "--devices", "0", "--verdict",
                  "NO_TRITON", "--dry-run", *args]), 2, fragment)


@pytest.mark.e2e
def test_campaign_root_that_is_a_file_is_one_line(roots, tmp_path):
    """Before: exit 1, 'Not a directory', after planning."""
    (tmp_path / "afile").write_text("x")
    one_line(run(["campaign", "--screen", roots / "screen", "--devices", "0", "--verdict",
                  "NO_TRITON", "--root", tmp_path / "afile"]), 2, "exists and is not a directory")
    one_line(run(["campaign", "--resume", tmp_path / "afile"]), 2,
             "is a file, not a campaign root")


# ---- report and show pointed at corpus roots ---------------------------------------------
@pytest.mark.parametrize("verb,where,fragment", [
    ("report", "batch/add", "is the folder of one op of a batch, not a root"),
    ("show", "batch", "is a batch root, not a run directory"),
    ("show", "screen", "is a screen root, not a run directory"),
    ("show", "batch/add", "is the folder of one op of a batch, not a run directory (newest: "
                          "zlh show")])
@pytest.mark.e2e
def test_report_and_show_on_a_corpus_root_say_where_to_look(roots, verb, where, fragment):
    """Before: `zlh report` on a batch root said to run `zlh ab` first; `zlh show` only said
    'not a run directory'."""
    one_line(run([verb, roots / where]), 2, fragment)


# ---- interpreters: one wording for the corpus plan check and zlh ab's preflight --------------
def test_both_interpreter_checks_word_the_same_failure_the_same(tmp_path):
    from harness.ab.preflight import check_interpreter
    from harness.corpus.check import check_executable
    plain = tmp_path / "plain"
    plain.write_text("not a program\n")
    for python, words in ((str(tmp_path / "missing"), "not found"),
                          (str(plain), "is not an executable file"),
                          (str(tmp_path), "is not an executable file")):
        messages = []
        for check in (check_executable, lambda p, flag: check_interpreter(p, flag)):
            with pytest.raises(UsageError) as excinfo:
                check(python, "--python-b")
            messages.append(excinfo.value.message)
        assert messages[0] == messages[1] == f"--python-b: interpreter {python} {words}"
