"""The report's model: the recommendation and two runners-up from the option sweep
(sweep.py), why each was chosen, the sensitivity of the recommendation's total cost to each
main assumption (each moved -25% / +25%, the engine re-run) and the cumulative cost of owning
against renting. Typed data for workbook_templates/report/ to write, and the `--json` summary
(ReportSummary, whose field names are the JSON keys).
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass, field, fields, is_dataclass, replace

from ..catalogs import catalog
from ..catalogs.catalog import as_precision
from ..physics import defaults, training, training_efficiency
from ..errors import FlopsheetError, num_error
from ..words import plural, sentence_case
from ..physics.economics import HOURS_PER_MONTH
from . import api_compare, picker
from . import plan as plan_model
from .reasons import Status
from .currency import Currency
from .scenario import Scenario
from .sweep import Row, breakeven_month, money, options, owned_count, purchase_price, sort_rows

SWING = 0.25


@dataclass(frozen=True)
class Sensitivity:
    """One assumption moved -SWING and +SWING with the rest held, and the recommendation's total cost
    at each (None: the engine found no such option under the changed assumption)."""
    assumption: str
    unit: str                   # "" a share (printed as a percentage); "x" a factor on the prices used (1 = as priced)
    base_value: float
    low_value: float
    high_value: float
    low_cost: float | None
    high_cost: float | None
    note: str
    base_cost: float | None     # the recommendation's total cost as analysed

    @property
    def low_delta(self) -> float | None:
        return _delta(self.low_cost, self.base_cost)

    @property
    def high_delta(self) -> float | None:
        return _delta(self.high_cost, self.base_cost)

    @property
    def swing(self) -> float:
        """How far the cost moves between the two ends (an end with no cost counts as no change)."""
        return abs((self.high_delta or 0) - (self.low_delta or 0))


def _delta(cost: float | None, base: float | None) -> float | None:
    return None if cost is None or base is None else cost - base


@dataclass(frozen=True)
class MissingPrice:
    """No own-vs-rent comparison for the recommended GPU: the catalog lacks its price on one side."""
    gpu: str
    count: int
    missing: str                # "cloud" or "owned"


@dataclass(frozen=True)
class OwnVsRent:
    """Cumulative cash by month, owning against renting the recommended GPUs (see own_vs_rent)."""
    gpu: str
    count: int                  # GPUs rented: the recommendation's count
    bought: int                 # GPUs bought: whole systems
    rent_rate: float            # $/GPU-hour, the cheapest cloud rate (or the scenario's)
    capex: float                # $ at month 0, all GPUs bought
    used_hours_per_month: float  # rented hours a month per GPU
    running_per_month: float    # owned cash a month after the capex, all GPUs bought
    months: list[int]           # 0 .. the lifetime in months
    own: list[float]            # cumulative $ owning, by month (residual back in the last)
    rent: list[float]           # cumulative $ renting, by month
    crossover_month: int | None  # first month renting has cost more (None: not within the lifetime)


@dataclass
class Result:
    scenario: Scenario
    rows: list[Row]
    best: Row | None
    runners_up: list[Row]
    why: dict[tuple[str, str], str] = field(default_factory=dict)   # (gpu, basis) of a pick -> why it was chosen
    sensitivity: list[Sensitivity] = field(default_factory=list)
    own_vs_rent: OwnVsRent | MissingPrice | None = None
    used_gpus: list[str] = field(default_factory=list)
    api: api_compare.ApiComparison | None = None    # serving: the hosted API for the same traffic
    best_unverified: Row | None = None   # the best option nothing measured, if ahead of the recommendation (or none)
    plan: plan_model.Plan | None = None  # [plan]: the plan over years on the recommended (or named) GPU
    plan_error: str = ""                 # why a [plan] could not be made
    mfu_basis: str = ""                  # training: how the recommendation's GPU-hours were sized (mfu_basis)

    @property
    def ok_rows(self) -> list[Row]:
        return [r for r in self.rows if r.ok]

    def why_chosen(self, r: Row) -> str:
        """Why the recommendation or a runner-up was chosen ("" for any other row)."""
        return self.why.get((r.gpu, r.basis), "")


# figures of a row that a report prints as numbers: each must be finite (the output guard's rule)
FINITE_FIGURES = ("days", "gpu_hours", "capacity_tps", "per_request_tps", "seconds_per_request", "rate",
                  "total_cost", "cost_per_1m")


def _check_finite(sc: Scenario, rows: list[Row]) -> None:
    for r in rows:
        for name in FINITE_FIGURES:
            value = getattr(r, name)
            if value is not None and not math.isfinite(value):
                work = "the traffic (workload.requests_per_minute or daily_users)" if sc.serving else "workload.tokens"
                raise num_error(f"{r.label}: {name} is not a finite number ({value}); {work} is too large or too "
                                f"small to compute with")


def analyse(sc: Scenario, sensitivity: bool = True) -> Result:
    rows = sort_rows(sc, options(sc))
    _check_finite(sc, rows)
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
    res.best_unverified = best_unverified(sc, rows, best)
    if res.best_unverified is not None:
        res.why[(res.best_unverified.gpu, res.best_unverified.basis)] = _why_unverified(sc, res.best_unverified, best)
    if best:
        res.why[(best.gpu, best.basis)] = _why_best(sc, best, len(ok))
        if not sc.serving:
            res.mfu_basis = mfu_basis(sc, best)
            res.why[(best.gpu, best.basis)] += f" {mfu_summary(sc, best)}"
        for r in runners:                  # each a different GPU or basis, so (gpu, basis) names it
            res.why[(r.gpu, r.basis)] = _why_runner(sc, r, best)
        if sensitivity:
            res.sensitivity = sensitivity_table(sc, best)
        res.own_vs_rent = own_vs_rent(sc, rows, best)
        res.api = api_comparison(sc, best)
    res.used_gpus = sorted({r.gpu for r in rows}, key=lambda g: catalog.gpu_names().index(g))
    if sc.plan is not None:
        try:
            name, why = plan_model.plan_gpu(sc.plan, _ranked_gpus(sc, ok))
            gpu = sc.plan.gpu_row if sc.plan.gpu_row is not None else next(r.gpu_row for r in ok if r.gpu == name)
            res.plan = plan_model.make(sc, sc.plan, gpu)
            res.plan.gpu_basis = why
        except FlopsheetError as e:          # e.g. the named GPU cannot hold the model: said on the Plan sheet
            res.plan_error = e.message
    return res


def best_unverified(sc: Scenario, rows: list[Row], best: Row | None) -> Row | None:
    """The best option left out only because nothing measured its regime (rows best first), where it is what
    insisting on evidence gives up: ahead of the recommendation on the ranking's own measure (picker.rank_key:
    cheaper, or faster with objective time); with no recommendation, the best of them. One behind the
    recommendation is not shown: its estimate wins nothing."""
    first = next((r for r in rows if r.reason and r.reason.status is Status.UNVERIFIED), None)
    if first is None or best is None:
        return first
    ahead = picker.rank_key(sc.objective, first.total_cost, first.time, first.count) < \
        picker.rank_key(sc.objective, best.total_cost, best.time, best.count)
    return first if ahead else None


def _ranked_gpus(sc: Scenario, ok: list[Row]) -> list[tuple[str, bool]]:
    """(GPU, has a cloud and a purchase price) of the options meeting the constraints, best first, once each."""
    out: dict[str, bool] = {}
    for r in ok:
        if r.gpu not in out:
            try:
                out[r.gpu] = money(sc, r.gpu_row, "cloud") is not None and money(sc, r.gpu_row, "owned") is not None
            except FlopsheetError:             # a figure owning needs is missing
                out[r.gpu] = False
    return list(out.items())


def _known(value: float | None, what: str) -> float:
    """A figure every option that meets the constraints has (the sweep fills it); a clear error,
    not a TypeError, if one ever arrives blank."""
    if value is None:
        raise num_error(f"the report needs {what}, and the option sweep left it blank")
    return value


def _unit(sc) -> str:
    return "per month" if sc.serving else "for the job"


def _why_best(sc: Scenario, r: Row, n_ok: int) -> str:
    what = "cheapest" if sc.objective == "cost" else "fastest"
    head = f"The {what} of {plural(n_ok, 'option')} that meet{'s' if n_ok == 1 else ''} every constraint"
    outlay = (f" Capex {sc.currency.text(r.capex)} up front for {r.units_text or plural(r.count, 'GPU')}."
              if r.basis == "owned"
              else f" No capex: {r.rented_hours:,.0f} GPU-hours rented{' a month' if sc.serving else ''}.")
    if sc.serving:
        return (f"{head}: {sc.currency.text(r.total_cost)} {_unit(sc)}, {sc.currency.text(r.cost_per_1m, 3)} per 1M "
                f"output tokens, "
                f"{r.per_request_tps:,.1f} tokens/s per request ({r.seconds_per_request:,.1f} s for "
                f"{sc.output_tokens_per_request:g} tokens).{outlay}")
    on = plural(r.count, 'GPU') + (f" ({r.units_text})" if r.units_text else "")
    scale = (f" The gradient all-reduce takes {1 - r.scale_efficiency:.0%} of the time at this size."
             if r.scale_efficiency is not None and r.count > 1 else "")
    return f"{head}: {sc.currency.text(r.total_cost)} {_unit(sc)} in {r.days:,.1f} days on {on}.{scale}{outlay}"


def _whole_run_hours(sc: Scenario, r: Row) -> tuple[training_efficiency.Efficiency, float] | None:
    """The table's cell of the option's scope and the GPU-hours it gives with no cluster size modelled
    (TRAINING_GPU_HOURS with n_gpus blank); None for LoRA/QLoRA (their traffic is adapter_sync's, not the
    whole-run figure)."""
    if picker.training_method(sc.kind) != "full":
        return None
    model, gpu = sc.model, r.gpu_row
    cell = training_efficiency.for_gpu(gpu, model, as_precision(sc.precision).name, picker.training_scope(sc.kind))
    tokens = picker.job_tokens(sc.kind, model, sc.tokens)
    return cell, training.training_gpu_hours(model.active, tokens, gpu, cell.mfu, sc.precision)


def mfu_basis(sc: Scenario, r: Row) -> str:
    """How a training option's GPU-hours were sized (the picker's formula, training.on_cluster) beside the
    table's cell with no cluster size (TRAINING_GPU_HOURS with n_gpus blank), so a reader can reconcile them."""
    scope = picker.training_scope(sc.kind)
    mfu = picker.training_mfu(r.gpu_row, sc.model, sc.precision, sc.kind)
    what = "steady-state MFU x TRAINING_GOODPUT" if scope == "run" else "steady-state MFU"
    text = (f"GPU-hours sized at the {what}, {mfu.mfu:.3f} ({mfu.basis}), with the exposed gradient synchronisation at "
            f"{plural(r.count, 'GPU')} leaving {_known(r.scale_efficiency, 'the scale-out efficiency'):.1%} of the time "
            f"computing: {_known(r.gpu_hours, 'the GPU-hours'):,.0f} GPU-hours, as TRAINING_GPU_HOURS(..., scope "
            f"{scope}, n_gpus {r.count}) gives" + (picker.QLORA_SPEED if sc.kind == "qlora" else "") + ".")
    whole = _whole_run_hours(sc, r)
    if whole is None:
        return text
    cell, hours = whole
    what = "no cluster size modelled"
    figure = "whole-run MFU (steady-state x TRAINING_GOODPUT)" if scope == "run" else "steady-state MFU"
    return (f"{text} With n_gpus blank TRAINING_GPU_HOURS uses the table's {figure}, {cell.mfu:.3f} MFU ({what}): "
            f"{hours:,.0f} GPU-hours, {hours / _known(r.gpu_hours, 'the GPU-hours'):.2f}x. {_why_apart(sc, r)}")


