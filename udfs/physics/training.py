"""Training compute from the architecture: 6·N·D to GPU-hours, days and cost, and scale-out across GPUs
(layout, global batch, gradient synchronisation overlapped with the passes). Training memory (ZeRO, activations,
LoRA/QLoRA, the fit check) is in training_memory.py."""

from __future__ import annotations

import math
from dataclasses import dataclass

from . import calibration as cal, collectives, training_efficiency
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


# ---------------------------------------------------------------- a job on a cluster of a given size
@dataclass(frozen=True)
class ClusterRun:
    """A training job on `n_gpus`, as GPU_RANK, the report and TRAINING_GPU_HOURS(..., n_gpus) size it."""
    n_gpus: int
    mfu: training_efficiency.Efficiency   # the compute MFU (its basis) before the all-reduce
    compute_gpu_hours: float               # the compute alone at that MFU (one GPU's speed x count)
    scale_out: float                       # share of the time computing at n_gpus (scale_out_efficiency)
    plan: Layout | None = None             # the layout it was sized on (None: one GPU)

    @property
    def gpu_hours(self) -> float:
        return self.compute_gpu_hours / self.scale_out

    def basis(self) -> str:
        on = "" if self.plan is None else (f" (TP{self.plan.tp} PP{self.plan.pp} DP{self.plan.dp}, "
                                           f"{global_batch_tokens(self.n_gpus):,.0f} tokens a step)")
        return (f"{self.mfu.basis}; the exposed gradient synchronisation at {plural(self.n_gpus, 'GPU')}{on} leaves "
                f"{self.scale_out:.1%} of the time computing (scale_out_efficiency)")


def cluster_mfu(gpu: Gpu, model: Model, precision: Precision | str, scope: str) -> training_efficiency.Efficiency:
    """The compute MFU of a job whose cluster size is modelled (its all-reduce added by on_cluster): a whole
    run (scope run) is the steady-state cell x TRAINING_GOODPUT (for_sized_cluster: the table's whole-run
    cells already hold their thousands-of-GPUs clusters' losses); scope steady the steady-state cell."""
    name = as_precision(precision).name
    if scope == "run":
        return training_efficiency.for_sized_cluster(gpu, model, name)
    return training_efficiency.for_gpu(gpu, model, name, "steady")


def on_cluster(model: Model, gpu: Gpu, tokens: float, n_gpus: int, precision: Precision | str = "bf16",
               scope: str = "run", mfu: float | None = None, flops_per_param: int = 6) -> ClusterRun:
    """The one formula for the GPU-hours of a job on `n_gpus`: FLOPs at the compute MFU (`mfu`, else
    cluster_mfu's), divided by the data-parallel scale-out efficiency at that count."""
    found = cluster_mfu(gpu, model, precision, scope) if mfu is None else \
        training_efficiency.Efficiency(mfu, f"the MFU given, {mfu:g}", False)
    compute = training_gpu_hours(model.active, tokens, gpu, found.mfu, precision, flops_per_param)
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
                         mfu: float | None = None, gpus_per_system: int | None = None,
                         batch_tokens: float | None = None, plan: Layout | None = None) -> float:
    """Share of a training step the GPUs spend computing on n GPUs: compute / (compute + exposed gradient
    synchronisation), gradient_sync on the layout (`layout`, or the one given) at the global batch
    (global_batch_tokens, or the one given). The compute runs at the steady-state MFU of the
    training-efficiency step-time model unless `mfu` is given; the pipeline bubble and tensor-parallel traffic are
    not added (they are in the measured steady-state MFU). `gpus_per_system` is the catalog's, kept for callers."""
    if n_gpus <= 1:
        return 1.0
    if mfu is None:
        mfu = training_efficiency.for_gpu(gpu, model, as_precision(precision).name, "steady").mfu
    peak = gpu.tensor_peak(precision, "training time", weight_only=False).tflops
    tokens = batch_tokens or global_batch_tokens(n_gpus)
    compute = 6 * model.active * tokens / (n_gpus * peak * TERA * mfu)
    return gradient_sync(model, gpu, plan or layout(model, gpu, n_gpus), compute).efficiency



# The largest cluster a dense run has published its layout for: Llama 3 405B on 16,384 H100 (arXiv:2407.21783,
# Table 4), where the batch rule's 1,024 tokens a GPU meets its 16M-token cap.
LARGEST_PUBLISHED_CLUSTER = int(cal.MAX_GLOBAL_BATCH_TOKENS // cal.MIN_TOKENS_PER_GPU)
