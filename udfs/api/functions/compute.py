"""Training compute: FLOPs (6·N·D), GPU-hours at a model FLOPs utilisation (the training-efficiency
table's by GPU generation, precision, size and dense/MoE, or the caller's), wall-clock days and cost;
and the speed-up of one GPU over another for the second seed's effective-cost comparison."""

from ...physics import defaults, evidence, training, training_efficiency, training_memory
from ...catalogs import resolve
from ...catalogs.catalog import Model
from ..registry import Arg, worksheet
from .common import ESTIMATE, GPU, MODEL_OR_PARAMS, N_GPUS, PRECISION, USD_PER_GPU_HOUR, required

TOKENS = Arg("tokens", "count", "Training tokens (2e12 or \"2T\")", "tokens", min=0, min_open=True)
MFU = Arg("mfu", "number", "Model FLOPs utilisation as a share of the dense tensor peak of the precision; blank: "
          "the training-efficiency figure for the GPU generation, precision, model and dense/MoE "
          "(TRAINING_MFU, of the scope asked for); a number given is used as it is, whatever the scope",
          "fraction", default=None, min=0, min_open=True, max=1)
SCOPE = Arg("scope", "choice", "What a blank mfu's figure includes: run (default) = whole-run GPU-hours, the "
            "steady-state MFU x TRAINING_GOODPUT (restarts after failures, checkpointing, evaluation); steady = "
            "steady-state training throughput only", choices=training_efficiency.SCOPES, default="run")
ON_GPUS = Arg("n_gpus", "integer", "GPUs training together. Blank: no cluster size modelled (the MFU of the "
              "scope, no gradient synchronisation: a run on thousands of GPUs, as Meta's model cards' small models, "
              "takes more). Given: "
              "the job on that many GPUs as GPU_RANK and the report size it: the steady-state MFU (x TRAINING_GOODPUT "
              "for scope run; a number given as mfu instead) and the exposed gradient synchronisation at n_gpus "
              "(tensor/pipeline/data-parallel layout, a batch growing with the cluster, reduce-scatter and all-gather "
              "overlapped with the passes; TRAINING_MFU part scale_out gives its share)", "GPUs", default="", min=1)

METHOD = Arg("method", "choice", "How the weights are trained: full (default: every weight, 6 FLOPs a parameter a "
             f"token), lora (adapters of rank {defaults.LORA_RANK} on every linear layer of a frozen 16-bit base) or "
             "qlora (the same on an NF4 base): 4 FLOPs a parameter a token plus the checkpointed forward recomputed, "
             "6 too; with n_gpus, only the adapter gradients are reduced and, where one GPU cannot hold the job "
             "(LORA_MEMORY_GB), FSDP all-gathers the frozen base each micro-batch, as GPU_RANK sizes it",
             choices=training.METHODS, default="full")


def params_of(value: Model | float) -> float:
    """Active parameters of a catalog model, or a parameter count as given."""
    return value.active if isinstance(value, Model) else value


def efficiency(model_or_params, gpu, precision, scope) -> training_efficiency.Efficiency:
    """The table's MFU for a catalog model (active parameters, dense or MoE) or a count (dense); an Excel error
    where the GPU has no tensor units in that precision (an MFU of nothing)."""
    gpu.tensor_peak(precision, "a training MFU", weight_only=False)
    return training_efficiency.for_gpu(gpu, resolve.model(model_or_params), precision.name, scope)


def fitted_hours(model_or_params, tokens, gpu, mfu, precision, scope, n_gpus: int | None = None,
                 on_n_gpus: bool = False, method: str = "full") -> float:
    """GPU-hours of a job that fits (training_memory.check_fit, LoRA / QLoRA as GPU_RANK sizes them; a count borrows a catalog
    layout for it): on_n_gpus, on n_gpus by the picker's formula (training.on_cluster); else at the MFU given or
    the table's."""
    model, n_gpus = resolve.model(model_or_params), n_gpus or None        # n_gpus blank arrives as ""
    training_memory.check_fit(model, gpu, precision, n_gpus, method)
    if on_n_gpus and n_gpus is not None:
        return training.on_cluster(model, gpu, tokens, n_gpus, precision, scope, mfu, method).gpu_hours
    mfu = mfu if mfu is not None else efficiency(model_or_params, gpu, precision, scope).mfu
    return training.training_gpu_hours(params_of(model_or_params), tokens, gpu, mfu, precision,
                                       training.method_flops(method))


