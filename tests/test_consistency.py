"""One question, one answer: for the same model, GPU, precision and traffic, GPU_RANK's row for the
GPU, GPUS_FOR_TRAFFIC and the scenario report size the same deployment (GPUs per copy, batch and
count, or the same refusal), for bare parameter counts from 1e9 to 1e12 and for catalog models,
dense and mixture-of-experts. Each is called the way its users call it: the worksheet functions
through the registry, the report through a scenario and report_model.analyse."""

from __future__ import annotations

import math

import pytest

from udfs.api import registry
from udfs.catalogs import catalog
from udfs.physics import lesson, training
from udfs.planning import picker, report_model, scenario
from udfs.errors import FlopsheetError

COUNTS = [1e9, 7e9, 3e10, 1.2e11, 2e11, 4e11, 1e12, 1e13]   # 1e13 fits no copy of up to 64 H100s
CATALOG = ["Llama 3.1 8B", "Llama 3.3 70B", "Mixtral 8x7B", "Qwen3 30B-A3B", "gpt-oss-120b"]
SETUPS = [("H100 SXM", "fp8"), ("A100 SXM 80GB", "bf16")]
RPM, PROMPT, OUTPUT, HEADROOM = 1000, 1024, 256, 0.2       # 1,000 requests/min: 5,120 output tokens/s provisioned


def _traffic(model, gpu, precision) -> tuple | None:
    """GPUS_FOR_TRAFFIC's (GPUs per copy, batch, GPUs), or None where it answers #NUM! (no fit)."""
    args = (model, gpu, RPM, PROMPT, OUTPUT, "", "", precision, "", "", HEADROOM)
    try:
        return tuple(registry.call("GPUS_FOR_TRAFFIC", *args, part) for part in ("gpus_per_copy", "batch", "gpus"))
    except FlopsheetError as e:
        assert e.code == "#NUM!", e.message
        return None


def _rank(model, gpu, precision, basis) -> tuple | None:
    demand = lesson.tokens_per_sec_needed(RPM, OUTPUT, HEADROOM)
    table = registry.call("GPU_RANK", "serve", model, precision, "cost", "", "", demand, "", basis, 0, PROMPT, OUTPUT,
                          "", "any")
    row = dict(zip(table.header, next(r for r in table.rows if r[1] == catalog.gpu(gpu).name)))
    return (row["gpus_per_copy"], row["batch"], row["count"]) if row["fits"] else None


def _report(model, gpu, precision, basis) -> tuple | None:
    workload = {"kind": "serve", "precision": precision, "requests_per_minute": RPM,
                "output_tokens_per_request": OUTPUT, "prompt_tokens_per_request": PROMPT, "headroom": HEADROOM}
    workload.update({"params": model} if isinstance(model, float) else {"model": model})
    sc = scenario.from_dict({"name": "consistency", "workload": workload,
                             "candidates": {"gpus": [gpu], "pricing": [basis], "tiers": "any"}})
    row = next(r for r in report_model.analyse(sc, sensitivity=False).rows if r.auto_count)
    return (row.gpus_per_copy, row.batch, row.count) if row.fits else None


def _whole_instances(plan: tuple | None, gpu: str) -> tuple | None:
    """Rented GPUs come in whole instances of the cheapest current on-demand row that holds a whole copy, up to a
    server (a copy's tensor-parallel group shares one instance's GPU link, never two one-GPU machines)."""
    if plan is None:
        return None
    together = min(plan[0], catalog.gpu(gpu).system_gpus)       # a copy over servers spans whole ones
    rows = [p for p in catalog.cloud_prices() if p.gpu == catalog.gpu(gpu).name and p.status == "current"
            and p.pricing == "on-demand" and (p.usd_per_gpu_hour or 0) > 0 and (p.gpu_count or 1) >= together]
    unit = min(rows, key=lambda p: p.usd_per_gpu_hour).gpu_count or 1
    return plan[0], plan[1], math.ceil(plan[2] / unit) * unit


def _whole_systems(plan: tuple | None, gpu: str) -> tuple | None:
    """Owned GPUs come in whole systems (picker.whole_systems): the same copies' size and batch."""
    if plan is None:
        return None
    unit = catalog.gpu(gpu).system_gpus or 1
    return plan[0], plan[1], math.ceil(plan[2] / unit) * unit


