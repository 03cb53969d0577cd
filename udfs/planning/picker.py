"""The GPU picker: every catalog GPU sized for a workload (how many, does it fit, how
long or how fast, what it costs), ranked by cost or time, each with the reason it wins
or fails. Nothing here encodes a rule of thumb: the verdicts come from the memory,
speed, training-time and price estimates.

Assumptions (stated in docs/cost-model.md): training uses ZeRO-3 data parallelism with full
activation recompute, micro-batch 1 x 2,048 tokens; when the weights and gradients alone
do not fit one GPU, the model must be sharded and the GPUs need an NVLink-class link
(catalog.NVLINK_CLASS_GBS; the lesson: tensor parallelism over PCIe is impractical). LoRA/QLoRA jobs
run on one GPU per replica where one holds them, else FSDP across all (training.lora_sharding); their GPUs
reduce only the adapter gradients, and FSDP all-gathers the frozen base each micro-batch
(training.adapter_sync). Serving is sized by the serving-capacity model
(capacity.plan_for_demand, as GPUS_FOR_TRAFFIC): each copy runs at the largest batch its KV
cache holds under the engine's rules and the latency target allows, on the tensor-parallel
group (1, 2, 4, 8 GPUs; a copy over servers when none holds the model) that needs the fewest GPUs
for the traffic, with copies added until the p95 wait for a free slot keeps the latency target,
and one spare copy (N+1).

Counts are what is sold: owned options are whole systems (`system_gpus`: an 8-GPU HGX board, a
72-GPU NVL72 rack, one PCIe card), cloud options whole instances (the `gpu_count` of the cheapest price row
holding the GPUs that must share the GPU link - a serving copy, a job's GPUs up to a server: instance_gpus -
at its rate). Training at scale loses time to the exposed gradient
synchronisation (training.scale_out_efficiency: layout, batch, overlap), so more GPUs never cost fewer
GPU-hours. A budget is cash (`Budget`):
capex up front, rent or the data-centre month a month; a tie goes to fewer GPUs.

Every sized option carries its evidence (physics.evidence.for_option: the measured rows of its
regime and the error band they give) and so a range around its estimate. An option whose regime
nothing has measured is unverified: by default it fails with Status.UNVERIFIED, naming the
measurement that would verify it, so the winner is the best option with evidence;
`include_unverified` lets it win.

Each option carries its verdict as data (reasons.Reason: a status and figures); the worksheet
functions and the report render the text from it and decide on the status only.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

from ..physics import calibration as cal
from ..physics import capacity, defaults, economics, evidence, training, training_efficiency, training_memory
from ..catalogs import catalog, resolve
from ..catalogs.catalog import Gpu, Model, Precision, as_precision
from ..catalogs.engines import Engine
from ..errors import FlopsheetError, MissingFigure, given, na_error, num_error, value_error
from ..catalogs.names import key
from .reasons import WINNER, Reason, Status
from ..words import plural

WORKLOADS = ("train", "finetune", "lora", "qlora", "serve")
OBJECTIVES = ("cost", "time")
PRICE_BASES = ("auto", "cloud", "owned")
MAX_GPUS = 100_000
TP_SIZES = capacity.TP_CHOICES


@dataclass(frozen=True)
class ServingShape:
    """What serving is sized for: request lengths, the engine (None: the GPU's default) and
    an optional batch override (None: the largest the KV cache and latency target allow)."""
    prompt_tokens: float = defaults.PROMPT_TOKENS
    output_tokens: float = defaults.OUTPUT_TOKENS
    engine: Engine | str | None = None
    batch: int | None = None
    max_latency_s: float | None = None   # a whole request at the p95, queueing included (None: no target)
    spare: float = defaults.SPARE        # spare copies (1: N+1) or a share of the copies below 1


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
    reason: Reason = WINNER
    gpus_per_copy: int | None = None     # serving: tensor-parallel group of one model copy
    batch: int | None = None             # serving: sequences each copy runs at once
    per_request_tps: float | None = None  # serving: tokens/s each request sees (1000 / TPOT)
    purchase_unit: int | None = None      # GPUs per system (owned) or per instance (cloud): the count is a multiple
    gpu_hours: float | None = None        # training: GPU-hours at this count, the all-reduce included
    ideal_gpu_hours: float | None = None  # training: GPU-hours of the compute alone (one GPU's speed x count)
    mem_count: int | None = None          # training: fewest GPUs that hold the model
    capex: float | None = None            # owned: systems + network, paid up front
    up_front: float | None = None         # cash up front: owned capex; a cloud training job's rent
    monthly_cash: float | None = None     # cash a month: owned data-centre month; cloud rent while running
    sized_copies: int | None = None       # serving: the plan's copies, spares included, before whole systems
    spare_copies: int | None = None       # serving: copies beyond the traffic's (N+1), in the count
    ttft_p95_ms: float | None = None      # serving: the p95 wait for a slot + the mean time to first token
    latency_p95_s: float | None = None    # serving: the p95 wait for a slot + the mean whole request
    instance_gpus: int = 1                # cloud: GPUs that must be in one instance (instance_gpus); its rate is cloud_row's
    rate_usd: float | None = None         # $ per GPU-hour it is priced at (training: the instance the job needs)
    method: str = ""                      # training: full, lora or qlora (training_method)
    gpu_row: Gpu = field(kw_only=True, repr=False, compare=False)   # the GPU itself (never looked up again)
    evidence: evidence.Evidence | None = field(default=None, kw_only=True, repr=False, compare=False)
    to_verify: str = field(default="", kw_only=True)   # the measurement that would verify it (unverified only)

    @property
    def status(self) -> Status:
        return self.reason.status

    @property
    def verified(self) -> bool:
        """Its regime has at least one measured row."""
        return self.evidence is not None and self.evidence.measured

    @property
    def same_format(self) -> bool:
        """A measured row in the format asked backs its regime (physics.evidence.Evidence.same_format)."""
        return self.evidence is not None and self.evidence.same_format

    @property
    def cost_range(self) -> tuple[float, float] | None:
        """(low, high) of its cost from its regime's error band (None without a cost or evidence)."""
        return spread(self.evidence, self.cost, cost=True)

    @property
    def speed_range(self) -> tuple[float, float] | None:
        """(low, high) of its days (training) or tokens/s (serving)."""
        return spread(self.evidence, self.days if self.days is not None else self.tokens_per_sec)

    @property
    def ok(self) -> bool:
        return self.reason.ok


@dataclass(frozen=True)
class Budget:
    """A budget is cash. `capex_usd`: paid up front - an owned option's systems and network, a cloud
    training job's rent (committed when the job is booked; a cloud service has none). `monthly_usd`:
    paid a month - an owned option's data-centre month (economics.Ownership.month), a cloud option's
    rent (for 730 h, or the job's hours when shorter). `budget_usd` of old means the first to train
    and the second to serve (`of`)."""
    capex_usd: float | None = None
    monthly_usd: float | None = None

    @staticmethod
    def maps_to(workload: str) -> str:
        """The budget a plain `budget_usd` is: cash up front for a job, cash a month for a service."""
        return "monthly_budget_usd" if workload == "serve" else "capex_budget_usd"

    @classmethod
    def of(cls, workload: str, budget_usd: float | None = None, capex_budget_usd: float | None = None,
           monthly_budget_usd: float | None = None) -> Budget:
        if budget_usd:
            target = cls.maps_to(workload)
            if (capex_budget_usd if target == "capex_budget_usd" else monthly_budget_usd):
                raise value_error(f"budget_usd and {target}: give one, not both (budget_usd is {target} "
                                  f"for this workload)")
            if target == "capex_budget_usd":
                capex_budget_usd = budget_usd
            else:
                monthly_budget_usd = budget_usd
        return cls(capex_budget_usd or None, monthly_budget_usd or None)

    def __bool__(self) -> bool:
        return bool(self.capex_usd or self.monthly_usd)

    def verdict(self, up_front: float | None, monthly: float | None) -> Reason | None:
        """OVER_BUDGET naming the cash that is over, or None."""
        if self.capex_usd and up_front is not None and up_front > self.capex_usd * (1 + 1e-9):
            return Reason(Status.OVER_BUDGET, {"cost": up_front, "budget": self.capex_usd, "what": "cash up front"})
        if self.monthly_usd and monthly is not None and monthly > self.monthly_usd * (1 + 1e-9):
            return Reason(Status.OVER_BUDGET, {"cost": monthly, "budget": self.monthly_usd, "what": "cash a month"})
        return None


def sold_unit(gpu: Gpu, basis: str, together: int = 1, job_gpus: int | None = None) -> int:
    """GPUs in the smallest unit one can buy or rent: an owned system (`system_gpus`) or a cloud
    instance (the `gpu_count` of the cheapest on-demand row holding `together` GPUs, cloud_row; 1 where the
    catalog rents none)."""
    if basis == "owned":
        return int(gpu.need("system_gpus", "buying whole systems"))
    row = cloud_row(gpu, together, job_gpus)
    return row.gpu_count if row is not None and row.gpu_count else 1


# A job that joins rented instances needs the network between them that the training model's gradient
# all-reduce assumes: each GPU's own NIC at calibration.NETWORK_GBS_PER_GPU, in Gb/s.
JOIN_GBPS_PER_GPU = 8 * cal.NETWORK_GBS_PER_GPU


def cloud_row(gpu: Gpu, together: int = 1, job_gpus: int | None = None) -> catalog.CloudPrice | None:
    """The cheapest current on-demand instance of the GPU with at least `together` of them (with 1, the catalog's
    cheapest row): catalog.cheapest_cloud_price, the one home of the cloud rate for N GPUs. GPUs that must share
    the GPU link are rented in one instance, not as separate one-GPU machines: a serving copy's tensor-parallel
    group, and a job's GPUs up to a server (instance_gpus). A training job of `job_gpus` GPUs larger than one
    instance joins several: only an instance with a stated network between instances of JOIN_GBPS_PER_GPU
    qualifies."""
    return catalog.cheapest_cloud_price(gpu.name, "on-demand", together, job_gpus, JOIN_GBPS_PER_GPU)


def option_row(gpu: Gpu, count: int, gpus_per_copy: int | None = None) -> catalog.CloudPrice | None:
    """The instance a rented option of `count` GPUs is priced at - the one answer every route gives (GPU_RANK,
    GPU_RECOMMEND, SERVING_CURVE's default rate, the report and its Assumptions sheet, the plan): serving
    (`gpus_per_copy` given), the cheapest holding one copy's GPUs up to a server; training, the cheapest holding
    the job's GPUs up to a server and, where the job spans instances, with a cluster network (cloud_row)."""
    if gpus_per_copy is not None:
        return cloud_row(gpu, instance_gpus(gpu, count, gpus_per_copy))
    return cloud_row(gpu, instance_gpus(gpu, count), count if count > 1 else None)


def instance_gpus(gpu: Gpu, count: int, gpus_per_copy: int | None = None) -> int:
    """GPUs of an option that must be in one rented instance: a serving copy's tensor-parallel group, up to a
    server (a copy over servers spans whole ones, joined by the network, capacity.plan_for_demand); a job's GPUs up
    to a server (training.layout puts tensor parallelism, and the gradient ring's inner step, on the GPU link of a
    `system_gpus` server)."""
    if gpus_per_copy is not None:
        return min(gpus_per_copy, gpu.system_gpus or gpus_per_copy)
    return min(count, int(gpu.need("system_gpus", "training across GPUs"))) if count > 1 else 1


def whole(count: int, unit: int) -> int:
    """`count` GPUs rounded up to whole units of `unit`."""
    return math.ceil(count / unit) * unit


def spread(ev: evidence.Evidence | None, point: float | None, cost: bool = False) -> tuple[float, float] | None:
    """(low, high) of a figure from the error band of the estimate behind it. A serving cost moves
    against the throughput estimate (a slower GPU needs more of them: the cost before rounding to
    whole copies); a training cost and its days move with the GPU-hours estimate."""
    if ev is None or point is None:
        return None
    return ev.value_range(point, inverse=cost and ev.regime.metric == "throughput")


def cloud_rate(gpu: Gpu, together: int = 1, job_gpus: int | None = None) -> tuple[float, str] | None:
    """$/GPU-hour and its note of the cheapest instance holding `together` GPUs (cloud_row)."""
    best = cloud_row(gpu, together, job_gpus)
    if best is None or best.usd_per_gpu_hour is None:
        return None
    return best.usd_per_gpu_hour, cloud_note(best)


def cloud_note(row: catalog.CloudPrice) -> str:
    return f"cloud {row.provider} {row.instance} ${row.usd_per_gpu_hour:g}/GPU-h ({row.price_date})"


def owned_rate(gpu: Gpu, ownership: economics.Ownership | None = None, price_usd: float | None = None,
               price_from: str = "") -> tuple[float, str] | None:
    """$ per used hour of owning the GPU in a data centre (economics.Ownership: its all-in system
    price unless one is given, network, colocation, power, opex), with its note; None without a price."""
    price, o = price_usd or catalog.gpu_price(gpu, "system"), ownership or economics.Ownership()
    if not price:
        return None
    tdp = gpu.need("tdp_w", "the power cost of owning it")
    month = o.month(price, tdp)["total"]
    rate = o.cost_per_gpu_hour(price, tdp)
    return rate, (f"owned: ${price:,.0f} all-in per GPU{f' ({price_from})' if price_from else ''}, "
                  f"${month:,.0f} cash per GPU-month over {o.lifetime_years:g} years at {o.cost_of_capital:.0%} "
                  f"(network, colocation, power, opex included) = ${rate:.3f} per GPU-hour used at "
                  f"{o.utilization:.0%} utilization")


def resolve_basis(workload: str, basis: str) -> str:
    """`auto`: the purchase price to serve (a service runs for years), cloud on-demand for a job (training,
    fine-tuning, LoRA/QLoRA): owned hardware comes in whole systems (an 8-GPU server), and buying one for a
    job of a few GPU-hours is not a purchase anyone signs."""
    if basis == "auto":
        return "owned" if workload == "serve" else "cloud"
    return basis


def price(gpu: Gpu, workload: str, basis: str) -> tuple[float, str] | None:
    return (cloud_rate if resolve_basis(workload, basis) == "cloud" else owned_rate)(gpu)


def _fail(option: Option, status: Status, **figures) -> Option:
    option.reason = Reason(status, figures)
    return option


def _training_option(gpu, model, workload, precision, tokens, deadline, basis, together: int = 1) -> Option:
    gpu.tensor_peak(precision, "training time", weight_only=False)        # no tensor units: the error, first
    rate = cloud_rate(gpu, together) if basis == "cloud" else owned_rate(gpu)
    option = Option(gpu.name, 0, False, None, None, None, "$", rate[1] if rate else "no price", gpu_row=gpu)
    usable = training_memory.usable_gib(gpu)
    if workload in ("lora", "qlora"):
        n_mem, mem = training_memory.lora_min_gpus(model, gpu, training_memory.base_bits(training_method(workload)))
    else:
        n_mem, mem = training_memory.min_gpus(model, gpu, precision)
    option.fits = n_mem is not None
    if n_mem is None:
        figures = {"need": capacity.gib_text(mem), "usable": usable, "gpu": gpu.name}
        return _fail(option, Status.NO_FIT, sharded=True, **figures)
    if n_mem > 1 and workload in ("train", "finetune") and _needs_sharding(model, gpu, precision) \
            and not gpu.nvlink_class("sharding the model across GPUs"):
        return _fail(option, Status.NEEDS_NVLINK, gpu=gpu.name, link_gbs=gpu.interconnect_gbs,
                     needed_gbs=catalog.NVLINK_CLASS_GBS)
    scope, method = training_scope(workload), training_method(workload)
    option.method = method
    ideal = training.on_cluster(model, gpu, tokens, 1, precision, scope, method=method).compute_gpu_hours
    unit = sold_unit(gpu, basis, together)
    count, eff = training_count(model, gpu, precision, ideal, n_mem, deadline, unit, method)
    joined = basis == "cloud" and rate is not None and count > unit     # joins instances: a cluster network
    row = cloud_row(gpu, together, count) if joined else None
    if row is not None:
        rate, unit = (given(row.usd_per_gpu_hour, "the instance's rate"), cloud_note(row)), row.gpu_count or 1
        option.price_basis = rate[1]
        count, eff = training_count(model, gpu, precision, ideal, n_mem, deadline, unit, method)
    option.count, option.purchase_unit, option.mem_count = count, unit, n_mem
    option.ideal_gpu_hours, option.gpu_hours = ideal, ideal / eff          # on_cluster's hours at that count
    option.days = option.gpu_hours / count / 24
    option.instance_gpus = together
    if count > MAX_GPUS:
        return _fail(option, Status.MISSES_DEADLINE, count=count)
    if joined and row is None:
        return _fail(option, Status.NO_NETWORK, gpu=gpu.name, count=count, unit=unit, needed_gbps=JOIN_GBPS_PER_GPU)
    if rate is None:
        return _fail(option, Status.NO_PRICE, basis=basis, **({"together": together} if together > 1 else {}))
    option.cost, option.rate_usd = option.gpu_hours * rate[0], rate[0]
    return option


def job_tokens(workload: str, model, tokens: float | None) -> float:
    """A training job's tokens: as given, else Chinchilla's 20 a parameter (pre-training) or FINETUNE_TOKENS."""
    return tokens or (defaults.CHINCHILLA_TOKENS_PER_PARAM * model.params if workload == "train"
                      else defaults.FINETUNE_TOKENS)


def training_method(workload: str) -> str:
    """How a training workload trains its weights (training.METHODS): lora / qlora, else every weight (full)."""
    return workload if workload in ("lora", "qlora") else "full"


def training_scope(workload: str) -> str:
    """What the compute MFU of an option includes (training.cluster_mfu): pre-training is a whole run
    (steady-state x goodput), a fine-tuning job (short, on a server or a few) the steady state."""
    return "run" if workload == "train" else "steady"


def training_mfu(gpu, model, precision, workload: str) -> training_efficiency.Efficiency:
    """The compute MFU of an option (before its all-reduce, which training_count adds)."""
    return training.cluster_mfu(gpu, resolve.model(model), precision, training_scope(workload))


def training_count(model, gpu, precision, ideal_gpu_hours: float, n_mem: int, deadline_days: float,
                   unit: int, method: str = "full") -> tuple[int, float]:
    """Fewest GPUs, in whole units, that hold the model and finish within the deadline once the
    all-reduce is paid (training.scale_out_efficiency at that count), and the efficiency at the count returned.
    The efficiency falls as GPUs are added, so the count is found by iterating from below (each step still
    short of the fewest); where that creeps (each GPU added buys less and less: the days near a floor set by the
    all-reduce), the boundary is bisected up to MAX_GPUS. No count up to MAX_GPUS finishes in time: more than
    MAX_GPUS (the deadline is missed)."""
    gpu.need("system_gpus", "training across GPUs")      # a server's size lays the job out: the error, first

    def efficiency(count: int) -> float:
        return training.scale_out_efficiency(model, gpu, count, precision, method=method)

    def need(eff: float) -> int:
        return whole(max(n_mem, math.ceil(ideal_gpu_hours / eff / (deadline_days * 24) - 1e-9)), unit)

    count = need(1.0)
    for _ in range(101):
        eff = efficiency(count)
        if need(eff) <= count or count > MAX_GPUS:
            return count, eff
        short, count = count, max(need(eff), count + unit)
    return _bisect_count(short, MAX_GPUS // unit * unit, unit,
                         lambda c: ideal_gpu_hours / efficiency(c) / c / 24 <= deadline_days * (1 + 1e-9), efficiency)


def _bisect_count(short: int, top: int, unit: int, meets, efficiency) -> tuple[int, float]:
    """The fewest whole units above `short` (which misses the deadline) and up to `top` that meet it, with
    its efficiency; none: MAX_GPUS + 1."""
    if not meets(top):
        return MAX_GPUS + 1, efficiency(MAX_GPUS + 1)
    while top - short > unit:
        mid = short + (top - short) // unit // 2 * unit
        short, top = (short, mid) if meets(mid) else (mid, top)
    return top, efficiency(top)


def _needs_sharding(model, gpu, precision) -> bool:
    states = training_memory.model_state_bytes(model.params, precision, "adamw")
    return (states["weights"] + states["gradients"]) / 2**30 > training_memory.usable_gib(gpu)


def _serving_option(gpu, model, precision, shape: ServingShape, traffic, min_tps, rate, basis) -> Option:
    option = Option(gpu.name, 0, False, None, None, None, "$ per 1M output tokens", rate[1] if rate else "no price",
                    gpu_row=gpu)
    max_tpot_ms = 1000 / min_tps if min_tps else None
    try:
        plan = capacity.plan_for_demand(model, gpu, traffic, shape.prompt_tokens, shape.output_tokens, max_tpot_ms,
                                        None, precision, None, resolve.engine(shape.engine, gpu), shape.batch,
                                        spare=shape.spare, max_latency_s=shape.max_latency_s)
    except capacity.NoFit as no:             # the widest group's figures
        return _fail(option, Status.NO_FIT, max_per_copy=capacity.SPAN_CHOICES[-1], need=capacity.gib_text(no.need_gib),
                     usable=no.usable_gib,
                     gpu=gpu.name)
    except capacity.TooSlow as slow:
        option.fits = True
        if slow.what == "latency":           # the whole request, even alone, against the target
            return _fail(option, Status.TOO_SLOW, latency_s=slow.best_ms / 1000,
                         target_s=given(shape.max_latency_s, "the latency target"))
        return _fail(option, Status.TOO_SLOW, tokens_per_sec=1000 / slow.best_ms, needed=min_tps)
    point = plan.point
    option.fits, option.count = True, plan.gpus
    option.tokens_per_sec = plan.copies * point.tokens_per_sec
    option.gpus_per_copy, option.batch, option.per_request_tps = plan.n_gpus, point.batch, 1000 / point.tpot_ms
    option.spare_copies, option.ttft_p95_ms, option.latency_p95_s = plan.spare_copies, plan.ttft_ms, plan.latency_ms / 1000
    option.sized_copies = plan.copies
    if rate is None:
        return _fail(option, Status.NO_PRICE, basis=basis)
    served = traffic or option.tokens_per_sec
    option.cost = economics.cost_per_1m_output_tokens(rate[0], option.count, served)
    if not math.isfinite(option.cost):   # e.g. 1e-320 tokens/s: the GPU idles, $/token is unbounded
        raise num_error(f"tokens_or_traffic ({served:.3g} tokens/s) is too small to price per token")
    return option


def parse_tiers(text: str | tuple = "datacenter") -> tuple[str, ...]:
    """GPU tiers a deployment may use, from "datacenter", "datacenter,workstation" or "any"."""
    if isinstance(text, tuple):
        return text
    words = [key(w) for w in str(text or "datacenter").replace(";", ",").split(",") if w.strip()]
    if words in (["any"], ["all"]):
        return catalog.TIERS
    bad = [w for w in words if w not in catalog.TIERS]
    if bad or not words:
        raise value_error(f"unknown tier {bad[0] if bad else text!r}; use datacenter, workstation, consumer "
                          f"(comma-separated) or any")
    return tuple(t for t in catalog.TIERS if t in words)


def tier_reason(gpu: Gpu, tiers: tuple[str, ...]) -> Reason | None:
    """Why a GPU's tier is left out (None when it is allowed)."""
    if gpu.tier in tiers:
        return None
    if gpu.tier == "consumer" and gpu.vendor == "NVIDIA":
        return Reason(Status.NOT_LICENSED, {"gpu": gpu.name, "include": "any"})
    include = "any" if gpu.tier == "consumer" else ",".join(dict.fromkeys(tiers + (gpu.tier,)))
    link = "no GPU link in the catalog" if gpu.interconnect_gbs is None else f"{gpu.interconnect_gbs:g} GB/s"
    return Reason(Status.TIER_EXCLUDED, {"tier": gpu.tier, "link": link, "include": include})


def rank(workload: str, model_or_params: Model | float, precision: Precision | str = "bf16", objective: str = "cost",
         budget_usd: float | None = None, deadline_days: float | None = None, tokens_or_traffic: float | None = None,
         batch: int | None = None, price_basis: str = "auto", min_tokens_per_sec: float = 0.0,
         prompt_tokens: float = defaults.PROMPT_TOKENS, output_tokens: float = defaults.OUTPUT_TOKENS, engine=None,
         tiers: str | tuple = "datacenter", capex_budget_usd: float | None = None,
         monthly_budget_usd: float | None = None, include_unverified: bool = False,
         max_latency_s: float | None = None, spare: float = defaults.SPARE) -> list[Option]:
    """Every catalog GPU's option, best first. Serving: `tokens_or_traffic` is output tokens/s
    (headroom included), `batch` an optional override, `min_tokens_per_sec` the speed each
    request needs (a TPOT limit of 1000 / it ms). `tiers`: the GPU tiers the deployment may use
    (others are sized and priced, and fail with the reason). The budgets are cash (Budget);
    `budget_usd` is the capex budget of a job, the monthly budget of a service. An option no
    measurement backs fails as unverified unless `include_unverified`. `max_latency_s`: a whole
    request at the p95, the wait for a free slot included (capacity.plan_for_demand); `spare`:
    the spare copies every serving plan keeps (default N+1; capacity.spare_copies)."""
    model, precision, allowed = resolve.model(model_or_params), as_precision(precision), parse_tiers(tiers)
    budget = Budget.of(workload, budget_usd, capex_budget_usd, monthly_budget_usd)
    shape = ServingShape(prompt_tokens, output_tokens, engine or None, int(batch) if batch else None,
                         max_latency_s or None, spare)
    if workload == "serve":
        capacity.spare_copies(1, spare)      # refuse a bad spare once, before sizing every GPU
    options = []
    for gpu in catalog.gpus():
        try:
            opt = _option(gpu, workload, model, precision, deadline_days, tokens_or_traffic, shape,
                          price_basis, min_tokens_per_sec)
            attach_evidence(opt, workload, model, precision, shape)
        except MissingFigure as gap:         # not comparable: the figure it needs is unknown
            opt = _fail(Option(gpu.name, 0, False, None, None, None, "", "", gpu_row=gpu), Status.NO_SPEC,
                        figure=gap.figure, needed_for=gap.needed_for, how=gap.how)
        except FlopsheetError as e:          # e.g. a format the GPU has no units for: it fails, the others rank
            opt = _fail(Option(gpu.name, 0, False, None, None, None, "", "", gpu_row=gpu), Status.NO_SPEC,
                        detail=e.message)
        over = budget.verdict(opt.up_front, opt.monthly_cash) if opt.ok else None
        if over:
            opt.reason = over
        if opt.ok and not include_unverified and not opt.verified:
            unverified(opt, INCLUDE_UNVERIFIED)
        left_out = tier_reason(gpu, allowed)
        if left_out:                         # sized and priced all the same, so a reader can compare
            opt.reason = left_out
        options.append(opt)
    order(options, objective)
    for o in options[1:]:
        if o.ok:
            o.reason = _behind(o, options[0], workload, objective)
        elif o.status is Status.UNVERIFIED and options[0].ok:    # how it compares with the winner
            ratio = _behind(o, options[0], workload, objective).figures
            o.reason = Reason(Status.UNVERIFIED, o.reason.figures | ratio)
    return options


# how a worksheet includes unverified options (a scenario says it its own way)
INCLUDE_UNVERIFIED = "include_unverified = TRUE"


def attach_evidence(opt: Option, workload: str, model: Model, precision: Precision, shape: ServingShape) -> None:
    """The evidence for a sized option (its regime's measured rows and error band) and, where
    none backs it or its regime measured only other formats than the one asked, the measurement that would
    verify it."""
    if not opt.fits or not opt.count:
        return
    gpu = opt.gpu_row
    if workload == "serve":
        engine = resolve.engine(shape.engine, gpu).name
        opt.evidence = evidence.for_option("throughput", model, gpu, precision.name, opt.gpus_per_copy, engine)
    else:
        engine = ""
        opt.evidence = evidence.for_option("training", model, gpu, precision.name, opt.count)
    if not opt.evidence.same_format:        # nothing measured, or only other formats (evidence.label says which)
        opt.to_verify = verify_request(opt, workload, model, precision, shape, engine)


def verify_request(opt: Option, workload: str, model: Model, precision: Precision, shape: ServingShape,
                   engine: str) -> str:
    """The measurement to ask the GPU's vendor for (or to take) that would put the option's regime
    on evidence: the model, format, GPUs and, serving, the engine and request lengths."""
    gpu = opt.gpu_row
    who = f"ask {gpu.vendor} for" if gpu.vendor else "measure"
    if workload == "serve":
        n = opt.gpus_per_copy or 1
        batch = f", batch {opt.batch}" if opt.batch else ""
        return (f"{who} {model.name} {precision.name} output tokens/s on {n} x {gpu.name} (one copy) with {engine} at "
                f"{shape.prompt_tokens:,.0f}/{shape.output_tokens:,.0f} prompt/output tokens{batch}")
    job = "pre-training" if workload == "train" else f"{workload} fine-tuning" if workload != "finetune" \
        else "full fine-tuning"
    return f"{who} {model.name} {precision.name} {job} throughput (tokens/s per GPU) on {opt.count:,} x {gpu.name}"


def unverified(opt, include: str) -> None:
    """Fail an option (a picker Option or a report Row) no measurement backs, naming its regime
    and what would verify it."""
    ev = opt.evidence
    opt.reason = Reason(Status.UNVERIFIED, {"regime": ev.regime.describe() if ev else "unknown",
                                            "ask": opt.to_verify, "include": include})


def _option(gpu, workload, model, precision, deadline_days, tokens_or_traffic, shape, price_basis, min_tps) -> Option:
    """One GPU's option, in whole systems or instances, with its cash (up front and a month)."""
    basis = resolve_basis(workload, price_basis)
    if workload == "serve":
        rate = price(gpu, workload, basis)
        opt = _serving_option(gpu, model, precision, shape, tokens_or_traffic or 0, min_tps, rate, basis)
        together = instance_gpus(gpu, opt.count, opt.gpus_per_copy or 1)
        if basis == "cloud" and together > 1:        # a copy's GPUs in one instance: its price, sized the same
            rate = cloud_rate(gpu, together)
            opt = _serving_option(gpu, model, precision, shape, tokens_or_traffic or 0, min_tps, rate, basis)
            opt.instance_gpus = together
            if opt.status is Status.NO_PRICE:
                opt.reason = Reason(Status.NO_PRICE, {"basis": basis, "together": together})
        whole_systems(opt, gpu, rate, tokens_or_traffic, sold_unit(gpu, basis, opt.instance_gpus))
        opt.rate_usd = rate[0] if rate else None
    else:
        tokens, deadline = job_tokens(workload, model, tokens_or_traffic), deadline_days or defaults.DEADLINE_DAYS
        opt = _training_option(gpu, model, workload, precision, tokens, deadline, basis)
        # a job's GPUs up to a server in one instance, until the instance holds the GPUs it sized: each pass takes
        # a larger instance (together > the last), capped at a server, so a server's GPUs + 1 passes bound it
        for _ in range((gpu.system_gpus or 1) + 1):
            together = instance_gpus(gpu, opt.count) if basis == "cloud" and opt.count else 1
            if together <= opt.instance_gpus:
                break
            opt = _training_option(gpu, model, workload, precision, tokens, deadline, basis, together)
        else:
            raise num_error(f"{gpu.name}: the GPUs a job needs in one instance did not settle "
                            f"({together} after {(gpu.system_gpus or 1) + 1} passes)")
        rate = (opt.rate_usd, opt.price_basis) if opt.rate_usd is not None else None
    if opt.ok and rate is not None and opt.count:
        _cash(opt, gpu, workload, basis, rate[0])
    return opt


def _cash(opt: Option, gpu: Gpu, workload: str, basis: str, rate: float) -> None:
    """The option's cash (Budget): owned, the capex and the data-centre month at the default
    Ownership; cloud, the job's rent up front (training) and the rent a month."""
    if basis == "owned":
        price, o = given(catalog.gpu_price(gpu, "system"), "the system price"), economics.Ownership()
        opt.capex = opt.up_front = opt.count * o.capex(price)
        opt.monthly_cash = opt.count * o.month(price, gpu.need("tdp_w", "the power cost of owning it"))["total"]
        return
    hours = economics.HOURS_PER_MONTH if workload == "serve" else \
        min(economics.HOURS_PER_MONTH, given(opt.days, "the job's days") * 24)
    opt.up_front = 0.0 if workload == "serve" else opt.cost
    opt.monthly_cash = rate * opt.count * hours


def whole_systems(opt: Option, gpu: Gpu, rate, traffic, unit: int) -> None:
    """GPUs to serve come in whole units - bought, whole systems (an 8-GPU HGX board, a 72-GPU
    NVL72 rack); rented, whole instances: the count is rounded up to them, the extra GPUs being
    extra copies (tensor-parallel groups of 1-8 divide a system), so capacity grows with the count."""
    if not opt.count:
        return
    opt.purchase_unit = unit
    if opt.count % unit == 0:
        return
    bought = whole(opt.count, unit)
    if opt.tokens_per_sec:
        demand = traffic or opt.tokens_per_sec       # no traffic given: what the copies sized were for
        opt.tokens_per_sec *= bought / opt.count
        if rate and opt.cost is not None:            # the whole systems are paid for, the demand served
            opt.cost = economics.cost_per_1m_output_tokens(rate[0], bought, demand)
    opt.count = bought


def rank_key(objective: str, cost: float | None, time: float | None, count: int) -> tuple[float, ...]:
    """The one ranking of options, for GPU_RANK / GPU_RECOMMEND and a scenario report (sweep.sort_rows). Cost: the
    cost, a tie to fewer GPUs, then the faster. Time: a job's days or a service's time per request (the tokens/s
    each request sees, not tokens/s per GPU, which crowned a 72-GPU rack for one copy of an 8B model on a 3% edge),
    then the cost, then fewer GPUs. A figure not known ranks last."""
    cost = math.inf if cost is None else cost
    time = math.inf if time is None else time
    return (time, cost, count) if objective == "time" else (cost, count, time)


def order(options: list[Option], objective: str) -> None:
    """Options best first by rank_key, those that fail a constraint last (in place)."""
    options.sort(key=lambda o: (not o.ok, rank_key(objective, o.cost, option_time(o), o.count)))


def option_time(o: Option) -> float | None:
    """The time an option is ranked on: a job's days; a service's seconds per output token a request sees
    (1 / its tokens/s: the same order as a report's seconds per request, which is that x the answer's tokens)."""
    if o.days is not None:
        return o.days
    return 1 / o.per_request_tps if o.per_request_tps else None


def _behind(option, best, workload, objective) -> Reason:
    """An option that meets every constraint, against the winner on the ranking's own measure."""
    if objective == "cost":
        return Reason(Status.OK, {"cost_ratio": option.cost / best.cost})
    if workload == "serve":        # seconds per request: the inverse of the tokens/s each request sees
        return Reason(Status.OK, {"time_ratio": best.per_request_tps / option.per_request_tps})
    return Reason(Status.OK, {"time_ratio": option.days / best.days})


def recommend(*args, **kwargs) -> Option:
    """The winner: the best option with evidence (or, with include_unverified, the best of all)."""
    return winner(rank(*args, **kwargs))


def winner(options: list[Option]) -> Option:
    """The first of ranked options, if it meets every constraint; else an error saying why none does."""
    if options and options[0].ok:
        return options[0]
    best_unverified = best_unverified_of(options)
    if best_unverified is not None:
        raise na_error(f"no GPU that meets the constraints has a measurement in its regime; the best unverified "
                       f"is {best_unverified.count:,} x {best_unverified.gpu}: {best_unverified.reason.text()}")
    reasons = "; ".join(f"{o.gpu}: {o.reason.text()}" for o in options[:3])
    raise num_error(f"no GPU in the catalog meets the constraints ({reasons})")


def days_sentence(days: float | None, span: tuple[float, float] | None, deadline: float | None) -> str:
    """A job's days over its regime's error band, and whether the deadline holds at the band's slow end
    (the count is sized to meet it at the estimate)."""
    if days is None or span is None:
        return ""
    text = f" and it takes {duration(span[0], span[1])} to {duration(span[1])}"
    if deadline and span[1] > deadline * (1 + 1e-9):
        text += (f": the {deadline:g}-day deadline holds at the estimate ({duration(days)}), not at the band's slow "
                 f"end")
    return text


def latency_sentence(latency_s: float | None, ev: evidence.Evidence | None, target_s: float | None) -> str:
    """A service sized to hold its p95 latency target at the estimate: the whole request at the band's slow end
    (the estimate too fast by the regime's P90 error: each step that much longer, at the same batch and copies),
    and whether the target holds there. A lower figure than the truth there: the wait for a slot grows too."""
    if latency_s is None or ev is None or not target_s:
        return ""
    slow = ev.value_range(latency_s, inverse=True)[1]     # a time is inverse to the throughput the band scores
    if slow <= target_s * (1 + 1e-9):
        return f"; at the band's slow end a request takes about {slow:,.1f} s, within the {target_s:g} s target"
    return (f"; at the band's slow end a request takes {slow:,.1f} s or more: the {target_s:g} s p95 holds only at "
            f"the estimate ({latency_s:,.1f} s)")


def latency_as_sized(o: Option) -> str:
    """A service sized with no latency target runs each copy at the largest batch its cache holds: how long a
    request then takes, so a reader sees what the count buys (a 405B answer of 256 tokens can take minutes)."""
    if o.latency_p95_s is None:
        return ""
    return (f"; a request takes {o.latency_p95_s:,.1f} s at the p95 (the wait for a slot and the whole answer at "
            f"batch {o.batch}; max_latency_s bounds it)")


def duration(days: float, scale: float | None = None) -> str:
    """A job's time as a reader takes it in: days, or hours under two days (a fine-tune of a few hours is not
    "0.1 days"); `scale` picks the unit for the bare low end of a range ("2.1 to 2.9 hours")."""
    if (days if scale is None else scale) < 2:
        return f"{days * 24:,.1f}" + ("" if scale is not None else " hours")
    return f"{days:,.1f}" + ("" if scale is not None else " days")


def summary(best: Option, traffic: float | None = None, deadline_days: float | None = None,
            max_latency_s: float | None = None) -> str:
    """What GPU_RECOMMEND says of the winner, so a reader can check and forward it: the count and its
    price basis, what the count is (serving: copies, GPUs a copy, spares, the load it is sized for;
    training: days and GPU-hours), the cost with its range over the regime's measured error and the
    measured rows behind it (a job: its days over that band, and whether the deadline holds at its slow end; a
    service with a latency target: whether it holds there),
    and the cash (up front, a month). A service sized with no traffic is one copy and its spare, priced with
    the copies busy (as GPU_RANK prices it): the text says so."""
    serving = best.gpus_per_copy is not None
    text = f"{best.count:,} x {best.gpu} ({best.price_basis}): "
    text += _serving_what(best, traffic) if serving else _training_what(best)
    text += f"; {_money(best.cost, best.cost_unit)}"
    text += (" at that load" if traffic else " with those copies busy") if serving else " for the job"
    if best.cost_range:
        low, high = (_money(v, best.cost_unit, unit_text=False) for v in best.cost_range)
        rows = plural(best.evidence.rows, "measured row") if best.evidence else ""
        text += f" ({low} to {high} over its regime's measured error, {rows}{format_note(best.evidence)})"
    if not serving:
        text += days_sentence(best.days, best.speed_range, deadline_days)
    text += _cash_text(best)
    if serving:
        text += latency_sentence(best.latency_p95_s, best.evidence, max_latency_s) or latency_as_sized(best)
    if serving and not traffic:
        text += "; no tokens_or_traffic given: sized for one copy's load, give your output tokens/s to size for yours"
    return text


def format_note(ev: evidence.Evidence | None) -> str:
    """', in fp8, not bf16' where the regime's rows measured only other formats than the one asked."""
    return f", {ev.format_phrase}" if ev is not None and ev.format_phrase else ""


def verify_note(opt) -> str:
    """What the option's evidence lacks and the measurement that would supply it (a picker Option or a report Row):
    no measurement in its regime, or none in the format asked (the text beside it says which formats were, from
    Evidence.label); "" when a row in its format backs it."""
    ev = opt.evidence
    if ev is None or ev.same_format:
        return ""
    if not ev.measured:
        return f"no measurement in its regime; to verify it, {opt.to_verify}"
    return f"to verify it in {ev.precision}, {opt.to_verify}"


def _serving_what(o: Option, traffic: float | None) -> str:
    n, copies = given(o.gpus_per_copy, "GPUs a copy"), given(o.sized_copies, "the copies")
    spare = o.spare_copies or 0
    per_copy = given(o.tokens_per_sec, "the throughput") * n / o.count
    text = f"{plural(copies - spare, 'copy')} of {plural(n, 'GPU')}"
    text += f" + {plural(spare, 'spare copy')}" if spare else ""
    text += f" for {traffic:,.0f} output tokens/s" if traffic else ""
    text += f", {per_copy:,.0f} output tokens/s a copy at batch {o.batch}"
    if o.count > copies * n:
        text += f", bought in whole {given(o.purchase_unit, 'the system size')}-GPU units: {o.count:,} GPUs"
    return text


# QLoRA's hours are LoRA's: no sourced slowdown for dequantising the NF4 base each pass was found (Answer.AI's paired
# 7B runs on 2 x RTX 4090, benchmarks/measured/lora_time_measured.csv, have QLoRA within 3% of LoRA), so the answer says so
QLORA_SPEED = " at LoRA's speed (the NF4 base's dequantisation in each pass is not modelled)"


def _training_what(o: Option) -> str:
    hours = f"{duration(given(o.days, 'the days'))}, {given(o.gpu_hours, 'the GPU-hours'):,.0f} GPU-hours"
    return hours + (QLORA_SPEED if o.method == "qlora" else "")


def _money(value: float | None, unit: str, unit_text: bool = True) -> str:
    if value is None:
        return "no cost"
    if unit.startswith("$ per 1M"):
        return f"${value:,.3f}" + (unit[1:] if unit_text else "")
    return f"${value:,.0f}"


def _cash_text(o: Option) -> str:
    """The cash the option takes: an owned option's capex and month, a rented service's month (a rented
    job's cash is its cost)."""
    if o.capex:
        return f"; cash ${o.capex:,.0f} up front, ${given(o.monthly_cash, 'the month'):,.0f} a month"
    if o.gpus_per_copy and o.monthly_cash:
        return f"; rent ${o.monthly_cash:,.0f} a month"
    return ""


def best_unverified_of(options: list[Option]) -> Option | None:
    """The best option left out only because nothing has measured its regime (options best first)."""
    return next((o for o in options if o.status is Status.UNVERIFIED), None)


def ahead(option: Option) -> bool:
    """An unverified option that would have won on its estimate (its ratio to the winner)."""
    f = option.reason.figures
    return f.get("cost_ratio", 1) < 1 or f.get("time_ratio", 1) < 1
