"""LoRA / QLoRA on several GPUs (training.adapter_sync): only the adapter gradients are reduced, and FSDP
all-gathers the frozen base in its storage format; the hours follow it and more GPUs never scale better."""

from __future__ import annotations

import pytest

from udfs.catalogs import catalog
from udfs.errors import FlopsheetError
from udfs.api import registry
from udfs.physics import calibration as cal, collectives, training, training_memory
from udfs.planning import picker
from udfs.planning.reasons import Status


def test_lora_sync_moves_a_small_share_of_a_full_fine_tunes_gradients():
    """On 8 GPUs of one server with no sharding, a LoRA step's traffic is the adapters' FP32 gradients, under 5%
    of the time a full fine-tune's 16-bit gradients take on the same link."""
    model, gpu = catalog.model("Llama 2 7B"), catalog.gpu("H100 SXM")
    full = training.gradient_sync(model, gpu, training.Layout(1, 1, 8), compute_s=1.0)
    lora = training.adapter_sync(model, gpu, 8, "lora", "ddp", compute_s=1.0)
    assert 0 < lora.comm_s < 0.05 * full.comm_s
    ratio = training_memory.lora_params(model, 16) * cal.ADAPTER_GRAD_BYTES / (model.total_params * 2)
    assert ratio < lora.comm_s / full.comm_s < 2 * ratio        # the bytes' ratio, plus 32 layers' latencies


def test_qlora_70b_on_two_gpus_gathers_nf4_not_a_16_bit_gradient_all_reduce():
    """A 70B QLoRA job sharded over 2 GPUs moves the NF4 base twice a micro-batch (half of it each time) and the
    adapter gradients, not an all-reduce of 70B 16-bit gradients; plain LoRA gathers the 16-bit base."""
    model, gpu = catalog.model("Llama 3 70B"), catalog.gpu("A100 40GB")
    assert training.lora_sharding(model, gpu, "qlora") == "fsdp"
    qlora = training.adapter_sync(model, gpu, 2, "qlora", "fsdp", compute_s=1.0)
    lora = training.adapter_sync(model, gpu, 2, "lora", "fsdp", compute_s=1.0)
    link = collectives.link_class(gpu, 2)
    full_all_reduce = collectives.all_reduce_s(link, 2, model.total_params * cal.GRAD_REDUCE_BYTES)
    nf4 = training_memory.base_weight_bytes(model, training_memory.NF4_BITS)
    assert qlora.comm_s < 0.4 * full_all_reduce
    assert qlora.comm_s > 2 * collectives.all_gather_s(link, 2, nf4) * 0.99       # both gathers are paid
    assert qlora.comm_s / lora.comm_s == pytest.approx(nf4 / (model.total_params * 2), rel=0.1)


@pytest.mark.parametrize("method", ["lora", "qlora"])
@pytest.mark.parametrize("model,gpu", [("Llama 3 70B", "H100 SXM"), ("Llama 3 70B", "A100 40GB"),
                                       ("Llama 2 7B", "RTX 4090"), ("Llama 3.1 405B", "H100 SXM")])
def test_lora_scaling_efficiency_never_rises_with_more_gpus(method, model, gpu):
    m, g = catalog.model(model), catalog.gpu(gpu)
    for sharding in ("ddp", "fsdp"):
        effs = [training.scale_out_efficiency(m, g, n, method=method, sharding=sharding)
                for n in (1, 2, 4, 8, 16, 32, 64, 256, 1024)]
        assert effs[0] == 1.0 and all(0 < e <= 1 for e in effs)
        assert all(b <= a + 1e-12 for a, b in zip(effs, effs[1:])), (sharding, effs)


def test_sharding_across_servers_loses_to_the_nic_and_hours_grow():
    """A 70B LoRA job sharded past one 8-GPU server gathers its 16-bit base over each GPU's NIC every micro-batch:
    its efficiency falls below the in-server figure, and the GPU-hours on 16 exceed those on 8."""
    model, gpu = catalog.model("Llama 3 70B"), catalog.gpu("H100 SXM")
    eight = training.on_cluster(model, gpu, 1e9, 8, scope="steady", method="lora")
    sixteen = training.on_cluster(model, gpu, 1e9, 16, scope="steady", method="lora")
    assert sixteen.scale_out < eight.scale_out
    assert sixteen.gpu_hours > eight.gpu_hours
    assert eight.compute_gpu_hours == pytest.approx(sixteen.compute_gpu_hours)
    assert "fsdp" in eight.basis().lower()


def test_lora_flops_count_the_recomputed_forward():
    """LoRA/QLoRA execute 4 FLOPs a parameter a token (no weight gradients for the frozen base), 6 once the
    checkpointed forward is recomputed, as the picker sizes them; unknown methods are refused."""
    assert training.method_flops("lora", checkpointing=False) == 4
    assert training.method_flops("qlora") == training.method_flops("full") == 6
    with pytest.raises(FlopsheetError):
        training.method_flops("dora")


@pytest.mark.parametrize("model,gpu,missed", [("Llama 2 7B", "H100 PCIe 80GB", False), ("Llama 2 7B", "A40", False),
                                              ("Mistral 7B", "A40", True)])
def test_a_count_near_the_all_reduce_floor_is_the_fewest_that_finish(model, gpu, missed):
    """A 1e12-token LoRA job due in a day on PCIe GPUs: each GPU added buys less as the adapter all-reduce sets a
    floor under the days, and the picker's count creeps up to it. Its count is still the fewest whole units that
    finish in time (TRAINING_DAYS there within the deadline, one unit fewer not); the deadline is missed only where
    MAX_GPUS do not finish it, and then the days shown are those at the count shown."""
    opt = next(o for o in picker.rank("lora", model, "bf16", deadline_days=1, tokens_or_traffic=1e12, tiers="any",
                                      include_unverified=True) if o.gpu == catalog.gpu(gpu).name)

    def days(n: int) -> float:
        return registry.call("TRAINING_DAYS", model, 1e12, gpu, n, "", "bf16", "steady", True, "lora")

    assert opt.days == pytest.approx(days(opt.count), rel=1e-9)
    assert (opt.status is Status.MISSES_DEADLINE) is missed
    if missed:
        assert opt.count > picker.MAX_GPUS and days(picker.MAX_GPUS) > 1
    else:
        assert opt.count <= picker.MAX_GPUS and opt.days <= 1 < days(opt.count - opt.purchase_unit)


@pytest.mark.parametrize("method", ["lora", "qlora"])
def test_the_hours_refuse_a_lora_job_below_the_count_the_picker_sizes_it_on(method):
    """TRAINING_GPU_HOURS on n GPUs makes the fit check GPU_RANK sizes a LoRA / QLoRA job by (lora_min_gpus):
    #NUM! saying how many it needs one GPU short of it, the hours from there."""
    model, gpu = catalog.model("Llama 3 70B"), catalog.gpu("A100 40GB")
    n, _ = training_memory.lora_min_gpus(model, gpu, training_memory.base_bits(method))
    assert n is not None and n > 1

    def hours(count: int) -> float:
        return registry.call("TRAINING_GPU_HOURS", model.name, 1e9, gpu.name, "", "bf16", "point", "steady", count,
                             method)

    with pytest.raises(FlopsheetError, match=rf"for {method} .*on {n - 1} \(needs at least {n:,}\)") as refused:
        hours(n - 1)
    assert refused.value.code == "#NUM!"
    assert hours(n) > 0
