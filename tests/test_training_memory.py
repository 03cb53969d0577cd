"""Training memory by how people train (udfs/physics/training_memory.py): each byte count against a hand
calculation, sharding divides what it should, recompute is monotone, LoRA/QLoRA over several GPUs."""

import math

import pytest

from udfs.api.registry import call
from udfs.catalogs import catalog
from udfs.errors import FlopsheetError
from udfs.physics import training_memory as tm
from udfs.units import GIB

M7 = catalog.model("Llama 2 7B")
M70 = catalog.model("Llama 2 70B")
M8 = catalog.model("Llama 3.1 8B")


@pytest.mark.parametrize("precision, optimizer, states, master, expected", [
    ("bf16", "adamw", "fp32", True, 2 + 4 + 4 + 4 + 4),        # the lesson's / Megatron's 18
    ("fp32", "adamw", "fp32", True, 4 + 4 + 4 + 4),            # no master copy needed: 16
    ("bf16", "adamw", "bf16", False, 2 + 2 + 2 + 2),           # pure BF16: 8
    ("bf16", "adamw", "8bit", False, 2 + 2 + 2 * (1 + 4 / 2048)),
    ("bf16", "adamw", "8bit", True, 2 + 4 + 4 + 2 * (1 + 4 / 2048)),
    ("bf16", "adamw", "4bit", False, 2 + 2 + 2 * (0.5 + 4 / 128)),   # torchao AdamW4bit: blocks of 128
    ("bf16", "sgd", "fp32", True, 2 + 4 + 4 + 4),
    ("bf16", "adafactor", "fp32", True, 2 + 4 + 4),
    ("bf16", "none", "fp32", True, 2 + 4),
])
def test_bytes_per_parameter_by_hand(precision, optimizer, states, master, expected):
    per = tm.state_bytes_per_param(precision, optimizer, states, master)
    assert sum(per.values()) == pytest.approx(expected)


@pytest.mark.parametrize("dp", [1, 2, 8, 64])
def test_zero1_matches_megatrons_distributed_optimizer_table(dp):
    """Megatron Core's guide: bf16 parameters with fp32 gradients take 6 + 12/d bytes per parameter."""
    r = tm.training_memory_gib(M7, zero_stage=1 if dp > 1 else 0, n_gpus=dp)
    states = r["weights"] + r["gradients"] + r["optimizer"]
    assert states * GIB == pytest.approx(M7.total_params * (6 + 12 / dp))


def test_zero_stages_divide_what_they_should():
    n = 8
    base = tm.training_memory_gib(M7)
    z = {s: tm.training_memory_gib(M7, zero_stage=s, n_gpus=n) for s in (1, 2, 3)}
    assert z[1]["optimizer"] == pytest.approx(base["optimizer"] / n)
    assert z[1]["gradients"] == pytest.approx(base["gradients"])
    assert z[2]["gradients"] == pytest.approx(base["gradients"] / n)
    layer = M7.total_params / M7.layers * 2 / GIB
    assert z[3]["weights"] == pytest.approx(base["weights"] / n + layer)
    assert z[1]["activations"] == base["activations"]


def test_paged_states_live_off_the_gpu_and_in_backward_holds_one_gradient():
    r = tm.training_memory_gib(M8, "bf16", "adamw", 2, 512, 0, 1, "full", True, "paged_8bit", False, True)
    assert r["optimizer"] == 0
    assert r["cpu"] * GIB == pytest.approx(M8.total_params * 2 * (1 + 4 / 2048))
    largest = max(M8.vocab * M8.hidden, M8.hidden * M8.ffn)
    assert r["gradients"] * GIB == pytest.approx(largest * 2)
    assert r["weights"] * GIB == pytest.approx(M8.total_params * 2)
    full = tm.training_memory_gib(M8, "bf16", "adamw", 2, 512, 0, 1, "full")
    assert r["total"] < full["total"] / 5


def test_tensor_parallel_splits_all_but_the_norms():
    norms = (2 * M70.layers + 1) * M70.hidden
    for tp in (2, 4, 8):
        held = tm.stage_params(M70, tp)
        assert held * tp - norms * (tp - 1) == pytest.approx(M70.total_params)


def test_pipeline_stages_split_the_blocks_and_keep_an_end():
    h, v, L = M70.hidden, M70.vocab, M70.layers
    per_block = (M70.total_params - 2 * v * h - h) / L
    for pp in (2, 4, 5):
        assert tm.stage_params(M70, 1, pp) == pytest.approx(math.ceil(L / pp) * per_block + v * h + h)
    assert tm.stage_params(M70, 1, 1) == M70.total_params
    with pytest.raises(FlopsheetError, match="more stages"):
        tm.stage_params(M70, 1, M70.layers + 1)


