"""A plan over years, month by month: traffic that grows, GPUs from the serving model, owned
systems bought in whole units with a lead time, cloud rent for what they do not cover, API spend,
and the money the way finance reads it (issue 24). Four strategies: own, rent, api, hybrid.

Every figure below is arithmetic on the inputs, so a workbook can rebuild any month in native
formulas. Months are m = 1 .. M (M = round(years x 12)); the row after month M, "end", holds
only the fleet's book value, credited at the end of the plan.

Traffic and GPUs (one serving model: capacity.plan_for_demand, as GPUS_FOR_TRAFFIC)
  factor[m]   = (1 + growth)^((m - 1) / 12), or ramp[m] (a typed list; past its end the last value holds)
  demand[m]   = provisioned output tokens/s x factor[m]     (requests/min / 60 x output x (1 + headroom))
  requests[m] = the report's output tokens a month (average load) / output tokens per request x factor[m]
  layout      = the copy (GPUs per copy, batch) plan_for_demand picks for the largest demand[m], kept all plan
  need[m]     = copies x GPUs per copy, copies = plan_for_demand(demand[m], that layout): ceil(demand /
                tokens/s per copy), more while the p95 wait for a free slot breaks the latency target, then
                the spare copies (constraints.spare, default N+1); 0 when factor[m] = 0. estimate low / high:
                copies + ceil(demand / the copy's throughput at its regime's high / low) - ceil(demand / the
                point throughput)

Prices in month m (declines a year; power and colocation do not decline)
  rent[m]   = usd_per_gpu_hour x (1 - cloud_decline)^((m - 1) / 12)
  price[m]  = all-in system price per GPU x (1 - hardware_decline)^((m - 1) / 12)
  per_request[m] = (API input price x prompt + output price x output) / 1e6 x (1 - api_decline)^((m - 1) / 12)

Owned fleet (own, hybrid). unit = GPUs per system; L = lead_time_months; life = round(useful_life_years x 12)
  cap       = own: none; hybrid: floor(base / unit) systems, base = the hybrid_percentile of need[1..M]
              (nearest rank: the ceil(p x M)-th smallest); rent, api: 0
  target[m] = 0 for m <= L (nothing ordered at the start has arrived), else min(cap, ceil(need[m] / unit)) systems
  bought[m] = max(0, target[m] - systems in service) systems, ordered L months before and paid on delivery:
              capex[m] = bought GPUs x price[m] x (1 + network_share)
  a cohort bought in month b serves months b .. b + life - 1, then is sold at its residual
  (residual_share x price[b] x its GPUs), in month b + life (a replacement arrives then if target needs it)
  owned[m]  = GPUs in service; running[m] = owned[m] x (facility + power x PUE + opex) per GPU-month
  depreciation[m] = sum over cohorts in service of (capex - residual) / life   (straight line)
  end row   = book value of the cohorts in service: capex - (capex - residual) x months used / life

The rest of the need (every strategy)
  short[m]  = max(0, need[m] - owned[m])
  rent      : rented[m] = short[m] rounded up to whole cloud instances; rent_usd[m] = rented x rent[m] x 730
  api       : api_share[m] = short[m] / need[m] (all of it for the api strategy);
              api_usd[m] = requests[m] x api_share[m] x per_request[m]
  hybrid sends its short to rent (hybrid_peak = "rent", the default) or to the API ("api"); own and rent rent it

Money
  cash[m]  = capex + running + rent + api - sales;   end: - book value
  P&L[m]   = depreciation + running + rent + api     (the totals of cash and P&L are equal over the plan)
  NPV      = sum cash[m] / (1 + cost_of_capital)^((m - 1) / 12), the end row at t = M / 12 (a cost: positive)
  IRR      = the annual rate zeroing the NPV of (rent's cash - the strategy's cash): owning as an investment
  cumulative[m] = cash[1] + ... + cash[m] (the end row: M + 1); a crossover is a month where one
  strategy's cumulative cash falls below (or rises above) another's.
"""

from __future__ import annotations

import math
import statistics
from dataclasses import asdict, dataclass, field
from datetime import date

from ..catalogs import catalog, resolve
from ..errors import FlopsheetError, MissingFigure, given, num_error
from ..physics import capacity, defaults, economics, evidence
from ..physics.economics import HOURS_PER_MONTH
from . import api_compare, picker
from .currency import USD, Currency

