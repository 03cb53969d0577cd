"""engines.csv in a private catalog (issue 13 names it beside gpus, models and cloud): a row
overrides the cells it fills of a packaged engine, a new engine is usable by name, and a bad
row is refused with file, line and column."""

import pytest

from udfs.catalogs import catalog, engines
from udfs.api import registry
from udfs.errors import FlopsheetError

ENGINE_COLUMNS = ("name,aliases,multi_gpu,memory_rule,memory_fraction,activation_reserve_gib,kv_reservation,"
                  "kv_precision,precisions,bandwidth_fraction_hbm,bandwidth_fraction_gddr,quantized_factor,"
                  "layer_overhead_us,step_overhead_us,matmul_fraction_16,matmul_fraction_8,matmul_fraction_4,"
                  "family,max_num_tokens,max_batch,large_gpu_max_batch,source,as_of\n")
ACME = (f"Acme Serve,acme,tensor,total,{engines.engine('vLLM').memory_fraction:g},1.5,mean,16bit,fp8;fp16,"  # vLLM's
        "0.80,0.90,0.90,"
        f"{engines.engine('vLLM').layer_overhead_us:g},300,0.70,0.45,0.35,vLLM,8192,256,1024,ours,2026-11\n")


@pytest.fixture
def private(private_catalog):
    """A private catalog folder holding one engines.csv (conftest.private_catalog)."""
    return lambda text: private_catalog("engines.csv", text)


def _throughput(engine):
    return registry.call("SERVING_THROUGHPUT", "Llama 3 8B", "H100", engine=engine)


def test_override_changes_only_the_cells_given(private):
    before = _throughput("vLLM")
    private("name,memory_fraction\nvllm,0.95\n")
    after = _throughput("vLLM")
    assert after > before                                   # more memory for the KV cache: a larger batch
    assert registry.call("SERVING_BATCH", "Llama 3 8B", "H100", engine="vLLM") > 0


def test_new_engine_is_usable_by_name_and_alias(private):
    vllm = _throughput("vLLM")
    private(ENGINE_COLUMNS + ACME)
    assert _throughput("Acme Serve") == _throughput("acme") == vllm    # vLLM's figures under a new name


@pytest.mark.parametrize("row,where,message", [
    (ACME.replace("tensor,total", "tensor,totl"), "line 2, column memory_rule", "must be one of total, free"),
    (ACME.replace(",0.80,0.90,0.90,", ",1.8,0.90,0.90,"), "line 2, column J (bandwidth_fraction_hbm)", "must be > 0 and <= 1"),
    (ACME.replace("fp8;fp16", "fp8;fp17"), "line 2, column precisions", "unknown number format 'fp17'"),
])
def test_bad_engine_row_is_refused_with_file_line_and_column(private, row, where, message):
    private(ENGINE_COLUMNS + row)
    with pytest.raises(FlopsheetError) as e:
        _throughput("Acme Serve")
    assert where in e.value.message and message in e.value.message


def test_new_engine_row_must_be_complete(private):
    private("name,multi_gpu\nHalf Engine,tensor\n")
    with pytest.raises(FlopsheetError) as e:
        _throughput("vLLM")
    assert "memory_rule" in e.value.message and "is required for a new row" in e.value.message


def test_catalog_check_covers_engines(tmp_path):
    (tmp_path / "engines.csv").write_text(ENGINE_COLUMNS + ACME.replace("tensor,total", "tensor,totl"))
    problems, summary = catalog.check_folder(tmp_path)
    assert any(p.column == "memory_rule" and p.line == 2 for p in problems)
    assert summary == ["engines.csv:2: Acme Serve"]
