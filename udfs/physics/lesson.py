"""The lesson's calculations, reproduced exactly (its code is the specification).

Source: "Selecting GPUs for Training vs Inference" (the seed lesson) and its companion
note on effective cost per A100-equivalent hour. Where the lesson's printed numbers
disagree with its own code, the code wins (see docs/errata.md). The lesson
rounds only when printing; these functions return unrounded values.
"""

from __future__ import annotations

import math

from . import defaults
from ..catalogs.catalog import Precision, as_precision
from ..errors import num_error
from ..units import GB, GIB, SECONDS_PER_YEAR, TB

LESSON_PRECISIONS = ("fp32", "fp16", "bf16", "int8", "int4", "fp8")
OPTIMIZERS = ("none", "sgd", "adam", "adamw", "qlora")
MEMORY_PARTS = ("total", "weights", "gradients", "optimizer", "activations")


def model_memory_estimate(n_params: float, precision: Precision | str = "bf16", optimizer: str = "adamw",
                          activation_multiplier: float = 2.0, adapter_fraction: float = 0.01) -> dict:
    """Memory to train or serve a model, in GB of GPU memory (2**30 bytes), by part.

    Mixed precision: weights in `precision`, FP32 gradients, FP32 master copy plus two
    Adam moments (12 bytes/param); QLoRA keeps gradients and optimizer states for the
    adapter fraction only. Activations are `activation_multiplier` x weight bytes
    (0.2 x for inference, the lesson's rough KV-cache allowance)."""
    weights = n_params * as_precision(precision).bytes_per_param
    if optimizer == "none":
        gradients = 0.0
    elif optimizer == "qlora":
        gradients = n_params * adapter_fraction * 4
    else:
        gradients = n_params * 4
    optimizer_bytes = {
        "none": 0.0,
        "sgd": n_params * 4,
        "adam": n_params * 4 * 3,
        "adamw": n_params * 4 * 3,
        "qlora": int(n_params * adapter_fraction) * 4 * 3,   # the lesson truncates here
    }[optimizer]
    activations = weights * (0.2 if optimizer == "none" else activation_multiplier)
    parts = {"weights": weights, "gradients": gradients, "optimizer": optimizer_bytes,
             "activations": activations}
    parts["total"] = weights + gradients + optimizer_bytes + activations
    return {k: v / GIB for k, v in parts.items()}


def gpus_needed(memory_gb: float, capacity_gb: float = 80.0, headroom_gb: float = 5.0) -> int:
    """GPUs to hold `memory_gb`, leaving `headroom_gb` free on each (lesson: 80 - 5 = 75). All three figures are the
    lesson's "GB of GPU memory", which is GiB (model_memory_estimate divides by GIB; a GPU's usable memory is the
    GiB CUDA reports), so no conversion here: the lesson's worked examples stay exact."""
    usable = capacity_gb - headroom_gb
    if usable <= 0:
        raise num_error(f"headroom_gb ({headroom_gb:g}) must be less than the GPU's memory ({capacity_gb:g} GiB)")
    return max(1, math.ceil(memory_gb / usable))


def weight_load_seconds(bandwidth_tbs: float, model_size_gb: float, efficiency: float) -> float:
    return model_size_gb * GB / (bandwidth_tbs * TB * efficiency)


def tokens_per_sec(bandwidth_tbs: float, model_size_gb: float, batch: float = 1,
                   efficiency: float = defaults.BANDWIDTH_EFFICIENCY) -> float:
    """Bandwidth-bound decode: each step streams the whole model once and yields one token
    per sequence in the batch."""
    return batch / weight_load_seconds(bandwidth_tbs, model_size_gb, efficiency)


def token_latency_ms(bandwidth_tbs: float, model_size_gb: float, batch: float = 1,
                     efficiency: float = defaults.BANDWIDTH_EFFICIENCY) -> float:
    """The lesson's per-token latency: one weight load divided by the batch, in ms."""
    return weight_load_seconds(bandwidth_tbs, model_size_gb, efficiency) / batch * 1000


def cost_per_1m_tokens(hardware_cost_usd: float, utilization: float, throughput_tokens_per_sec: float,
                       lifetime_years: float = 3.0, usd_per_kwh: float = 0.12,
                       power_w: float = 400, n_gpus: int = 1) -> dict:
    """Owned-hardware cost per million tokens: straight-line amortisation plus power at TDP,
    spread over the tokens produced at the given utilisation."""
    lifetime_seconds = lifetime_years * SECONDS_PER_YEAR
    hardware_per_sec = hardware_cost_usd / lifetime_seconds
    power_per_sec = power_w * n_gpus / (1000 * 3600) * usd_per_kwh
    effective = throughput_tokens_per_sec * utilization
    return {
        "hardware": hardware_per_sec / effective * 1e6,
        "power": power_per_sec / effective * 1e6,
        "total": (hardware_per_sec + power_per_sec) / effective * 1e6,
        "annual_tokens": effective * SECONDS_PER_YEAR,
    }


def effective_hourly_cost(usd_per_hour: float, speedup: float) -> float:
    """Second seed: price of one "A100-equivalent" hour = hourly rate / speed-up."""
    return usd_per_hour / speedup


def job_cost(usd_per_hour: float, hours: float) -> float:
    return usd_per_hour * hours


def tokens_per_sec_needed(requests_per_minute: float, tokens_per_request: float,
                          headroom: float = defaults.HEADROOM) -> float:
    """Q4: 1,000 req/min x 200 tokens = 3,333 tok/s; +20% burst headroom = 4,000."""
    return requests_per_minute / 60 * tokens_per_request * (1 + headroom)


def instances_needed(tokens_per_sec_required: float, tokens_per_sec_per_instance: float) -> int:
    return math.ceil(tokens_per_sec_required / tokens_per_sec_per_instance - 1e-9)


def ridge_point(peak_tflops: float, bandwidth_tbs: float) -> float:
    """Roofline ridge point in FLOPs per byte: peak compute / memory bandwidth."""
    return peak_tflops / bandwidth_tbs


def matmul_intensity(tokens: float, d_in: float, d_out: float, bytes_per_param: float = 2.0) -> float:
    """Q5's arithmetic intensity of one weight matrix applied to `tokens` activations:
    2 x tokens x d_in x d_out FLOPs over the weight bytes loaded once."""
    return 2 * tokens * d_in * d_out / (d_in * d_out * bytes_per_param)


def gpu_hours(years: float, utilization: float) -> float:
    """Q6: 3 years x 8,760 h x 0.70 = 18,396 GPU-hours."""
    return years * SECONDS_PER_YEAR / 3600 * utilization


def breakeven_hours(hardware_cost_usd: float, cloud_usd_per_hour: float, owned_usd_per_hour: float = 0.0) -> float:
    """Hours of use after which renting has cost as much as buying (plus running) the GPU."""
    saving = cloud_usd_per_hour - owned_usd_per_hour
    if saving <= 0:
        raise num_error("renting is never dearer than owning at these rates: the cloud rate must exceed the owned running cost")
    return hardware_cost_usd / saving