STRATEGIES = ("own", "rent", "api", "hybrid")
HYBRID_PEAKS = ("rent", "api")
ESTIMATES = ("point", "low", "high")


# ---------------------------------------------------------------- inputs
@dataclass(frozen=True)
class PlanSettings:
    """The [plan] section of a scenario (None: the scenario's own figure or the derived default)."""
    years: float = defaults.PLAN_YEARS
    growth: float = 0.0                          # traffic growth a year (0.5 = +50% a year)
    ramp: tuple[float, ...] | None = None        # traffic as multiples of the start, one a month
    lead_time_months: int = defaults.LEAD_TIME_MONTHS
    cost_of_capital: float | None = None         # None: [ownership] cost_of_capital
    useful_life_years: float = defaults.USEFUL_LIFE_YEARS
    residual_share: float | None = None          # None: [ownership] residual_fraction
    cloud_decline: float | None = None           # None: derived from the catalog's price history
    hardware_decline: float | None = None
    api_decline: float | None = None
    hybrid_percentile: float = defaults.HYBRID_PERCENTILE
    hybrid_peak: str = "rent"
    gpu: str | None = None                       # None: the report's recommended GPU
    gpu_row: catalog.Gpu | None = field(default=None, compare=False, repr=False)   # `gpu`, resolved by the scenario

    @property
    def months(self) -> int:
        return max(1, round(self.years * 12))

    def factor(self, month: int) -> float:
        """Traffic in month `month` (1-based) as a multiple of the start."""
        if self.ramp:
            return self.ramp[min(month, len(self.ramp)) - 1]
        return (1 + self.growth) ** ((month - 1) / 12)


@dataclass(frozen=True)
class Decline:
    """A price decline a year and how it was found."""
    rate: float
    basis: str


@dataclass(frozen=True)
class Prices:
    """The plan's prices at month 1, per GPU (None: the catalog has none: strategies needing it are #N/A)."""
    system_usd: float | None           # all-in purchase price per GPU
    network_share: float
    running_usd_per_month: float | None  # facility + power x PUE + opex of one owned GPU
    rent_usd_per_gpu_hour: float | None
    api_usd_per_request: float | None
    system_gpus: int | None            # GPUs per owned system
    instance_gpus: int                 # GPUs per cloud instance
    residual_share: float
    rent_note: str = ""
    api_note: str = ""


@dataclass(frozen=True)
class Finance:
    cost_of_capital: float
    life_months: int
    lead_time_months: int
    cloud: Decline
    hardware: Decline
    api: Decline
    hybrid_percentile: float
    hybrid_peak: str


@dataclass(frozen=True)
class Need:
    """The month-by-month load: traffic factor, requests (average load) and GPUs (serving model)."""
    factor: list[float]
    requests: list[float]
    gpus: list[int]
    gpus_per_copy: int = 1
    tokens_per_sec_per_copy: float = 0.0


# ---------------------------------------------------------------- outputs
@dataclass(frozen=True)
class Month:
    month: int
    need_gpus: int
    owned_gpus: int
    bought_gpus: int
    rented_gpus: int
    api_share: float
    capex: float
    sales: float
    running: float
    rent: float
    api: float
    depreciation: float
    cash: float
    cumulative: float


@dataclass(frozen=True)
class Totals:
    capex: float
    running: float
    rent: float
    api: float
    sales: float               # residuals of retired systems and the end book value
    depreciation: float
    cash: float                # = P&L over the plan
    npv: float                 # present value of the cash at the cost of capital (a cost)


@dataclass(frozen=True)
class StrategyPlan:
    strategy: str
    months: list[Month]
    end_book_value: float
    totals: Totals
    owned_cap_gpus: int | None          # hybrid: the base owned (None: no cap)
    irr_vs_rent: float | None = None    # annual IRR of (rent's cash - this cash); None: no investment that returns
    cash_series: list[float] = field(default_factory=list)   # months 1..M then the end row


@dataclass(frozen=True)
class Unavailable:
    strategy: str
    reason: str


@dataclass(frozen=True)
class Crossover:
    month: int          # 1..M, or M + 1: the end of the plan (the book value back)
    cheaper: str        # cumulative cash lower from this month
    than: str


