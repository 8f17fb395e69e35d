"""What moves a run? A device experiment: one kernel timed again and again in one process, each
time with one piece of a run's state built anew, against the same kernel timed in fresh
processes (rounds "that cost the measurement": a round's median is known to a few hundredths
of a percent from its samples, yet runs differ by 0.5 %, layer_norm 20×6×65536 by 3.5 %:
tests/device/README.md, twenty-third set).

    python3 tests/device/run_state.py                 # on a GPU; FlagGems' kernels if importable
    python3 tests/device/run_state.py --show FILE.json   # (CPU too) the table again

Per case (CASES, "op:dims", default below) the process builds the inputs once (X0), takes the
calls per sample K from a first timing (about SAMPLE_MS of work) and captures G0, a CUDA graph
of K calls on X0. Then REPS repetitions; in each, every arm once, in rotated order, each arm
one median of SAMPLES graph replays (ms per call):

  again    G0 timed again: nothing rebuilt (what the card's drift alone moves);
  graph    a new graph on X0;
  calls    a new graph on X0 of a random number of calls in [K/2, 2K];
  inputs   new inputs with X0's values behind a random-size allocation on an emptied
           allocator cache (as zlh's placements), a new graph on them;
  reload   Triton's loaded kernels dropped (the next call loads its binary anew from the
           compile cache), a new graph on X0;
  hoard    as `inputs`, but nothing is ever freed (the spacer, the inputs and the graph with
           its pool kept to the end): each repetition's tensors land in memory no earlier
           one used, as a new process's do, where `inputs` may be handed back pages it freed;
  moved    as `reload`, but behind a random-size allocation made before the binary loads
           again (freed after its window): the kernel's own device memory elsewhere, its
           inputs where they were. Against `inputs`: does a run's level follow its code or
           its data?

Then FRESH processes each build the same inputs and graph and time it REPS_CHILD times; with
CHILD_SPACERS (e.g. "none first loaded") FRESH processes of each variant, interleaved:
`none` as said, `first` behind a random-size allocation made before the library loads any
kernel (zlh's round spacer: code and data move), `loaded` behind one made after each case's
first call, its inputs built again (the data moves, the loaded code does not), `twin` two
processes in a row as `first` behind spacers of one seed (the table's twins lines: do two
processes that allocate alike, one after the other, land their data alike and so agree? —
twins that differ by much less than one process spreads do), `twin-spare` the same with a
third process started between the two, holding the library and a device context until the
second ends (as a zlh twins spare, whose `import flag_gems` makes one: does a context made
between twins part them?). REPS=0 skips
the in-process arms (the first timing still sizes K).
Per case and arm: the sd of 100·ln(median) over the repetitions (`fresh`: over the
processes' first medians; `fresh_within`: the sd inside a process, pooled), and the medians
themselves. An arm whose sd reaches the fresh processes' names a state that moves a run.
Output: the table on stdout and in $OUT/run_state.txt, the numbers in $OUT/run_state.json.
"""
from __future__ import annotations

import contextlib
import gc
import json
import math
import os
import random
import subprocess
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[2]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from harness.run.placement import shift_bytes  # noqa: E402 - zlh's spacer, drawn alike

ARMS = ("again", "graph", "calls", "inputs", "reload", "hoard", "moved")
# SCRAMBLE=1: the arms instead `again` (G0, nothing ahead of a sample), `steady` (G0, each
# sample behind the same fill kernel) and `scrambled` (G0, each sample behind a fill kernel of a
# random number of blocks): whether what ran just before a sample sets its level, and whether
# drawing that anew per sample makes the windows agree. Each window follows a disturbance (a
# random number of random-width kernels), as a new run follows other work.
SCRAMBLE_ARMS = ("again", "steady", "scrambled")
TWIN = "twin"   # CHILD_SPACERS: two processes in a row behind spacers of one seed
TWIN_SPARE = "twin-spare"   # … with a third process started between them, holding a device
                            # context and the library until the second ends (a zlh spare)
