"""One definition per money figure (issue 19 item 5): a GPU's purchase price comes from one
function (catalog.gpu_price) wherever it is shown."""

import pytest

import udfs
from udfs.physics import capacity
from udfs.catalogs import catalog
from udfs.planning import scenario, sweep

BASIS_FIELD = {"card": "price_usd", "system": "system_price_usd", "lesson": "lesson_price_usd"}


def _price_column(table) -> dict:
    records = table.to_records()
    return {r["GPU"]: (r["Price_USD"], r["Price_basis"]) for r in records}


@pytest.mark.parametrize("basis", sorted(BASIS_FIELD))
def test_gpu_compare_and_gpu_spec_prices_agree_for_every_gpu(basis):
    names = ",".join(g.name for g in catalog.gpus())
    shown = _price_column(udfs.call("GPU_COMPARE", names, "none", basis))
    assert set(shown) == {g.name for g in catalog.gpus()}
    for g in catalog.gpus():
        price, label = shown[g.name]
        if price is None:               # no sourced price: GPU_SPEC says so (#N/A naming it), GPU_COMPARE blank
            with pytest.raises(udfs.FlopsheetError, match=BASIS_FIELD[basis]):
                udfs.call("GPU_SPEC", g.name, BASIS_FIELD[basis])
            assert label == ""
            continue
        assert price == udfs.call("GPU_SPEC", g.name, BASIS_FIELD[basis]), (g.name, basis)
        assert label == basis


def test_gpu_list_prices_are_gpu_spec_prices():
    listed = udfs.call("GPU_LIST").to_records()
    for row in listed:
        for field in ("price_usd", "system_price_usd"):
            if row[field] is not None:
                assert row[field] == udfs.call("GPU_SPEC", row["name"], field)
    assert sum(1 for r in listed if r["price_usd"]) >= 10


def test_default_compare_shows_todays_card_price():
    """The default is today's catalog card price, as GPU_SPEC(..., "price_usd") (the lesson's set)."""
    shown = _price_column(udfs.call("GPU_COMPARE"))
    assert shown["H100 SXM 80GB"] == (udfs.call("GPU_SPEC", "H100", "price_usd"), "card")
    assert shown["H100 SXM 80GB"][0] != catalog.gpu("H100").lesson_price_usd   # the card, not the lesson's


def test_lesson_table_reproduced_with_the_lesson_prices():
    """build_gpu_comparison_dataframe's Price_USD, with price = lesson (bandwidths are the catalog's:
    the vendor's, docs/errata.md)."""
    lesson = {"H100 SXM 80GB": 30000, "A100 SXM 80GB": 12000, "A100 SXM 40GB": 8000, "L40S 48GB": 9000,
              "RTX 4090 24GB": 1600, "RTX 3090 24GB": 700, "A10G 24GB": 2500}
    rows = udfs.call("GPU_COMPARE", "lesson", "none", "lesson").to_records()
    assert [r["GPU"] for r in rows] == list(lesson)
    for r in rows:
        assert r["Price_USD"] == lesson[r["GPU"]] and r["Price_basis"] == "lesson"
        assert r["BW_per_kUSD"] == pytest.approx(r["Bandwidth_TBs"] * 1e6 / r["Price_USD"], rel=1e-12)


def test_unknown_price_basis_is_a_clear_error():
    with pytest.raises(udfs.FlopsheetError, match="price basis"):
        catalog.gpu_price(catalog.gpu("H100"), "street")


# ---------------------------------------------------------------- cost per token: one definition
# a sample of models (dense, GQA, MoE, sliding-window), GPUs and formats, each served on a group that holds it
SAMPLE = [("Llama 3.1 70B", "H100", "fp8", 1000, 200, 1), ("Llama 3.1 70B", "H100", "bf16", 1000, 200, 2),
          ("Llama 2 7B", "A100 SXM 80GB", "fp16", 2048, 256, 1), ("Llama 3.1 8B", "L40S", "fp8", 512, 512, 1),
          ("Mixtral 8x7B", "H200", "bf16", 1024, 256, 2), ("Llama 3.3 70B", "MI300X", "bf16", 4096, 1024, 1),
          ("Qwen3 32B", "RTX 4090", "int4", 256, 128, 2), ("Llama 3.1 8B", "L4", "bf16", 1024, 128, 1)]
PRICE = 3.2


@pytest.mark.parametrize("model,gpu,precision,prompt,output,n", SAMPLE)
def test_cost_per_output_token_is_price_over_serving_throughput(model, gpu, precision, prompt, output, n):
    """Issue 19's identity: COST_PER_1M_OUTPUT_TOKENS(p, model, gpu, precision, prompt_tokens, output_tokens,
    n_gpus) = p x n_gpus / (SERVING_THROUGHPUT x 3600) x 1e6 for the same inputs."""
    tps = udfs.call("SERVING_THROUGHPUT", model, gpu, precision, prompt, output, n)
    cost = udfs.call("COST_PER_1M_OUTPUT_TOKENS", PRICE, model, gpu, precision, prompt, output, n)
    assert cost == pytest.approx(PRICE * n / (tps * 3600) * 1e6, rel=1e-12)


