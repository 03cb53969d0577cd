"""Ownership economics, cloud-vs-own and API-vs-self-host break-evens, and serving cost
split into input (prefill) and output (decode) tokens."""

from dataclasses import replace

from .. import capacity, economics
from ..registry import Arg, worksheet
from .common import (BATCH, CLOUD_USD_PER_GPU_HOUR, CONTEXT, ENGINE, GPU, HARDWARE_COST_USD, LIFETIME_YEARS, MODEL, N_GPUS,
                     POWER_W, PRECISION, PROMPT, USD_PER_GPU_HOUR, USD_PER_KWH, UTILIZATION, positive)

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
           formula='(({hardware_cost_usd}-{residual_value_usd}/(1+{cost_of_capital})^{lifetime_years})*IF({cost_of_capital}=0,1/{lifetime_years},{cost_of_capital}*(1+{cost_of_capital})^{lifetime_years}/((1+{cost_of_capital})^{lifetime_years}-1))+({power_w}/1000*8760*{pue}*{usd_per_kwh}+{opex_usd_per_year}))/(8760*{utilization})')
def owned_cost_per_gpu_hour(hardware_cost_usd, lifetime_years, power_w, pue, usd_per_kwh, utilization,
                            cost_of_capital, residual_value_usd, opex_usd_per_year):
    return economics.owned_cost_per_gpu_hour(hardware_cost_usd, lifetime_years, power_w, pue, usd_per_kwh, utilization,
                                             cost_of_capital, residual_value_usd, opex_usd_per_year)


@worksheet("BREAKEVEN_UTILIZATION", "Utilization above which owning a GPU is cheaper than renting the hours used "
           "(a value above 1 means renting is cheaper even at 100%).", "fraction", "Economics",
           [HARDWARE_COST_USD, CLOUD_USD_PER_GPU_HOUR, LIFETIME_YEARS, POWER_W, PUE, USD_PER_KWH, RATE, RESIDUAL, OPEX],
           examples=[((12000, 5.12), 0.098559), ((30000, 2.0), 0.59478)],
           formula='(({hardware_cost_usd}-{residual_value_usd}/(1+{cost_of_capital})^{lifetime_years})*IF({cost_of_capital}=0,1/{lifetime_years},{cost_of_capital}*(1+{cost_of_capital})^{lifetime_years}/((1+{cost_of_capital})^{lifetime_years}-1))+({power_w}/1000*8760*{pue}*{usd_per_kwh}+{opex_usd_per_year}))/({cloud_usd_per_gpu_hour}*8760)')
def breakeven_utilization(hardware_cost_usd, cloud_usd_per_gpu_hour, lifetime_years, power_w, pue, usd_per_kwh,
                          cost_of_capital, residual_value_usd, opex_usd_per_year):
    return economics.breakeven_utilization(hardware_cost_usd, cloud_usd_per_gpu_hour, lifetime_years, power_w, pue,
                                           usd_per_kwh, cost_of_capital, residual_value_usd, opex_usd_per_year)


@worksheet("BREAKEVEN_MONTHS", "Simple payback: months until the rent saved by owning covers the purchase.",
           "months", "Economics", [HARDWARE_COST_USD, CLOUD_USD_PER_GPU_HOUR, UTILIZATION, POWER_W, PUE, USD_PER_KWH, OPEX],
           examples=[((12000, 5.12, 0.7), 4.6489)],
           formula='{hardware_cost_usd}/({cloud_usd_per_gpu_hour}*730*{utilization}-({power_w}/1000*8760*{pue}*{usd_per_kwh}+{opex_usd_per_year})/12)')
def breakeven_months(hardware_cost_usd, cloud_usd_per_gpu_hour, utilization, power_w, pue, usd_per_kwh, opex_usd_per_year):
    return economics.breakeven_months(hardware_cost_usd, cloud_usd_per_gpu_hour, utilization, power_w, pue,
                                      usd_per_kwh, opex_usd_per_year)


@worksheet("TCO", "Total cost of owning one GPU for a period: capital charge + power + opex.", "$", "Economics",
           [HARDWARE_COST_USD, YEARS, POWER_W, PUE, USD_PER_KWH, RATE, RESIDUAL, OPEX],
           examples=[((12000, 3), 13261.44)],
           formula='{years}*(({hardware_cost_usd}-{residual_value_usd}/(1+{cost_of_capital})^{years})*IF({cost_of_capital}=0,1/{years},{cost_of_capital}*(1+{cost_of_capital})^{years}/((1+{cost_of_capital})^{years}-1))+({power_w}/1000*8760*{pue}*{usd_per_kwh}+{opex_usd_per_year}))')
def tco(hardware_cost_usd, years, power_w, pue, usd_per_kwh, cost_of_capital, residual_value_usd, opex_usd_per_year):
    return economics.tco(hardware_cost_usd, years, power_w, pue, usd_per_kwh, cost_of_capital, residual_value_usd,
                         opex_usd_per_year)


@worksheet("CLOUD_COST", "Cost of renting the GPU-hours used over a period: rate x 8,760 x years x utilization.",
           "$", "Economics", [replace(USD_PER_GPU_HOUR, help="Cloud price per GPU-hour"), YEARS, UTILIZATION],
           examples=[((5.12, 3, 0.7), 94187.52)],
           formula='{usd_per_gpu_hour}*8760*{years}*{utilization}')
def cloud_cost(usd_per_gpu_hour, years, utilization):
    return economics.cloud_cost(usd_per_gpu_hour, years, utilization)


