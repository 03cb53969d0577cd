"""Ownership economics, cloud-vs-own and API-vs-self-host break-evens, and the serving cost per
token (output, input, blended: defined once in udfs/physics/economics.py, at SERVING_THROUGHPUT's point)."""

from dataclasses import replace

from ...physics import capacity, economics, evidence
from .. import coerce
from ...errors import FlopsheetError, value_error
from ..registry import REQUIRED, Arg, worksheet
from .common import (BATCH, ESTIMATE, CLOUD_USD_PER_GPU_HOUR, HARDWARE_COST_USD, LIFETIME_YEARS, POWER_W, USD_PER_GPU_HOUR,
                     USD_PER_KWH, UTILIZATION, positive)
from .serving import SERVING_ARGS

PUE = Arg("pue", "number", "Facility power usage effectiveness (1 = no overhead; data centres average ~1.5)", "x",
          default=1.0, min=1)
UTIL_DEFAULT = replace(UTILIZATION, default=0.7)
RATE = Arg("cost_of_capital", "number", "Annual cost of capital (discount rate; 0 = straight-line)", "fraction/year",
           default=0.0, min=0, max=1)
RESIDUAL = Arg("residual_value_usd", "number", "Resale value at the end of the period", "$", default=0.0, min=0)
OPEX = Arg("opex_usd_per_year", "number", "Other running cost per GPU per year (hosting, support)", "$/year",
           default=0.0, min=0)
YEARS = positive("years", "Period", "years")

OWNED_ARGS = [HARDWARE_COST_USD, LIFETIME_YEARS, POWER_W, PUE, USD_PER_KWH, UTIL_DEFAULT, RATE, RESIDUAL, OPEX]


@worksheet("OWNED_COST_PER_GPU_HOUR", "Cost of an owned GPU per used GPU-hour: capital recovered with the capital "
           "recovery factor (residual value netted), power x PUE x price for every hour, and opex, over 8,760 x "
           "utilization used hours a year.", "$/GPU-hour", "Economics", OWNED_ARGS,
           examples=[((12000,), 0.72089), ((12000, 3, 400, 1.3, 0.12, 0.7, 0.08, 2000, 500), 0.82958)],
           formula='(({hardware_cost_usd}-{residual_value_usd}/(1+{cost_of_capital})^{lifetime_years})*IF({cost_of_capital}=0,1/{lifetime_years},{cost_of_capital}*(1+{cost_of_capital})^{lifetime_years}/((1+{cost_of_capital})^{lifetime_years}-1))+({power_w}/1000*8760*{pue}*{usd_per_kwh}+{opex_usd_per_year}))/(8760*{utilization})',
           kind="money")
def owned_cost_per_gpu_hour(hardware_cost_usd, lifetime_years, power_w, pue, usd_per_kwh, utilization,
                            cost_of_capital, residual_value_usd, opex_usd_per_year):
    return economics.owned_cost_per_gpu_hour(hardware_cost_usd, lifetime_years, power_w, pue, usd_per_kwh, utilization,
                                             cost_of_capital, residual_value_usd, opex_usd_per_year)


# --- owning like a data centre (the model the picker and the report use) ----------------------
SYSTEM_PRICE = replace(HARDWARE_COST_USD, help="All-in price per GPU: its share of a complete server, e.g. "
                       "GPU_SPEC(gpu, \"system_price_usd\")")
SYSTEM_POWER = positive("power_w", "Power of the server per GPU (no default: a server draws more than its GPUs' "
                        f"TDP; NVIDIA DGX H100: 10.2 kW for 8 x 700 W GPUs = TDP x {economics.SYSTEM_POWER_FACTOR:.2f})",
                        "W")
NETWORK = Arg("network_share", "number", "Scale-out network (switches, optics, cables) as a share of the system "
              "price (default 10%: InfiniBand fabric ~$4.2k per GPU at 1-2k GPUs against a $39.6k H100 server, 'H100 "
              "Freakonomics' 2024; Bernstein puts networking at 13% of AI data-centre capex; 0 for one server)",
              "fraction", default=economics.NETWORK_SHARE, min=0, max=1)
COLOCATION = Arg("usd_per_kw_month", "number", "Colocation rent per kW of the server's power (default $184.06: CBRE "
                 "North America asking rate, 250-500 kW, H2 2024); 0 where you own the building", "$/kW-month",
                 default=economics.USD_PER_KW_MONTH, min=0)
