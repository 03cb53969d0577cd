"""Collective communication time: latency plus bandwidth, per collective and per link class.
The one model of GPU-to-GPU traffic: tensor-parallel all-reduces in a decode step and a prefill
(udfs.physics.capacity), pipeline hand-offs within and between servers, the data-parallel gradient
all-reduce of training (udfs.physics.training), and expert-parallel all-to-all. Standard library only.

Each collective over n GPUs costs
    time = latency(link, n) + bytes each GPU sends / (one-way link rate x achieved bus share)
with the bytes of NCCL's bus-bandwidth convention (nccl-tests doc/PERFORMANCE.md):
    all-reduce (ring)            2(n-1)/n x size    latency base + 2(n-1) steps
    all-gather, reduce-scatter   (n-1)/n x size     latency base + (n-1) steps
    all-to-all                   (n-1)/n x size     latency base + (n-1) steps
    send/recv                    size               one hand-off
`size` is the whole tensor (for an all-to-all, what one GPU holds before the exchange). The link
class comes from the GPU's catalog row (`link_class`): a GPU fabric (NVLink/NVSwitch, AMD Infinity
Fabric, Gaudi's on-chip RoCE), PCIe, or the network between servers; the constants of each, with
their sources, are `calibration.LINKS`.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from . import calibration as cal
from ..catalogs.catalog import Gpu

GBS = 1e9
US = 1e-6
# PCIe x16 rate in GB/s, both directions, by generation (PCI-SIG: 16 GT/s = ~32 GB/s one way for
# Gen4 x16, doubling each generation): for the bridged cards whose catalog rate is the bridge's.
PCIE_X16_GBS = {3: 32.0, 4: 64.0, 5: 128.0, 6: 256.0}


@dataclass(frozen=True)
class Link:
    """One link class between the GPUs of a collective, and the rate it runs at."""
    kind: str            # a key of calibration.LINKS
    gbs: float           # catalog rate, GB/s both directions (one way is half)

    @property
    def constants(self) -> cal.LinkConstants:
        return cal.LINKS[self.kind]

    @property
    def bus_bytes_per_s(self) -> float:
        """Achieved bus bandwidth: the one-way rate times the share collectives reach."""
        return self.gbs / 2 * GBS * self.constants.bus_share

    def latency_s(self, steps: float) -> float:
        c = self.constants
        return (c.base_us + steps * c.step_us) * US


def _pcie_gbs(gpu: Gpu) -> float | None:
    match = re.search(r"PCIe Gen\s*(\d)", gpu.interconnect or "")
    return PCIE_X16_GBS.get(int(match.group(1))) if match else None


def link_class(gpu: Gpu, n_gpus: int, needed_for: str = "") -> Link:
    """The link n GPUs of one server talk over. A rate at or above NVLINK_CLASS_GBS is a GPU fabric
    (Infinity Fabric on AMD, Ethernet on Gaudi, NVLink otherwise); an NVLink bridge joins pairs (or
    4 GPUs for a 4-way bridge), so a larger group runs at the slowest link in its ring, PCIe; below the
    threshold the link is PCIe. The catalog's interconnect_gbs is required (#N/A naming it)."""
    gbs = gpu.need("interconnect_gbs", needed_for or f"splitting a model over {n_gpus} GPUs")
    text = (gpu.interconnect or "").lower()
    if not gpu.nvlink_class(needed_for or f"splitting a model over {n_gpus} GPUs"):
        return Link("pcie", gbs)
    if "bridge" in text:
        if n_gpus <= (4 if "4-way" in text else 2):
            return Link("nvlink", gbs)
        pcie = _pcie_gbs(gpu)
        return Link("pcie", pcie) if pcie else Link("nvlink", gbs)
    if gpu.vendor == "AMD":
        return Link("infinity_fabric", gbs * _mesh_share(gpu, n_gpus))
    if "roce" in text or "ethernet" in text or "gbe" in text:
        return Link("ethernet", gbs)
    return Link("nvlink", gbs)