@dataclass(frozen=True)
class Band:
    """Totals at the serving estimate's low and high GPU need (GPUS_FOR_TRAFFIC estimate)."""
    strategy: str
    cash_low: float
    cash_high: float
    npv_low: float
    npv_high: float


@dataclass
class Plan:
    gpu: str
    settings: PlanSettings
    finance: Finance
    prices: Prices
    need: Need
    strategies: dict[str, StrategyPlan | Unavailable]
    crossovers: list[Crossover]
    band: list[Band]
    gpu_basis: str = ""          # why this GPU (plan_gpu)

    def available(self) -> dict[str, StrategyPlan]:
        return {k: v for k, v in self.strategies.items() if isinstance(v, StrategyPlan)}


# ---------------------------------------------------------------- price declines from the catalog
def _months_between(a: str, b: str) -> float:
    """Months from date text a to b (YYYY-MM or YYYY-MM-DD; a month alone counts as its 15th)."""
    def parse(t: str) -> date:
        parts = [int(x) for x in t.split("-")]
        return date(parts[0], parts[1], parts[2] if len(parts) > 2 else 15)
    return (parse(b) - parse(a)).days / (365.25 / 12)


def cloud_decline() -> Decline:
    """The cloud rent decline a year from the catalog's dated history: for each on-demand instance
    (provider, instance, region) with a historical row and a current row, the annualised change from
    its oldest historical price to its current one, (current / old)^(12 / months) - 1; the decline is
    minus the median of those changes. Spot and capacity-block prices are left out (they move with
    the market both ways)."""
    rows = [r for r in catalog.cloud_prices() if r.pricing == "on-demand" and r.usd_per_gpu_hour]
    changes: list[tuple[float, str]] = []
    for cur in (r for r in rows if r.status == "current"):
        old = [r for r in rows if r.status == "historical" and (r.provider, r.instance, r.region)
               == (cur.provider, cur.instance, cur.region)]
        if not old:
            continue
        first = min(old, key=lambda r: r.price_date)
        months = _months_between(first.price_date, cur.price_date)
        if months < 1:
            continue
        now, then = given(cur.usd_per_gpu_hour, "a price"), given(first.usd_per_gpu_hour, "a price")
        change = (now / then) ** (12 / months) - 1
        changes.append((change, f"{cur.provider} {cur.instance} {then:g} USD ({first.price_date}) -> "
                                f"{now:g} USD ({cur.price_date}): {change:+.1%}/yr"))
    if not changes:
        return Decline(0.0, "no dated on-demand price history in cloud.csv: none assumed")
    rate = -statistics.median(c for c, _ in changes)
    return Decline(rate, f"minus the median annualised change of {len(changes)} on-demand instances' price "
                         f"history in cloud.csv (oldest historical row to the current row): "
                         + "; ".join(t for _, t in sorted(changes)))


HARDWARE_DECLINE_BASIS = ("none assumed: the catalog keeps one dated purchase price per GPU, so no decline can be "
                          "derived from it (set plan.hardware_decline)")
API_DECLINE_BASIS = ("none assumed: api_prices.csv holds one dated price per provider and model, so no decline can "
                     "be derived from it (set plan.api_decline)")


def declines(s: PlanSettings) -> tuple[Decline, Decline, Decline]:
    cloud = Decline(s.cloud_decline, "scenario") if s.cloud_decline is not None else cloud_decline()
    hardware = Decline(s.hardware_decline, "scenario") if s.hardware_decline is not None \
        else Decline(0.0, HARDWARE_DECLINE_BASIS)
    api = Decline(s.api_decline, "scenario") if s.api_decline is not None else Decline(0.0, API_DECLINE_BASIS)
    return cloud, hardware, api


