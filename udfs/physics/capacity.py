"""Serving capacity: how many output tokens/s one model copy sustains under continuous
batching, at the largest batch its KV cache and latency target allow, and how many copies
(and GPUs) a traffic level needs. Standard library only.

Decode step (one token for each of `batch` sequences), per GPU of a tensor-parallel group,
as a sum over operations, each on its own roofline:
  weight matrices   max(weight bytes / achieved bandwidth, 2 x params x batch / achieved FLOP/s)
                    (dense layers and routed experts separately: experts see fewer tokens each)
  attention         max(KV bytes of every sequence at its length / bandwidth, its FLOPs / FLOP/s)
  all-reduce        two per layer under tensor parallelism: latency + activations over the link
  engine overhead   fixed time per layer (kernel launches; more for a step beyond the engine's CUDA-graph
                    cap, which then runs eagerly) and per step (scheduler, sampling), and CPU time per running
                    sequence where the engine does not overlap it with the GPU (vLLM V0)
Prefill of the same requests is paid in the same GPU-seconds: over one request lifetime
(`output` steps) the engine also prefills `batch` new prompts, so
  time per output token (TPOT) = step time + batch x prefill compute of one prompt / output
  throughput                   = batch / TPOT.
Concurrency comes from KV capacity under the engine's memory rule (see `udfs.catalogs.engines`),
capped by the engine's batch limit and, when asked, by a TPOT target.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass

from . import calibration as cal
from . import arch, collectives, defaults, moe, queueing, serving
from .arch import decode_attention_width, kv_cache_bytes, prefill_attention_width
from .shape import moe_layer_count
from ..catalogs.catalog import Gpu, Model, Precision, as_precision
from ..catalogs.engines import Engine, MoeKernel, engine as engine_profile
from ..errors import FlopsheetError, MissingFigure, num_error
from .shape import kv_layer_tokens
from ..units import GIB, TB

SERVER_TP = 8        # tensor parallel stays within a server: 8 GPUs on an HGX/DGX board, the most TP_CHOICES tries


class NoFit(FlopsheetError):
    """#NUM!: the weights, or the KV cache asked for, do not fit; `need_gib` and `usable_gib`
    per GPU say by how much."""

    def __init__(self, message: str, need_gib: float = math.nan, usable_gib: float = math.nan):
        super().__init__(message, "#NUM!")
        self.need_gib, self.usable_gib = need_gib, usable_gib


class TooSlow(FlopsheetError):
    """#NUM!: no batch meets a latency target; `best_ms` is what one sequence gets."""

    def __init__(self, message: str, what: str, best_ms: float):
        super().__init__(message, "#NUM!")
        self.what, self.best_ms = what, best_ms


# ---------------------------------------------------------------------------- building blocks

def _bandwidth(gpu: Gpu, precision: Precision | None, eng: Engine) -> float:
    """Achieved bytes/s streaming weights in `precision` (None: the KV cache) on one GPU;
    weight-only formats are dequantised on the way, at a cost."""
    factor = eng.quantized_factor if precision and gpu.weight_only(precision) else 1.0
    return gpu.bandwidth_tbs * TB * eng.bandwidth_fraction(gpu) * factor


def _flops(gpu: Gpu, precision: Precision | str | None, eng: Engine, needed_for: str = "this estimate") -> float:
    """Achieved FLOP/s of the products: the rate of the units they run on times the engine's share,
    never below what the 16-bit units achieve. The engine's shares of 8- and 4-bit peaks (lower
    than of 16-bit: a doubled peak is harder to approach) come from GPUs whose narrow peak is twice
    the 16-bit one; where it is not (Gaudi 3: FP8 = BF16 = 1,835 TFLOPS), the lower share alone made
    FP8 compute at 0.45/0.70 of BF16's rate on the same units, and a 70B job need more GPUs in fp8
    than in bf16. A narrower format's products can always run on the 16-bit units instead
    (dequantised, as weight-only kernels do), so that rate is a floor."""
    peak, bits = serving.peak_flops(gpu, precision, needed_for)
    achieved = peak * eng.matmul_fraction(bits)
    if bits < 16:
        sixteen, _ = serving.peak_flops(gpu, None, needed_for)
        achieved = max(achieved, sixteen * eng.matmul_fraction(16))
    return achieved


def _decode_flops(gpu: Gpu, precision: Precision | str | None, eng: Engine, batch: float) -> float:
    """FLOP/s of a decode step's products. One sequence does 2 FLOPs per weight read: memory-bound
    on any accelerator, so a GPU with no published tensor figure (Apple) is still estimated
    at batch 1 (an infinite rate: no compute term); a larger batch needs the figure."""
    try:
        return _flops(gpu, precision, eng, f"decoding a batch of {batch:g}")
    except MissingFigure:
        if batch <= 1:
            return math.inf
        raise


def _link(gpu: Gpu, n_gpus: int) -> collectives.Link:
    """The link class n GPUs of one server talk over (collectives.link_class)."""
    return collectives.link_class(gpu, n_gpus, f"splitting a model over {n_gpus} GPUs")


def _split(eng: Engine, n_gpus: int) -> int:
    """GPUs that share one step's work: all of them under tensor parallelism, one at a time
    in a layer pipeline (llama.cpp, Accelerate)."""
    return n_gpus if eng.multi_gpu == "tensor" else 1


def layout(gpu: Gpu, eng: Engine, n_gpus: int) -> tuple[int, int]:
    """(tensor-parallel GPUs, pipeline stages) of a copy on `n_gpus`: tensor parallel within one
    server (up to SERVER_TP GPUs, or the whole NVLink domain of a rack-scale system such as an
    NVL72); a copy larger than that is a pipeline of servers, SERVER_TP GPUs a stage, joined by
    the network between servers (cal.NETWORK_GBS_PER_GPU)."""
    if n_gpus <= SERVER_TP or eng.multi_gpu != "tensor":
        return _split(eng, n_gpus), 1
    domain = int(gpu.need("system_gpus", f"a copy on {n_gpus} GPUs (GPUs one NVLink domain holds)"))
    tp = n_gpus if domain >= n_gpus else SERVER_TP
    if n_gpus % tp:
        raise num_error(f"a copy on {n_gpus} GPUs: give a multiple of {tp} (GPUs per server), one pipeline "
                        f"stage a server")
    return tp, n_gpus // tp


def _stage_hops_s(model: Model, tokens: float, stages: int) -> float:
    """The hand-offs of one pipeline round between servers: `stages` sends (the last back to the
    first for the next token) of the tokens' 16-bit activations over each GPU's network link."""
    if stages <= 1:
        return 0.0
    return stages * collectives.send_recv_s(collectives.network(), tokens * model.dim("hidden") * 2)


def _dense_matmul_params(model: Model) -> float:
    """Of arch.matmul_params, those outside the routed experts (attention, dense layers, shared experts, the head): what
    a decode step's dense products and a data-parallel attention rank's own share of a prompt multiply."""
    per_expert, _, k = moe.routed(model)
    return arch.matmul_params(model) - k * per_expert


def _product_seconds_per_token(model: Model, params: float, precision: Precision, rate: float,
                               rate16: Callable[[], float]) -> float:
    """Seconds of matrix products a token costs over `params` product parameters: at the format's rate, except
    the parts a quantized checkpoint keeps at 16 bits when served in its format (arch.kept_streamed: gpt-oss's
    BF16 attention, router and head), which run on the 16-bit units (`rate16`, asked only then)."""
    kept = arch.kept_streamed(model, precision)
    return 2 * ((params - kept) / rate + (kept / rate16() if kept else 0.0))


def _dp_attention(model: Model, eng: Engine, split: int) -> bool:
    """Expert parallel with data-parallel attention (Engine.dp_attention): only MoE models over several GPUs."""
    return eng.dp_attention and model.is_moe and split > 1


def _kv_replication(model: Model, split: int) -> float:
    """Under tensor parallelism each GPU holds at least one KV head: models with fewer KV
    heads than GPUs replicate them."""
    if model.kv_lora_rank:
        return float(split)          # MLA's one latent vector is replicated on every GPU
    return max(1.0, split / model.kv_head_count)


