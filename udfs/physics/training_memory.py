"""Training memory per GPU: model states (weights, gradients, optimizer states) sharded by ZeRO,
activations (Korthikanti et al. 2022, "Reducing Activation Recomputation in Large Transformer Models")
and logits; LoRA and QLoRA; the fewest GPUs that hold a full-training job and the fit check made
before any training time or cost."""

from __future__ import annotations

import math

from . import calibration as cal
from . import defaults
from .capacity import NoFit, gib_text
from ..catalogs.catalog import Gpu, Model, Precision, as_precision
from ..errors import value_error
from ..units import GIB

# ---------------------------------------------------------------- model states: bytes per parameter
# Gradients beside a 16-bit model with an FP32 master copy: FP32, as the lesson counts them and as
# Megatron-LM keeps its main-grad buffer ("bf16 parameters, fp32 gradients: 18 bytes per parameter",
# Megatron Core distributed optimizer guide, docs.nvidia.com/megatron-core/developer-guide/latest/
# api-guide/dist_optimizer.html). Without a master copy gradients take the weights' format (PyTorch
# keeps a parameter's .grad in its dtype).
GRAD_BYTES = 4
# Optimizer states per trainable parameter, each stored in the state format below: Adam/AdamW keep
# two moments (m, v), SGD with momentum one, Adafactor none per parameter (its factored second moment
# is a row and a column per matrix, Shazeer & Stern 2018, arXiv:1804.04235; counted in factored_states).
OPTIMIZER_STATES = {"adamw": 2, "adam": 2, "sgd": 1, "adafactor": 0, "none": 0}
# Bytes per optimizer-state value by format: FP32; 16-bit (BF16 moments, e.g. torchao/PyTorch
# low-precision optimizer states); bitsandbytes 8-bit blockwise states, one byte each plus one FP32
# absmax per block of 2,048 values (Dettmers et al. 2021, "8-bit Optimizers via Block-wise
# Quantization", arXiv:2110.02861: "75% less memory" than 32-bit states,
# huggingface.co/docs/bitsandbytes/optimizers). Paged formats hold the same bytes in CUDA unified
# memory, which bitsandbytes evicts to CPU RAM when the GPU is full (bitsandbytes docs, "paged
# optimizers ... transfer memory from the GPU to the CPU when GPU memory is exhausted"), so they are
# counted off the GPU, in the `cpu` part, and never make a job fail to fit. 4-bit states (Li et al. 2023,
# "Memory Efficient Optimizers with 4-bit States", arXiv:2309.01507; torchao's AdamW4bit): half a byte a value
# (two 4-bit codes packed in a uint8, torchao OptimState4bit) plus one scale per block of 128 (torchao/optim/
# README.md: "block size is ... 128 for 4-bit optimizers"), counted at 4 bytes.
STATE_FORMATS = {"fp32": 4.0, "bf16": 2.0, "8bit": 1 + 4 / 2048, "4bit": 0.5 + 4 / 128, "paged_fp32": 4.0,
                 "paged_8bit": 1 + 4 / 2048}