TWINS = (TWIN, TWIN_SPARE)
CASES = "layer_norm:20x6x65536 mm:4096x4096 softmax:64x512x512 mm:2048x2048 layer_norm:2048x1024"


def env(name: str, default: str) -> str:
    return os.environ.get(name) or default


# ---- analysis (pure) --------------------------------------------------------------------------
def log_sd(values) -> float | None:
    """sd (ddof 1) of 100·ln(v): the spread in % of a list of medians."""
    v = [x for x in values if x and x > 0]
    return float(np.std(100 * np.log(v), ddof=1)) if len(v) >= 2 else None


def pooled_sd(groups) -> float | None:
    """sd pooled over groups (each a list of medians): the spread inside a group."""
    ss, df = 0.0, 0
    for g in groups:
        v = 100 * np.log([x for x in g if x and x > 0])
        if len(v) >= 2:
            ss += float(((v - v.mean()) ** 2).sum())
            df += len(v) - 1
    return math.sqrt(ss / df) if df else None


def twin_spread(runs) -> dict:
    """Twins (consecutive processes behind spacers of one seed), on one scale: `process_sd`
    the spread of one process's 100·ln(median) over every twin, `between` the root mean
    square of 100·ln(first / second) over √2 — about `process_sd` where twins share nothing,
    near 0 where they land their data alike (an offset between first and second counts, as it
    would in an A/B's rounds) —, `offset` the mean of 100·ln(first / second), `r` the two
    twins' correlation over the pairs, `pairs` how many. {} without two whole pairs. `runs`:
    the processes' median lists in order, twins adjacent (a failed process's list empty)."""
    firsts = [r[0] if r else None for r in runs]
    pairs = [(a, b) for a, b in zip(firsts[0::2], firsts[1::2]) if a and b]
    if len(pairs) < 2:
        return {}
    logs = 100 * np.log(np.asarray(pairs, dtype=float))
    d = logs[:, 0] - logs[:, 1]
    same = min(np.std(logs[:, 0]), np.std(logs[:, 1])) == 0
    return {"pairs": len(pairs), "process_sd": float(np.std(logs.ravel(), ddof=1)),
            "between": float(np.sqrt(np.mean(d * d) / 2)), "offset": float(np.mean(d)),
            "r": None if same else float(np.corrcoef(logs[:, 0], logs[:, 1])[0, 1])}


def summary(doc: dict) -> list[str]:
    first = next(iter(doc["cases"].values()), {"arms": {}})
    names = SCRAMBLE_ARMS if "scrambled" in first["arms"] else ARMS
    variants = sorted({k for c in doc["cases"].values() for k in c
                       if k.startswith("fresh_") and k not in ("fresh_again", "fresh_within")})
    arms = list(names) + ["fresh", "fresh_within", "fresh_again"] + variants
    lines = [f"{'case':<24} {'us':>8} {'K':>4} " + " ".join(f"{a:>12}" for a in arms)]
    notes: list[str] = []
    for case, c in doc["cases"].items():
        sds = {a: log_sd(c["arms"].get(a, [])) for a in names}
        fresh = c.get("fresh", [])
        sds["fresh"] = log_sd([p[0] for p in fresh if p])
        sds["fresh_within"] = pooled_sd(fresh)
        sds["fresh_again"] = log_sd([p[0] for p in c.get("fresh_again", []) if p])
        for v in variants:
            sds[v] = log_sd([p[0] for p in c.get(v, []) if p])
        for kind in TWINS:
            twins = twin_spread(c.get(f"fresh_{kind}", []))
            if twins:
                notes.append(f"  {case} {kind}s: {twins['pairs']} pairs; one process spreads "
                             f"{twins['process_sd']:.3f} %, twins differ by "
                             f"{twins['between']:.3f} % (rms/√2), second against first "
                             f"{-twins['offset']:+.3f} %, r "
                             + ("-" if twins["r"] is None else f"{twins['r']:+.2f}"))
        cells = " ".join(("-" if sds[a] is None else f"{sds[a]:.3f}").rjust(12) for a in arms)
        lines.append(f"{case:<24} {c['latency_ms'] * 1e3:>8.1f} {c['calls']:>4} {cells}")
    lines.append("cells: sd of 100·ln(median) over repetitions (fresh: over processes), in %")
    lines += notes
    for case, c in doc["cases"].items():
        for a in list(names) + ["fresh", "fresh_again"] + variants:
            vals = (c["arms"].get(a) if a in names
                    else [p[0] for p in c.get(a, []) if p])
            if vals:
                lines.append(f"  {case} {a}: " + " ".join(f"{v * 1e3:.2f}" for v in vals))
    return lines