# ---------------------------------------------------------------- the load, from the serving model
def need(sc, gpu: catalog.Gpu, s: PlanSettings, estimate: str = "point") -> Need:
    """Traffic, requests and GPUs each month for a serving scenario on `gpu` (see the module doc)."""
    if not sc.serving:
        raise num_error("a plan needs a serving scenario (workload.kind = \"serve\")")
    factors = [s.factor(m) for m in range(1, s.months + 1)]
    demand0 = given(sc.traffic_tokens_per_sec, "the traffic")
    requests0 = given(sc.tokens_per_month, "the tokens a month") / given(sc.output_tokens_per_request,
                                                                            "the output tokens per request")
    eng = resolve.engine(sc.engine, gpu)
    max_tpot = 1000 / sc.min_tokens_per_sec if sc.min_tokens_per_sec else None
    out = sc.output_tokens_per_request

    def sized(demand: float, n: int | None) -> capacity.TrafficPlan:
        return capacity.plan_for_demand(sc.model, gpu, demand, sc.prompt_tokens_per_request, out, max_tpot, None,
                                        sc.precision, n, eng, sc.batch, spare=sc.spare, max_latency_s=sc.p95_latency_s)

    layout = sized(demand0 * max(factors), None)
    n, per_copy = layout.n_gpus, layout.point.tokens_per_sec
    picked = per_copy
    if estimate != "point":            # fewer GPUs where the copy is faster: low GPUs = high throughput
        ev = evidence.for_option("throughput", sc.model, gpu, sc.precision, n, eng)
        picked = ev.pick(per_copy, "high" if estimate == "low" else "low")
    cache: dict[float, int] = {}
    gpus = []
    for f in factors:
        d = demand0 * f
        if d <= 0:
            gpus.append(0)
            continue
        if d not in cache:
            copies = sized(d, n).copies
            copies += capacity.copies_for(d, picked) - capacity.copies_for(d, per_copy)
            cache[d] = copies * n
        gpus.append(cache[d])
    return Need(factors, [requests0 * f for f in factors], gpus, n, per_copy)


# ---------------------------------------------------------------- one strategy, month by month
@dataclass
class _Cohort:
    month: int
    gpus: int
    capex: float
    residual: float


def percentile_nearest_rank(values: list[int], p: float) -> int:
    """The ceil(p x n)-th smallest value (at least the first)."""
    ordered = sorted(values)
    return ordered[max(1, math.ceil(p * len(ordered) - 1e-9)) - 1]


def simulate(strategy: str, need_: Need, prices: Prices, fin: Finance) -> StrategyPlan:
    """One strategy over the plan (the module doc's formulas)."""
    months = len(need_.gpus)
    own = strategy in ("own", "hybrid")
    unit = prices.system_gpus or 1
    cap: int | None = None
    if strategy == "hybrid":
        cap = percentile_nearest_rank(need_.gpus, fin.hybrid_percentile) // unit
    elif not own:
        cap = 0
    to_api = strategy == "api" or (strategy == "hybrid" and fin.hybrid_peak == "api")
    cohorts: list[_Cohort] = []
    rows: list[Month] = []
    cash_series: list[float] = []
    cumulative = 0.0
    for m in range(1, months + 1):
        t = (m - 1) / 12
        sales = sum(c.residual for c in cohorts if c.month + fin.life_months == m)
        cohorts = [c for c in cohorts if c.month + fin.life_months > m]
        systems = sum(c.gpus for c in cohorts) // unit
        target = 0 if (m <= fin.lead_time_months or not own) else math.ceil(need_.gpus[m - 1] / unit)
        if cap is not None:
            target = min(target, cap)
        bought = max(0, target - systems) * unit
        capex = 0.0
        if bought:
            price = given(prices.system_usd, "the purchase price") * (1 - fin.hardware.rate) ** t
            capex = bought * price * (1 + prices.network_share)
            cohorts.append(_Cohort(m, bought, capex, bought * price * prices.residual_share))
        owned = sum(c.gpus for c in cohorts)
        running = owned * (prices.running_usd_per_month or 0.0)
        short = max(0, need_.gpus[m - 1] - owned)
        rented, rent, api_share, api = 0, 0.0, 0.0, 0.0
        if short and to_api:
            api_share = short / need_.gpus[m - 1]
            api = need_.requests[m - 1] * api_share * given(prices.api_usd_per_request, "the API price") \
                * (1 - fin.api.rate) ** t
        elif short:
            rented = picker.whole(short, prices.instance_gpus)
            rent = rented * given(prices.rent_usd_per_gpu_hour, "the cloud rate") * (1 - fin.cloud.rate) ** t \
                * HOURS_PER_MONTH
        depreciation = sum((c.capex - c.residual) / fin.life_months for c in cohorts)
        cash = capex + running + rent + api - sales
        cumulative += cash
        cash_series.append(cash)
        rows.append(Month(m, need_.gpus[m - 1], owned, bought, rented, api_share, capex, sales, running, rent, api,
                          depreciation, cash, cumulative))
    book = sum(c.capex - (c.capex - c.residual) * (months + 1 - c.month) / fin.life_months for c in cohorts)
    cash_series.append(-book)
    totals = Totals(capex=sum(r.capex for r in rows), running=sum(r.running for r in rows),
                    rent=sum(r.rent for r in rows), api=sum(r.api for r in rows),
                    sales=sum(r.sales for r in rows) + book, depreciation=sum(r.depreciation for r in rows),
                    cash=cumulative - book, npv=economics.npv(cash_series, fin.cost_of_capital))
    return StrategyPlan(strategy, rows, book, totals, None if cap is None else cap * unit, None, cash_series)


