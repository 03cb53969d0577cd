"""Architecture arithmetic: parameter counts and KV-cache size from a model's shape.

Parameter count of a decoder-only transformer (Llama-style unless the catalog says
otherwise), per layer: attention h*(q + 2*kv + o) with q = heads*head_dim and
kv = kv_heads*head_dim; MLP 3*h*ffn when gated (SwiGLU), 2*h*ffn otherwise; norm weights
(2h for RMSNorm, 4h for LayerNorm with bias); plus embeddings V*h, doubled when the output
head is not tied. Exact for Llama-2-7B (6,738,415,616) and Llama-2-70B (68,976,648,192).
"""

from __future__ import annotations

from types import SimpleNamespace

from ..catalogs.catalog import Model, Precision, as_precision
from . import defaults
from .shape import counts, kv_layer_tokens


def params_from_arch(layers: int, hidden: int, heads: int, kv_heads: int, ffn: int, vocab: int,
                     tied: bool = False, gated_mlp: bool = True, head_dim: int | None = None,
                     norm: str = "rmsnorm", attn_bias: bool = False, mlp_bias: bool = False,
                     n_experts: int = 0, moe_layers: int = 0, dense_ffn: int = 0,
                     shared_experts: int = 0) -> dict[str, int]:
    """Total, embedding and body parameters of a transformer from its shape, counted by the one
    counter (`shape.counts`, which every catalog row, spec and imported config goes through)."""
    shape = SimpleNamespace(layers=layers, hidden=hidden, heads=heads, kv_heads=kv_heads, ffn=ffn, vocab=vocab,
                            tied_embeddings=tied, gated_mlp=gated_mlp, head_dim=head_dim, norm=norm,
                            attn_bias=attn_bias, mlp_bias=mlp_bias, n_experts=n_experts, moe_layers=moe_layers,
                            dense_ffn=dense_ffn, shared_experts=shared_experts)
    n = counts(shape)
    return {"total": n["total"], "embeddings": n["embeddings"], "body": n["total"] - n["embeddings"]}


def kept_params(model: Model, precision: Precision | str) -> float:
    """Parameters held at 16 bits (defaults.KEPT_PRECISION) rather than in `precision`: the parts a quantized
    checkpoint leaves unconverted (Model.kept_params), when it is served in its own format (Model.quant_format);
    none otherwise. The rule: a precision other than the checkpoint's own means every weight in that precision,
    as for a model whose config has no quantization_config (gpt-oss in bf16 is all bf16; in mxfp4 its experts
    are MXFP4 and the rest bf16, as its config.json says)."""
    if not model.kept_params or as_precision(precision).name != as_precision(model.quant_format).name:
        return 0.0
    return model.kept_params


def kept_streamed(model: Model, precision: Precision | str) -> float:
    """Of `kept_params`, those a decode step reads: all but an untied input embedding (a row lookup)."""
    kept = kept_params(model, precision)
    lookup = lookup_params(model) if "embeddings" in model.quant_keep else 0
    return kept - lookup if kept else 0.0


def kept_extra_bytes(precision: Precision | str) -> float:
    """Bytes a kept (16-bit) parameter takes beyond one in `precision`."""
    return as_precision(defaults.KEPT_PRECISION).bytes_per_param - as_precision(precision).bytes_per_param


def matmul_params(model: Model) -> float:
    """Parameters a token multiplies in matrix products: the active ones less an untied input embedding, a row
    lookup (for MoE what its authors count as active: moe.active_params)."""
    return model.active - lookup_params(model)


def lookup_params(model: Model) -> float:
    """Parameters of the input embedding read as a row lookup, not a matrix: all of it unless tied to the output
    head (whose matrix is then read)."""
    return 0 if model.tied_embeddings else model.input_embedding_params


def weight_bytes(model: Model, precision: Precision | str) -> float:
    """Bytes of all weights in memory: every parameter in `precision`, except the parts a quantized checkpoint
    keeps at 16 bits when it is served in its own format (kept_params)."""
    return model.total_params * as_precision(precision).bytes_per_param \
        + kept_params(model, precision) * kept_extra_bytes(precision)


def kv_bytes_per_layer_token(model: Model, kv_precision: Precision | str = "bf16") -> float:
    """Bytes of KV cache one token adds to one sequence in one layer."""
    width = as_precision(kv_precision).bytes_per_param
    if model.kv_lora_rank:        # multi-head latent attention caches one compressed vector
        return (model.kv_lora_rank + (model.qk_rope_dim or 0)) * width
    return 2 * model.kv_head_count * model.head_size * width


def decode_attention_width(model: Model) -> float:
    """Per head, the key and value widths a decode step multiplies each cached token by (d_k + d_v): its
    attention does 2 x heads x (d_k + d_v) FLOPs per cached token per layer. 2 x the head size for multi-head and
    grouped-query attention. Multi-head latent attention decodes on the cached latent itself, the key and value
    up-projections absorbed into the query and output (DeepSeek-V2, arXiv:2405.04434, section 2.1.3): d_k = the
    latent plus the RoPE key (512 + 64 = 576), d_v = the latent (512), as FlashMLA's kernels take them
    (deepseek-ai/FlashMLA, docs/20250422-new-kernel-deep-dive.md: 2 h_q s_k (d_k + d_v) FLOPs, compute-bound at
    128 heads), 4.25x DeepSeek-R1's 2 x 128."""
    if model.kv_lora_rank:
        return 2 * model.kv_lora_rank + (model.qk_rope_dim or 0)
    return 2 * model.head_size


def prefill_attention_width(model: Model) -> float:
    """Per head, the key and value widths a prefill's attention multiplies (d_k + d_v): causal attention over a
    prompt does heads x (d_k + d_v) FLOPs per query per earlier position (QK over d_k, PV over d_v). 2 x the head
    size for multi-head and grouped-query attention. Multi-head latent attention prefills on the up-projected heads,
    not the latent: d_k = the per-head key (qk_nope_head_dim) plus the RoPE key (qk_rope_head_dim), d_v =
    v_head_dim (DeepSeek-V2, arXiv:2405.04434, section 2.1.2-2.1.3; DeepSeek-R1's config.json: 128 + 64 and 128),
    320 where 2 x the head size gives 256 (1.25x)."""
    if model.kv_lora_rank:
        return 2 * model.head_size + (model.qk_rope_dim or 0)
    return 2 * model.head_size


def kv_bytes_per_token(model: Model, kv_precision: Precision | str = "bf16") -> float:
    """Bytes of KV cache one token adds to one sequence, over all layers (while the context
    is inside every local layer's window)."""
    return model.dim("layers", "the KV cache") * kv_bytes_per_layer_token(model, kv_precision)


def kv_cache_bytes(model: Model, context: float, batch: float = 1, kv_precision: Precision | str = "bf16") -> float:
    """KV cache for `batch` sequences of `context` tokens: global layers hold the whole
    context, sliding-window and chunked layers at most their window (shape.kv_layer_tokens)."""
    return kv_bytes_per_layer_token(model, kv_precision) * kv_layer_tokens(model, context) * batch