def test_n_gpus_must_hold_whole_tensor_and_pipeline_groups():
    with pytest.raises(FlopsheetError, match="multiple") as err:
        call("TRAINING_MEMORY_GB", "Llama 2 70B", "bf16", "adamw", 1, 2048, 1, 12, "none", True, "total", "fp32",
             True, False, 8, 1)
    assert err.value.code == "#VALUE!"


def test_tensor_and_pipeline_sharding_with_zero():
    """n_gpus = tp x pp x dp: ZeRO shards the per-stage states over dp only."""
    r = tm.training_memory_gib(M70, zero_stage=1, n_gpus=64, tensor_parallel=8, pipeline_parallel=2)
    # by hand, Llama 2 70B (catalog: 68,976,648,192 parameters, vocab 32,000 x hidden 8,192, 80 layers, untied): the
    # embedding and the head 262,144,000 each; a block (68,976,648,192 - 2 x 262,144,000 - 8,192 final norm) / 80 =
    # 855,654,400; the fuller stage of two holds 40 blocks + one end + the final norm = 34,488,328,192, of which
    # 40 x 2 x 8,192 + 8,192 = 663,552 norm weights are replicated and the rest split 8 ways: 4,311,621,632
    held = (34_488_328_192 - 663_552) / 8 + 663_552
    assert held == 4_311_621_632 and tm.stage_params(M70, 8, 2) == pytest.approx(held)
    assert r["optimizer"] * GIB == pytest.approx(held * 12 / 4)
    assert r["weights"] * GIB == pytest.approx(held * 2)
    # one stage, tensor parallel 8: (68,976,648,192 - 80 x 2 x 8,192 - 8,192) / 8 + 1,318,912 norms = 8,623,235,072
    whole = (68_976_648_192 - 1_318_912) / 8 + 1_318_912
    assert whole == 8_623_235_072
    z3 = tm.training_memory_gib(M70, zero_stage=3, n_gpus=8, tensor_parallel=8)
    layer = whole / 80 * 2                                    # one layer's tensor-parallel slice, gathered
    assert z3["weights"] * GIB == pytest.approx(whole * 2)     # dp 1: nothing sharded or gathered
    z3 = tm.training_memory_gib(M70, zero_stage=3, n_gpus=64, tensor_parallel=8)
    assert z3["weights"] * GIB == pytest.approx(whole * 2 / 8 + layer)


@pytest.mark.parametrize("zero", [2, 3])
def test_zero_sharding_under_pipeline_stages_holds_the_stage_whole(zero):
    """FSDP2 stages under PyTorch's pipelining keep their weights unsharded and their gradients unsynchronised (in
    FP32, the reduce dtype) through a step's microbatches: a pipelined ZeRO-2/3 GPU holds its stage's 16-bit
    weights and FP32 gradients whole (16-bit without a master copy), and only the master copy and Adam moments sharded
    (2 + 4 + 12/dp B)."""
    r = tm.training_memory_gib(M70, zero_stage=zero, n_gpus=64, tensor_parallel=8, pipeline_parallel=2)
    held = tm.stage_params(M70, 8, 2)
    assert r["weights"] * GIB == pytest.approx(held * 2)
    assert r["gradients"] * GIB == pytest.approx(held * 4)
    assert r["optimizer"] * GIB == pytest.approx(held * 12 / 4)
    pure = tm.training_memory_gib(M70, zero_stage=zero, n_gpus=64, tensor_parallel=8, pipeline_parallel=2,
                                  optimizer_states="bf16", master_weights=False)
    assert pure["gradients"] * GIB == pytest.approx(held * 2)        # no mixed precision: BF16 accumulation


def test_pipelined_pure_bf16_gradients_llama2_7b():
    """Llama 2 7B, ZeRO-3 over 8 GPUs in two pipeline stages, pure BF16 (no master copy): each GPU holds its stage's
    3.37B parameters' gradients at 2 bytes, 6.28 GiB (6.74e9 x 2 / 2 / 2^30), not FP32's 12.55."""
    r = tm.training_memory_gib(M7, zero_stage=3, n_gpus=8, pipeline_parallel=2, optimizer_states="bf16",
                               master_weights=False)
    # by hand (catalog: 6,738,415,616 parameters, vocab 32,000 x hidden 4,096, 32 layers): a block (6,738,415,616 -
    # 2 x 131,072,000 - 4,096) / 32 = 202,383,360; the fuller stage 16 blocks + one end + the final norm
    # = 3,369,209,856 parameters, 2 bytes each
    assert r["gradients"] == pytest.approx((16 * 202_383_360 + 131_072_000 + 4_096) * 2 / GIB)
    assert r["gradients"] == pytest.approx(6.2757, rel=1e-4)


