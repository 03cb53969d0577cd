"""The numbers behind `flopsheet report`: every candidate GPU x count x pricing basis sized by
the picker (udfs.picker.rank), priced with the scenario's own assumptions (negotiated rates,
purchase prices, utilization, lifetime, power, financing), ranked, and the sensitivity of the
recommendation's total cost to each main assumption (each moved -25% / +25%, the engine re-run).

Pricing: the picker sizes each option and prices it at catalog rates; its cost is linear in the
$/GPU-hour, so an option is re-priced at the scenario's rate: training cost = GPU-hours x rate
(GPU-hours = days x count x 24), serving cost per 1M output tokens = rate x GPUs / provisioned
tokens/s (economics.cost_per_1m_tokens, as the picker), serving cost per month = rate x GPUs x 730 h.
Owned rates come from economics.owned_cost_per_gpu_hour with the scenario's assumptions.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field, replace

from udfs import calibration as cal
from udfs import catalog, economics, picker, serving
from udfs.economics import HOURS_PER_MONTH

from .scenario import Scenario

SWING = 0.25


@dataclass
class Row:
    gpu: str
    basis: str                    # "cloud" | "owned"
    count: int
    auto_count: bool              # the picker's count (fewest that meet the constraints)
    fits: bool
    ok: bool
    reason: str
    days: float | None = None     # training
    gpu_hours: float | None = None
    capacity_tps: float | None = None        # serving: output tokens/s the GPUs can generate
    per_request_tps: float | None = None     # serving: tokens/s each request sees
    seconds_per_request: float | None = None
    rate: float | None = None                # $/GPU-hour used
    rate_note: str = ""
    total_cost: float | None = None          # $ per job (training) or $ per month (serving)
    cost_per_1m: float | None = None         # serving
    rank: int | None = None

    @property
    def label(self) -> str:
        return f"{self.count} x {self.gpu} ({self.basis})"

    @property
    def time(self) -> float | None:
        return self.days if self.days is not None else self.seconds_per_request


@dataclass
class Result:
    scenario: Scenario
    rows: list[Row]
    best: Row | None
    runners_up: list[Row]
    why: dict[int, str] = field(default_factory=dict)     # id(row) -> reason on the Summary
    sensitivity: list[dict] = field(default_factory=list)
    own_vs_rent: dict | None = None
    used_gpus: list[str] = field(default_factory=list)

    @property
    def ok_rows(self) -> list[Row]:
        return [r for r in self.rows if r.ok]


# ---------------------------------------------------------------- prices
def cloud_row(gpu: catalog.Gpu):
    """The catalog cloud price row the picker uses (cheapest current on-demand)."""
    rows = [p for p in catalog.cloud_prices() if p.gpu == gpu.name and p.status == "current"
            and p.pricing == "on-demand" and p.usd_per_gpu_hour]
    return min(rows, key=lambda p: p.usd_per_gpu_hour) if rows else None


def purchase_price(sc: Scenario, gpu: catalog.Gpu, price_scale: float = 1.0) -> float | None:
    price = sc.purchase_overrides.get(gpu.name, gpu.price_usd)
    return price * price_scale if price else None


def owned_rate(sc: Scenario, gpu: catalog.Gpu, price_scale: float = 1.0) -> float | None:
    price = purchase_price(sc, gpu, price_scale)
    if not price:
        return None
    o = sc.ownership
    return economics.owned_cost_per_gpu_hour(price, o.lifetime_years, gpu.tdp_w or 0, o.pue, o.usd_per_kwh,
                                             o.utilization, o.cost_of_capital, o.residual_fraction * price,
                                             o.opex_per_gpu_year)


def scenario_rate(sc: Scenario, gpu: catalog.Gpu, basis: str, price_scale: float = 1.0) -> tuple[float, str] | None:
    if basis == "cloud":
        if gpu.name in sc.cloud_overrides:
            r = sc.cloud_overrides[gpu.name] * price_scale
            return r, f"negotiated ${sc.cloud_overrides[gpu.name]:g}/GPU-h (scenario)"
        row = cloud_row(gpu)
        if row is None:
            return None
        return row.usd_per_gpu_hour * price_scale, (f"cloud {row.provider} {row.instance} "
                                                    f"${row.usd_per_gpu_hour:g}/GPU-h ({row.price_date})")
    rate = owned_rate(sc, gpu, price_scale)
    if rate is None:
        return None
    price = purchase_price(sc, gpu)
    o = sc.ownership
    where = "scenario" if gpu.name in sc.purchase_overrides else "catalog"
    return rate, (f"owned ${price:,.0f} ({where}) over {o.lifetime_years:g} years at {o.utilization:.0%} use, "
                  f"PUE {o.pue:g}, ${o.usd_per_kwh:g}/kWh: ${rate:.3f}/GPU-h")


# ---------------------------------------------------------------- options
def replica_gpus(model, gpu: catalog.Gpu, precision: str, batch: float) -> int | None:
    """GPUs per serving copy, as the picker sizes it (fewest of 1, 2, 4, 8 that hold it)."""
    for n in picker.TP_SIZES:
        if serving.serving_memory_gib(model, precision, batch, picker.SERVE_CONTEXT, "fp16", n)["total"] \
                <= gpu.memory_gb * cal.USABLE_MEMORY_FRACTION:
            return n
    return None


def candidates(sc: Scenario) -> list[catalog.Gpu]:
    if sc.gpus is None:
        return list(catalog.gpus())
    return [catalog.gpu(g) for g in sc.gpus]


def options(sc: Scenario, *, efficiency: float = 1.0, work_scale: float = 1.0, price_scale: float = 1.0,
            only: tuple[str, str] | None = None) -> list[Row]:
    """Every candidate GPU x count x basis. `efficiency` scales MFU (training) or decode speed
    (serving) - the engine is re-run on the work divided by it; `work_scale` scales the tokens
    or traffic; `price_scale` the $/GPU-hour and purchase prices. `only` = (gpu, basis)."""
    model = picker.model_for(sc.model)
    work = sc.work * work_scale if sc.work is not None else None
    sized = work / efficiency if work is not None else None
    if sized is None and efficiency != 1.0:           # default fine-tuning tokens
        sized = picker.FINETUNE_TOKENS / efficiency
    deadline = sc.deadline_days or picker.DEFAULT_DEADLINE_DAYS
    names = {g.name for g in candidates(sc)}
    rows: list[Row] = []
    for basis in sc.pricing:
        if only and only[1] != basis:
            continue
        ranked = picker.rank(sc.kind, model, sc.precision, sc.objective, None, sc.deadline_days, sized, sc.batch,
                             basis, sc.min_tokens_per_sec if efficiency == 1.0 else sc.min_tokens_per_sec / efficiency)
        for opt in ranked:
            if opt.gpu not in names or (only and only[0] != opt.gpu):
                continue
            gpu = catalog.gpu(opt.gpu)
            rate = scenario_rate(sc, gpu, basis, price_scale)
            if sc.serving:
                rows += _serving_rows(sc, model, gpu, opt, basis, rate, work, efficiency)
            else:
                rows += _training_rows(sc, opt, basis, rate, deadline)
    if sc.budget_usd:
        for r in rows:
            if r.ok and r.total_cost is not None and r.total_cost > sc.budget_usd:
                r.ok = False
                r.reason = (f"over budget: ${r.total_cost:,.0f} > ${sc.budget_usd:,.0f}"
                            + (" per month" if sc.serving else ""))
    return rows


def _priced(opt) -> bool:
    """The picker's option failed only for want of a catalog price (a scenario price may fix it)."""
    return opt.ok or opt.reason.startswith("no price") or opt.reason.startswith("over budget")


