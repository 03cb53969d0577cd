"""Serving estimates from the architecture: memory (weights + KV cache + overhead, per GPU
under tensor parallelism), what fits, and decode / prefill speed from a roofline.

Decode step time = max(compute time, memory time) + fixed per-layer overhead, where
  memory time  = (weight bytes read + KV-cache bytes read) / (bandwidth x achievable fraction)
  compute time = 2 x active parameters x batch / (peak tensor FLOP/s x achievable fraction)
and every quantity is per GPU when the model is split over n GPUs (tensor parallel); under
tensor parallelism each layer adds two all-reduces (a latency plus the activations moved over
the GPU link), which matters for prefill of long prompts.
"""

from __future__ import annotations

import math
from dataclasses import replace

from . import calibration as cal
from . import catalog, shape
from .arch import kv_bytes_per_layer_token, kv_cache_bytes
from .catalog import Gpu, Model, Precision, as_precision
from .errors import num_error, value_error
from .units import GIB, TERA, TB

KV_PRECISION = "bf16"       # KV cache format where a function has no kv_precision argument (16-bit)


def total_params(model: Model) -> float:
    return model.params


def active_params(model: Model) -> float:
    return model.active_params or model.params


def embedding_params(model: Model) -> float:
    return (model.vocab or 0) * (model.hidden or 0)


def weight_bytes(model: Model, precision: Precision | str) -> float:
    """Bytes of all weights in memory at the given format."""
    return model.params * as_precision(precision).bytes_per_param


def streamed_params(model: Model, batch: float) -> float:
    """Parameters read from memory for one decode step of `batch` sequences.

    The input embedding is a row lookup, not a matrix read, when it is not tied to the
    output head. For mixture-of-experts, only the experts the batch routes to are read:
    with E experts and k per token, a batch touches E x (1 - (1 - k/E)^batch) of them."""
    params = model.params - (0 if model.tied_embeddings else embedding_params(model))
    if model.is_moe and model.active_params:
        experts, k = model.n_experts, model.experts_per_token or 1
        expert_params = (model.params - model.active_params) / (experts - k)   # per expert, all MoE layers
        touched = experts * (1 - (1 - k / experts) ** batch)
        params -= (experts - touched) * expert_params
    return params


def _is_quantized(precision: Precision) -> bool:
    return precision.kind in ("gguf",) or (precision.kind == "int" and precision.bits_per_param < 8)


def bandwidth_fraction(gpu: Gpu, precision: Precision) -> float:
    kind = "HBM" if "HBM" in gpu.memory_type.upper() else "GDDR"
    fraction = cal.DECODE_BANDWIDTH_FRACTION[kind]
    return fraction * (cal.QUANTIZED_DECODE_PENALTY if _is_quantized(precision) else 1.0)


def _peak_flops(gpu: Gpu, precision: Precision, needed_for: str = "this estimate") -> float:
    """Dense tensor peak for the format (16-bit when the format has no figure of its own).
    A GPU with no published tensor figure is not guessed from its FP32 vector rate."""
    tflops = gpu.tensor_tflops(precision) or gpu.bf16_tflops or gpu.fp16_tflops
    if not tflops:
        raise value_error(f"{needed_for} needs the GPU's dense tensor TFLOPS, and there is no published figure for "
                          f"{gpu.name}; give it with GPU_DEFINE(memory_gb, bandwidth_tbs, bf16_tflops, ...)")
    return tflops * TERA


def has_tensor_peak(gpu: Gpu, precision: Precision) -> bool:
    return bool(gpu.tensor_tflops(precision) or gpu.bf16_tflops or gpu.fp16_tflops)


def with_layout(model: Model) -> Model:
    """A model known only by its size borrows the layout (layers, KV heads, vocabulary) of
    the catalog's dense model nearest in size, for the estimates that need only the size."""
    if shape.has_shape(model):
        return model
    lender = shape.nearest_dense(model.params, catalog.models())
    return replace(lender, name=model.name, aliases=(), params=model.params, active_params=None,
                   published_params=None, published_active_params=None, note=f"layout of {lender.name}")


def _compute_fraction(precision: Precision, table: dict[int, float]) -> float:
    """Achievable share of the peak of the tensor-core format the matrix products run in.
    Weight-only formats (int4/GPTQ/AWQ, nf4, llama.cpp GGUF) are dequantised and multiplied
    in 16-bit, so they reach the 16-bit share; fp8/int8 and fp4 run on 8- and 4-bit tensor
    cores, whose higher peaks are harder to approach."""
    column = precision.tensor_column or ""
    if column.startswith(("fp16", "bf16", "fp32", "tf32")):
        return table[16]
    bits = precision.bits_per_param
    return table[16] if bits >= 16 else (table[8] if bits >= 8 else table[4])


def _overhead_s(model: Model, gpu: Gpu, n_gpus: int, tokens: float = 1) -> float:
    """Fixed per-layer time (kernel launches), plus under tensor parallelism two all-reduces
    per layer: a latency each, and the activations moved, tokens x hidden x 2 bytes, of which
    a ring all-reduce sends 2(n-1)/n over each GPU's link (one direction: half the catalog's
    bidirectional figure) at the achievable share of it."""
    per_layer = cal.PER_LAYER_OVERHEAD_US * 1e-6
    if n_gpus > 1:
        link = "nvlink" if gpu.nvlink_class else "pcie"
        one_way = (gpu.interconnect_gbs or 64) / 2 * 1e9 * cal.ALLREDUCE_BANDWIDTH_FRACTION
        moved = 2 * (n_gpus - 1) / n_gpus * tokens * model.hidden * 2
        per_layer += 2 * (cal.ALLREDUCE_US[link] * 1e-6 + moved / one_way)
    return model.layers * per_layer