def _why_apart(sc: Scenario, r: Row) -> str:
    """Why the two figures differ: the blank figure models no cluster, and what this model loses to gradient
    synchronisation at the option's count and at the largest published cluster."""
    big = training.LARGEST_PUBLISHED_CLUSTER
    at_big = training.scale_out_efficiency(sc.model, r.gpu_row, big, sc.precision)
    return (f"The blank figure models no cluster; this model loses "
            f"{1 - _known(r.scale_efficiency, 'the scale-out efficiency'):.1%} of the time to gradient "
            f"synchronisation on {plural(r.count, 'GPU')} and {1 - at_big:.1%} on {big:,} (Llama 3's cluster), where a "
            f"small model gets few tokens a GPU a step (docs/accuracy.md, whole runs).")


def mfu_summary(sc: Scenario, r: Row) -> str:
    """mfu_basis in one sentence for the Summary sheet."""
    mfu = picker.training_mfu(r.gpu_row, sc.model, sc.precision, sc.kind).mfu
    what = "steady-state x goodput" if picker.training_scope(sc.kind) == "run" else "steady-state"
    whole = _whole_run_hours(sc, r)
    figure = "whole-run MFU" if picker.training_scope(sc.kind) == "run" else "steady-state MFU"
    versus = "" if whole is None else (f"; the table's {figure} ({whole[0].mfu:.3f}, "
                                       f"TRAINING_GPU_HOURS with "
                                       f"n_gpus blank) gives {whole[1] / _known(r.gpu_hours, 'the GPU-hours'):.2f}x "
                                       f"the GPU-hours (Assumptions)")
    return f"MFU basis: {mfu:.3f} ({what}) plus the gradient synchronisation at {plural(r.count, 'GPU')}{versus}."


