"""benchmarks/tp_decomposition.py: the tensor-parallel step by part is the step capacity.decode_step gives, and every
row at a stated load whose note states a per-token time is shown beside it."""

import sys
from dataclasses import replace
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from benchmarks import serving_accuracy as sa
from benchmarks import tp_decomposition as tpd
from udfs.catalogs import catalog
from udfs.physics import capacity, collectives

DIRECTORY = sa.default_dir()
pytestmark = pytest.mark.skipif(not (DIRECTORY / "inference_measured.csv").exists(),
                                reason="no measured inference rows")


@pytest.fixture(scope="module")
def cases():
    return sa.cases_of(DIRECTORY)


def _tp_dense(cases):
    return [c for c in cases if c.n_gpus > 1 and c.engine.multi_gpu == "tensor" and not c.model.is_moe
            and c.metric in ("decode_b1", "prefill")]


# Datasheet and config.json figures for the hand checks (the catalog rows' sources): H100 SXM's HBM3 3.35 TB/s and
# dense BF16 989.5 TFLOPS (NVIDIA's product page, 1,979 with sparsity / 2); Llama 3.1 70B's 70,553,706,496 parameters
# with an untied 128,256 x 8,192 input embedding (meta-llama/Llama-3.1-70B config.json); Qwen3-235B-A22B's
# 235,093,634,560 / 22,190,763,520 parameters (total / active, top-8), 128 routed experts 1,536 wide in each of 94
# layers at hidden 4,096 (gated: 3 matrices) and an untied 151,936 x 4,096 embedding (Qwen/Qwen3-235B-A22B config.json).
H100_BYTES_S, H100_BF16_FLOPS = 3.35e12, 989.5e12


def _one(cases, ref):
    return next(c for c in cases if c.ref == ref)


def _by_hand(case, params, streamed, gpus, batch):
    """(stream, products) in ms: the GPU's 1/gpus of `streamed` BF16 weight bytes at the engine's share of H100's
    bandwidth, and 2 FLOPs a product parameter a sequence at its share of the BF16 peak."""
    eng, gpu = case.engine, case.gpu
    stream = streamed * 2 / gpus / (H100_BYTES_S * eng.bandwidth_fraction(gpu))
    products = 2 * params * batch / gpus / (H100_BF16_FLOPS * eng.matmul_fraction(16))
    return stream * 1e3, products * 1e3


def test_dense_parts_by_hand(cases):
    """Llama 3.1 70B BF16 on 4 x H100 with SGLang (SGLang's benchmark_vllm_060 online run, 227 / 194 tokens): the weights
    part is the larger of reading a quarter of the 69.5B product parameters (the input embedding is a lookup) and their
    products, worked from the config and the datasheet; a dense model has no experts' part."""
    c = _one(cases, "inference_measured.csv:255")
    assert (c.model.name, c.gpu.name, c.n_gpus, c.engine.name) == ("Llama 3.1 70B", "H100 SXM 80GB", 4, "SGLang")
    params = 70_553_706_496 - 128_256 * 8_192
    for batch in (1, 32, 256):
        p = tpd.parts(c, batch)
        stream, products = _by_hand(c, params, params, 4, batch)
        assert (p["stream"], p["gemm"]) == (pytest.approx(stream, rel=1e-9), pytest.approx(products, rel=1e-9))
        assert p["weights"] == pytest.approx(max(stream, products), rel=1e-9)
        assert p["experts"] == 0
        assert 0 < p["ar_lat"] <= p["ar"]


