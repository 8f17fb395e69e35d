"""Shape sets taken from a model: the GEMM and MoE shapes its layers run, keyed the way
FlagGems' benchmarks read them.

Two ways in:

* `from_config(config, tokens, tp)`: a Hugging Face `config.json` (or the same fields in YAML)
  and the token counts of one forward step (prefill: prompt tokens; decode: batch size) give
  every projection's GEMM. Multi-head latent attention (`q_lora_rank`, `kv_lora_rank`, ...)
  or plain attention (fused q/k/v), the dense MLP of the first `first_k_dense_replace` layers
  (all layers without experts), shared experts, the router, routed experts, the LM head.
  `tp` shards heads, dense and shared MLPs and the vocabulary; routed experts are taken as
  expert-parallel (full `moe_intermediate_size`), as FlagGems' own MoE shapes are.
* `ShapeRecorder`: a torch dispatch mode that records the `mm`/`addmm`/`bmm`/`baddbmm` calls
  of any forward pass; run the model on the `meta` device and no weights are needed.

Keys: `mm`, `addmm`, `bmm`, `baddbmm` as `[B, M, N, K]` (BlasBenchmark's form); `router_gemm`
as `[M, N, K]`; the fused-MoE benchmark classes as `[num_tokens, num_experts, hidden_size,
intermediate_size, topk]`; `moe_sum` as `[num_tokens, topk, hidden_size]`.
"""
from __future__ import annotations

from dataclasses import dataclass, field

# Benchmark classes that take (num_tokens, num_experts, hidden_size, intermediate_size, topk).
MOE_CLASSES = ("FusedMarlinMoEW4A16MXFP4Benchmark", "FusedMarlinMoEW4A16INT4Benchmark",
               "FusedMarlinMoEW8A16INT8Benchmark", "FusedMoEBenchmark", "FusedMoEFP8Benchmark",
               "FusedMoEINT4W4A16Benchmark")
DESCS = {"mm": "B, M, N, K", "addmm": "B, M, N, K", "bmm": "B, M, N, K", "baddbmm": "B, M, N, K",
         "router_gemm": "M, N, K", "moe_sum": "num_tokens, topk, hidden_size",
         **{c: "num_tokens, num_experts, hidden_size, intermediate_size, topk"
            for c in MOE_CLASSES}}


class ConfigError(ValueError):
    pass


@dataclass
class ShapeDoc:
    """Shapes per key, first occurrence first, no duplicates."""
    shapes: dict = field(default_factory=dict)

    def add(self, key: str, shape: list) -> None:
        bucket = self.shapes.setdefault(key, [])
        if shape not in bucket:
            bucket.append(shape)

    def document(self) -> dict:
        return {k: {"shape_desc": DESCS.get(k, ""), "shapes": v} for k, v in self.shapes.items()}


def _get(config: dict, *names, default=None):
    for name in names:
        if config.get(name) is not None:
            return config[name]
    if default is not None:
        return default
    raise ConfigError(f"model config has none of {', '.join(names)}")


def _count(config: dict, *names, default=None, low: int = 1) -> int:
    """A size from the config: a whole number >= `low` (0 where a count may be absent), or a
    ConfigError naming the field (never a ValueError or a division by zero later)."""
    value = _get(config, *names, default=default)
    if isinstance(value, bool) or not isinstance(value, int) or not low <= value <= INT64_MAX:
        name = next((n for n in names if config.get(n) is not None), names[0])
        shown = repr(value) if len(repr(value)) <= 40 else repr(value)[:37] + "..."
        raise ConfigError(f"model config {name}={shown} is not a whole number >= {low}"
                          + (" within int64" if isinstance(value, int) and value > INT64_MAX
                             else ""))
    return value


INT64_MAX = 2 ** 63 - 1          # the largest size a shape file takes (run/shapes.py)


def _shard(value: int, tp: int, what: str) -> int:
    if value % tp:
        raise ConfigError(f"{what}={value} is not divisible by --tp {tp}")
    return value // tp


