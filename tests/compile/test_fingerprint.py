"""IR fingerprint: equal under scrub-only differences, different under real ones, and
"no IR" (never a hash) for a tree without TTGIR."""
from __future__ import annotations

import re
import sys
from pathlib import Path

import pytest
from triton.backends.compiler import GPUTarget

import ir_kernels as K  # noqa: E402
from harness.compile.ir.fingerprint import (DEFAULT_SCRUB, NO_IR, convert_layout_count,  # noqa: E402
                                 convert_layout_total, fingerprint, fingerprint_line,
                                 ttgir_files)

MODULE = ('module attributes {"ttg.num-ctas" = 1 : i32, "ttg.num-warps" = 4 : i32, '
          'ttg.target = "cuda:90", "ttg.threads-per-warp" = 32 : i32} {\n')
BODY = ('  tt.func public @k(%x: !tt.ptr<f32>) {\n'
        '    %0 = ttg.convert_layout %1 : tensor<64xf32, #a> -> tensor<64xf32, #b>\n'
        '    tt.return\n  }\n}\n')


def with_rlc(text: str, knobs: dict[str, int]) -> str:
    """What FlagTree's RLC switch does: stamp each knob as a module attribute (MLIR keeps
    attributes sorted, so they land between ttg.num-warps and ttg.target)."""
    stamped = "".join(f'"ttg.rlc-{k}" = {v} : i32, ' for k, v in knobs.items())
    return text.replace("ttg.target", stamped + "ttg.target", 1)


def write_tree(root: Path, files: dict[str, str]) -> Path:
    for rel, text in files.items():
        path = root / "ttgir" / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    return root


@pytest.fixture(scope="module")
def real_ttgir(tmp_path_factory):
    """TTGIR of a real kernel compiled for sm90."""
    with K.private_cache(tmp_path_factory.mktemp("triton_cache")):
        return K.compile_trans().asm["ttgir"]


def test_scrub_only_differences_fingerprint_equal(tmp_path, real_ttgir):
    assert 'ttg.target = "cuda:90"' in real_ttgir
    a = write_tree(tmp_path / "a", {"16x16/trans_kernel/w4s3.ttgir": real_ttgir,
                                    "16x16/add_kernel/w4s3.ttgir": MODULE + BODY})
    b = write_tree(tmp_path / "b", {
        "16x16/trans_kernel/w4s3.ttgir": with_rlc(real_ttgir, {"enhance": 1, "mask": 13}),
        "16x16/add_kernel/w4s3.ttgir": with_rlc(MODULE + BODY, {"policy": -1})})
    assert '"ttg.rlc-mask" = 13 : i32' in (b / "ttgir/16x16/trans_kernel/w4s3.ttgir").read_text()
    assert fingerprint(a) == fingerprint(b) is not None
    # Without the scrub the stamp alone would read as changed code.
    assert fingerprint(a, default_scrub=False) != fingerprint(b, default_scrub=False)


def test_stamp_as_last_module_attribute_is_scrubbed_too(tmp_path):
    plain = 'module attributes {"ttg.num-warps" = 4 : i32} {\n}\n'
    stamped = 'module attributes {"ttg.num-warps" = 4 : i32, "ttg.rlc-x" = 2 : i32} {\n}\n'
    a = write_tree(tmp_path / "a", {"s/k/w4s3.ttgir": plain})
    b = write_tree(tmp_path / "b", {"s/k/w4s3.ttgir": stamped})
    assert fingerprint(a) == fingerprint(b)


def test_real_differences_change_the_fingerprint(tmp_path, real_ttgir):
    base = write_tree(tmp_path / "base", {"s/k/w4s3.ttgir": real_ttgir})
    code = write_tree(tmp_path / "code", {"s/k/w4s3.ttgir": real_ttgir.replace(
        "warpsPerCTA = [", "warpsPerCTA = [2, ", 1)})
    renamed = write_tree(tmp_path / "renamed", {"s/k/w8s3.ttgir": real_ttgir})
    extra = write_tree(tmp_path / "extra", {"s/k/w4s3.ttgir": real_ttgir,
                                            "s/k2/w4s3.ttgir": MODULE + BODY})
    values = {fingerprint(p) for p in (base, code, renamed, extra)}
    assert len(values) == 4 and None not in values
    # A non-default scrub pattern makes a chosen difference disappear.
    assert fingerprint(code, scrub=[r"warpsPerCTA = \[[0-9, ]*\]"]) == \
        fingerprint(base, scrub=[r"warpsPerCTA = \[[0-9, ]*\]"])