# Where model states and activations may live off the GPU: ZeRO-Offload moves gradients, optimizer
# states and the FP32 master copy to CPU memory and keeps the 16-bit weights on the GPU (Ren et al.
# 2021, arXiv:2101.06840); "all" (ZeRO-3 offload_param, FSDP CPUOffload) moves the weights too, the GPU
# gathering one layer at a time.
OFFLOAD = ("none", "optimizer", "all")
# Activation recomputation: none; selective (Megatron's: the attention scores are recomputed, which
# flash attention never stores, so with flash attention it saves nothing more); full (each layer keeps
# its input, the layer in backward is recomputed whole); offload (full, with the layer inputs moved to
# CPU memory: torchtune's activation offloading, Unsloth's offloaded gradient checkpointing).
RECOMPUTE = ("none", "selective", "full", "offload")
# Bytes per output logit kept for the loss: standard, the 16-bit logits plus their FP32 copy (6);
# chunked, the 16-bit logits with one chunk at a time upcast to FP32 (torchtune CEWithChunkedOutputLoss:
# "saves memory by only upcasting one chunk at a time", pytorch.org/torchtune/stable/generated/
# torchtune.modules.loss.CEWithChunkedOutputLoss.html): 2; fused, the head and the loss computed a chunk
# at a time so that no full logits exist (Liger Kernel's FusedLinearCrossEntropy; NeMo AutoModel's
# ChunkedCrossEntropy: "neither full logits nor a full logits gradient is allocated"): 0.
# upcast, as transformers' causal-LM loss runs it (Llama's forward upcasts the logits with `logits.float()`
# and CrossEntropyLoss keeps its FP32 log-softmax for the backward pass): 16-bit logits (2) + their FP32 copy
# (4) + the FP32 log-softmax (4) + the FP32 gradient of the logits (4) + its 16-bit cast (2) = 16 at the
# backward peak.
LOSS_BYTES = {"standard": 6, "upcast": 16, "chunked": 2, "fused": 0}
NF4_BITS = 4.127                    # QLoRA paper: NF4 + double quantisation
# A 4-bit (or 8-bit) base computes in 16-bit: in training bitsandbytes dequantises each weight to the compute
# dtype for its matrix product, forward and backward (bitsandbytes/autograd/_functions.py, MatMul4Bit:
# F.dequantize_4bit(B, quant_state).to(A.dtype), freed after the product), so one linear layer at a time is
# held in 16-bit beside the activations: 2 bytes a parameter of the largest.
DEQUANT_BYTES = 2
# The Hugging Face QLoRA recipe on one GPU runs PEFT's prepare_model_for_kbit_training, which casts every
# parameter left unquantised (embeddings, LM head, norms) from 16-bit to FP32 (peft/utils/other.py: "cast all
# non INT8 parameters to fp32"): 4 bytes each instead of 2 (`kbit_prepared`). Sharded QLoRA (FSDP / ZeRO-3
# with a 16-bit quant storage) skips it.
KBIT_PREPARED_BYTES = 4
NEED = "training memory"           # what a missing shape figure is needed for, in its #N/A


def usable_gib(gpu: Gpu) -> float:
    """GPU memory a training job may fill: all of it. Its fixed costs (the CUDA context, the caching
    allocator's reserve) are counted in the estimate (device_memory); serving's cap (an engine's memory_fraction in
    udfs/data/engines.csv: vLLM's gpu_memory_utilization), a serving engine's setting PyTorch training does not have.
    Applying it here refused a 70B QLoRA job (Llama 3 70B: 45.4 GiB at 2,048 tokens) on every 48 GB
    card, where the QLoRA paper fine-tunes 65B on one 48 GB GPU (Dettmers et al. 2023, arXiv:2305.14314)
    and Unsloth fits Llama 3.3 70B QLoRA on 48 GB (unslothai/unsloth README). All of it is what CUDA reports
    (Gpu.memory_gib), not the nameplate."""
    return gpu.memory_gib


def state_bytes_per_param(precision: Precision | str, optimizer: str = "adamw", states: str = "fp32",
                          master_weights: bool = True) -> dict[str, float]:
    """Bytes per trainable parameter of weights, gradients and optimizer (master copy + states).

    The default, 16-bit weights with AdamW: 2 (weights) + 4 (FP32 gradients) + 4 (FP32 master) + 4 + 4
    (m, v) = 18, as the lesson and Megatron count it. FP32 weights need no master copy (4 + 4 + 8 = 16).
    Without a master copy (pure BF16 training) gradients are 16-bit too: 2 + 2 + 2 states x 2 = 8 with
    BF16 states, 2 + 2 + 2 x 1 = 6 with 8-bit states. 'none' trains nothing: no master, no states."""
    weight = as_precision(precision).bytes_per_param
    master = master_weights and weight < 4 and optimizer != "none"
    grads = float(GRAD_BYTES) if weight >= 4 or master_weights else weight
    return {"weights": weight, "gradients": grads,
            "optimizer": (4 if master else 0) + OPTIMIZER_STATES[optimizer] * STATE_FORMATS[states]}


def model_state_bytes(params: float, precision: Precision | str, optimizer: str, states: str = "fp32",
                      master_weights: bool = True) -> dict[str, float]:
    """Bytes of weights, gradients and optimizer states for `params` trainable parameters."""
    per = state_bytes_per_param(precision, optimizer, states, master_weights)
    return {k: params * v for k, v in per.items()}


