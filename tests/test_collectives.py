"""Collective communication: latency plus bandwidth per collective and link class
(udfs/physics/collectives.py, constants in udfs/physics/calibration.py LINKS)."""

from __future__ import annotations

import pytest

from udfs.catalogs import catalog
from udfs.errors import MissingFigure
from udfs.physics import calibration as cal
from udfs.physics import capacity, collectives

SIZES = (1.0, 16e3, 1e6, 64e6, 1e9)
KINDS = tuple(cal.LINKS)


@pytest.mark.parametrize("kind", KINDS)
def test_time_grows_with_size_and_gpus(kind):
    link = collectives.Link(kind, 900)
    for op in (collectives.all_reduce_s, collectives.all_gather_s, collectives.all_to_all_s):
        by_size = [op(link, 8, s) for s in SIZES]
        assert by_size == sorted(by_size) and by_size[0] < by_size[-1]
        by_gpus = [op(link, n, 1e6) for n in (2, 4, 8, 16)]
        assert by_gpus == sorted(by_gpus)
        assert op(link, 1, 1e9) == 0.0          # one GPU exchanges nothing


@pytest.mark.parametrize("kind", KINDS)
def test_tiny_messages_pay_the_latency(kind):
    """A few bytes cost the link's latency (base + 2(n-1) steps), not ~0; a GB costs its bytes."""
    link, c = collectives.Link(kind, 900), cal.LINKS[kind]
    floor = (c.base_us + 2 * 7 * c.step_us) * 1e-6
    assert collectives.all_reduce_s(link, 8, 8) == pytest.approx(floor, rel=1e-3)
    assert collectives.all_reduce_s(link, 8, 8) > 1e-6
    big = collectives.all_reduce_s(link, 8, 1e9)
    assert big - floor == pytest.approx(2 * 7 / 8 * 1e9 / (450e9 * c.bus_share))
    assert collectives.send_recv_s(link, 0) == pytest.approx(c.p2p_us * 1e-6)


def test_pcie_is_slower_than_nvlink():
    """The same all-reduce over PCIe (L40S) is slower than over NVLink (H100 SXM) at every size,
    and a decode step of a tensor-parallel 70B pays more for it."""
    pcie = collectives.link_class(catalog.gpu("L40S"), 4)
    nvlink = collectives.link_class(catalog.gpu("H100 SXM"), 4)
    assert (pcie.kind, nvlink.kind) == ("pcie", "nvlink")
    for size in SIZES:
        assert collectives.all_reduce_s(pcie, 4, size) > collectives.all_reduce_s(nvlink, 4, size)
    model = catalog.model("Llama 2 13B")
    slow = capacity.decode_step(model, catalog.gpu("L40S"), "bf16", 1, 2048, 4, eng="vLLM").allreduce
    fast = capacity.decode_step(model, catalog.gpu("H100 SXM"), "bf16", 1, 2048, 4, eng="vLLM").allreduce
    assert slow > fast > 0


def test_link_classes_from_the_catalog():
    """A bridge joins pairs: a larger group rings over PCIe at the card's generation's rate;
    AMD's fabric is Infinity Fabric; no link rate is #N/A naming it."""
    h100_pcie = catalog.gpu("H100 PCIe")
    assert collectives.link_class(h100_pcie, 2).kind == "nvlink"
    four = collectives.link_class(h100_pcie, 4)
    assert (four.kind, four.gbs) == ("pcie", collectives.PCIE_X16_GBS[5])
    mi300x = catalog.gpu("MI300X")
    assert collectives.link_class(mi300x, 8).kind == "infinity_fabric"
    # a full mesh: 4 of 8 GPUs use 3 of their 7 links, so half a server has 3/7 of the rate
    assert collectives.link_class(mi300x, 4).gbs == pytest.approx(mi300x.interconnect_gbs * 3 / 7)
    assert collectives.link_class(mi300x, 8).gbs == mi300x.interconnect_gbs
    assert collectives.link_class(catalog.gpu("RTX 4090"), 2).kind == "pcie"
    with pytest.raises(MissingFigure, match="interconnect_gbs"):
        collectives.link_class(catalog.gpu("Apple M2 Ultra"), 2)


