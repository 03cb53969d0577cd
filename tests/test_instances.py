"""Rented GPUs that must share a link come in one instance (issue 20, buyer pass): a serving copy's tensor-parallel
group and a training job's GPUs up to a server are priced at the cheapest instance that holds them, not as
separate one-GPU machines (H100 SXM's cheapest row is a one-GPU instance at $3.20; two of them have no NVLink
between them, while the model lays the job and the copy out over NVLink)."""

from udfs.catalogs import catalog
from udfs.planning import picker
from udfs.planning.reasons import Status


def _cheapest(gpu: str, at_least: int):
    rows = [p for p in catalog.cloud_prices() if p.gpu == gpu and p.status == "current" and p.pricing == "on-demand"
            and (p.usd_per_gpu_hour or 0) > 0 and (p.gpu_count or 1) >= at_least]
    return min(rows, key=lambda p: p.usd_per_gpu_hour)


def _option(options, gpu):
    return next(o for o in options if o.gpu == gpu)


def _cluster(gpu: str, at_least: int):
    """The cheapest instance whose catalog row states a network between instances of 400 Gb/s a GPU (each GPU's
    own 400G NIC, what the training model's all-reduce assumes), by hand."""
    rows = [p for p in catalog.cloud_prices() if p.gpu == gpu and p.status == "current" and p.pricing == "on-demand"
            and (p.usd_per_gpu_hour or 0) > 0 and (p.gpu_count or 1) >= at_least
            and (p.cluster_network_gbps or 0) / (p.gpu_count or 1) >= 400]
    return min(rows, key=lambda p: p.usd_per_gpu_hour) if rows else None


def test_a_multi_gpu_training_job_rents_whole_servers_joined_by_a_cluster_network():
    h100 = catalog.gpu("H100 SXM")
    one, eight, cluster = _cheapest(h100.name, 1), _cheapest(h100.name, h100.system_gpus), _cluster(h100.name, 8)
    assert one.gpu_count == 1 and one.usd_per_gpu_hour < eight.usd_per_gpu_hour     # else this proves nothing
    assert cluster is not None and eight.usd_per_gpu_hour < cluster.usd_per_gpu_hour   # the cheapest 8 states none
    o = _option(picker.rank("train", catalog.model("Llama 3.1 70B"), "bf16", price_basis="cloud"), h100.name)
    assert o.count > h100.system_gpus and o.count % cluster.gpu_count == 0 and o.purchase_unit == cluster.gpu_count
    assert o.cost == o.gpu_hours * cluster.usd_per_gpu_hour
    assert f"{cluster.provider} {cluster.instance}" in o.price_basis


def test_one_gpu_rentals_are_not_a_training_cluster():
    """H100 PCIe rents only as one-GPU pods with no network stated between them: a 70B pre-training job over many
    of them is refused with the reason, not priced as pods joined over the public network."""
    pcie = catalog.gpu("H100 PCIe")
    assert _cluster(pcie.name, 1) is None and _cheapest(pcie.name, 1).gpu_count == 1
    o = _option(picker.rank("train", catalog.model("Llama 3.1 70B"), "bf16", price_basis="cloud"), pcie.name)
    assert o.status is Status.NO_NETWORK and o.count > 1 and o.cost is None
    assert "no training cluster" in o.reason.text() and "400 Gb/s a GPU" in o.reason.text()
    small = _option(picker.rank("qlora", catalog.model("Llama 3.1 8B"), "bf16", price_basis="cloud"), pcie.name)
    assert small.count == 1 and small.ok       # one GPU needs no network: the cheapest pod as before


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


def test_every_stated_network_between_instances_has_its_source():
    stated = [p for p in catalog.cloud_prices() if p.cluster_network_gbps]
    assert stated and all("http" in p.network_source for p in stated)