def test_moe_parts_by_hand(cases):
    """Qwen3-235B-A22B BF16 on 8 x H100 with vLLM (GPUStack's burst row): the dense part reads and multiplies every
    weight outside the routed experts (7.37B of them), not the 21.6B a token multiplies with its 8 experts, which sit
    in the experts' part; the parts the table shows make up the step the estimate uses."""
    c = _one(cases, "inference_measured.csv:132")
    assert (c.model.name, c.gpu.name, c.n_gpus, c.engine.name) == ("Qwen3 235B-A22B", "H100 SXM 80GB", 8, "vLLM")
    expert, embedding = 94 * 3 * 4_096 * 1_536, 151_936 * 4_096
    streamed = 235_093_634_560 - embedding - 128 * expert
    params = 22_190_763_520 - embedding - 8 * expert
    for batch in (1, 64):
        p = tpd.parts(c, batch)
        stream, products = _by_hand(c, params, streamed, 8, batch)
        assert (p["stream"], p["gemm"]) == (pytest.approx(stream, rel=1e-9), pytest.approx(products, rel=1e-9))
        assert p["experts"] > 0
        assert max(p["stream"], p["gemm"]) + p["experts"] + p["kv"] + p["ar"] + p["fixed"] == pytest.approx(
            p["total"], rel=1e-9)
        step = capacity.decode_step(c.model, c.gpu, c.precision, batch, c.prompt + c.output / 2, 8, c.kv, c.engine)
        assert p["total"] == pytest.approx(step.total * 1e3, rel=1e-12)


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
        copies = r.case.n_gpus // r.gpus if r.case.metric == "max_throughput" else 1
        assert copies * r.batch / ((p["total"] + r.prefill_ms) / 1e3) == pytest.approx(r.estimate, rel=1e-6), r.case.ref


def test_a_measured_step_by_hand(loaded):
    """The measured step of one row, worked from its figures in inference_measured.csv (line 40: LLaMA 70B, read as
    Llama 2 70B, FP8 on 2 x H100 SXM 80GB with TensorRT-LLM, TP2, a static batch of 64 at 2,048 in / 2,048 out,
    547 output tokens/s per GPU): the two GPUs give 547 x 2 = 1,094 tokens/s, one token for each of the 64 sequences
    a step, so a step takes 64 / 1,094 s = 58.50 ms (one copy: a fixed batch runs on all the row's GPUs)."""
    r = next(r for r in loaded if r.case.ref == "inference_measured.csv:40")
    assert (r.case.model.name, r.case.gpu.name, r.case.engine.name) == ("Llama 2 70B", "H100 SXM 80GB", "TensorRT-LLM")
    assert (r.case.metric, r.case.n_gpus, r.gpus, r.batch) == ("fixed_batch", 2, 2, 64)
    assert r.measured_step_ms == pytest.approx(64 / (547 * 2) * 1e3, rel=1e-9)
    assert round(r.measured_step_ms, 2) == 58.50


def test_each_regime_counts_every_row_once(loaded):
    lines = tpd.by_regime(loaded)
    for metric in ("max_throughput", "fixed_batch"):
        n = sum(r.case.metric == metric for r in loaded)
        for dimension in ("engine", "layout", "link", "vendor"):
            counts = [int(line.split()[-4]) for line in lines[1:]
                      if line.split()[:2] == [metric, dimension]]
            assert sum(counts) == n, (metric, dimension)


def test_the_product_rate_factor_gives_the_measured_figure_back(loaded):
    """Where it is shown, the estimate re-run with the engine's product shares that much higher (every format's, as
    the row's products and prefill run) comes within 5% of the row's measured figure, at the same batch: the factor
    counts the prefill's attention, reads and launches as products, the approximation the 5% allows for. It is shown
    on some rows only (where the products are half the step or more)."""
    shown = [r for r in loaded if r.product_rate_factor is not None]
    assert shown and len(shown) < len(loaded)
    for r in shown:
        c, eng, factor = r.case, r.case.engine, r.product_rate_factor
        faster = replace(eng, matmul_fraction_16=eng.matmul_fraction_16 * factor,
                         matmul_fraction_8=eng.matmul_fraction_8 * factor, matmul_fraction_4=eng.matmul_fraction_4 * factor)
        if c.metric == "max_throughput" or c.continuous:
            copies = c.n_gpus // r.gpus if c.metric == "max_throughput" else 1
            rerun = copies * capacity.serving_point(c.model, c.gpu, c.precision, c.prompt, c.output, r.gpus, None,
                                                    faster, c.kv, batch=int(r.batch)).tokens_per_sec
        else:
            rerun = sa.estimate(c, faster)
        assert rerun / c.measured == pytest.approx(1, abs=0.05), c.ref
