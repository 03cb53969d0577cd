"""Self-hosting against a hosted API, for a serving scenario (issue 22 item 5).

The API price is the catalog's (`api_prices.csv`, every row dated and sourced): the cheapest
listed open-weight offer for the same model at the scenario's input/output mix, or, for a model
no API lists, the cheapest offer for the listed model nearest in total parameters within
`CLASS_RATIO` (its size class, named as such). Frontier APIs (not open-weight) are shown
beside it for reference, never as the like-for-like price. The self-hosted side is the report's
cash a month for the recommended fleet; the API bill is the scenario's monthly tokens at the API
prices, input and output apart.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from ..catalogs import catalog
from ..catalogs.catalog import ApiPrice, Model
from ..errors import FlopsheetError

# A model no API lists is compared with the listed model nearest in size when the two are within
# this factor of each other (8B vs 7B, 70B vs 72B): API prices track model size (and, for MoE,
# sit between active and total size), so a farther model is no like-for-like price.
CLASS_RATIO = 1.5
MINUTES_PER_MONTH = 730 * 60         # the report's month of 730 hours


@dataclass(frozen=True)
class ApiOffer:
    price: ApiPrice
    match: str                       # "same model" or "size class of <model>"


def offer_for(model: Model, prompt_tokens: float, output_tokens: float) -> ApiOffer | None:
    """The cheapest open-weight API offer for `model` at this mix (None: no listed model close in size)."""
    rows = [p for p in catalog.api_prices() if p.open_weight and p.usd_per_1m_input is not None
            and p.usd_per_1m_output is not None]
    same = [p for p in rows if (m := _named(p.model)) is not None and m.name == model.name]
    match = "same model"
    if not same:
        sized = [(abs(math.log(m.total_params / model.total_params)), p, m) for p in rows
                 if (m := _named(p.model)) is not None and m.total_params and model.total_params]
        near = [s for s in sized if s[0] <= math.log(CLASS_RATIO)]
        if not near:
            return None
        nearest = min(near, key=lambda s: s[0])[2]
        same = [p for _, p, m in near if m.name == nearest.name]
        match = f"size class of {nearest.name}"
    return ApiOffer(min(same, key=lambda p: p.blended(prompt_tokens, output_tokens)), match)


def frontier() -> list[ApiPrice]:
    return [p for p in catalog.api_prices() if not p.open_weight]


def _named(name: str) -> Model | None:
    try:
        return catalog.model(name)
    except FlopsheetError:
        return None


@dataclass(frozen=True)
class ApiComparison:
    """Per request, per 1M tokens and per month, the API against the recommended fleet."""
    provider: str
    api_model: str
    match: str
    usd_per_1m_input: float
    usd_per_1m_output: float
    api_usd_per_request: float
    self_host_usd_per_request: float
    api_usd_per_month: float
    self_host_usd_per_month: float
    breakeven_requests_per_minute: float   # average traffic at which this fleet's month costs the API's bill
    cheaper: str                           # "self-hosting" or "the API"
    source: str
    as_of: str


def compare(model: Model, prompt_tokens: float, output_tokens: float, requests_per_month: float,
            self_host_usd_per_month: float) -> ApiComparison | None:
    """The comparison at the scenario's average traffic; None when no API lists a model of this size."""
    offer = offer_for(model, prompt_tokens, output_tokens)
    if offer is None or requests_per_month <= 0:
        return None
    p = offer.price
    per_request = p.per_request(prompt_tokens, output_tokens)
    api_month = per_request * requests_per_month
    return ApiComparison(p.provider, p.model, offer.match, p.usd_per_1m_input or 0.0, p.usd_per_1m_output or 0.0,
                         per_request, self_host_usd_per_month / requests_per_month, api_month,
                         self_host_usd_per_month, self_host_usd_per_month / per_request / MINUTES_PER_MONTH,
                         "self-hosting" if self_host_usd_per_month < api_month else "the API", p.source, p.as_of)