def from_config(config: dict, tokens: list[int], tp: int = 1, lm_head: bool = True) -> dict:
    """The shape document of one forward step per token count (see the module docstring)."""
    doc = ShapeDoc()
    hidden = _count(config, "hidden_size")
    heads = _shard(_count(config, "num_attention_heads"), tp, "num_attention_heads")
    experts = _count(config, "n_routed_experts", "num_experts", "num_local_experts", default=0,
                     low=0)
    dense_layers = _count(config, "first_k_dense_replace", default=0 if experts else 1, low=0)
    for t in tokens:
        for n, k in _attention(config, hidden, heads, tp):
            doc.add("mm", [1, t, n, k])
        if dense_layers:
            inter = _shard(_count(config, "intermediate_size"), tp, "intermediate_size")
            doc.add("mm", [1, t, 2 * inter, hidden])
            doc.add("mm", [1, t, hidden, inter])
        if experts:
            _moe(doc, config, t, hidden, experts, tp)
        if lm_head:
            vocab = _shard(_count(config, "vocab_size"), tp, "vocab_size")
            doc.add("mm", [1, t, vocab, hidden])
    return doc.document()


def _attention(config: dict, hidden: int, heads: int, tp: int) -> list[tuple[int, int]]:
    """(N, K) of the attention projections."""
    if config.get("kv_lora_rank"):
        nope, rope = _count(config, "qk_nope_head_dim"), _count(config, "qk_rope_head_dim")
        v_dim, kv_rank = _count(config, "v_head_dim"), _count(config, "kv_lora_rank")
        q_rank = _count(config, "q_lora_rank") if config.get("q_lora_rank") else None
        q = [(q_rank, hidden), (heads * (nope + rope), q_rank)] if q_rank else \
            [(heads * (nope + rope), hidden)]
        return q + [(kv_rank + rope, hidden), (heads * (nope + v_dim), kv_rank),
                    (hidden, heads * v_dim)]
    head_dim = _count(config, "head_dim") if config.get("head_dim") is not None else \
        hidden // _count(config, "num_attention_heads")
    kv_heads = _shard(_count(config, "num_key_value_heads", "num_attention_heads"), tp,
                      "num_key_value_heads")
    return [((heads + 2 * kv_heads) * head_dim, hidden), (hidden, heads * head_dim)]


def _moe(doc: ShapeDoc, config: dict, t: int, hidden: int, experts: int, tp: int) -> None:
    inter = _count(config, "moe_intermediate_size", "intermediate_size")
    topk = _count(config, "num_experts_per_tok", "moe_topk")
    doc.add("router_gemm", [t, experts, hidden])
    doc.add("mm", [1, t, experts, hidden])
    for cls in MOE_CLASSES:
        doc.add(cls, [t, experts, hidden, inter, topk])
    doc.add("moe_sum", [t, topk, hidden])
    shared = _count(config, "n_shared_experts", default=0, low=0)
    if shared:
        shared_inter = _shard(inter * shared, tp, "n_shared_experts * moe_intermediate_size")
        doc.add("mm", [1, t, 2 * shared_inter, hidden])
        doc.add("mm", [1, t, hidden, shared_inter])


def _recorder_base():
    from torch.utils._python_dispatch import TorchDispatchMode  # heavy: imported only where used
    return TorchDispatchMode


class ShapeRecorder(_recorder_base()):
    """`with ShapeRecorder() as rec: model(x)`; then `rec.document()` is a shape document.

    Records matrix products only: the ops whose shapes decide a GEMM kernel's tiling."""

    def __init__(self):
        super().__init__()
        self.doc = ShapeDoc()

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        name = getattr(func, "__name__", "").split(".")[0]
        if name in ("mm", "addmm", "bmm", "baddbmm"):
            a, b = (args[0], args[1]) if name in ("mm", "bmm") else (args[1], args[2])
            if name in ("mm", "addmm"):
                self.doc.add(name, [1, a.shape[0], b.shape[1], a.shape[1]])
            else:
                self.doc.add(name, [a.shape[0], a.shape[1], b.shape[2], a.shape[2]])
        return func(*args, **(kwargs or {}))

    def document(self) -> dict:
        return self.doc.document()
