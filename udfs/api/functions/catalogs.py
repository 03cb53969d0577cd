"""Catalog look-ups: GPU and model specs, cloud prices, and the lesson's GPU comparison."""

from collections.abc import Callable

from ...catalogs import catalog
from ...physics import defaults, lesson
from ...planning import api_compare
from ..coerce import to_text
from ...errors import na_error, quote, value_error
from ...catalogs.names import key
from ..registry import Arg, worksheet
from ..table import Table
from ...units import GB, GIB
from .common import GPU, MODEL, PRICE_SET, PRICING

# The lesson's comparison set (its GPU comparison table), in its order.
LESSON_GPUS = ("H100 SXM 80GB", "A100 SXM 80GB", "A100 SXM 40GB", "L40S 48GB", "RTX 4090 24GB",
               "RTX 3090 24GB", "A10G 24GB")


def _field(row, field: str, fields: set[str], what: str, how: Callable[[str], str] | None = None):
    """A catalog cell. With `how`, a blank is #N/A naming the field and how to supply it (a GPU's
    blank is unknown, never an empty cell that reads as zero); without, blank (a model's blank
    sliding_window or n_experts means it has none)."""
    name = key(field)
    prices = {v: k for k, v in catalog.PRICE_FIELDS.items()} if what == "GPU" else {}
    for f in sorted(fields):
        if key(f) == name:
            value = catalog.gpu_price(row, prices[f]) if f in prices else getattr(row, f)
            if isinstance(value, tuple):
                return ";".join(value)
            if value is None or value == "":
                if how is None:
                    return ""
                raise na_error(f"the catalog has no {f} for {row.name}: {how(f)}")
            return value
    raise value_error(f"unknown {what} field {quote(field)}; valid: {', '.join(sorted(fields))}")


@worksheet("GPU_SPEC", "One catalog figure of a GPU (dense tensor figures; memory in GB as the vendor states it; "
           "bandwidth in TB/s; TDP in W; price_usd = the card, system_price_usd = all-in per GPU in a server, each with "
           "its _kind, _as_of and _source).", "the field's unit", "Catalog",
           [GPU, Arg("field", "text", "Catalog column, e.g. bf16_tflops, memory_gb, bandwidth_tbs, tdp_w, price_usd, "
                     "price_kind, system_price_usd, source")],
           returns="any", examples=[(("H100", "bf16_tflops"), 989.5), (("RTX 4090", "memory_gb"), 24.0),
                                    (("nvidia h100 sxm5 80gb", "bandwidth_tbs"), 3.35), (("H100", "system_price_usd"), 39625.0)],
           kind="field")
def gpu_spec(gpu, field):
    return _field(gpu, field, catalog.GPU_FIELDS, "GPU", lambda f: catalog.how_to_supply(f, gpu))


@worksheet("MODEL_SPEC", "One catalog figure of a model's architecture (layers, hidden, heads, kv_heads, head_dim, "
           "ffn, vocab, params, context_length, ...), or one derived from them as every estimate uses it "
           "(head_size, kv_head_count, total_params, active, input_embedding_params, output_head_params, "
           "expert_params, shared_expert_params, moe_layer_count; layout_from: the catalog model whose layout a "
           "bare parameter count borrows).", "the field's unit", "Catalog",
           [MODEL, Arg("field", "text", "Catalog column or derived figure, e.g. params, layers, kv_heads, "
                       "context_length, head_size, expert_params, layout_from")],
           returns="any", examples=[(("Llama 2 70B", "layers"), 80), (("Llama 2 7B", "params"), 6738415616)], kind="field")
def model_spec(model, field):
    return _field(model, field, catalog.MODEL_FIELDS | set(catalog.DERIVED_MODEL_FIELDS), "model")


GPU_LIST_COLUMNS = ("name", "vendor", "tier", "memory_gb", "usable_gib", "bandwidth_tbs", "fp32_tflops", "tf32_tflops",
                    "bf16_tflops", "fp16_tflops", "fp8_tflops", "int8_tops", "fp4_tflops", "tdp_w",
                    "interconnect_gbs", "price_usd", "price_kind", "price_as_of", "system_price_usd", "source", "as_of")