DC_ARGS = [
    LIFETIME_YEARS,
    replace(RATE, default=economics.DC_COST_OF_CAPITAL,
            help="Annual cost of capital the purchase is recovered at (default 8%: an assumed corporate rate, unlike "
                 "the lesson's straight-line 0; set your own)"),
    RESIDUAL,
    NETWORK, COLOCATION,
    replace(PUE, default=economics.DC_PUE,
            help="Facility power usage effectiveness (default 1.58, unlike the lesson's 1: the Uptime Institute "
                 "survey average; ~1.3 new colocation, 1.1-1.2 hyperscale)"),
    USD_PER_KWH, OPEX]


def _dc_kwargs(kw) -> dict:
    return {k: kw[k] for k in ("lifetime_years", "cost_of_capital", "residual_value_usd", "network_share",
                               "usd_per_kw_month", "pue", "usd_per_kwh", "opex_usd_per_year")}


@worksheet("DATACENTER_COST_PER_GPU_MONTH", "Cash cost of one owned GPU a month in a data centre, the same whatever "
           "its utilization: capital recovery of the all-in system price (cost of capital, residual value) + the "
           "scale-out network's share + colocation rent for the server's kW + power x PUE x $/kWh + opex. "
           "part = total or one line.", "$/GPU-month", "Economics",
           [SYSTEM_PRICE, SYSTEM_POWER] + DC_ARGS +
           [Arg("part", "choice", "Which line to return", choices=("total",) + economics.DC_PARTS, default="total")],
           examples=[((39625, 1275), 1820.6), ((39625, 1275, 3, 0, 0, 0, 0, 1, 0.12), 1212.38)], kind="money")
def datacenter_cost_per_gpu_month(hardware_cost_usd, power_w, part, **kw):
    return economics.datacenter_month(hardware_cost_usd, power_w, **_dc_kwargs(kw))[part]


@worksheet("DATACENTER_COST_PER_GPU_HOUR", "Cost of an owned data-centre GPU per used GPU-hour: "
           "DATACENTER_COST_PER_GPU_MONTH / (730 h x utilization). The monthly cash does not change with "
           "utilization; the cost per used hour (and per token) does.", "$/GPU-hour", "Economics",
           [SYSTEM_PRICE, SYSTEM_POWER, UTIL_DEFAULT] + DC_ARGS,
           examples=[((39625, 1275), 3.5628)],
           formula='(({hardware_cost_usd}*(1+{network_share})-{residual_value_usd}/(1+{cost_of_capital})^{lifetime_years})*IF({cost_of_capital}=0,1/{lifetime_years},{cost_of_capital}*(1+{cost_of_capital})^{lifetime_years}/((1+{cost_of_capital})^{lifetime_years}-1))/12+{usd_per_kw_month}*{power_w}/1000+{power_w}/1000*730*{pue}*{usd_per_kwh}+{opex_usd_per_year}/12)/(730*{utilization})',
           kind="money")
def datacenter_cost_per_gpu_hour(hardware_cost_usd, power_w, utilization, **kw):
    return economics.datacenter_cost_per_gpu_hour(hardware_cost_usd, power_w, utilization, **_dc_kwargs(kw))


@worksheet("BREAKEVEN_UTILIZATION", "Utilization above which owning a GPU is cheaper than renting the hours used "
           "(a value above 1 means renting is cheaper even at 100%).", "fraction", "Economics",
           [HARDWARE_COST_USD, CLOUD_USD_PER_GPU_HOUR, LIFETIME_YEARS, POWER_W, PUE, USD_PER_KWH, RATE, RESIDUAL, OPEX],
           examples=[((12000, 5.12), 0.098559), ((30000, 2.0), 0.59478)],
           formula='(({hardware_cost_usd}-{residual_value_usd}/(1+{cost_of_capital})^{lifetime_years})*IF({cost_of_capital}=0,1/{lifetime_years},{cost_of_capital}*(1+{cost_of_capital})^{lifetime_years}/((1+{cost_of_capital})^{lifetime_years}-1))+({power_w}/1000*8760*{pue}*{usd_per_kwh}+{opex_usd_per_year}))/({cloud_usd_per_gpu_hour}*8760)',
           kind="fraction")
def breakeven_utilization(hardware_cost_usd, cloud_usd_per_gpu_hour, lifetime_years, power_w, pue, usd_per_kwh,
                          cost_of_capital, residual_value_usd, opex_usd_per_year):
    return economics.breakeven_utilization(hardware_cost_usd, cloud_usd_per_gpu_hour, lifetime_years, power_w, pue,
                                           usd_per_kwh, cost_of_capital, residual_value_usd, opex_usd_per_year)


