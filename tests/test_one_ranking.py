"""One ranking of options (picker.rank_key): GPU_RANK / GPU_RECOMMEND and a scenario report's sweep order options
the same way (issue 20, buyer pass: the serving time ranking was written twice, picker._sort_key and
sweep.sort_rows, and the two differed on ties)."""

from pathlib import Path

import pytest

from udfs.catalogs import catalog
from udfs.physics import economics
from udfs.planning import picker, report_model, scenario
from udfs.planning.sweep import options, sort_rows

EXAMPLES = Path(__file__).resolve().parents[1] / "examples"


def _option(name: str, cost: float, count: int, days: float | None = None, tps: float | None = None):
    gpu = catalog.gpu(name)
    return picker.Option(gpu.name, count, True, days, None, cost, "$", "cloud", per_request_tps=tps, gpu_row=gpu)


def test_a_tie_on_the_ranking_measure_goes_to_the_cheaper_then_to_fewer_gpus():
    # time: two jobs of 10 days; the picker ranked the 8-GPU one first on its count though it costs $10 to $5
    a, b = _option("H100", 10.0, 8, days=10.0), _option("A100", 5.0, 16, days=10.0)
    ranked = [a, b]
    picker.order(ranked, "time")
    assert ranked == [b, a]
    # cost: a tie in cost goes to fewer GPUs, then to the faster (40 tokens/s a request: 1/40 s a token)
    c, d, e = _option("H100", 7.0, 8, tps=20.0), _option("A100", 7.0, 8, tps=40.0), _option("L40S", 7.0, 4, tps=1.0)
    ranked = [c, d, e]
    picker.order(ranked, "cost")
    assert ranked == [e, d, c]
    # time, serving: the tokens/s each request sees, faster first, whatever the cost
    f, g = _option("H100", 9.0, 8, tps=50.0), _option("A100", 1.0, 8, tps=49.0)
    ranked = [g, f]
    picker.order(ranked, "time")
    assert ranked == [f, g]


def _scenario(name: str, objective: str, basis: str) -> scenario.Scenario:
    text = (EXAMPLES / f"{name}.toml").read_text(encoding="utf-8").replace('objective = "cost"',
                                                                              f'objective = "{objective}"')
    sc = scenario.parse(text)
    sc.pricing = (basis,)
    sc.counts = None
    sc.cloud_overrides, sc.purchase_overrides = {}, {}       # the catalog's prices and terms, as GPU_RANK has them
    sc.ownership = economics.Ownership()
    return sc


@pytest.mark.parametrize("name,basis", [("serve-8b", "owned"), ("serve-8b", "cloud"), ("qlora-70b", "cloud")])
@pytest.mark.parametrize("objective", ["cost", "time"])
def test_the_picker_and_the_report_rank_alike(name, basis, objective):
    """The report's options at the picker's own counts, at catalog prices, come in the picker's order."""
    sc = _scenario(name, objective, basis)
    rows = [r for r in sort_rows(sc, options(sc)) if r.ok and r.auto_count]
    ranked = picker.rank(sc.kind, sc.model, sc.precision, objective, None, sc.deadline_days, sc.work, sc.batch,
                         basis, sc.min_tokens_per_sec, sc.prompt_tokens_per_request, sc.output_tokens_per_request,
                         sc.engine, sc.tiers, include_unverified=sc.include_unverified, max_latency_s=sc.p95_latency_s,
                         spare=sc.spare)
    wanted = {r.gpu for r in rows}
    assert len(rows) >= 3
    assert [r.gpu for r in rows] == [o.gpu for o in ranked if o.ok and o.gpu in wanted]
    assert report_model.analyse(sc, sensitivity=False).best.gpu == rows[0].gpu
