"""Architecture arithmetic: parameter counts and KV-cache size from a model's shape.

Parameter count of a decoder-only transformer (Llama-style unless the catalog says
otherwise), per layer: attention h*(q + 2*kv + o) with q = heads*head_dim and
kv = kv_heads*head_dim; MLP 3*h*ffn when gated (SwiGLU), 2*h*ffn otherwise; norm weights
(2h for RMSNorm, 4h for LayerNorm with bias); plus embeddings V*h, doubled when the output
head is not tied. Exact for Llama-2-7B (6,738,415,616) and Llama-2-70B (68,976,648,192).
"""

from __future__ import annotations

from .catalog import Model, Precision, as_precision
from .shape import kv_layer_tokens, require_shape


def params_from_arch(layers: int, hidden: int, heads: int, kv_heads: int, ffn: int, vocab: int,
                     tied: bool = False, gated_mlp: bool = True, head_dim: int | None = None,
                     norm: str = "rmsnorm", attn_bias: bool = False, mlp_bias: bool = False,
                     learned_positions: int = 0, n_experts: int = 0, moe_layers: int = 0,
                     dense_ffn: int = 0, shared_experts: int = 0) -> dict[str, int]:
    """Total and active parameters of a transformer from its shape."""
    hd = head_dim or hidden // heads
    q, kv = heads * hd, kv_heads * hd
    attention = hidden * (q + 2 * kv) + q * hidden
    if attn_bias:
        attention += q + 2 * kv + (hidden if mlp_bias else 0)
    norm_per_layer = (4 if norm == "layernorm" else 2) * hidden
    final_norm = (2 if norm == "layernorm" else 1) * hidden

    def mlp(width: int) -> int:
        weights = (3 if gated_mlp else 2) * hidden * width
        return weights + ((width + hidden) if mlp_bias else 0)

    dense_layers = layers - moe_layers
    expert = mlp(ffn)
    moe_total = moe_layers * ((n_experts + shared_experts) * expert + hidden * n_experts)
    dense_total = dense_layers * mlp(dense_ffn or ffn)
    body = layers * (attention + norm_per_layer) + dense_total + moe_total + final_norm
    embeddings = vocab * hidden * (1 if tied else 2) + learned_positions * hidden
    total = body + embeddings
    return {"total": total, "embeddings": embeddings, "body": body}


def kv_bytes_per_layer_token(model: Model, kv_precision: Precision | str = "bf16") -> float:
    """Bytes of KV cache one token adds to one sequence in one layer."""
    require_shape(model)
    width = as_precision(kv_precision).bytes_per_param
    if model.kv_lora_rank:        # multi-head latent attention caches one compressed vector
        return (model.kv_lora_rank + (model.qk_rope_dim or 0)) * width
    head_dim = model.head_dim or model.hidden // model.heads
    return 2 * (model.kv_heads or model.heads) * head_dim * width


def kv_bytes_per_token(model: Model, kv_precision: Precision | str = "bf16") -> float:
    """Bytes of KV cache one token adds to one sequence, over all layers (while the context
    is inside every local layer's window)."""
    return model.layers * kv_bytes_per_layer_token(model, kv_precision)


def kv_cache_bytes(model: Model, context: float, batch: float = 1, kv_precision: Precision | str = "bf16") -> float:
    """KV cache for `batch` sequences of `context` tokens: global layers hold the whole
    context, sliding-window and chunked layers at most their window (shape.kv_layer_tokens)."""
    return kv_bytes_per_layer_token(model, kv_precision) * kv_layer_tokens(model, context) * batch