@worksheet("GPU_LIST", "The GPU catalog as a table (dense figures), optionally one tier.", "table", "Catalog",
           [Arg("tier", "choice", "Only this tier", choices=("all", "datacenter", "workstation", "consumer"), default="all")],
           returns="table", examples=[(("datacenter",), None)], kind="table")
def gpu_list(tier):
    prices = {field: basis for basis, field in catalog.PRICE_FIELDS.items()}
    rows = [[catalog.gpu_price(g, prices[c]) if c in prices else getattr(g, c) for c in GPU_LIST_COLUMNS]
            for g in catalog.gpus() if tier in ("all", g.tier)]
    return Table(list(GPU_LIST_COLUMNS), rows)


def _names(value) -> list[str]:
    """GPU names from a comma-separated text or a range (2-D list) of names."""
    if isinstance(value, (list, tuple)):
        flat = [v for row in value for v in (row if isinstance(row, (list, tuple)) else [row])]
        return [to_text("gpus", v) for v in flat if v not in (None, "")]
    return [n.strip() for n in str(value).split(",") if n.strip()]


def compare_row(g: catalog.Gpu, model_size_gb: float = 14.0, efficiency: float = defaults.BANDWIDTH_EFFICIENCY,
                price: str = "card") -> list:
    """The lesson's derived metrics for one GPU (its `build_gpu_comparison_dataframe`), at the
    purchase price of the basis asked for (catalog.gpu_price: card, system or lesson)."""
    usd = catalog.gpu_price(g, price)
    price_k = usd / 1000 if usd else None
    bw = g.bandwidth_tbs
    fits = g.memory_gib * GIB >= model_size_gb * GB  # CUDA's GiB against the model's decimal GB
    return [g.name, g.tier, g.memory_gb, g.bf16_tflops, g.fp8_tflops, bw, g.interconnect_gbs, g.tdp_w, usd,
            bw * 1000 / price_k if (bw and price_k) else None,
            g.bf16_tflops / price_k if (g.bf16_tflops and price_k) else None,
            lesson.tokens_per_sec(bw, model_size_gb, 1, efficiency) if (bw and fits) else None,
            price if usd else ""]


COMPARE_HEADER = ["GPU", "Tier", "VRAM_GB", "BF16_TFLOPS", "FP8_TFLOPS", "Bandwidth_TBs", "Interconnect_GBs",
                  "TDP_W", "Price_USD", "BW_per_kUSD", "TFLOPS_per_kUSD", "7B_FP16_tokens_per_sec", "Price_basis"]


@worksheet("GPU_COMPARE", "The lesson's GPU comparison with derived metrics: bandwidth per $1k (GB/s), dense BF16 "
           "TFLOPS per $1k, and 7B FP16 decode tokens/s at batch 1 and 70% bandwidth efficiency. Price_USD is "
           "GPU_SPEC's price of the basis asked for: card (price_usd, default), system (system_price_usd, all-in "
           "per GPU in a server) or lesson (lesson_price_usd: the lesson's table is GPU_COMPARE(\"lesson\",,"
           "\"lesson\")).", "table", "Catalog",
           [Arg("gpus", "list", "GPU names (comma-separated text or a range); \"lesson\" for the lesson's set; "
                "\"all\" for every GPU priced on the basis", default="lesson"),
            Arg("sort_by", "choice", "Column to sort by (descending)",
                choices=("none", "BW_per_kUSD", "TFLOPS_per_kUSD", "7B_FP16_tokens_per_sec", "Price_USD"),
                default="none"),
            Arg("price", "choice", "Which purchase price: card (the GPU alone, today's catalog), system (all-in "
                "per GPU in a server) or lesson (the lesson's own figures)", choices=catalog.PURCHASE_PRICES,
                default="card")],
           returns="table", examples=[(("lesson", "BW_per_kUSD"), None), (("H100, RTX 4090",), None),
                                      (("lesson", "none", "lesson"), None)], kind="table")
