"""The kinds of result a worksheet function may declare: one closed table.

Every function declares its result's kind (`@worksheet(..., kind="money")`), and every column
a table function returns or a catalog field `GPU_SPEC`/`MODEL_SPEC` can answer has its kind
here (`COLUMNS`). The output guard (`guard.py`) checks results by kind, so what must never be
negative is said once per kind, not guessed from words in unit strings. A declaration naming
a kind not in `KINDS` fails when its module is imported; tests check that every column has one.
"""

from __future__ import annotations

from typing import NamedTuple

from ..catalogs.names import key


class Kind(NamedTuple):
    meaning: str
    non_negative: bool         # a negative value is a wrong answer (#NUM!), never shown


KINDS: dict[str, Kind] = {
    "money": Kind("US dollars, or dollars per hour, month, GPU or tokens", True),
    "signed_money": Kind("US dollars that may be below zero: a net present value of money in and out", False),
    "memory": Kind("bytes held or moved: GB of GPU memory, model file size", True),
    "rate": Kind("an amount per unit of time: tokens/s, TFLOPS, TB/s, GB/s", True),
    "count": Kind("how many: parameters, tokens, FLOPs, GPUs, sequences, layers, experts", True),
    "time": Kind("a duration: ms, hours, GPU-hours, days, months, years", True),
    "fraction": Kind("a share, 0.7 = 70% (above 1 only where the help says what that means)", True),
    "ratio": Kind("one quantity over another: a speed-up, FLOPs per byte, per $1,000", True),
    "power": Kind("watts", True),
    "energy": Kind("energy, or what a unit of it gives: kWh, joules per token, tokens per kWh, tokens/s per MW", True),
    "emissions": Kind("greenhouse gas as CO2-equivalent: kg, or grams per kWh", True),
    "year": Kind("a calendar year", True),
    "text": Kind("words: a name, a date, a source, a spec text, a reason", False),
    "flag": Kind("TRUE or FALSE", False),
    "field": Kind("the kind of the catalog field asked for (COLUMNS)", False),
    "table": Kind("a table: each column's kind is in COLUMNS", False),
}

_TEXT = ("name", "vendor", "family", "form_factor", "aliases", "tier", "memory_type", "sparsity", "interconnect",
         "price_as_of", "price_source", "usable_source", "usable_as_of",
         "price_kind", "system_price_kind", "system_price_as_of", "system_price_source",
         "source", "as_of", "note", "norm", "pos_embedding", "local_attention", "extras", "layout_from",
         "quant_format", "quant_keep",
         "provider", "instance", "gpu", "region", "pricing", "price_date", "status", "part", "GPU", "Tier",
         "Price_basis", "cost_unit", "price_basis", "verdict", "reason", "model", "match",
         "evidence", "to_verify")
_FLAGS = ("tied_embeddings", "gated_mlp", "attn_bias", "mlp_bias", "fits", "open_weight")
_RATES = ("bandwidth_tbs", "fp32_tflops", "tf32_tflops", "bf16_tflops", "fp16_tflops", "fp8_tflops", "int8_tops",
          "fp4_tflops", "interconnect_gbs", "BF16_TFLOPS", "FP8_TFLOPS", "Bandwidth_TBs", "Interconnect_GBs",
          "7B_FP16_tokens_per_sec", "tokens_per_sec")
_MONEY = ("price_usd", "price_low_usd", "price_high_usd", "system_price_usd", "lesson_price_usd", "usd_per_hour",
          "usd_per_gpu_hour", "Price_USD", "cost", "capex_usd", "usd_per_1m_input", "usd_per_1m_output",
          "cost_low", "cost_high")
_COUNTS = ("params", "active_params", "published_params", "published_active_params", "layers", "hidden", "heads",
           "kv_heads", "head_dim", "ffn", "vocab", "n_experts", "experts_per_token", "shared_experts", "moe_layers",
           "dense_ffn", "sliding_window", "local_layers", "kv_lora_rank", "q_lora_rank", "qk_rope_dim",
           "context_length", "head_size", "kv_head_count", "total_params", "active", "input_embedding_params",
           "output_head_params", "moe_layer_count", "expert_params", "shared_expert_params", "kept_params", "system_gpus",
           "gpu_count", "rank", "count", "gpus_per_copy", "batch", "gpus_per_system", "evidence_rows")
# Every catalog field and every table column, by exact name: its kind.
COLUMNS: dict[str, str] = {
    **dict.fromkeys(_TEXT, "text"), **dict.fromkeys(_FLAGS, "flag"), **dict.fromkeys(_RATES, "rate"),
    **dict.fromkeys(_MONEY, "money"), **dict.fromkeys(_COUNTS, "count"),
    "memory_gb": "memory", "usable_gib": "memory", "VRAM_GB": "memory", "GB": "memory", "tdp_w": "power", "TDP_W": "power",
    "launch_year": "year", "days": "time", "BW_per_kUSD": "ratio", "TFLOPS_per_kUSD": "ratio",
    # SERVING_CURVE
    "Batch": "count", "Tokens_per_sec_per_GPU": "rate", "Tokens_per_sec_per_user": "rate", "TPOT_ms": "time",
    "TTFT_ms": "time", "USD_per_1M_output_tokens": "money", "Operating_point": "flag",
    # GRID_INTENSITY_LIST
    "kind": "text", "g_co2e_per_kwh": "emissions", "year": "year", "basis": "text",
}
_BY_KEY = {key(c): kind for c, kind in COLUMNS.items()}


def declared(kind: str, where: str) -> str:
    """`kind`, if it is one of KINDS (a declaration naming another fails at import)."""
    if kind not in KINDS:
        raise ValueError(f"{where}: unknown result kind {kind!r}; one of {', '.join(KINDS)}")
    return kind


def of_column(name: str) -> str | None:
    """The kind of a table column or catalog field (matched as GPU_SPEC matches fields), or None."""
    return COLUMNS.get(name) or _BY_KEY.get(key(name))