# --- serving cost per token, split by phase ----------------------------------------------
GPU_HOUR_PRICE = replace(USD_PER_GPU_HOUR, help="Price of one GPU-hour, owned (OWNED_COST_PER_GPU_HOUR) or cloud")
INPUT_SHARE = Arg("input_share", "number", "Share of tokens that are input (3:1 input:output = 0.75)", "fraction",
                  default=0.75, min=0, max=1)


def _input_cost(usd_per_gpu_hour, model, gpu, precision, batch, prompt_tokens, n_gpus, engine):
    seconds = capacity.prefill_seconds(model, gpu, precision, prompt_tokens, batch, n_gpus, engine or None)
    rate = prompt_tokens * batch / seconds
    return economics.cost_per_1m_tokens(usd_per_gpu_hour * n_gpus, rate)


def _output_cost(usd_per_gpu_hour, model, gpu, precision, batch, context, n_gpus, engine):
    step = capacity.decode_step(model, gpu, precision, batch, context, n_gpus, None, engine or None)
    rate = batch / step.total
    return economics.cost_per_1m_tokens(usd_per_gpu_hour * n_gpus, rate)


@worksheet("COST_PER_1M_INPUT_TOKENS", "Cost per million input (prompt) tokens: GPU-hour price x GPUs / prefill "
           "tokens per hour.", "$ per 1M input tokens", "Economics",
           [GPU_HOUR_PRICE, MODEL, GPU, PRECISION, BATCH, PROMPT, N_GPUS, ENGINE],
           examples=[((2.0, "Llama 2 7B", "H100", "fp16", 1, 2048), 0.011127)])
def cost_per_1m_input_tokens(usd_per_gpu_hour, model, gpu, precision, batch, prompt_tokens, n_gpus, engine):
    return _input_cost(usd_per_gpu_hour, model, gpu, precision, batch, prompt_tokens, n_gpus, engine)


@worksheet("COST_PER_1M_OUTPUT_TOKENS", "Cost per million output (generated) tokens: GPU-hour price x GPUs / decode "
           "tokens per hour at the batch.", "$ per 1M output tokens", "Economics",
           [GPU_HOUR_PRICE, MODEL, GPU, PRECISION, BATCH, CONTEXT, N_GPUS, ENGINE],
           examples=[((2.0, "Llama 2 7B", "H100", "fp16", 1, 1024), 3.0507)])
def cost_per_1m_output_tokens(usd_per_gpu_hour, model, gpu, precision, batch, context, n_gpus, engine):
    return _output_cost(usd_per_gpu_hour, model, gpu, precision, batch, context, n_gpus, engine)


@worksheet("BLENDED_COST_PER_1M_TOKENS", "Cost per million tokens for a mix of input and output tokens: "
           "input_share x input cost + (1 - input_share) x output cost.", "$ per 1M tokens", "Economics",
           [GPU_HOUR_PRICE, MODEL, GPU, INPUT_SHARE, PRECISION, BATCH, PROMPT, CONTEXT, N_GPUS, ENGINE],
           examples=[((2.0, "Llama 2 7B", "H100", 0.75, "fp16", 1, 2048, 1024), 0.77101)])
def blended_cost_per_1m_tokens(usd_per_gpu_hour, model, gpu, input_share, precision, batch, prompt_tokens, context,
                               n_gpus, engine):
    cost_in = _input_cost(usd_per_gpu_hour, model, gpu, precision, batch, prompt_tokens, n_gpus, engine)
    cost_out = _output_cost(usd_per_gpu_hour, model, gpu, precision, batch, context, n_gpus, engine)
    return input_share * cost_in + (1 - input_share) * cost_out


@worksheet("API_MONTHLY_COST", "Monthly bill of a token-priced API for a token volume and input/output mix.",
           "$/month", "Economics",
           [Arg("tokens_per_month", "count", "Tokens a month, input and output together", "tokens/month", min=0),
            Arg("input_share", "number", "Share of tokens that are input", "fraction", min=0, max=1),
            Arg("api_usd_per_1m_input_tokens", "number", "API price of input tokens", "$ per 1M tokens", min=0),
            Arg("api_usd_per_1m_output_tokens", "number", "API price of output tokens", "$ per 1M tokens", min=0)],
           examples=[((1e9, 0.75, 3, 15), 6000.0)],
           formula='{tokens_per_month}*({input_share}*{api_usd_per_1m_input_tokens}+(1-{input_share})*{api_usd_per_1m_output_tokens})/1000000')
def api_monthly_cost(tokens_per_month, input_share, api_usd_per_1m_input_tokens, api_usd_per_1m_output_tokens):
    return economics.api_monthly_cost(tokens_per_month, input_share, api_usd_per_1m_input_tokens, api_usd_per_1m_output_tokens)


@worksheet("API_BREAKEVEN_TOKENS", "Tokens per month above which self-hosting is cheaper than an API: monthly "
           "self-hosting cost / API price per token.", "tokens/month", "Economics",
           [positive("self_host_usd_per_month", "All-in monthly cost of self-hosting", "$/month"),
            positive("api_usd_per_1m_tokens", "API price (blended)", "$ per 1M tokens")],
           examples=[((3000, 6), 5e8)],
           formula='{self_host_usd_per_month}/{api_usd_per_1m_tokens}*1000000')
def api_breakeven_tokens(self_host_usd_per_month, api_usd_per_1m_tokens):
    return economics.api_breakeven_tokens(self_host_usd_per_month, api_usd_per_1m_tokens)