def test_only_ttgir_files_count(tmp_path):
    run = write_tree(tmp_path / "run", {"s/k/w4s3.ttgir": MODULE + BODY})
    before = fingerprint(run)
    (run / "ttgir" / "index.tsv").write_text("shape\tkernel\n")
    (run / "ttgir" / "naming.md").write_text("# legend\n")
    (run / "ttgir" / "s" / "k" / "notes.txt").write_text("x")
    assert fingerprint(run) == before
    assert fingerprint(run / "ttgir") == before          # run dir or its ttgir dir


def test_no_ttgir_means_no_ir_never_a_hash(tmp_path):
    empty = tmp_path / "empty"
    (empty / "ttgir").mkdir(parents=True)
    (empty / "ttgir" / "index.tsv").write_text("shape\tkernel\tfile\n")
    (empty / "ttgir" / "naming.md").write_text("# legend\n")
    assert fingerprint(empty) is None
    assert fingerprint(tmp_path / "missing") is None
    assert fingerprint_line(empty) == (NO_IR, 1) == ("no IR", 1)
    assert convert_layout_total(empty) is None
    line, code = fingerprint_line(write_tree(tmp_path / "one", {"s/k/a.ttgir": BODY}))
    assert code == 0 and len(line) == 64 and int(line, 16) >= 0


def test_paths_sorted_bytewise(tmp_path):
    run = write_tree(tmp_path / "run", {"b/k/x.ttgir": BODY, "B/k/x.ttgir": BODY,
                                        "a/k/x.ttgir": BODY, "a/K/x.ttgir": BODY})
    assert [rel for rel, _ in ttgir_files(run)] == ["B/k/x.ttgir", "a/K/x.ttgir",
                                                    "a/k/x.ttgir", "b/k/x.ttgir"]


def test_bad_scrub_pattern_is_a_clear_error(tmp_path):
    run = write_tree(tmp_path / "run", {"s/k/a.ttgir": BODY})
    with pytest.raises(ValueError, match="bad scrub pattern"):
        fingerprint(run, scrub=["("])


def test_default_scrub_is_the_rlc_attribute_and_source_directories():
    text = with_rlc(MODULE, {"enhance": 1, "mask": -13})
    located = ('#loc = loc("/home/u/.flaggems/code_cache/pw_add.py":12:0)\n'
               '#loc7 = loc("x/y"("/tmp/r1/gen.py":3:4))\n')
    for pattern in DEFAULT_SCRUB:
        text = re.sub(pattern, "", text)
        located = re.sub(pattern, "", located)
    assert text == MODULE
    # file locations lose their directory, nested ones too; a name location keeps its text
    assert located == '#loc = loc("pw_add.py":12:0)\n#loc7 = loc("x/y"("gen.py":3:4))\n'


def test_same_code_from_another_directory_fingerprints_equal(tmp_path, real_ttgir):
    """Generated kernels land in a per-run cache directory; the code is still the same. A
    different file name or line is still a difference."""
    source = re.search(r'loc\("([^"]*)/ir_kernels.py":', real_ttgir).group(1)
    moved = real_ttgir.replace(source + "/", "/tmp/run-2/code_cache/")
    assert moved != real_ttgir
    a = write_tree(tmp_path / "a", {"s/k/w4s3.ttgir": real_ttgir})
    b = write_tree(tmp_path / "b", {"s/k/w4s3.ttgir": moved})
    assert fingerprint(a) == fingerprint(b)
    assert fingerprint(a, default_scrub=False) != fingerprint(b, default_scrub=False)
    renamed = write_tree(tmp_path / "c", {"s/k/w4s3.ttgir": real_ttgir.replace(
        "/ir_kernels.py\"", "/other.py\"")})
    assert fingerprint(renamed) != fingerprint(a)


