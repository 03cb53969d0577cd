"""GPU_RECOMMEND's summary is what a buyer forwards: it must say what the count is (copies, GPUs a copy,
spares, the load), what it costs with its range and evidence, and the cash, each checked here by hand
arithmetic against the catalog's price and the other worksheet functions."""

import re

import pytest

import udfs

RTX = "RTX PRO 6000 Blackwell Server 96GB"


def _owned_month_and_capex(gpu: str) -> tuple[float, float, float]:
    """(cash a GPU-month, capex a GPU, $ per used GPU-hour at 70%) by the data-centre model's arithmetic:
    server power = TDP x 10,200 W / (8 x 700 W) (DGX H100), capex = system price x 1.10 (network)."""
    price = udfs.call("GPU_SPEC", gpu, "system_price_usd")
    server_w = udfs.call("GPU_SPEC", gpu, "tdp_w") * 10_200 / (8 * 700)
    month = udfs.call("DATACENTER_COST_PER_GPU_MONTH", price, server_w)
    return month, price * 1.10, month / (730 * 0.70)


def test_serving_summary_says_copies_load_cost_range_and_cash():
    text = udfs.call("GPU_RECOMMEND", "serve", "7B", "fp16")
    assert text.startswith(f"2 x {RTX} (owned: ")
    per_copy = udfs.call("SERVING_THROUGHPUT", "7B", RTX, "fp16")
    assert f"1 copy of 1 GPU + 1 spare copy, {per_copy:,.0f} output tokens/s a copy" in text
    assert "no tokens_or_traffic given: sized for one copy's load" in text
    month, capex, rate = _owned_month_and_capex(RTX)
    # no traffic: 2 GPUs at the rate over both copies' tokens (as GPU_RANK prices it)
    cost = 2 * rate / (2 * per_copy * 3600) * 1e6
    assert f"${cost:,.3f} per 1M output tokens with those copies busy" in text
    row = udfs.call("GPU_RANK", "serve", "7B", "fp16").to_records()[0]
    assert f"(${row['cost_low']:,.3f} to ${row['cost_high']:,.3f} over its regime's measured error, " \
           f"{row['evidence_rows']} measured row" in text
    assert row["cost_low"] < cost < row["cost_high"]
    assert f"cash ${2 * capex:,.0f} up front, ${2 * month:,.0f} a month" in text


def test_serving_summary_at_a_traffic_level():
    tokens = 20_000
    text = udfs.call("GPU_RECOMMEND", "serve", "Llama 3.1 8B", "bf16", "cost", "", "", tokens)
    gpu = text.split(" x ", 1)[1].split(" (", 1)[0]
    count = int(text.split(" x ", 1)[0])
    # the same load through GPUS_FOR_TRAFFIC: requests/min = tokens/s x 60 / 256 tokens, no headroom
    rpm = tokens * 60 / 256
    copies = udfs.call("GPUS_FOR_TRAFFIC", "Llama 3.1 8B", gpu, rpm, 1024, 256, "", "", "bf16", "", "", 0, "copies")
    n = udfs.call("GPUS_FOR_TRAFFIC", "Llama 3.1 8B", gpu, rpm, 1024, 256, "", "", "bf16", "", "", 0, "gpus_per_copy")
    assert f": {copies - 1} copies of {n} GPU" in text and f"+ 1 spare copy for {tokens:,} output tokens/s" in text
    assert "no tokens_or_traffic given" not in text
    month, capex, rate = _owned_month_and_capex(gpu)
    cost = count * rate / (tokens * 3600) * 1e6           # every GPU bought, over the tokens asked for
    assert f"${cost:,.3f} per 1M output tokens at that load" in text
    assert f"cash ${count * capex:,.0f} up front, ${count * month:,.0f} a month" in text


def test_cloud_service_says_its_rent():
    text = udfs.call("GPU_RECOMMEND", "serve", "Llama 3.1 8B", "bf16", "cost", "", "", 500, "", "cloud")
    count = int(text.split(" x ", 1)[0])
    rate = float(re.search(r"\$([\d.]+)/GPU-h", text).group(1))
    assert f"rent ${rate * count * 730:,.0f} a month" in text
    assert "up front" not in text


