"""The GPU picker: GPU_RECOMMEND (the winner) and GPU_RANK (every candidate, with reasons)."""

from dataclasses import replace

from ...physics import defaults
from ...planning import picker
from ...planning.reasons import Status
from ..registry import Arg, worksheet
from ..table import Table
from .common import BATCH, ENGINE, MODEL_OR_PARAMS, OUTPUT, PRECISION, PROMPT, SPARE, MAX_LATENCY

ARGS = [
    Arg("workload", "choice", "What to do: train (pre-train), finetune (full), lora, qlora or serve",
        choices=picker.WORKLOADS),
    replace(MODEL_OR_PARAMS, help="Catalog model name or a parameter count (7e9, \"70B\")"),
    PRECISION,
    Arg("objective", "choice", "Rank by cost (default) or time: a job's days; a service's time per request (the "
        "tokens/s each request sees), then its cost, as a scenario report ranks", choices=picker.OBJECTIVES,
        default="cost"),
    Arg("budget_usd", "number", "Budget as cash (blank = none): for a job, cash up front (= capex_budget_usd); "
        "for serving, cash a month (= monthly_budget_usd)", "$", default="", min=0, min_open=True),
    Arg("deadline_days", "number", f"Days a training job may take (default {defaults.DEADLINE_DAYS})", "days",
        default="", min=0, min_open=True),
    Arg("tokens_or_traffic", "count", "Training tokens (default: 20 per parameter to pre-train, 100M to fine-tune), "
        "or output tokens/s to serve (default: one replica)", "tokens or tokens/s", default="", min=0, min_open=True),
    replace(BATCH, default="", help="Serving: sequences each model copy runs at once; blank: the largest its KV "
            "cache holds and the latency target allows (SERVING_BATCH)"),
    Arg("price_basis", "choice", "auto (purchase price to serve; cloud on-demand for a job: train, finetune, lora, "
        "qlora), cloud or owned", choices=picker.PRICE_BASES, default="auto"),
    Arg("min_tokens_per_sec", "number", "Serving latency target: tokens/s each request needs (0 = none)",
        "tokens/s per request", default=0, min=0),
]
SERVING_SHAPE = [replace(PROMPT, help="Serving: prompt tokens per request"),
                 replace(OUTPUT, help="Serving: output tokens per request"), ENGINE]
INCLUDE_UNVERIFIED = Arg(
    "include_unverified", "bool", "FALSE (default): an option whose regime no measured row backs (ESTIMATE_EVIDENCE "
    "says \"no measurement\") is marked unverified and cannot win, so the winner is the best option with evidence; "
    "TRUE: it competes on its estimate", default=False)
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
           "slow for the latency target, a tier left out, unverified: no measurement in its regime, with the figure "
           "that would verify it). Counts are whole systems (owned) or instances (cloud); serving counts include one "
           "spare model copy (N+1; the spare argument, as GPUS_FOR_TRAFFIC's); a rented copy's GPUs, or a job's up to a "
           "server, are in one instance, at that instance's rate. cost_low and cost_high are "
           "the cost over its regime's P10..P90 measured error (ESTIMATE_EVIDENCE); evidence is measured, "
           "\"measured in fp8, not bf16\" (its regime's rows are all in other formats) or unverified.",
           "table", "Picker",
           ARGS + SERVING_SHAPE + [TIERS] + BUDGETS + [INCLUDE_UNVERIFIED, SPARE, MAX_LATENCY],
           returns="table", examples=[(("serve", "Llama 2 7B", "fp16"), None),
                                      (("train", "Llama 2 70B", "bf16", "cost", "", "", 2e12), None)], kind="table")
def gpu_rank(**kw):
    options = picker.rank(*_rank_args(kw))
    return Table(RANK_HEADER, [_rank_row(i, o) for i, o in enumerate(options, start=1)])


RANK_HEADER = ["rank", "gpu", "count", "fits", "days", "tokens_per_sec", "cost", "cost_unit", "price_basis",
               "verdict", "reason", "gpus_per_copy", "batch", "gpus_per_system", "capex_usd",
               "cost_low", "cost_high", "evidence", "evidence_rows", "to_verify"]