def test_a_digest_in_a_generated_file_name_is_not_code(tmp_path, real_ttgir):
    """A library that names a generated kernel's file after a hash (FlagGems' pointwise
    kernels: the scalar function's Triton cache key, which moved with the switch under test
    while the code stayed byte-identical) fingerprints equal; a digest elsewhere, or a
    shorter run of hex, is still compared."""
    source = re.search(r'loc\("([^"]*)/ir_kernels.py":', real_ttgir).group(1)

    def named(digest: str) -> str:
        return real_ttgir.replace(source + "/ir_kernels.py\"",
                                  f"/root/.flaggems/code_cache/pointwise_dynamic_{digest}"
                                  f"_copysign_func_kernel_rank_1_bptr_t512.py\"")
    one = write_tree(tmp_path / "a", {"s/k/w4s3.ttgir": named("da5af12e273da394de02" * 3)})
    two = write_tree(tmp_path / "b", {"s/k/w4s3.ttgir": named("fa32b78813690deba216" * 3)})
    assert fingerprint(one) == fingerprint(two)
    short = write_tree(tmp_path / "c", {"s/k/w4s3.ttgir": named("fa32b788")})
    assert fingerprint(short) != fingerprint(one)
    code = write_tree(tmp_path / "d", {"s/k/w4s3.ttgir": named("fa32b78813690deba216" * 3)
                                       .replace("tt.return", "tt.return // 0123456789abcdef0123", 1)})
    assert fingerprint(code) != fingerprint(two)


def test_convert_layout_counts(tmp_path, real_ttgir):
    assert convert_layout_count(BODY * 3) == 3
    assert convert_layout_count("ttg.convert_layoutx ttg.convert_layout") == 1
    assert convert_layout_count(real_ttgir) >= 1
    # Index: measured variants only, each once even when dumped under two shapes.
    run = write_tree(tmp_path / "run", {"s1/k/a.ttgir": BODY * 2, "s2/k/a.ttgir": BODY * 2,
                                        "s1/k/b.ttgir": BODY})
    (run / "ttgir" / "index.tsv").write_text(
        "shape\tkernel\trole\tfile\tstatus\tconvert_layout\thash\n"
        "s1\tk\tmeasured\ts1/k/a.ttgir\tdumped\t2\tH1\n"
        "s2\tk\tmeasured\ts2/k/a.ttgir\tdumped\t2\tH1\n"
        "s1\tk\tmeasured\ts1/k/b.ttgir\tdumped\t1\tH2\n"
        "s1\tk\tsetup\t_setup/s1/k/c.ttgir\tdumped\t7\tH4\n"
        "s1\tk\tsweep loser\t-\tnot dumped\t9\tH3\n")
    assert convert_layout_total(run) == 3
    (run / "ttgir" / "index.tsv").unlink()            # no index: every dumped file
    assert convert_layout_total(run) == 5


@pytest.mark.parametrize("order", [(0, 1, 2, 3), (1, 0, 2, 3), (3, 2, 1, 0)])
def test_three_stamps_closing_the_dictionary_scrub_whatever_the_pattern_order(tmp_path, order):
    """Two builds differing only in their stamps: with several stamps at the end of an
    attribute dictionary, one pass of the patterns left the last but one behind."""
    plain = 'module attributes {"ttg.num-warps" = 4 : i32} {\n}\n'
    patterns = [DEFAULT_SCRUB[i] for i in order]
    texts = []
    for values in ((1, 2, 3), (7, 8, 9)):
        stamps = ", ".join(f'"ttg.rlc-k{i}" = {v} : i32' for i, v in enumerate(values))
        texts.append(f'module attributes {{"ttg.num-warps" = 4 : i32, {stamps}}} {{\n}}\n')
    alone = 'module attributes {"ttg.rlc-only" = 5 : i32} {\n}\n'
    from harness.compile.ir.fingerprint import compile_scrub, scrub_text
    compiled = compile_scrub(patterns, default=False)
    assert scrub_text(texts[0], compiled) == scrub_text(texts[1], compiled) == plain
    assert scrub_text(alone, compiled) == 'module attributes {} {\n}\n'
    trees = [write_tree(tmp_path / f"r{i}", {"s/k/w4s3.ttgir": t}) for i, t in enumerate(texts)]
    assert fingerprint(trees[0]) == fingerprint(trees[1]) is not None


def test_setup_kernels_have_their_own_fingerprint(tmp_path):
    """A change in set-up kernels only (e.g. a fill the harness's machinery launched) leaves
    the op's fingerprint alone and shows in the set-up fingerprint."""
    a = write_tree(tmp_path / "a", {"s/k/w4s3.ttgir": MODULE + BODY,
                                    "_setup/s/fill/w4s3.ttgir": MODULE})
    b = write_tree(tmp_path / "b", {"s/k/w4s3.ttgir": MODULE + BODY,
                                    "_setup/s/fill/w4s3.ttgir": MODULE + "// changed\n"})
    assert fingerprint(a) == fingerprint(b) is not None
    assert fingerprint(a, part="setup") != fingerprint(b, part="setup")
    only_setup = write_tree(tmp_path / "c", {"_setup/s/fill/w4s3.ttgir": MODULE})
    assert fingerprint(only_setup) is None and fingerprint(only_setup, part="setup")