def factored_states(model: Model) -> float:
    """Adafactor's factored second moment: one FP32 value per row and per column of every matrix of
    every block (its r·(d_in + d_out) at r = 1) and of the embedding and head."""
    vocab_h = model.dim("vocab", NEED) + model.dim("hidden", NEED)
    return (lora_params(model, 1) + vocab_h * (1 if model.tied_embeddings else 2)) * 4


def largest_tensor(model: Model) -> float:
    """Parameters of the largest single weight matrix: the embedding (vocab x hidden), an MLP matrix
    (hidden x ffn) or the query projection. With the optimizer step fused into the backward pass
    (optimizer-in-backward: each gradient applied and freed as soon as it is computed, PyTorch tutorial
    "How to save memory by fusing the optimizer step into the backward pass",
    docs.pytorch.org/tutorials/intermediate/optimizer_step_in_backward_tutorial.html) no more than about
    one such gradient is held at a time."""
    h = model.dim("hidden", NEED)
    return max(model.dim("vocab", NEED) * h, largest_linear(model))


def largest_linear(model: Model) -> float:
    """Parameters of the largest linear layer of a block: an MLP matrix (hidden x ffn) or the query
    projection."""
    h = model.dim("hidden", NEED)
    return max(h * model.dim("ffn", NEED), h * model.dim("heads", NEED) * model.head_size)


# ---------------------------------------------------------------- where the parameters live
def stage_params(model: Model, tensor_parallel: int = 1, pipeline_parallel: int = 1) -> float:
    """Parameters one GPU holds under tensor and pipeline parallelism (before any ZeRO sharding).

    Pipeline stages split the blocks (the fullest stage has ceil(layers / pp)); the first stage also
    holds the input embedding and the last the output head (a tied embedding is copied to the last
    stage, as Megatron-LM does), so the fullest stage carries the larger of the two. Tensor parallelism
    splits every matrix and the vocabulary (Megatron's vocab-parallel embedding) over tp GPUs; the norms
    (2 x hidden per block) are replicated."""
    layers, h = model.dim("layers", NEED), model.dim("hidden", NEED)
    if pipeline_parallel > layers:
        raise value_error(f"pipeline_parallel ({pipeline_parallel}) is more stages than {model.name} has layers "
                          f"({layers})")
    embed = model.dim("vocab", NEED) * h
    ends = embed * (1 if model.tied_embeddings else 2)
    per_block = (model.total_params - ends - h) / layers           # the final norm (h) with the head
    if pipeline_parallel <= 1:
        held, blocks = model.total_params, layers
    else:
        blocks = math.ceil(layers / pipeline_parallel)
        held = blocks * per_block + embed + h
    norms = blocks * 2 * h + h
    return (held - norms) / tensor_parallel + norms


# ---------------------------------------------------------------- activations
def activation_bytes_per_layer(model: Model, micro_batch: float, seq_len: float, recompute: str,
                               flash_attention: bool, tensor_parallel: int = 1) -> float:
    """Bytes of activations one layer keeps for the backward pass (16-bit activations).

    Korthikanti et al.: s·b·h·(34 + 5·a·s/h) for a GPT layer with a 4h GeLU MLP; here the
    MLP part is generalised to the model's FFN width (6·f/h for a gated SwiGLU MLP, 4·f/h
    for GeLU) beside 15·s·b·h for attention and norms. The 5·a·s/h attention-score term is never
    stored with flash attention, and is recomputed by selective recompute: counted once, only without
    both. Full recompute (and offload) keeps only the layer input (2·s·b·h; see checkpointed_bytes).
    Tensor parallelism with sequence parallelism divides all of it by tp (Korthikanti et al. eq. 5)."""
    s, b, h = seq_len, micro_batch, model.dim("hidden", NEED)
    if recompute in ("full", "offload"):
        return 2 * s * b * h / tensor_parallel
    mlp = (6 if model.gated_mlp else 4) * model.dim("ffn", NEED) / h
    per = s * b * h * (15 + mlp)
    if not flash_attention and recompute == "none":
        per += 5 * model.dim("heads", NEED) * s * s * b
    return per / tensor_parallel


def working_layer_bytes(model: Model, micro_batch: float, seq_len: float, tensor_parallel: int = 1) -> float:
    """One layer's full set of activations, rebuilt during its backward pass under recompute."""
    return activation_bytes_per_layer(model, micro_batch, seq_len, "none", True, tensor_parallel)


