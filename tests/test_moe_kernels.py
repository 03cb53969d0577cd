"""The MoE kernel an engine release runs MXFP4 experts with, by version and GPU (udfs/data/moe_kernels.csv), and the
padding it adds to the weights: worked by hand from vLLM's create_weights, and the fit verdict each release gives
gpt-oss-120b on one H100 (vLLM 0.10.1 logged 'Available KV cache memory: -2.14 GiB': it does not start)."""

import csv
import re
from dataclasses import dataclass, fields, replace
from pathlib import Path

import pytest

from udfs.api import registry
from udfs.catalogs import catalog, engines, resolve
from udfs.errors import FlopsheetError
from udfs.physics import arch, capacity

ROOT = Path(__file__).resolve().parent.parent
GIB = 2 ** 30
BYTES = 4.25 / 8                  # MXFP4: 4 bits and one 8-bit scale per 32 values
EXPERT_MATRICES = 128 * 36 * 3    # gpt-oss-120b: 128 experts in each of 36 layers, gate + up (w13) and down


def _setup(gpu_name: str, engine_name: str):
    gpu = resolve.gpu(gpu_name)
    return resolve.model("gpt-oss-120b"), gpu, engines.engine(engine_name, gpu)


def test_marlin_pads_gpt_oss_120b_by_hand():
    """Marlin (vLLM 0.10.1 on an H100): hidden 2,880 -> 3,072 (256), each shard's expert width to 128: one GPU 2,880
    -> 2,944, two 1,440 -> 1,536, four 720 -> 768, eight 360 -> 384."""
    model, gpu, eng = _setup("H100", "vLLM 0.10.1")
    for n, shard in ((1, 2944), (2, 1536), (4, 768), (8, 384)):
        by_hand = EXPERT_MATRICES * (3072 * shard - 2880 * 2880 / n) * BYTES / GIB
        assert capacity.kernel_padding_gib(model, gpu, "mxfp4", n, eng) == pytest.approx(by_hand, rel=1e-12)
    assert capacity.kernel_padding_gib(model, gpu, "mxfp4", 1, eng) == pytest.approx(5.127, abs=1e-3)
    # the checkpoint is 8% short of the 65.9651 GiB vLLM 0.10.1 logs (issue #23278); with the padding within 1%
    checkpoint = arch.weight_bytes(model, "mxfp4") / GIB
    assert abs(checkpoint - 65.9651) / 65.9651 > 0.05
    assert abs(checkpoint + capacity.kernel_padding_gib(model, gpu, "mxfp4", 1, eng) - 65.9651) / 65.9651 < 0.01


def test_triton_and_flashinfer_pad_by_hand():
    """Triton (vLLM 0.12 and later on Hopper) pads only each shard's width, to 64: nothing at 2,880 on one GPU,
    1,440 -> 1,472 on two. FlashInfer's TRT-LLM MXFP4 x BF16 kernel (0.12 and later on B200) pads both to 256:
    2,880 x 2,880 -> 3,072 x 3,072 on one GPU."""
    model, gpu, eng = _setup("H100", "vLLM 0.15.0")
    assert capacity.kernel_padding_gib(model, gpu, "mxfp4", 1, eng) == 0
    by_hand = EXPERT_MATRICES * 2880 * (1472 - 1440) * BYTES / GIB
    assert capacity.kernel_padding_gib(model, gpu, "mxfp4", 2, eng) == pytest.approx(by_hand, rel=1e-12)
    model, gpu, eng = _setup("B200", "vLLM 0.14.1")
    by_hand = EXPERT_MATRICES * (3072 * 3072 - 2880 * 2880) * BYTES / GIB
    assert capacity.kernel_padding_gib(model, gpu, "mxfp4", 1, eng) == pytest.approx(by_hand, rel=1e-12)


