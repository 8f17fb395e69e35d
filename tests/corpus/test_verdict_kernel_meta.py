"""An IR_CHANGED verdict names the measured kernels whose registers, spills, shared memory,
warps, stages or CTAs changed, from each side's `ttgir/index.tsv`; an index without those
columns (an older root) adds nothing."""
from __future__ import annotations

from harness.compile.ir.dump import INDEX_COLUMNS
from harness.compile.ir.kernel_meta import changes, changes_note, measured_kernels
from harness.corpus.verdict import IR_CHANGED, decide
from test_screen import TTGIR, outcome, run_dir


def _index(run, rows, columns=INDEX_COLUMNS):
    lines = ["\t".join(columns)]
    lines += ["\t".join(str(r.get(c, "-")) for c in columns) for r in rows]
    (run / "ttgir" / "index.tsv").write_text("\n".join(lines) + "\n")


def _row(kernel, hash, regs="", spills="", shared="", warps=4, role="measured"):
    return {"shape": "64", "kernel": kernel, "role": role, "hash": hash, "n_regs": regs,
            "n_spills": spills, "shared": shared, "num_warps": warps, "num_stages": 3,
            "num_ctas": 1, "convert_layout": 0}


def test_ir_changed_note_names_the_kernel_that_moved(tmp_path):
    a = run_dir(tmp_path / "A", "op", ttgir=TTGIR)
    b = run_dir(tmp_path / "B", "op", {"64": 0.9, "128": 1.8},
                ttgir=TTGIR.replace("tt.return", "ttg.convert_layout tt.return"))
    _index(a, [_row("k", "a1", 128, 0, 1024), _row("same", "a2", 40, 0, 0)])
    _index(b, [_row("k", "b1", 96, 0, 1024, warps=8), _row("same", "b2", 40, 0, 0)])
    v = decide("op", outcome(a), outcome(b))
    assert v.verdict == IR_CHANGED
    assert v.note == "kernels 1->1, convert_layout 0->0; k: regs 128->96, warps 4->8"


def test_unknown_or_ambiguous_metadata_is_never_a_change(tmp_path):
    a, b = tmp_path / "a", tmp_path / "b"
    for run in (a, b):
        (run / "ttgir").mkdir(parents=True)
    # A: registers unknown (CPU, another backend); two variants of `multi` on each side.
    _index(a, [_row("k", "a1", "", "", 0), _row("multi", "m1", 32), _row("multi", "m2", 64),
               _row("setup_k", "s1", 10, role="setup")])
    _index(b, [_row("k", "b1", 96, 0, 0), _row("multi", "n1", 40), _row("multi", "n2", 80),
               _row("setup_k", "s2", 20, role="setup")])
    assert set(measured_kernels(a)) == {"k"}
    assert changes(a, b) == [] and changes_note(a, b) == ""
    # An index from before these columns: nothing known, nothing claimed.
    _index(a, [_row("k", "a1")], columns=("shape", "kernel", "role", "num_warps", "hash"))
    assert measured_kernels(a)["k"]["n_regs"] == "" and changes(a, b) == []


def test_note_names_two_kernels_at_most(tmp_path):
    a, b = tmp_path / "a", tmp_path / "b"
    for run in (a, b):
        (run / "ttgir").mkdir(parents=True)
    _index(a, [_row(k, k + "a", 32) for k in ("k1", "k2", "k3")])
    _index(b, [_row(k, k + "b", 64) for k in ("k1", "k2", "k3")])
    assert changes_note(a, b) == ("; k1: regs 32->64; k2: regs 32->64; "
                                  "1 more kernel(s) changed")