def test_offload_moves_states_to_cpu():
    on = tm.training_memory_gib(M7, zero_stage=3, n_gpus=4)
    opt = tm.training_memory_gib(M7, zero_stage=3, n_gpus=4, offload="optimizer")
    assert opt["optimizer"] == opt["gradients"] == 0
    assert opt["cpu"] == pytest.approx(on["optimizer"] + on["gradients"])
    assert opt["weights"] == on["weights"]
    every = tm.training_memory_gib(M7, zero_stage=3, n_gpus=4, offload="all")
    assert every["weights"] * GIB == pytest.approx(M7.total_params / M7.layers * 2)
    with pytest.raises(FlopsheetError, match="stage 3"):
        tm.training_memory_gib(M7, zero_stage=2, n_gpus=4, offload="all")


@pytest.mark.parametrize("seq", [512, 2048, 8192])
@pytest.mark.parametrize("flash", [True, False])
def test_recompute_is_monotone_and_flash_is_not_counted_twice(seq, flash):
    acts = {r: tm.training_memory_gib(M7, seq_len=seq, recompute=r, flash_attention=flash)["activations"]
            for r in tm.RECOMPUTE}
    assert acts["none"] >= acts["selective"] >= acts["full"] >= acts["offload"]
    if flash:      # flash attention stores no scores: selective recompute has none left to save
        assert acts["selective"] == acts["none"]
    else:
        scores = 5 * M7.heads * seq * seq * M7.layers / GIB
        assert acts["none"] - acts["selective"] == pytest.approx(scores)


def test_full_recompute_keeps_inputs_and_one_working_layer():
    s, h, L = 2048, M7.hidden, M7.layers
    r = tm.training_memory_gib(M7, seq_len=s, recompute="full")
    work = s * h * (15 + 6 * M7.ffn / h)
    assert r["activations"] * GIB == pytest.approx(L * 2 * s * h + work + s * M7.vocab * 6)
    off = tm.training_memory_gib(M7, seq_len=s, recompute="offload")
    assert off["cpu"] * GIB == pytest.approx(L * 2 * s * h)


def test_pipeline_first_stage_keeps_all_layers_worth_of_activations():
    """1F1B: pp micro-batches in flight on the first stage, each for layers/pp layers."""
    one = tm.activations(M70, 1, 4096, "selective", True, 8, 1)[0]
    four = tm.activations(M70, 1, 4096, "selective", True, 8, 4)[0]
    logits = tm.logits_bytes(M70, 1, 4096, 8)
    assert four == pytest.approx(one - logits)


def test_lora_shares_qlora_and_fsdp_shards_the_base():
    assert tm.lora_memory_gib(M7, 16, "nf4") == tm.qlora_memory_gib(M7, 16)
    lora = tm.lora_memory_gib(M7, 16, "bf16")
    assert lora["base_weights"] * GIB == pytest.approx(M7.total_params * 2)
    # rank 16 on q, k, v, o (4096 + 4096 each) and gate, up, down (4096 + 11008 each) of 32 blocks: 32 x 16 x
    # (4 x 8,192 + 3 x 15,104) = 39,976,960 adapter parameters, 16 bytes each (FP32 weight, gradient and Adam m, v)
    assert lora["adapters"] * GIB == pytest.approx(39_976_960 * 16)
    ddp = tm.lora_memory_gib(M70, 8, "bf16", 2048, 1, True, 8, "ddp")
    assert ddp == tm.lora_memory_gib(M70, 8, "bf16", 2048, 1, True, 1)
    fsdp = tm.lora_memory_gib(M70, 8, "bf16", 2048, 1, True, 8, "fsdp")
    base = M70.total_params * 2
    assert fsdp["base_weights"] * GIB == pytest.approx(base / 8 + base / M70.layers)
    assert fsdp["activations"] == ddp["activations"]


def test_worksheet_functions_agree_with_physics():
    assert call("LORA_MEMORY_GB", "Llama 2 7B", 16, "nf4") == pytest.approx(call("QLORA_MEMORY_GB", "Llama 2 7B"))
    assert call("TRAINING_MEMORY_GB", "Llama 2 7B", "bf16", "adamw", 1, 2048, 3, 4, "full", True, "cpu", "fp32",
                True, False, 1, 1, "optimizer") > 0


def test_loss_keeps_6_2_or_0_bytes_per_logit():
    s, b = 1024, 2
    logits = s * b * M8.vocab
    totals = {}
    for loss, per in (("standard", 6), ("chunked", 2), ("fused", 0)):
        r = tm.training_memory_gib(M8, micro_batch=b, seq_len=s, recompute="full", loss=loss)
        totals[loss] = r["activations"]
        lora = tm.lora_memory_gib(M8, 16, "bf16", s, b, loss=loss)
        assert (lora["activations"] - tm.lora_memory_gib(M8, 16, "bf16", s, b, loss="fused")["activations"]) * GIB \
            == pytest.approx(logits * per)
    assert (totals["standard"] - totals["chunked"]) * GIB == pytest.approx(logits * 4)
    assert totals["chunked"] - totals["fused"] == pytest.approx(logits * 2 / GIB)


