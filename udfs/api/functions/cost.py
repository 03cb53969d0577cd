"""Cost: the lesson's owned-hardware cost per 1M tokens, the second seed's effective
cost per A100-equivalent hour, job cost and the Q6 break-even arithmetic."""

from dataclasses import replace

from ...physics import lesson
from ..registry import Arg, worksheet
from .common import (CLOUD_USD_PER_GPU_HOUR, HARDWARE_COST_USD, LIFETIME_YEARS, N_GPUS, POWER_W, USD_PER_HOUR,
                     USD_PER_KWH, UTILIZATION, positive)

COST_PARTS = ("total", "hardware", "power")
TOKENS_PER_SEC = positive("tokens_per_sec", "Throughput while serving", "tokens/s")


@worksheet("COST_PER_1M_TOKENS", "Owned-hardware cost per million tokens (the lesson's model): purchase price "
           "straight-line over the lifetime plus electricity at TDP, over the tokens produced at the utilization. "
           "The lesson's formula, kept as written; a deployment's cost per token from its architecture and price "
           "is COST_PER_1M_OUTPUT_TOKENS / BLENDED_COST_PER_1M_TOKENS (docs/cost-model.md, Cost per token).",
           "$ per 1M tokens", "Cost",
           [replace(HARDWARE_COST_USD, help="Purchase price of the serving unit's hardware (all its GPUs)"),
            UTILIZATION, TOKENS_PER_SEC, LIFETIME_YEARS, USD_PER_KWH, POWER_W, N_GPUS,
            Arg("part", "choice", "total, or only the hardware or power share", choices=COST_PARTS, default="total")],
           examples=[((700, 0.7, 65, 3, 0.12, 350), 0.4190), ((1600, 0.7, 70, 3, 0.12, 450), 0.6513),
                     ((8000, 0.7, 114, 3, 0.12, 400), 1.2267), ((30000, 0.7, 239, 3, 0.12, 700), 2.0349)],
           formula='(IF({part}="power",0,{hardware_cost_usd}/({lifetime_years}*31536000))+IF({part}="hardware",0,{power_w}*{n_gpus}/(1000*3600)*{usd_per_kwh}))/({tokens_per_sec}*{utilization})*1000000',
           kind="money")
def cost_per_1m(hardware_cost_usd, utilization, tokens_per_sec, lifetime_years, usd_per_kwh, power_w, n_gpus, part):
    return lesson.cost_per_1m_tokens(hardware_cost_usd, utilization, tokens_per_sec, lifetime_years, usd_per_kwh,
                                     power_w, n_gpus)[part]


@worksheet("ANNUAL_TOKENS", "Tokens produced in a year (365 days) at the given throughput and utilization.",
           "tokens/year", "Cost", [TOKENS_PER_SEC, UTILIZATION],
           examples=[((65, 0.7), 1.4349e9), ((239, 0.7), 5.2761e9)],
           formula='{tokens_per_sec}*{utilization}*365*24*3600', kind="count")
def annual_tokens(tokens_per_sec, utilization):
    return tokens_per_sec * utilization * 365 * 24 * 3600


@worksheet("EFFECTIVE_HOURLY_COST", "Cost of one baseline-equivalent hour (second seed): price per hour / speed-up "
           "relative to the baseline GPU (A100 = 1).", "$ per A100-equivalent hour", "Cost",
           [USD_PER_HOUR, positive("speedup", "Speed relative to the baseline GPU", "x")],
           examples=[((32.77, 1), 32.77), ((41.04, 2.5), 16.416), ((17.50, 0.5), 35.0)],
           formula='{usd_per_hour}/{speedup}', kind="money")
def effective_hourly_cost(usd_per_hour, speedup):
    return lesson.effective_hourly_cost(usd_per_hour, speedup)


@worksheet("JOB_COST", "Cost of a job: price per hour x hours.", "$", "Cost",
           [USD_PER_HOUR, Arg("hours", "number", "Job duration", "hours", min=0)],
           examples=[((32.77, 10), 327.70), ((41.04, 4), 164.16), ((17.50, 20), 350.0)],
           formula='{usd_per_hour}*{hours}', kind="money")
def job_cost(usd_per_hour, hours):
    return lesson.job_cost(usd_per_hour, hours)


@worksheet("GPU_HOURS", "GPU-hours used over a period at a utilization: years x 8,760 h x utilization.",
           "GPU-hours", "Cost", [positive("years", "Period", "years"), UTILIZATION],
           examples=[((3, 0.7), 18396.0)],
           formula='{years}*31536000/3600*{utilization}', kind="time")
def gpu_hours(years, utilization):
    return lesson.gpu_hours(years, utilization)


@worksheet("BREAKEVEN_HOURS", "Hours of GPU use after which renting has cost as much as buying: hardware cost / "
           "(cloud rate - owned running cost per hour).", "GPU-hours", "Cost",
           [HARDWARE_COST_USD, CLOUD_USD_PER_GPU_HOUR,
            Arg("owned_usd_per_gpu_hour", "number", "Running cost of the owned GPU per hour of use (power etc.)",
                "$/GPU-hour", default=0, min=0)],
           examples=[((12000, 5.12), 2343.75), ((12000, 5.12, 0.12), 2400.0)],
           formula='{hardware_cost_usd}/({cloud_usd_per_gpu_hour}-{owned_usd_per_gpu_hour})', kind="time")
def breakeven_hours(hardware_cost_usd, cloud_usd_per_gpu_hour, owned_usd_per_gpu_hour):
    return lesson.breakeven_hours(hardware_cost_usd, cloud_usd_per_gpu_hour, owned_usd_per_gpu_hour)