def _with_irr(p: StrategyPlan, rent: StrategyPlan | Unavailable | None) -> StrategyPlan:
    if not isinstance(rent, StrategyPlan) or p.strategy in ("rent", "api"):
        return p
    diff = [a - b for a, b in zip(rent.cash_series, p.cash_series)]
    return StrategyPlan(p.strategy, p.months, p.end_book_value, p.totals, p.owned_cap_gpus, economics.irr(diff),
                        p.cash_series)


def crossovers(plans: dict[str, StrategyPlan]) -> list[Crossover]:
    """Each month where, for a pair of strategies, the one with less cumulative cash changes."""
    out = []
    names = [s for s in STRATEGIES if s in plans]
    for i, a in enumerate(names):
        for b in names[i + 1:]:
            prev = 0
            for month, ca, cb in zip(range(1, 10**6), _cumulative(plans[a]), _cumulative(plans[b])):
                d = ca - cb
                sign = (d > 1e-6) - (d < -1e-6)
                if sign and prev and sign != prev:
                    out.append(Crossover(month, a if sign < 0 else b, b if sign < 0 else a))
                prev = sign or prev
    return sorted(out, key=lambda c: (c.month, c.cheaper, c.than))


def _cumulative(p: StrategyPlan) -> list[float]:
    """Cumulative cash after each month, then after the end row (month M + 1: the book value back)."""
    return [r.cumulative for r in p.months] + [p.totals.cash]


def _needed(prices: Prices, strategy: str, fin: Finance) -> str | None:
    """Why a strategy cannot be costed (the price it lacks), or None."""
    rents = strategy == "rent" or (strategy == "own" and fin.lead_time_months > 0) or \
        (strategy == "hybrid" and fin.hybrid_peak == "rent")
    if strategy in ("own", "hybrid") and (prices.system_usd is None or prices.running_usd_per_month is None
                                          or prices.system_gpus is None):
        return "the GPU's purchase price (or its power or system size) is not in the catalog: give " \
               "prices.<gpu>.purchase_usd"
    if rents and prices.rent_usd_per_gpu_hour is None:
        return "the catalog has no cloud price for the GPU: give prices.<gpu>.usd_per_gpu_hour" + \
            (" (owning rents until the first systems arrive)" if strategy == "own" else "")
    if (strategy == "api" or (strategy == "hybrid" and fin.hybrid_peak == "api")) and prices.api_usd_per_request is None:
        return f"no hosted API in the catalog lists the model or one within {api_compare.CLASS_RATIO:g}x of its size"
    return None


def run(need_: Need, prices: Prices, fin: Finance) -> dict[str, StrategyPlan | Unavailable]:
    plans: dict[str, StrategyPlan | Unavailable] = {}
    for s in STRATEGIES:
        why = _needed(prices, s, fin)
        plans[s] = Unavailable(s, why) if why else simulate(s, need_, prices, fin)
    rent = plans.get("rent")
    return {k: (_with_irr(v, rent) if isinstance(v, StrategyPlan) else v) for k, v in plans.items()}