# ---- the device -------------------------------------------------------------------------------
def build(torch, spec: str, seed: int = 0):
    """(function of no arguments, its inputs) for "op:AxBx…"."""
    name, dims = spec.split(":")
    shape = tuple(int(d) for d in dims.split("x"))
    gen = torch.Generator(device="cuda").manual_seed(seed)

    def randn(*s):
        return torch.randn(s, device="cuda", dtype=torch.bfloat16, generator=gen)
    if name == "mm":
        x, y = randn(*shape), randn(shape[1], shape[0])
        return (lambda a=x, b=y: torch.mm(a, b)), [x, y]
    if name == "layer_norm":
        x, w, b = randn(*shape), randn(*shape[1:]), randn(*shape[1:])
        return (lambda a=x, c=w, d=b: torch.layer_norm(a, shape[1:], c, d)), [x, w, b]
    if name == "softmax":
        x = randn(*shape)
        return (lambda a=x: torch.softmax(a, dim=-1)), [x]
    if name == "gelu":
        x = randn(*shape)
        return (lambda a=x: torch.nn.functional.gelu(a)), [x]
    if name == "fused_add_rms_norm":           # FlagGems' own (no torch op): updates x, r
        x, r, w = randn(*shape), randn(*shape), randn(shape[-1])
        return rebind(torch, spec, [x, r, w]), [x, r, w]
    raise SystemExit(f"run_state: unknown op {name!r} (mm, layer_norm, softmax, gelu, "
                     "fused_add_rms_norm)")


def rebind(torch, spec: str, tensors):
    """The case's function on other tensors (same values), as build() makes it."""
    name, dims = spec.split(":")
    shape = tuple(int(d) for d in dims.split("x"))
    if name == "mm":
        return lambda: torch.mm(tensors[0], tensors[1])
    if name == "layer_norm":
        return lambda: torch.layer_norm(tensors[0], shape[1:], tensors[1], tensors[2])
    if name == "gelu":
        return lambda: torch.nn.functional.gelu(tensors[0])
    if name == "fused_add_rms_norm":
        import flag_gems
        return lambda: flag_gems.fused_add_rms_norm(tensors[0], tensors[1], [shape[-1]],
                                                    tensors[2], 1e-5)
    return lambda: torch.softmax(tensors[0], dim=-1)


def library():
    if env("LIB", "gems") == "gems":
        try:
            import flag_gems
            return flag_gems.use_gems
        except Exception as exc:  # noqa: BLE001 - said, then torch's kernels
            print(f"flag_gems not importable ({type(exc).__name__}: {exc}); torch's kernels")
    return contextlib.nullcontext


def capture(torch, fn, calls: int, use):
    with use():
        fn()
        torch.cuda.synchronize()
        graph = torch.cuda.CUDAGraph()
        with torch.cuda.graph(graph):
            for _ in range(calls):
                fn()
    torch.cuda.synchronize()
    return graph


FILL = {}


def fill(torch, blocks: int) -> None:
    """A kernel of about `blocks` blocks: a float fill of blocks × 2048 elements."""
    buf = FILL.get("buf")
    if buf is None:
        buf = FILL["buf"] = torch.empty(1024 * 2048, device="cuda")
    buf[: blocks * 2048].fill_(1.0)


