"""The GPU catalog's figures are filled from sources (issue 21): what is still blank is listed here with
the reason, so a newly filled figure or a newly blank one fails a test."""

import pytest

import udfs
from udfs.catalogs import catalog

# GPUs with no published dense 16-bit tensor figure, and why (see each row's note).
NO_16BIT_FIGURE = {
    "A10G 24GB": "AWS-only part: NVIDIA publishes no A10G datasheet",
    "Apple M2 Ultra 192GB": "Apple publishes no TFLOPS",
    "Apple M3 Ultra 512GB": "Apple publishes no TFLOPS",
    "Apple M4 Max 128GB": "Apple publishes no TFLOPS",
}
ISSUE_21 = ["MI325X 256GB", "MI355X 288GB", "H20 96GB", "GB300 288GB", "B300 288GB"]


@pytest.mark.parametrize("gpu", catalog.gpus(), ids=lambda g: g.name)
def test_every_gpu_has_memory_bandwidth_and_a_16bit_tensor_figure(gpu):
    assert gpu.memory_gb and gpu.bandwidth_tbs
    has_16bit = bool(gpu.bf16_tflops or gpu.fp16_tflops)
    assert has_16bit != (gpu.name in NO_16BIT_FIGURE), (gpu.name, NO_16BIT_FIGURE.get(gpu.name))


def test_known_gaps_name_catalog_gpus():
    assert set(NO_16BIT_FIGURE) <= set(catalog.gpu_names())


@pytest.mark.parametrize("gpu", catalog.gpus(), ids=lambda g: g.name)
def test_lower_precision_is_never_slower_where_the_hardware_has_it(gpu):
    sixteen = gpu.bf16_tflops or gpu.fp16_tflops
    if gpu.fp8_tflops and sixteen:
        assert gpu.fp8_tflops >= sixteen
    if gpu.fp4_tflops and gpu.fp8_tflops:
        assert gpu.fp4_tflops >= gpu.fp8_tflops


def test_weight_only_int4_multiplies_at_the_16bit_rate():
    # Gaudi 3's FP16 matrix rate is a quarter of its BF16: int4 weights dequantise to BF16, not FP16
    for gpu in catalog.gpus():
        if gpu.name in NO_16BIT_FIGURE:
            continue
        sixteen = gpu.bf16_tflops or gpu.fp16_tflops          # BF16, FP16 where a GPU has no BF16 units (T4)
        assert gpu.tensor_peak("int4", "test").tflops == sixteen, gpu.name
    gaudi = catalog.gpu("Gaudi 3")
    assert gaudi.tensor_tflops("fp16") < gaudi.tensor_peak("int4", "test").tflops == gaudi.tensor_tflops("bf16")


@pytest.mark.parametrize("gpu", catalog.gpus(), ids=lambda g: g.name)
def test_every_row_names_its_source_and_date(gpu):
    assert len(gpu.source) > 20 and gpu.as_of[:2] == "20"
    if gpu.system_price_usd is not None:
        assert gpu.system_price_source and gpu.system_price_kind and gpu.system_gpus


@pytest.mark.parametrize("name,expected", [
    ("GB300", "GB300 288GB"), ("GB300 NVL72", "GB300 288GB"), ("NVIDIA GB300", "GB300 288GB"),
    ("B300", "B300 288GB"), ("HGX B300", "B300 288GB"),
])
def test_blackwell_ultra_rows_resolve_by_name(name, expected):
    assert catalog.gpu(name).name == expected


def test_gb300_is_a_rack_gpu_and_b300_an_hgx_board():
    gb300, b300 = catalog.gpu("GB300"), catalog.gpu("B300")
    assert (gb300.system_gpus, b300.system_gpus) == (72, 8)
    assert gb300.fp4_tflops == 15000 and gb300.bf16_tflops == 2500      # dense: NVIDIA's sparse / 2
    assert gb300.system_price_usd and b300.system_price_usd is None      # the NVL72 rack estimate is GB300's


@pytest.mark.parametrize("name", ISSUE_21)
def test_multi_gpu_accelerators_have_a_link_figure(name):
    gpu = catalog.gpu(name)
    assert gpu.interconnect_gbs and gpu.nvlink_class("test")
    assert udfs.call("GPU_SPEC", name, "interconnect_gbs") == gpu.interconnect_gbs


def test_links_are_recorded_bidirectional_like_nvlink():
    # NVLink 4 is 450 GB/s each way; the catalog records 900 for H100 and compares AMD links on the same basis
    assert catalog.gpu("H100").interconnect_gbs == 900
    assert catalog.gpu("MI300X").interconnect_gbs == catalog.gpu("MI325X").interconnect_gbs == 896
    assert catalog.gpu("MI355X").interconnect_gbs == pytest.approx(7 * 153.6)


def test_mi355x_needs_no_more_gpus_than_mi300x_for_70b():
    need = {g: udfs.call("GPUS_FOR_TRAFFIC", "Llama 3.1 70B", g, 1000, 1024, 200, "", "", "bf16")
            for g in ("MI300X", "MI355X")}
    assert need["MI355X"] <= need["MI300X"]
