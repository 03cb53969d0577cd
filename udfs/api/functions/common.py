"""Argument declarations shared by several worksheet functions (declared once here).

Names follow the one-name-per-concept table (n_gpus, batch, context, usd_per_gpu_hour,
hardware_cost_usd, power_w, usd_per_kwh, ...); each concept has one default."""

from dataclasses import replace

from ...catalogs.catalog import PRICE_SETS, PRICINGS
from ...catalogs.engines import DEFAULT_ENGINE_TEXT
from ...physics import defaults
from ...physics.lesson import MEMORY_PARTS, OPTIMIZERS
from ..registry import REQUIRED, Arg

PRECISIONS_TEXT = "fp32, fp16, bf16, fp8, int8, int4, fp4, nf4, q4_0, q4_k_m, q5_k_m, q8_0"


def positive(name: str, help: str, unit: str = "", default=None, **kw) -> Arg:
    """A number that must be > 0 (the most common argument shape)."""
    extra = {"default": default} if default is not None else {}
    return Arg(name, "number", help, unit, min=0, min_open=True, **extra, **kw)


def required(arg: Arg, help: str | None = None) -> Arg:
    """The same argument without a default (where the function cannot guess it)."""
    return replace(arg, default=REQUIRED, help=help or arg.help)


# --- catalog rows ------------------------------------------------------------------------
MODEL = Arg("model", "model", "Catalog model name or Hugging Face id (its architecture is used), e.g. \"Llama 2 70B\"")
GPU = Arg("gpu", "gpu", "GPU name from the catalog, e.g. \"H100\" (= H100 SXM 80GB), \"RTX 4090\" (vendor words, "
          "case and spacing are ignored)")
PRECISION = Arg("precision", "precision", f"Weight / tensor number format: {PRECISIONS_TEXT}", default="bf16")
KV_PRECISION = Arg("kv_precision", "precision", "KV-cache number format", default="bf16")
MODEL_OR_PARAMS = Arg("model_or_params", "model_or_params", "Catalog model name (active parameters for MoE) or a "
                      "parameter count (7e9, \"7B\")", "parameters", min=0, min_open=True)
PARAMS = Arg("model_or_params", "params", "Parameter count (7e9 or \"7B\") or a catalog model name (its total "
             "parameters)", "parameters",
             min=0, min_open=True)
GPU_OR_BANDWIDTH = Arg("gpu_or_bandwidth", "gpu_or_bandwidth", "GPU name (catalog bandwidth) or memory bandwidth",
                       "TB/s", min=0, min_open=True)

# --- serving shape -----------------------------------------------------------------------
BATCH = Arg("batch", "number", "Sequences served (decoded) together", "sequences", default=1, min=1)
N_GPUS = Arg("n_gpus", "integer", "GPUs working as one (tensor parallel: GPUs holding one copy of the model)", "GPUs",
             default=1, min=1)
CONTEXT = Arg("context", "number", "Tokens held per sequence in the KV cache (prompt + output so far)", "tokens",
              default=defaults.CONTEXT_TOKENS, min=1)
PROMPT = Arg("prompt_tokens", "number", "Prompt length", "tokens", default=defaults.PROMPT_TOKENS, min=1)
OUTPUT = Arg("output_tokens", "number", "Tokens generated per request", "tokens", default=defaults.OUTPUT_TOKENS,
             min=1)
HEADROOM = Arg("headroom", "number", "Burst headroom on top of the average traffic (\"20%\" accepted)", "fraction",
               default=defaults.HEADROOM, min=0)
ENGINE = Arg("engine", "engine", "Inference engine: vLLM, SGLang, TensorRT-LLM, TGI, llama.cpp, MLC-LLM, ExLlamaV2, "
             "transformers or DeepSpeed (names matched loosely: \"trtllm\", \"llamacpp\", \"hf\"; a version picks "
             "its profile: \"vLLM 0.5.4\" or \"vllm-v0\" is vLLM's V0 engine; a release is three or four numbers "
             "(\"vLLM 0.10\" names a series, whose releases differ: #VALUE!); a release the named profile does not "
             "describe, or newer than the engine's newest, is #VALUE!). Blank: "
             f"{DEFAULT_ENGINE_TEXT}", default="")
