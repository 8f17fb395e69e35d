"""Per-kernel metadata in `ttgir/index.tsv`: shared memory, warps/stages/CTAs and the
TTGIR's convert_layout count from the compile listener; registers and spills from the
loaded binary (known only where a driver loaded it: empty on this CPU host). The new
columns never move the fingerprint, and an index without them still reads."""
from __future__ import annotations

import pytest

import ir_kernels as K
from harness.compile.ir import triton_hooks
from harness.compile.ir.capture import IRCapture
from harness.compile.ir.fingerprint import (convert_layout_count, convert_layout_total,
                                            fingerprint, read_index)

META = ("n_regs", "n_spills", "shared", "num_warps", "num_stages", "num_ctas",
        "convert_layout")


@pytest.fixture(scope="module")
def triton_cache(tmp_path_factory):
    with K.private_cache(tmp_path_factory.mktemp("triton_cache")) as cache:
        yield cache


def _capture(out, build):
    cap = IRCapture(out)
    assert cap.install() is True
    try:
        cap.begin_case("64x64", "float32")
        kernels = build()
        cap.end_case()
        cap.dump()
    finally:
        cap.uninstall()
    return kernels


def test_index_row_carries_the_compiled_kernels_metadata(tmp_path, triton_cache):
    def build():
        trans = K.compile_trans()
        add = K.compile_add(64, num_warps=8, num_stages=2)
        K.measured(trans)
        K.measured(add)
        return trans, add
    trans, add = _capture(tmp_path / "run" / "ttgir", build)
    header = (tmp_path / "run" / "ttgir" / "index.tsv").read_text().splitlines()[0].split("\t")
    assert set(META) <= set(header)
    rows = {r["kernel"]: r for r in read_index(tmp_path / "run")}
    for kernel, warps, stages in ((trans, "4", "3"), (add, "8", "2")):
        row = rows[kernel.name]
        text = (tmp_path / "run" / "ttgir" / row["file"]).read_text()
        assert row["shared"] == str(kernel.metadata.shared)
        assert (row["num_warps"], row["num_stages"], row["num_ctas"]) == (warps, stages, "1")
        assert row["convert_layout"] == str(convert_layout_count(text))
        # Never loaded by a driver here: unknown, so empty (not 0, not "-").
        assert (row["n_regs"], row["n_spills"]) == ("", "")
    # The transpose goes through shared memory and a layout conversion; the add does neither.
    assert int(rows[trans.name]["shared"]) > 0 and int(rows[trans.name]["convert_layout"]) >= 1
    assert rows[add.name]["convert_layout"] == "0"


class _LoadedKernel:
    """What CompiledKernel._init_handles looks like to the load hook: the driver has set
    n_regs/n_spills on `self` before the hook runs."""

    def __init__(self, compiled, regs, spills):
        self.hash, self.name = compiled.hash, compiled.name
        self.metadata_group = compiled.metadata_group
        self.n_regs, self.n_spills = regs, spills

    def _init_handles(self):
        from triton import knobs
        knobs.runtime.kernel_load_end_hook(None, 0xBEEF, self.name, self.metadata_group,
                                           self.hash)


def test_registers_and_spills_come_from_the_loaded_kernel(tmp_path, triton_cache):
    def build():
        fill = K.compile_fill(256)
        _LoadedKernel(fill, 96, 3)._init_handles()
        K.measured(fill)
        return fill
    fill = _capture(tmp_path / "run" / "ttgir", build)
    [row] = [r for r in read_index(tmp_path / "run") if r["hash"] == fill.hash]
    assert (row["n_regs"], row["n_spills"]) == ("96", "3")
    assert triton_hooks.observer.variants[fill.hash].n_regs == 96


def test_new_columns_leave_fingerprint_and_old_indexes_alone(tmp_path, triton_cache):
    def build():
        add = K.compile_add(32)
        K.measured(add)
        return add
    _capture(tmp_path / "run" / "ttgir", build)
    run = tmp_path / "run"
    before = fingerprint(run)
    index = run / "ttgir" / "index.tsv"
    lines = [line.split("\t") for line in index.read_text().splitlines()]
    drop = {lines[0].index(c) for c in ("n_regs", "n_spills", "shared")}
    index.write_text("\n".join("\t".join(c for i, c in enumerate(cells) if i not in drop)
                               for cells in lines) + "\n")
    # An index written before these columns existed: same fingerprint, same totals.
    assert fingerprint(run) == before
    assert "shared" not in read_index(run)[0]
    assert convert_layout_total(run) == 0