def evidence_sentence(sc: Scenario, r: Row) -> str:
    """What backs an option's estimate: its regime's measured rows, error band and cost range."""
    if r.evidence is None:
        return ""
    span, per = r.cost_range, "a month" if r.capacity_tps is not None else "for the job"
    cost = "" if span is None else \
        f" Over that band its cost is {sc.currency.text(span[0])} to {sc.currency.text(span[1])} {per}"
    slow = picker.latency_sentence(r.latency_p95_s, r.evidence, sc.p95_latency_s) if sc.serving else ""
    verify = f" {sentence_case(picker.verify_note(r))}." if r.verified and not r.same_format else ""
    return f"Evidence: {r.evidence.text()}.{cost}{picker.days_sentence(r.days, r.days_range, sc.deadline_days)}" + \
        slow + ("." if cost or slow else "") + verify


def _why_unverified(sc: Scenario, r: Row, best: Row | None) -> str:
    """What insisting on evidence gives up (the best unverified option against the recommendation, on the
    ranking's measure first), why it is not the recommendation, and what would verify it."""
    cost = _known(r.total_cost, "the cost")
    versus = (f"{cost / best.total_cost:.2f}x the recommendation's cost ({sc.currency.text(cost)} {_unit(sc)})"
              if best is not None and best.total_cost else f"{sc.currency.text(cost)} {_unit(sc)}")
    if sc.objective == "time" and best is not None and r.time and best.time:
        versus = f"{r.time / best.time:.2f}x the recommendation's time, {versus}"
    why = sc.currency.usd_marked(r.reason.text()) if r.reason else ""
    return f"{versus}, but not recommended: {why}."