def _rank_row(rank: int, o: picker.Option) -> list:
    low, high = o.cost_range or (None, None)
    evidence = "" if o.evidence is None else o.evidence.label
    return [rank, o.gpu, o.count, o.fits, o.days, o.tokens_per_sec, o.cost, o.cost_unit, o.price_basis,
            _verdict(o), o.reason.text(), o.gpus_per_copy, o.batch, o.purchase_unit, o.capex,
            low, high, evidence, o.evidence.rows if o.evidence else None, o.to_verify]


def _verdict(o: picker.Option) -> str:
    return "OK" if o.ok else "unverified" if o.status is Status.UNVERIFIED else "fails"


@worksheet("GPU_RECOMMEND", "The winning GPU for a workload and how many: cheapest (or fastest) option with evidence "
           "(a measured row in its regime) that fits and meets the budget, deadline and latency target; the summary "
           "names beside it a better option nothing has measured, and the figure that would verify it; an option whose "
           "regime was measured only in another format says so (\"in fp8, not bf16\") and what would verify it. "
           "part = summary (the count and its price; what the count is: copies of how many GPUs, spares and the "
           "load, or days and GPU-hours; the cost with its low-high range over its regime's measured error and the "
           "measured rows, and a job's days (a service's latency) over that range against the deadline (the latency "
           "target; with none, how long a request takes at the batch sized); the cash up front and a month), "
           "gpu or count.", "text", "Picker",
           ARGS + [Arg("part", "choice", "What to return", choices=("summary", "gpu", "count"), default="summary")]
           + SERVING_SHAPE + [TIERS] + BUDGETS + [INCLUDE_UNVERIFIED, SPARE, MAX_LATENCY],
           returns="any", examples=[(("serve", "Llama 2 7B", "fp16", "cost", "", "", "", 1, "auto", 0, "gpu"),
                                     "RTX PRO 6000 Blackwell Server 96GB"),
                                    (("serve", "Llama 2 7B", "fp16", "cost", "", "", "", 1, "auto", 0, "gpu", 1024, 256,
                                      "", "any", "", "", True), "RTX 5090 32GB"),
                                    (("qlora", "Llama 2 7B", "bf16", "cost", "", "", "", 1, "auto", 0, "count"), 1),
                                    (("qlora", "Llama 2 7B", "bf16", "cost", 20000, "", "", 1, "auto", 0, "count", 1024,
                                      256, "", "datacenter", "", "", True), 1)],
           kind="text")
def gpu_recommend(part, **kw):
    options = picker.rank(*_rank_args(kw))
    best = picker.winner(options)
    if part == "gpu":
        return best.gpu
    if part == "count":
        return best.count
    serving = kw["workload"] == "serve"
    text = picker.summary(best, kw["tokens_or_traffic"] or None if serving else None,
                          None if serving else kw["deadline_days"] or defaults.DEADLINE_DAYS,
                          kw["max_latency_s"] or None)
    note = picker.verify_note(best)        # no measurement, or none in the format asked
    if note:
        text += f"; {'unverified: ' if not best.verified else ''}{note}"
    other = picker.best_unverified_of(options)
    if other is not None and picker.ahead(other):
        text += f"; beside it, {other.count:,} x {other.gpu} is {other.reason.text()}"
    return text


def _rank_args(kw):
    """The picker's positional arguments from the coerced worksheet arguments (blank = none)."""
    return (kw["workload"], kw["model_or_params"], kw["precision"], kw["objective"], kw["budget_usd"] or None,
            kw["deadline_days"] or None, kw["tokens_or_traffic"] or None, kw["batch"] or None, kw["price_basis"],
            kw["min_tokens_per_sec"], kw["prompt_tokens"], kw["output_tokens"], kw["engine"] or None,
            kw["tiers"], kw["capex_budget_usd"] or None, kw["monthly_budget_usd"] or None, kw["include_unverified"],
            kw["max_latency_s"] or None, kw["spare"])