def _training_rows(sc: Scenario, opt, basis: str, rate, deadline: float) -> list[Row]:
    base = Row(opt.gpu, basis, opt.count, True, opt.fits, opt.ok, opt.reason, rate_note=rate[1] if rate else "no price")
    if opt.days is None or not _priced(opt):
        base.days = opt.days
        if base.ok is False and not base.reason:
            base.reason = "fails"
        return _same_for_counts(sc, base)
    gpu_hours = opt.days * opt.count * 24
    min_count = opt.count
    deadline_count = math.ceil(gpu_hours / (deadline * 24))
    out = []
    counts = [opt.count] + [c for c in (sc.counts or []) if c != opt.count]
    for c in counts:
        r = Row(opt.gpu, basis, c, c == opt.count, True, True, "", days=gpu_hours / c / 24, gpu_hours=gpu_hours)
        if c < min_count and min_count > deadline_count:
            r.fits, r.ok = False, False
            r.reason = f"does not fit on {c} GPUs: the model needs at least {min_count}"
        elif r.days > deadline * (1 + 1e-9):
            r.ok = False
            r.reason = f"misses the deadline: {r.days:,.1f} days > {deadline:g}"
        if rate is None:
            r.ok = False
            r.reason = r.reason or "no price for this basis (catalog or scenario)"
        else:
            r.rate, r.rate_note = rate
            r.total_cost = gpu_hours * rate[0]
        out.append(r)
    return out


