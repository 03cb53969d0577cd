"""Argument declarations shared by several worksheet functions (declared once here)."""

from ..catalog import PRICE_SETS, PRICINGS
from ..lesson import MEMORY_PARTS, OPTIMIZERS
from ..registry import Arg

PARAMS = Arg("params", "params", "Parameter count (7e9 or \"7B\") or a catalog model name", "parameters",
             min=0, min_open=True)
PRECISION = Arg("precision", "precision", "Weight number format: fp32, fp16, bf16, fp8, int8, int4, fp4, nf4, q4_0, q4_k_m, q5_k_m, q8_0",
                default="bf16")
OPTIMIZER = Arg("optimizer", "choice", "Optimizer (none = inference)", choices=OPTIMIZERS, default="adamw")
PART = Arg("part", "choice", "Which part of the memory to return", choices=MEMORY_PARTS, default="total")
UTILIZATION = Arg("utilization", "number", "Fraction of the time the GPU does useful work", "fraction",
                  min=0, min_open=True, max=1)
EFFICIENCY = Arg("efficiency", "number", "Fraction of peak memory bandwidth achieved", "fraction",
                 default=0.7, min=0, min_open=True, max=1)
BATCH = Arg("batch_size", "number", "Sequences decoded together", "sequences", default=1, min=1)
GPU_OR_BANDWIDTH = Arg("gpu_or_bandwidth", "gpu_or_bandwidth", "GPU name (catalog bandwidth) or memory bandwidth",
                       "TB/s", min=0, min_open=True)
MODEL_SIZE_GB = Arg("model_size_gb", "number", "Bytes read per decode step: the model file size", "GB (10^9 bytes)",
                    min=0, min_open=True)
PRICING = Arg("pricing", "choice", "Pricing type", choices=PRICINGS, default="on-demand")
PRICE_SET = Arg("price_set", "choice", "Which prices: current (newest sourced), lesson (the lesson's figures) or historical",
                choices=PRICE_SETS, default="current")
HOURLY_RATE = Arg("hourly_rate", "number", "Price per hour of the instance or GPU", "$/hour", min=0)
MEMORY_UNIT = Arg("unit", "choice", "GiB = GB of GPU memory (2^30 bytes, as GPU sizes are stated); GB = 10^9 bytes",
                  choices=("GiB", "GB"), default="GiB")


def positive(name: str, help: str, unit: str = "", default=None, **kw) -> Arg:
    """A number that must be > 0 (the most common argument shape)."""
    extra = {"default": default} if default is not None else {}
    return Arg(name, "number", help, unit, min=0, min_open=True, **extra, **kw)