def logits_bytes(model: Model, micro_batch: float, seq_len: float, tensor_parallel: int = 1,
                 loss: str = "standard") -> float:
    """Output logits kept for the loss: s·b·V x LOSS_BYTES (6 by default: 16-bit plus an FP32 copy),
    split over tp GPUs by a vocab-parallel head."""
    return seq_len * micro_batch * model.dim("vocab", "the output logits of training") * LOSS_BYTES[loss] / tensor_parallel


def activations(model: Model, micro_batch: float, seq_len: float, recompute: str, flash_attention: bool,
                tensor_parallel: int = 1, pipeline_parallel: int = 1, loss: str = "standard") -> tuple[float, float]:
    """(GPU bytes, CPU bytes) of activations on the fullest pipeline stage.

    With a 1F1B pipeline schedule the first stage keeps pp micro-batches in flight, each for its
    ceil(layers / pp) layers: about all layers' worth of one micro-batch, whatever pp (Korthikanti et
    al., section 4.2.3); the last stage keeps one micro-batch and the logits. Under full recompute a
    layer's working set is rebuilt once at a time beside the kept inputs; under offload the inputs
    wait in CPU memory."""
    layers = model.dim("layers", NEED)
    blocks = math.ceil(layers / pipeline_parallel)
    kept = activation_bytes_per_layer(model, micro_batch, seq_len, recompute, flash_attention, tensor_parallel)
    logits = logits_bytes(model, micro_batch, seq_len, tensor_parallel, loss)
    work = working_layer_bytes(model, micro_batch, seq_len, tensor_parallel) if recompute in ("full", "offload") else 0
    in_flight = blocks * pipeline_parallel * kept
    first = in_flight + (logits if pipeline_parallel == 1 else 0)
    last = blocks * kept + logits
    gpu_kept = max(first, last) + work
    if recompute == "offload":
        return gpu_kept - max(in_flight, blocks * kept) + kept, max(in_flight, blocks * kept)
    return gpu_kept, 0.0


# ---------------------------------------------------------------- what a GPU holds beyond the tensors
def device_memory(parts_gib: dict[str, float]) -> dict[str, float]:
    """The parts (GiB of tensors at the peak) and what each way of measuring them sees: `allocated`
    (PyTorch's max_memory_allocated: the tensors), `reserved` (max_memory_reserved: + the caching
    allocator's reserve, ALLOCATOR_RESERVE of it), `device` (nvidia-smi: reserved + the CUDA context), and
    `total`, what the job needs to fit: allocated + the CUDA context (`overhead`). The reserve is not needed:
    before it raises out-of-memory the caching allocator frees its cached blocks and retries the
    allocation (PyTorch "CUDA semantics", memory management: cached memory "can be used by other
    allocations"; CUDACachingAllocator frees cached blocks on a failed cudaMalloc), so a job fits where
    its tensors and the context do, and nvidia-smi shows more only while the GPU has room to spare."""
    result = dict(parts_gib)
    allocated = sum(parts_gib.values())
    result["overhead"] = cal.CUDA_CONTEXT_GIB
    result["total"] = needed_gib(allocated)
    result["allocated"], result["reserved"] = allocated, allocated * (1 + cal.ALLOCATOR_RESERVE)
    result["device"] = result["reserved"] + cal.CUDA_CONTEXT_GIB
    return result


def needed_gib(allocated_gib: float) -> float:
    """GPU memory a job with `allocated_gib` of tensors at the peak needs to fit: + the CUDA context."""
    return allocated_gib + cal.CUDA_CONTEXT_GIB


def allocatable_gib(usable: float) -> float:
    """The tensors a GPU with `usable` GiB holds at the peak: the inverse of needed_gib."""
    return usable - cal.CUDA_CONTEXT_GIB


