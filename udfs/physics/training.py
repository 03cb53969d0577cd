"""Training compute from the architecture: 6·N·D to GPU-hours, days and cost, and scale-out across GPUs
(layout, global batch, gradient synchronisation overlapped with the passes). Training memory (ZeRO, activations,
LoRA/QLoRA, the fit check) is in training_memory.py."""

from __future__ import annotations

import math
from dataclasses import dataclass

from . import calibration as cal, collectives, defaults, training_efficiency, training_memory
from ..catalogs.catalog import Gpu, Model, Precision, as_precision
from ..errors import value_error
from ..words import plural
from ..units import TERA


def training_flops(params: float, tokens: float, full_recompute: bool = False) -> float:
    """6·N·D (forward 2, backward 4 FLOPs per parameter per token); 8·N·D with full recompute."""
    return (8 if full_recompute else 6) * params * tokens


def training_gpu_hours(params: float, tokens: float, gpu: Gpu, mfu: float,
                       precision: Precision | str = "bf16", flops_per_param: int = 6) -> float:
    """GPU-hours of 6·N·D (4·N·D for LoRA/QLoRA: no weight gradients for the frozen base) at `mfu` of
    the precision's dense tensor peak (the MFU: the caller's, or the training-efficiency table's,
    training_efficiency.for_gpu)."""
    peak = gpu.tensor_peak(precision, "training time", weight_only=False).tflops
    return flops_per_param * params * tokens / (peak * TERA * mfu) / 3600


# How the weights are trained: every weight (pre-training, a full fine-tune), or LoRA adapters on a frozen base
# in 16-bit (lora) or NF4 (qlora).
METHODS = ("full", "lora", "qlora")


def method_flops(method: str, checkpointing: bool = True) -> int:
    """Training FLOPs a parameter a token, as executed: 6 for a full fine-tune (forward 2, backward 4: the
    activation and the weight gradients); for LoRA / QLoRA 4 (the frozen base needs only the activation
    gradients) plus, with gradient checkpointing (how the picker and LORA_MEMORY_GB size a LoRA job), the
    recomputed forward, 2: 6. The adapters' own 6 x r(d_in + d_out), about 0.3% of the base at rank 16, is not
    added. (A full fine-tune's 6 counts no recompute: its measured MFU is on that count.)"""
    if method not in METHODS:
        raise value_error(f"unknown training method {method!r}: give {', '.join(METHODS)}")
    return 6 if method == "full" else 4 + (2 if checkpointing else 0)


def lora_sharding(model: Model, gpu: Gpu, method: str) -> str:
    """How a LoRA / QLoRA job spreads over its GPUs, as the picker sizes its memory (training_memory.lora_min_gpus):
    ddp (a whole replica a GPU) where one GPU holds it, else FSDP / ZeRO-3 across all of them."""
    n, _ = training_memory.lora_min_gpus(model, gpu, training_memory.base_bits(method))
    return "ddp" if n == 1 else "fsdp"


# ---------------------------------------------------------------- a job on a cluster of a given size
@dataclass(frozen=True)
class ClusterRun:
    """A training job on `n_gpus`, as GPU_RANK, the report and TRAINING_GPU_HOURS(..., n_gpus) size it."""
    n_gpus: int
    mfu: training_efficiency.Efficiency   # the compute MFU (its basis) before the all-reduce
    compute_gpu_hours: float               # the compute alone at that MFU (one GPU's speed x count)
    scale_out: float                       # share of the time computing at n_gpus (scale_out_efficiency)
    plan: Layout | None = None             # the layout it was sized on (None: one GPU)
    method: str = "full"                   # full, lora or qlora (METHODS)
    sharding: str = ""                     # LoRA / QLoRA: ddp or fsdp (lora_sharding); "" for full

    @property
    def gpu_hours(self) -> float:
        return self.compute_gpu_hours / self.scale_out

    def basis(self) -> str:
        if self.method != "full":
            return (f"{self.mfu.basis}; {self.method} with {self.sharding.upper()} at {plural(self.n_gpus, 'GPU')}: "
                    f"{sync_words(self.sharding)} leave {self.scale_out:.1%} of the time computing (adapter_sync)")
        on = "" if self.plan is None else (f" (TP{self.plan.tp} PP{self.plan.pp} DP{self.plan.dp}, "
                                           f"{global_batch_tokens(self.n_gpus):,.0f} tokens a step)")
        return (f"{self.mfu.basis}; the exposed gradient synchronisation at {plural(self.n_gpus, 'GPU')}{on} leaves "
                f"{self.scale_out:.1%} of the time computing (scale_out_efficiency)")


