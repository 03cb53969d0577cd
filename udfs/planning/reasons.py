"""Why an option wins or fails, as data: a status from a closed set and the figures behind
it. Code decides on the status; people read `text()`, rendered from one table of templates,
so GPU_RANK, GPU_RECOMMEND and the report say the same thing the same way."""

from __future__ import annotations

import string
from dataclasses import dataclass, field
from enum import StrEnum

from ..words import plural


class Status(StrEnum):
    OK = "ok"
    NO_SPEC = "no_spec"                      # the catalog lacks a figure this workload needs
    NO_FIT = "no_fit"                        # the model does not fit the GPUs' memory
    NEEDS_NVLINK = "needs_nvlink"            # must be sharded, and the GPU has no NVLink-class link
    MISSES_DEADLINE = "misses_deadline"
    TOO_SLOW = "too_slow"                    # each request slower than the latency target
    TOO_LITTLE_THROUGHPUT = "too_little_throughput"
    NO_PRICE = "no_price"
    NO_NETWORK = "no_network"                # a job over several rented instances, none with a network between them
    OVER_BUDGET = "over_budget"
    NOT_LICENSED = "not_licensed"            # GeForce card: the driver licence forbids data-centre use
    TIER_EXCLUDED = "tier_excluded"          # a tier the `tiers` argument leaves out
    UNVERIFIED = "unverified"                # no measured row in its regime (physics.evidence)


class _Counted(string.Formatter):
    """str.format plus a counted noun: "{count:@GPU}" -> "1 GPU" / "8 GPUs" (words.plural)."""

    def format_field(self, value, format_spec: str) -> str:
        if format_spec.startswith("@"):
            return plural(value, format_spec[1:])
        return super().format_field(value, format_spec)


_WORDS = _Counted()

# (status, the figures given) -> text; a reason with figures no template names fails loudly
TEMPLATES: dict[tuple[Status, frozenset[str]], str] = {
    (Status.OK, frozenset()): "winner",
    (Status.OK, frozenset({"cost_ratio"})): "fits, {cost_ratio:.2f}x the winner's cost",
    (Status.OK, frozenset({"time_ratio"})): "fits, {time_ratio:.2f}x the winner's time",
    (Status.NO_SPEC, frozenset({"detail"})): "{detail}",
    (Status.NO_SPEC, frozenset({"figure", "needed_for", "how"})):
        "not comparable: {needed_for} needs {figure}, which the catalog does not have ({how})",
    (Status.NO_FIT, frozenset({"need", "usable", "gpu"})):
        "does not fit: needs {need} per GPU, {usable:.1f} GiB usable on {gpu}",
    (Status.NO_FIT, frozenset({"sharded", "need", "usable", "gpu"})):
        "does not fit even sharded over many GPUs: what each GPU holds whatever their number (activations, "
        "overhead, the layer being gathered) needs {need}, {usable:.1f} GiB usable on {gpu}",
    (Status.NO_FIT, frozenset({"max_per_copy", "need", "usable", "gpu"})):
        "does not fit: needs more than {max_per_copy:@GPU} per copy (on {max_per_copy}: needs {need} per GPU, "
        "{usable:.1f} GiB usable on {gpu})",
    (Status.NO_FIT, frozenset({"count", "per_copy"})): "does not fit: one copy of the model needs {per_copy:@GPU}",
    (Status.NO_FIT, frozenset({"count", "min_count"})):
        "does not fit on {count:@GPU}: the model needs at least {min_count}",
    (Status.NEEDS_NVLINK, frozenset({"gpu", "link_gbs", "needed_gbs"})):
        "needs the model sharded across GPUs, and {gpu} has no NVLink-class link ({link_gbs:g} GB/s; "
        "needs >= {needed_gbs:g})",
    (Status.MISSES_DEADLINE, frozenset({"count"})): "misses the deadline: would need {count:@GPU}",
    (Status.MISSES_DEADLINE, frozenset({"days", "deadline"})): "misses the deadline: {days:,.1f} days > {deadline:g}",
    (Status.TOO_SLOW, frozenset({"tokens_per_sec", "needed"})):
        "too slow for the latency target: {tokens_per_sec:.1f} tokens/s per request < {needed:.1f} needed",
    (Status.TOO_SLOW, frozenset({"latency_s", "target_s"})):
        "too slow for the latency target: a whole request takes {latency_s:,.3g} s even alone > {target_s:.3g} s",
    (Status.TOO_LITTLE_THROUGHPUT, frozenset({"capacity", "needed"})):
        "too little throughput: {capacity:,.0f} tokens/s < {needed:,.0f} needed",
    (Status.NO_PRICE, frozenset({"basis"})): "no {basis} price in the catalog",
    (Status.NO_PRICE, frozenset({"basis", "together"})):
        "no {basis} instance in the catalog holds {together} of these GPUs on one link (a copy's tensor-parallel "
        "group, or a job's GPUs up to a server)",
    (Status.NO_NETWORK, frozenset({"gpu", "count", "unit", "needed_gbps"})):
        "no training cluster: {count:@GPU} of {gpu} span instances of {unit}, and no catalog instance of it "
        "states a network between instances of {needed_gbps:g} Gb/s a GPU (what the training model assumes); "
        "rentals joined over the public network are not a training cluster",
    (Status.NO_PRICE, frozenset({"basis", "scenario"})): "no {basis} price in the catalog or the scenario",
    (Status.OVER_BUDGET, frozenset({"cost", "budget", "what"})): "over budget: {what} ${cost:,.0f} > ${budget:,.0f}",
    (Status.NOT_LICENSED, frozenset({"gpu", "include"})):
        "left out: {gpu} is a GeForce card - NVIDIA's GeForce driver licence (section 2.1.3, 'No Datacenter "
        "Deployment') does not allow data-centre use; PCIe only (no NVLink for tensor parallel) and no ECC memory "
        "by default. Include it with tiers = \"{include}\"",
    (Status.TIER_EXCLUDED, frozenset({"tier", "link", "include"})):
        "left out: a {tier} card, built for a desk rather than a rack, PCIe only ({link}: no "
        "NVLink-class link for tensor parallel). Include it with tiers = \"{include}\"",
}
_UNVERIFIED = ("no measurement in its regime ({regime}); to verify it, {ask}. Include it with {include}")
TEMPLATES[(Status.UNVERIFIED, frozenset({"regime", "ask", "include"}))] = "unverified: " + _UNVERIFIED
for _ratio, _what in (("cost_ratio", "cost"), ("time_ratio", "time")):
    TEMPLATES[(Status.UNVERIFIED, frozenset({"regime", "ask", "include", _ratio}))] = \
        f"unverified ({{{_ratio}:.2f}}x the winner's {_what}): " + _UNVERIFIED


@dataclass(frozen=True)
class Reason:
    status: Status
    figures: dict = field(default_factory=dict)

    @property
    def ok(self) -> bool:
        return self.status is Status.OK

    def text(self) -> str:
        return _WORDS.format(TEMPLATES[(self.status, frozenset(self.figures))], **self.figures)

    __str__ = text


WINNER = Reason(Status.OK)