def _mesh_share(gpu: Gpu, n_gpus: int) -> float:
    """A full mesh (AMD's xGMI: each GPU wired to each of its server's other GPUs by its own link)
    gives a group of n only the n-1 links to its peers: (n-1)/(GPUs per server - 1) of the
    catalog's per-GPU rate (MI300X: 7 links of 64 GB/s one way; 4 GPUs use 3 of them)."""
    server = gpu.system_gpus or 0
    return min(1.0, (n_gpus - 1) / (server - 1)) if server > 1 else 1.0


def network() -> Link:
    """Between servers: each GPU's own NIC (calibration.NETWORK_GBS_PER_GPU one way)."""
    return Link("network", 2 * cal.NETWORK_GBS_PER_GPU)


# ---------------------------------------------------------------------------- collectives

def all_reduce_s(link: Link, n_gpus: int, size_bytes: float) -> float:
    """One ring all-reduce of a `size_bytes` tensor over n GPUs: 2(n-1) steps, 2(n-1)/n of it sent."""
    if n_gpus <= 1:
        return 0.0
    steps = 2 * (n_gpus - 1)
    return link.latency_s(steps) + steps / n_gpus * size_bytes / link.bus_bytes_per_s


def engine_all_reduce_s(link: Link, n_gpus: int, size_bytes: float) -> float:
    """A tensor-parallel all-reduce as inference engines run it. Where the link class has a one-shot kernel
    (calibration ring_us set: NVLink), the faster of the one-shot kernel, every GPU reading each of its n-1 peers'
    whole buffers through its own links at the one-way rate (base latency + (n-1) x size / rate), and the ring at
    NCCL's latency (ring_us + 2(n-1)/n x size / bus bandwidth); elsewhere the ring (all_reduce_s)."""
    if n_gpus <= 1:
        return 0.0
    ring, one_shot = engine_all_reduce_lines(link, n_gpus)
    return min(latency + per_byte * size_bytes for latency, per_byte in (ring, one_shot or ring))


def engine_all_reduce_lines(link: Link, n_gpus: int) -> tuple[tuple[float, float], tuple[float, float] | None]:
    """engine_all_reduce_s as (latency s, seconds a byte) of the ring and, where the link class has one, of the
    one-shot kernel (None otherwise): the time is the smaller line at a size (the inference-plan workbook's MIN)."""
    ring_us = link.constants.ring_us
    per_byte = 2 * (n_gpus - 1) / n_gpus / link.bus_bytes_per_s
    if ring_us is None:
        return (all_reduce_s(link, n_gpus, 0), per_byte), None
    return (ring_us * US, per_byte), (link.constants.base_us * US, (n_gpus - 1) / (link.gbs / 2 * GBS))


def all_gather_s(link: Link, n_gpus: int, size_bytes: float) -> float:
    """All-gather (or reduce-scatter) of a `size_bytes` result: n-1 steps, (n-1)/n of it sent."""
    if n_gpus <= 1:
        return 0.0
    return link.latency_s(n_gpus - 1) + (n_gpus - 1) / n_gpus * size_bytes / link.bus_bytes_per_s


def all_to_all_s(link: Link, n_gpus: int, size_bytes: float) -> float:
    """All-to-all (expert-parallel dispatch or combine) of the `size_bytes` each GPU holds: it keeps
    1/n and sends (n-1)/n, one message to each peer."""
    return all_gather_s(link, n_gpus, size_bytes)


def send_recv_s(link: Link, size_bytes: float) -> float:
    """One point-to-point hand-off (a pipeline stage's activations to the next)."""
    return link.constants.p2p_us * US + size_bytes / link.bus_bytes_per_s


def hierarchical_all_reduce_s(link: Link, n_gpus: int, gpus_per_system: int, size_bytes: float) -> float:
    """An all-reduce over several servers as NCCL runs it: a ring within each server over its GPU
    link, then a ring across the m servers in which each GPU carries its 1/g share over its own NIC."""
    g = max(1, min(n_gpus, gpus_per_system))
    m = -(-n_gpus // gpus_per_system)
    inside = all_reduce_s(link, g, size_bytes) if g > 1 else 0.0
    return inside + (all_reduce_s(network(), m, size_bytes / g) if m > 1 else 0.0)