def _why_runner(sc: Scenario, r: Row, best: Row) -> str:
    cost = _known(r.total_cost, "the cost") / best.total_cost if best.total_cost else math.nan
    if sc.serving:
        speed = _known(r.per_request_tps, "tokens/s per request") / _known(best.per_request_tps, "tokens/s per request")
        return (f"{cost:.2f}x the recommendation's cost ({sc.currency.text(r.total_cost)} {_unit(sc)}); "
                f"{speed:.2f}x its speed per request ({r.per_request_tps:,.1f} tokens/s).")
    return (f"{cost:.2f}x the recommendation's cost ({sc.currency.text(r.total_cost)}); {r.days:,.1f} days "
            f"({_known(r.days, 'the days') / _known(best.days, 'the days'):.2f}x the time) on {plural(r.count, 'GPU')}.")


def _cost_of(sc: Scenario, row: Row, **kw) -> float | None:
    """Total cost of the same GPU, basis and count rule with changed assumptions (engine re-run)."""
    for r in options(sc, only=(row.gpu, row.basis), **kw):
        if r.auto_count == row.auto_count and (row.auto_count or r.count == row.count):
            return r.total_cost
    return None


def sensitivity_table(sc: Scenario, best: Row) -> list[Sensitivity]:
    """Each main assumption moved -SWING / +SWING, the engine re-run; the biggest swing first."""
    o = sc.ownership
    low_f, high_f = 1 - SWING, 1 + SWING
    items: list[Sensitivity] = []

    def add(name, unit, base_value, low_value, high_value, low_cost, high_cost, note=""):
        items.append(Sensitivity(name, unit, base_value, low_value, high_value, low_cost, high_cost, note,
                                 best.total_cost))

    eff_name = "Decode efficiency (share of modelled speed)" if sc.serving else "MFU (model FLOPs utilization)"
    eff_base = 1.0 if sc.serving else picker.training_mfu(best.gpu_row, sc.model, sc.precision, sc.kind).mfu
    add(eff_name, "", eff_base, eff_base * low_f, eff_base * high_f,
        _cost_of(sc, best, efficiency=low_f), _cost_of(sc, best, efficiency=high_f),
        "engine re-run on the work divided by the efficiency factor")
    util_hi = min(1.0, o.utilization * high_f)
    add("Utilization (owned GPUs)", "", o.utilization, o.utilization * low_f, util_hi,
        _cost_of(replace(sc, ownership=replace(o, utilization=o.utilization * low_f)), best),
        _cost_of(replace(sc, ownership=replace(o, utilization=util_hi)), best),
        (f"changes the tokens produced, so {sc.currency.symbol} per 1M tokens, not the monthly cash"
         if sc.serving and not sc.daily_users
         else "does not change the monthly cash" if sc.serving else "")
        + ("; capped at 100%" if util_hi < o.utilization * high_f else ""))
    add(f"GPU price ({sc.currency.symbol}/GPU-h rented, purchase price owned)", "x", 1.0, low_f, high_f,
        _cost_of(sc, best, price_scale=low_f), _cost_of(sc, best, price_scale=high_f),
        "a factor on every price: 100% = the prices this report uses (catalog, or the scenario's [prices])")
    kwh = sc.currency.convert(o.usd_per_kwh)     # shown in the report's currency; the costs stay USD here
    add(f"Electricity ({sc.currency.symbol}/kWh)", f"{sc.currency.symbol}/kWh", kwh, kwh * low_f, kwh * high_f,
        _cost_of(replace(sc, ownership=replace(o, usd_per_kwh=o.usd_per_kwh * low_f)), best),
        _cost_of(replace(sc, ownership=replace(o, usd_per_kwh=o.usd_per_kwh * high_f)), best),
        "owned GPUs only")
    add("Lifetime (years)", "years", o.lifetime_years, o.lifetime_years * low_f, o.lifetime_years * high_f,
        _cost_of(replace(sc, ownership=replace(o, lifetime_years=o.lifetime_years * low_f)), best),
        _cost_of(replace(sc, ownership=replace(o, lifetime_years=o.lifetime_years * high_f)), best),
        "owned GPUs only")
    work_name = "Traffic (output tokens/s)" if sc.serving else "Training tokens"
    work = sc.work if sc.work is not None else defaults.FINETUNE_TOKENS
    add(work_name, "tokens/s" if sc.serving else "tokens", work, work * low_f, work * high_f,
        _cost_of(sc, best, work_scale=low_f) if sc.work is not None else _cost_of(sc, best, efficiency=1 / low_f),
        _cost_of(sc, best, work_scale=high_f) if sc.work is not None else _cost_of(sc, best, efficiency=1 / high_f),
        "")
    items.sort(key=lambda it: it.swing, reverse=True)
    return items