def cluster_mfu(gpu: Gpu, model: Model, precision: Precision | str, scope: str) -> training_efficiency.Efficiency:
    """The compute MFU of a job whose cluster size is modelled (its all-reduce added by on_cluster): scope steady
    the steady-state figure, scope run that x TRAINING_GOODPUT (training_efficiency.for_gpu)."""
    return training_efficiency.for_gpu(gpu, model, as_precision(precision).name, scope)


def on_cluster(model: Model, gpu: Gpu, tokens: float, n_gpus: int, precision: Precision | str = "bf16",
               scope: str = "run", mfu: float | None = None, method: str = "full") -> ClusterRun:
    """The one formula for the GPU-hours of a job on `n_gpus`: FLOPs (method_flops a parameter a token) at the
    compute MFU (`mfu`, else cluster_mfu's), divided by the data-parallel scale-out efficiency at that count
    (the gradient synchronisation of a full fine-tune, or a LoRA / QLoRA job's adapter_sync)."""
    found = cluster_mfu(gpu, model, precision, scope) if mfu is None else \
        training_efficiency.Efficiency(mfu, f"the MFU given, {mfu:g}", False)
    compute = training_gpu_hours(model.active, tokens, gpu, found.mfu, precision, method_flops(method))
    if method != "full":
        sharding = lora_sharding(model, gpu, method)
        eff = scale_out_efficiency(model, gpu, n_gpus, precision, mfu, method=method, sharding=sharding)
        return ClusterRun(n_gpus, found, compute, eff, None, method, sharding)
    plan = layout(model, gpu, n_gpus) if n_gpus > 1 else None
    return ClusterRun(n_gpus, found, compute, scale_out_efficiency(model, gpu, n_gpus, precision, mfu, plan=plan), plan)


# ---------------------------------------------------------------- scale-out: layout, batch, gradient sync
@dataclass(frozen=True)
class Layout:
    """How n GPUs split a training job: tensor parallel inside a server, pipeline stages across servers,
    and data-parallel replicas of that model-parallel group (each replica reduces its share of gradients)."""
    tp: int
    pp: int
    dp: int

    @property
    def group(self) -> int:
        return self.tp * self.pp


