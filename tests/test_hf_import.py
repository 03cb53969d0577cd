"""Hugging Face config.json import: parameter counts for every style the catalog holds,
checked against counts published with each model (exact where the source gives them)."""

import json
from pathlib import Path

import pytest

from udfs.catalogs import hf_config
from udfs.errors import FlopsheetError

CONFIGS = Path(__file__).parent / "data" / "hf_configs"

# fixture: (total, active or None, relative tolerance). Exact counts are the ones computed
# from each config in public write-ups; rounded ones are the model cards' (text model only).
EXPECTED = {
    "Qwen3-0.6B": (596_049_920, None, 0), "Qwen3-4B": (4_022_468_096, None, 0),
    "Qwen3-8B": (8_190_735_360, None, 0), "Qwen3-14B": (14_768_307_200, None, 0),
    "Qwen3-32B": (32_762_123_264, None, 0),
    "Qwen3-30B-A3B": (30.53e9, 3.35e9, 0.002), "Qwen3-235B-A22B": (235.09e9, 22.19e9, 0.001),
    "gpt-oss-20b": (20.91e9, None, 0.001), "gpt-oss-120b": (116.83e9, None, 0.0005),
    "Llama-4-Scout-17B-16E-Instruct": (107.8e9, 17.2e9, 0.002),
    "Llama-4-Maverick-17B-128E-Instruct": (400.7e9, 17.2e9, 0.002),
    "DeepSeek-V3": (671_026_419_200, 37_552_297_472, 0), "DeepSeek-R1": (671_026_419_200, 37_552_297_472, 0),
    "Mistral-Small-3.1-24B-Instruct-2503": (23.57e9, None, 0.001), "phi-4": (14_659_507_200, None, 0),
    "Qwen2.5-14B": (14_770_033_664, None, 0), "Qwen2.5-32B": (32_763_876_352, None, 0),
    "QwQ-32B": (32_763_876_352, None, 0), "Llama-3.2-1B": (1_235_814_400, None, 0),
    "Llama-3.2-3B": (3_212_749_824, None, 0),
}
# Gemma 3 Technical Report, Table 1: non-embedding parameters of the language model (millions).
GEMMA_NON_EMBEDDING = {"gemma-3-4b-it": 3_209e6, "gemma-3-12b-it": 10_759e6, "gemma-3-27b-it": 25_600e6}


def _row(fixture: str) -> dict:
    path = CONFIGS / f"{fixture}.json"
    config = hf_config.read(path)
    return hf_config.model_row(config, hf_config.default_name(config, path), str(path))


@pytest.mark.parametrize("fixture", EXPECTED)
def test_counts_match_published(fixture):
    total, active, rel = EXPECTED[fixture]
    row = _row(fixture)
    assert row["params"] == pytest.approx(total, rel=rel, abs=0 if rel else 0.5)
    if active is not None:
        assert row["active_params"] == pytest.approx(active, rel=rel, abs=0 if rel else 0.5)


@pytest.mark.parametrize("fixture", GEMMA_NON_EMBEDDING)
def test_gemma3_non_embedding_matches_report(fixture):
    row = _row(fixture)
    non_embedding = row["params"] - row["vocab"] * row["hidden"]          # tied: one table
    assert non_embedding == pytest.approx(GEMMA_NON_EMBEDDING[fixture], rel=5e-4)


def test_gpt_oss_active_matches_model_card_convention():
    # The card counts the unembedding but not the embedding in active parameters.
    for fixture, published in (("gpt-oss-20b", 3.61e9), ("gpt-oss-120b", 5.13e9)):
        row = _row(fixture)
        assert row["active_params"] - row["vocab"] * row["hidden"] == pytest.approx(published, rel=1e-3)


@pytest.mark.parametrize("fixture,window,local,kind", [
    ("gpt-oss-20b", 128, 12, "sliding"), ("gpt-oss-120b", 128, 18, "sliding"),
    ("gemma-3-4b-it", 1024, 29, "sliding"), ("gemma-3-12b-it", 1024, 40, "sliding"),
    ("gemma-3-27b-it", 1024, 52, "sliding"),
    ("Llama-4-Scout-17B-16E-Instruct", 8192, 36, "chunked"), ("Qwen2.5-32B", None, None, None),
    ("Qwen3-32B", None, None, None)])
def test_attention_layout(fixture, window, local, kind):
    row = _row(fixture)
    assert (row.get("sliding_window"), row.get("local_layers"), row.get("local_attention")) == (window, local, kind)


def test_mla_and_moe_layout_of_deepseek():
    row = _row("DeepSeek-V3")
    assert (row["kv_lora_rank"], row["qk_rope_dim"], row["q_lora_rank"]) == (512, 64, 1536)
    assert (row["n_experts"], row["experts_per_token"], row["shared_experts"], row["moe_layers"]) == (256, 8, 1, 58)
    assert (row["ffn"], row["dense_ffn"]) == (2048, 18432)


def test_maverick_interleaves_dense_layers():
    row = _row("Llama-4-Maverick-17B-128E-Instruct")
    assert (row["moe_layers"], row["dense_ffn"], row["ffn"], row["shared_experts"]) == (24, 16384, 8192, 1)


@pytest.mark.parametrize("content,message", [
    ("{not json", "not valid JSON"), ("[1, 2]", "not a config.json object"),
    ('{"model_type": "mamba"}', "model_type 'mamba' is not supported"),
    ('{"model_type": "llama", "hidden_size": 8}', "lacks num_hidden_layers"),
])
def test_bad_configs_give_clear_errors(tmp_path, content, message):
    path = tmp_path / "config.json"
    path.write_text(content)
    with pytest.raises(FlopsheetError, match=message):
        hf_config.model_row(hf_config.read(path), "x", "x")


