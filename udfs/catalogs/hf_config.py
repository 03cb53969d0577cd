"""A catalog model row from a Hugging Face `config.json`, offline.

Handles the Llama, Mistral, Qwen2/2.5, Qwen3 (dense and MoE), Phi-3/4, Gemma 3, gpt-oss,
Llama 4 and DeepSeek-V2/V3 styles: explicit head_dim, GQA, mixture-of-experts with shared
experts and dense layers, sliding-window, chunked and local/global attention, and MLA.
Multimodal configs (Gemma 3, Llama 4, Mistral 3) are read from their `text_config`: the
row describes the language model (the vision encoder is not counted).
"""

from __future__ import annotations

import json
from datetime import date
from pathlib import Path
from types import SimpleNamespace

from ..errors import value_error
from ..physics.shape import counts

# Fields some official configs leave out because transformers fills them in (defaults of
# the model type's config class), and properties of a family that no field states.
STYLE_DEFAULTS = {
    "gemma3_text": {"num_attention_heads": 8, "num_key_value_heads": 4, "head_dim": 256, "vocab_size": 262208,
                    "sliding_window_pattern": 6, "max_position_embeddings": 131072, "tie_word_embeddings": True},
    "gemma2": {"tie_word_embeddings": True},
}
STYLE_FACTS = {
    "qwen2": {"attn_bias": True},
    "qwen2_moe": {"attn_bias": True},
    "qwen3": {"extras": ["qk_norm"]},
    "qwen3_moe": {"extras": ["qk_norm"]},
    "gemma3_text": {"extras": ["qk_norm", "sandwich_norm"]},
    "gemma2": {"extras": ["sandwich_norm"]},
    "gpt_oss": {"extras": ["o_bias", "sinks", "router_bias"], "mlp_bias": True},
    "llama4_text": {"shared_experts": 1, "local_attention": "chunked"},
}
FAMILIES = {"llama": "Llama", "llama4_text": "Llama 4", "mistral": "Mistral", "mixtral": "Mixtral", "qwen2": "Qwen2",
            "qwen3": "Qwen3", "qwen3_moe": "Qwen3", "phi3": "Phi", "gemma3_text": "Gemma 3", "gemma2": "Gemma 2",
            "gpt_oss": "gpt-oss", "deepseek_v3": "DeepSeek", "deepseek_v2": "DeepSeek"}
SUPPORTED = tuple(FAMILIES)


def read(path: str | Path) -> dict:
    try:
        config = json.loads(Path(path).read_text(encoding="utf-8"))
    except OSError as e:
        raise value_error(f"cannot read {path}: {e.strerror or e}") from None
    except json.JSONDecodeError as e:
        raise value_error(f"{path} is not valid JSON (line {e.lineno}, column {e.colno}): {e.msg}") from None
    if not isinstance(config, dict):
        raise value_error(f"{path} is not a config.json object")
    return config


def text_config(config: dict) -> dict:
    """The language-model part: `text_config` of a multimodal config, merged over the
    top level (where `tie_word_embeddings` often sits), then the type's defaults."""
    text = dict(config)
    text.pop("text_config", None)
    text.update(config.get("text_config") or {})
    if "text_config" in config and "model_type" not in (config.get("text_config") or {}):
        text["model_type"] = config.get("model_type")
    for k, v in STYLE_DEFAULTS.get(text.get("model_type"), {}).items():
        text.setdefault(k, v)
    return text


def _int(cfg: dict, *names: str) -> int | None:
    for n in names:
        if cfg.get(n) not in (None, ""):
            return int(cfg[n])
    return None


def _moe(cfg: dict, layers: int) -> dict:
    """Experts, top-k, shared experts, expert and dense widths, and how many layers are MoE."""
    experts = _int(cfg, "num_local_experts", "num_experts", "n_routed_experts")
    if not experts:
        return {}
    expert_ffn = _int(cfg, "moe_intermediate_size") or _int(cfg, "intermediate_size")
    dense_ffn = _int(cfg, "intermediate_size_mlp") or _int(cfg, "intermediate_size")
    moe_layers = layers
    if cfg.get("first_k_dense_replace"):                         # DeepSeek: first k layers dense
        moe_layers = layers - int(cfg["first_k_dense_replace"])
    elif cfg.get("interleave_moe_layer_step"):                   # Llama 4: every step-th layer MoE
        moe_layers = layers // int(cfg["interleave_moe_layer_step"])
    elif cfg.get("decoder_sparse_step"):                         # Qwen MoE
        step, dense_only = int(cfg["decoder_sparse_step"]), set(cfg.get("mlp_only_layers") or [])
        moe_layers = sum(1 for i in range(layers) if i not in dense_only and (i + 1) % step == 0)
    shared = _int(cfg, "n_shared_experts") or STYLE_FACTS.get(cfg.get("model_type"), {}).get("shared_experts")
    return {"n_experts": experts, "experts_per_token": _int(cfg, "num_experts_per_tok", "experts_per_token"),
            "ffn": expert_ffn, "dense_ffn": dense_ffn if moe_layers < layers else None,
            "moe_layers": moe_layers, "shared_experts": shared}


