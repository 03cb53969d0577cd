"""Rented GPUs that must share a link come in one instance (issue 20, buyer pass): a serving copy's tensor-parallel
group and a training job's GPUs up to a server are priced at the cheapest instance that holds them, not as
separate one-GPU machines (H100 SXM's cheapest row is a one-GPU instance at $3.20; two of them have no NVLink
between them, while the model lays the job and the copy out over NVLink)."""

from udfs.catalogs import catalog
from udfs.planning import picker


def _cheapest(gpu: str, at_least: int):
    rows = [p for p in catalog.cloud_prices() if p.gpu == gpu and p.status == "current" and p.pricing == "on-demand"
            and (p.usd_per_gpu_hour or 0) > 0 and (p.gpu_count or 1) >= at_least]
    return min(rows, key=lambda p: p.usd_per_gpu_hour)


def _option(options, gpu):
    return next(o for o in options if o.gpu == gpu)


def test_a_multi_gpu_training_job_rents_whole_servers():
    h100 = catalog.gpu("H100 SXM")
    one, eight = _cheapest(h100.name, 1), _cheapest(h100.name, h100.system_gpus)
    assert one.gpu_count == 1 and one.usd_per_gpu_hour < eight.usd_per_gpu_hour     # else this proves nothing
    o = _option(picker.rank("train", catalog.model("Llama 3.1 70B"), "bf16", price_basis="cloud"), h100.name)
    assert o.count > h100.system_gpus and o.count % eight.gpu_count == 0 and o.purchase_unit == eight.gpu_count
    assert o.cost == o.gpu_hours * eight.usd_per_gpu_hour
    assert f"{eight.provider} {eight.instance}" in o.price_basis


def test_a_two_gpu_job_is_one_instance_and_a_one_gpu_job_the_cheapest():
    h100 = catalog.gpu("H100 SXM")
    ranked = picker.rank("lora", catalog.model("Llama 3.1 70B"), "bf16", price_basis="cloud")
    o = _option(ranked, h100.name)
    assert o.count >= 2
    row = _cheapest(h100.name, min(o.count, h100.system_gpus))
    assert o.cost == o.gpu_hours * row.usd_per_gpu_hour and o.count % row.gpu_count == 0
    q = _option(picker.rank("qlora", catalog.model("Llama 3.1 70B"), "bf16", price_basis="cloud"), h100.name)
    assert q.count == 1 and q.cost == q.gpu_hours * _cheapest(h100.name, 1).usd_per_gpu_hour


def test_a_tensor_parallel_copy_is_rented_in_one_instance():
    h100 = catalog.gpu("H100 SXM")
    o = _option(picker.rank("serve", catalog.model("Llama 3.3 70B"), "bf16", tokens_or_traffic=2000,
                            price_basis="cloud"), h100.name)
    assert o.gpus_per_copy and o.gpus_per_copy > 1
    row = _cheapest(h100.name, o.gpus_per_copy)
    assert o.count % row.gpu_count == 0 and f"${row.usd_per_gpu_hour:g}/GPU-h" in o.price_basis
