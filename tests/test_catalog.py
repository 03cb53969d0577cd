"""Catalog integrity: sources and dates on every row, plausible units, dense figures only."""

import re

import pytest

from udfs.catalogs import catalog

DATE = re.compile(r"^\d{4}-\d{2}(-\d{2})?$")
TABLES = {"gpus": catalog.gpus, "cloud": catalog.cloud_prices, "models": catalog.models,
          "precisions": catalog.precisions}


@pytest.mark.parametrize("table", TABLES)
def test_every_row_has_source_and_as_of(table):
    rows = TABLES[table]()
    assert rows
    for row in rows:
        assert row.source.strip(), row
        assert DATE.match(row.as_of), (row, row.as_of)


@pytest.mark.parametrize("gpu", catalog.gpus(), ids=lambda g: g.name)
def test_gpu_units_plausible(gpu):
    # GB as the vendor states it (unified memory: Apple's largest configurations reach 512)
    assert 8 <= gpu.memory_gb <= (512 if gpu.memory_type == "Unified memory" else 300)
    assert 0.1 <= gpu.bandwidth_tbs <= 10                 # TB/s, not GB/s
    assert gpu.tdp_w is None or 50 <= gpu.tdp_w <= 1500
    assert gpu.price_usd is None or 300 <= gpu.price_usd <= 100_000
    # Dense tensor figures: each narrower format at least as fast as the wider one, and
    # no tensor figure below the FP32 vector rate.
    order = [gpu.tf32_tflops, gpu.bf16_tflops, gpu.fp8_tflops, gpu.fp4_tflops]
    present = [x for x in order if x]
    assert present == sorted(present), gpu.name
    if gpu.fp32_tflops and gpu.bf16_tflops:
        assert gpu.bf16_tflops >= gpu.fp32_tflops


@pytest.mark.parametrize("name,field,value", [
    ("H100 SXM 80GB", "bf16_tflops", 989.5),       # the lesson's 312 is the A100's
    ("L40S 48GB", "bf16_tflops", 362.05),          # the lesson's 91.6 is FP32
    ("RTX 4090 24GB", "bf16_tflops", 165.2),       # the lesson's 82.6 is FP32
    ("H100 PCIe 80GB", "bandwidth_tbs", 2.0), ("H100 NVL 94GB", "bandwidth_tbs", 3.9),
    ("H200 SXM 141GB", "bandwidth_tbs", 4.8), ("A100 SXM 80GB", "bf16_tflops", 312)])
def test_datasheet_figures_where_the_lesson_is_wrong(name, field, value):
    assert getattr(catalog.gpu(name), field) == value


def test_dense_is_half_of_sparse_for_h100():
    # NVIDIA's datasheet quotes 1,979 TFLOPS BF16 *with sparsity*; the catalog holds dense.
    assert catalog.gpu("H100").bf16_tflops * 2 == pytest.approx(1979, rel=1e-3)


def test_cloud_rows_reference_catalog_gpus_and_add_up():
    names = set(catalog.gpu_names())
    for p in catalog.cloud_prices():
        assert p.gpu in names, p
        assert p.pricing in catalog.PRICINGS and p.status in catalog.PRICE_SETS, p
        if p.usd_per_hour and p.usd_per_gpu_hour and p.gpu_count:
            assert p.usd_per_hour == pytest.approx(p.usd_per_gpu_hour * p.gpu_count, rel=0.01), p


def test_g5_has_a10g_not_l40s():
    assert {p.gpu for p in catalog.cloud_prices() if p.instance == "g5.48xlarge"} == {"A10G 24GB"}
    assert catalog.cloud_price("p5.48xlarge").usd_per_hour == 55.04


def test_models_have_architecture_and_moe_active_params():
    for m in catalog.models():
        assert m.layers and m.hidden and m.heads and m.vocab and m.params, m.name
        assert (m.kv_heads or m.heads) <= m.heads
        if m.is_moe:
            assert m.active_params and m.active_params < m.params
    assert catalog.model("DeepSeek-V3").active_params == pytest.approx(37e9, rel=0.02)


@pytest.mark.parametrize("gpu", catalog.gpus(), ids=lambda g: g.name)
def test_usable_memory_is_sourced_or_says_unmeasured(gpu):
    # What CUDA / ROCm reports is below the nameplate read as GiB (the driver keeps some; ECC on GDDR keeps
    # 1/16), never above it, and not far below: a figure typed in GB or MiB by mistake fails here.
    assert DATE.match(gpu.usable_as_of), gpu.usable_as_of
    if gpu.usable_gib is None:
        assert "unmeasured" in gpu.usable_source and gpu.memory_gib == gpu.memory_gb
        return
    assert 0.9 * gpu.memory_gb <= gpu.usable_gib < gpu.memory_gb, gpu.name
    assert gpu.memory_gib == gpu.usable_gib
    assert "http" in gpu.usable_source, gpu.usable_source          # a published report or a documented rule


def test_every_memory_budget_reads_the_usable_memory():
    # One figure: the fit of serving (the engine's share of what CUDA reports), training memory, the
    # lesson's GPUS_NEEDED given a GPU name and GPU_COMPARE's fit all read Gpu.memory_gib.
    import udfs
    from udfs.catalogs import engines
    from udfs.physics import capacity, training_memory
    l40s = catalog.gpu("L40S")
    assert l40s.usable_gib is not None and l40s.usable_gib < l40s.memory_gb
    vllm = engines.engine("vLLM")
    assert capacity.usable_gib(l40s, vllm, 0.0) == pytest.approx(l40s.usable_gib * vllm.memory_fraction)
    trt = engines.engine("TensorRT-LLM")      # rule "free": its share of what the weights and reserve leave
    assert capacity.usable_gib(l40s, trt, 10.0) == pytest.approx(10.0 + (l40s.usable_gib - 10.0) * trt.memory_fraction)
    assert training_memory.usable_gib(l40s) == l40s.usable_gib
    # 2 x (usable - 2) GiB lies between the usable and the nameplate: one GPU too few on the nameplate
    need = (l40s.usable_gib - 2) * 2 + (l40s.memory_gb - l40s.usable_gib) / 2
    assert udfs.call("GPUS_NEEDED", need, "L40S", 2) == 3
    assert udfs.call("GPUS_NEEDED", need, l40s.memory_gb, 2) == 2


def test_compare_fit_reads_model_gb_against_cuda_gib():
    # A model file's size is decimal GB; a GPU's usable memory is GiB. RTX 4090: 23.64 GiB reported.
    # 23.7 GB = 23.7e9 / 2^30 = 22.07 GiB fits: 1.008 TB/s x 0.7 / 23.7 GB = 29.77 tokens/s.
    # 25.5 GB = 23.75 GiB does not (blank).
    from udfs.api.functions.catalogs import compare_row
    rtx = catalog.gpu("RTX 4090")
    assert rtx.memory_gib == 23.64
    assert compare_row(rtx, 23.7)[11] == pytest.approx(29.77, abs=0.01)
    assert compare_row(rtx, 25.5)[11] is None