# ---------------------------------------------------------------- a scenario's plan
def prices_for(sc, gpu: catalog.Gpu, residual_share: float, gpus_per_copy: int = 1) -> Prices:
    """Month-1 prices of the plan on one GPU; rented, the instance that holds one copy's `gpus_per_copy` GPUs up to a
    server (picker.option_row, as every route rents it), not the GPU's cheapest row of any size."""
    from .sweep import purchase_price, scenario_rate     # sweep imports the scenario; no cycle at import time
    o = sc.ownership
    system = purchase_price(sc, gpu)
    running = None
    if system is not None and gpu.tdp_w:
        running = o.running_per_month(system, gpu.tdp_w)
    together = picker.instance_gpus(gpu, gpus_per_copy, gpus_per_copy)
    rate = scenario_rate(sc, gpu, "cloud", together=together)
    try:
        unit: int | None = picker.sold_unit(gpu, "owned")
    except MissingFigure:
        unit = None
    offer = api_compare.offer_for(sc.model, sc.prompt_tokens_per_request, given(sc.output_tokens_per_request,
                                                                              "the output tokens per request"))
    per_request = offer.price.per_request(sc.prompt_tokens_per_request, sc.output_tokens_per_request) if offer else None
    api_note = (f"{offer.price.provider} {offer.price.model} ({offer.match}) "
                f"{sc.currency.g(offer.price.usd_per_1m_input)} / "
                f"{sc.currency.g(offer.price.usd_per_1m_output)} per 1M input / output tokens "
                f"({offer.price.as_of})") if offer else ""
    return Prices(system, o.network_share, running, rate[0] if rate else None, per_request, unit,
                  picker.sold_unit(gpu, "cloud", together), residual_share, rate[1] if rate else "", api_note)


def finance_for(sc, s: PlanSettings) -> Finance:
    cloud, hardware, api = declines(s)
    rate = s.cost_of_capital if s.cost_of_capital is not None else sc.ownership.cost_of_capital
    return Finance(rate, max(1, round(s.useful_life_years * 12)), int(s.lead_time_months), cloud, hardware, api,
                   s.hybrid_percentile, s.hybrid_peak)


def make(sc, s: PlanSettings, gpu: catalog.Gpu, band: bool = True) -> Plan:
    """The plan of a serving scenario on one GPU (a resolved row): the four strategies, crossovers and
    the band."""
    residual = s.residual_share if s.residual_share is not None else sc.ownership.residual_fraction
    point = need(sc, gpu, s)
    prices, fin = prices_for(sc, gpu, residual, point.gpus_per_copy), finance_for(sc, s)
    strategies = run(point, prices, fin)
    plans = {k: v for k, v in strategies.items() if isinstance(v, StrategyPlan)}
    bands: list[Band] = []
    if band:
        low, high = (run(need(sc, gpu, s, e), prices, fin) for e in ("low", "high"))
        for k in plans:
            lo, hi = low[k], high[k]
            if isinstance(lo, StrategyPlan) and isinstance(hi, StrategyPlan):
                # whole systems and whole rented instances (8 GPUs where a copy needs a server's link) make the
                # cash step, not slide, with the need: the band spans the three runs, the point among them
                runs = (lo.totals, plans[k].totals, hi.totals)
                bands.append(Band(k, min(t.cash for t in runs), max(t.cash for t in runs),
                                  min(t.npv for t in runs), max(t.npv for t in runs)))
    return Plan(gpu.name, s, fin, prices, point, strategies, crossovers(plans), bands)


def plan_gpu(s: PlanSettings, ranked: list[tuple[str, bool]]) -> tuple[str, str]:
    """The GPU the plan runs on and why: the [plan] section's; else the best-ranked option's GPU that
    has both a cloud and a purchase price (every strategy can then be costed), the recommendation
    first; else the recommendation's. `ranked`: (GPU, has both prices) of the options that meet the
    constraints, best first."""
    if s.gpu:
        return s.gpu, "plan.gpu"
    if not ranked:
        raise FlopsheetError("no plan: no option meets the constraints, so there is no GPU to plan on "
                             "(set plan.gpu)", "#N/A")
    priced = next((g for g, both in ranked if both), None)
    if priced is None or priced == ranked[0][0]:
        return ranked[0][0], "the report's recommendation"
    return priced, (f"the best-ranked option with a cloud and a purchase price (the recommendation, {ranked[0][0]}, "
                    f"lacks one)")


def years_text(years: float) -> str:
    return f"{years:g} year{'' if years == 1 else 's'}"


