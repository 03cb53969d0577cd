"""Exact parameter counts from a model's shape, for every layout the catalog holds: dense
GQA (explicit head_dim), gated or plain MLPs with or without biases, mixture-of-experts with
shared experts and dense layers, multi-head latent attention (DeepSeek), and the small
extras some families add (QK-norm, attention sinks, router bias, sandwich norms).

Works on any object with the catalog's model columns as attributes (a catalog `Model`),
so a private row, a MODEL_DEFINE spec and an imported config.json are counted one way.
Per layer:
  attention   h*(q + 2kv) + q*h  (q = heads*head_dim, kv = kv_heads*head_dim), or MLA's
              low-rank projections; + q+2kv biases (attn_bias), + h (output bias)
  MLP         3*h*w gated (SwiGLU) or 2*h*w, + biases (mlp_bias)
  MoE layer   (experts + shared) MLPs of the expert width + router h*experts
  norms       2h (RMSNorm), 4h (LayerNorm with bias, or RMSNorm "sandwich" pre+post norms)
plus embeddings V*h (doubled when the output head is not tied) and the final norm.
Active parameters count the routed experts a token uses (top-k) instead of all of them.
"""

from __future__ import annotations

from ..errors import value_error


# Tokens of the `extras` column and the parameters each adds per layer.
EXTRAS = {
    "qk_norm": "RMSNorm on queries and keys (head_dim weights each): Qwen3, Gemma 3",
    "sinks": "one learned attention-sink logit per head: gpt-oss",
    "o_bias": "bias on the attention output projection: gpt-oss",
    "router_bias": "a bias per expert on the router: gpt-oss, DeepSeek-V3 (score correction)",
    "sandwich_norm": "RMSNorm before and after both attention and MLP (4 per layer): Gemma 2/3",
    "parallel_block": "attention and MLP side by side after one shared LayerNorm: GPT-J",
    "head_bias": "a bias on the output head (vocab): GPT-J",
    "embed_norm": "a LayerNorm right after the embedding: BLOOM",
}


def _get(model, name: str, default=0):
    value = getattr(model, name, None)
    return default if value is None else value


def head_dim(model) -> int:
    """Width of one attention head: the catalog's head_dim, else hidden / heads (the one fallback;
    a `Model` keeps it as `head_size`)."""
    return _get(model, "head_dim") or model.hidden // model.heads


def _extras(model) -> set[str]:
    return set(_get(model, "extras", ()))


def attention_params(model) -> int:
    """Weights (and biases) of one attention block."""
    h, heads, hd = model.hidden, model.heads, head_dim(model)
    extras = _extras(model)
    if _get(model, "kv_lora_rank"):
        return _mla_params(model)
    q, kv = heads * hd, (_get(model, "kv_heads") or heads) * hd
    total = h * (q + 2 * kv) + q * h
    if _get(model, "attn_bias", False):
        total += q + 2 * kv
        if _get(model, "mlp_bias", False) or "o_bias" in extras:
            total += h
    if "qk_norm" in extras:
        total += 2 * hd
    if "sinks" in extras:
        total += heads
    return total


def _mla_params(model) -> int:
    """DeepSeek multi-head latent attention: queries through an optional low-rank
    bottleneck (q_lora_rank), keys and values from one compressed latent (kv_lora_rank) plus
    a shared RoPE key; the no-RoPE query/key part and the value heads are head_dim wide."""
    h, heads, hd = model.hidden, model.heads, head_dim(model)
    rope, kv_rank, q_rank = _get(model, "qk_rope_dim"), model.kv_lora_rank, _get(model, "q_lora_rank")
    q_width = heads * (hd + rope)
    q = (h * q_rank + q_rank + q_rank * q_width) if q_rank else h * q_width
    kv = h * (kv_rank + rope) + kv_rank + kv_rank * heads * (hd + hd)
    return q + kv + heads * hd * h


def mlp_params(model, width: int) -> int:
    gated = _get(model, "gated_mlp", True)
    h = model.hidden
    total = (3 if gated else 2) * h * width
    if _get(model, "mlp_bias", False):
        total += (2 if gated else 1) * width + h
    return total


def _norm_params(model) -> tuple[int, int]:
    """Norm weights per layer and after the last layer."""
    h = model.hidden
    extras = _extras(model)
    if _get(model, "norm", "rmsnorm") == "layernorm":
        per_layer, final = (2 if "parallel_block" in extras else 4) * h, 2 * h
        return per_layer, final + (2 * h if "embed_norm" in extras else 0)
    return (4 if "sandwich_norm" in extras else 2) * h, h


def moe_layer_count(model) -> int:
    if not _get(model, "n_experts"):
        return 0
    return _get(model, "moe_layers") or model.layers


def counts(model) -> dict[str, int]:
    """Total, active (per token) and embedding parameters from the shape."""
    h, layers = model.hidden, model.layers
    per_layer_norms, final_norm = _norm_params(model)
    common = attention_params(model) + per_layer_norms
    moe_layers = moe_layer_count(model)
    dense_width = (_get(model, "dense_ffn") or model.ffn) if moe_layers else model.ffn
    dense = (layers - moe_layers) * mlp_params(model, dense_width)
    experts, k = _get(model, "n_experts"), _get(model, "experts_per_token") or 1
    shared = _get(model, "shared_experts")
    expert = mlp_params(model, model.ffn) if moe_layers else 0
    router = h * experts + (experts if "router_bias" in _extras(model) else 0)
    embeddings = model.vocab * h * (1 if _get(model, "tied_embeddings", False) else 2)
    if _get(model, "pos_embedding", "") == "learned":          # GPT-2/3 position table
        embeddings += _get(model, "context_length") * h
    if "head_bias" in _extras(model):
        embeddings += model.vocab
    base = layers * common + dense + moe_layers * router + final_norm + embeddings
    return {"total": base + moe_layers * (experts + shared) * expert,
            "active": base + moe_layers * (min(k, experts) + shared) * expert,
            "embeddings": embeddings}