def cloud_rows(res: Result) -> list[tuple[str, catalog.CloudPrice | None]]:
    """Each used GPU with the instance its option is rented in (picker.option_row at the option's count: the
    cloud option's, else the owned one's, which own_vs_rent rents instead), for the Assumptions sheet: the rate the
    rows use, not the GPU's cheapest row of any size. None: the catalog rents no such instance."""
    out = []
    for name in res.used_gpus:
        picked = sorted((r for r in res.rows if r.gpu == name and r.auto_count and r.count),
                        key=lambda r: r.basis != "cloud")
        if not picked:
            out.append((name, catalog.cheapest_cloud_price(name)))
            continue
        r = picked[0]
        out.append((name, picker.option_row(r.gpu_row, r.count, r.gpus_per_copy if res.scenario.serving else None)))
    return out


def own_vs_rent(sc: Scenario, rows: list[Row], best: Row) -> OwnVsRent | MissingPrice:
    """Cumulative cash by month for the recommended GPU and count, bought or rented at its cheapest
    cloud rate: owning pays the capex (systems + network) at month 0, then facility, power and opex
    each month, and gets the residual back at the end of the lifetime (financing not shown); renting
    pays the rate for 730 h a month per GPU serving, for the busy hours (730 x utilization) training.
    The same money (sweep.money) as every row; MissingPrice when the GPU lacks a price on either side."""
    g = best.gpu_row
    together = picker.instance_gpus(g, best.count, best.gpus_per_copy if sc.serving else None)
    own, rent = money(sc, g, "owned"), money(sc, g, "cloud", together=together,
                                              job_gpus=None if sc.serving else best.count)
    if own is None or rent is None:
        return MissingPrice(g.name, best.count, "cloud" if rent is None else "owned")
    o, n, bought = sc.ownership, best.count, owned_count(sc, g, best.count)
    used = HOURS_PER_MONTH * (1 if sc.serving else o.utilization)
    months = max(1, round(o.lifetime_years * 12))
    residual = bought * _known(purchase_price(sc, g), "the purchase price") * o.residual_fraction
    own_cash = [bought * (own.capex + own.running * m) - (residual if m == months else 0) for m in range(months + 1)]
    rent_cash = [n * rent.rate * used * m for m in range(months + 1)]
    return OwnVsRent(gpu=g.name, count=n, bought=bought, rent_rate=rent.rate, capex=bought * own.capex,
                     used_hours_per_month=used, running_per_month=bought * own.running,
                     months=list(range(months + 1)), own=own_cash, rent=rent_cash,
                     crossover_month=breakeven_month(sc, g, n, together=together))


# ---------------------------------------------------------------- sentences and the JSON summary
def api_comparison(sc: Scenario, best: Row) -> api_compare.ApiComparison | None:
    """The hosted API against the recommended fleet, at the scenario's average traffic."""
    tokens = sc.tokens_per_month
    if not sc.serving or not tokens or best.total_cost is None or not sc.output_tokens_per_request:
        return None
    requests = tokens / sc.output_tokens_per_request
    return api_compare.compare(sc.model, sc.prompt_tokens_per_request, sc.output_tokens_per_request, requests,
                               best.total_cost)


def api_sentence(res: Result) -> str:
    """Self-hosting against the API, per request and per month, with the break-even traffic."""
    a, sc = res.api, res.scenario
    if not sc.serving or res.best is None:
        return ""
    if a is None:
        return (f"No hosted API in the catalog lists {sc.model_label} or a model within "
                f"{api_compare.CLASS_RATIO:g}x of its size: no API comparison (add one in api_prices.csv).")
    match = "" if a.match == "same model" else f" ({a.match})"
    return (f"Hosted API: {a.provider} {a.api_model}{match} at {sc.currency.g(a.usd_per_1m_input)} / "
            f"{sc.currency.g(a.usd_per_1m_output)} per 1M input / output tokens ({a.as_of}) costs "
            f"{sc.currency.text(a.api_usd_per_request, 5)} a request, "
            f"{sc.currency.text(a.api_usd_per_month)} a month for this traffic, against "
            f"{sc.currency.text(a.self_host_usd_per_request, 5)} "
            f"and {sc.currency.text(a.self_host_usd_per_month)} self-hosted: {a.cheaper} is cheaper. "
            + _breakeven_traffic(res, a))


