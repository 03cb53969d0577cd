"""benchmarks/tp_decomposition.py: the tensor-parallel step by part is the step capacity.decode_step gives, and every
row at a stated load whose note states a per-token time is shown beside it."""

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from benchmarks import serving_accuracy as sa
from benchmarks import tp_decomposition as tpd
from udfs.catalogs import catalog
from udfs.physics import collectives

DIRECTORY = sa.default_dir()
pytestmark = pytest.mark.skipif(not (DIRECTORY / "inference_measured.csv").exists(),
                                reason="no measured inference rows")


@pytest.fixture(scope="module")
def cases():
    return sa.cases_of(DIRECTORY)


def _tp_dense(cases):
    return [c for c in cases if c.n_gpus > 1 and c.engine.multi_gpu == "tensor" and not c.model.is_moe
            and c.metric in ("decode_b1", "prefill")]


def test_parts_make_up_the_step(cases):
    """The weights part is the larger of streaming and the products, and the parts add up to the step."""
    rows = _tp_dense(cases)
    assert rows
    for c in rows:
        for batch in (1, 32, 256):
            p = tpd.parts(c, batch)
            assert p["weights"] == pytest.approx(max(p["stream"], p["gemm"]), rel=1e-9), c.ref
            assert p["experts"] == pytest.approx(0, abs=1e-9), c.ref
            assert p["weights"] + p["kv"] + p["ar"] + p["fixed"] == pytest.approx(p["total"], rel=1e-9), c.ref
            assert 0 < p["ar_lat"] <= p["ar"], c.ref


def test_a_moe_step_shows_its_experts(cases):
    """A MoE model's routed experts sit on top of the dense weights' part, and the parts still make up the step."""
    moe = [c for c in cases if c.model.is_moe and c.n_gpus > 1 and c.engine.multi_gpu == "tensor" and not c.engine.dp_attention
           and c.metric in ("decode_b1", "prefill", "fixed_batch")]
    assert moe
    for c in moe[:5]:
        p = tpd.parts(c, 8)
        assert p["experts"] > 0, c.ref
        assert max(p["stream"], p["gemm"]) + p["experts"] + p["kv"] + p["ar"] + p["fixed"] == pytest.approx(p["total"]), c.ref


def test_all_reduce_grows_with_the_tokens(cases):
    """Messages are tokens x hidden x 2 bytes: the bytes part grows with the batch, the latency part does not."""
    c = next(c for c in _tp_dense(cases) if c.gpu.name.startswith("H100"))
    small, large = tpd.parts(c, 1), tpd.parts(c, 256)
    assert large["ar_lat"] == pytest.approx(small["ar_lat"])
    assert large["ar"] - large["ar_lat"] > 100 * (small["ar"] - small["ar_lat"])


def test_every_row_at_a_load_is_shown_with_its_stated_time(cases):
    notes = tpd._notes(DIRECTORY)
    lines = tpd.at_load(cases, notes)
    loaded = [c for c in cases if c.metric == "prefill" and (c.rate or c.concurrency) and c.n_gpus > 1]
    assert len(lines) == len(loaded) >= 7
    stated = [c for c in loaded if tpd._stated_ms(notes[c.ref], "TPOT")]
    assert len(stated) >= 6
    assert sum("TPOT" in line and "vs iteration" in line for line in lines) == len(stated)


def test_stated_times_are_read_from_the_note():
    assert tpd._stated_ms("median TPOT 25.03 ms, median ITL 21.67 ms", "TPOT") == 25.03
    assert tpd._stated_ms("median TPOT 25.03 ms, median ITL 21.67 ms", "ITL") == 21.67
    assert tpd._stated_ms("mean TPOT at this rate 14.12 ms; no fixed batch", "TPOT") == 14.12
    assert tpd._stated_ms("no per-token time", "TPOT") is None


def test_all_reduce_check_lists_every_timing():
    """One line per published timing, on the NVLink class the source's GPUs use."""
    lines = tpd.allreduce_check()
    assert len(lines) == 2 + len(tpd.ALLREDUCE_TIMINGS)
    assert collectives.link_class(catalog.gpu(tpd.ALLREDUCE_GPU), tpd.ALLREDUCE_GPUS).kind == "nvlink"


@pytest.fixture(scope="module")
def loaded(cases):
    return tpd.loaded_rows(cases)


def test_every_dense_row_of_many_sequences_is_shown(cases, loaded):
    """Each dense max-throughput and steady fixed-batch row once, on a copy whose GPUs divide the row's."""
    wanted = [c for c in cases if c.metric in ("max_throughput", "fixed_batch") and not c.burst and not c.model.is_moe]
    assert sorted(r.case.ref for r in loaded) == sorted(c.ref for c in wanted)
    assert any(r.gpus > 1 for r in loaded) and any(r.gpus == 1 for r in loaded)
    for r in loaded:
        assert r.case.n_gpus % r.gpus == 0 and r.batch >= 1, r.case.ref


def test_the_parts_and_the_prefill_make_up_the_estimate(loaded):
    """The decode step by part plus the prefill a step carries is the time per step the estimate divides the batch by:
    copies x batch / (step + prefill) gives the shipped estimate back, so the table leaves nothing out."""
    for r in loaded:
        p = r.parts
        assert p["weights"] + p["kv"] + p["ar"] + p["fixed"] == pytest.approx(p["total"], rel=1e-9), r.case.ref
        copies = r.case.n_gpus // r.gpus if r.case.metric == "max_throughput" else 1
        assert copies * r.batch / ((p["total"] + r.prefill_ms) / 1e3) == pytest.approx(r.estimate, rel=1e-6), r.case.ref
        assert r.measured_step_ms * r.case.measured == pytest.approx((p["total"] + r.prefill_ms) * r.estimate), r.case.ref


def test_each_regime_counts_every_row_once(loaded):
    lines = tpd.by_regime(loaded)
    for metric in ("max_throughput", "fixed_batch"):
        n = sum(r.case.metric == metric for r in loaded)
        for dimension in ("engine", "layout", "link", "vendor"):
            counts = [int(line.split()[-4]) for line in lines[1:]
                      if line.split()[:2] == [metric, dimension]]
            assert sum(counts) == n, (metric, dimension)


def test_the_product_rate_factor_gives_the_measured_step_back(loaded):
    """Where it is shown, running the products (the prefill counted as products) that much faster and keeping the rest
    of the step gives the step the row's measured tokens/s implies; it is shown only where the products are half the
    step or more."""
    shown = [r for r in loaded if r.product_rate_factor is not None]
    assert shown and len(shown) < len(loaded)
    for r in shown:
        p = r.parts
        assert p["gemm"] >= max(p["stream"], p["total"] / 2), r.case.ref
        rest = p["total"] - p["gemm"]
        assert rest + (p["gemm"] + r.prefill_ms) / r.product_rate_factor == pytest.approx(r.measured_step_ms), r.case.ref