@worksheet("BREAKEVEN_MONTHS", "Simple payback: months until the rent saved by owning covers the purchase.",
           "months", "Economics", [HARDWARE_COST_USD, CLOUD_USD_PER_GPU_HOUR, UTILIZATION, POWER_W, PUE, USD_PER_KWH, OPEX],
           examples=[((12000, 5.12, 0.7), 4.6489)],
           formula='{hardware_cost_usd}/({cloud_usd_per_gpu_hour}*730*{utilization}-({power_w}/1000*8760*{pue}*{usd_per_kwh}+{opex_usd_per_year})/12)',
           kind="time")
def breakeven_months(hardware_cost_usd, cloud_usd_per_gpu_hour, utilization, power_w, pue, usd_per_kwh, opex_usd_per_year):
    return economics.breakeven_months(hardware_cost_usd, cloud_usd_per_gpu_hour, utilization, power_w, pue,
                                      usd_per_kwh, opex_usd_per_year)


@worksheet("TCO", "Total cost of owning one GPU for a period: capital charge + power + opex.", "$", "Economics",
           [HARDWARE_COST_USD, YEARS, POWER_W, PUE, USD_PER_KWH, RATE, RESIDUAL, OPEX],
           examples=[((12000, 3), 13261.44)],
           formula='{years}*(({hardware_cost_usd}-{residual_value_usd}/(1+{cost_of_capital})^{years})*IF({cost_of_capital}=0,1/{years},{cost_of_capital}*(1+{cost_of_capital})^{years}/((1+{cost_of_capital})^{years}-1))+({power_w}/1000*8760*{pue}*{usd_per_kwh}+{opex_usd_per_year}))',
           kind="money")
def tco(hardware_cost_usd, years, power_w, pue, usd_per_kwh, cost_of_capital, residual_value_usd, opex_usd_per_year):
    return economics.tco(hardware_cost_usd, years, power_w, pue, usd_per_kwh, cost_of_capital, residual_value_usd,
                         opex_usd_per_year)


@worksheet("CLOUD_COST", "Cost of renting the GPU-hours used over a period: rate x 8,760 x years x utilization.",
           "$", "Economics", [replace(USD_PER_GPU_HOUR, help="Cloud price per GPU-hour"), YEARS, UTILIZATION],
           examples=[((5.12, 3, 0.7), 94187.52)],
           formula='{usd_per_gpu_hour}*8760*{years}*{utilization}', kind="money")
def cloud_cost(usd_per_gpu_hour, years, utilization):
    return economics.cloud_cost(usd_per_gpu_hour, years, utilization)


# --- serving cost per token: the definitions in udfs/physics/economics.py, at SERVING_THROUGHPUT's point ---
GPU_HOUR_PRICE = replace(USD_PER_GPU_HOUR, help="Price of one GPU-hour, owned (OWNED_COST_PER_GPU_HOUR, "
                         "DATACENTER_COST_PER_GPU_HOUR) or cloud")
BATCH_AUTO = replace(BATCH, default="", help="Sequences each copy serves at once; blank: SERVING_THROUGHPUT's "
                     "operating point (the largest batch that fits and meets max_tpot_ms)")
TOKEN_COST_ARGS = [GPU_HOUR_PRICE] + SERVING_ARGS + [BATCH_AUTO]
AT_POINT = ("at SERVING_THROUGHPUT's operating point for the same inputs (or at the batch given), which pays "
            "for the prompts' prefill in the same GPU-seconds")
TOKEN_EXAMPLE = (3.2, "Llama 3.1 70B", "H100", "fp8", 1000, 200)


def _point(model, gpu, precision, prompt_tokens, output_tokens, n_gpus, max_tpot_ms, engine, kv_precision, batch):
    def at(n: int):
        return capacity.serving_point(model, gpu, precision, prompt_tokens, output_tokens, n, max_tpot_ms or None,
                                      engine or None, kv_precision or None, None, int(batch) if batch else None)
    try:
        return at(n_gpus)
    except capacity.NoFit as no:
        raise capacity.NoFit(f"{no.message}; {_fewest_that_fit(at, n_gpus)}", no.need_gib, no.usable_gib) from None


def _fewest_that_fit(at, n_gpus: int) -> str:
    """The smallest n_gpus above the one given that holds the copy at the same inputs (the group sizes
    GPUS_FOR_TRAFFIC tries: capacity.TP_CHOICES, then copies over servers), as a hint for the #NUM!."""
    for n in capacity.TP_CHOICES + capacity.SPAN_CHOICES:
        if n <= n_gpus:
            continue
        try:
            at(n)
        except capacity.NoFit:
            continue
        except capacity.TooSlow:           # it fits; only the latency target fails there
            pass
        except FlopsheetError:             # it fits, but a figure for its speed is missing: still the answer
            pass
        return f"the smallest n_gpus that holds it is {n}"
    return f"it fits no copy of up to {capacity.SPAN_CHOICES[-1]} GPUs"


