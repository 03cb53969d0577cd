"""benchmarks/moe_breakdown.py takes a MoE row's time per output token apart as the model computes it: its parts add
up to capacity._tpot_s at the operating point, and the measured step is the row's own arithmetic."""

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from benchmarks import moe_breakdown as mb
from benchmarks import serving_accuracy as sa
from udfs.catalogs.catalog import as_precision
from udfs.physics import capacity

DIRECTORY = sa.default_dir()
pytestmark = pytest.mark.skipif(not (DIRECTORY / "inference_measured.csv").exists(), reason="no measured rows")


@pytest.fixture(scope="module")
def rows():
    return mb.selected(sa.cases_of(DIRECTORY))


def test_it_selects_steady_moe_rows_only(rows):
    assert rows and all(c.model.is_moe and not c.burst for c in rows)
    assert {c.metric for c in rows} == {"max_throughput", "fixed_batch"}


def test_the_parts_add_up_to_the_models_time_per_token(rows):
    dp = [c for c in rows if c.engine.dp_attention and not c.engine.dp_balance][:2]
    for case in rows[:3] + dp:
        s = mb.parts(case)
        n = sa.copy_gpus(case)
        whole = capacity._tpot_s(case.model, case.gpu, as_precision(case.precision), case.prompt, case.output, n,
                                 case.kv or case.engine.kv_format(case.precision), case.engine, s.batch)
        assert s.modelled_s == pytest.approx(whole, rel=1e-9)
    assert dp and all(mb.parts(c).wait > 0 for c in dp)


def test_the_measured_step_is_the_rows_batch_over_its_rate(rows):
    case = next(c for c in rows if c.metric == "fixed_batch" and c.n_gpus == 8 and c.batch >= 1024)
    s = mb.parts(case)
    assert s.batch == case.batch
    assert s.measured_s == pytest.approx(case.batch / case.measured)


def test_the_experts_part_is_the_routed_experts_of_the_step(rows):
    """`experts` is moe.expert_seconds at the row's layout, part of `weights`: on an expert-parallel row the busiest
    GPU's whole experts, on a tensor-parallel one a slice of every touched expert."""
    from udfs.physics import moe
    for layout in ("EP8", "TP8"):
        case = next(c for c in rows if mb.parts(c).layout == layout)
        s, p = mb.parts(case), as_precision(case.precision)
        bandwidth = capacity._bandwidth(case.gpu, p, case.engine)
        rate = capacity._decode_flops(case.gpu, p, case.engine, s.batch)
        tp, ep = (1, 8) if layout == "EP8" else (8, 1)
        params = case.model.expert_params / case.model.moe_layer_count / tp
        assert s.experts == pytest.approx(moe.expert_seconds(case.model, s.batch, params, p.bytes_per_param, bandwidth,
                                                             rate, ep=ep), rel=1e-12)
        assert 0 < s.experts < s.weights
        assert s.touched_mean <= s.touched_max
