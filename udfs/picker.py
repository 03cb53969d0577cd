"""The GPU picker: every catalog GPU sized for a workload (how many, does it fit, how
long or how fast, what it costs), ranked by cost or time, each with the reason it wins
or fails. Nothing here encodes a rule of thumb: the verdicts come from the memory,
speed, training-time and price estimates.

Assumptions (stated in docs/cost-model.md): training uses ZeRO-3 data parallelism with full
activation recompute, micro-batch 1 x 2,048 tokens; when the weights and gradients alone
do not fit one GPU, the model must be sharded and the GPUs need an NVLink-class link
(>= 300 GB/s; the lesson: tensor parallelism over PCIe is impractical). LoRA/QLoRA jobs
run on one GPU per replica. Serving sizes each replica with the fewest GPUs (1, 2, 4, 8)
that hold the weights, a 4,096-token KV cache per sequence and overhead, and adds
replicas for the traffic.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace

from . import calibration as cal
from . import catalog, economics, serving, training
from .catalog import Gpu, Model
from .errors import FlopsheetError, num_error

WORKLOADS = ("train", "finetune", "lora", "qlora", "serve")
OBJECTIVES = ("cost", "time")
PRICE_BASES = ("auto", "cloud", "owned")
FAST_LINK_GBS = 300          # NVLink-class GPU-to-GPU bandwidth needed to shard a model
DEFAULT_DEADLINE_DAYS = 90
FINETUNE_TOKENS = 1e8        # default fine-tuning data: 100M tokens
CHINCHILLA_TOKENS_PER_PARAM = 20   # Hoffmann et al. 2022: compute-optimal pre-training
MAX_GPUS = 100_000
SERVE_CONTEXT = 4096
TP_SIZES = (1, 2, 4, 8)


@dataclass
class Option:
    gpu: str
    count: int
    fits: bool
    days: float | None
    tokens_per_sec: float | None
    cost: float | None
    cost_unit: str
    price_basis: str
    ok: bool = True
    reason: str = ""

    def row(self) -> list:
        return [self.gpu, self.count, self.fits, self.days, self.tokens_per_sec, self.cost, self.cost_unit,
                self.price_basis, "OK" if self.ok else "fails", self.reason]


HEADER = ["rank", "gpu", "count", "fits", "days", "tokens_per_sec", "cost", "cost_unit", "price_basis", "verdict",
          "reason"]


def model_for(model_or_params) -> Model:
    """A catalog model, or for a bare parameter count the architecture of the catalog's
    dense model nearest in size, carrying the given count."""
    if isinstance(model_or_params, Model):
        return model_or_params
    params = float(model_or_params)
    dense = [m for m in catalog.models() if not m.is_moe and m.gated_mlp and m.params]
    nearest = min(dense, key=lambda m: abs(math.log(m.params / params)))
    return replace(nearest, name=f"{params / 1e9:g}B parameters (shape of {nearest.name})", params=params,
                   active_params=None)


def cloud_rate(gpu: Gpu) -> tuple[float, str] | None:
    rows = [p for p in catalog.cloud_prices() if p.gpu == gpu.name and p.status == "current"
            and p.pricing == "on-demand" and p.usd_per_gpu_hour]
    if not rows:
        return None
    best = min(rows, key=lambda p: p.usd_per_gpu_hour)
    return best.usd_per_gpu_hour, f"cloud {best.provider} {best.instance} ${best.usd_per_gpu_hour:g}/GPU-h ({best.price_date})"


def owned_rate(gpu: Gpu) -> tuple[float, str] | None:
    if not gpu.price_usd:
        return None
    rate = economics.owned_cost_per_gpu_hour(gpu.price_usd, power_w=gpu.tdp_w or 0)
    return rate, f"owned ${gpu.price_usd:,.0f} over 3 years at 70% use, power at TDP: ${rate:.3f}/GPU-h"


def price(gpu: Gpu, workload: str, basis: str) -> tuple[float, str] | None:
    if basis == "auto":
        basis = "owned" if workload in ("serve", "lora", "qlora") else "cloud"
    return (cloud_rate if basis == "cloud" else owned_rate)(gpu)


def _fail(option: Option, reason: str) -> Option:
    option.ok, option.reason = False, reason
    return option


def _training_option(gpu, model, workload, precision, tokens, deadline, rate) -> Option:
    peak = gpu.tensor_tflops(precision)
    basis = rate[1] if rate else "no price"
    option = Option(gpu.name, 0, False, None, None, None, "$", basis)
    if not peak:
        return _fail(option, f"no dense {precision} figure in the catalog")
    usable = gpu.memory_gb * cal.USABLE_MEMORY_FRACTION
    if workload in ("lora", "qlora"):
        mem = training.qlora_memory_gib(model, base_bits=16 if workload == "lora" else training.NF4_BITS)["total"]
        flops_per_token = 4 * serving.active_params(model)      # no weight gradients for the frozen base
        n_mem = 1 if mem <= usable else None
    else:
        flops_per_token = 6 * serving.active_params(model)
        n_mem = _gpus_for_training(model, gpu, usable, precision)
    option.fits = n_mem is not None
    if not option.fits:
        return _fail(option, "does not fit: the model does not fit in this GPU's memory"
                     + ("" if workload in ("lora", "qlora") else " even sharded over many GPUs"))
    if n_mem > 1 and workload in ("train", "finetune") and _needs_sharding(model, gpu, precision) \
            and (gpu.interconnect_gbs or 0) < FAST_LINK_GBS:
        return _fail(option, f"needs the model sharded across GPUs, and {gpu.name} has no NVLink-class link "
                             f"({gpu.interconnect_gbs or 0:g} GB/s)")
    gpu_hours = flops_per_token * tokens / (peak * 1e12 * cal.DEFAULT_MFU) / 3600
    count = max(n_mem, math.ceil(gpu_hours / (deadline * 24)))
    option.count, option.days = count, gpu_hours / count / 24
    if count > MAX_GPUS:
        return _fail(option, f"misses the deadline: would need {count:,} GPUs")
    if rate is None:
        return _fail(option, "no price in the catalog for this pricing basis")
    option.cost = gpu_hours * rate[0]
    return option


def _needs_sharding(model, gpu, precision) -> bool:
    states = training.model_state_bytes(model.params, precision, "adamw")
    return (states["weights"] + states["gradients"]) / 2**30 > gpu.memory_gb * cal.USABLE_MEMORY_FRACTION


def _gpus_for_training(model, gpu, usable, precision) -> int | None:
    """Fewest GPUs holding the model with ZeRO-3 and full recompute, or None."""
    one = training.training_memory_gib(model, precision, "adamw", 1, 2048, 3, 1, "full")
    fixed = one["activations"] + one["overhead"]
    sharded = one["weights"] + one["gradients"] + one["optimizer"]
    live_layer = model.params / model.layers * 2 / 2**30
    room = usable - fixed - live_layer
    if sharded <= usable - fixed:
        return 1
    if room <= 0:
        return None
    return math.ceil(sharded / room)


def _serving_option(gpu, model, precision, batch, traffic, min_tps, rate) -> Option:
    option = Option(gpu.name, 0, False, None, None, None, "$ per 1M output tokens", rate[1] if rate else "no price")
    tp = next((n for n in TP_SIZES if serving.serving_memory_gib(model, precision, batch, SERVE_CONTEXT, "fp16", n)
               ["total"] <= gpu.memory_gb * cal.USABLE_MEMORY_FRACTION), None)
    if tp is None:
        return _fail(option, f"does not fit: needs more than {TP_SIZES[-1]} GPUs per copy")
    option.fits = True
    per_replica = serving.decode_tokens_per_sec(model, gpu, precision, batch, 1024, tp)
    replicas = max(1, math.ceil(traffic / per_replica - 1e-9)) if traffic else 1
    option.count, option.tokens_per_sec = tp * replicas, per_replica * replicas
    if per_replica / batch < min_tps:
        return _fail(option, f"too slow for the latency target: {per_replica / batch:.1f} tokens/s per request")
    if rate is None:
        return _fail(option, "no price in the catalog for this pricing basis")
    served = traffic or per_replica
    option.cost = economics.cost_per_1m_tokens(rate[0] * option.count, served)
    return option


def rank(workload: str, model_or_params, precision: str = "bf16", objective: str = "cost",
         budget_usd: float | None = None, deadline_days: float | None = None, tokens_or_traffic: float | None = None,
         batch: float = 1, price_basis: str = "auto", min_tokens_per_sec: float = 0.0) -> list[Option]:
    model = model_for(model_or_params)
    options = []
    for gpu in catalog.gpus():
        try:
            opt, monthly = _option(gpu, workload, model, precision, deadline_days, tokens_or_traffic, batch,
                                   price_basis, min_tokens_per_sec)
        except FlopsheetError as e:          # a catalog gap for this GPU: it fails, the others still rank
            opt, monthly = _fail(Option(gpu.name, 0, False, None, None, None, "", ""), e.message), None
        if opt.ok and budget_usd and monthly and monthly > budget_usd:
            _fail(opt, f"over budget: ${monthly:,.0f} > ${budget_usd:,.0f}")
        options.append(opt)
    key = _sort_key(workload, objective)
    options.sort(key=lambda o: (not o.ok, key(o)))
    for o in options:
        if o.ok and not o.reason:
            o.reason = "winner" if o is options[0] else _behind(o, options[0], workload, objective)
    return options


def _option(gpu, workload, model, precision, deadline_days, tokens_or_traffic, batch, price_basis, min_tps):
    """One GPU's option, and the figure a budget applies to ($ per job, or $ per month to serve)."""
    rate = price(gpu, workload, price_basis)
    if workload == "serve":
        opt = _serving_option(gpu, model, precision, batch, tokens_or_traffic or 0, min_tps, rate)
        # the budget applies to the month: every GPU of every replica for 730 hours
        return opt, (rate[0] * opt.count * economics.HOURS_PER_MONTH if (opt.ok and rate) else None)
    tokens = tokens_or_traffic or (CHINCHILLA_TOKENS_PER_PARAM * model.params if workload == "train"
                                   else FINETUNE_TOKENS)
    opt = _training_option(gpu, model, workload, precision, tokens, deadline_days or DEFAULT_DEADLINE_DAYS, rate)
    return opt, opt.cost


def _sort_key(workload, objective):
    if objective == "time":
        if workload == "serve":
            return lambda o: -(o.tokens_per_sec / o.count if o.tokens_per_sec else 0)
        return lambda o: o.days if o.days is not None else math.inf
    return lambda o: o.cost if o.cost is not None else math.inf


def _behind(option, best, workload, objective) -> str:
    if objective == "cost":
        return f"fits, {option.cost / best.cost:.2f}x the winner's cost"
    if workload == "serve":
        return "fits, slower per request than the winner"
    return f"fits, {option.days / best.days:.2f}x the winner's time"


def recommend(*args, **kwargs) -> Option:
    options = rank(*args, **kwargs)
    if not options or not options[0].ok:
        reasons = "; ".join(f"{o.gpu}: {o.reason}" for o in options[:3])
        raise num_error(f"no GPU in the catalog meets the constraints ({reasons})")
    return options[0]
