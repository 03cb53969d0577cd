"""The option sweep behind `flopsheet report`: every candidate GPU x count x pricing basis sized
by the picker (udfs.planning.picker.rank), priced with the scenario's own assumptions (negotiated rates,
purchase prices, utilization, lifetime, power, financing) and ranked. Each row's verdict is a
reasons.Reason (decided on its status, never on its text). report_model.py builds the
recommendation, the sensitivity analysis and own-vs-rent on top.

Pricing: the picker sizes each option (at catalog rates); the sweep prices it at the scenario's.
Rented: $/GPU-hour x the GPU-hours rented (the job's GPU-hours training; every GPU for 730 h a month
serving). Owned: the data-centre month of economics.Ownership (capital recovery of the all-in system
price, network, colocation, power, opex) - cash, the same whatever the utilization; a training job
bears GPU-hours x that month / (730 h x utilization). Serving cost per 1M output tokens = the
monthly cost / the tokens produced a month (Scenario.tokens_per_month). Capex and the month owning
breaks even against renting the same GPU are on every row.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field, replace

from ..catalogs import catalog
from ..physics import defaults, economics, training
from ..physics.evidence import Evidence
from . import picker
from ..physics.economics import HOURS_PER_MONTH
from ..errors import MissingFigure, given
from ..words import plural
from .reasons import Reason, Status
from .scenario import Scenario


@dataclass
class Row:
    gpu: str
    basis: str                    # "cloud" | "owned"
    count: int
    auto_count: bool              # the picker's count (fewest that meet the constraints)
    fits: bool
    reason: Reason | None = None  # None: meets every constraint
    days: float | None = None     # training
    gpu_hours: float | None = None
    capacity_tps: float | None = None        # serving: output tokens/s the GPUs can generate
    per_request_tps: float | None = None     # serving: tokens/s each request sees
    seconds_per_request: float | None = None
    rate: float | None = None                # $/GPU-hour used
    rate_note: str = ""
    total_cost: float | None = None          # $ per job (training) or $ per month (serving)
    cost_per_1m: float | None = None         # serving: monthly cost / output tokens produced
    monthly_cost: float | None = None        # cash a month: owned = the GPUs' data-centre month; cloud = rent
    capex: float | None = None               # owned: systems + network, paid up front; cloud: 0
    rented_hours: float | None = None        # cloud: GPU-hours rented (a month serving, the job training)
    lines: dict | None = None                # owned: the monthly cash by line, all GPUs
    breakeven_month: int | None = None       # owning vs renting this GPU and count (None: not within the life)
    gpus_per_copy: int | None = None         # serving: the tensor-parallel group of one model copy
    batch: int | None = None                 # serving: sequences each copy runs at once
    purchase_unit: int | None = None         # GPUs per system (owned) or instance (cloud): the count is a multiple
    scale_efficiency: float | None = None    # training: share of the time computing (the all-reduce is the rest)
    sized_copies: int | None = None          # serving: the plan's copies, spares included, before whole systems
    spare_copies: int | None = None          # serving: copies beyond the traffic's (N+1), in the count
    ttft_p95_ms: float | None = None         # serving: the p95 wait for a slot + the mean time to first token
    latency_p95_s: float | None = None       # serving: the p95 wait for a slot + the mean whole request
    rank: int | None = None
    gpu_row: catalog.Gpu = field(kw_only=True, repr=False, compare=False)   # the GPU (never looked up again)
    evidence: Evidence | None = field(default=None, kw_only=True, repr=False, compare=False)   # the picker's
    to_verify: str = field(default="", kw_only=True)   # the measurement that would verify it (unverified only)

    @property
    def ok(self) -> bool:
        return self.reason is None or self.reason.ok

    @property
    def verified(self) -> bool:
        """A measured row backs its regime (physics.evidence)."""
        return self.evidence is not None and self.evidence.measured

    @property
    def same_format(self) -> bool:
        """A measured row in the format asked backs its regime (physics.evidence.Evidence.same_format)."""
        return self.evidence is not None and self.evidence.same_format

    @property
    def cost_range(self) -> tuple[float, float] | None:
        """(low, high) of total_cost over its regime's error band. Serving: the cost of the GPUs the
        true speed would need, before whole copies (the picker's count only: a count set in the
        scenario costs the same whatever the speed, its capacity moves instead); training: GPU-hours."""
        if self.capacity_tps is not None and not self.auto_count:
            return None
        return picker.spread(self.evidence, self.total_cost, cost=True)

    @property
    def days_range(self) -> tuple[float, float] | None:
        """(low, high) of a job's days over its regime's error band (the GPU-hours' band at the same count)."""
        return picker.spread(self.evidence, self.days) if self.days is not None else None

    def fail(self, status: Status, **figures) -> None:
        self.reason = Reason(status, figures)

    @property
    def units(self) -> int | None:
        """Systems (owned) or instances (cloud) the count is made of."""
        return self.count // self.purchase_unit if self.purchase_unit else None

    @property
    def units_text(self) -> str:
        """'3 systems x 8 GPUs' (owned) or '2 instances x 8 GPUs' (cloud); '' where the unit is unknown."""
        if not self.purchase_unit or not self.units:
            return ""
        what = "system" if self.basis == "owned" else "instance"
        return f"{plural(self.units, what)} x {plural(self.purchase_unit, 'GPU')}"

    @property
    def label(self) -> str:
        return f"{self.count} x {self.gpu} ({self.basis}{': ' + self.units_text if self.units_text else ''})"

    @property
    def up_front(self) -> float | None:
        """Cash paid up front: owned, the capex; a cloud training job, its rent; a cloud service, none."""
        if self.basis == "owned":
            return self.capex
        return self.total_cost if self.days is not None else (0.0 if self.total_cost is not None else None)

    @property
    def monthly_cash(self) -> float | None:
        """Cash a month: owned, the data-centre month; cloud, the rent (for the job's hours when shorter)."""
        if self.basis == "cloud" and self.days is not None and self.rate is not None:
            return self.rate * self.count * min(HOURS_PER_MONTH, self.days * 24)
        return self.monthly_cost

    @property
    def time(self) -> float | None:
        return self.days if self.days is not None else self.seconds_per_request


# ---------------------------------------------------------------- prices
def purchase_price(sc: Scenario, gpu: catalog.Gpu, price_scale: float = 1.0) -> float | None:
    """All-in price per GPU (its share of a server): the scenario's quote, else the catalog's."""
    price = sc.purchase_overrides.get(gpu.name, catalog.gpu_price(gpu, "system"))
    return price * price_scale if price else None


@dataclass
class Money:
    """One GPU's money under one basis: $/GPU-hour (rent, or owned cost per used hour), cash a
    month per GPU (rent for 730 h, or the data-centre month), capex and running cash per GPU."""
    rate: float
    note: str
    month: float
    capex: float = 0.0
    running: float = 0.0
    lines: dict | None = None


def money(sc: Scenario, gpu: catalog.Gpu, basis: str, price_scale: float = 1.0, together: int = 1,
          job_gpus: int | None = None) -> Money | None:
    """`together`: GPUs that must be in one rented instance (picker.instance_gpus); `job_gpus`: a training job's
    GPUs, which need a cluster network where they span instances (picker.cloud_row); cloud only."""
    rate = scenario_rate(sc, gpu, basis, price_scale, together, job_gpus)
    if rate is None:
        return None
    if basis == "cloud":
        return Money(rate[0], rate[1], rate[0] * HOURS_PER_MONTH)
    price, o = purchase_price(sc, gpu, price_scale), sc.ownership
    if price is None:
        return None
    tdp = gpu.need("tdp_w", "the power cost of owning it")
    lines = o.month(price, tdp)
    return Money(rate[0], rate[1], lines["total"], o.capex(price), o.running_per_month(price, tdp), lines)


def owned_count(sc: Scenario, gpu: catalog.Gpu, count: int) -> int:
    """GPUs to buy in place of `count` rented: whole systems (picker.sold_unit)."""
    return picker.whole(count, picker.sold_unit(gpu, "owned"))


def breakeven_month(sc: Scenario, gpu: catalog.Gpu, count: int, price_scale: float = 1.0,
                    together: int = 1, job_gpus: int | None = None) -> int | None:
    """First month in which renting `count` of this GPU at its cheapest cloud rate has cost as much as
    buying them (whole systems to serve; capex up front) and running them; rent is for 730 h a month
    serving, for the busy hours (730 x utilization) training. None: no price on one side, or not
    within the lifetime, or a figure owning needs is missing (its #N/A is the owned row's reason)."""
    try:
        own, rent = money(sc, gpu, "owned", price_scale), money(sc, gpu, "cloud", price_scale, together, job_gpus)
        bought = owned_count(sc, gpu, count)
    except MissingFigure:
        return None
    if own is None or rent is None:
        return None
    hours = HOURS_PER_MONTH * (1 if sc.serving else sc.ownership.utilization)
    saving = count * rent.rate * hours - bought * own.running
    months = round(sc.ownership.lifetime_years * 12)
    if saving <= 0:
        return None
    m = math.ceil(bought * own.capex / saving - 1e-9)
    return m if m <= months else None


def scenario_rate(sc: Scenario, gpu: catalog.Gpu, basis: str, price_scale: float = 1.0,
                  together: int = 1, job_gpus: int | None = None) -> tuple[float, str] | None:
    """$/GPU-hour and its note: the scenario's price where it gives one, else the catalog's (rented: the cheapest
    instance holding `together` GPUs, picker.cloud_row)."""
    if basis == "cloud":
        if gpu.name in sc.cloud_overrides:
            r = sc.cloud_overrides[gpu.name] * price_scale
            return r, f"negotiated ${sc.cloud_overrides[gpu.name]:g}/GPU-h (scenario)"
        cloud = picker.cloud_rate(gpu, together, job_gpus)
        return (cloud[0] * price_scale, cloud[1]) if cloud else None
    price = purchase_price(sc, gpu, price_scale)
    where = "scenario" if gpu.name in sc.purchase_overrides else "catalog"
    return picker.owned_rate(gpu, sc.ownership, price, where) if price else None


# ---------------------------------------------------------------- options
def candidates(sc: Scenario) -> list[catalog.Gpu]:
    if sc.gpus is None:
        return list(catalog.gpus())
    wanted = set(sc.gpus)                 # names the scenario resolved against the catalog when it was read
    return [g for g in catalog.gpus() if g.name in wanted]


def options(sc: Scenario, *, efficiency: float = 1.0, work_scale: float = 1.0, price_scale: float = 1.0,
            only: tuple[str, str] | None = None) -> list[Row]:
    """Every candidate GPU x count x basis. `efficiency` scales MFU (training) or decode speed
    (serving) - the engine is re-run on the work divided by it; `work_scale` scales the tokens
    or traffic; `price_scale` the $/GPU-hour and purchase prices. `only` = (gpu, basis)."""
    model = sc.model
    work = sc.work * work_scale if sc.work is not None else None
    sized = work / efficiency if work is not None else None
    if sized is None and efficiency != 1.0:           # default fine-tuning tokens
        sized = defaults.FINETUNE_TOKENS / efficiency
    deadline = sc.deadline_days or defaults.DEADLINE_DAYS
    names = {g.name for g in candidates(sc)}
    rows: list[Row] = []
    for basis in sc.pricing:
        if only and only[1] != basis:
            continue
        ranked = picker.rank(sc.kind, model, sc.precision, sc.objective, None, sc.deadline_days, sized, sc.batch,
                             basis, sc.min_tokens_per_sec if efficiency == 1.0 else sc.min_tokens_per_sec / efficiency,
                             sc.prompt_tokens_per_request, sc.output_tokens_per_request or defaults.OUTPUT_TOKENS, sc.engine,
                             sc.tiers, include_unverified=True,
                             max_latency_s=sc.p95_latency_s * efficiency if sc.p95_latency_s else None,
                             spare=sc.spare)
        for opt in ranked:
            if opt.gpu not in names or (only and only[0] != opt.gpu):
                continue
            gpu = opt.gpu_row
            try:
                rate = scenario_rate(sc, gpu, basis, price_scale, opt.instance_gpus,
                                     None if sc.serving else opt.count)
                if sc.serving:
                    new = _serving_rows(sc, model, gpu, opt, basis, rate, given(work, "the traffic"), efficiency,
                                        work_scale, price_scale)
                else:
                    new = _training_rows(sc, opt, basis, rate, deadline, price_scale)
            except MissingFigure as gap:     # e.g. an owned price without the power figure: not comparable
                base = _base_row(opt, basis, None)
                base.fail(Status.NO_SPEC, figure=gap.figure, needed_for=gap.needed_for, how=gap.how)
                new = _same_for_counts(sc, base)
            for r in new:                    # the same regime whatever the count: same GPU, engine, copy
                r.evidence, r.to_verify = opt.evidence, opt.to_verify
            rows += new
    budget = sc.budget
    if budget:
        for r in rows:
            over = budget.verdict(r.up_front, r.monthly_cash) if r.ok else None
            if over:
                r.reason = over
    if not sc.include_unverified:            # the recommendation is the best option with evidence
        for r in rows:
            if r.ok and not r.verified:
                picker.unverified(r, INCLUDE_UNVERIFIED)
    return rows


# how a scenario lets an unverified option be recommended
INCLUDE_UNVERIFIED = "include_unverified = true under [constraints]"


# the picker's verdicts a scenario price may still change (the picker priced at catalog rates)
PRICE_VERDICTS = (Status.OK, Status.NO_PRICE, Status.OVER_BUDGET, Status.NO_NETWORK)


def _base_row(opt: picker.Option, basis: str, rate) -> Row:
    """The picker's option as a row, with its verdict unless only the price decided it."""
    return Row(opt.gpu, basis, opt.count, True, opt.fits, None if opt.status in PRICE_VERDICTS else opt.reason,
               rate_note=rate[1] if rate else "no price", purchase_unit=opt.purchase_unit, gpu_row=opt.gpu_row)


def _no_price(r: Row, basis: str) -> None:
    if r.ok:
        r.fail(Status.NO_PRICE, basis=basis, scenario=True)


def _training_rows(sc: Scenario, opt, basis: str, rate, deadline: float, price_scale: float = 1.0) -> list[Row]:
    base = _base_row(opt, basis, rate)
    if opt.days is None or opt.ideal_gpu_hours is None or opt.status not in PRICE_VERDICTS:
        base.days = opt.days
        return _same_for_counts(sc, base)
    unit = int(given(opt.purchase_unit, "the GPUs per system"))
    min_count = given(opt.mem_count, "the GPUs to hold it")
    opt.gpu_row.need("system_gpus", "training across GPUs")      # a server's size lays the job out: the error, first
    out = []
    joins = opt.status is Status.NO_NETWORK       # the picker's count spans instances none of which is a cluster
    for c in _counts(sc, opt.count, unit):
        eff = training.scale_out_efficiency(sc.model, opt.gpu_row, c, sc.precision,
                                            method=picker.training_method(sc.kind))
        gpu_hours = opt.ideal_gpu_hours / eff
        days = gpu_hours / c / 24
        r = Row(opt.gpu, basis, c, c == opt.count, True, days=days, gpu_hours=gpu_hours, purchase_unit=unit,
                scale_efficiency=eff, gpu_row=opt.gpu_row)
        if c < min_count:
            r.fits = False
            r.fail(Status.NO_FIT, count=c, min_count=min_count)
        elif days > deadline * (1 + 1e-9):
            r.fail(Status.MISSES_DEADLINE, days=days, deadline=deadline)
        together = picker.instance_gpus(opt.gpu_row, c)
        m = money(sc, opt.gpu_row, basis, price_scale, together, c) if rate is not None or joins else None
        if m is None and joins and picker.cloud_row(opt.gpu_row, together) is not None:
            if r.ok:
                r.fail(Status.NO_NETWORK, **(opt.reason.figures | {"count": c}))
        elif m is None:
            _no_price(r, basis)
        else:
            _price(sc, r, m, c, price_scale, together, c)
            r.total_cost = gpu_hours * m.rate
            r.rented_hours = gpu_hours if basis == "cloud" else None
        out.append(r)
    return out


def _price(sc: Scenario, r: Row, m: Money, count: int, price_scale: float, together: int = 1,
           job_gpus: int | None = None) -> None:
    """The money of `count` GPUs on a row (the same figures for every sheet, chart and the JSON)."""
    r.rate, r.rate_note = m.rate, m.note
    r.monthly_cost = m.month * count
    r.capex = m.capex * count
    r.lines = {k: v * count for k, v in m.lines.items()} if m.lines else None
    r.breakeven_month = breakeven_month(sc, r.gpu_row, count, price_scale, together, job_gpus)


def _same_for_counts(sc: Scenario, base: Row) -> list[Row]:
    """An option that fails whatever the count: one row, and one per scenario count."""
    try:
        unit = base.purchase_unit or picker.sold_unit(base.gpu_row, base.basis)
    except MissingFigure:                  # no system size known: the counts as given
        unit = 1
    return [base] + [replace(base, count=c, auto_count=False) for c in _counts(sc, base.count, unit)[1:]]


def _counts(sc: Scenario, auto: int, unit: int) -> list[int]:
    """The picker's count, then the scenario's counts rounded up to whole units (systems or
    instances: nobody sells 51 H100 SXM), each once."""
    return list(dict.fromkeys([auto] + [picker.whole(c, unit) for c in (sc.counts or [])]))


def _serving_rows(sc: Scenario, model, gpu, opt, basis: str, rate, traffic: float, efficiency: float = 1.0,
                  work_scale: float = 1.0, price_scale: float = 1.0) -> list[Row]:
    base = _base_row(opt, basis, rate)
    tp = opt.gpus_per_copy
    if tp is None or not opt.count or not opt.tokens_per_sec:
        return _same_for_counts(sc, base)
    per_copy = opt.tokens_per_sec / (opt.count / tp)
    per_copy_true = per_copy * efficiency       # the sizing run used the traffic / efficiency
    out = []
    unit = opt.purchase_unit or 1
    for c in _counts(sc, opt.count, unit):
        copies = c // tp
        r = Row(opt.gpu, basis, c, c == opt.count, copies >= 1, purchase_unit=unit, gpu_row=opt.gpu_row)
        if copies < 1:
            r.fail(Status.NO_FIT, count=c, per_copy=tp)
            out.append(r)
            continue
        r.capacity_tps = per_copy_true * copies
        r.gpus_per_copy, r.batch = tp, opt.batch
        if c == opt.count:                     # the plan's own copies: its spare and its queue
            r.spare_copies, r.ttft_p95_ms, r.latency_p95_s = opt.spare_copies, opt.ttft_p95_ms, opt.latency_p95_s
            r.sized_copies = opt.sized_copies
        r.per_request_tps = opt.per_request_tps * efficiency
        r.seconds_per_request = sc.traffic()[1] / r.per_request_tps
        if opt.status is Status.TOO_SLOW or (c == opt.count and opt.status not in PRICE_VERDICTS):
            r.reason = opt.reason
        elif r.capacity_tps < traffic * (1 - 1e-9) and c != opt.count:
            r.fail(Status.TOO_LITTLE_THROUGHPUT, capacity=r.capacity_tps, needed=traffic)
        m = money(sc, gpu, basis, price_scale, tp) if rate is not None else None
        if m is None:
            _no_price(r, basis)
        else:
            _price(sc, r, m, c, price_scale, tp)
            r.total_cost = r.monthly_cost = m.month * c
            r.rented_hours = c * HOURS_PER_MONTH if basis == "cloud" else None
            r.cost_per_1m = served_cost_per_1m(m.month * c, c, given(sc.tokens_per_month, "the tokens a month") * work_scale)
        out.append(r)
    return out


def served_cost_per_1m(monthly_cost: float, count: int, tokens_per_month: float) -> float:
    """$ per 1M output tokens served: economics.cost_per_1m_output_tokens with the GPUs' cost an hour
    (the month's cost / 730: rent for every hour, or the owned cash month) over the output tokens/s
    actually served on average (a month's tokens / 730 h). Against COST_PER_1M_OUTPUT_TOKENS (the copy
    at full use) it is higher by capacity / average traffic: the burst headroom, whole copies and the
    average load (the utilization) all leave GPU-hours idle."""
    return economics.cost_per_1m_output_tokens(monthly_cost / (count * HOURS_PER_MONTH), count,
                                               tokens_per_month / (HOURS_PER_MONTH * 3600))


def sort_rows(sc: Scenario, rows: list[Row]) -> list[Row]:
    """Rows best first by the picker's ranking (picker.rank_key), those that fail a constraint last."""
    ordered = sorted(rows, key=lambda r: (not r.ok, picker.rank_key(sc.objective, r.total_cost, r.time, r.count),
                                          r.gpu, r.basis))
    n = 0
    for r in ordered:
        if r.ok:
            n += 1
            r.rank = n
    return ordered