def _allreduce_s(model: Model, gpu: Gpu, n_gpus: int, tokens: float) -> float:
    """Two all-reduces per layer of the tokens' 16-bit activations, as the engines run them
    (collectives.engine_all_reduce_s: on NVLink the faster of a one-shot kernel and NCCL's ring)."""
    if n_gpus <= 1:
        return 0.0
    size = tokens * model.dim("hidden") * 2
    return model.dim("layers") * 2 * collectives.engine_all_reduce_s(_link(gpu, n_gpus), n_gpus, size)


def _overhead_s(model: Model, gpu: Gpu, eng: Engine, n_gpus: int, tokens: float) -> float:
    """Fixed time of a step of `tokens` tokens: per step, per layer (with or without a CUDA graph:
    Engine.layer_us), and a layer pipeline's hand-offs."""
    stages = layout(gpu, eng, n_gpus)[1]      # each stage runs a step per micro-batch
    fixed = stages * eng.step_overhead_us + model.dim("layers") * eng.layer_us(tokens / stages, gpu)
    if eng.multi_gpu != "tensor" and n_gpus > 1:
        fixed += (n_gpus - 1) * collectives.send_recv_s(_link(gpu, 2), 0) * 1e6   # a hand-off per boundary
    return fixed * 1e-6


# ---------------------------------------------------------------------------- decode and prefill

@dataclass(frozen=True)
class Step:
    """Seconds of one decode step, by operation (per GPU, all GPUs working at once). `weights` is made of the
    larger of the dense weights' read (`stream`) and their products (`products`), plus the routed experts (`experts`)
    and `routing`: the parts are kept so that a diagnostic reads them rather than working them out again."""
    weights: float
    attention: float
    allreduce: float
    overhead: float
    experts: float = 0.0      # the routed experts (_experts_s)
    stream: float = 0.0       # the dense weights' read (every weight outside the routed experts)
    products: float = 0.0     # the dense weights' matrix products
    routing: float = 0.0      # the tokens' activations to their experts and back (moe.routing_seconds)

    @property
    def total(self) -> float:
        return self.weights + self.attention + self.allreduce + self.overhead


def decode_step(model: Model, gpu: Gpu, precision: Precision | str = "bf16", batch: float = 1,
                context: float = defaults.CONTEXT_TOKENS,
                n_gpus: int = 1, kv_precision: Precision | str | None = None, eng: Engine | str | None = None) -> Step:
    """One decode step of `batch` sequences holding `context` tokens each (the mean length);
    #NUM! with the figures when they do not fit (check_fit).
    A model known only by its size has borrowed a catalog layout already (resolve.model)."""
    eng = engine_profile(eng, gpu)
    precision = as_precision(precision)
    kv_precision = kv_precision or eng.kv_format(precision)
    check_fit(model, gpu, precision, context, batch, n_gpus, kv_precision, eng)
    return _decode_step(model, gpu, precision, batch, context, n_gpus, kv_precision, eng)


def _decode_step(model: Model, gpu: Gpu, precision: Precision, batch: float, context: float, n_gpus: int,
                 kv_precision: Precision | str, eng: Engine) -> Step:
    """decode_step for a deployment already checked to fit."""
    split = _split(eng, n_gpus)
    tp, stages = layout(gpu, eng, n_gpus)
    bandwidth = _bandwidth(gpu, precision, eng) / stages   # each micro-batch re-reads its stage's weights
    matmul = _decode_flops(gpu, precision, eng, batch)

    dense = _dense_matmul_params(model)
    dense_stream = serving.streamed_bytes(model, precision, 0)    # batch 0: no expert touched
    dp = _dp_attention(model, eng, split)                   # each GPU reads the dense weights whole, for its sequences
    products = _product_seconds_per_token(model, dense, precision, matmul, lambda: _decode_flops(gpu, None, eng, batch))
    stream, compute = dense_stream / bandwidth / (1 if dp else split), products * batch / split
    experts = _experts_s(model, precision, batch, bandwidth, matmul, split, eng)
    routing = moe.routing_seconds(model, batch, _bandwidth(gpu, None, eng) / stages, split)
    weights = max(stream, compute) + (experts + routing)

    # KV cache by attention layout: global layers read the whole context, local (sliding or
    # chunked) layers at most their window; MLA one latent vector (arch.kv_cache_bytes)
    kv_bytes = kv_cache_bytes(model, context, batch, kv_precision) * kv_share(model, n_gpus, eng) * n_gpus / split
    attn_flops = 2 * model.dim("heads") * decode_attention_width(model) * kv_layer_tokens(model, context) * batch / split
    attn_rate = _decode_flops(gpu, None, eng, batch)
    attention = max(kv_bytes / _bandwidth(gpu, None, eng), attn_flops / attn_rate)
    links = _exchange_s(model, gpu, tp, batch / stages, eng) + _stage_hops_s(model, batch / stages, stages)
    cpu = (eng.sequence_overhead_us or 0.0) * 1e-6 * batch     # per running sequence, the GPU waiting (engine profile)
    return Step(weights, attention, links, _overhead_s(model, gpu, eng, n_gpus, batch) + cpu, experts, stream, compute,
                routing)