def _breakeven_traffic(res: Result, a: api_compare.ApiComparison) -> str:
    """Where the API bill reaches this fleet's month, and whether the fleet can carry that traffic."""
    best, sc = res.best, res.scenario
    at = f"The API bill reaches this fleet's {sc.currency.text(a.self_host_usd_per_month)} a month at " \
         f"{a.breakeven_requests_per_minute:,.1f} requests/min on average"
    if best is None or not best.capacity_tps or not sc.output_tokens_per_request:
        return at + "."
    carries = best.capacity_tps * 60 / sc.output_tokens_per_request
    if a.breakeven_requests_per_minute > carries:
        return at + f", above the {carries:,.0f} requests/min this fleet carries: the API stays cheaper."
    return at + f" (this fleet carries up to {carries:,.0f})."


def breakeven_sentence(res: Result) -> str:
    """The break-even statement, about the recommended option only (the figures of own_vs_rent)."""
    best, ovr, sc = res.best, res.own_vs_rent, res.scenario
    if best is None or ovr is None:
        return ""
    what = f"{best.count:,} x {best.gpu}"
    if isinstance(ovr, MissingPrice):
        return (f"No break-even for {what}: the catalog has no {ovr.missing} price for it"
                + (" (add one under [prices] in the scenario)." if ovr.missing == "owned" else "."))
    hours = "730 h a month each" if sc.serving else f"{ovr.used_hours_per_month:,.0f} busy hours a month each"
    life = f"{sc.ownership.lifetime_years:g}-year lifetime"
    if best.basis == "owned":
        head = (f"Buying {what} (capex {sc.currency.text(ovr.capex)}) instead of renting them at "
                f"{sc.currency.text(ovr.rent_rate, 2)}/GPU-h "
                f"for {hours}")
        tail = (f"pays back in month {ovr.crossover_month}" if ovr.crossover_month
                else f"does not pay back within the {life}")
    else:
        them = "them" if ovr.bought == best.count else f"{ovr.bought:,} (whole systems)"
        head = (f"Renting {what} at {sc.currency.text(ovr.rent_rate, 2)}/GPU-h for {hours}; buying {them} instead (capex "
                f"{sc.currency.text(ovr.capex)})")
        tail = (f"would pay back in month {ovr.crossover_month}" if ovr.crossover_month
                else f"would not pay back within the {life}")
    return f"{head} {tail}."


def count_sentence(sc: Scenario, r: Row | None) -> str:
    """How the recommended serving count follows from the figures in the report (checkable by hand)."""
    if r is None or not sc.serving or not r.gpus_per_copy or not r.capacity_tps:
        return ""
    copies = r.count // r.gpus_per_copy
    per_copy = r.capacity_tps / copies
    needed = _known(sc.traffic_tokens_per_sec, "the traffic")
    spare = r.spare_copies or 0
    for_tokens = copies_needed = max(1, math.ceil(needed / per_copy - 1e-9))
    head = (f"Why {plural(r.count, 'GPU')}: {needed:,.0f} output tokens/s to provision "
            f"({sc.requests_per_minute:,.0f} "
            f"requests/min x {sc.output_tokens_per_request:g} tokens / 60 x (1 + {sc.headroom:.0%} headroom)). One "
            f"copy of the model runs on {plural(r.gpus_per_copy, 'GPU')} at "
            f"{r.batch or 'its'} concurrent requests and makes {per_copy:,.0f} tokens/s, {r.per_request_tps:,.1f} per "
            f"request")
    if sc.p95_latency_s:
        head += f" (>= {sc.min_tokens_per_sec:,.1f} needed for {sc.output_tokens_per_request:g} tokens in " \
                f"{sc.p95_latency_s:g} s)"
    head += f". {needed:,.0f} / {per_copy:,.0f} = {needed / per_copy:,.2f}, so {plural(for_tokens, 'copy')}"
    if r.spare_copies is not None:
        serving = _serving_copies(r, for_tokens)
        if serving > for_tokens:
            head += f"; {serving} so that the p95 wait for a free slot keeps the latency target"
        head += f"; + {plural(spare, 'spare copy')} (N+{spare}) for failures and rolling updates"
        copies_needed = serving + spare
    head += f": {copies_needed} x {r.gpus_per_copy} = {plural(copies_needed * r.gpus_per_copy, 'GPU')}"
    if r.ttft_p95_ms is not None and r.latency_p95_s is not None:
        head += (f". The p95 wait for a free slot (one copy down) plus the mean at the operating point: "
                 f"{r.ttft_p95_ms / 1000:,.2f} s to the first token, {r.latency_p95_s:,.1f} s for the whole request")
    if r.purchase_unit and copies_needed * r.gpus_per_copy != r.count:
        head += (f"; {'bought as whole' if r.basis == 'owned' else 'rented as whole'} {r.purchase_unit}-GPU "
                 f"{'systems' if r.basis == 'owned' else 'instances'}: {plural(r.count, 'GPU')} ({plural(copies, 'copy')}, "
                 f"{r.capacity_tps:,.0f} tokens/s)")
    elif copies_needed != copies:
        head += f"; {plural(r.count, 'GPU')} as set in the scenario ({plural(copies, 'copy')}, {r.capacity_tps:,.0f} tokens/s)"
    return head + "."


