"""Serving memory from the architecture: weights + KV cache + overhead, per GPU under tensor
parallelism, and what fits. Speed (decode, prefill, throughput under load) is the
serving-capacity model in `udfs.physics.capacity`, with the engine profiles of `udfs.catalogs.engines`.
"""

from __future__ import annotations

import math

from . import calibration as cal
from . import arch, defaults, moe, shape
from .arch import kv_bytes_per_layer_token, kv_cache_bytes
from ..catalogs.catalog import Gpu, Model, Precision, as_precision
from ..errors import num_error
from ..units import GIB, TERA

KV_PRECISION = "bf16"       # KV cache format where a function has no kv_precision argument (16-bit)


def streamed_bytes(model: Model, precision: Precision | str, batch: float) -> float:
    """Weight bytes one decode step of `batch` sequences reads (streamed_params in `precision`, the
    checkpoint's 16-bit parts at 16 bits: arch.kept_streamed)."""
    return streamed_params(model, batch) * as_precision(precision).bytes_per_param \
        + arch.kept_streamed(model, precision) * arch.kept_extra_bytes(precision)


def streamed_params(model: Model, batch: float) -> float:
    """Parameters read from memory for one decode step of `batch` sequences.

    The input embedding is a row lookup, not a matrix read, when it is not tied to the
    output head. For mixture-of-experts, only the experts the batch routes to are read:
    with E experts and k per token, a batch touches E x (1 - (1 - k/E)^batch) of them
    (moe.touched_experts)."""
    params = model.total_params - arch.lookup_params(model)
    per_expert, experts, k = moe.routed(model)
    if per_expert:
        params -= (experts - moe.touched_experts(experts, k, batch)) * per_expert
    return params


def peak_flops(gpu: Gpu, precision: Precision | str | None, needed_for: str = "this estimate") -> tuple[float, int]:
    """Dense FLOP/s a format's products really get on the GPU (None: attention, on the 16-bit
    units), and the width of the units they run on (Gpu.tensor_peak: weight-only on 16-bit units
    where the GPU has none for the format; a figure the catalog lacks is #N/A naming it)."""
    peak = gpu.sixteen_bit_peak(needed_for) if precision is None else gpu.tensor_peak(precision, needed_for)
    return peak.tflops * TERA, peak.bits


def serving_memory_gib(model: Model, precision: Precision | str, batch: float = 1, context: float = defaults.CONTEXT_TOKENS,
                       kv_precision: Precision | str = KV_PRECISION, n_gpus: int = 1) -> dict[str, float]:
    """Per-GPU memory in GiB: weights and KV cache split over n GPUs, plus runtime overhead."""
    weights = arch.weight_bytes(model, precision) / n_gpus / GIB
    kv = kv_cache_bytes(model, context, batch, kv_precision) / n_gpus / GIB
    return {"weights": weights, "kv_cache": kv, "overhead": cal.SERVING_OVERHEAD_GIB,
            "total": weights + kv + cal.SERVING_OVERHEAD_GIB}


def max_context(model: Model, free_gib: float, batch: float = 1, per_gpu: float = 1.0,
                kv_precision: Precision | str = KV_PRECISION) -> int:
    """Tokens per sequence whose KV cache, for `batch` sequences, fits in `free_gib` per GPU (what the
    engine's memory rules leave: capacity.kv_budget_gib; `per_gpu` the share of a sequence's cache
    each GPU holds: capacity.kv_share), capped at the model's context length (a sliding-window
    model holds at most its window, so it is then limited only by that cap)."""
    per_layer_token = kv_bytes_per_layer_token(model, kv_precision) * batch * per_gpu / GIB
    tokens = shape.max_context_for(model, max(0.0, free_gib) / per_layer_token)
    limit = model.context_length or tokens
    if math.isinf(limit):
        raise num_error(f"every layer of {model.name} holds only its window: give the model's context length")
    return int(min(math.floor(tokens), limit))


def check_gpus(n_gpus: int) -> int:
    if n_gpus < 1:
        raise num_error("n_gpus must be >= 1")
    return n_gpus