@worksheet("COST_PER_1M_OUTPUT_TOKENS", "Cost per million output tokens, all-in: usd_per_gpu_hour x n_gpus / "
           f"(output tokens/s x 3,600) x 1e6, {AT_POINT}; equals that over SERVING_THROUGHPUT. A request costs this "
           "x its output tokens. At full use: a month's cost per token served adds the idle hours (see "
           "docs/cost-model.md, Cost per token). estimate = low / high: the cost at the P10 / P90 of the regime's "
           "measured throughput error (the cost is low where the throughput is high; ESTIMATE_EVIDENCE).",
           "$ per 1M output tokens", "Economics", TOKEN_COST_ARGS + [ESTIMATE],
           examples=[(TOKEN_EXAMPLE, 1.1865)], kind="money")
def cost_per_1m_output_tokens(usd_per_gpu_hour, model, gpu, precision, prompt_tokens, output_tokens, n_gpus,
                              max_tpot_ms, engine, kv_precision, batch, estimate):
    point = _point(model, gpu, precision, prompt_tokens, output_tokens, n_gpus, max_tpot_ms, engine, kv_precision,
                   batch)
    cost = economics.cost_per_1m_output_tokens(usd_per_gpu_hour, n_gpus, point.tokens_per_sec)
    if estimate == "point":
        return cost
    return evidence.for_option("throughput", model, gpu, precision, n_gpus, engine).pick(cost, estimate, inverse=True)


@worksheet("COST_PER_1M_INPUT_TOKENS", "Cost per million input (prompt) tokens: the prefill's share of a request's "
           f"cost / its prompt tokens, {AT_POINT}. Part of COST_PER_1M_OUTPUT_TOKENS (which charges the whole "
           "request to its output tokens), not an extra charge: what a longer prompt adds.",
           "$ per 1M input tokens", "Economics", TOKEN_COST_ARGS,
           examples=[(TOKEN_EXAMPLE, 0.14110)], kind="money")
def cost_per_1m_input_tokens(usd_per_gpu_hour, model, gpu, precision, prompt_tokens, output_tokens, n_gpus,
                             max_tpot_ms, engine, kv_precision, batch):
    point = _point(model, gpu, precision, prompt_tokens, output_tokens, n_gpus, max_tpot_ms, engine, kv_precision,
                   batch)
    return economics.cost_per_1m_input_tokens(usd_per_gpu_hour, n_gpus, point.tokens_per_sec, prompt_tokens,
                                              output_tokens, point.prefill_share)


@worksheet("BLENDED_COST_PER_1M_TOKENS", "Cost per million tokens, input and output together: a request's cost / "
           f"(prompt_tokens + output_tokens), {AT_POINT}. The figure to compare with an API price list: the API's "
           "price for the same mix is (input price x prompt_tokens + output price x output_tokens) / (prompt_tokens "
           "+ output_tokens).", "$ per 1M tokens", "Economics", TOKEN_COST_ARGS,
           examples=[(TOKEN_EXAMPLE, 0.19774)], kind="money")
def blended_cost_per_1m_tokens(usd_per_gpu_hour, model, gpu, precision, prompt_tokens, output_tokens, n_gpus,
                               max_tpot_ms, engine, kv_precision, batch):
    point = _point(model, gpu, precision, prompt_tokens, output_tokens, n_gpus, max_tpot_ms, engine, kv_precision,
                   batch)
    return economics.blended_cost_per_1m_tokens(usd_per_gpu_hour, n_gpus, point.tokens_per_sec, prompt_tokens,
                                                output_tokens)


@worksheet("API_MONTHLY_COST", "Monthly bill of a token-priced API for a token volume and input/output mix.",
           "$/month", "Economics",
           [Arg("tokens_per_month", "count", "Tokens a month, input and output together", "tokens/month", min=0),
            Arg("input_share", "number", "Share of tokens that are input", "fraction", min=0, max=1),
            Arg("api_usd_per_1m_input_tokens", "number", "API price of input tokens", "$ per 1M tokens", min=0),
            Arg("api_usd_per_1m_output_tokens", "number", "API price of output tokens", "$ per 1M tokens", min=0)],
           examples=[((1e9, 0.75, 3, 15), 6000.0)],
           formula='{tokens_per_month}*({input_share}*{api_usd_per_1m_input_tokens}+(1-{input_share})*{api_usd_per_1m_output_tokens})/1000000',
           kind="money")