def _same_for_counts(sc: Scenario, base: Row) -> list[Row]:
    """An option that fails whatever the count: one row, and one per scenario count."""
    return [base] + [replace(base, count=c, auto_count=False) for c in (sc.counts or []) if c != base.count]


def _serving_rows(sc: Scenario, model, gpu, opt, basis: str, rate, traffic: float, efficiency: float = 1.0) -> list[Row]:
    base = Row(opt.gpu, basis, opt.count, True, opt.fits, opt.ok, opt.reason,
               rate_note=rate[1] if rate else "no price")
    tp = replica_gpus(model, gpu, sc.precision, sc.batch) if opt.fits else None
    if tp is None or not opt.count or not opt.tokens_per_sec:
        return _same_for_counts(sc, base)
    per_copy = opt.tokens_per_sec / (opt.count / tp)
    per_copy_true = per_copy * efficiency       # the sizing run used the traffic / efficiency
    out = []
    counts = [opt.count] + [c for c in (sc.counts or []) if c != opt.count]
    for c in counts:
        copies = c // tp
        r = Row(opt.gpu, basis, c, c == opt.count, copies >= 1, True, "")
        if copies < 1:
            r.ok = False
            r.reason = f"does not fit: one copy of the model needs {tp} GPUs"
            out.append(r)
            continue
        r.capacity_tps = per_copy_true * copies
        r.per_request_tps = per_copy_true / sc.batch
        r.seconds_per_request = sc.output_tokens_per_request / r.per_request_tps
        if not opt.ok and opt.reason.startswith("too slow"):
            r.ok, r.reason = False, opt.reason
        elif c == opt.count and not _priced(opt):
            r.ok, r.reason = False, opt.reason
        elif r.capacity_tps < traffic * (1 - 1e-9) and c != opt.count:
            r.ok = False
            r.reason = f"too little throughput: {r.capacity_tps:,.0f} tokens/s < {traffic:,.0f} needed"
        if rate is None:
            r.ok = False
            r.reason = r.reason or "no price for this basis (catalog or scenario)"
        else:
            r.rate, r.rate_note = rate
            r.cost_per_1m = economics.cost_per_1m_tokens(rate[0] * c, traffic)
            r.total_cost = rate[0] * c * HOURS_PER_MONTH
        out.append(r)
    return out


def sort_rows(sc: Scenario, rows: list[Row]) -> list[Row]:
    if sc.objective == "time":
        if sc.serving:
            key = lambda r: (r.seconds_per_request or math.inf, r.total_cost or math.inf)  # noqa: E731
        else:
            key = lambda r: (r.days if r.days is not None else math.inf, r.total_cost or math.inf)  # noqa: E731
    else:
        key = lambda r: (r.total_cost if r.total_cost is not None else math.inf, r.time or math.inf)  # noqa: E731
    ordered = sorted(rows, key=lambda r: (not r.ok, key(r), r.gpu, r.basis, r.count))
    n = 0
    for r in ordered:
        if r.ok:
            n += 1
            r.rank = n
    return ordered