# ---------------------------------------------------------------- full training
def training_memory_gib(model: Model, precision: Precision | str = "bf16", optimizer: str = "adamw", micro_batch: float = 1,
                        seq_len: float = defaults.SEQ_LEN, zero_stage: int = 0, n_gpus: int = 1, recompute: str = "none",
                        flash_attention: bool = True, optimizer_states: str = "fp32", master_weights: bool = True,
                        optimizer_in_backward: bool = False, tensor_parallel: int = 1, pipeline_parallel: int = 1,
                        offload: str = "none", loss: str = "standard") -> dict[str, float]:
    """Per-GPU memory in GiB for full training over n_gpus = tensor x pipeline x data parallel GPUs.

    ZeRO shards over the data-parallel GPUs: stage 1 the optimizer states, 2 also the gradients, 3
    also the weights (plus one layer gathered whole); FSDP's SHARD_GRAD_OP is stage 2, FULL_SHARD stage 3.
    Pipelined, stage 2 or 3 holds the stage's weights and gradients (FP32; 16-bit without a master copy) whole (pipelined_fsdp).
    `cpu` is what offload and paged optimizer states keep in CPU memory per GPU (not in `total`); `total`
    is what must fit, `allocated`, `reserved` and `device` what PyTorch and nvidia-smi report (device_memory)."""
    precision = as_precision(precision)
    dp = data_parallel(n_gpus, tensor_parallel, pipeline_parallel)
    if offload == "all" and zero_stage < 3:
        raise value_error("offloading the weights (offload \"all\") needs ZeRO stage 3 (FSDP FULL_SHARD): "
                          "without it every GPU keeps all its weights")
    held = stage_params(model, tensor_parallel, pipeline_parallel)
    states = model_state_bytes(held, precision, optimizer, optimizer_states, master_weights)
    if optimizer == "adafactor":
        states["optimizer"] += factored_states(model) / (tensor_parallel * pipeline_parallel)
    if optimizer_in_backward:
        states["gradients"] = largest_tensor(model) / tensor_parallel * state_bytes_per_param(
            precision, optimizer, optimizer_states, master_weights)["gradients"]
    shard = {k: (dp if zero_stage >= level else 1) for k, level in (("optimizer", 1), ("gradients", 2), ("weights", 3))}
    pipelined = pipelined_fsdp(zero_stage, pipeline_parallel, dp, offload)
    if pipelined:
        shard["weights"] = shard["gradients"] = 1
    parts = {k: states[k] / shard[k] for k in states}
    cpu = 0.0
    if optimizer_states.startswith("paged") or offload != "none":
        cpu += parts["optimizer"]
        parts["optimizer"] = 0.0
    if offload != "none":
        cpu += parts["gradients"]
        parts["gradients"] = 0.0
    # ZeRO-3 gathers one layer whole (its tensor-parallel slice) at a time: the average layer of the model
    layer = stage_params(model, tensor_parallel) / model.dim("layers", NEED) * precision.bytes_per_param
    gathered = layer if zero_stage >= 3 and dp > 1 and not pipelined else 0.0
    if offload == "all":
        cpu += parts["weights"]
        parts["weights"] = layer
    else:
        parts["weights"] += gathered
    parts["activations"], off = activations(model, micro_batch, seq_len, recompute, flash_attention,
                                            tensor_parallel, pipeline_parallel, loss)
    result = device_memory({k: v / GIB for k, v in parts.items()})
    result["cpu"] = (cpu + off) / GIB
    return result


def pipelined_fsdp(zero_stage: int, pipeline_parallel: int, dp: int, offload: str = "none") -> bool:
    """Whether gradients and weights sharded by ZeRO-2/3 are held whole on each GPU at the peak because the job is
    also pipelined. ZeRO-2/3 with pipeline stages is FSDP2 under PyTorch's pipelining (DeepSpeed's pipeline engine
    takes ZeRO-1 only; torchtitan and NeMo Automodel pipeline FSDP2 stages): for every microbatch but a step's last,
    the stage keeps its parameters unsharded and its gradients unsynchronised (torch/distributed/pipelining/
    stage.py, backward_maybe_with_nosync: set_reshard_after_backward(False), set_requires_gradient_sync(False)),
    and FSDP2 accumulates those unsharded gradients in its reduce dtype (FSDPParam.to_accumulated_grad_if_needed),
    FP32 in torchtitan's and NeMo Automodel's mixed-precision default (GRAD_BYTES), the weights' own 16 bits in pure
    16-bit training (no master copy, no mixed-precision policy): the state format's gradient bytes
    (state_bytes_per_param). Only the optimizer states (and the master copy) stay sharded: ZeRO-1."""
    return zero_stage >= 2 and pipeline_parallel > 1 and dp > 1 and offload == "none"