def disturb(torch, rng) -> None:
    for _ in range(rng.randrange(1, 8)):
        fill(torch, rng.randrange(1, 1024))


def timed(torch, graph, calls: int, samples: int, ahead=None) -> float:
    """Median ms per call of `samples` replays, after 3 untimed ones; `ahead(k)` (if given)
    launched before sample k, outside the timed span."""
    for _ in range(3):
        graph.replay()
    events = [(torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True))
              for _ in range(samples)]
    for k, (begin, end) in enumerate(events):
        if ahead is not None:
            ahead(k)
        begin.record()
        graph.replay()
        end.record()
    torch.cuda.synchronize()
    return float(np.median([b.elapsed_time(e) for b, e in events])) / calls


def drop_loaded_kernels() -> int:
    """Empty every Triton JITFunction's per-device kernel cache: the next call loads its
    binary again (from the compile cache). Returns how many functions were emptied."""
    try:
        from triton.runtime.jit import JITFunction
    except Exception:  # noqa: BLE001 - no Triton: nothing to drop
        return 0
    emptied = 0
    for obj in gc.get_objects():
        if isinstance(obj, JITFunction):
            for cache in getattr(obj, "device_caches", {}).values():
                if cache and cache[0]:
                    cache[0].clear()
                    emptied += 1
    return emptied


def tuned() -> dict:
    """{kernel name: its autotuner's chosen config} of every Triton Autotuner alive."""
    try:
        from triton.runtime.autotuner import Autotuner
    except Exception:  # noqa: BLE001 - no Triton
        return {}
    return {getattr(o.fn, "__name__", "?"): str(o.best_config) for o in gc.get_objects()
            if isinstance(o, Autotuner) and getattr(o, "best_config", None) is not None}


def scramble_arms(torch, g0, calls: int, samples: int, rng, reps: int) -> dict:
    got: dict = {a: [] for a in SCRAMBLE_ARMS}
    ahead = {"again": None, "steady": lambda k: fill(torch, 200),
             "scrambled": lambda k: fill(torch, rng.randrange(1, 1024))}
    for rep in range(reps):
        for k in range(len(SCRAMBLE_ARMS)):
            arm = SCRAMBLE_ARMS[(rep + k) % len(SCRAMBLE_ARMS)]
            disturb(torch, rng)
            got[arm].append(timed(torch, g0, calls, samples, ahead[arm]))
    return got