# ---------------------------------------------------------------- the whole analysis
def analyse(sc: Scenario, sensitivity: bool = True) -> Result:
    rows = sort_rows(sc, options(sc))
    ok = [r for r in rows if r.ok]
    best = ok[0] if ok else None
    runners: list[Row] = []
    seen = {(best.gpu, best.basis)} if best else set()
    for r in ok[1:]:                       # two runners-up that are different GPUs or bases
        if (r.gpu, r.basis) not in seen:
            runners.append(r)
            seen.add((r.gpu, r.basis))
        if len(runners) == 2:
            break
    res = Result(sc, rows, best, runners)
    if best:
        res.why[id(best)] = _why_best(sc, best, len(ok))
        for r in runners:
            res.why[id(r)] = _why_runner(sc, r, best)
        if sensitivity:
            res.sensitivity = sensitivity_table(sc, best)
        res.own_vs_rent = own_vs_rent(sc, rows, best)
    res.used_gpus = sorted({r.gpu for r in rows}, key=lambda g: catalog.gpu_names().index(g))
    return res


def _unit(sc) -> str:
    return "per month" if sc.serving else "for the job"


def _why_best(sc: Scenario, r: Row, n_ok: int) -> str:
    what = "cheapest" if sc.objective == "cost" else "fastest"
    head = f"The {what} of {n_ok} options that meet every constraint"
    if sc.serving:
        return (f"{head}: ${r.total_cost:,.0f} {_unit(sc)}, ${r.cost_per_1m:,.3f} per 1M output tokens, "
                f"{r.per_request_tps:,.1f} tokens/s per request ({r.seconds_per_request:,.1f} s for "
                f"{sc.output_tokens_per_request:g} tokens).")
    return f"{head}: ${r.total_cost:,.0f} {_unit(sc)} in {r.days:,.1f} days on {r.count:,} GPUs."


def _why_runner(sc: Scenario, r: Row, best: Row) -> str:
    cost = r.total_cost / best.total_cost if best.total_cost else math.nan
    if sc.serving:
        speed = r.per_request_tps / best.per_request_tps
        return (f"{cost:.2f}x the recommendation's cost (${r.total_cost:,.0f} {_unit(sc)}); "
                f"{speed:.2f}x its speed per request ({r.per_request_tps:,.1f} tokens/s).")
    return (f"{cost:.2f}x the recommendation's cost (${r.total_cost:,.0f}); {r.days:,.1f} days "
            f"({r.days / best.days:.2f}x the time) on {r.count:,} GPUs.")


def _cost_of(sc: Scenario, row: Row, **kw) -> float | None:
    """Total cost of the same GPU, basis and count rule with changed assumptions (engine re-run)."""
    for r in options(sc, only=(row.gpu, row.basis), **kw):
        if r.auto_count == row.auto_count and (row.auto_count or r.count == row.count):
            return r.total_cost
    return None