def test_triton_0_14_holds_the_block_scales_twice_by_hand():
    """vLLM 0.12-0.14's Triton path keeps the checkpoint's E8M0 block scales (one byte a 32-value block) beside the
    swizzled copy: 2,880 x 2,880 x 3 matrices x 128 experts x 36 layers / 32 bytes = 3.34 GiB on one GPU, which puts
    the checkpoint's 60.71 GiB within 1% of the 64.38 GiB vLLM 0.14.1 logs (issue #33155); on 2 GPUs the padded
    1,440 -> 1,472 shard's scales and its padding."""
    model, gpu, eng = _setup("H100", "vLLM 0.14.1")
    copy = EXPERT_MATRICES * 2880 * 2880 / 32 / GIB
    assert capacity.kernel_padding_gib(model, gpu, "mxfp4", 1, eng) == pytest.approx(copy, rel=1e-12)
    assert copy == pytest.approx(3.337, abs=1e-3)
    two = EXPERT_MATRICES * 2880 * ((1472 - 1440) * BYTES + 1472 / 32) / GIB
    assert capacity.kernel_padding_gib(model, gpu, "mxfp4", 2, eng) == pytest.approx(two, rel=1e-12)
    checkpoint = arch.weight_bytes(model, "mxfp4") / GIB
    assert abs(checkpoint - 64.38) / 64.38 > 0.05
    assert abs(checkpoint + copy - 64.38) / 64.38 < 0.01


def test_expert_parallel_pads_whole_experts():
    """Under expert parallelism each GPU holds E/n whole experts at the full width: Marlin on 2 GPUs pads 64 experts
    at 3,072 x 2,944, half the one-GPU padding."""
    model, gpu, eng = _setup("H100", "vLLM 0.10.1")
    ep = replace(eng, moe_parallel="expert")
    assert capacity.kernel_padding_gib(model, gpu, "mxfp4", 2, ep) == pytest.approx(
        capacity.kernel_padding_gib(model, gpu, "mxfp4", 1, eng) / 2, rel=1e-12)


def test_the_release_picks_the_kernel():
    """A named release resolves to the vLLM profile with that release; `vLLM` alone answers for the release engines.csv
    names (the newest on PyPI), which runs Triton on Hopper; Marlin on an A100 in every release and on Hopper from
    0.10.1 to 0.11.0 (a PyPI install: no triton_kernels); no row (no padding) for other engines, formats and dense
    models."""
    gpu = resolve.gpu("H100")
    with (ROOT / "udfs" / "data" / "engines.csv").open(newline="", encoding="utf-8") as handle:
        release = next(r["release"] for r in csv.DictReader(handle) if r["name"] == "vLLM")
    assert engines.engine("vLLM", gpu).release == release
    kernel = {v: engines.engine(f"vLLM {v}", gpu).moe_kernel(gpu, "mxfp4") for v in ("0.10.1", "0.10.1.1", "0.14.1")}
    assert kernel["0.10.1"].kernel.startswith("Marlin") and kernel["0.10.1.1"] == kernel["0.10.1"]
    assert kernel["0.14.1"].kernel.startswith("Triton") and kernel["0.14.1"].copied_bits == 0.25
    today = engines.engine("vLLM", gpu).moe_kernel(gpu, "mxfp4")      # 0.15 and later: no scale copy counted
    assert today.kernel == kernel["0.14.1"].kernel and today.copied_bits == 0
    a100 = resolve.gpu("A100")
    for name in ("vLLM", "vLLM 0.10.1", "vLLM 0.11.0", "vLLM 0.11.1", "vLLM 0.11.2", "vLLM 0.14.1"):
        assert engines.engine(name, a100).moe_kernel(a100, "mxfp4").kernel.startswith("Marlin")
    # Hopper 0.10.2-0.11.0 read as 0.10.1 (Marlin, GPUStack's runs included: docs/accuracy.md)
    for version in ("0.10.2", "0.11.0"):
        assert engines.engine(f"vLLM {version}", gpu).moe_kernel(gpu, "mxfp4") == kernel["0.10.1"]
    b200 = resolve.gpu("B200")
    for name in ("vLLM 0.10.1", "vLLM 0.11.0", "vLLM"):
        assert engines.engine(name, b200).moe_kernel(b200, "mxfp4").kernel.startswith("FlashInfer")
    assert engines.engine("SGLang", gpu).moe_kernel(gpu, "mxfp4") is None
    assert engines.engine("vLLM", gpu).moe_kernel(gpu, "fp8") is None
    assert capacity.kernel_padding_gib(resolve.model("Llama 3.1 8B"), a100, "mxfp4", 1, engines.engine("vLLM", a100)) == 0