@pytest.mark.parametrize("gpu,precision", SETUPS)
@pytest.mark.parametrize("model", COUNTS + CATALOG, ids=str)
def test_rank_traffic_and_report_size_the_same_deployment(model, gpu, precision):
    sized = _traffic(model, gpu, precision)
    assert _rank(model, gpu, precision, "cloud") == _whole_instances(sized, gpu)
    assert _report(model, gpu, precision, "cloud") == _whole_instances(sized, gpu)
    assert _rank(model, gpu, precision, "owned") == _whole_systems(sized, gpu)
    assert _report(model, gpu, precision, "owned") == _whole_systems(sized, gpu)


def test_the_matrix_covers_fits_and_refusals():
    """Not every row may be a refusal (then the matrix would prove nothing), nor every row a fit."""
    plans = [_traffic(m, "H100 SXM", "fp8") for m in COUNTS]
    assert any(p is None for p in plans) and sum(p is not None for p in plans) >= 4


@pytest.mark.parametrize("model, spare", [("Llama 3.1 8B", 1), ("Llama 3.3 70B", 1), ("Llama 3.3 70B", 0),
                                          ("Llama 3.1 8B", 0.25), ("Llama 3.1 8B", 2)])
def test_a_p95_target_sizes_the_same_fleet_in_traffic_and_report(model, spare):
    """A report's p95_latency_s is GPUS_FOR_TRAFFIC's max_latency_s (the queueing wait included) with the TPOT a
    request needs for its tokens in that time, and its constraints.spare GPUS_FOR_TRAFFIC's spare: the same
    copies, spare included; GPU_RANK's spare gives the same spare copies and GPUs per copy."""
    p95 = 8
    args = (model, "H100 SXM", RPM, PROMPT, OUTPUT, p95 * 1000 / OUTPUT, "", "fp8", "", "", HEADROOM)
    parts = ("gpus_per_copy", "batch", "gpus")
    sized = tuple(registry.call("GPUS_FOR_TRAFFIC", *args, part, "point", spare, p95) for part in parts)
    workload = {"kind": "serve", "precision": "fp8", "requests_per_minute": RPM, "model": model,
                "output_tokens_per_request": OUTPUT, "prompt_tokens_per_request": PROMPT, "headroom": HEADROOM}
    sc = scenario.from_dict({"name": "p95", "workload": workload, "constraints": {"p95_latency_s": p95, "spare": spare},
                             "candidates": {"gpus": ["H100 SXM"], "pricing": ["cloud"], "tiers": "any"}})
    row = next(r for r in report_model.analyse(sc, sensitivity=False).rows if r.auto_count)
    assert (row.gpus_per_copy, row.batch) == sized[:2]
    assert row.count == math.ceil(sized[2] / row.purchase_unit) * row.purchase_unit   # rented in whole instances
    spares = registry.call("GPUS_FOR_TRAFFIC", *args, "spare_copies", "point", spare, p95)
    assert row.spare_copies == spares == (spare if spare >= 1 else math.ceil((sized[2] / sized[0] - spares) * spare))
    assert row.latency_p95_s * 1000 == pytest.approx(registry.call("GPUS_FOR_TRAFFIC", *args, "latency_ms", "point",
                                                                    spare, p95)) and row.latency_p95_s <= p95
    rank = registry.call("GPU_RANK", "serve", model, "fp8", "cost", "", "", sc.traffic_tokens_per_sec, "", "cloud",
                         OUTPUT / p95, PROMPT, OUTPUT, "", "any", "", "", True, spare, p95)
    h100 = next(r for r in rank.rows if r[1] == "H100 SXM 80GB")
    assert h100[rank.header.index("gpus_per_copy")] == sized[0]