@pytest.mark.parametrize("model,gpu,precision,prompt,output,n", SAMPLE[:4])
def test_input_output_and_blended_price_the_same_request(model, gpu, precision, prompt, output, n):
    """A request costs output cost x output tokens = blended x all its tokens; the input figure is
    the prefill's share of it (not a second charge)."""
    args = (PRICE, model, gpu, precision, prompt, output, n)
    out, inp, blended = (udfs.call(f, *args) for f in ("COST_PER_1M_OUTPUT_TOKENS", "COST_PER_1M_INPUT_TOKENS",
                                                       "BLENDED_COST_PER_1M_TOKENS"))
    request = out * output
    assert blended * (prompt + output) == pytest.approx(request, rel=1e-12)
    assert 0 < inp * prompt < request
    point = capacity.serving_point(catalog.model(model), catalog.gpu(gpu), precision, prompt, output, n)
    assert inp * prompt == pytest.approx(request * point.prefill_share, rel=1e-12)


def test_prefill_share_is_the_prefill_time_in_the_time_per_output_token():
    """Charging prefill: with no prefill (a 1-token prompt) the share is ~0 and the cost per output
    token falls; the longer the prompt, the more of the GPUs' time goes to prefill."""
    m, g = catalog.model("Llama 3.1 8B"), catalog.gpu("H100")
    shares = [capacity.serving_point(m, g, "fp8", p, 256, 1, batch=32).prefill_share for p in (1, 1000, 8000)]
    assert shares[0] < 0.01 < shares[1] < shares[2] < 1
    costs = [udfs.call("COST_PER_1M_OUTPUT_TOKENS", PRICE, m.name, "H100", "fp8", p, 256, 1, "", "", "", 32)
             for p in (1, 1000)]
    assert costs[0] < costs[1]


def test_batch_given_prices_that_operating_point():
    args = ("Llama 3.1 8B", "H100", "fp8", 1000, 200, 1)
    tps = capacity.serving_point(catalog.model(args[0]), catalog.gpu(args[1]), "fp8", 1000, 200, 1, batch=8)
    cost = udfs.call("COST_PER_1M_OUTPUT_TOKENS", PRICE, *args, "", "", "", 8)
    assert cost == pytest.approx(PRICE / (tps.tokens_per_sec * 3600) * 1e6, rel=1e-12)
    assert cost > udfs.call("COST_PER_1M_OUTPUT_TOKENS", PRICE, *args)       # batch 8 < the point's batch


def test_report_figure_is_the_same_definition_over_the_tokens_served():
    """The report's $ per 1M output tokens = COST_PER_1M_OUTPUT_TOKENS at the same rate x capacity /
    average output tokens/s served (burst headroom, whole copies and the average load leave GPUs idle)."""
    sc = scenario.parse('''
        name = "issue 19's deployment"
        [workload]
        kind = "serve"
        model = "Llama 3.1 70B"
        precision = "fp8"
        requests_per_minute = 1000
        output_tokens_per_request = 200
        prompt_tokens_per_request = 1000
        [candidates]
        gpus = ["H100"]
        pricing = ["cloud"]
        [prices]
        "H100" = { usd_per_gpu_hour = 3.20 }
        ''')
    row = next(r for r in sweep.options(sc) if r.ok)
    full_use = udfs.call("COST_PER_1M_OUTPUT_TOKENS", 3.2, "Llama 3.1 70B", "H100", "fp8", 1000, 200,
                         row.gpus_per_copy)
    served = sc.requests_per_minute / 60 * sc.output_tokens_per_request * sc.ownership.utilization
    assert row.cost_per_1m == pytest.approx(full_use * row.capacity_tps / served, rel=1e-9)
    assert row.cost_per_1m > full_use / sc.ownership.utilization      # headroom and whole copies on top


def test_picker_prices_one_replica_as_cost_per_output_token():
    """GPU_RANK with no traffic sizes one model copy and its spare (N+1); its cost is
    COST_PER_1M_OUTPUT_TOKENS at the picker's rate for one copy (one definition, one operating point:
    the spare's GPUs and its capacity both count, so the cost per token is the copy's)."""
    rows = udfs.call("GPU_RANK", "serve", "Llama 3.1 70B", "fp8", "cost", "", "", "", "", "cloud", 0, 1000, 200,
                     "", "any").to_records()
    checked = 0
    for r in rows:
        if r["verdict"] != "OK" or r["count"] != 2 * r["gpus_per_copy"]:     # a copy and its spare, no rounding
            continue
        rate = catalog.cheapest_cloud_price(catalog.gpu(r["gpu"]).name).usd_per_gpu_hour
        same = udfs.call("COST_PER_1M_OUTPUT_TOKENS", rate, "Llama 3.1 70B", r["gpu"], "fp8", 1000, 200,
                         r["gpus_per_copy"])
        assert r["cost"] == pytest.approx(same, rel=1e-12), r["gpu"]
        checked += 1
    assert checked >= 3