@pytest.mark.parametrize("engine, gpu", [("vLLM 0.11.1", "H100"), ("vLLM 0.11.2", "H200"), ("vLLM 0.10.0", "A100"),
                                         ("vLLM", "RTX 5090"), ("vLLM", "RTX PRO 6000 Blackwell Server"),
                                         ("vLLM", "T4"), ("vLLM", "V100"), ("vLLM", "B300"), ("vLLM", "MI300X")])
def test_a_release_or_gpu_the_table_does_not_read_is_na_never_zero_padding(engine, gpu):
    """A vLLM MXFP4 MoE estimate on a release or GPU with no kernel row answers #N/A naming both (its padding is not
    known: 0 would be a guess), in the padding and in every estimate that counts it."""
    model, card, eng = _setup(gpu, engine)
    release = engine.split()[-1] if engine != "vLLM" else eng.release
    with pytest.raises(FlopsheetError, match=rf"MoE kernel of vLLM {re.escape(release)} on {re.escape(card.name)} not read"):
        capacity.kernel_padding_gib(model, card, "mxfp4", 1, eng)
    with pytest.raises(FlopsheetError, match="MoE kernel of vLLM"):
        _throughput(gpu, engine)


def test_the_a100_answer_is_the_same_in_every_release():
    """The reviewer's case: gpt-oss-120b on one A100 80GB at 1,000 / 1,000 tokens gave 1,203.9 tokens/s with `vLLM` and
    vLLM 0.11.0 but 2,467.2 with vLLM 0.11.1 (no row: no padding). Marlin in every release: the same answer, and the
    KV cache short of Marlin's padding worked by hand (3,072 x 2,944 against 2,880 x 2,880, 5.13 GiB)."""
    assert _throughput("A100 80GB", "vLLM 0.11.1") == _throughput("A100 80GB", "vLLM 0.11.0") == _throughput(
        "A100 80GB", "vLLM 0.16.0")            # one defaults era (engine_releases.csv 0.9.0-0.16): only the kernel could differ
    model, gpu, eng = _setup("A100 80GB", "vLLM")
    assert capacity.kernel_padding_gib(model, gpu, "mxfp4", 1, eng) == capacity.kernel_padding_gib(
        model, gpu, "mxfp4", 1, engines.engine("vLLM 0.11.0"))      # 0.33.0 (0.92 of memory) pads as 0.11.0 does
    model, gpu, eng = _setup("A100 80GB", "vLLM 0.11.1")
    by_hand = EXPERT_MATRICES * (3072 * 2944 - 2880 * 2880) * BYTES / GIB
    assert capacity.kernel_padding_gib(model, gpu, "mxfp4", 1, eng) == pytest.approx(by_hand, rel=1e-12)


def test_every_kernel_row_is_sourced_and_reads():
    kernels = engines.moe_kernels()
    assert kernels and all(k.source and k.as_of and k.hidden_multiple >= 1 and k.shard_multiple >= 1 for k in kernels)
    families = {g.family for g in catalog.gpus()}
    assert {f for k in kernels for f in k.gpu_families} <= families


def _throughput(gpu: str, engine: str):
    return registry.call("SERVING_THROUGHPUT", "gpt-oss-120b", gpu, "mxfp4", 1000, 1000, 1, "", engine)


@pytest.mark.parametrize("engine, starts", [("vLLM 0.10.1", False), ("vLLM 0.10.1.1", False), ("vLLM 0.14.1", True),
                                            ("vLLM", True)])