# ---------------------------------------------------------------- training: one answer for the hours
# (kind, model, tokens, precision, deadline days): pre-training 7B / 13B / 70B and a full fine-tune
TRAINING = [("train", "Llama 2 7B", 2e12, "bf16", 60), ("train", "Llama 2 13B", 2e12, "bf16", 90),
            ("train", "Llama 2 70B", 2e12, "bf16", 120), ("train", "Llama 2 7B", 2e12, "fp8", 60),
            ("finetune", "Llama 3.1 8B", 2e9, "bf16", 3), ("lora", "Llama 3 70B", 1e9, "bf16", 3),
            ("qlora", "Llama 3 70B", 1e9, "bf16", 3), ("qlora", "Llama 2 7B", 1e9, "bf16", 1)]
TRAINING_GPUS = ["A100 SXM 80GB", "H100 SXM", "B200"]


def test_the_training_matrix_sizes_options_on_every_gpu():
    """Not every case may be a refusal: bf16 pre-training sizes an option on each GPU, in both bases."""
    for gpu in TRAINING_GPUS:
        rank = registry.call("GPU_RANK", "train", "Llama 2 7B", "bf16", "cost", "", 60, 2e12, "", "cloud", 0, "", "",
                             "", "any")
        assert next(r for r in rank.rows if r[1] == catalog.gpu(gpu).name)[rank.header.index("days")] is not None


def _scope(kind: str) -> str:
    """What the picker's compute MFU includes: a whole run (pre-training) or the steady state (fine-tuning)."""
    return "run" if kind == "train" else "steady"


def _method(kind: str) -> str:
    """TRAINING_GPU_HOURS' method for a picker workload: lora / qlora, else full."""
    return kind if kind in ("lora", "qlora") else "full"


def _hours(kind, model, tokens, precision, gpu, n_gpus):
    """TRAINING_GPU_HOURS on n_gpus, or the Excel error code where n_gpus cannot hold the job."""
    try:
        return registry.call("TRAINING_GPU_HOURS", model, tokens, gpu, "", precision, "point", _scope(kind), n_gpus,
                             _method(kind))
    except FlopsheetError as e:
        return e.code


@pytest.mark.parametrize("basis", ["cloud", "owned"])
@pytest.mark.parametrize("gpu", TRAINING_GPUS)
@pytest.mark.parametrize("kind,model,tokens,precision,deadline", TRAINING, ids=lambda v: str(v))
def test_report_and_rank_training_hours_are_training_gpu_hours_on_their_count(kind, model, tokens, precision,
                                                                              deadline, gpu, basis):
    """Every training option of the report (the picker's count and a list of counts) and GPU_RANK's row has
    the GPU-hours and days TRAINING_GPU_HOURS / TRAINING_DAYS give with n_gpus = its count; a count that
    cannot hold the job is refused by both."""
    sc = scenario.from_dict({"name": "hours", "workload": {"kind": kind, "model": model, "tokens": tokens,
                                                           "precision": precision},
                             "constraints": {"deadline_days": deadline},
                             "candidates": {"gpus": [gpu], "pricing": [basis], "tiers": "any"}})
    rows = [r for r in report_model.analyse(sc, sensitivity=False).rows if r.gpu_hours is not None]
    listed = scenario.from_dict({**{"name": "counts", "workload": {"kind": kind, "model": model, "tokens": tokens,
                                                                   "precision": precision}},
                                 "candidates": {"gpus": [gpu], "pricing": [basis], "tiers": "any",
                                                "counts": [8, 64, 512]}})
    rows += [r for r in report_model.analyse(listed, sensitivity=False).rows if r.gpu_hours is not None]
    if not rows:                           # the GPU cannot train in this precision (fp8 on A100): both refuse
        assert isinstance(_hours(kind, model, tokens, precision, gpu, 8), str)
    for r in rows:
        hours = _hours(kind, model, tokens, precision, gpu, r.count)
        if not r.fits:
            assert hours == "#NUM!", (r.count, hours)
            continue
        assert r.gpu_hours == pytest.approx(hours, rel=1e-9), r.count
        days = registry.call("TRAINING_DAYS", model, tokens, gpu, r.count, "", precision, _scope(kind), True,
                             _method(kind))
        assert r.days == pytest.approx(days, rel=1e-9)
    rank = registry.call("GPU_RANK", kind, model, precision, "cost", "", deadline, tokens, "", basis, 0, "", "", "",
                         "any")
    row = dict(zip(rank.header, next(r for r in rank.rows if r[1] == catalog.gpu(gpu).name)))
    if row["fits"] and row["days"] is not None:
        days = registry.call("TRAINING_DAYS", model, tokens, gpu, row["count"], "", precision, _scope(kind), True,
                             _method(kind))
        assert row["days"] == pytest.approx(days, rel=1e-9)
        assert row["days"] * row["count"] * 24 == pytest.approx(_hours(kind, model, tokens, precision, gpu,
                                                                        row["count"]), rel=1e-9)