def data_parallel(n_gpus: int, tensor_parallel: int = 1, pipeline_parallel: int = 1) -> int:
    """Data-parallel replicas: n_gpus / (tp x pp), which must divide evenly."""
    group = tensor_parallel * pipeline_parallel
    if n_gpus % group:
        raise value_error(f"n_gpus ({n_gpus}) must be a multiple of tensor_parallel x pipeline_parallel ({group}): "
                          "n_gpus counts every GPU of the job")
    return n_gpus // group


def linear_params(model: Model) -> float:
    """Parameters in the transformer's linear layers (what QLoRA quantises)."""
    hidden = model.dim("hidden", NEED)
    embeddings = model.dim("vocab", NEED) * hidden * (1 if model.tied_embeddings else 2)
    norms = (2 * model.dim("layers", NEED) + 1) * hidden
    return model.total_params - embeddings - norms


# The linear layers of a block LoRA may adapt (PEFT's target_modules by their Llama names: q_proj, k_proj,
# v_proj, o_proj, gate_proj, up_proj, down_proj); "all" is every one (PEFT's "all-linear").
LORA_TARGETS = ("q", "k", "v", "o", "gate", "up", "down")
# Bytes per adapter parameter: fp32, an FP32 weight, gradient and Adam m and v (4 x 4: PEFT upcasts 16-bit
# adapters to FP32 by default, get_peft_model(autocast_adapter_dtype=True), huggingface.co/docs/peft
# package_reference/peft_model); bf16, all four in BF16 (adapters left in a BF16 model's dtype, as PEFT
# did before that default and pure-BF16 loops do: PyTorch's AdamW keeps its states in the parameter's dtype).
ADAPTER_STATES = {"fp32": 16, "bf16": 8}


def lora_targets(text: str | tuple[str, ...] = "all") -> tuple[str, ...]:
    """The adapted matrices from "all" or a comma-separated list of LORA_TARGETS ("q,v")."""
    if isinstance(text, tuple):
        return text
    names = LORA_TARGETS if text.strip().lower() in ("all", "all-linear", "") else \
        tuple(t.strip().lower().removesuffix("_proj") for t in text.split(","))
    bad = [t for t in names if t not in LORA_TARGETS]
    if bad or not names:
        raise value_error(f"unknown LoRA target {', '.join(bad) or text!r}: give all or a comma-separated list of "
                          f"{', '.join(LORA_TARGETS)}")
    return names


def lora_params(model: Model, rank: int, targets: str | tuple[str, ...] = "all") -> float:
    """LoRA adapter parameters, r·(d_in + d_out) for each adapted linear layer of every block
    (by default q, k, v, o and the MLP matrices; experts not adapted; a GeLU MLP has no gate)."""
    h, q = model.dim("hidden", NEED), model.dim("heads", NEED) * model.head_size
    kv = model.kv_head_count * model.head_size
    f = model.dim("ffn", NEED)
    mats = {"q": (h, q), "k": (h, kv), "v": (h, kv), "o": (q, h), "up": (h, f), "down": (f, h)}
    if model.gated_mlp:
        mats["gate"] = (h, f)
    return model.dim("layers", NEED) * rank * sum(sum(mats[t]) for t in lora_targets(targets) if t in mats)


# Data parallelism for LoRA/QLoRA: DDP replicates the base model and adapters on every GPU; FSDP
# (or ZeRO-3) shards them over the GPUs, gathering one layer at a time (PEFT docs, "Fully Sharded Data
# Parallel" and "DeepSpeed": FSDP/ZeRO-3 + QLoRA fits Llama 2 70B on two GPUs).
LORA_SHARDING = ("ddp", "fsdp")


def base_weight_bytes(model: Model, base_bits: float, kbit_prepared: bool = False) -> float:
    """Bytes of a LoRA job's frozen base in its storage format: linear layers at base_bits (NF4's 4.127 with its
    constants for QLoRA), embeddings, head and norms in 16-bit (FP32 once kbit_prepared); all of it at
    base_bits when that is 16 or more. What the GPUs hold, and what FSDP all-gathers (training.adapter_sync)."""
    if base_bits >= 16:
        return model.total_params * base_bits / 8
    linear = linear_params(model)
    return linear * base_bits / 8 + (model.total_params - linear) * (KBIT_PREPARED_BYTES if kbit_prepared else 2)