def api_monthly_cost(tokens_per_month, input_share, api_usd_per_1m_input_tokens, api_usd_per_1m_output_tokens):
    return economics.api_monthly_cost(tokens_per_month, input_share, api_usd_per_1m_input_tokens, api_usd_per_1m_output_tokens)


@worksheet("API_BREAKEVEN_TOKENS", "Tokens per month above which self-hosting is cheaper than an API: monthly "
           "self-hosting cost / API price per token.", "tokens/month", "Economics",
           [positive("self_host_usd_per_month", "All-in monthly cost of self-hosting", "$/month"),
            positive("api_usd_per_1m_tokens", "API price (blended)", "$ per 1M tokens")],
           examples=[((3000, 6), 5e8)],
           formula='{self_host_usd_per_month}/{api_usd_per_1m_tokens}*1000000', kind="count")
def api_breakeven_tokens(self_host_usd_per_month, api_usd_per_1m_tokens):
    return economics.api_breakeven_tokens(self_host_usd_per_month, api_usd_per_1m_tokens)


# --- money over time: the plan's depreciation and NPV (udfs/planning/plan.py) ---------------------
@worksheet("DEPRECIATION", "Straight-line depreciation of a purchase: (hardware_cost_usd - residual_value_usd) / "
           "lifetime_years each year, down to the residual at the end of the lifetime (a fractional lifetime gives a "
           "partial last year). part = expense (the year's depreciation, default) or book_value (what is left at the "
           "year's end). The method of the plan over years (flopsheet report [plan]).", "$", "Economics",
           [HARDWARE_COST_USD, replace(LIFETIME_YEARS, default=REQUIRED, help="Useful life the cost is spread over "
                                       "(the report's plan defaults to 5, Amazon's server life from 2025)"),
            replace(RESIDUAL, default=REQUIRED, help="Resale value at the end of the useful life (0: none)"),
            positive("year", "Year of use, 1 = the first", "year"),
            Arg("part", "choice", "What to return", choices=("expense", "book_value"), default="expense")],
           examples=[((10000, 4, 2000, 1), 2000.0), ((10000, 4, 2000, 4, "book_value"), 2000.0),
                     ((10000, 2.5, 0, 3), 2000.0), ((10000, 4, 2000, 5), 0.0)], kind="money")
def depreciation(hardware_cost_usd, lifetime_years, residual_value_usd, year, part):
    return economics.straight_line_depreciation(hardware_cost_usd, lifetime_years, residual_value_usd, year)[part]


@worksheet("PLAN_NPV", "Net present value of a cash series, one value a period (a plan's months by default): the "
           "first value at once (undiscounted), each later one discounted by (1 + cost_of_capital)^(period / "
           "periods_per_year). In Excel terms: first + NPV((1 + cost_of_capital)^(1/periods_per_year) - 1, rest). "
           "Blank cells are skipped.", "$", "Economics",
           [Arg("cash_usd", "list", "The cash of each period in order: a range, or numbers separated by \";\" "
                "(\"-1000; 600; 600\"); spending positive, money back negative, as the plan writes it", "$"),
            replace(RATE, help="Annual cost of capital (discount rate)"),
            Arg("periods_per_year", "number", "Periods in a year (12: months; 1: years)", "periods/year", default=12,
                min=0, min_open=True)],
           examples=[(("-100; 60; 60", 0.1, 1), 4.13223), (("0;0;0;0;0;0;0;0;0;0;0;0;1080", 0.08), 1000.0)],
           kind="signed_money")
def plan_npv(cash_usd, cost_of_capital, periods_per_year):
    return economics.npv(_cash(cash_usd), cost_of_capital, periods_per_year)


def _cash(value) -> list[float]:
    """The numbers of a range (nested lists, blanks skipped) or of ';'-separated text."""
    out = list(_numbers(value))
    if not out:
        raise value_error("cash_usd: give at least one number (a range or \"-1000; 600; 600\")")
    return out


def _numbers(value):
    if isinstance(value, (list, tuple)):
        for cell in value:
            yield from _numbers(cell)
    elif isinstance(value, str) and ";" in value:
        yield from (coerce.to_number("cash_usd", part) for part in value.split(";") if part.strip())
    elif not coerce.is_blank(value):
        yield coerce.to_number("cash_usd", value)
