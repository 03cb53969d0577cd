"""The report's model: the recommendation and two runners-up from the option sweep
(sweep.py), why each was chosen, the sensitivity of the recommendation's total cost to each
main assumption (each moved -25% / +25%, the engine re-run) and the cumulative cost of owning
against renting. Plain data for workbook_templates/report.py to write.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field, replace

from . import calibration as cal
from . import catalog, economics, picker
from .economics import HOURS_PER_MONTH
from .scenario import Scenario
from .sweep import Row, options, purchase_price, scenario_rate, sort_rows

SWING = 0.25


@dataclass
class Result:
    scenario: Scenario
    rows: list[Row]
    best: Row | None
    runners_up: list[Row]
    why: dict[int, str] = field(default_factory=dict)     # id(row) -> why it was chosen, for the Summary
    sensitivity: list[dict] = field(default_factory=list)
    own_vs_rent: dict | None = None
    used_gpus: list[str] = field(default_factory=list)

    @property
    def ok_rows(self) -> list[Row]:
        return [r for r in self.rows if r.ok]


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