@pytest.fixture(scope="module")
def real_asm(tmp_path_factory):
    """PTX and LLVM IR of a real kernel compiled for sm90, AMDGCN for gfx942: each names its
    source file amid the text (.file directives, comments, DWARF data; LLVM IR's DIFile)."""
    with K.private_cache(tmp_path_factory.mktemp("triton_cache")):
        asm = K.compile_trans().asm
        amd = K.compile_trans(target=GPUTarget("hip", "gfx942", 64)).asm
        return {"ptx": asm["ptx"], "llir": asm["llir"], "amdgcn": amd["amdgcn"]}


RETURN = {"ptx": "ret;", "llir": "ret void", "amdgcn": "s_endpgm"}


@pytest.mark.parametrize("stage", ["ptx", "llir", "amdgcn"])
def test_a_generated_files_directory_and_digest_are_not_code_at_any_stage(tmp_path, real_asm,
                                                                          stage):
    """Where a stage names its source file — a .file directive, the comments after `.loc`,
    DWARF data, LLVM IR's DIFile — the file's directory and a digest in its name go (a
    library's per-run cache, a cache key in a generated kernel's name); the code stays."""
    text = real_asm[stage]
    source = str(Path(K.__file__).resolve().parent)
    assert source in text and "ir_kernels.py" in text        # (the path, its form varies)

    def named(digest: str, where: str = "/root/.flaggems/code_cache") -> str:
        name = f"pointwise_dynamic_{digest}_copysign_kernel.py"
        return text.replace(source, where).replace("ir_kernels.py", name)

    def tree(label: str, body: str) -> Path:
        return write_tree(tmp_path / label, {f"s/k/w4s3.{stage}": body})
    one = tree("a", named("da5af12e273da394" * 4))
    other = named("fa32b78813690deb" * 4, "/tmp/run-2/code_cache")
    if stage == "ptx":                   # the DWARF bytes of another path
        other = other.replace(".b8 116", ".b8 117")
    two = tree("b", other)
    assert fingerprint(one, stage=stage) == fingerprint(two, stage=stage) is not None
    assert fingerprint(one, stage=stage, default_scrub=False) != \
        fingerprint(two, stage=stage, default_scrub=False)
    assert fingerprint(tree("c", named("fa32b788")), stage=stage) != fingerprint(one, stage=stage)
    end = RETURN[stage]
    changed = named("da5af12e273da394" * 4).replace(end, f"{end}\n\t{end}", 1)
    assert fingerprint(tree("d", changed), stage=stage) != fingerprint(one, stage=stage)


@pytest.mark.parametrize("stage", ["ttgir", "ptx", "llir", "amdgcn"])
def test_a_process_id_in_a_generated_file_name_is_not_code(tmp_path, real_ttgir, real_asm,
                                                          stage):
    """FlagGems names some generated kernels' files after the process that wrote them
    (`index_add_rank_2_pid_548.py`): the two sides of a screen run in two processes, and
    identical code read IR_CHANGED (index_add, index_copy on an H200). The id goes; the rest
    of the name (the rank: another kernel) is still compared."""
    text = real_ttgir if stage == "ttgir" else real_asm[stage]
    source = str(Path(K.__file__).resolve().parent)

    def named(name: str) -> str:
        return text.replace(source, "/root/.flaggems/code_cache").replace("ir_kernels.py", name)

    def tree(label: str, body: str) -> Path:
        return write_tree(tmp_path / label, {f"s/k/w4s3.{stage}": body})
    one = tree("a", named("index_add_rank_2_pid_548.py"))
    assert fingerprint(one, stage=stage) == \
        fingerprint(tree("b", named("index_add_rank_2_pid_716.py")), stage=stage) is not None
    assert fingerprint(tree("c", named("scatter_add_pid-7.py")), stage=stage) == \
        fingerprint(tree("c2", named("scatter_add_pid-31337.py")), stage=stage)
    assert fingerprint(one, stage=stage) != \
        fingerprint(tree("d", named("index_add_rank_3_pid_548.py")), stage=stage)
    assert fingerprint(one, stage=stage, default_scrub=False) != \
        fingerprint(tree("e", named("index_add_rank_2_pid_716.py")), stage=stage,
                    default_scrub=False)