def gpu_compare(gpus, sort_by, price):
    names = _names(gpus)
    if names == ["lesson"]:
        chosen = [catalog.gpu(n) for n in LESSON_GPUS]
    elif names == ["all"]:
        chosen = [g for g in catalog.gpus() if catalog.gpu_price(g, price)]
    else:
        chosen = [catalog.gpu(n) for n in names]
    rows = [compare_row(g, price=price) for g in chosen]
    if sort_by != "none":
        col = COMPARE_HEADER.index(sort_by)
        rows.sort(key=lambda r: -(r[col] if r[col] is not None else float("-inf")))
    return Table(COMPARE_HEADER, rows)


@worksheet("CLOUD_PRICE", "Hourly price of a cloud instance from the catalog (newest sourced price unless price_set "
           "says otherwise), for the whole instance or per GPU.", "$/hour", "Catalog",
           [Arg("instance", "text", "Instance or SKU name, e.g. p5.48xlarge, p4d.24xlarge, g6e.xlarge"),
            PRICING, Arg("provider", "text", "Provider, when an instance name is offered by several", default=""),
            PRICE_SET, Arg("per", "choice", "Price of the whole instance or per GPU", choices=("instance", "gpu"),
                           default="instance")],
           examples=[(("p5.48xlarge",), 55.04), (("p5.48xlarge", "on-demand", "", "lesson"), 98.32),
                     (("p4de.24xlarge", "spot", "", "lesson"), 12.29),
                     (("p5.48xlarge", "on-demand", "", "current", "gpu"), 6.88)], kind="money")
def cloud_price(instance, pricing, provider, price_set, per):
    row = catalog.cloud_price(instance, pricing, provider, price_set)
    return row.usd_per_gpu_hour if per == "gpu" else row.usd_per_hour


CLOUD_COLUMNS = ("provider", "instance", "gpu", "gpu_count", "region", "pricing", "usd_per_hour",
                 "usd_per_gpu_hour", "price_date", "status", "source")


@worksheet("CLOUD_LIST", "Cloud prices from the catalog as a table, optionally for one provider or GPU.",
           "table", "Catalog",
           [Arg("provider", "text", "Only this provider (AWS, Azure, GCP, Lambda, CoreWeave, RunPod, ...)", default=""),
            Arg("gpu", "text", "Only instances with this GPU", default=""), PRICE_SET],
           returns="table", examples=[(("AWS", "H100", "current"), None)], kind="table")
def cloud_list(provider, gpu, price_set):
    wanted = catalog.gpu(gpu).name if gpu else None
    rows = [[getattr(p, c) for c in CLOUD_COLUMNS] for p in catalog.cloud_prices()
            if p.status == price_set and (not provider or key(p.provider) == key(provider))
            and (wanted is None or p.gpu == wanted)]
    return Table(list(CLOUD_COLUMNS), rows)


API_COLUMNS = ("provider", "model", "open_weight", "usd_per_1m_input", "usd_per_1m_output", "as_of", "source")
API_HEADER = [*API_COLUMNS, "match"]


@worksheet("API_PRICE_LIST", "Hosted-API prices from the catalog (per 1M input and output tokens, dated and "
           "sourced). With a model: the offer the reports compare with (the cheapest open-weight offer for the same "
           "model, else for the listed model nearest in size within 1.5x, at the given mix), then the frontier APIs "
           "for reference.", "table", "Catalog",
           [Arg("model", "model", "Only offers for this model (blank: every row)", default=""),
            Arg("prompt_tokens", "number", "Prompt tokens per request (for the cheapest offer at this mix)", "tokens",
                default=defaults.PROMPT_TOKENS, min=1),
            Arg("output_tokens", "number", "Output tokens per request", "tokens", default=defaults.OUTPUT_TOKENS,
                min=1)],
           returns="table", examples=[(("Llama 3.1 8B",), None), ((), None)], kind="table")
def api_price_list(model, prompt_tokens, output_tokens):
    rows = [(p, "") for p in catalog.api_prices()]
    if model:
        offer = api_compare.offer_for(model, prompt_tokens, output_tokens)
        rows = ([(offer.price, offer.match)] if offer else []) + [(p, "frontier, for reference")
                                                                   for p in api_compare.frontier()]
    return Table(API_HEADER, [[getattr(p, c) for c in API_COLUMNS] + [match] for p, match in rows])
