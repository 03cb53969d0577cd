"""One definition per money figure (issue 19 item 5): a GPU's purchase price comes from one
function (catalog.gpu_price) wherever it is shown."""

import pytest

import udfs
from udfs import catalog

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
        spec = udfs.call("GPU_SPEC", g.name, BASIS_FIELD[basis])
        price, label = shown[g.name]
        assert price == (spec if spec != "" else None), (g.name, basis)
        assert label == (basis if price else "")


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