def conclusion(p: Plan, cur: Currency = USD) -> str:
    """One sentence for the reader: the strategies by NPV (in the report's currency), and when owning pays
    back against renting."""
    plans = sorted(p.available().items(), key=lambda kv: kv[1].totals.npv)
    if not plans:
        return "No strategy can be costed: " + "; ".join(f"{k}: {v.reason}" for k, v in p.strategies.items()
                                                         if isinstance(v, Unavailable))
    (first, best), rest = plans[0], plans[1:]
    text = (f"Cheapest by NPV over {years_text(p.settings.years)} at {p.finance.cost_of_capital:.0%}: {first} "
            f"({cur.text(best.totals.npv)})" + ("; then " + ", ".join(f"{k} {cur.text(v.totals.npv)}" for k, v in rest)
                                            if rest else "") + ".")
    own = p.strategies.get("own")
    cross = next((c for c in p.crossovers if c.cheaper == "own" and c.than == "rent"), None)
    if isinstance(own, StrategyPlan) and isinstance(p.strategies.get("rent"), StrategyPlan):
        when = ("by the end of the plan, counting the fleet's book value" if cross and cross.month > p.settings.months
                else f"in month {cross.month}" if cross else "not within the plan")
        irr = ("" if own.irr_vs_rent is None else f" (IRR {own.irr_vs_rent:.1%} a year)" if own.irr_vs_rent <= 10
               else " (IRR over 1,000% a year: the purchase pays back within months)")
        text += f" Owning's cumulative cash falls below renting's {when}{irr}."
    unavailable = [k for k, v in p.strategies.items() if isinstance(v, Unavailable)]
    if unavailable:
        text += f" Not costed: {', '.join(unavailable)}."
    return text


# ---------------------------------------------------------------- the JSON (`flopsheet report --json`, key "plan")
def _finite(v):
    return None if isinstance(v, float) and not math.isfinite(v) else v


def plan_json(p: Plan, cur: Currency = USD) -> dict:
    """The plan as `--json` prints it: settings, prices, the load, each strategy's months and
    totals (or why it is unavailable), crossovers and the band. Field names as in this module."""
    s, f, pr = p.settings, p.finance, p.prices
    strategies: dict[str, dict] = {}
    for name, sp in p.strategies.items():
        if isinstance(sp, Unavailable):
            strategies[name] = {"available": False, "reason": sp.reason}
            continue
        strategies[name] = {"available": True, "owned_cap_gpus": sp.owned_cap_gpus, "irr_vs_rent": sp.irr_vs_rent,
                            "end_book_value_usd": sp.end_book_value,
                            "totals_usd": {k: _finite(v) for k, v in asdict(sp.totals).items()},
                            "months": [{k: _finite(v) for k, v in asdict(m).items()} for m in sp.months]}
    return {
        "conclusion": conclusion(p, cur), "gpu": p.gpu, "gpu_basis": p.gpu_basis, "years": s.years, "months": s.months,
        "growth": None if s.ramp else s.growth,
        "ramp": list(s.ramp) if s.ramp else None, "lead_time_months": f.lead_time_months,
        "useful_life_years": s.useful_life_years, "residual_share": pr.residual_share,
        "cost_of_capital": f.cost_of_capital,
        "declines": {k: {"rate": d.rate, "basis": d.basis} for k, d in
                     (("cloud", f.cloud), ("hardware", f.hardware), ("api", f.api))},
        "hybrid": {"percentile": f.hybrid_percentile, "peak": f.hybrid_peak},
        "serving": {"gpus_per_copy": p.need.gpus_per_copy, "tokens_per_sec_per_copy": p.need.tokens_per_sec_per_copy},
        "prices": {"system_usd_per_gpu": pr.system_usd, "network_share": pr.network_share,
                   "running_usd_per_gpu_month": pr.running_usd_per_month,
                   "rent_usd_per_gpu_hour": pr.rent_usd_per_gpu_hour, "rent_note": pr.rent_note,
                   "api_usd_per_request": pr.api_usd_per_request, "api_note": pr.api_note,
                   "system_gpus": pr.system_gpus, "instance_gpus": pr.instance_gpus},
        "need": {"traffic_factor": p.need.factor, "requests": p.need.requests, "gpus": p.need.gpus},
        "strategies": strategies,
        "crossovers": [asdict(c) for c in p.crossovers],
        "band": {b.strategy: {"cash_low_usd": b.cash_low, "cash_high_usd": b.cash_high, "npv_low_usd": b.npv_low,
                              "npv_high_usd": b.npv_high} for b in p.band},
    }