def test_what_each_measurement_sees():
    """allocated: the tensors; total: + the CUDA context (what must fit); reserved: allocated x (1 + the
    allocator's reserve); device: reserved + the context (nvidia-smi)."""
    from udfs.physics import calibration as cal
    for r in (tm.training_memory_gib(M7, zero_stage=3, n_gpus=8), tm.lora_memory_gib(M70, 8, "nf4", 2048, 2, True, 2,
                                                                                        "fsdp")):
        tensors = sum(v for k, v in r.items() if k not in ("overhead", "total", "allocated", "reserved", "device", "cpu"))
        assert r["allocated"] == pytest.approx(tensors)
        assert r["total"] == pytest.approx(tensors + cal.CUDA_CONTEXT_GIB)
        assert r["reserved"] == pytest.approx(tensors * (1 + cal.ALLOCATOR_RESERVE))
        assert r["device"] == pytest.approx(r["reserved"] + cal.CUDA_CONTEXT_GIB)
        assert r["device"] > r["total"] > r["allocated"]


def test_lora_targets_and_adapter_states_by_hand():
    h, f, L, r = M7.hidden, M7.ffn, M7.layers, 64
    qv = tm.lora_params(M7, r, "q,v")
    assert qv == L * r * (2 * h + 2 * h)                        # Llama 2 7B: no GQA, q and v are h x h
    no_o = tm.lora_params(M7, r, "q_proj,k_proj,v_proj,gate,up,down")
    assert no_o == L * r * (3 * 2 * h + 3 * (h + f))
    assert tm.lora_params(M7, r) == no_o + L * r * 2 * h
    bf16 = tm.lora_memory_gib(M7, r, "bf16", targets="q,v", adapter_states="bf16")["adapters"]
    fp32 = tm.lora_memory_gib(M7, r, "bf16", targets="q,v")["adapters"]
    assert bf16 * GIB == pytest.approx(qv * 8) and fp32 == pytest.approx(2 * bf16)
    with pytest.raises(FlopsheetError, match="unknown LoRA target"):
        tm.lora_params(M7, r, "q,w")
    assert call("LORA_MEMORY_GB", "Llama 2 7B", 64, "bf16", 2048, 1, True, 1, "ddp", "adapters", "standard", "q,v",
                "bf16") == pytest.approx(bf16)


def test_upcast_loss_keeps_16_bytes_per_logit():
    s, b = 2048, 1
    up = tm.lora_memory_gib(M8, 16, "bf16", s, b, loss="upcast")["activations"]
    std = tm.lora_memory_gib(M8, 16, "bf16", s, b)["activations"]
    assert (up - std) * GIB == pytest.approx(s * b * M8.vocab * (16 - 6))


def test_fit_needs_the_tensors_and_the_context_not_the_reserve():
    """min_gpus and check_fit hold a job whose tensors and CUDA context fit (the allocator gives back its
    cached blocks before an out-of-memory)."""
    from udfs.physics import calibration as cal
    gpu = catalog.gpu("A100 SXM 80GB")
    n, held = tm.min_gpus(M70, gpu)
    one = tm.training_memory_gib(M70, "bf16", "adamw", 1, 2048, 3, 1, "full")
    states = one["weights"] + one["gradients"] + one["optimizer"]
    layer = M70.total_params / M70.layers * 2 / GIB
    assert held == pytest.approx(one["activations"] + layer + cal.CUDA_CONTEXT_GIB)
    assert states / n + held <= gpu.memory_gb < states / (n - 1) + held


def test_a_quantised_base_holds_one_linear_layer_dequantised():
    """QLoRA's activations carry the largest linear layer in 16-bit (bitsandbytes dequantises a weight for its
    product); a 16-bit base does not."""
    largest = max(M70.hidden * M70.ffn, M70.hidden * M70.heads * M70.head_size)
    q = tm.lora_memory_gib(M70, 16, "nf4", 1024, 1)["activations"]
    b = tm.lora_memory_gib(M70, 16, "bf16", 1024, 1)["activations"]
    assert (q - b) * GIB == pytest.approx(largest * 2)


def test_kbit_prepared_holds_the_unquantised_parameters_in_fp32():
    """PEFT's prepare_model_for_kbit_training: embeddings, head and norms in FP32, 2 bytes more each than the
    16-bit default; only for a quantised base."""
    rest = M8.total_params - tm.linear_params(M8)
    plain = tm.qlora_memory_gib(M8, 16)["base_weights"]
    prepared = tm.qlora_memory_gib(M8, 16, kbit_prepared=True)["base_weights"]
    assert (prepared - plain) * GIB == pytest.approx(rest * 2)