def _serving_copies(r: Row, for_tokens: int) -> int:
    """Copies the plan serves with (spares apart): the sized count before any whole-system rounding."""
    return max(for_tokens, (r.sized_copies or for_tokens + (r.spare_copies or 0)) - (r.spare_copies or 0))


def _finite(v):
    """A JSON number: finite or null (json.dumps(allow_nan=False) then never fails on a figure)."""
    if isinstance(v, float) and not math.isfinite(v):
        return None
    return v


@dataclass(frozen=True)
class ServingFigures:
    cost_per_1m_output_tokens_usd: float | None
    capacity_output_tokens_per_sec: float | None
    gpus_per_copy: int | None
    batch: int | None
    tokens_per_sec_per_request: float | None
    seconds_per_request: float | None
    spare_copies: int | None
    ttft_p95_s: float | None
    latency_p95_s: float | None


@dataclass(frozen=True)
class TrainingFigures:
    total_cost_usd: float | None
    days: float | None
    gpu_hours: float | None
    scale_out_efficiency: float | None    # share of the time computing; the gradient all-reduce is the rest
    days_low: float | None = None         # days over its regime's P10..P90 error (as cost_low / cost_high)
    days_high: float | None = None


@dataclass(frozen=True)
class OptionSummary:
    """One option as `flopsheet report --json` prints it: the field names are the JSON keys, in order,
    then the workload's own figures (ServingFigures or TrainingFigures) in the same object."""
    gpu: str
    count: int
    basis: str
    gpus_per_system: int | None         # GPUs in one system (owned) or instance (cloud); count is a multiple
    systems: int | None                 # systems bought or instances rented
    rank: int | None
    ok: bool
    reason: str | None                  # why it fails (None: it meets every constraint)
    status: str                         # reasons.Status value, "ok" when there is no reason
    capex_usd: float | None
    monthly_cost_usd: float | None
    usd_per_gpu_hour: float | None
    price_basis: str
    breakeven_month: int | None
    rented_gpu_hours: float | None
    monthly_cost_lines_usd: dict[str, float] | None
    cost_low_usd: float | None          # the cost ranked on (a month serving, the job training) over the
    cost_high_usd: float | None         # P10..P90 error of its regime (null: no estimate, or a set count)
    evidence: str | None                # "measured", "measured in fp8, not bf16" (only other formats) or "unverified"
    evidence_rows: int | None           # measured rows in its regime
    evidence_text: str | None           # the regime, its band and the nearest measured configuration
    to_verify: str | None               # unverified: the measurement that would verify it
    figures: ServingFigures | TrainingFigures

    def to_json(self) -> dict:
        """The JSON object, flat: every figure finite or null, the monthly lines too."""
        out = {f.name: getattr(self, f.name) for f in fields(self) if f.name != "figures"} | asdict(self.figures)
        return {k: ({a: _finite(b) for a, b in v.items()} if isinstance(v, dict) else _finite(v))
                for k, v in out.items()}


@dataclass(frozen=True)
class ServingSummary:
    requests_per_minute: float | None
    output_tokens_per_request: float | None
    provisioned_output_tokens_per_sec: float | None
    output_tokens_per_month: float | None
    p95_latency_s: float | None


@dataclass(frozen=True)
class OwnershipSummary:
    utilization: float
    lifetime_years: float
    pue: float
    usd_per_kwh: float
    cost_of_capital: float
    residual_fraction: float
    opex_usd_per_gpu_year: float
    network_share: float
    usd_per_kw_month: float


@dataclass(frozen=True)
class ReportSummary:
    """The machine-readable summary `flopsheet report --json` prints (to_json): the same rows as the
    workbook. Field names are the JSON keys, in order."""
    scenario: str
    workload: str
    model: str
    precision: str
    catalog_date: str
    recommendation: OptionSummary | None
    runners_up: list[OptionSummary]
    best_unverified: OptionSummary | None   # the best option nothing has measured, with what would verify it
    breakeven: str | None
    count_explanation: str | None
    serving: ServingSummary | None
    ownership: OwnershipSummary
    tiers: list[str]
    options: list[OptionSummary]
    api_comparison: api_compare.ApiComparison | None = None
    plan: dict | None = None            # [plan]: plan_json (null without a [plan] section)
    currency: dict | None = None        # the workbook's currency and rate (currency_json)

    def to_json(self) -> dict:
        return {f.name: _json(getattr(self, f.name)) for f in fields(self)}