def test_training_summary_says_days_hours_and_the_jobs_cost():
    text = udfs.call("GPU_RECOMMEND", "qlora", "Llama 3 70B")
    row = udfs.call("GPU_RANK", "qlora", "Llama 3 70B").to_records()[0]
    rate = float(re.search(r"\$([\d.]+)/GPU-h", text).group(1))
    days = row["days"]
    gpu_hours = days * 24 * row["count"]
    took = f"{days * 24:,.1f} hours" if days < 2 else f"{days:,.1f} days"      # a day or so: in hours
    lora_speed = " at LoRA's speed (the NF4 base's dequantisation in each pass is not modelled)"   # qlora's hours
    assert f"{took}, {gpu_hours:,.0f} GPU-hours{lora_speed}; ${gpu_hours * rate:,.0f} for the job" in text
    assert f"(${row['cost_low']:,.0f} to ${row['cost_high']:,.0f} over its regime's measured error" in text
    # owned: the systems' capex and their month beside the job's cost at the used-hour rate
    owned = udfs.call("GPU_RECOMMEND", "train", "7B", "bf16", "cost", "", "", "", "", "owned")
    count, gpu = int(owned.split(" x ", 1)[0]), owned.split(" x ", 1)[1].split(" (", 1)[0]
    month, capex, _ = _owned_month_and_capex(gpu)
    assert f"cash ${count * capex:,.0f} up front, ${count * month:,.0f} a month" in owned


@pytest.mark.parametrize("part, kind", [("gpu", str), ("count", int)])
def test_parts_stay_bare(part, kind):
    value = udfs.call("GPU_RECOMMEND", "serve", "7B", "fp16", "cost", "", "", "", "", "auto", 0, part)
    assert isinstance(value, kind) and (part == "count" or value == RTX)


def test_serving_by_time_ranks_by_the_time_each_request_takes():
    """objective = time for a service: the fastest request first (output tokens / the tokens/s each request
    sees), then the cheaper, as a scenario report ranks; not tokens/s per GPU, which put a 72-GPU GB200 rack
    ($3.7M) first for one copy of an 8B model on a 3% edge in throughput per GPU."""
    from udfs.planning import picker
    ok = [o for o in picker.rank("serve", "Llama 3.1 8B", "bf16", "time") if o.ok]
    seconds = [256 / o.per_request_tps for o in ok]
    assert len(ok) >= 3 and seconds == sorted(seconds)
    best, second = ok[0], ok[1]
    tpot = udfs.call("SERVING_LATENCY_MS", "Llama 3.1 8B", best.gpu, "bf16", 1024, 256, best.gpus_per_copy, "", "",
                     "", "tpot")
    assert best.per_request_tps == pytest.approx(1000 / tpot, rel=1e-9)
    ratio = (256 / second.per_request_tps) / (256 / best.per_request_tps)
    assert second.reason.text() == f"fits, {ratio:.2f}x the winner's time"
    text = udfs.call("GPU_RECOMMEND", "serve", "Llama 3.1 8B", "bf16", "time")
    assert text.startswith(f"{best.count} x {best.gpu} (")


def test_a_jobs_summary_gives_its_days_range_against_the_deadline():
    """GPU_RECOMMEND sizes a job to meet its deadline at the estimate; the summary gives the days over the
    regime's measured error (the cost's factors: days and cost scale together at a fixed count) and says when
    the slow end misses the deadline."""
    missed = []
    for args in (("train", "13B", "bf16", "cost", "", 120, 2e12, "", "owned"),
                 ("train", "7B", "bf16", "cost", "", 90, "", "", "owned")):
        text = udfs.call("GPU_RECOMMEND", *args)
        row = udfs.call("GPU_RANK", *args).to_records()[0]
        low, high = (row["days"] * row[k] / row["cost"] for k in ("cost_low", "cost_high"))
        assert f"and it takes {low:,.1f} to {high:,.1f} days" in text
        said = f"the {args[5]}-day deadline holds at the estimate ({row['days']:,.1f} days)" in text
        assert said == (high > args[5])
        missed.append(said)
    assert missed == [True, False]      # the brief's 120 A100s may miss 120 days; a whole 8-GPU system for 7B has room