def _attention_pattern(cfg: dict, layers: int) -> dict:
    """Sliding/chunked window and how many layers use it (the rest attend globally)."""
    if cfg.get("attention_chunk_size"):                          # Llama 4: chunked on RoPE layers
        rope = cfg.get("no_rope_layers")
        local = sum(1 for x in rope if x) if rope else layers - layers // 4
        return {"sliding_window": int(cfg["attention_chunk_size"]), "local_layers": local}
    window = cfg.get("sliding_window")
    if not window or cfg.get("use_sliding_window") is False:
        return {}
    types = cfg.get("layer_types")
    if types:
        local = sum(1 for t in types if "sliding" in str(t))
    elif cfg.get("sliding_window_pattern"):                      # Gemma 3: every n-th layer global
        local = layers - layers // int(cfg["sliding_window_pattern"])
    else:
        local = layers                                           # Mistral 7B: every layer
    return {"sliding_window": int(window), "local_layers": local if local < layers else None}


def _mla(cfg: dict) -> dict:
    if not cfg.get("kv_lora_rank"):
        return {}
    nope, v = _int(cfg, "qk_nope_head_dim"), _int(cfg, "v_head_dim")
    if nope != v:
        raise value_error(f"MLA with qk_nope_head_dim {nope} != v_head_dim {v} is not supported")
    return {"kv_lora_rank": int(cfg["kv_lora_rank"]), "qk_rope_dim": _int(cfg, "qk_rope_head_dim"),
            "q_lora_rank": _int(cfg, "q_lora_rank"), "head_dim": nope}


def shape_row(config: dict) -> dict:
    """The architecture columns of a catalog model row (values, not yet text)."""
    cfg = text_config(config)
    model_type = cfg.get("model_type")
    if model_type not in FAMILIES:
        raise value_error(f"model_type {model_type!r} is not supported; supported: {', '.join(SUPPORTED)}")
    layers = _int(cfg, "num_hidden_layers")
    missing = [n for n in ("num_hidden_layers", "hidden_size", "num_attention_heads", "vocab_size") if not cfg.get(n)]
    if missing:
        raise value_error(f"config.json lacks {', '.join(missing)}")
    facts = STYLE_FACTS.get(model_type, {})
    extras = list(facts.get("extras", []))
    if "topk_method" in cfg and cfg["topk_method"] == "noaux_tc":       # DeepSeek-V3 score-correction bias
        extras.append("router_bias")
    row = {"family": FAMILIES[model_type], "layers": layers, "hidden": _int(cfg, "hidden_size"),
           "heads": _int(cfg, "num_attention_heads"),
           "kv_heads": _int(cfg, "num_key_value_heads") or _int(cfg, "num_attention_heads"),
           "head_dim": _int(cfg, "head_dim"), "ffn": _int(cfg, "intermediate_size"), "vocab": _int(cfg, "vocab_size"),
           "tied_embeddings": bool(cfg.get("tie_word_embeddings", False)), "gated_mlp": True, "norm": "rmsnorm",
           "attn_bias": bool(cfg.get("attention_bias", facts.get("attn_bias", False))),
           "mlp_bias": bool(cfg.get("mlp_bias", facts.get("mlp_bias", False))), "pos_embedding": "rope",
           "context_length": _int(cfg, "max_position_embeddings"), "extras": tuple(extras),
           "local_attention": None}
    row.update(_moe(cfg, layers))
    row.update(_mla(cfg))
    pattern = _attention_pattern(cfg, layers)
    if pattern:
        row.update(pattern)
        row["local_attention"] = facts.get("local_attention", "sliding")
    return row


def model_row(config: dict, name: str, source: str, aliases: tuple[str, ...] = ()) -> dict:
    """A full catalog row: the shape plus exact total and active parameter counts."""
    row = shape_row(config)
    n = counts(SimpleNamespace(**row))
    row.update(name=name, aliases=tuple(aliases), params=n["total"],
               active_params=n["active"] if row.get("n_experts") else None,
               source=source, as_of=date.today().isoformat(), note="imported from config.json by flopsheet model import")
    return row


def default_name(config: dict, path: str | Path) -> str:
    name = config.get("_name_or_path") or (config.get("text_config") or {}).get("_name_or_path")
    if name:
        return str(name).rsplit("/", 1)[-1]
    stem = Path(path).stem
    return Path(path).parent.name if stem == "config" and Path(path).parent.name else stem