def test_training_hours_with_n_gpus_are_the_mfu_at_n_gpus_and_grow_with_the_all_reduce():
    """TRAINING_GPU_HOURS on n GPUs is 6·N·D at TRAINING_MFU's figure on n GPUs (the compute MFU x its scale_out
    share); more GPUs lose more time to the all-reduce; blank n_gpus keeps the table's whole-run MFU."""
    model, tokens, gpu = "Llama 2 13B", 2e12, "H100 SXM"
    flops = registry.call("TRAINING_FLOPS", model, tokens)
    peak = catalog.gpu(gpu).tensor_peak("bf16", "a test", weight_only=False).tflops * 1e12
    hours = {}
    for n in (8, 64, 1024):
        mfu = registry.call("TRAINING_MFU", gpu, model, "bf16", "run", "mfu", n)
        hours[n] = registry.call("TRAINING_GPU_HOURS", model, tokens, gpu, "", "bf16", "point", "run", n)
        assert hours[n] == pytest.approx(flops / (peak * mfu) / 3600, rel=1e-9)
        assert registry.call("TRAINING_COST", model, tokens, gpu, 2.0, "", "bf16", "run", n) == \
            pytest.approx(2.0 * hours[n], rel=1e-9)
        share = registry.call("TRAINING_MFU", gpu, model, "bf16", "run", "scale_out", n)
        assert f"{share:.1%}" in registry.call("TRAINING_MFU", gpu, model, "bf16", "run", "basis", n)
    assert hours[8] < hours[64] < hours[1024]
    whole = registry.call("TRAINING_GPU_HOURS", model, tokens, gpu)
    cell = registry.call("TRAINING_MFU", gpu, model, "bf16", "run")
    assert whole == pytest.approx(flops / (peak * cell) / 3600, rel=1e-9)
    assert registry.call("TRAINING_DAYS", model, tokens, gpu, 64) == pytest.approx(whole / 64 / 24, rel=1e-9)


@pytest.mark.parametrize("n_gpus", ["", 64, 512])
@pytest.mark.parametrize("method", ["full", "lora", "qlora"])
def test_the_four_training_functions_answer_one_job_the_same_way_for_each_method(method, n_gpus):
    """TRAINING_COST is TRAINING_GPU_HOURS x the rate, TRAINING_DAYS (all_reduce) the hours / n / 24, and the hours are
    the method's FLOPs at TRAINING_MFU's figure for the same method (on n GPUs its scale-out: a full job's gradient
    all-reduce, a LoRA / QLoRA job's adapter traffic), for each method."""
    model, tokens, gpu, rate = "Llama 3 70B", 1e9, "H100 SXM", 2.5
    hours = registry.call("TRAINING_GPU_HOURS", model, tokens, gpu, "", "bf16", "point", "steady", n_gpus, method)
    cost = registry.call("TRAINING_COST", model, tokens, gpu, rate, "", "bf16", "steady", n_gpus, method)
    assert cost == pytest.approx(rate * hours, rel=1e-12)
    mfu = registry.call("TRAINING_MFU", gpu, model, "bf16", "steady", "mfu", n_gpus, method)
    peak = catalog.gpu(gpu).tensor_peak("bf16", "a test", weight_only=False).tflops * 1e12
    flops = training.method_flops(method) * catalog.model(model).active * tokens
    assert hours == pytest.approx(flops / (peak * mfu) / 3600, rel=1e-9)
    if n_gpus:
        days = registry.call("TRAINING_DAYS", model, tokens, gpu, n_gpus, "", "bf16", "steady", True, method)
        assert days == pytest.approx(hours / n_gpus / 24, rel=1e-12)
        full = registry.call("TRAINING_MFU", gpu, model, "bf16", "steady", "mfu", n_gpus, "full")
        assert (mfu != pytest.approx(full, rel=1e-6)) == (method != "full")     # the method's own traffic