# Parts of a model a checkpoint's `quantization_config` may leave unconverted (Hugging Face
# `modules_to_not_convert`): held at 16 bits while the rest is in the checkpoint's format
# (`Model.quant_keep`). Norms are never converted; routed experts always are (every such checkpoint in the
# catalog quantizes its experts first), so what a batch reads of them is one width. Their biases (gpt-oss: 0.04B,
# BF16 in the checkpoint) are counted with them, at the experts' format: 0.05 GiB on gpt-oss-120b.
KEEPABLE = ("attention", "router", "embeddings", "head", "dense", "shared_experts")


def kept_params(model) -> float:
    """Parameters a quantized checkpoint holds at 16 bits: norms and the parts `quant_keep` names; 0
    for a model with no checkpoint format (`quant_format`). gpt-oss-120b: attention, router, embeddings, head
    and norms, 2.13B of 116.8B (its MXFP4 experts are the other 114.70B)."""
    if not _get(model, "quant_format", "") or not _countable(model):
        return 0
    keep = set(_get(model, "quant_keep", ()))
    unknown = keep - set(KEEPABLE)
    if unknown:
        raise value_error(f"quant_keep names {', '.join(sorted(unknown))}; the parts a checkpoint may keep: "
                         f"{', '.join(KEEPABLE)}")
    h, layers, moe_layers = model.hidden, model.layers, moe_layer_count(model)
    gated = _get(model, "gated_mlp", True)
    matrices = (3 if gated else 2) * h                  # one MLP's weight matrices per unit of width
    expert_width = model.ffn if moe_layers else 0
    dense_width = (_get(model, "dense_ffn") or model.ffn) if moe_layers else model.ffn
    n = counts(model)
    converted = {
        "attention": layers * attention_params(model),
        "router": moe_layers * h * _get(model, "n_experts"),
        "embeddings": model.vocab * h,
        "head": 0 if _get(model, "tied_embeddings", False) else model.vocab * h,
        "dense": (layers - moe_layers) * matrices * dense_width,
        "shared_experts": moe_layers * _get(model, "shared_experts") * matrices * expert_width}
    routed = moe_layers * _get(model, "n_experts") * mlp_params(model, expert_width) if moe_layers else 0
    return n["total"] - routed - sum(v for part, v in converted.items() if part not in keep)


def _countable(model) -> bool:
    return has_shape(model) and bool(_get(model, "ffn") and _get(model, "vocab"))


def derived(model) -> dict[str, float | int]:
    """Every figure a model's other figures imply, worked out once when the model is made
    (catalog.Model fills its derived fields from this):
      total and active parameters   the catalog's figures, else counted from the shape (`counts`)
      embedding and output head     vocab x hidden each; the head is 0 when tied to the embedding
      experts                       one routed expert over all MoE layers = (total - active) / (experts - k)
                                    (exactly the shape's expert MLPs when the counts come from the shape);
                                    shared experts are as wide (the catalog's `ffn`)."""
    shaped = has_shape(model)
    counted = counts(model) if _countable(model) and not (_get(model, "params") and _get(model, "active_params")) \
        else {}
    total = _get(model, "params") or counted.get("total", 0)
    experts, k = _get(model, "n_experts"), _get(model, "experts_per_token") or 1
    active = _get(model, "active_params") or (counted.get("active", total) if experts else total)
    expert = (total - active) / (experts - k) if experts > k and total > active else 0.0
    table = _get(model, "vocab") * _get(model, "hidden")
    return {"head_size": head_dim(model) if shaped else 0,
            "kv_head_count": (_get(model, "kv_heads") or _get(model, "heads")) if shaped else 0,
            "total_params": total, "active": active,
            "input_embedding_params": table,
            "output_head_params": 0 if _get(model, "tied_embeddings", False) else table,
            "moe_layer_count": moe_layer_count(model), "expert_params": expert,
            "shared_expert_params": _get(model, "shared_experts") * expert,
            "kept_params": kept_params(model)}


# ---------------------------------------------------------------- KV-cache layout
def kv_layers(model) -> tuple[int, int, int | None]:
    """(global layers, local layers, window): global layers cache the whole context, local
    ones (sliding window, or Llama 4's chunks) at most `window` tokens. A window with no
    local-layer count applies to every layer (Mistral 7B)."""
    window = _get(model, "sliding_window") or None
    if not window:
        return model.layers, 0, None
    local = _get(model, "local_layers") or model.layers
    return model.layers - local, local, window


def kv_layer_tokens(model, context: float) -> float:
    """Tokens held summed over layers: what one sequence's KV cache stores, in layer-tokens.
    A chunked layer holds at most one chunk, like a sliding window (its worst case)."""
    global_layers, local_layers, window = kv_layers(model)
    return global_layers * context + local_layers * (min(context, window) if window else context)


def max_context_for(model, layer_tokens: float) -> float:
    """Inverse of `kv_layer_tokens`: the longest context whose cache fits `layer_tokens`
    (infinite when every layer is local and the windows fit)."""
    global_layers, local_layers, window = kv_layers(model)
    if not window:
        return layer_tokens / model.layers
    if layer_tokens <= model.layers * window:          # still inside the window on every layer
        return layer_tokens / model.layers
    if global_layers == 0:
        return float("inf")
    return (layer_tokens - local_layers * window) / global_layers


def has_shape(model) -> bool:
    return bool(_get(model, "layers") and _get(model, "hidden") and _get(model, "heads"))