def test_a_short_jobs_time_is_in_hours():
    """A job under two days reads in hours (a full fine-tune of an 8B model on 100M tokens: about 3 GPU-hours;
    "0.1 days" told a reader nothing). 6 x 8e9 x 1e8 = 4.8e18 FLOPs, hours on H100s, not days."""
    text = udfs.call("GPU_RECOMMEND", "finetune", "8B")
    row = udfs.call("GPU_RANK", "finetune", "8B").to_records()[0]
    assert row["days"] < 2
    low, high = (row["days"] * 24 * row[k] / row["cost"] for k in ("cost_low", "cost_high"))
    assert f": {row['days'] * 24:,.1f} hours, " in text and f"it takes {low:,.1f} to {high:,.1f} hours" in text
    assert " days" not in text.split("; beside it")[0]


def test_a_services_latency_target_at_the_bands_slow_end():
    """A service is sized to the largest batch that holds its p95 target at the estimate, so it holds no margin:
    where the estimate is too fast by its regime's P90 error each step takes (1 + P90) longer at the same batch,
    and the whole request at least that much. The summary and the report say when that passes the target."""
    from udfs.planning import picker
    args = ("serve", "Llama 3.1 8B", "bf16", "cost", "", "", 6250, "", "auto", 0, "summary", 1000, 300, "",
            "datacenter", "", "", "", 1, 10)
    text = udfs.call("GPU_RECOMMEND", *args)
    best = picker.recommend("serve", "Llama 3.1 8B", "bf16", tokens_or_traffic=6250, prompt_tokens=1000,
                            output_tokens=300, max_latency_s=10)
    band = re.search(r"P90 ([+-]\d+)%", best.evidence.text())
    slow = best.latency_p95_s * (1 + best.evidence.high_error)
    assert abs(best.evidence.high_error * 100 - int(band.group(1))) <= 0.5
    assert best.latency_p95_s <= 10 < slow
    assert (f"at the band's slow end a request takes {slow:,.1f} s or more: the 10 s p95 holds only at the "
            f"estimate ({best.latency_p95_s:,.1f} s)") in text
    assert "slow end a request" not in udfs.call("GPU_RECOMMEND", *args[:-1], "")     # no target: nothing to hold


def test_the_reports_evidence_line_says_the_latency_target_has_no_margin():
    from pathlib import Path
    from udfs.planning import report_model, scenario
    sc = scenario.load(Path(__file__).resolve().parents[1] / "examples" / "serve-70b.toml")
    res = report_model.analyse(sc, sensitivity=False)
    row = next(r for r in res.rows if r.rank == 1)
    slow = row.latency_p95_s * (1 + row.evidence.high_error)
    line = report_model.evidence_sentence(sc, row)
    assert (slow > sc.p95_latency_s) == ("p95 holds only at the estimate" in line)
    assert f"a request takes {slow:,.1f} s or more" in line or f"a request takes about {slow:,.1f} s," in line


def test_a_service_sized_with_no_latency_target_says_how_long_a_request_takes():
    """Buyer pass: with no max_latency_s each copy runs at the largest batch its cache holds; the summary says what
    a request then takes (GPUS_FOR_TRAFFIC's latency_ms for the winner's GPU at the same load), and with a target
    it says whether the target holds instead."""
    rpm, out = 1000, 256
    args = ("serve", "Llama 3.1 405B", "fp8", "cost", "", "", rpm / 60 * out, "", "auto", 0)
    gpu = udfs.call("GPU_RECOMMEND", *args, "gpu", 1024, out)
    text = udfs.call("GPU_RECOMMEND", *args, "summary", 1024, out)
    latency = udfs.call("GPUS_FOR_TRAFFIC", "Llama 3.1 405B", gpu, rpm, 1024, out, "", "", "fp8", "", "", 0,
                        "latency_ms") / 1000
    batch = udfs.call("GPUS_FOR_TRAFFIC", "Llama 3.1 405B", gpu, rpm, 1024, out, "", "", "fp8", "", "", 0, "batch")
    assert f"; a request takes {latency:,.1f} s at the p95 (the wait for a slot and the whole answer at batch {batch};" \
        in text and latency > 60            # minutes for a 256-token answer: what the count buys
    bounded = udfs.call("GPU_RECOMMEND", *args, "summary", 1024, out, "", "datacenter", "", "", False, 1, 30)
    assert "s at the p95 (the wait for a slot" not in bounded and "the 30 s p95" in bounded