def sensitivity_table(sc: Scenario, best: Row) -> list[dict]:
    o = sc.ownership
    low_f, high_f = 1 - SWING, 1 + SWING
    items = []

    def add(name, unit, base_value, low_value, high_value, low_cost, high_cost, note=""):
        items.append({"assumption": name, "unit": unit, "base_value": base_value, "low_value": low_value,
                      "high_value": high_value, "low_cost": low_cost, "high_cost": high_cost, "note": note})

    eff_name = "Decode efficiency (share of modelled speed)" if sc.serving else "MFU (model FLOPs utilization)"
    eff_base = 1.0 if sc.serving else cal.DEFAULT_MFU
    add(eff_name, "", eff_base, eff_base * low_f, eff_base * high_f,
        _cost_of(sc, best, efficiency=low_f), _cost_of(sc, best, efficiency=high_f),
        "engine re-run on the work divided by the efficiency factor")
    util_hi = min(1.0, o.utilization * high_f)
    add("Utilization (owned GPUs)", "", o.utilization, o.utilization * low_f, util_hi,
        _cost_of(replace(sc, ownership=replace(o, utilization=o.utilization * low_f)), best),
        _cost_of(replace(sc, ownership=replace(o, utilization=util_hi)), best),
        "capped at 100%" if util_hi < o.utilization * high_f else "")
    add("GPU price ($/GPU-h rented, purchase price owned)", "x", 1.0, low_f, high_f,
        _cost_of(sc, best, price_scale=low_f), _cost_of(sc, best, price_scale=high_f), "")
    add("Electricity ($/kWh)", "$/kWh", o.usd_per_kwh, o.usd_per_kwh * low_f, o.usd_per_kwh * high_f,
        _cost_of(replace(sc, ownership=replace(o, usd_per_kwh=o.usd_per_kwh * low_f)), best),
        _cost_of(replace(sc, ownership=replace(o, usd_per_kwh=o.usd_per_kwh * high_f)), best),
        "owned GPUs only")
    add("Lifetime (years)", "years", o.lifetime_years, o.lifetime_years * low_f, o.lifetime_years * high_f,
        _cost_of(replace(sc, ownership=replace(o, lifetime_years=o.lifetime_years * low_f)), best),
        _cost_of(replace(sc, ownership=replace(o, lifetime_years=o.lifetime_years * high_f)), best),
        "owned GPUs only")
    work_name = "Traffic (output tokens/s)" if sc.serving else "Training tokens"
    work = sc.work if sc.work is not None else picker.FINETUNE_TOKENS
    add(work_name, "tokens/s" if sc.serving else "tokens", work, work * low_f, work * high_f,
        _cost_of(sc, best, work_scale=low_f) if sc.work is not None else _cost_of(sc, best, efficiency=1 / low_f),
        _cost_of(sc, best, work_scale=high_f) if sc.work is not None else _cost_of(sc, best, efficiency=1 / high_f),
        "")
    base = best.total_cost
    for it in items:
        it["base_cost"] = base
        it["low_delta"] = None if it["low_cost"] is None else it["low_cost"] - base
        it["high_delta"] = None if it["high_cost"] is None else it["high_cost"] - base
        it["swing"] = abs((it["high_delta"] or 0) - (it["low_delta"] or 0))
    items.sort(key=lambda it: it["swing"], reverse=True)
    return items


def own_vs_rent(sc: Scenario, rows: list[Row], best: Row) -> dict | None:
    """Cumulative cash by month for the recommendation's GPU and count, bought or rented for the
    hours used (730 x utilization a month). Owning: the purchase at month 0, then power x PUE and
    opex each month, the residual value back at the end of the lifetime (financing not shown)."""
    pick = None
    for r in [best] + [r for r in rows if r.ok]:
        g = catalog.gpu(r.gpu)
        if scenario_rate(sc, g, "cloud") and purchase_price(sc, g):
            pick = r
            break
    if pick is None:
        return None
    g = catalog.gpu(pick.gpu)
    o = sc.ownership
    n = pick.count
    rent_rate = scenario_rate(sc, g, "cloud")[0]
    price = purchase_price(sc, g)
    used = HOURS_PER_MONTH * o.utilization
    running = economics.annual_running(g.tdp_w or 0, o.pue, o.usd_per_kwh, o.opex_per_gpu_year) / 12
    months = max(1, round(o.lifetime_years * 12))
    own, rent = [], []
    for m in range(months + 1):
        cash = n * (price + running * m)
        if m == months:
            cash -= n * price * o.residual_fraction
        own.append(cash)
        rent.append(n * rent_rate * used * m)
    crossover = next((m for m in range(months + 1) if own[m] <= rent[m] and m > 0), None)
    return {"gpu": g.name, "count": n, "rent_rate": rent_rate, "price": price, "used_hours_per_month": used,
            "running_per_month": running, "months": list(range(months + 1)), "own": own, "rent": rent,
            "crossover_month": crossover}
