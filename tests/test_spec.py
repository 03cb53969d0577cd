"""MODEL_DEFINE / GPU_DEFINE spec texts: parsing, formatting, round trips and errors."""

import pytest

from udfs.catalogs import spec
from udfs.errors import FlopsheetError

LLAMA3_8B = "model: 32L d4096 h32/kv8 ffn14336 v128256"


def test_llama3_8b_spec_counts_exactly():
    row = spec.parse_model(LLAMA3_8B)
    assert row["params"] == 8_030_261_248
    assert row["active_params"] is None


def test_tokens_in_any_order_and_case():
    assert spec.parse_model("MODEL: v128256 FFN14336 H32/KV8 D4096 32l")["params"] == 8_030_261_248


def test_moe_spec_with_shared_experts_and_dense_layers():
    # DeepSeek-V3's shape: 3 dense layers (18432 wide), 58 MoE layers (256 x 2048, top-8, 1 shared), MLA.
    text = ("model: 61L d7168 h128/kv128 hd128 ffn18432 v129280 experts256/top8 shared1 moe_ffn2048 dense3 "
            "mla512/64 q_lora1536 router_bias")
    row = spec.parse_model(text)
    assert (row["params"], row["active_params"]) == (671_026_419_200, 37_552_297_472)
    assert (row["moe_layers"], row["ffn"], row["dense_ffn"]) == (58, 2048, 18432)


def test_round_trip_keeps_every_field():
    text = ('model: 24L d2880 h64/kv8 hd64 ffn2880 v201088 experts32/top4 window128 local12 ctx131072 bias '
            'mlp_bias o_bias sinks router_bias name="my gpt-oss"')
    row = spec.parse_model(text)
    again = spec.format_model(row, row["name"])
    assert spec.parse_model(again) == row
    assert row["name"] == "my gpt-oss"
    assert row["params"] == 20_914_757_184


def test_unnamed_spec_is_named_by_its_canonical_text():
    row = spec.parse_model("model:  32L  d4096 v128256 h32/kv8 ffn14336")
    assert row["name"] == LLAMA3_8B


@pytest.mark.parametrize("text,message", [
    ("model: 32L d4096 h32/kv8 v128256", "lacks ffn"),
    ("model: 32L d4096 h32 ffn1 v1", "unknown token 'h32'"),
    ("model: 32L d4096 h32/kv8 ffn14336 v128256 wings2", "unknown token 'wings2'"),
    ("model: 32L d4096 h32/kv7 ffn14336 v128256", "multiple of kv_heads"),
    ("model: 32L d4096 h32/kv8 ffn14336 v128256 experts8/top9", "experts_per_token cannot exceed"),
    ("model: 32L d4096 h32/kv8 ffn14336 v128256 local4", "need a sliding window"),
    ('model: 32L name="unclosed', "cannot read"),
])
def test_bad_model_specs(text, message):
    with pytest.raises(FlopsheetError, match=message) as e:
        spec.parse_model(text)
    assert e.value.code == "#VALUE!"


def test_gpu_spec_round_trip():
    text = 'gpu: 80GB 3.35TB/s bf16=989.5 fp8=1979 HBM3 700W $30000 link900 name="My H100"'
    row = spec.parse_gpu(text)
    assert (row["memory_gb"], row["bandwidth_tbs"], row["bf16_tflops"], row["fp8_tflops"]) == (80, 3.35, 989.5, 1979)
    assert (row["memory_type"], row["tdp_w"], row["price_usd"], row["interconnect_gbs"]) == ("HBM3", 700, 30000, 900)
    assert spec.parse_gpu(spec.format_gpu(row, row["name"])) == row


def test_gpu_spec_without_tflops_is_allowed():
    row = spec.parse_gpu("gpu: 192GB 0.8TB/s unified")
    assert row["memory_type"] == "Unified memory" and "bf16_tflops" not in row


@pytest.mark.parametrize("text,message", [("gpu: 80GB", "lacks bandwidth_tbs"), ("gpu: 80GB 3TB/s fast", "unknown token")])
def test_bad_gpu_specs(text, message):
    with pytest.raises(FlopsheetError, match=message):
        spec.parse_gpu(text)


# ---------------------------------------------------------------- issue 23 item 1: bounded, linear parsing
@pytest.mark.parametrize("prefix", ["gpu: ", "model: "])
def test_a_spec_text_over_the_length_limit_is_refused_naming_the_limit(prefix):
    text = prefix + "1" * 100_000
    parse = spec.parse_gpu if prefix.startswith("gpu") else spec.parse_model
    with pytest.raises(FlopsheetError) as e:
        parse(text)
    assert e.value.code == "#VALUE!"
    assert f"{spec.MAX_SPEC_CHARS:,} characters" in e.value.message and len(str(e.value)) <= 500


def test_a_spec_at_the_length_limit_still_parses():
    name = "x" * (spec.MAX_SPEC_CHARS - 60)
    row = spec.parse_gpu(f"gpu: 80GB 3.35TB/s bf16=989.5 name={name}")
    assert row["name"] == name


def _fastest_seconds(word: str, repeats: int) -> float:
    import time
    best = float("inf")
    for _ in range(2):
        start = time.perf_counter()
        for _ in range(repeats):
            with pytest.raises(FlopsheetError):
                spec._parse([word], spec.GPU_TOKENS, "GPU")
        best = min(best, time.perf_counter() - start)
    return best / repeats


@pytest.mark.parametrize("word", ["1" * 300, "1" * 299 + "x", "." + "1" * 299, "1e" + "1" * 298])
def test_token_matching_grows_linearly_with_the_word(word):
    """Ten times the characters may take about ten times as long, not a hundred (the number
    pattern backtracked quadratically: 8,000 digits took 10 s). Speed itself is in benchmarks/."""
    short = _fastest_seconds(word, 20)
    long = _fastest_seconds(word[0] + word[1:] * 10, 1)
    assert long < 30 * short + 0.002, (short, long)