def layout(model: Model, gpu: Gpu, n_gpus: int) -> Layout:
    """The smallest model-parallel group (tensor parallel up to a server, then pipeline stages, powers of two)
    that keeps each GPU at or below calibration.MODEL_PARALLEL_PARAMS_PER_GPU parameters, as the Megatron-LM
    and Llama 3 layouts do; never more GPUs than the job has."""
    server = int(gpu.need("system_gpus", "training across GPUs"))
    group = 1
    while model.total_params / group > cal.MODEL_PARALLEL_PARAMS_PER_GPU and group < n_gpus:
        group *= 2
    group = min(group, n_gpus)
    tp = min(group, server)
    return Layout(tp, max(1, group // tp), max(1, n_gpus // group))


def global_batch_tokens(n_gpus: int) -> float:
    """Tokens in one optimizer step on n GPUs: GLOBAL_BATCH_TOKENS (4M) on a modest cluster, grown to keep
    MIN_TOKENS_PER_GPU a GPU as large runs do, up to MAX_GLOBAL_BATCH_TOKENS (Llama 3's 16M)."""
    return min(cal.MAX_GLOBAL_BATCH_TOKENS, max(cal.GLOBAL_BATCH_TOKENS, n_gpus * cal.MIN_TOKENS_PER_GPU))


def allreduce_seconds(grad_bytes: float, n_gpus: int, gpus_per_system: int, link: collectives.Link | None,
                      ) -> float:
    """Seconds of one all-reduce of `grad_bytes` over `n_gpus` ranks, `gpus_per_system` of them in each server,
    hierarchical as NCCL runs it: a ring within each server over its GPU link (reduce-scatter, then
    all-gather), and between them a ring across the servers over each GPU's NIC carrying its 1/g share
    (collectives.hierarchical_all_reduce_s)."""
    if min(n_gpus, gpus_per_system) > 1 and link is None:
        raise value_error("the GPU link is needed for an all-reduce within a system")
    return collectives.hierarchical_all_reduce_s(link or collectives.network(), n_gpus, gpus_per_system, grad_bytes)


@dataclass(frozen=True)
class Sync:
    """One optimizer step's gradient synchronisation on a layout, and what of it the compute cannot hide."""
    compute_s: float     # the step's compute on one GPU (forward a third, backward two thirds: 2 and 4 of 6·N·D)
    comm_s: float        # reduce-scatter of the gradients + all-gather of the updated parameters, all buckets
    buckets: int         # buckets the GPU's share of gradients travels in
    exposed_s: float     # comm the compute does not hide

    @property
    def efficiency(self) -> float:
        return self.compute_s / (self.compute_s + self.exposed_s)


def gradient_sync(model: Model, gpu: Gpu, plan: Layout, compute_s: float) -> Sync:
    """ZeRO-1/2 / Megatron's distributed optimizer, overlapped (--overlap-grad-reduce --overlap-param-gather):
    each GPU's share of the gradients (its model-parallel slice, GRAD_REDUCE_BYTES a parameter) is
    reduce-scattered over its data-parallel replicas bucket by bucket during the backward pass, and the updated
    parameters all-gathered during the next forward pass; together the bytes of one all-reduce. A replica's
    peers share a server when the group is smaller than the server (hierarchical: NVLink, then the NIC), else
    every peer is in another server (the ring crosses the NIC). Exposed: what exceeds the pass it hides behind,
    and never less than the last bucket's reduce-scatter and the first bucket's all-gather."""
    if plan.dp <= 1:
        return Sync(compute_s, 0.0, 0, 0.0)
    server = int(gpu.need("system_gpus", "training across GPUs"))
    share = model.total_params / plan.group
    peers = max(1, min(plan.dp, server // plan.group))
    link = collectives.link_class(gpu, peers, f"the gradient all-reduce over {plan.dp} replicas") if peers > 1 else None
    bucket = max(cal.DP_BUCKET_PARAMS, cal.DP_BUCKET_PARAMS_PER_RANK * plan.dp)
    buckets = max(1, math.ceil(share / bucket))
    one = allreduce_seconds(share / buckets * cal.GRAD_REDUCE_BYTES, plan.dp, peers, link)
    half, tail = buckets * one / 2, one / 2
    exposed = max(tail, half - compute_s * 2 / 3) + max(tail, half - compute_s / 3)
    return Sync(compute_s, buckets * one, buckets, exposed)


def scale_out_efficiency(model: Model, gpu: Gpu, n_gpus: int, precision: Precision | str = "bf16",
                         mfu: float | None = None, batch_tokens: float | None = None, plan: Layout | None = None,
                         method: str = "full", sharding: str | None = None, micro_tokens: float | None = None) -> float:
    """Share of a training step the GPUs spend computing on n GPUs: compute / (compute + exposed gradient
    synchronisation), gradient_sync on the layout (`layout`, or the one given) at the global batch
    (global_batch_tokens, or the one given). The compute runs at the steady-state MFU of the
    training-efficiency step-time model unless `mfu` is given; the pipeline bubble and tensor-parallel traffic are
    not added (they are in the measured steady-state MFU).
    LoRA / QLoRA (`method`): adapter_sync per micro-batch of `micro_tokens` a GPU (SEQ_LEN, micro-batch 1, as
    the picker sizes the memory), sharded as `sharding` (else lora_sharding's)."""
    if n_gpus <= 1:
        return 1.0
    if mfu is None:
        mfu = training_efficiency.for_gpu(gpu, model, as_precision(precision).name, "steady").mfu
    peak = gpu.tensor_peak(precision, "training time", weight_only=False).tflops
    if method != "full":
        compute = method_flops(method) * model.active * (micro_tokens or defaults.SEQ_LEN) / (peak * TERA * mfu)
        how = sharding or lora_sharding(model, gpu, method)
        return adapter_sync(model, gpu, n_gpus, method, how, compute).efficiency
    tokens = batch_tokens or global_batch_tokens(n_gpus)
    compute = 6 * model.active * tokens / (n_gpus * peak * TERA * mfu)
    return gradient_sync(model, gpu, plan or layout(model, gpu, n_gpus), compute).efficiency



def sync_words(sharding: str) -> str:
    return ("the adapter gradients all-reduced" if sharding == "ddp" else
            "the frozen base all-gathered twice a micro-batch and the adapter gradients reduce-scattered")


def _flat_link(gpu: Gpu, n_gpus: int) -> collectives.Link:
    """The link a flat ring over n data-parallel GPUs runs at: the GPU link within one server, each GPU's NIC
    once the ring leaves it (every crossing is as slow as the NIC)."""
    server = int(gpu.need("system_gpus", "training across GPUs"))
    return collectives.link_class(gpu, n_gpus, f"a LoRA job over {n_gpus} GPUs") if n_gpus <= server \
        else collectives.network()


def adapter_sync(model: Model, gpu: Gpu, n_gpus: int, method: str, sharding: str, compute_s: float) -> Sync:
    """One micro-batch's traffic of a LoRA / QLoRA job on n data-parallel GPUs (`compute_s`: its compute, a third
    forward and two thirds backward, the recomputed forward with it: method_flops), layer by layer as FSDP wraps
    it. Only the adapters are trained, so only their gradients are reduced (rank defaults.LORA_RANK on every
    linear layer, cal.ADAPTER_GRAD_BYTES a parameter): ddp all-reduces them during the backward pass; fsdp
    reduce-scatters them and, with the frozen base sharded, all-gathers each layer's weights in their storage
    format (training_memory.base_weight_bytes) before its forward and again before its backward
    (cal.FSDP_GATHERS_PER_STEP). Overlap as gradient_sync: what exceeds the pass it hides behind, never less than
    the first layer's gather and the last layer's reduction."""
    if n_gpus <= 1:
        return Sync(compute_s, 0.0, 0, 0.0)
    layers = int(model.dim("layers", "the layers FSDP gathers one at a time"))
    grads = training_memory.lora_params(model, defaults.LORA_RANK) * cal.ADAPTER_GRAD_BYTES / layers
    server = int(gpu.need("system_gpus", "training across GPUs"))
    if sharding == "ddp":
        peers = min(n_gpus, server)
        link = collectives.link_class(gpu, peers, f"a LoRA job over {n_gpus} GPUs") if peers > 1 else None
        reduce = allreduce_seconds(grads, n_gpus, peers, link)
        return Sync(compute_s, layers * reduce, layers, max(reduce, layers * reduce - compute_s * 2 / 3))
    link = _flat_link(gpu, n_gpus)
    base = training_memory.base_weight_bytes(model, training_memory.base_bits(method)) / layers
    gather = collectives.all_gather_s(link, n_gpus, base)
    scatter = collectives.all_gather_s(link, n_gpus, grads)      # a reduce-scatter moves what an all-gather does
    forward = layers * gather
    backward = layers * ((cal.FSDP_GATHERS_PER_STEP - 1) * gather + scatter)
    exposed = max(gather, forward - compute_s / 3) + max(scatter, backward - compute_s * 2 / 3)
    return Sync(compute_s, forward + backward, layers, exposed)


# The largest cluster a dense run has published its layout for: Llama 3 405B on 16,384 H100 (arXiv:2407.21783,
# Table 4), where the batch rule's 1,024 tokens a GPU meets its 16M-token cap.
LARGEST_PUBLISHED_CLUSTER = int(cal.MAX_GLOBAL_BATCH_TOKENS // cal.MIN_TOKENS_PER_GPU)