def adapter_memory_gib(model: Model, rank: int, base_bits: float, seq_len: float, micro_batch: float,
                       checkpointing: bool, n_gpus: int = 1, sharding: str = "ddp",
                       loss: str = "standard", targets: str | tuple[str, ...] = "all",
                       adapter_states: str = "fp32", kbit_prepared: bool = False) -> dict[str, float]:
    """Per-GPU memory of LoRA on a frozen base whose linear layers are stored at base_bits (16: plain
    LoRA on a 16-bit model; NF4's 4.127: QLoRA), embeddings, head and norms in 16-bit (all of it at
    base_bits when that is 16 or more). Adapters on `targets` train with Adam at ADAPTER_STATES bytes a
    parameter (FP32 by default: 16, weight, gradient, m, v). Activations: checkpointed, the layer inputs
    plus one layer's working set; else every layer's. Under FSDP the base and adapters are sharded over
    n_gpus, one layer gathered."""
    base = base_weight_bytes(model, base_bits, kbit_prepared)
    adapters = lora_params(model, rank, targets) * ADAPTER_STATES[adapter_states]
    if sharding == "fsdp" and n_gpus > 1:
        base = base / n_gpus + base / model.dim("layers", NEED)
        adapters /= n_gpus
    per_layer = working_layer_bytes(model, micro_batch, seq_len)
    layers = model.dim("layers", NEED)
    if checkpointing:
        acts = layers * 2 * seq_len * micro_batch * model.dim("hidden", NEED) + per_layer
    else:
        acts = layers * per_layer
    if base_bits < 16:        # a quantised base: one linear layer dequantised to 16-bit at a time (below)
        acts += largest_linear(model) * DEQUANT_BYTES
    parts = {"base_weights": base, "adapters": adapters,
             "activations": acts + logits_bytes(model, micro_batch, seq_len, 1, loss)}
    return device_memory({k: v / GIB for k, v in parts.items()})


def lora_memory_gib(model: Model, rank: int = 16, precision: Precision | str = "bf16", seq_len: float = defaults.SEQ_LEN,
                    micro_batch: float = 1, checkpointing: bool = True, n_gpus: int = 1,
                    sharding: str = "ddp", loss: str = "standard", targets: str | tuple[str, ...] = "all",
                    adapter_states: str = "fp32") -> dict[str, float]:
    """LoRA on a base stored in `precision` (bf16: LoRA; nf4: QLoRA; int8: 8-bit LoRA)."""
    bits = as_precision(precision).bits_per_param
    return adapter_memory_gib(model, rank, bits, seq_len, micro_batch, checkpointing, n_gpus, sharding, loss,
                              targets, adapter_states)


def qlora_memory_gib(model: Model, rank: int = 16, seq_len: float = defaults.SEQ_LEN, micro_batch: float = 1,
                     checkpointing: bool = True, base_bits: float = NF4_BITS, n_gpus: int = 1,
                     sharding: str = "ddp", loss: str = "standard", targets: str | tuple[str, ...] = "all",
                     adapter_states: str = "fp32", kbit_prepared: bool = False) -> dict[str, float]:
    """QLoRA (Dettmers et al. 2023): NF4 base on linear layers, 16-bit embeddings, head and
    norms (FP32 once kbit_prepared), LoRA adapters trained in FP32 with Adam, activations and logits
    (adapter_memory_gib)."""
    return adapter_memory_gib(model, rank, base_bits, seq_len, micro_batch, checkpointing, n_gpus, sharding, loss,
                              targets, adapter_states, kbit_prepared)