def _experts_s(model: Model, precision: Precision, batch: float, bandwidth: float, rate: float, split: int,
               eng: Engine) -> float:
    """A decode step's routed experts per GPU (moe.expert_seconds), at the weight bandwidth and product rate the
    step already holds: one grouped kernel per GEMM over the touched experts a GPU runs (a 1/split slice of each,
    or under expert parallelism E/split whole experts and the busiest GPU's count) and the fixed time a MoE layer."""
    per_expert, _, _ = moe.routed(model)
    if not per_expert:
        return 0.0
    ep = split if eng.expert_parallel else 1                # EP: E/n whole experts a GPU, else a slice of each
    params = per_expert / model.moe_layer_count / (split // ep)
    return moe.expert_seconds(model, batch, params, precision.bytes_per_param, bandwidth, rate, ep, moe_layer_us(eng))


def moe_layer_us(eng: Engine) -> float:
    """Fixed time a MoE layer of a decode step costs beyond its experts' bytes (us): calibration.MOE_LAYER_US, unless
    the profile sets its own (Engine.moe_layer_us: the accuracy harness re-chooses it within folds)."""
    return cal.MOE_LAYER_US if eng.moe_layer_us is None else eng.moe_layer_us


def _exchange_s(model: Model, gpu: Gpu, tp: int, tokens: float, eng: Engine) -> float:
    """A step's traffic within a group: two all-reduces per layer under tensor parallelism, or, with
    data-parallel attention, two all-to-alls per MoE layer of the tokens each GPU serves (moe.expert_exchange_s)."""
    if _dp_attention(model, eng, tp):
        return moe.expert_exchange_s(model, tokens / tp, tp, _link(gpu, tp))
    return _allreduce_s(model, gpu, tp, tokens)


def attention_flops(model: Model, prompt_tokens: float, batch: float = 1) -> float:
    """Causal attention of a prompt: QK and PV over half the square (local layers over at most their
    window), each head at its key + value width (arch.prefill_attention_width); it grows with the square of the
    prompt."""
    return model.dim("heads") * prefill_attention_width(model) * prompt_tokens * kv_layer_tokens(model, prompt_tokens) \
        * batch


def _attention_rate(gpu: Gpu) -> float:
    """FLOP/s of prefill attention: flash-attention kernels on the 16-bit units (whatever the weights'
    format) at their achieved share (calibration.ATTENTION_FRACTION)."""
    return serving.peak_flops(gpu, None, "prefill attention")[0] * cal.ATTENTION_FRACTION


def prefill_compute_s(model: Model, gpu: Gpu, precision: Precision | str, prompt_tokens: float, batch: float,
                      n_gpus: int, eng: Engine) -> float:
    """Compute-bound part of a prefill (what it adds to a step that reads the weights anyway): the
    matrix products at the weight format's rate (a checkpoint's 16-bit parts at the 16-bit rate), attention
    at flash attention's."""
    split = _split(eng, n_gpus)
    tp, stages = layout(gpu, eng, n_gpus)
    work = _prompt_work_s(model, gpu, as_precision(precision), eng, arch.matmul_params(model), prompt_tokens, batch)
    return work / split \
        + (_exchange_s(model, gpu, tp, prompt_tokens * batch, eng) + _stage_hops_s(model, prompt_tokens * batch, stages)) \
        / stages


def prefill_seconds(model: Model, gpu: Gpu, precision: Precision | str = "bf16",
                    prompt_tokens: float = defaults.PROMPT_TOKENS,
                    batch: float = 1, n_gpus: int = 1, eng: Engine | str | None = None) -> float:
    """Time to process `batch` prompts of `prompt_tokens` alone: the
    compute, never less than reading the weights once per chunk of the engine's token budget,
    plus the engine's fixed costs per chunk."""
    eng = engine_profile(eng, gpu)
    precision = as_precision(precision)
    check_fit(model, gpu, precision, prompt_tokens, batch, n_gpus, None, eng)
    return _prefill_s(model, gpu, precision, prompt_tokens, batch, n_gpus, eng)


def _prefill_s(model: Model, gpu: Gpu, precision: Precision, prompt_tokens: float, batch: float, n_gpus: int,
               eng: Engine) -> float:
    """prefill_seconds for a deployment already checked to fit."""
    split = _split(eng, n_gpus)
    stages = layout(gpu, eng, n_gpus)[1]      # a lone prompt passes the stages one after another
    tokens = prompt_tokens * batch
    dp = _dp_attention(model, eng, split)
    own = tokens / split if dp and batch >= split else tokens     # data-parallel attention: each GPU its own prompts
    chunks = _chunks(eng, gpu, own)
    compute = prefill_compute_s(model, gpu, precision, prompt_tokens, batch, n_gpus, eng) * stages
    if dp and batch < split:        # data-parallel attention: fewer prompts than GPUs leave GPUs idle (upper bound)
        compute *= split / max(1.0, batch)
    reads = chunks * _read_bytes(model, precision, n_gpus, eng, split, dp) * stages / _bandwidth(gpu, precision, eng)
    # added, not max(): a chunk of a few hundred tokens puts the products near the ridge point (intensity =
    # tokens FLOPs a weight byte), where a kernel reaches neither roof; long chunks are compute-bound anyway
    return (compute + reads + chunks * (_overhead_s(model, gpu, eng, n_gpus, own / chunks)
                                        + _eager_moe_s(model, eng, own / chunks / stages))) / _moe_prefill_share(model, eng)


def _chunks(eng: Engine, gpu: Gpu, tokens: float) -> int:
    """Passes a prefill of `tokens` takes within the engine's token budget an iteration (Engine.token_budget; one
    without a budget prefills them at once)."""
    budget = eng.token_budget(gpu)
    return max(1, math.ceil(tokens / budget)) if budget else 1


def _moe_prefill_share(model: Model, eng: Engine) -> float:
    """Share of its modelled speed a MoE model's prefill pass reaches on this engine (Engine.moe_prefill_share; 1 for
    dense models and engines without one). vLLM's is chosen from SemiAnalysis InferenceX's gpt-oss-120b first tokens at
    4 in flight, whose lone prompts take 1.7-3.3x the modelled pass on 1-8 H100, H200 and B200 whatever the prompt and
    the GPUs (docs/accuracy.md, "SemiAnalysis InferenceX: gpt-oss-120b"): the rows do not say which part is slow, so
    the whole pass takes it."""
    return (eng.moe_prefill_share or 1.0) if model.is_moe else 1.0


def _eager_moe_s(model: Model, eng: Engine, tokens: float) -> float:
    """Host time a prefill pass of `tokens` tokens (more than the engine's CUDA graphs hold, so run eagerly) pays in
    its MoE layers beyond the generic per-layer launches (Engine.layer_us): the engine's eager_moe_layer_us a MoE
    layer (routing, expert dispatch and the host synchronisations around them), added to the GPU time, not hidden
    under it: InferenceX's DeepSeek-R1 first tokens on 8 B200 grow by what the products add from 1k to 8k tokens
    over a fixed part (docs/accuracy.md, "SemiAnalysis InferenceX" (6))."""
    if not eng.eager_moe_layer_us or (eng.graph_max_batch is not None and tokens <= eng.graph_max_batch):
        return 0.0
    return moe_layer_count(model) * eng.eager_moe_layer_us * 1e-6


def _shared_s(model: Model, gpu: Gpu, precision: Precision, n_gpus: int, eng: Engine, tokens: float) -> float:
    """What a prefill and a decode step in the same engine iteration pay once: one read of the weights and
    the iteration's fixed costs (the prefill already counts both)."""
    split = _split(eng, n_gpus)
    stages = layout(gpu, eng, n_gpus)[1]
    per_gpu = _read_bytes(model, precision, n_gpus, eng, split, _dp_attention(model, eng, split))
    return per_gpu * stages / _bandwidth(gpu, precision, eng) + _overhead_s(model, gpu, eng, n_gpus, tokens)


def _read_bytes(model: Model, precision: Precision, n_gpus: int, eng: Engine, split: int, dp: bool) -> float:
    """Weight bytes one GPU reads in a pass over the model: its own share under data-parallel attention, else
    the weights split over the group (a layer pipeline reads them all, one GPU at a time)."""
    return _weights_gib(model, precision, n_gpus, eng) * GIB if dp else arch.weight_bytes(model, precision) / split


def _first_token_s(model: Model, gpu: Gpu, precision: Precision, prompt_tokens: float, batch: float, n_gpus: int,
                   eng: Engine, step: Step | None, running: float, rate: float = 0.0, load: str = "",
                   admission_steps: int | None = None) -> float:
    """Time to the first token of `batch` prompts: the prefill, whose last position gives the first token (no
    decode step of its own). With `running` sequences decoding, the request first waits out the iteration in
    progress, and the iteration that prefills it also decodes them: their step beyond what the prefill already
    pays (the weights' read, the fixed costs). With prompts arriving at `rate` a second (Poisson), the
    iteration in progress may carry other prompts, and those arriving in it join the request's own iteration
    (queueing.iteration_wait_s); with nothing decoding, the prompts queue for the GPU one after another
    (queueing.prefill_wait_s). An engine that runs several decode steps per scheduler call (vLLM V0's
    multi-step scheduling; SGLang polling for new requests once every `admission_steps` decode steps, its
    --scheduler-recv-interval) admits the request only when the window of steps in progress ends. Below one
    running the two are weighted by the share of time something decodes, which an arrival sees (PASTA):
    `running`, the mean number decoding, is that share when they seldom overlap, so the answer is continuous
    where the mean crosses one. `load` names the load as the caller gave it, for the #NUM! message."""
    load = load or f"{rate:g} requests/s"
    share = min(1.0, running) if step is not None else 0.0
    prefill = _prefill_s(model, gpu, precision, prompt_tokens, batch, n_gpus, eng)    # once, for both answers
    idle = _finite(queueing.prefill_wait_s(rate, prefill), load) + prefill if share < 1 else 0.0
    if share <= 0 or step is None:
        return idle
    busy = _busy_first_token_s(model, gpu, precision, prompt_tokens, batch, n_gpus, eng, step, rate, load, prefill,
                               admission_steps or eng.admission_steps)
    return share * busy + (1 - share) * idle


def _busy_first_token_s(model: Model, gpu: Gpu, precision: Precision, prompt_tokens: float, batch: float,
                        n_gpus: int, eng: Engine, step: Step, rate: float, load: str, prefill: float,
                        admission_steps: int) -> float:
    """_first_token_s while sequences decode: the wait for the iteration in progress, the `prefill` (_prefill_s),
    the running step beyond what the prefill pays, and the prompts that joined the request's own iteration."""
    carried = max(0.0, step.total - _shared_s(model, gpu, precision, n_gpus, eng, prompt_tokens * batch))
    added = prefill_compute_s(model, gpu, precision, prompt_tokens, 1, n_gpus, eng)    # what a prompt adds to an iteration
    # a multi-step engine (or one polling for requests every few steps) admits new requests only between windows
    wait, _ = queueing.iteration_wait_s(rate, step.total * admission_steps, added)
    joined = 2 * rate * _finite(wait, load) * added     # prompts arriving in the iteration it lands in share its own
    return wait + prefill + carried + joined


def _finite(wait_s: float, load: str) -> float:
    """#NUM! when the prompts arriving at `load` (as the caller gave it) alone need more than the GPU's time."""
    if not math.isfinite(wait_s):
        raise num_error(f"{load}: their prefills alone need more than the GPUs' time (no steady state)")
    return wait_s


def time_to_first_token_s(model: Model, gpu: Gpu, precision: Precision | str = "bf16",
                          prompt_tokens: float = defaults.PROMPT_TOKENS,
                          batch: float = 1, n_gpus: int = 1, eng: Engine | str | None = None,
                          running: float | None = None) -> float:
    """Prefill of the prompts, whose last position gives the first token: what a lone request sees
    (`running` blank or 0). A request that arrives while `running` sequences decode first waits for the
    step in progress, and its prefill shares an iteration with their decode (_first_token_s)."""
    eng = engine_profile(eng, gpu)
    precision = as_precision(precision)
    check_fit(model, gpu, precision, prompt_tokens, max(batch, running or 0), n_gpus, None, eng)
    step = _decode_step(model, gpu, precision, max(1.0, running), prompt_tokens, n_gpus, eng.kv_format(precision),
                        eng) if running else None
    return _first_token_s(model, gpu, precision, prompt_tokens, batch, n_gpus, eng, step, running or 0)


def concurrency_cap(model: Model, gpu: Gpu, precision: Precision, prompt_tokens: float, output_tokens: float,
                    n_gpus: int, kv: Precision | str, eng: Engine) -> tuple[int, str]:
    """(requests the engine runs at once, what limits them): as many as their KV cache fits (kv_batch), within
    the engine's own batch cap (Engine.batch_cap)."""
    fits = kv_batch(model, gpu, precision, prompt_tokens, output_tokens, n_gpus, kv, eng)
    cap = eng.batch_cap(gpu)
    return (fits, "KV cache") if not cap or fits <= cap else (cap, "engine batch cap")


@dataclass(frozen=True)
class Load:
    """A steady load on one copy: requests arriving a second, sequences decoding, the mean iteration (each
    running sequence's time per output token) and the mean time to first token."""
    rate: float
    running: float
    iteration_s: float
    ttft_s: float


LOAD_TOLERANCE = 1e-9  # relative width at which the bisections for a load stop (rate, requests decoding)


def load_ttft(model: Model, gpu: Gpu, precision: Precision | str, prompt_tokens: float, output_tokens: float,
              n_gpus: int = 1, eng: Engine | str | None = None, kv_precision: Precision | str | None = None,
              rate: float | None = None, concurrency: float | None = None, load: str = "",
              admission_steps: int | None = None, requests: float | None = None) -> Load:
    """Time to first token of requests arriving at `rate` a second (Poisson: an open load), or kept at
    `concurrency` in flight (a closed loop: each client sends its next request when its answer ends, so the
    rate is concurrency / (TTFT + answer x the mean iteration); by the arrival theorem of closed queueing
    networks (Lavenberg and Reiser, J. Appl. Prob. 17, 1980) a request finds the other concurrency - 1 clients'
    traffic, taken as Poisson at their rate: one client finds nothing running). The sequences decoding follow
    from Little's law: rate x answer x the mean iteration, an iteration being the decode step of that many
    sequences plus the prompts it prefills (queueing.iteration_wait_s): the fixed point found by bisection
    (_open_running; plain rounds crawl near saturation), in a closed loop inside a bisection on the rate
    (_closed_load). #NUM! when it is more than the engine runs at once. `load` names the load in the caller's
    unit for the messages (default: the rate a second, or the requests in flight). `admission_steps`: decode steps
    between the engine's polls for new requests (default the profile's, Engine.admission_steps). `requests`: a
    closed loop run as a benchmark runs it, that many requests in all, the first `concurrency` sent at once
    (first_wave_s): ttft_s is then the run's mean over its requests, the first wave's weighted in."""
    eng = engine_profile(eng, gpu)
    precision = as_precision(precision)
    if (rate is None) == (concurrency is None) or (rate or concurrency or 0) <= 0:
        raise num_error("give one load: requests per second or requests in flight, > 0")
    load = load or (f"{rate:g} requests/s" if rate else f"{concurrency:g} requests in flight")
    kv = kv_precision or eng.kv_format(precision)
    context = prompt_tokens + output_tokens / 2
    check_fit(model, gpu, precision, context, max(1.0, concurrency or 1), n_gpus, kv, eng)
    limit, limited = concurrency_cap(model, gpu, precision, prompt_tokens, output_tokens, n_gpus, kv, eng)
    added = prefill_compute_s(model, gpu, precision, prompt_tokens, 1, n_gpus, eng)

    def at(running: float, arrivals: float) -> tuple[Step, float, float]:
        """(decode step, mean iteration, TTFT) with `running` decoding and prompts arriving at `arrivals`."""
        step = _decode_step(model, gpu, precision, max(1.0, running), context, n_gpus, kv, eng)
        iteration = _finite(queueing.iteration_wait_s(arrivals, step.total, added)[1], load)
        return step, iteration, _first_token_s(model, gpu, precision, prompt_tokens, 1, n_gpus, eng, step,
                                               running, arrivals, load, admission_steps)

    def running_at(arrivals: float) -> float:
        return _open_running(lambda r: arrivals * output_tokens * at(r, arrivals)[1], limit)

    if rate:
        arrivals, running = rate, running_at(rate)
    else:
        arrivals, running = _closed_load(running_at, at, concurrency or 1, output_tokens, 1 / added)
    if running > limit:
        holds = "the KV cache holds" if limited == "KV cache" else "the engine's batch cap allows"
        raise num_error(f"{load} keep more requests decoding than {holds} ({limit:,}) "
                        f"on {n_gpus} x {gpu.name} with {eng.name}: no steady state")
    _, iteration, ttft = at(running, arrivals)
    if concurrency:
        arrivals = concurrency / (ttft + output_tokens * iteration)
        if requests and requests > concurrency:
            wave = first_wave_s(model, gpu, precision, prompt_tokens, concurrency, n_gpus, eng)
            ttft = (concurrency * wave + (requests - concurrency) * ttft) / requests
    return Load(arrivals, running, iteration, ttft)


def first_wave_s(model: Model, gpu: Gpu, precision: Precision, prompt_tokens: float, clients: float, n_gpus: int,
                 eng: Engine) -> float:
    """Mean time to first token of `clients` prompts sent at once to an idle engine (a closed-loop benchmark's
    first wave: every client's first request leaves together). They queue for the prefill: the engine takes them
    in chunks of its token budget, and a prompt's first token comes when its chunk ends, so with n equal chunks
    the mean is (n + 1) / 2n of the whole wave's prefill (_prefill_s of all of them)."""
    whole = _prefill_s(model, gpu, precision, prompt_tokens, clients, n_gpus, eng)
    chunks = _chunks(eng, gpu, prompt_tokens * clients)
    return whole * (chunks + 1) / (2 * chunks)


def _open_running(decoding: Callable[[float], float], limit: int) -> float:
    """The requests decoding at an open load: r = decoding(r) (Little's law with r running). Below one running
    the step is one sequence's, so decoding(1) is the answer when it is at most 1; else bisection on [1, limit]
    to LOAD_TOLERANCE (decoding grows about linearly with r, so there is one crossing), or past `limit` when
    even `limit` running brings in more than `limit`."""
    low = decoding(1.0)
    if low <= 1:
        return low
    if decoding(float(limit)) > limit:
        return math.inf
    lo, hi = 1.0, float(limit)
    while hi - lo > LOAD_TOLERANCE * hi:
        mid = (lo + hi) / 2
        lo, hi = (mid, hi) if decoding(mid) > mid else (lo, mid)
    return hi


def _closed_load(running_at: Callable[[float], float], at: Callable[[float, float], tuple[Step, float, float]],
                 clients: float, output_tokens: float, top: float) -> tuple[float, float]:
    """(arrivals a second an arrival finds, requests decoding) of a closed loop of `clients`: the rate a at
    which the other clients' requests, each taking TTFT + answer x iteration at that load, make a x that time
    = clients - 1 (both grow with a, so bisection on [0, top), top the rate whose prefills fill the GPU).
    Requests decoding inf when no rate within what the engine runs at once closes the loop."""
    others = clients - 1
    if others <= 0:
        return 0.0, 0.0

    def past(a: float) -> bool:       # the rate reaches the loop's own, or leaves no steady state
        running = running_at(a) if a < top else math.inf
        if not math.isfinite(running):
            return True
        _, iteration, ttft = at(running, a)
        return a * (ttft + output_tokens * iteration) >= others

    lo, hi = 0.0, top
    while hi - lo > LOAD_TOLERANCE * hi:
        mid = (lo + hi) / 2
        lo, hi = (lo, mid) if past(mid) else (mid, hi)
    running = running_at(lo)
    _, iteration, ttft = at(running, lo)
    closed = lo * (ttft + output_tokens * iteration) >= others * (1 - 1e-6)
    return lo, running if closed else math.inf


# ---------------------------------------------------------------------------- fit (one check for every estimate)

def usable_gib(gpu: Gpu, eng: Engine, fixed_gib: float) -> float:
    """GiB per GPU the engine lets the weights, its reserve (`fixed_gib` together) and the KV
    cache use: rule "total", its share of all memory; rule "free", what the weights and reserve
    take plus its share of what they leave (all of memory when they leave nothing)."""
    total = gpu.memory_gib            # what CUDA / ROCm reports, the figure the engines apportion
    if eng.memory_rule == "total":
        return total * eng.memory_fraction
    left = total - fixed_gib
    return fixed_gib + left * eng.memory_fraction if left > 0 else total


def _weights_gib(model: Model, precision: Precision | str, n_gpus: int, eng: Engine) -> float:
    """Weights per GPU: 1/n of them, or with data-parallel attention the routed experts split n ways and
    the rest whole on every GPU (moe.expert_parallel_weight_bytes)."""
    if _dp_attention(model, eng, _split(eng, n_gpus)):
        return moe.expert_parallel_weight_bytes(model, precision, n_gpus, "replicated") / GIB
    return arch.weight_bytes(model, precision) / n_gpus / GIB


def expert_padding_gib(model: Model, precision: Precision | str, experts: float, shard: float, hidden_multiple: int,
                       shard_multiple: int, copied_bits: float = 0.0) -> float:
    """GiB a kernel adds to `experts` MoE experts per GPU: their matrices padded (the hidden size rounded up to a
    multiple of `hidden_multiple`, each shard's expert width, `shard`: the FFN width / the tensor-parallel GPUs, to one
    of `shard_multiple`; the gate, up and down matrices stored at the format's bits, w13 being 2 x the shard: the
    experts are gated), and `copied_bits` a value of the padded matrices held twice (vLLM's Triton path keeps the
    checkpoint's block scales beside its swizzled copy: 0.25 bits), in every MoE layer. gpt-oss-120b under Marlin
    (256 / 128: 2,880 -> 3,072 x 2,944): 128 experts x 36 layers x 3 matrices at 4.25 bits, 5.13 GiB on one GPU."""
    hidden = model.dim("hidden")
    padded = math.ceil(hidden / hidden_multiple) * hidden_multiple * math.ceil(shard / shard_multiple) * shard_multiple
    per_matrix = (padded - hidden * shard) * as_precision(precision).bits_per_param + padded * copied_bits
    return 3 * per_matrix * experts * (model.moe_layers or model.dim("layers")) / 8 / GIB


def kernel_padding_gib(model: Model, gpu: Gpu, precision: Precision | str, n_gpus: int, eng: Engine) -> float:
    """GiB per GPU the engine release's MoE kernel adds to the expert weights (kernel_padding)."""
    return kernel_padding(model, gpu, precision, n_gpus, eng)[1]


def kernel_padding(model: Model, gpu: Gpu, precision: Precision | str, n_gpus: int,
                   eng: Engine) -> tuple[MoeKernel | None, float]:
    """The kernel the engine release runs this format's MoE experts with on this GPU, and the GiB per GPU it adds to
    the expert weights (Engine.moe_kernel, udfs/data/moe_kernels.csv: vLLM 0.10.1 runs MXFP4 experts on Hopper through
    Marlin, 0.12 and later through Triton; Marlin on SM 8.x in every release; 0.12-0.14's Triton path also keeps the
    checkpoint's block scales beside its swizzled copy). Each GPU pads its own experts: a slice of every expert under
    tensor parallelism, E/n whole ones under expert parallelism; a layer pipeline's stage holds its share of the
    layers. (None, 0) for dense models and engines or formats with no row; #N/A for a vLLM release or GPU the table
    does not read."""
    kernel = eng.moe_kernel(gpu, precision) if model.is_moe else None
    if kernel is None:
        return None, 0.0
    tp, stages = layout(gpu, eng, n_gpus)
    stages = stages if eng.multi_gpu == "tensor" else n_gpus      # a layer pipeline: each GPU holds 1/n of the layers
    group = _split(eng, n_gpus)
    if eng.expert_parallel and group > 1:
        experts, shard = float(math.ceil((model.n_experts or 0) / group)), float(model.dim("ffn"))
    else:
        experts, shard = float(model.n_experts or 0), model.dim("ffn") / tp
    padding = expert_padding_gib(model, precision, experts, shard, kernel.hidden_multiple, kernel.shard_multiple,
                                 kernel.copied_bits)
    return kernel, padding / stages


def ffn_width(model: Model) -> float:
    """The MLP width one token passes through: the FFN, or a MoE token's experts (routed and shared) side by
    side, or the dense layers' FFN where wider."""
    width = model.dim("ffn")
    if model.is_moe:
        width *= (model.experts_per_token or 1) + (model.shared_experts or 0)
    return max(width, model.dense_ffn or 0)


def profile_run_gib(model: Model, gpu: Gpu, n_gpus: int, eng: Engine) -> float:
    """GiB per GPU a vLLM engine's start-up profile run peaks at beyond the weights, which it subtracts with them
    before sizing the KV cache (vllm/v1/worker/gpu_worker.py determine_available_memory: total x
    gpu_memory_utilization - the profile's peak; gpu_model_runner.py profile_run: a forward pass of
    max_num_batched_tokens tokens, then the sampler on min(max_num_seqs, tokens) rows). The forward peaks in the
    MLP block: the residual and the block's input (2 x hidden) beside the gate-and-up output and its activation
    (3 x the FFN width, 2 x ungated, split over the tensor-parallel GPUs), 16-bit values a token. The sampler runs
    after the forward has freed those (it gets the last token's hidden states only) and runs top-k and top-p on
    rows x vocabulary entries of cal.SAMPLER_PEAK_BYTES each where it sorts (Engine.sampler_sorts: 0.8-0.16), of
    cal.SAMPLER_PEAK_BYTES_IN_PLACE where it works in place (0.17.0 on), cal.SAMPLER_PEAK_BYTES_FLASHINFER where
    FlashInfer's sampler runs on a release that sorts otherwise (Engine.flashinfer_sampler: FlashInfer installed in
    0.8-0.11.0), on every GPU: the peak is the larger of the two.
    0 for engines that size their cache another way (Engine.profile_tokens)."""
    tokens = eng.profile_tokens(gpu)
    if not tokens:
        return 0.0
    tp = layout(gpu, eng, n_gpus)[0]
    values = 2 * model.dim("hidden") + (3 if model.gated_mlp else 2) * ffn_width(model) / tp
    rows = min(eng.batch_cap(gpu) or tokens, tokens)
    per_entry = (cal.SAMPLER_PEAK_BYTES_FLASHINFER if eng.flashinfer_sampler else
                 cal.SAMPLER_PEAK_BYTES if eng.sampler_sorts else cal.SAMPLER_PEAK_BYTES_IN_PLACE)
    return max(tokens * values * 2, rows * model.dim("vocab") * per_entry) / GIB


def engine_reserve_gib(model: Model, gpu: Gpu, n_gpus: int, eng: Engine) -> float:
    """What the engine holds per GPU beside the weights and the KV cache: its flat reserve (CUDA context,
    workspaces, collective buffers) and, for vLLM, its profile run's peak (profile_run_gib)."""
    return eng.activation_reserve_gib + profile_run_gib(model, gpu, n_gpus, eng)


@dataclass(frozen=True)
class Held:
    """What a GPU holds before its KV cache, per GPU: the weights as the engine holds them (the checkpoint's share and
    the padding its release's MoE kernel adds, `kernel` the kernel counted) and the engine's reserve, and what the
    engine's memory rule leaves usable for them and the KV cache (usable_gib)."""
    weights_gib: float
    padding_gib: float
    kernel: MoeKernel | None
    reserve_gib: float
    usable_gib: float

    @property
    def fixed_gib(self) -> float:
        return self.weights_gib + self.reserve_gib

    @property
    def kv_gib(self) -> float:
        """What the KV cache gets (0 or less: the weights and the reserve do not fit)."""
        return self.usable_gib - self.fixed_gib


def held(model: Model, gpu: Gpu, precision: Precision | str, n_gpus: int, eng: Engine) -> Held:
    """The one count of weights + kernel padding + reserve per GPU that every fit, KV budget and #NUM! reads (one
    lookup of the release's MoE kernel: the kernel a message names is the one counted)."""
    kernel, padding = kernel_padding(model, gpu, precision, n_gpus, eng)
    weights = _weights_gib(model, precision, n_gpus, eng) + padding
    reserve = engine_reserve_gib(model, gpu, n_gpus, eng)
    return Held(weights, padding, kernel, reserve, usable_gib(gpu, eng, weights + reserve))


def kv_share(model: Model, n_gpus: int, eng: Engine) -> float:
    """Share of a sequence's KV cache each GPU holds: 1/n, more where KV heads are replicated; with
    data-parallel attention each GPU holds its own sequences' cache whole (1/n of the batch's)."""
    if _dp_attention(model, eng, _split(eng, n_gpus)):
        return 1 / n_gpus
    return _kv_replication(model, min(_split(eng, n_gpus), SERVER_TP)) / n_gpus   # replicated within a stage


def kv_per_sequence_gib(model: Model, tokens: float, n_gpus: int, kv_precision: Precision | str, eng: Engine) -> float:
    """KV cache of one sequence of `tokens` per GPU (replicated where a GPU holds fewer KV heads than one)."""
    return kv_cache_bytes(model, tokens, 1, kv_precision) * kv_share(model, n_gpus, eng) / GIB


def gib_text(gib: float) -> str:
    """A memory need as text; an absurd input (1e308 tokens) needs more than any number says."""
    return f"{gib:,.1f} GiB" if gib < 1e12 else "over 10^12 GiB"


def no_fit(model: Model, gpu: Gpu, precision: Precision | str, n_gpus: int, eng: Engine, kv_gib: float = 0.0,
           what: str = "", memory: Held | None = None) -> NoFit:
    """#NUM! saying by how much a deployment does not fit: what it needs per GPU (weights, with the padding the
    release's MoE kernel adds, named with the release, the engine's reserve, the KV cache asked for) against what the
    engine's memory rule leaves usable. `memory`: the caller's held() for these inputs (else counted here)."""
    memory = memory or held(model, gpu, precision, n_gpus, eng)
    kernel, padding = memory.kernel, memory.padding_gib
    weights_text = f"{gib_text(memory.weights_gib)} weights" + (
        f", {padding:.1f} GiB of them {eng.name} {eng.release}'s {kernel.kernel} padding" if kernel and padding else "")
    fixed = memory.fixed_gib
    kv = f" + {gib_text(kv_gib)} KV cache{f' ({what})' if what else ''}" if kv_gib else ""
    return NoFit(f"{model.name} at {as_precision(precision).name} does not fit on {n_gpus} x {gpu.name} with "
                 f"{eng.name}: needs {gib_text(fixed + kv_gib)} per GPU ({weights_text} + "
                 f"{memory.reserve_gib:.1f} GiB engine reserve{kv}), {memory.usable_gib:.1f} GiB usable on {gpu.name}",
                 fixed + kv_gib, memory.usable_gib)


def _kv_held(model: Model, gpu: Gpu, precision: Precision | str, n_gpus: int, eng: Engine) -> Held:
    """held(), #NUM! with the figures when the weights (with the release's kernel padding) and the reserve leave the
    KV cache nothing."""
    memory = held(model, gpu, precision, n_gpus, eng)
    if memory.kv_gib <= 0:
        raise no_fit(model, gpu, precision, n_gpus, eng, memory=memory)
    return memory


def kv_budget_gib(model: Model, gpu: Gpu, precision: Precision | str, n_gpus: int, eng: Engine) -> float:
    """GiB per GPU the engine gives the KV cache; #NUM! with the figures when the weights (with the release's kernel
    padding, kernel_padding_gib) and the reserve do not fit."""
    return _kv_held(model, gpu, precision, n_gpus, eng).kv_gib


def check_fit(model: Model, gpu: Gpu, precision: Precision | str, tokens: float, batch: float, n_gpus: int,
              kv_precision: Precision | str | None, eng: Engine) -> None:
    """The fit check every speed, capacity and cost estimate makes first: the weights, the
    engine's reserve and the KV cache of `batch` sequences of `tokens` under the engine's
    memory rule; #NUM! saying by how much otherwise (nothing is estimated for a deployment
    that cannot run)."""
    n_gpus = serving.check_gpus(n_gpus)
    kv_precision = kv_precision or eng.kv_format(precision)
    kv = kv_per_sequence_gib(model, tokens, n_gpus, kv_precision, eng) * batch
    _check_kv(model, gpu, precision, n_gpus, eng, _kv_held(model, gpu, precision, n_gpus, eng), kv,
              f"{batch:g} x {tokens:,.0f} tokens")


def _check_kv(model: Model, gpu: Gpu, precision: Precision | str, n_gpus: int, eng: Engine, memory: Held,
              kv_gib: float, what: str) -> None:
    """#NUM! with the figures when `kv_gib` of KV cache per GPU (`what` asked for) passes what `memory` leaves it."""
    if kv_gib > memory.kv_gib * (1 + 1e-9):
        raise no_fit(model, gpu, precision, n_gpus, eng, kv_gib, what, memory)


def kv_batch(model: Model, gpu: Gpu, precision: Precision | str, prompt_tokens: float, output_tokens: float,
             n_gpus: int, kv_precision: Precision | str, eng: Engine) -> int:
    """Sequences whose KV cache fits: each reserves prompt + output tokens (engines that
    guarantee no eviction) or, when blocks are handed out as tokens arrive, the mean length."""
    tokens = reserved_tokens(eng, prompt_tokens, output_tokens)
    memory = _kv_held(model, gpu, precision, n_gpus, eng)
    per_sequence = kv_per_sequence_gib(model, tokens, n_gpus, kv_precision, eng)
    fits = math.floor(memory.kv_gib / per_sequence)
    if fits < 1:     # raises, with the figures
        _check_kv(model, gpu, precision, n_gpus, eng, memory, per_sequence, f"1 x {tokens:,.0f} tokens")
    return fits


def reserved_tokens(eng: Engine, prompt_tokens: float, output_tokens: float) -> float:
    """Tokens of KV cache a running sequence holds: prompt + output where the engine reserves the whole answer
    (no eviction), else the mean length, blocks being handed out as tokens arrive (Engine.kv_reservation)."""
    return prompt_tokens + (output_tokens if eng.kv_reservation == "max" else output_tokens / 2)


# ---------------------------------------------------------------------------- operating point

@dataclass(frozen=True)
class ServingPoint:
    batch: int
    tokens_per_sec: float      # output tokens/s of the model copy (all its GPUs)
    tpot_ms: float             # time per output token seen by each sequence
    ttft_ms: float             # time to first token for a request arriving at this load
    limited_by: str            # "KV cache", "engine batch cap", "TPOT target", "TTFT target", "batch given",
    #                            "CUDA-graph cap" (the batch past the cap delivers less: _graph_cap)
    engine: str
    prefill_share: float = 0.0  # share of the copy's GPU time spent prefilling prompts (the rest decodes)


def _rank_prompt_s(model: Model, gpu: Gpu, precision: Precision, prompt_tokens: float, eng: Engine) -> float:
    """One prompt's prefill work that stays on the data-parallel attention rank that admitted it, on one GPU: its
    causal attention and its products outside the routed experts (attention projections, dense layers, shared
    experts, head); its routed experts' products are spread over the group's experts."""
    return _prompt_work_s(model, gpu, precision, eng, _dense_matmul_params(model), prompt_tokens, 1)


def _prompt_work_s(model: Model, gpu: Gpu, precision: Precision, eng: Engine, params: float, prompt_tokens: float,
                   batch: float) -> float:
    """Seconds of a prefill's compute on one GPU doing all of it: `params` product parameters a token at the weight
    format's rate (a checkpoint's 16-bit parts at the 16-bit rate) and causal attention at flash attention's."""
    products = _product_seconds_per_token(model, params, precision, _flops(gpu, precision, eng, "prefill"),
                                          lambda: _flops(gpu, None, eng, "prefill"))
    return products * prompt_tokens * batch + attention_flops(model, prompt_tokens, batch) / _attention_rate(gpu)


def _prefill_per_step_s(model: Model, gpu: Gpu, precision: Precision, prompt: float, output: float, n_gpus: int,
                        eng: Engine, batch: float) -> float:
    """Prefill time one decode step carries at steady state: batch / output prompts a step (one for each answer
    that ends), each paying prefill_compute_s. With data-parallel attention each MoE layer's exchange waits for the
    slowest rank, so a step also waits while the busiest rank prefills its own prompts' rank-bound part
    (_rank_prompt_s): ranks admit independently (moe.busiest_rank_prompts) unless the engine lines their prefills up
    (Engine.dp_balance). The TensorRT-LLM team measured this on 8 GB200 (attention DP8, EP8, DeepSeek V3, prompts
    803 / answers 3,653 tokens): balance ratio 54% and 1.33x the throughput once balanced (tech blog 10, "ADP Balance
    Strategy")."""
    mean = batch * prefill_compute_s(model, gpu, precision, prompt, 1, n_gpus, eng) / output
    split = _split(eng, n_gpus)
    if eng.dp_balance or not _dp_attention(model, eng, split):
        return mean
    per_rank = batch / split / output
    return mean + (moe.busiest_rank_prompts(split, per_rank) - per_rank) * _rank_prompt_s(model, gpu, precision,
                                                                                           prompt, eng)


def _tpot_s(model, gpu, precision, prompt, output, n_gpus, kv, eng, batch) -> float:
    """One step, plus this request's share of the prefills the batch needs over its lifetime."""
    step = _decode_step(model, gpu, precision, batch, prompt + output / 2, n_gpus, kv, eng).total
    return step + _prefill_per_step_s(model, gpu, precision, prompt, output, n_gpus, eng, batch)


def _ttft_s(model, gpu, precision, prompt, output, n_gpus, kv, eng, batch) -> float:
    """A new request at the operating point: `batch` requests in flight, so they arrive as fast as they end,
    batch / (output x TPOT) a second (Little's law); it waits for the iteration in progress (which may carry
    other prompts), then its prefill, finished in an iteration that also decodes the running batch and
    prefills the prompts that arrived with it (_first_token_s)."""
    step = _decode_step(model, gpu, precision, batch, prompt + output / 2, n_gpus, kv, eng)
    rate = batch / (output * _tpot_s(model, gpu, precision, prompt, output, n_gpus, kv, eng, batch))
    return _first_token_s(model, gpu, precision, prompt, 1, n_gpus, eng, step, batch - 1, rate)


def _latency_s(model, gpu, precision, prompt, output, n_gpus, kv, eng, batch) -> float:
    """A whole request with no wait for a slot: its first token (the prefill queue at the operating point's own
    rate included: _ttft_s), then the other tokens one step each."""
    return _ttft_s(model, gpu, precision, prompt, output, n_gpus, kv, eng, batch) \
        + (output - 1) * _tpot_s(model, gpu, precision, prompt, output, n_gpus, kv, eng, batch)


def _largest(limit: int, ok) -> int:
    """Largest batch in [1, limit] for which ok(batch) holds (ok is monotone: true then false)."""
    lo, hi = 1, limit
    while lo < hi:
        mid = (lo + hi + 1) // 2
        lo, hi = (mid, hi) if ok(mid) else (lo, mid - 1)
    return lo


def _graph_cap(args: tuple, batch: int, limited: str, tpot_s) -> tuple[int, str]:
    """The batch the copy runs at: the one found, or the engine's CUDA-graph cap below it when that delivers
    more. Past the cap a decode step pays the eager launches (Engine.layer_us), so throughput dips before it
    rises again with the batch; an operator keeps the better of the two (SGLang's --max-running-requests, vLLM's
    --max-num-seqs). Throughput rises with the batch on each side of the cap, so these two are the only
    candidates, and a smaller batch meets every latency target the larger one meets. `tpot_s(batch)` is the
    caller's _tpot_s at these args (kept, so the batch kept is not computed again)."""
    gpu, n_gpus, eng = args[1], args[5], args[7]
    graphs = eng.graph_cap(gpu)
    if graphs is None:
        return batch, limited

    def throughput(b: int) -> float:
        return b / tpot_s(b)

    cap = graphs * layout(gpu, eng, n_gpus)[1]     # per pipeline stage's micro-batch
    if cap >= batch or throughput(cap) <= throughput(batch):
        return batch, limited
    return cap, "CUDA-graph cap"


def serving_point(model: Model, gpu: Gpu, precision: Precision | str = "bf16",
                  prompt_tokens: float = defaults.PROMPT_TOKENS, output_tokens: float = defaults.OUTPUT_TOKENS,
                  n_gpus: int = 1, max_tpot_ms: float | None = None,
                  eng: Engine | str | None = None, kv_precision: Precision | str | None = None,
                  max_ttft_ms: float | None = None, batch: int | None = None,
                  max_latency_ms: float | None = None) -> ServingPoint:
    """The largest batch that fits (and meets the latency targets: TPOT, TTFT, and the whole
    request, TTFT + the other tokens x TPOT, with no wait for a slot; TTFT holds the prefill queue at the
    operating point's own rate), and what it delivers; `batch` fixes
    the batch instead (an override: #NUM! when it does not fit)."""
    eng = engine_profile(eng, gpu)
    precision = as_precision(precision)
    if n_gpus < 1:
        raise num_error("n_gpus must be >= 1")
    if prompt_tokens < 1 or output_tokens < 1:
        raise num_error("prompt_tokens and output_tokens must be >= 1")
    kv = kv_precision or eng.kv_format(precision)
    args = (model, gpu, precision, prompt_tokens, output_tokens, n_gpus, kv, eng)
    fits = kv_batch(model, gpu, precision, prompt_tokens, output_tokens, n_gpus, kv, eng)
    if batch is not None:
        if batch < 1:
            raise num_error("batch must be >= 1")
        if batch > fits:
            check_fit(model, gpu, precision, reserved_tokens(eng, prompt_tokens, output_tokens), batch, n_gpus, kv,
                      eng)   # raises, with the figures
        batch, limited = int(batch), "batch given"
    else:
        batch, limited = concurrency_cap(*args)
    for target, latency, what in ((max_tpot_ms, _tpot_s, "TPOT"), (max_ttft_ms, _ttft_s, "TTFT"),
                                  (max_latency_ms, _latency_s, "latency")):
        if target is None:
            continue
        if target <= 0:
            raise num_error(f"max_{what.lower()}_ms must be > 0")
        best = latency(*args, 1) * 1000
        if best > target:
            raise TooSlow(f"no batch meets {what} {target:g} ms: even one sequence takes {best:.1f} ms "
                          f"on {n_gpus} x {gpu.name} with {eng.name}", what, best)
        if latency(*args, batch) * 1000 > target:
            batch, limited = _largest(batch, lambda b, f=latency, t=target: f(*args, b) * 1000 <= t), f"{what} target"
    tpot_at: dict[int, float] = {}

    def tpot_s(b: int) -> float:
        if b not in tpot_at:
            tpot_at[b] = _tpot_s(*args, b)
        return tpot_at[b]

    if limited != "batch given":
        batch, limited = _graph_cap(args, batch, limited, tpot_s)
    tpot = tpot_s(batch)
    prefill = _prefill_per_step_s(model, gpu, precision, prompt_tokens, output_tokens, n_gpus, eng, batch)
    return ServingPoint(batch, batch / tpot, tpot * 1000, _ttft_s(*args, batch) * 1000, limited, eng.name,
                        prefill / tpot)


# ---------------------------------------------------------------------------- traffic

TP_CHOICES = (1, 2, 4, 8)
SPAN_CHOICES = (16, 32, 64)     # copies over 2, 4, 8 servers: tried only when no one-server group holds the model


@dataclass(frozen=True)
class TrafficPlan:
    copies: int                # every copy, spares included
    n_gpus: int                # GPUs per copy
    gpus: int
    demand_tokens_per_sec: float   # with headroom
    point: ServingPoint        # the operating point of each copy
    utilization: float         # demand / capacity of the copies the traffic needs (spares excluded)
    spare_copies: int = 0      # copies beyond the traffic's: one may be down while the rest meet the targets
    wait_ms: float = 0.0       # wait for a free slot at the percentile (queueing; spares not counted)
    latency_ms: float = 0.0    # that wait + the operating point's mean time to first token + the other tokens x TPOT
    percentile: float = defaults.LATENCY_PERCENTILE

    @property
    def ttft_ms(self) -> float:
        """The wait for a free slot at the percentile plus the operating point's MEAN time to first token (not
        the first token's own percentile: the spread of the prefill queue is not modelled)."""
        return self.wait_ms + self.point.ttft_ms


def spare_copies(needed: int, spare: float = defaults.SPARE) -> int:
    """Spare copies: `spare` copies when it is a whole number (1: N+1), a share of the needed
    copies rounded up when it is below 1 (0.1: 10%)."""
    if spare < 0 or (spare >= 1 and spare != int(spare)):
        raise num_error(f"spare must be a whole number of copies (1: N+1) or a share below 100% (e.g. 10%), "
                        f"got {spare:g}")
    return int(spare) if spare >= 1 else math.ceil(needed * spare - 1e-9)


def gpus_for_traffic(model: Model, gpu: Gpu, requests_per_minute: float, prompt_tokens: float,
                     output_tokens: float, max_tpot_ms: float | None = None, max_ttft_ms: float | None = None,
                     precision: Precision | str = "bf16", n_gpus: int | None = None, eng: Engine | str | None = None,
                     headroom: float = defaults.HEADROOM, batch: int | None = None, spare: float = defaults.SPARE,
                     max_latency_s: float | None = None,
                     percentile: float = defaults.LATENCY_PERCENTILE) -> TrafficPlan:
    """Model copies (and GPUs) that serve `requests_per_minute` at the latency targets, with
    burst headroom on top of the average (1 + headroom, as TOKENS_PER_SEC_NEEDED) and `spare`
    copies on top of those. Without `n_gpus`, the tensor-parallel size among 1, 2, 4, 8 that needs
    the fewest GPUs (a copy over 2, 4 or 8 servers when none of those holds the model)."""
    if requests_per_minute <= 0:
        raise num_error("requests_per_minute must be > 0")
    if headroom < 0:
        raise num_error("headroom must be >= 0, e.g. 20%")
    demand = requests_per_minute / 60 * output_tokens * (1 + headroom)
    return plan_for_demand(model, gpu, demand, prompt_tokens, output_tokens, max_tpot_ms, max_ttft_ms,
                           precision, n_gpus, eng, batch, spare, max_latency_s, percentile)


def _queue_plan(n: int, point: ServingPoint, demand: float, output_tokens: float, spare: float,
                max_ttft_ms: float | None, max_latency_ms: float | None, percentile: float) -> TrafficPlan:
    """Copies for the demand: enough capacity, then more until the wait for a slot at the
    percentile (queueing.wait_percentile_s over copies x batch slots, each held output x TPOT)
    keeps time to first token and the whole request within their targets; then the spares."""
    arrivals, hold = demand / output_tokens, output_tokens * point.tpot_ms / 1000
    rest_ms = point.ttft_ms + (output_tokens - 1) * point.tpot_ms

    def wait_ms(copies: int) -> float:
        return queueing.wait_percentile_s(arrivals, copies * point.batch, hold, percentile) * 1000

    def ok(copies: int) -> bool:
        w = wait_ms(copies)
        return math.isfinite(w) and (max_ttft_ms is None or w + point.ttft_ms <= max_ttft_ms) \
            and (max_latency_ms is None or w + rest_ms <= max_latency_ms)

    low = copies_for(demand, point.tokens_per_sec)
    high = low
    while not ok(high):                 # the wait falls to 0 as copies are added, so this ends
        low, high = high + 1, high * 2
    while low < high:
        mid = (low + high) // 2
        low, high = (low, mid) if ok(mid) else (mid + 1, high)
    extra = spare_copies(high, spare)
    w = wait_ms(high)
    return TrafficPlan(high + extra, n, (high + extra) * n, demand, point, demand / (high * point.tokens_per_sec),
                       extra, w, w + rest_ms, percentile)


def copies_for(demand_tokens_per_sec: float, tokens_per_sec: float) -> int:
    """Whole model copies that serve a demand at a copy's throughput (at least one)."""
    return max(1, math.ceil(demand_tokens_per_sec / tokens_per_sec - 1e-9))


def plan_for_demand(model: Model, gpu: Gpu, demand_tokens_per_sec: float, prompt_tokens: float,
                    output_tokens: float, max_tpot_ms: float | None = None, max_ttft_ms: float | None = None,
                    precision: Precision | str = "bf16", n_gpus: int | None = None, eng: Engine | str | None = None,
                    batch: int | None = None, spare: float = defaults.SPARE, max_latency_s: float | None = None,
                    percentile: float = defaults.LATENCY_PERCENTILE) -> TrafficPlan:
    """Copies for a demand in output tokens/s, headroom included (0: one copy), at the latency
    targets: TPOT per copy; time to first token and the whole request (`max_latency_s`) as the wait
    for a free slot at the percentile plus the operating point's mean (TrafficPlan.ttft_ms); plus the
    spare copies."""
    if demand_tokens_per_sec < 0:
        raise num_error("the demand must be >= 0 tokens/s")
    if not 0 < percentile < 1:
        raise num_error(f"percentile must be between 0 and 100% (exclusive), got {percentile:g}")
    spare_copies(1, spare)                  # refuse a bad spare before any sizing
    eng = engine_profile(eng, gpu)          # once, for every group size tried
    latency_ms = max_latency_s * 1000 if max_latency_s else None
    plans: list[TrafficPlan] = []
    failures: list[FlopsheetError] = []
    for sizes in (((n_gpus,),) if n_gpus else (TP_CHOICES, SPAN_CHOICES)):
        for n in sizes:
            try:
                point = serving_point(model, gpu, precision, prompt_tokens, output_tokens, n, max_tpot_ms,
                                      eng, None, max_ttft_ms, batch, latency_ms)
            except (NoFit, TooSlow) as exc:      # on n GPUs; a wider group may still do
                failures.append(exc)
                continue
            except MissingFigure as gap:         # the search cannot compare groups it cannot estimate
                if n_gpus:
                    raise
                raise MissingFigure(gap.figure, gap.subject, f"{gap.needed_for} (sizing compares groups of "
                                    f"{', '.join(map(str, sizes))} GPUs per copy; give n_gpus to size one)",
                                    gap.how) from None
            plans.append(_queue_plan(n, point, demand_tokens_per_sec, output_tokens, spare, max_ttft_ms,
                                     latency_ms, percentile))
        if plans or any(isinstance(f, TooSlow) for f in failures):
            break                                # a copy spans servers only when no server holds the model
    if not plans:       # the widest group's reason; a latency failure says more than a fit failure
        raise next((f for f in reversed(failures) if isinstance(f, TooSlow)), failures[-1])
    return min(plans, key=lambda p: (p.gpus, p.n_gpus))