def decode_step_seconds(model: Model, gpu: Gpu, precision: Precision | str = "bf16", batch: float = 1,
                        context: float = 1024, n_gpus: int = 1, kv_precision: Precision | str = KV_PRECISION) -> float:
    """Seconds for one decode step producing one token for each of `batch` sequences.
    One sequence reads every weight for 2 FLOPs each: memory-bound on any accelerator, so a
    GPU without a published TFLOPS figure (Apple) is still estimated at batch 1."""
    model = with_layout(model)
    precision = as_precision(precision)
    bytes_read = (streamed_params(model, batch) * precision.bytes_per_param
                  + kv_cache_bytes(model, context, batch, kv_precision))
    memory = bytes_read / n_gpus / (gpu.bandwidth_tbs * TB * bandwidth_fraction(gpu, precision))
    compute = 0.0
    if batch > 1 or has_tensor_peak(gpu, precision):
        compute = 2 * active_params(model) * batch / n_gpus / (
            _peak_flops(gpu, precision, f"decoding a batch of {batch:g}")
            * _compute_fraction(precision, {16: cal.DECODE_COMPUTE_FRACTION, 8: cal.DECODE_COMPUTE_FRACTION,
                                            4: cal.DECODE_COMPUTE_FRACTION}))
    return max(memory, compute) + _overhead_s(model, gpu, n_gpus, batch)


def decode_tokens_per_sec(model, gpu, precision="bf16", batch=1, context=1024, n_gpus=1,
                          kv_precision=KV_PRECISION) -> float:
    """Generated tokens per second, summed over the batch (and the GPUs serving one copy)."""
    return batch / decode_step_seconds(model, gpu, precision, batch, context, n_gpus, kv_precision)


def prefill_seconds(model: Model, gpu: Gpu, precision: Precision | str = "bf16", prompt_tokens: float = 1024,
                    batch: float = 1, n_gpus: int = 1) -> float:
    """Time to process prompts: 2 x active params FLOPs per token plus causal attention
    (2 x layers x tokens^2 x heads x head_dim), at the achievable fraction of peak; never
    faster than reading the weights once."""
    model = with_layout(model)
    precision = as_precision(precision)
    head_dim = model.head_dim or model.hidden // model.heads
    tokens = prompt_tokens * batch
    flops = 2 * active_params(model) * tokens + 2 * model.layers * model.heads * head_dim * prompt_tokens ** 2 * batch
    compute = flops / n_gpus / (_peak_flops(gpu, precision, "prefill") * _compute_fraction(precision, cal.PREFILL_COMPUTE_FRACTION))
    memory = weight_bytes(model, precision) / n_gpus / (gpu.bandwidth_tbs * TB * bandwidth_fraction(gpu, precision))
    return max(compute, memory) + _overhead_s(model, gpu, n_gpus, tokens)


def serving_memory_gib(model: Model, precision: Precision | str, batch: float = 1, context: float = 4096,
                       kv_precision: Precision | str = KV_PRECISION, n_gpus: int = 1) -> dict[str, float]:
    """Per-GPU memory in GiB: weights and KV cache split over n GPUs, plus runtime overhead."""
    weights = weight_bytes(model, precision) / n_gpus / GIB
    kv = kv_cache_bytes(model, context, batch, kv_precision) / n_gpus / GIB
    return {"weights": weights, "kv_cache": kv, "overhead": cal.SERVING_OVERHEAD_GIB,
            "total": weights + kv + cal.SERVING_OVERHEAD_GIB}


def usable_gib(gpu: Gpu, fraction: float = cal.USABLE_MEMORY_FRACTION) -> float:
    return gpu.memory_gb * fraction


def max_batch(model, gpu, precision, context, n_gpus=1, kv_precision=KV_PRECISION,
              fraction=cal.USABLE_MEMORY_FRACTION) -> int:
    """Sequences of `context` tokens whose KV cache fits beside the weights (0 if none)."""
    free = _free_for_kv(model, gpu, precision, n_gpus, fraction)
    per_sequence = kv_cache_bytes(model, context, 1, kv_precision) / n_gpus / GIB
    return max(0, math.floor(free / per_sequence))


def max_context(model, gpu, precision, batch=1, n_gpus=1, kv_precision=KV_PRECISION,
                fraction=cal.USABLE_MEMORY_FRACTION) -> int:
    """Tokens per sequence that fit for `batch` sequences, capped at the model's context length
    (a sliding-window model holds at most its window, so it is then limited only by that cap)."""
    free = _free_for_kv(model, gpu, precision, n_gpus, fraction)
    per_layer_token = kv_bytes_per_layer_token(model, kv_precision) * batch / n_gpus / GIB
    tokens = shape.max_context_for(model, max(0.0, free) / per_layer_token)
    limit = model.context_length or tokens
    if math.isinf(limit):
        raise num_error(f"every layer of {model.name} holds only its window: give the model's context length")
    return int(min(math.floor(tokens), limit))


def _free_for_kv(model, gpu, precision, n_gpus, fraction) -> float:
    return usable_gib(gpu, fraction) - weight_bytes(model, precision) / n_gpus / GIB - cal.SERVING_OVERHEAD_GIB


def check_gpus(n_gpus: int) -> int:
    if n_gpus < 1:
        raise num_error("n_gpus must be >= 1")
    return n_gpus