def test_fit_verdict_on_one_h100_by_release(engine, starts):
    """vLLM 0.10.1 pads the experts (Marlin): 65.8 GiB of weights and the profile run's 6.1 GiB pass the 71.3 GiB
    its 0.9 share of an H100 leaves, so the worksheet refuses, naming the padding; Triton releases (0.14.1, and the
    release `vLLM` answers for) start it."""
    model, gpu, eng = _setup("H100", engine)
    if starts:
        assert capacity.kv_budget_gib(model, gpu, "mxfp4", 1, eng) > 0
        assert isinstance(_throughput("H100", engine), float)
    else:
        with pytest.raises(FlopsheetError, match=r"65\.8 GiB weights, 5\.1 GiB of them vLLM 0\.10\.1(\.1)?'s Marlin"):
            capacity.kv_budget_gib(model, gpu, "mxfp4", 1, eng)
        with pytest.raises(FlopsheetError, match="Marlin"):
            _throughput("H100", engine)


def test_the_padding_comes_off_the_kv_cache():
    """Where it fits, the padding is what the KV cache loses: an A100 80GB with today's vLLM (Marlin) leaves the cache
    0.92 of its memory (vLLM 0.33.0's gpu_memory_utilization) less the checkpoint, Marlin's padding worked by hand and
    the engine's reserve."""
    model, gpu, eng = _setup("A100 80GB", "vLLM")
    by_hand = EXPERT_MATRICES * (3072 * 2944 - 2880 * 2880) * BYTES / GIB
    assert by_hand == pytest.approx(5.127, abs=1e-3)
    left = gpu.memory_gib * 0.92 - arch.weight_bytes(model, "mxfp4") / GIB - by_hand - capacity.engine_reserve_gib(
        model, gpu, 1, eng)
    assert capacity.kv_budget_gib(model, gpu, "mxfp4", 1, eng) == pytest.approx(left, rel=1e-9)


def test_a_private_row_pins_the_release(private_catalog):
    """A team running vLLM 0.10.1 says so once in its private engines.csv (`name,release`): every estimate with `vLLM`
    then answers for that release, Marlin's padding included (gpt-oss-120b no longer starts on one H100)."""
    assert isinstance(_throughput("H100", "vLLM"), float)
    private_catalog("engines.csv", "name,release\nvLLM,0.10.1\n")
    with pytest.raises(FlopsheetError, match="vLLM 0.10.1's Marlin"):
        _throughput("H100", "vLLM")


def test_no_fit_names_the_kernel_it_counted_in_one_lookup():
    """capacity.no_fit looks the release's kernel up once (kernel_padding gives the kernel with its padding) and names
    that kernel with the padding it counted: gpt-oss-120b on one H100 with vLLM 0.10.1, Marlin's 3,072 x 2,944 against
    2,880 x 2,880 (5.13 GiB, by hand)."""
    model, gpu, eng = _setup("H100", "vLLM 0.10.1")
    counting, lookups = _counting(eng)
    message = str(capacity.no_fit(model, gpu, "mxfp4", 1, counting))
    assert lookups == [gpu.name]
    by_hand = EXPERT_MATRICES * (3072 * 2944 - 2880 * 2880) * BYTES / GIB
    assert f"{by_hand:.1f} GiB of them vLLM 0.10.1's Marlin (weight-only FP4) padding" in message
    # no padding counted (Triton on one GPU pads nothing at 2,880): no kernel named
    model, gpu, eng = _setup("H100", "vLLM")
    assert "padding" not in str(capacity.no_fit(model, gpu, "mxfp4", 1, eng))


def _counting(eng):
    """The engine, counting its MoE kernel lookups."""
    lookups: list[str] = []

    @dataclass(frozen=True)
    class Counting(engines.Engine):
        def moe_kernel(self, gpu, precision):
            lookups.append(gpu.name)
            return super().moe_kernel(gpu, precision)

    return Counting(**{f.name: getattr(eng, f.name) for f in fields(eng)}), lookups


