"""A catalog model row from a Hugging Face `config.json`, offline.

Handles the Llama, Mistral, Qwen2/2.5, Qwen3 (dense and MoE), Phi-3/4, Gemma 3, gpt-oss,
Llama 4 and DeepSeek-V2/V3 styles: explicit head_dim, GQA, mixture-of-experts with shared
experts and dense layers, sliding-window, chunked and local/global attention, and MLA.
Multimodal configs (Gemma 3, Llama 4, Mistral 3) are read from their `text_config`: the
row describes the language model (the vision encoder is not counted).

A config is validated with reasons before any row is made: every figure is read by the one
number rule and checked against the range of the catalog column it fills
(`private_catalog.LIMITS`: no negative layers, no NaN), flags must be true/false, lists must
be lists; the finished row then passes the private catalog's own validator (more KV heads
than heads, active above total, ... are refused), so a row `flopsheet model import --add`
writes always loads.
"""

from __future__ import annotations

import json
from datetime import date
from pathlib import Path
from types import SimpleNamespace
from typing import Any

from .. import numbers
from ..errors import FlopsheetError, quote, value_error
from ..physics.shape import counts
from . import catalog, private_catalog

# Fields some official configs leave out because transformers fills them in (defaults of
# the model type's config class), and properties of a family that no field states.
STYLE_DEFAULTS: dict[str, dict[str, Any]] = {
    "gemma3_text": {"num_attention_heads": 8, "num_key_value_heads": 4, "head_dim": 256, "vocab_size": 262208,
                    "sliding_window_pattern": 6, "max_position_embeddings": 131072, "tie_word_embeddings": True},
    "gemma2": {"tie_word_embeddings": True},
}
STYLE_FACTS: dict[str, dict[str, Any]] = {
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


MAX_BYTES = 10_000_000          # a config.json is a few kilobytes


def _refuse_constant(name: str):
    raise value_error(f"holds {name}, which is not a number JSON allows; give a finite number")


def read(path: str | Path) -> dict:
    """The config as a dict, or a one-line #VALUE! saying why it cannot be read."""
    try:
        with open(path, "rb") as f:
            data = f.read(MAX_BYTES + 1)
    except OSError as e:
        raise value_error(f"cannot read {path}: {e.strerror or e}") from None
    if len(data) > MAX_BYTES:
        raise value_error(f"{path} is larger than {MAX_BYTES // 1_000_000} MB: not a config.json")
    try:
        text = data.decode("utf-8-sig")
    except UnicodeDecodeError as e:
        raise value_error(f"{path} is not UTF-8 text (byte {e.start}): not a config.json") from None
    try:
        config = json.loads(text, parse_constant=_refuse_constant)
    except json.JSONDecodeError as e:
        raise value_error(f"{path} is not valid JSON (line {e.lineno}, column {e.colno}): {e.msg}") from None
    except RecursionError:
        raise value_error(f"{path} is nested too deeply to be a config.json") from None
    except FlopsheetError as e:
        raise value_error(f"{path} {e.message}") from None
    except ValueError as e:              # an integer of thousands of digits
        raise value_error(f"{path} holds a number too large to read ({str(e)[:80]})") from None
    if not isinstance(config, dict):
        raise value_error(f"{path} is not a config.json object")
    return config


def text_config(config: dict) -> dict:
    """The language-model part: `text_config` of a multimodal config, merged over the
    top level (where `tie_word_embeddings` often sits), then the type's defaults."""
    inner = config.get("text_config")
    if inner is not None and not isinstance(inner, dict):
        raise value_error(f"text_config must be an object, got {quote(inner)}")
    text = dict(config)
    text.pop("text_config", None)
    text.update(inner or {})
    if inner is not None and "model_type" not in inner:
        text["model_type"] = config.get("model_type")
    model_type = text.get("model_type")
    if not isinstance(model_type, str):
        raise value_error(f"model_type must be text such as \"llama\", got {quote(model_type)}")
    for k, v in STYLE_DEFAULTS.get(model_type, {}).items():
        text.setdefault(k, v)
    return text


# The catalog column each config figure fills: it must meet that column's range (the one
# range check, private_catalog.LIMITS), so an import can never write a row the catalog refuses.
COLUMN_OF = {"num_hidden_layers": "layers", "hidden_size": "hidden", "num_attention_heads": "heads",
             "num_key_value_heads": "kv_heads", "head_dim": "head_dim", "intermediate_size": "ffn",
             "moe_intermediate_size": "ffn", "intermediate_size_mlp": "dense_ffn", "vocab_size": "vocab",
             "max_position_embeddings": "context_length", "num_local_experts": "n_experts",
             "num_experts": "n_experts", "n_routed_experts": "n_experts", "num_experts_per_tok": "experts_per_token",
             "experts_per_token": "experts_per_token", "n_shared_experts": "shared_experts",
             "sliding_window": "sliding_window", "attention_chunk_size": "sliding_window",
             "kv_lora_rank": "kv_lora_rank", "q_lora_rank": "q_lora_rank", "qk_rope_head_dim": "qk_rope_dim",
             "qk_nope_head_dim": "head_dim", "v_head_dim": "head_dim"}
_STEP = numbers.Range(1, 1e7, whole=True)
OTHER_RANGES = {"first_k_dense_replace": numbers.Range(0, 1e7, whole=True), "interleave_moe_layer_step": _STEP,
                "decoder_sparse_step": _STEP, "sliding_window_pattern": _STEP}


def _int(cfg: dict, *names: str) -> int | None:
    """The first of `names` the config gives, as a whole number in its column's range."""
    for n in names:
        value = cfg.get(n)
        if value is None or value == "":
            continue
        allowed = OTHER_RANGES.get(n) or private_catalog.LIMITS["models.csv"][COLUMN_OF[n]]
        return int(numbers.check(n, value, allowed))
    return None


def _flag(cfg: dict, name: str, default: bool) -> bool:
    value = cfg.get(name, default)
    if value is None:
        return default
    if not isinstance(value, bool):
        raise value_error(f"{name} must be true or false, got {quote(value)}")
    return value


def _list(cfg: dict, name: str) -> list:
    value = cfg.get(name)
    if value is None:
        return []
    if not isinstance(value, list):
        raise value_error(f"{name} must be a list, got {quote(value)}")
    return value


def _layer_numbers(cfg: dict, name: str) -> list[int]:
    return [int(numbers.check(f"{name}[{i}]", x, numbers.Range(0, whole=True)))
            for i, x in enumerate(_list(cfg, name))]


def _per_layer(cfg: dict, name: str, layers: int) -> list:
    """A list with one entry per layer (layer_types, no_rope_layers)."""
    values = _list(cfg, name)
    if values and len(values) != layers:
        raise value_error(f"{name} has {len(values)} entries for {layers} layers (num_hidden_layers)")
    return values


def _moe(cfg: dict, layers: int) -> dict:
    """Experts, top-k, shared experts, expert and dense widths, and how many layers are MoE."""
    experts = _int(cfg, "num_local_experts", "num_experts", "n_routed_experts")
    if not experts:
        return {}
    expert_ffn = _int(cfg, "moe_intermediate_size") or _int(cfg, "intermediate_size")
    dense_ffn = _int(cfg, "intermediate_size_mlp") or _int(cfg, "intermediate_size")
    if expert_ffn is None:
        raise value_error("config.json lacks moe_intermediate_size (or intermediate_size): the expert width")
    moe_layers = layers
    if first_dense := _int(cfg, "first_k_dense_replace"):       # DeepSeek: first k layers dense
        if first_dense > layers:
            raise value_error(f"first_k_dense_replace ({first_dense}) must not exceed num_hidden_layers ({layers})")
        moe_layers = layers - first_dense
    elif step := _int(cfg, "interleave_moe_layer_step"):          # Llama 4: every step-th layer MoE
        moe_layers = layers // step
    elif step := _int(cfg, "decoder_sparse_step"):                # Qwen MoE
        dense_only = set(_layer_numbers(cfg, "mlp_only_layers"))
        moe_layers = sum(1 for i in range(layers) if i not in dense_only and (i + 1) % step == 0)
    if moe_layers < layers and dense_ffn is None:
        raise value_error("config.json lacks intermediate_size: the width of its dense layers")
    shared = _int(cfg, "n_shared_experts") or STYLE_FACTS.get(cfg["model_type"], {}).get("shared_experts")
    return {"n_experts": experts, "experts_per_token": _int(cfg, "num_experts_per_tok", "experts_per_token"),
            "ffn": expert_ffn, "dense_ffn": dense_ffn if moe_layers < layers else None,
            "moe_layers": moe_layers, "shared_experts": shared}


def _attention_pattern(cfg: dict, layers: int) -> dict:
    """Sliding/chunked window and how many layers use it (the rest attend globally)."""
    if chunk := _int(cfg, "attention_chunk_size"):               # Llama 4: chunked on RoPE layers
        rope = _per_layer(cfg, "no_rope_layers", layers)
        local = sum(1 for x in _layer_numbers(cfg, "no_rope_layers") if x) if rope else layers - layers // 4
        return {"sliding_window": chunk, "local_layers": local}
    window = _int(cfg, "sliding_window")
    if not window or not _flag(cfg, "use_sliding_window", True):
        return {}
    types = _per_layer(cfg, "layer_types", layers)
    if types:
        local = sum(1 for t in types if "sliding" in str(t))
    elif pattern := _int(cfg, "sliding_window_pattern"):          # Gemma 3: every n-th layer global
        local = layers - layers // pattern
    else:
        local = layers                                           # Mistral 7B: every layer
    return {"sliding_window": window, "local_layers": local if local < layers else None}


def _mla(cfg: dict) -> dict:
    rank = _int(cfg, "kv_lora_rank")
    if not rank:
        return {}
    nope, v = _int(cfg, "qk_nope_head_dim"), _int(cfg, "v_head_dim")
    if nope != v:
        raise value_error(f"MLA with qk_nope_head_dim {nope} != v_head_dim {v} is not supported")
    return {"kv_lora_rank": rank, "qk_rope_dim": _int(cfg, "qk_rope_head_dim"),
            "q_lora_rank": _int(cfg, "q_lora_rank"), "head_dim": nope}


def shape_row(config: dict) -> dict:
    """The architecture columns of a catalog model row (values, not yet text)."""
    cfg = text_config(config)
    model_type = cfg["model_type"]
    if model_type not in FAMILIES:
        raise value_error(f"model_type {quote(model_type)} is not supported; supported: {', '.join(SUPPORTED)}")
    needed = ["num_hidden_layers", "hidden_size", "num_attention_heads", "vocab_size"]
    if not any(cfg.get(n) not in (None, "") for n in ("num_local_experts", "num_experts", "n_routed_experts")):
        needed.append("intermediate_size")                       # a dense model's MLP width
    missing = [n for n in needed if cfg.get(n) in (None, "")]
    if missing:
        raise value_error(f"config.json lacks {', '.join(missing)}")
    layers = _int(cfg, "num_hidden_layers")
    if layers is None:                                            # checked above: never blank here
        raise value_error("config.json lacks num_hidden_layers")
    facts = STYLE_FACTS.get(model_type, {})
    extras = list(facts.get("extras", []))
    if "topk_method" in cfg and cfg["topk_method"] == "noaux_tc":       # DeepSeek-V3 score-correction bias
        extras.append("router_bias")
    row = {"family": FAMILIES[model_type], "layers": layers, "hidden": _int(cfg, "hidden_size"),
           "heads": _int(cfg, "num_attention_heads"),
           "kv_heads": _int(cfg, "num_key_value_heads") or _int(cfg, "num_attention_heads"),
           "head_dim": _int(cfg, "head_dim"), "ffn": _int(cfg, "intermediate_size"), "vocab": _int(cfg, "vocab_size"),
           "tied_embeddings": _flag(cfg, "tie_word_embeddings", False), "gated_mlp": True, "norm": "rmsnorm",
           "attn_bias": _flag(cfg, "attention_bias", facts.get("attn_bias", False)),
           "mlp_bias": _flag(cfg, "mlp_bias", facts.get("mlp_bias", False)), "pos_embedding": "rope",
           "context_length": _int(cfg, "max_position_embeddings"), "extras": tuple(extras),
           "local_attention": None}
    row.update(_moe(cfg, layers))
    row.update(_mla(cfg))
    pattern = _attention_pattern(cfg, layers)
    if pattern:
        row.update(pattern)
        row["local_attention"] = facts.get("local_attention", "sliding")
    return row


# A `modules_to_not_convert` entry (its last dotted names) and the part of the model it keeps at 16 bits
# (shape.KEEPABLE): gpt-oss's config lists model.layers.*.self_attn, model.layers.*.mlp.router,
# model.embed_tokens and lm_head; AutoAWQ's Mixtral lists a bare "gate" (block_sparse_moe.gate, the router).
KEPT_MODULES = (("self_attn", "attention"), ("mlp.router", "router"), ("gate", "router"),
                ("embed_tokens", "embeddings"), ("lm_head", "head"))

# Integer methods whose width is the config's `bits` (AutoAWQ and GPTQ write 4 or 8): the catalog format per width.
INTEGER_METHODS = ("awq", "gptq")
INTEGER_FORMATS = {4: "int4", 8: "int8"}


def _kept_part(module: str) -> str:
    for suffix, part in KEPT_MODULES:
        if module == suffix or module.endswith("." + suffix):
            return part
    raise value_error(f"quantization_config keeps {quote(module)} unconverted, a part whose size is not counted "
                      f"apart; parts counted: {', '.join(s for s, _ in KEPT_MODULES)}")


def _format_name(q: dict) -> str | None:
    """The catalog format of a quantization_config (None: the catalog has none for its method). AWQ and GPTQ
    take their width from `bits`: 4 is int4, 8 int8; another width is refused, not counted as int4."""
    method = q["quant_method"].strip().lower()
    if method in INTEGER_METHODS:
        bits = q.get("bits")
        if isinstance(bits, bool) or bits not in INTEGER_FORMATS:
            raise value_error(f"quantization_config: {method} with bits {quote(str(bits))}; the catalog has "
                              f"{method} at bits {' or '.join(str(b) for b in INTEGER_FORMATS)} only")
        return INTEGER_FORMATS[int(bits)]
    try:
        return catalog.precision_row(method).name
    except FlopsheetError:
        return None


def _default_kept(q: dict) -> tuple[str, ...]:
    """Parts transformers leaves at 16 bits whatever the config lists. Its quantizers replace nn.Linear modules
    only (replace_with_awq_linear, replace_with_fp8_linear; optimum's GPTQ convert_model replaces the linear
    layers of the decoder blocks only), so the input embedding (an nn.Embedding) is never converted. The output
    head is kept by default: HfQuantizer.get_modules_to_not_convert adds get_keys_to_not_convert(model) (the
    untied output embedding) when the config names no modules_to_not_convert, AwqQuantizer always adds it, and
    GPTQ quantizes it only with `lm_head: true` (GPTQModel's QuantizeConfig, default False). Source:
    github.com/huggingface/transformers src/transformers/quantizers/{base,quantizer_awq,quantizer_finegrained_fp8}.py
    and integrations/bitsandbytes.py get_keys_to_not_convert; huggingface/optimum optimum/gptq/quantizer.py
    (as_of 2026-11-24)."""
    method = q["quant_method"].strip().lower()
    if method == "gptq":
        head = not q.get("lm_head")
    else:
        head = method == "awq" or q.get("modules_to_not_convert") is None
    return ("embeddings", "head") if head else ("embeddings",)


def quantization_row(config: dict) -> dict:
    """The checkpoint's own format (quant_format) and the parts it keeps at 16 bits (quant_keep), from
    `quantization_config`: its quant_method when that names a catalog format (mxfp4, fp8; awq/gptq as int4 or
    int8 by `bits`), `modules_to_not_convert`, and the parts transformers never converts (_default_kept). A
    method the catalog has no format for leaves both blank: every weight then counts in the precision asked,
    as for a config without quantization."""
    q = config.get("quantization_config")
    if not isinstance(q, dict) or not isinstance(q.get("quant_method"), str):
        return {}
    fmt = _format_name(q)
    if fmt is None:
        return {}
    modules = q.get("modules_to_not_convert") or []
    if not isinstance(modules, list):
        raise value_error("quantization_config.modules_to_not_convert must be a list of module names")
    listed = [_kept_part(str(m)) for m in modules]
    return {"quant_format": fmt, "quant_keep": tuple(dict.fromkeys(listed + list(_default_kept(q))))}


def model_row(config: dict, name: str, source: str, aliases: tuple[str, ...] = ()) -> dict:
    """A full catalog row: the shape plus exact total and active parameter counts, and the checkpoint's
    own format with the parts it keeps at 16 bits (quantization_row)."""
    row = shape_row(config)
    row.update(quantization_row(config))
    _refuse_contradictions(row, ("kv_heads", "heads", "hidden", "experts_per_token", "n_experts", "local_layers",
                                 "layers"))
    n = counts(SimpleNamespace(**row))
    row.update(name=name, aliases=tuple(aliases), params=n["total"],
               active_params=n["active"] if row.get("n_experts") else None,
               source=source, as_of=date.today().isoformat(), note="imported from config.json by flopsheet model import")
    _refuse_contradictions(row)
    return row


def _refuse_contradictions(row: dict, only: tuple[str, ...] = ()) -> None:
    """The private catalog's own checks on the row (cell ranges, KV heads <= heads, active <=
    total, ...): what it refuses to load is refused here, with its reason. `only` checks the
    shape's figures before the parameter count is computed from them."""
    columns = catalog.columns("models.csv")
    text = private_catalog.row_text(row, columns)
    if only:
        text = {c: (v if c in only else "") for c, v in text.items()}
    reasons = private_catalog.row_reasons("models.csv", text, columns)
    if reasons:
        _, why = reasons[0]
        more = f" (and {len(reasons) - 1} more)" if len(reasons) > 1 else ""
        raise value_error(f"config.json describes an impossible model: {why}{more}")


def default_name(config: dict, path: str | Path) -> str:
    inner = config.get("text_config")
    name = config.get("_name_or_path") or (inner.get("_name_or_path") if isinstance(inner, dict) else None)
    if isinstance(name, str) and name.strip():
        return str(name).rsplit("/", 1)[-1]
    stem = Path(path).stem
    return Path(path).parent.name if stem == "config" and Path(path).parent.name else stem