def lora_min_gpus(model: Model, gpu: Gpu, base_bits: float, rank: int = defaults.LORA_RANK) -> tuple[int | None, float]:
    """Fewest GPUs that hold a LoRA (base_bits 16) or QLoRA (NF4_BITS) job at the picker's assumptions
    (rank 16 on every linear layer, FP32 adapter states, checkpointed, micro-batch 1 x SEQ_LEN per GPU): one
    GPU holding all of it, else FSDP sharding the base and adapters over n (adapter_memory_gib with "fsdp"),
    None where no number does; and the GiB each GPU holds whatever their number (activations, the layer
    gathered, the CUDA context), or the whole job's on one GPU."""
    def need(n: int) -> dict[str, float]:
        return adapter_memory_gib(model, rank, base_bits, defaults.SEQ_LEN, 1, True, n, "fsdp" if n > 1 else "ddp")
    usable = usable_gib(gpu)
    one = need(1)
    if one["total"] <= usable:
        return 1, one["total"]
    layer = one["base_weights"] / model.dim("layers", NEED)
    held = needed_gib(one["activations"] + layer)
    room = usable - held
    if room <= 0:
        return None, held
    n = max(2, math.ceil((one["base_weights"] + one["adapters"]) / room))
    while need(n)["total"] > usable:          # the estimate is the judge: step up past rounding
        n += 1
    return n, held


def min_gpus(model: Model, gpu: Gpu, precision: Precision | str = "bf16") -> tuple[int | None, float]:
    """Fewest GPUs that hold a full-training job (ZeRO-3 data parallelism, full activation recompute,
    micro-batch 1 x SEQ_LEN: the assumptions of the picker, docs/cost-model.md), None if no number
    does; and the GiB each GPU holds whatever their number (activations, overhead, the layer gathered)."""
    room_all = allocatable_gib(usable_gib(gpu))
    one = training_memory_gib(model, precision, "adamw", 1, defaults.SEQ_LEN, 3, 1, "full")
    fixed = one["activations"]
    sharded = one["weights"] + one["gradients"] + one["optimizer"]
    live_layer = model.total_params / model.dim("layers", NEED) * 2 / GIB
    if sharded <= room_all - fixed:
        return 1, needed_gib(fixed)
    room = room_all - fixed - live_layer
    if room <= 0:
        return None, needed_gib(fixed + live_layer)
    return math.ceil(sharded / room), needed_gib(fixed + live_layer)


def base_bits(method: str) -> float:
    """Bits a parameter of a LoRA job's frozen base linear layers: 16 (lora) or NF4 with its constants (qlora)."""
    return NF4_BITS if method == "qlora" else 16


def check_fit(model: Model, gpu: Gpu, precision: Precision | str = "bf16", n_gpus: int | None = None,
              method: str = "full") -> None:
    """The training fit check made before any training time or cost: #NUM! saying by how much when no
    number of GPUs holds the job, or fewer than `n_gpus` are given than it needs; a LoRA / QLoRA job
    (`method`) as GPU_RANK sizes it (lora_min_gpus)."""
    if method != "full":
        return _check_lora_fit(model, gpu, method, n_gpus)
    n, held = min_gpus(model, gpu, precision)
    how = f"(ZeRO-3, full recompute, micro-batch 1 x {defaults.SEQ_LEN:,} tokens)"
    if n is None:
        raise NoFit(f"{model.name} does not fit {gpu.name} for training {how} however many GPUs share it: each "
                    f"holds {gib_text(held)} whatever their number, {usable_gib(gpu):.1f} GiB usable", held,
                    usable_gib(gpu))
    if n_gpus is not None and n_gpus < n:
        one = training_memory_gib(model, precision, "adamw", 1, defaults.SEQ_LEN, 3, 1, "full")
        states = one["weights"] + one["gradients"] + one["optimizer"]
        raise NoFit(f"{model.name} does not fit {n_gpus:g} x {gpu.name} for training {how}: needs at least {n:,} "
                    f"GPUs ({gib_text(states)} of weights, gradients and Adam states shared over them, beside "
                    f"{gib_text(held)} on each; {usable_gib(gpu):.1f} GiB usable on each)")


def _check_lora_fit(model: Model, gpu: Gpu, method: str, n_gpus: int | None) -> None:
    n, held = lora_min_gpus(model, gpu, base_bits(method))
    if n is None or (n_gpus is not None and n_gpus < n):
        given = "however many GPUs share it" if n is None else f"on {n_gpus:g} (needs at least {n:,})"
        raise NoFit(f"{model.name} does not fit {gpu.name} for {method} (rank {defaults.LORA_RANK}, checkpointed, "
                    f"micro-batch 1 x {defaults.SEQ_LEN:,} tokens, FSDP) {given}: each holds {gib_text(held)}", held,
                    usable_gib(gpu))