def test_every_refusal_counts_the_weights_once():
    """capacity.held is the one count of weights + kernel padding + reserve: a refusal on the weights (kv_budget_gib),
    on the KV cache asked for (check_fit) and on a batch of none (kv_batch) each look the kernel up once, and the
    figures in the message are the ones the budget used. gpt-oss-120b on one H100 with vLLM 0.10.1: Marlin's 5.13 GiB
    (by hand) does not fit; on two the weights fit and 64 x 100,000 tokens of cache do not."""
    model, gpu, eng = _setup("H100", "vLLM 0.10.1")
    counting, lookups = _counting(eng)
    with pytest.raises(capacity.NoFit) as refused:
        capacity.kv_budget_gib(model, gpu, "mxfp4", 1, counting)
    assert lookups == [gpu.name]
    by_hand = EXPERT_MATRICES * (3072 * 2944 - 2880 * 2880) * BYTES / GIB
    assert f"{by_hand:.1f} GiB of them vLLM 0.10.1's Marlin" in str(refused.value)
    lookups.clear()
    with pytest.raises(capacity.NoFit, match=r"64 x 100,000 tokens"):
        capacity.check_fit(model, gpu, "mxfp4", 100_000, 64, 2, None, counting)
    assert lookups == [gpu.name]
    lookups.clear()
    with pytest.raises(capacity.NoFit, match=r"KV cache \(1 x 10,000,000 tokens\)"):
        capacity.kv_batch(model, gpu, "mxfp4", 10_000_000, 1, 2, "bf16", counting)
    assert lookups == [gpu.name]


def test_gpustack_0_10_2_runs_start_with_their_flashinfer_sampler():
    """GPUStack's gpt-oss-120b on one H100 with vLLM 0.10.2 (--max-model-len 32768) ran with FlashInfer installed
    (docs/accuracy.md, "Why GPUStack's 0.10.2 runs start"): the start-up sampler takes 14 bytes a row x vocabulary
    entry (no sort), not PyTorch's 24. By hand: 79.22 GiB x 0.9 usable, less the checkpoint and Marlin's padding, the
    1.5 GiB reserve and 1,024 rows x 201,088 x 14 bytes, leaves more than one 32,768-token sequence's cache (18
    full-attention layers x 32,768 tokens and 18 window layers x 128, 8 KV heads x 64 x K and V x 2 bytes); with the
    sort the same count is negative: no start."""
    model, gpu, eng = _setup("H100", "vLLM 0.10.2")
    weights = arch.weight_bytes(model, "mxfp4") / GIB + EXPERT_MATRICES * (3072 * 2944 - 2880 * 2880) * BYTES / GIB
    left = 79.22 * 0.9 - weights - 1.5
    flashinfer = replace(eng, flashinfer_sampler=True)
    by_hand = left - 1024 * 201_088 * 14 / GIB
    assert capacity.kv_budget_gib(model, gpu, "mxfp4", 1, flashinfer) == pytest.approx(by_hand, rel=1e-9)
    one_sequence = 18 * (32_768 + 128) * 2 * 8 * 64 * 2 / GIB
    assert capacity.kv_per_sequence_gib(model, 32_768, 1, "bf16", flashinfer) == pytest.approx(one_sequence, rel=1e-9)
    assert by_hand > one_sequence
    assert left - 1024 * 201_088 * 24 / GIB < 0 and not eng.flashinfer_sampler
    with pytest.raises(capacity.NoFit):
        capacity.kv_budget_gib(model, gpu, "mxfp4", 1, eng)


def test_a_row_states_its_flashinfer_sampler():
    """Only a row whose note states it runs the FlashInfer sampler (benchmarks/serving_accuracy._stated)."""
    from benchmarks import serving_accuracy
    eng = engines.engine("vLLM 0.10.2", resolve.gpu("H100"))
    assert serving_accuracy._stated(eng, "launched as `vllm serve`; FlashInfer sampler: installed")[0].flashinfer_sampler
    assert not serving_accuracy._stated(eng, "launched as `vllm serve`")[0].flashinfer_sampler