def test_network_all_reduce_is_hierarchical():
    """Across servers, only each GPU's 1/g share crosses its NIC, after the ring inside the server."""
    link, grads = collectives.Link("nvlink", 900), 26e9
    inside = collectives.all_reduce_s(link, 8, grads)
    two = collectives.hierarchical_all_reduce_s(link, 16, 8, grads)
    assert two == pytest.approx(inside + collectives.all_reduce_s(collectives.network(), 2, grads / 8))
    assert collectives.hierarchical_all_reduce_s(link, 8, 8, grads) == inside


def test_engine_all_reduce_meets_published_kernel_timings():
    """Tensor-parallel all-reduces as engines run them (one-shot kernel or NCCL's ring, the faster) within 15% of the
    fastest of vLLM's kernels at every published size (vLLM PR #24532, TP 4, 0.5-4 MB: benchmarks/tp_decomposition.py
    holds the table). The ring at the flat one-shot latency alone was 0.67-0.77 of them from 1.5 MB."""
    from benchmarks import tp_decomposition as tpd

    gpu = catalog.gpu(tpd.ALLREDUCE_GPU)
    link = collectives.link_class(gpu, tpd.ALLREDUCE_GPUS)
    for tokens, timings in tpd.ALLREDUCE_TIMINGS.items():
        size = tokens * tpd.HIDDEN * 2
        model = collectives.engine_all_reduce_s(link, tpd.ALLREDUCE_GPUS, size) * 1e6
        assert model == pytest.approx(min(timings), rel=0.15), tokens


@pytest.mark.parametrize("gpu,n", [("H100 SXM", 2), ("H100 SXM", 4), ("H100 SXM", 8), ("B200", 4), ("A100 SXM", 8),
                                   ("MI300X", 8), ("L40S", 4)])
def test_engine_all_reduce_lines_give_the_same_time(gpu, n):
    """The inference-plan workbook takes the smaller of the two lines engine_all_reduce_lines gives: that is
    engine_all_reduce_s at every size; a link with no one-shot kernel (AMD's mesh, PCIe) is the ring alone."""
    link = collectives.link_class(catalog.gpu(gpu), n)
    ring, one = collectives.engine_all_reduce_lines(link, n)
    assert (one is None) == (link.kind != "nvlink")
    for size in (0, 16e3, 5e5, 4e6, 1.3e8):
        lines = [ring] + ([one] if one else [])
        assert min(a + b * size for a, b in lines) == pytest.approx(collectives.engine_all_reduce_s(link, n, size))
        if one is None:
            assert collectives.engine_all_reduce_s(link, n, size) == collectives.all_reduce_s(link, n, size)


def test_one_shot_wins_small_messages_and_the_ring_large():
    """Every GPU reads (n-1) x the message in a one-shot all-reduce and 2(n-1)/n x in a ring: one-shot is the faster
    for a decode batch, the ring for a prefill chunk, and sooner on more GPUs."""
    link4 = collectives.link_class(catalog.gpu("H100 SXM"), 4)
    link8 = collectives.link_class(catalog.gpu("H100 SXM"), 8)
    (r4, _), (o4, b4) = collectives.engine_all_reduce_lines(link4, 4)
    (r8, _), (o8, b8) = collectives.engine_all_reduce_lines(link8, 8)
    decode, chunk = 32 * 8192 * 2, 8192 * 8192 * 2
    assert collectives.engine_all_reduce_s(link4, 4, decode) == pytest.approx(o4 + b4 * decode)
    assert collectives.engine_all_reduce_s(link4, 4, chunk) < o4 + b4 * chunk
    crossing4 = (r4 - o4) / (b4 - collectives.engine_all_reduce_lines(link4, 4)[0][1])
    crossing8 = (r8 - o8) / (b8 - collectives.engine_all_reduce_lines(link8, 8)[0][1])
    assert crossing8 < crossing4