def _json(v):
    """Options through their to_json (figures made finite); other records as they are."""
    if isinstance(v, OptionSummary):
        return v.to_json()
    if isinstance(v, list):
        return [_json(x) for x in v]
    return asdict(v) if is_dataclass(v) and not isinstance(v, type) else v


def option_summary(sc: Scenario, r: Row) -> OptionSummary:
    figures: ServingFigures | TrainingFigures = (
        ServingFigures(cost_per_1m_output_tokens_usd=r.cost_per_1m, capacity_output_tokens_per_sec=r.capacity_tps,
                       gpus_per_copy=r.gpus_per_copy, batch=r.batch,
                       tokens_per_sec_per_request=r.per_request_tps, seconds_per_request=r.seconds_per_request,
                       spare_copies=r.spare_copies, ttft_p95_s=r.ttft_p95_ms / 1000 if r.ttft_p95_ms is not None
                       else None, latency_p95_s=r.latency_p95_s)
        if sc.serving else TrainingFigures(total_cost_usd=r.total_cost, days=r.days, gpu_hours=r.gpu_hours,
                                           scale_out_efficiency=r.scale_efficiency,
                                           days_low=r.days_range[0] if r.days_range else None,
                                           days_high=r.days_range[1] if r.days_range else None))
    span = r.cost_range
    return OptionSummary(
        gpu=r.gpu, count=r.count, basis=r.basis, gpus_per_system=r.purchase_unit, systems=r.units, rank=r.rank,
        ok=r.ok,
        reason=r.reason.text() if (r.reason and not r.reason.ok) else None,
        status=(r.reason.status.value if r.reason else "ok"),
        capex_usd=r.capex, monthly_cost_usd=r.monthly_cost, usd_per_gpu_hour=r.rate, price_basis=r.rate_note,
        breakeven_month=r.breakeven_month, rented_gpu_hours=r.rented_hours, monthly_cost_lines_usd=r.lines,
        cost_low_usd=span[0] if span else None, cost_high_usd=span[1] if span else None,
        evidence=None if r.evidence is None else r.evidence.label,
        evidence_rows=r.evidence.rows if r.evidence else None,
        evidence_text=r.evidence.text() if r.evidence else None, to_verify=r.to_verify or None,
        figures=figures)


def summary(res: Result) -> ReportSummary:
    sc = res.scenario
    o = sc.ownership
    serving = ServingSummary(
        requests_per_minute=sc.requests_per_minute, output_tokens_per_request=sc.output_tokens_per_request,
        provisioned_output_tokens_per_sec=sc.traffic_tokens_per_sec, output_tokens_per_month=sc.tokens_per_month,
        p95_latency_s=sc.p95_latency_s) if sc.serving else None
    ownership = OwnershipSummary(
        utilization=o.utilization, lifetime_years=o.lifetime_years, pue=o.pue, usd_per_kwh=o.usd_per_kwh,
        cost_of_capital=o.cost_of_capital, residual_fraction=o.residual_fraction,
        opex_usd_per_gpu_year=o.opex_per_gpu_year, network_share=o.network_share,
        usd_per_kw_month=o.usd_per_kw_month)
    return ReportSummary(
        scenario=sc.name, workload=sc.kind, model=sc.model_label, precision=sc.precision,
        catalog_date=catalog.catalog_date(),
        recommendation=option_summary(sc, res.best) if res.best else None,
        runners_up=[option_summary(sc, r) for r in res.runners_up],
        best_unverified=option_summary(sc, res.best_unverified) if res.best_unverified else None,
        breakeven=breakeven_sentence(res) or None, count_explanation=count_sentence(sc, res.best) or None,
        serving=serving, ownership=ownership, tiers=list(sc.tiers),
        options=[option_summary(sc, r) for r in res.rows], api_comparison=res.api,
        plan=plan_model.plan_json(res.plan, sc.currency) if res.plan else ({"error": res.plan_error} if res.plan_error else None),
        currency=currency_json(sc.currency))


def currency_json(cur: Currency) -> dict:
    """The --json's currency: its figures stay in USD (the keys say _usd; a script compares them across
    reports), the workbook and the sentences are in `code` at `usd_rate` per USD."""
    return {"code": cur.code, "usd_rate": cur.usd_rate, "basis": cur.basis or "USD: no conversion",
            "note": "number fields named _usd (and the plan's figures) are in USD; multiply by usd_rate for the "
                    f"workbook's {cur.code}; the text fields are in {cur.code}"}


def as_json(res: Result) -> dict:
    """The machine-readable summary `flopsheet report --json` prints: the same rows as the workbook."""
    return summary(res).to_json()
