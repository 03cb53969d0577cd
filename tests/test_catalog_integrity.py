"""Cloud prices that do not contradict themselves: a discount (spot, reserved, capacity block,
community) never costs more than on-demand for the same provider, instance, date and price set,
unless the row's note says why; the per-GPU figures the workbooks show keep spot below on-demand
(across providers a spot offer can cost more than another provider's on-demand: then the
workbooks show no spot figure for that GPU)."""

from collections import defaultdict

import pytest

from udfs.catalogs import catalog
from workbook_templates.catalog_sheets import cheapest

DISCOUNTS = ("spot", "capacity-block", "reserved-1yr", "reserved-3yr", "community")


def _explained(row) -> bool:
    return "above on-demand" in row.note


def test_discounts_at_most_on_demand_for_the_same_offer():
    offers = defaultdict(list)
    for p in catalog.cloud_prices():
        offers[(p.provider, p.instance, p.price_date, p.status)].append(p)
    compared, bad = 0, []
    for key, rows in offers.items():
        on_demand = [p.usd_per_gpu_hour for p in rows if p.pricing == "on-demand" and p.usd_per_gpu_hour]
        for p in rows:
            if p.pricing in DISCOUNTS and on_demand and p.usd_per_gpu_hour:
                compared += 1
                if p.usd_per_gpu_hour > min(on_demand) and not _explained(p):
                    bad.append(f"{key} {p.pricing} {p.usd_per_gpu_hour} > on-demand {min(on_demand)}")
    assert compared >= 10 and not bad, bad


@pytest.mark.parametrize("gpu", [g.name for g in catalog.gpus()])
def test_workbook_spot_figure_below_on_demand(gpu):
    od, spot = cheapest(gpu, "on-demand"), cheapest(gpu, "spot")
    assert spot is None or (od is not None and spot < od)


def test_l40s_spot_is_not_shown_as_a_saving():
    """The AWS L40S spot row (1.10) is real and below AWS's on-demand, but RunPod's on-demand is 0.86."""
    assert catalog.cheapest_cloud_price("L40S 48GB", "spot").usd_per_gpu_hour == pytest.approx(1.1027)
    assert cheapest("L40S 48GB", "on-demand") == pytest.approx(0.86)
    assert cheapest("L40S 48GB", "spot") is None


def test_per_gpu_price_is_the_instance_price_over_its_gpus():
    for p in catalog.cloud_prices():
        if p.usd_per_hour and p.gpu_count and p.usd_per_gpu_hour:
            assert p.usd_per_gpu_hour == pytest.approx(p.usd_per_hour / p.gpu_count, rel=6e-3), p