@worksheet("TRAINING_MFU", "Model FLOPs utilisation a training run reaches on a GPU. Steady state: a step-time "
           "model (the matrix products at the achieved share of the tensor peak measured for the GPU generation x "
           "precision (dense runs), attention at the model's 2,048-token sequences, memory-bound work at the "
           "memory bandwidth; a MoE model's routing and expert all-to-alls over one server's link); whole run: "
           "the steady-state figure x TRAINING_GOODPUT (restarts, checkpointing, evaluation); where a share is "
           "not measured, a stated fallback (nearest generation, fp8 ratio, MoE factor) that part = basis "
           "names. With n_gpus: the "
           "MFU of the job on that many GPUs as GPU_RANK sizes it (steady-state x goodput for scope run, x the "
           "share of the time left by the gradient all-reduce, or a LoRA / QLoRA job's adapter traffic: method, which "
           "part = scale_out gives).", "fraction of peak",
           "Training",
           [GPU, MODEL_OR_PARAMS, PRECISION, SCOPE,
            Arg("part", "choice", "mfu (default): the figure; basis: the cell or fallback it comes from; "
                "scale_out: the share of the time computing at n_gpus (1 with n_gpus blank)",
                choices=("mfu", "basis", "scale_out"), default="mfu"), ON_GPUS, METHOD],
           examples=[(("A100", "Llama 2 7B"), 0.4178), (("H100", 70e9, "bf16", "steady"), 0.4151)],
           kind="fraction")
def training_mfu(gpu, model_or_params, precision, scope, part, n_gpus, method):
    if not n_gpus:
        found = efficiency(model_or_params, gpu, precision, scope)
        return {"mfu": found.mfu, "basis": found.basis, "scale_out": 1.0}[part]
    efficiency(model_or_params, gpu, precision, scope)          # no tensor units: the error, first
    run = training.on_cluster(resolve.model(model_or_params), gpu, 1.0, n_gpus, precision, scope, method=method)
    return {"mfu": run.mfu.mfu * run.scale_out, "basis": run.basis(), "scale_out": run.scale_out}[part]


@worksheet("TRAINING_FLOPS", "Training compute: 6 x parameters x tokens (8x with full activation recompute).",
           "FLOPs", "Training", [MODEL_OR_PARAMS, TOKENS,
                                 Arg("full_recompute", "bool", "Full activation recomputation", default=False)],
           examples=[((7e9, 2e12), 8.4e22), (("Llama 2 7B", "2T"), 8.0861e22), (("7B", 1e12, True), 5.6e22)],
           formula='IF({full_recompute},8,6)*{model_or_params}*{tokens}', kind="count")
def training_flops(model_or_params, tokens, full_recompute):
    return training.training_flops(params_of(model_or_params), tokens, full_recompute)


@worksheet("TRAINING_GPU_HOURS", "GPU-hours to train: FLOPs / (dense peak x MFU) / 3600, the MFU by default the "
           "training-efficiency table's (TRAINING_MFU): whole-run GPU-hours with restarts, checkpointing and "
           "evaluation (scope run), or steady-state throughput only (scope steady). estimate = low / high: the hours "
           "at the P90 / P10 of the measured error of its regime (ESTIMATE_EVIDENCE with workload training).",
           "GPU-hours", "Training",
           [MODEL_OR_PARAMS, TOKENS, GPU, MFU, PRECISION, ESTIMATE, SCOPE, ON_GPUS, METHOD],
           examples=[(("Llama 2 7B", 2e12, "A100"), 172_304), ((7e9, 1e12, "H100", 0.5), 23_581)],
           formula='6*{model_or_params}*{tokens}/({gpu.tensor_tflops(precision)}*1E12*{mfu})/3600', kind="time")
