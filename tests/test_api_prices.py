"""Self-hosting against a hosted API: the dated, sourced API price table, the offer a model is
compared with, and the report's comparison (per request, per month, break-even traffic)."""

from __future__ import annotations

from pathlib import Path

import pytest

import udfs
from udfs.catalogs import catalog
from udfs.errors import FlopsheetError
from udfs.planning import api_compare, report_model, scenario
from udfs.planning.api_compare import MINUTES_PER_MONTH

ROOT = Path(__file__).resolve().parents[1]


def test_every_api_price_is_sourced_dated_and_names_its_model():
    rows = catalog.api_prices()
    assert rows and {p.open_weight for p in rows} == {True, False}
    for p in rows:
        assert p.source and p.as_of and p.provider and p.model
        assert p.usd_per_1m_input is not None and p.usd_per_1m_output is not None
        assert 0 <= p.usd_per_1m_input <= p.usd_per_1m_output * 10
        if p.open_weight:                     # an open-weight offer serves a catalog model
            assert catalog.model(p.model).name == p.model


def test_the_offer_is_the_cheapest_for_the_same_model_at_the_mix():
    offer = api_compare.offer_for(catalog.model("Llama 3.1 8B"), 1024, 256)
    same = [p for p in catalog.api_prices() if p.model == "Llama 3.1 8B"]
    assert len(same) >= 2 and offer is not None and offer.match == "same model"
    assert offer.price.blended(1024, 256) == min(p.blended(1024, 256) for p in same)


def test_a_model_no_api_lists_takes_the_nearest_size_class_or_none():
    offer = api_compare.offer_for(catalog.model("Qwen2.5 72B"), 1024, 256)
    assert offer is not None and offer.match.startswith("size class of ")
    near = catalog.model(offer.price.model)
    assert 1 / api_compare.CLASS_RATIO <= near.total_params / catalog.model("Qwen2.5 72B").total_params <= 1.5
    assert api_compare.offer_for(catalog.model("Qwen3 0.6B"), 1024, 256) is None   # nothing within 1.5x


@pytest.mark.parametrize("name", ["serve-8b", "serve-70b"])
def test_every_serving_report_compares_with_an_api_by_hand(name):
    sc = scenario.load(ROOT / "examples" / f"{name}.toml")
    res = report_model.analyse(sc, sensitivity=False)
    a, best = res.api, res.best
    assert a is not None and best is not None
    requests = sc.tokens_per_month / sc.output_tokens_per_request
    per_request = (a.usd_per_1m_input * sc.prompt_tokens_per_request
                   + a.usd_per_1m_output * sc.output_tokens_per_request) / 1e6
    assert a.api_usd_per_request == pytest.approx(per_request)
    assert a.api_usd_per_month == pytest.approx(per_request * requests)
    assert a.self_host_usd_per_month == pytest.approx(best.total_cost)
    assert a.self_host_usd_per_request == pytest.approx(best.total_cost / requests)
    assert a.breakeven_requests_per_minute == pytest.approx(best.total_cost / per_request / MINUTES_PER_MONTH)
    assert a.cheaper == ("the API" if a.api_usd_per_month < best.total_cost else "self-hosting")
    doc = report_model.summary(res).to_json()["api_comparison"]
    assert doc["provider"] == a.provider and doc["api_usd_per_month"] == pytest.approx(a.api_usd_per_month)
    sentence = report_model.api_sentence(res)
    assert a.provider in sentence and f"${a.api_usd_per_month:,.0f}" in sentence


def test_training_reports_have_no_api_comparison():
    res = report_model.analyse(scenario.load(ROOT / "examples" / "pretrain-7b.toml"), sensitivity=False)
    assert res.api is None and report_model.summary(res).to_json()["api_comparison"] is None


def test_api_price_list_shows_the_compared_offer_then_the_frontier():
    table = udfs.call("API_PRICE_LIST", "Llama 3.3 70B", 1000, 200)
    rows = [dict(zip(table.header, r)) for r in table.rows]
    assert rows[0]["model"] == "Llama 3.3 70B" and rows[0]["match"] == "same model"
    assert all(not r["open_weight"] and r["match"].startswith("frontier") for r in rows[1:])
    assert len(udfs.call("API_PRICE_LIST").rows) == len(catalog.api_prices())


def test_a_private_api_price_overrides_and_a_new_row_must_say_if_it_is_open_weight(tmp_path, monkeypatch):
    (tmp_path / "api_prices.csv").write_text("provider,model,usd_per_1m_input,usd_per_1m_output\n"
                                             "DeepInfra,Llama 3.1 8B,0.5,0.5\n")
    monkeypatch.setenv("FLOPSHEET_CATALOG", str(tmp_path))
    catalog.reload()
    try:
        offer = api_compare.offer_for(catalog.model("Llama 3.1 8B"), 1024, 256)
        assert offer is not None and offer.price.provider != "DeepInfra"      # 0.5 is no longer the cheapest
        (tmp_path / "api_prices.csv").write_text("provider,model,usd_per_1m_input,usd_per_1m_output\n"
                                                 "MyCo,Llama 3.1 8B,0.01,0.02\n")
        catalog.reload()
        with pytest.raises(FlopsheetError, match="open_weight"):
            catalog.api_prices()
    finally:
        monkeypatch.delenv("FLOPSHEET_CATALOG")
        catalog.reload()


def test_the_inference_plan_starts_at_the_catalogs_api_offer_for_its_default_model():
    from workbook_templates import inference_plan
    offer = api_compare.offer_for(catalog.model(inference_plan.DEFAULT_MODEL), inference_plan.DEFAULT_PROMPT,
                                  inference_plan.DEFAULT_OUTPUT)
    assert offer is not None and inference_plan.default_api_offer() == offer
    assert offer.price.usd_per_1m_output < 1          # a 7B model's price class, not a frontier API's $15