@pytest.mark.parametrize("kind,model,tokens,precision,deadline", [TRAINING[0], TRAINING[2], TRAINING[4]],
                         ids=lambda v: str(v))
def test_the_report_states_its_mfu_basis_beside_the_whole_run_figure(kind, model, tokens, precision, deadline):
    """The Summary and the Assumptions say what MFU the hours were sized at (steady x goodput, or steady, and the
    all-reduce at the count), the count's TRAINING_GPU_HOURS, and the hours with n_gpus blank beside them."""
    from workbook_templates.report import assumptions
    sc = scenario.from_dict({"name": "basis", "workload": {"kind": kind, "model": model, "tokens": tokens,
                                                           "precision": precision},
                             "constraints": {"deadline_days": deadline},
                             "candidates": {"gpus": ["H100 SXM"], "pricing": ["cloud"], "tiers": "any"}})
    res = report_model.analyse(sc, sensitivity=False)
    best = res.best
    assert best is not None
    scope = _scope(kind)
    compute_mfu = registry.call("TRAINING_MFU", "H100 SXM", model, precision, "run", "mfu", best.count) / \
        registry.call("TRAINING_MFU", "H100 SXM", model, precision, "run", "scale_out", best.count) \
        if scope == "run" else registry.call("TRAINING_MFU", "H100 SXM", model, precision, "steady")
    whole = registry.call("TRAINING_GPU_HOURS", model, tokens, "H100 SXM", "", precision, "point", scope)
    stated = assumptions._mfu_assumption(res)
    assert stated[0] == pytest.approx(compute_mfu, rel=1e-9)
    for text in (stated[1], res.why_chosen(best)):
        assert f"{compute_mfu:.3f}" in text and f"{whole / best.gpu_hours:.2f}x" in text
    assert ("TRAINING_GOODPUT" in res.mfu_basis) == (scope == "run") and res.mfu_basis in stated[1]
    assert f"n_gpus {best.count}" in stated[1] and f"{whole:,.0f} GPU-hours" in stated[1]
    assert f"{best.scale_efficiency:.1%}" in stated[1]


# ---------------------------------------------------------------- LoRA / QLoRA: one answer for the memory
@pytest.mark.parametrize("kind,model", [("qlora", "Llama 3 70B"), ("lora", "Llama 3 70B"), ("qlora", "Llama 2 7B"),
                                        ("lora", "Llama 3.1 405B")])
@pytest.mark.parametrize("gpu", ["A100 SXM 40GB", "RTX 4090 24GB", "H100 SXM 80GB"])
def test_rank_sizes_lora_and_qlora_as_lora_memory_gb_does(kind, model, gpu):
    """GPU_RANK's memory count for a LoRA / QLoRA job is the fewest GPUs on which LORA_MEMORY_GB (rank 16, its
    defaults, FSDP over more than one GPU) fits the GPU's memory; with one fewer it does not."""
    rank = registry.call("GPU_RANK", kind, model, "bf16", "cost", "", "", "", "", "cloud", 0, "", "", "", "any")
    row = dict(zip(rank.header, next(r for r in rank.rows if r[1] == catalog.gpu(gpu).name)))
    precision = "nf4" if kind == "qlora" else "bf16"
    memory = catalog.gpu(gpu).memory_gib          # what CUDA reports: the figure every budget reads

    def need(n):
        return registry.call("LORA_MEMORY_GB", model, 16, precision, "", "", True, n, "fsdp" if n > 1 else "ddp")
    option = next(o for o in picker.rank(kind, model, "bf16", "cost", price_basis="cloud", tiers="any")
                  if o.gpu == catalog.gpu(gpu).name)
    assert row["fits"] == option.fits
    if option.fits:
        assert need(option.mem_count) <= memory and row["count"] >= option.mem_count
        assert option.mem_count == 1 or need(option.mem_count - 1) > memory