def training_gpu_hours(model_or_params, tokens, gpu, mfu, precision, estimate, scope, n_gpus, method):
    hours = fitted_hours(model_or_params, tokens, gpu, mfu, precision, scope, n_gpus, True, method)
    if estimate == "point":
        return hours
    model = model_or_params if isinstance(model_or_params, Model) else None
    return evidence.for_option("training", model, gpu, precision, n_gpus or None).pick(hours, estimate)


@worksheet("TRAINING_DAYS", "Wall-clock days to train on n GPUs: GPU-hours / n / 24 (whole-run by default: scope); "
           "#NUM! saying by how much when n GPUs cannot hold the job (ZeRO-3, full recompute, as GPU_RANK sizes it). "
           "all_reduce TRUE: the GPU-hours on n_gpus as GPU_RANK and the report size them (TRAINING_GPU_HOURS "
           "with n_gpus).",
           "days", "Training",
           [MODEL_OR_PARAMS, TOKENS, GPU, required(N_GPUS, "GPUs training together (data parallel)"), MFU,
            PRECISION, SCOPE,
            Arg("all_reduce", "bool", "FALSE (default): the MFU of the scope with no cluster size modelled "
                "/ n_gpus; TRUE: the job on n_gpus as GPU_RANK sizes it: the steady-state MFU "
                "(x TRAINING_GOODPUT for scope run) and the gradient all-reduce at n_gpus", default=False), METHOD],
           examples=[((7e9, 1e12, "H100", 512, 0.5), 1.9190)],
           formula='6*{model_or_params}*{tokens}/({gpu.tensor_tflops(precision)}*1E12*{mfu})/3600/{n_gpus}/24', kind="time")
def training_days(model_or_params, tokens, gpu, n_gpus, mfu, precision, scope, all_reduce, method):
    return fitted_hours(model_or_params, tokens, gpu, mfu, precision, scope, n_gpus, all_reduce, method) / n_gpus / 24


@worksheet("TRAINING_COST", "Cost to train: GPU-hours x price per GPU-hour (whole-run GPU-hours by default: scope; "
           "on n_gpus as GPU_RANK sizes them with n_gpus: TRAINING_GPU_HOURS).",
           "$", "Training",
           [MODEL_OR_PARAMS, TOKENS, GPU, USD_PER_GPU_HOUR, MFU, PRECISION, SCOPE, ON_GPUS, METHOD],
           examples=[((7e9, 1e12, "H100", 2.0, 0.5), 47_162)],
           formula='6*{model_or_params}*{tokens}/({gpu.tensor_tflops(precision)}*1E12*{mfu})/3600*{usd_per_gpu_hour}',
           kind="money")
def training_cost(model_or_params, tokens, gpu, usd_per_gpu_hour, mfu, precision, scope, n_gpus, method):
    return fitted_hours(model_or_params, tokens, gpu, mfu, precision, scope, n_gpus, True, method) * usd_per_gpu_hour


@worksheet("SPEEDUP", "Speed of a GPU relative to a baseline from the catalog: dense BF16 tensor throughput "
           "(training) or memory bandwidth (inference). Feeds EFFECTIVE_HOURLY_COST.", "x baseline", "Training",
           [GPU, Arg("baseline_gpu", "gpu", "Baseline GPU", default="A100"),
            Arg("workload", "choice", "training (tensor FLOPs) or inference (bandwidth)",
                choices=("training", "inference"), default="training")],
           examples=[(("H100",), 3.1715), (("H100", "A100", "inference"), 1.643), (("A100 40GB", "A100"), 1.0)],
           formula='IF({workload}="training",{gpu.bf16_tflops}/{baseline_gpu.bf16_tflops},{gpu.bandwidth_tbs}/{baseline_gpu.bandwidth_tbs})',
           kind="ratio")
def speedup(gpu, baseline_gpu, workload):
    attribute = "bf16_tflops" if workload == "training" else "bandwidth_tbs"
    return gpu.need(attribute, "SPEEDUP") / baseline_gpu.need(attribute, "SPEEDUP")
