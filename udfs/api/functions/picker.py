"""The GPU picker: GPU_RECOMMEND (the winner) and GPU_RANK (every candidate, with reasons)."""

from dataclasses import replace

from ...physics import defaults
from ...planning import picker
from ..registry import Arg, worksheet
from ..table import Table
from .common import BATCH, ENGINE, MODEL_OR_PARAMS, OUTPUT, PRECISION, PROMPT

ARGS = [
    Arg("workload", "choice", "What to do: train (pre-train), finetune (full), lora, qlora or serve",
        choices=picker.WORKLOADS),
    replace(MODEL_OR_PARAMS, help="Catalog model name or a parameter count (7e9, \"70B\")"),
    PRECISION,
    Arg("objective", "choice", "Rank by cost (default) or time", choices=picker.OBJECTIVES, default="cost"),
    Arg("budget_usd", "number", "Budget as cash (blank = none): for a job, cash up front (= capex_budget_usd); "
        "for serving, cash a month (= monthly_budget_usd)", "$", default="", min=0, min_open=True),
    Arg("deadline_days", "number", f"Days a training job may take (default {defaults.DEADLINE_DAYS})", "days",
        default="", min=0, min_open=True),
    Arg("tokens_or_traffic", "count", "Training tokens (default: 20 per parameter to pre-train, 100M to fine-tune), "
        "or output tokens/s to serve (default: one replica)", "tokens or tokens/s", default="", min=0, min_open=True),
    replace(BATCH, default="", help="Serving: sequences each model copy runs at once; blank: the largest its KV "
            "cache holds and the latency target allows (SERVING_BATCH)"),
    Arg("price_basis", "choice", "auto (cloud on-demand for train/finetune, purchase price for serve/lora/qlora), "
        "cloud or owned", choices=picker.PRICE_BASES, default="auto"),
    Arg("min_tokens_per_sec", "number", "Serving latency target: tokens/s each request needs (0 = none)",
        "tokens/s per request", default=0, min=0),
]
SERVING_SHAPE = [replace(PROMPT, help="Serving: prompt tokens per request"),
                 replace(OUTPUT, help="Serving: output tokens per request"), ENGINE]
TIERS = Arg("tiers", "text", "GPU tiers the deployment may use: datacenter (default: deployable in a data centre), "
            "\"datacenter,workstation\", or any (consumer GeForce cards too; NVIDIA's GeForce driver licence does "
            "not allow data-centre use). Cards of other tiers are still sized, and marked left out with the reason",
            default="datacenter")
BUDGETS = [Arg("capex_budget_usd", "number", "Cash up front (blank = none): an owned option's systems and network "
               "(capex); a cloud training job's rent", "$", default="", min=0, min_open=True),
           Arg("monthly_budget_usd", "number", "Cash a month (blank = none): an owned option's data-centre month "
               "(capital recovery, network, colocation, power); a cloud option's rent", "$", default="", min=0,
               min_open=True)]


@worksheet("GPU_RANK", "Every catalog GPU sized for a workload (count, fits, days or tokens/s, cost, price basis, "
           "GPUs per system or instance, capex) and "
           "ranked by cost or time, with the reason each wins or fails (does not fit, no NVLink for sharding, over "
           "budget (cash: capex up front, or rent and the data-centre month a month), misses the deadline, too "
           "slow for the latency target, a tier left out). Counts are whole systems (owned) or instances (cloud).",
           "table", "Picker",
           ARGS + SERVING_SHAPE + [TIERS] + BUDGETS,
           returns="table", examples=[(("serve", "Llama 2 7B", "fp16"), None),
                                      (("train", "Llama 2 70B", "bf16", "cost", "", "", 2e12), None)], kind="table")
def gpu_rank(**kw):
    options = picker.rank(*_rank_args(kw))
    return Table(RANK_HEADER, [_rank_row(i, o) for i, o in enumerate(options, start=1)])


RANK_HEADER = ["rank", "gpu", "count", "fits", "days", "tokens_per_sec", "cost", "cost_unit", "price_basis",
               "verdict", "reason", "gpus_per_copy", "batch", "gpus_per_system", "capex_usd"]


def _rank_row(rank: int, o: picker.Option) -> list:
    return [rank, o.gpu, o.count, o.fits, o.days, o.tokens_per_sec, o.cost, o.cost_unit, o.price_basis,
            "OK" if o.ok else "fails", o.reason.text(), o.gpus_per_copy, o.batch, o.purchase_unit, o.capex]


@worksheet("GPU_RECOMMEND", "The winning GPU for a workload and how many: cheapest (or fastest) option that fits "
           "and meets the budget, deadline and latency target. part = summary, gpu or count.", "text", "Picker",
           ARGS + [Arg("part", "choice", "What to return", choices=("summary", "gpu", "count"), default="summary")]
           + SERVING_SHAPE + [TIERS] + BUDGETS,
           returns="any", examples=[(("serve", "Llama 2 7B", "fp16", "cost", "", "", "", 1, "auto", 0, "gpu"), "A10 24GB"),
                                    (("serve", "Llama 2 7B", "fp16", "cost", "", "", "", 1, "auto", 0, "gpu", 1024, 256,
                                      "", "any"), "RTX 5090 32GB"),
                                    (("qlora", "Llama 2 7B", "bf16", "cost", "", "", "", 1, "auto", 0, "count"), 8),
                                    (("qlora", "Llama 2 7B", "bf16", "cost", 20000, "", "", 1, "auto", 0, "count"), 1)],
           kind="text")
def gpu_recommend(part, **kw):
    best = picker.recommend(*_rank_args(kw))
    if part == "gpu":
        return best.gpu
    if part == "count":
        return best.count
    return f"{best.count} x {best.gpu} ({best.price_basis})"


def _rank_args(kw):
    """The picker's positional arguments from the coerced worksheet arguments (blank = none)."""
    return (kw["workload"], kw["model_or_params"], kw["precision"], kw["objective"], kw["budget_usd"] or None,
            kw["deadline_days"] or None, kw["tokens_or_traffic"] or None, kw["batch"] or None, kw["price_basis"],
            kw["min_tokens_per_sec"], kw["prompt_tokens"], kw["output_tokens"], kw["engine"] or None,
            kw["tiers"], kw["capex_budget_usd"] or None, kw["monthly_budget_usd"] or None)