def run_case(torch, spec: str, use, reps: int, samples: int, rng) -> dict:
    from interleave_ab import first_latency    # beside this script
    fn, x0 = build(torch, spec)
    with use():
        latency = first_latency(torch, fn)
    calls = max(1, round(float(env("SAMPLE_MS", "1.0")) / latency))
    g0 = capture(torch, fn, calls, use)
    if env("SCRAMBLE", "0") == "1":
        return {"latency_ms": latency, "calls": calls, "info": {}, "tuned": tuned(),
                "arms": scramble_arms(torch, g0, calls, samples, rng, reps)}
    got: dict = {a: [] for a in ARMS}
    info: dict = {"inputs_ptr_mod_2MiB": [], "reloaded": []}
    hoard: list = []
    for rep in range(reps):
        for k in range(len(ARMS)):
            arm = ARMS[(rep + k) % len(ARMS)]
            if arm == "again":
                got[arm].append(timed(torch, g0, calls, samples))
                continue
            if arm == "hoard":
                gap = spacer(torch, rng)
                kept = [t.clone() for t in x0]
                graph = capture(torch, rebind(torch, spec, kept), calls, use)
                hoard.append((gap, kept, graph))
                got[arm].append(timed(torch, graph, calls, samples))
                continue
            if arm == "inputs":
                torch.cuda.empty_cache()
                held = spacer(torch, rng)
                moved = [t.clone() for t in x0]
                info["inputs_ptr_mod_2MiB"].append([t.data_ptr() % (2 << 20) for t in moved])
                n, g = calls, capture(torch, rebind(torch, spec, moved), calls, use)
            elif arm == "moved":
                info["reloaded"].append(drop_loaded_kernels())
                torch.cuda.empty_cache()
                held = spacer(torch, rng)
                n, g, moved = calls, capture(torch, fn, calls, use), None   # loads behind it
            else:
                if arm == "reload":
                    info["reloaded"].append(drop_loaded_kernels())
                n = rng.randrange(max(1, calls // 2), 2 * calls + 1) if arm == "calls" else calls
                g, held, moved = capture(torch, fn, n, use), None, None
            got[arm].append(timed(torch, g, n, samples))
            del g, held, moved
    del hoard
    return {"latency_ms": latency, "calls": calls, "arms": got, "info": info, "tuned": tuned()}


def spacer(torch, rng: random.Random):
    """A random-size allocation drawn from `rng` as zlh's placements and rounds draw theirs
    (harness/run/placement.py, up to 64 MiB): what a zlh round holds before its run so that
    what follows lands elsewhere."""
    return torch.empty(shift_bytes(rng), dtype=torch.uint8, device="cuda")


def child(specs, reps: int, samples: int) -> None:
    """A fresh process's windows of every case. SPACER (CHILD_SPACERS' variant): `none`;
    `first`, a random-size allocation held from before the library's first kernel load (as
    zlh's round spacer: the kernels' and every buffer's addresses move); `loaded`, the same
    after each case's first call (its kernel loaded), its inputs then built again behind
    it (the data moves, the kernel's code does not)."""
    import torch
    variant, seed = env("SPACER", "none"), int(env("SPACER_SEED", "0"))
    torch.cuda.init()
    held = [spacer(torch, random.Random(seed))] if variant == "first" else []
    use = library()
    out = {}
    for spec in specs:
        fn, inputs = build(torch, spec)
        with use():
            fn()
            torch.cuda.synchronize()
        if variant == "loaded":             # the first inputs freed, then the spacer, then
            del fn, inputs                  # the same inputs again behind it
            torch.cuda.empty_cache()
            held.append(spacer(torch, random.Random(seed + len(held))))
            fn, inputs = build(torch, spec)
        calls = int(env("CALLS_" + spec.replace(":", "_").replace("x", "_"), "1"))
        g = capture(torch, fn, calls, use)
        if env("SCRAMBLE", "0") == "1":
            rng = random.Random()
            out[spec] = [timed(torch, g, calls, samples,
                               lambda k: fill(torch, rng.randrange(1, 1024)))
                         for _ in range(reps)]
            out[spec + " again"] = [timed(torch, g, calls, samples) for _ in range(reps)]
        else:
            out[spec] = [timed(torch, g, calls, samples) for _ in range(reps)]
    print("RESULT " + json.dumps({"medians": out, "tuned": tuned()}), flush=True)


def fresh_children(doc: dict, started: float) -> None:
    """FRESH rounds of children, one per CHILD_SPACERS variant each (interleaved, their order
    rotated each round, so that a drift of the card falls on every variant); variant v's
    medians under `fresh` (none) or `fresh_<v>`."""
    calls = {"CALLS_" + s.replace(":", "_").replace("x", "_"): str(c["calls"])
             for s, c in doc["cases"].items()}
    seeds = random.Random(int(env("SEED", "1")) + 7)
    variants = env("CHILD_SPACERS", "none").split()
    for k in range(int(env("FRESH", "6"))):
        for variant in variants[k % len(variants):] + variants[:k % len(variants)]:
            seed = seeds.randrange(1 << 30)
            if variant == TWIN_SPARE:    # a process between the twins, as a zlh spare
                fresh_child(doc, calls, variant, seed, k, started)
                with held_context():
                    fresh_child(doc, calls, variant, seed, k, started)
                continue
            for _ in range(2 if variant == TWIN else 1):   # twins: one seed, two processes
                fresh_child(doc, calls, variant, seed, k, started)


@contextlib.contextmanager
def held_context():
    """For the block: another process that has imported the library and made a device context
    (as a zlh spare does while it waits), started and ready before the block begins."""
    holder = subprocess.Popen([sys.executable, __file__, "--hold"], stdin=subprocess.PIPE,
                              stdout=subprocess.PIPE, text=True)
    try:
        for line in holder.stdout:           # "HELD": its context is made
            if line.strip() == "HELD":
                break
        yield
    finally:
        holder.stdin.close()                 # it ends when its stdin does
        holder.wait(timeout=60)


def hold() -> None:
    """`--hold`: import the library, make a device context, say HELD, wait for stdin's end."""
    import torch
    library()
    torch.zeros(1, device="cuda")
    print("HELD", flush=True)
    sys.stdin.read()


def fresh_child(doc: dict, calls: dict, variant: str, seed: int, k: int,
                started: float) -> None:
    """One fresh process of `variant` (a twin: `first`'s spacer, of the seed it shares with
    the process before or after it); its medians appended to the variant's arm."""
    spacer_kind = "first" if variant in TWINS else variant
    proc = subprocess.run([sys.executable, __file__, "--child"], capture_output=True,
                          env=dict(os.environ, **calls, SPACER=spacer_kind,
                                   SPACER_SEED=str(seed)),
                          text=True, timeout=300)
    line = next((ln for ln in proc.stdout.splitlines() if ln.startswith("RESULT ")),
                None)
    if line is None:
        print(f"fresh process {k} ({variant}): rc {proc.returncode}: "
              f"{proc.stderr[-400:]}")
        if variant in TWINS:                # its twin stays paired with nothing
            for case in doc["cases"].values():
                case.setdefault(f"fresh_{variant}", []).append([])
        return
    got = json.loads(line[7:])
    arm = "fresh" if variant == "none" else f"fresh_{variant}"
    for spec, medians in got["medians"].items():
        name, _, again = spec.partition(" ")
        doc["cases"][name].setdefault("fresh_again" if again else arm, []).append(
            medians)
    doc.setdefault("fresh_tuned", []).append(got["tuned"])
    save(doc)                               # a box that ends later keeps what is done
    print(f"fresh process {k} ({variant}): done at {time.time() - started:.0f} s",
          flush=True)


def save(doc: dict) -> Path:
    """$OUT/run_state.json written whole (a temporary file renamed over it)."""
    out = Path(os.environ.get("OUT") or "device-out")
    out.mkdir(parents=True, exist_ok=True)
    part = out / "run_state.json.part"
    part.write_text(json.dumps(doc, indent=1))
    part.replace(out / "run_state.json")
    return out / "run_state.json"


def main(argv: list[str]) -> int:
    out = Path(os.environ.get("OUT") or "device-out")
    out.mkdir(parents=True, exist_ok=True)
    if argv[:1] == ["--show"]:
        print("\n".join(summary(json.loads(Path(argv[1]).read_text()))))
        return 0
    specs = env("CASES", CASES).split()
    reps, samples = int(env("REPS", "16")), int(env("SAMPLES", "60"))
    if argv[:1] == ["--child"]:
        child(specs, int(env("REPS_CHILD", "3")), samples)
        return 0
    if argv[:1] == ["--hold"]:
        hold()
        return 0
    import torch
    use, rng, started = library(), random.Random(int(env("SEED", "1"))), time.time()
    doc = {"device": torch.cuda.get_device_name(), "reps": reps, "samples": samples,
           "cases": {}}
    for spec in specs:
        doc["cases"][spec] = run_case(torch, spec, use, reps, samples, rng)
        print(f"{spec}: done at {time.time() - started:.0f} s", flush=True)
    fresh_children(doc, started)
    doc["wall_s"] = round(time.time() - started, 1)
    save(doc)
    text = "\n".join([f"{doc['device']}, {reps} repetitions, {doc['wall_s']} s"]
                     + summary(doc)) + "\n"
    (out / "run_state.txt").write_text(text)
    print(text, end="")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