USABLE = Arg("usable_fraction", "number", "Share of GPU memory the engine may use; blank: the engine's own (vLLM 0.33.0 "
             "0.92 of all memory, 0.9 to 0.19.1; TensorRT-LLM 0.9 of what the weights leave)", "fraction", default="",
             min=0, min_open=True, max=1)

SEQ_LEN = Arg("seq_len", "number", "Tokens per sequence", "tokens", default=defaults.SEQ_LEN, min=1)

# --- evidence (udfs/physics/evidence.py; docs/accuracy.md, Evidence per estimate) -----------
ESTIMATE = Arg("estimate", "choice", "point (default), low or high: the low and high value of the result from the "
               "measured out-of-sample error of its regime (P10 / P90; wider where nothing was measured: "
               "ESTIMATE_EVIDENCE says which). low <= point <= high; for a GPU count or a cost the pessimistic end "
               "is high, for a throughput it is low", choices=("point", "low", "high"), default="point")

# --- memory estimator --------------------------------------------------------------------
OPTIMIZER = Arg("optimizer", "choice", "Optimizer (none = inference)", choices=OPTIMIZERS, default="adamw")
PART = Arg("part", "choice", "Which part of the memory to return", choices=MEMORY_PARTS, default="total")
MEMORY_UNIT = Arg("unit", "choice", "GiB = GB of GPU memory (2^30 bytes, as GPU sizes are stated); GB = 10^9 bytes",
                  choices=("GiB", "GB"), default="GiB")
EFFICIENCY = Arg("efficiency", "number", "Fraction of peak memory bandwidth achieved", "fraction",
                 default=defaults.BANDWIDTH_EFFICIENCY, min=0, min_open=True, max=1)
MODEL_SIZE_GB = Arg("model_size_gb", "number", "Bytes read per decode step: the model file size", "GB (10^9 bytes)",
                    min=0, min_open=True)

# --- money and time ----------------------------------------------------------------------
UTILIZATION = Arg("utilization", "number", "Fraction of the time the GPU does useful work", "fraction",
                  min=0, min_open=True, max=1)
USD_PER_HOUR = Arg("usd_per_hour", "number", "Price per hour of what is rented: an instance or one GPU", "$/hour",
                   min=0)
USD_PER_GPU_HOUR = Arg("usd_per_gpu_hour", "number", "Price of one GPU-hour", "$/GPU-hour", min=0)
CLOUD_USD_PER_GPU_HOUR = positive("cloud_usd_per_gpu_hour", "Cloud price per GPU-hour", "$/GPU-hour")
HARDWARE_COST_USD = Arg("hardware_cost_usd", "number", "Purchase price per GPU (with its share of the server)", "$",
                        min=0)
LIFETIME_YEARS = positive("lifetime_years", "Depreciation / financing period", "years", default=3)
POWER_W = Arg("power_w", "number", "Average power per GPU, drawn every hour (TDP is the lesson's choice)", "W",
              default=400, min=0)
USD_PER_KWH = Arg("usd_per_kwh", "number", "Electricity price", "$/kWh", default=0.12, min=0)
PRICING = Arg("pricing", "choice", "Pricing type", choices=PRICINGS, default="on-demand")
PRICE_SET = Arg("price_set", "choice", "Which prices: current (newest sourced), lesson (the lesson's figures) or historical",
                choices=PRICE_SETS, default="current")
SPARE = Arg("spare", "number", "Spare model copies on top of those the traffic needs, for failures and rolling "
            "updates: a whole number (default 1: N+1) or a share below 100% such as \"10%\" (rounded up to whole "
            "copies)", "copies or share", default=defaults.SPARE, min=0)
MAX_LATENCY = positive("max_latency_s", "Latency target for a whole request at the percentile: the wait for a free "
                       "slot (queueing), time to first token and the other tokens (blank: none)", "s", default="")