def test_missing_file_is_a_clear_error(tmp_path):
    with pytest.raises(FlopsheetError, match="cannot read"):
        hf_config.read(tmp_path / "nope.json")


def test_default_name_from_folder_or_name_or_path(tmp_path):
    folder = tmp_path / "Acme-8B"
    folder.mkdir()
    (folder / "config.json").write_text(json.dumps({"model_type": "llama"}))
    assert hf_config.default_name({}, folder / "config.json") == "Acme-8B"
    assert hf_config.default_name({"_name_or_path": "org/Acme-9B"}, folder / "config.json") == "Acme-9B"


# ------------------------------------------------------------------ a checkpoint's own formats

def test_gpt_oss_quantization_config_keeps_its_parts_at_16_bits():
    # config.json: quant_method mxfp4, modules_to_not_convert self_attn, mlp.router, embed_tokens, lm_head
    row = _row("gpt-oss-120b")
    assert row["quant_format"] == "mxfp4"
    assert set(row["quant_keep"]) == {"attention", "router", "embeddings", "head"}


def test_gpt_oss_weights_match_the_published_checkpoint():
    # Model card (arXiv:2508.10925, Table 1): checkpoint sizes 60.8 GiB (120b) and 12.8 GiB (20b), MXFP4 experts
    # and BF16 for the rest. Counted all at MXFP4 the 120b came to 57.8 GiB.
    from udfs.catalogs import catalog
    from udfs.physics import arch
    for fixture, gib in (("gpt-oss-120b", 60.8), ("gpt-oss-20b", 12.8)):
        model = catalog.model_from_row(_row(fixture))
        assert arch.weight_bytes(model, "mxfp4") / 2**30 == pytest.approx(gib, rel=0.005)
        # another precision asked means every weight in it (a model requantized whole)
        assert arch.weight_bytes(model, "bf16") == model.total_params * 2


def test_unplaced_unconverted_module_is_refused(tmp_path):
    config = json.loads((CONFIGS / "gpt-oss-20b.json").read_text())
    config["quantization_config"]["modules_to_not_convert"].append("model.layers.*.mlp.experts")
    with pytest.raises(FlopsheetError, match="mlp.experts"):
        hf_config.model_row(config, "x", "x")


def test_quant_method_without_a_catalog_format_counts_as_before():
    config = json.loads((CONFIGS / "gpt-oss-20b.json").read_text())
    config["quantization_config"]["quant_method"] = "some-new-method"
    row = hf_config.model_row(config, "x", "x")
    assert not row.get("quant_format") and not row.get("quant_keep")


def _with_quantization(fixture: str, **quantization) -> dict:
    config = json.loads((CONFIGS / f"{fixture}.json").read_text())
    config["quantization_config"] = quantization
    return config


def test_autoawq_mixtral_bare_gate_is_the_router():
    # AutoAWQ's Mixtral class writes modules_to_not_convert ["gate"]: block_sparse_moe.gate, the router
    config = _with_quantization("Mixtral-8x7B-v0.1", quant_method="awq", bits=4, group_size=128,
                                modules_to_not_convert=["gate"])
    row = hf_config.model_row(config, "x", "x")
    assert row["quant_format"] == "int4"
    assert "router" in row["quant_keep"]


@pytest.mark.parametrize("method", ["awq", "gptq"])
def test_integer_checkpoint_width_follows_bits(method):
    for bits, fmt in ((4, "int4"), (8, "int8")):
        row = hf_config.model_row(_with_quantization("Meta-Llama-3-8B", quant_method=method, bits=bits), "x", "x")
        assert row["quant_format"] == fmt
    for bits in (3, None, "8"):
        with pytest.raises(FlopsheetError, match=f"bits '{bits}'"):
            hf_config.model_row(_with_quantization("Meta-Llama-3-8B", quant_method=method, bits=bits), "x", "x")


def test_linear_only_quantizers_keep_embeddings_and_head_at_16_bits():
    # transformers' AWQ/GPTQ/FP8 quantizers replace nn.Linear only (the nn.Embedding stays) and keep the untied
    # head by default (get_keys_to_not_convert). Llama 3 8B (Llama 3.1 8B's shape) in AWQ int4, by hand:
    # embedding and head 2 x 128256 x 4096 at 2 bytes, norms (2 x 32 + 1) x 4096 at 2 bytes, the rest at 0.5.
    from udfs.catalogs import catalog
    from udfs.physics import arch
    model = catalog.model_from_row(hf_config.model_row(
        _with_quantization("Meta-Llama-3-8B", quant_method="awq", bits=4, group_size=128), "x", "x"))
    sixteen = 2 * 128256 * 4096 + 65 * 4096
    assert model.kept_params == sixteen
    assert arch.weight_bytes(model, "int4") == pytest.approx((model.total_params - sixteen) * 0.5 + sixteen * 2)
    # GPTQ with lm_head true quantizes the head; FP8 with its own list keeps only what it lists (and the embedding)
    gptq = hf_config.model_row(_with_quantization("Meta-Llama-3-8B", quant_method="gptq", bits=4, lm_head=True),
                               "x", "x")
    assert gptq["quant_keep"] == ("embeddings",)
    fp8 = hf_config.model_row(_with_quantization("Meta-Llama-3-8B", quant_method="fp8",
                                                 modules_to_not_convert=["model.layers.0.self_attn"]), "x", "x")
    assert set(fp8["quant_keep"]) == {"attention", "embeddings"}
    default_fp8 = hf_config.model_row(_with_quantization("Meta-Llama-3-8B", quant_method="fp8"), "x", "x")
    assert set(default_fp8["quant_keep"]) == {"embeddings", "head"}
