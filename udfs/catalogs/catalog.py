"""The catalogs: GPUs, cloud prices, models and number formats, read from the CSV files
in `udfs/data/` (every row carries `source` and `as_of`), overlaid with the user's private
catalogs (`private_catalog`: rows added or overriding by name). Only the standard library
is used, so the catalogs load in Pyodide too. Rows are loaded once, on first use.
"""

from __future__ import annotations

import csv
import io
import re
from dataclasses import dataclass, field, fields, replace
from functools import cache
from importlib import resources
from pathlib import Path

from .. import numbers
from . import private_catalog
from ..physics import shape
from ..errors import FlopsheetError, MissingFigure, na_error, quote, value_error
from .names import NameIndex, key


def _packaged(name: str) -> list[dict[str, str]]:
    text = resources.files("udfs").joinpath("data", name).read_text(encoding="utf-8")
    return list(csv.DictReader(io.StringIO(text)))


@cache
def columns(name: str) -> dict[str, str]:
    """A table's columns (packaged header order) with their types ("float | None", "bool", ...)."""
    cls = _table_class(name)
    types = {f.name: str(f.type) for f in fields(cls)} if cls else {}   # annotations are text (PEP 563)
    header = next(csv.reader(io.StringIO(resources.files("udfs").joinpath("data", name).read_text(encoding="utf-8"))))
    return {c: types.get(c, "str") for c in header}


@cache
def _in_effect() -> tuple[dict[str, list[tuple[dict[str, str], str]]], list]:
    """Every table merged with the private folders in effect, and their problems: the very
    check `flopsheet catalog check` runs (`validate`), so the two never disagree."""
    return validate(private_catalog.folders())


@cache
def rows_with_origin(name: str) -> tuple[tuple[dict[str, str], str], ...]:
    """Rows in effect (packaged, then private) with where each came from. A table with a bad
    private row (or a missing private folder) refuses to load, saying where and why."""
    if name not in TABLE_FILES:                # number formats: packaged only
        return tuple((row, private_catalog.PACKAGED) for row in _packaged(name))
    merged, problems = _in_effect()
    private_catalog.raise_problems([p for p in problems if p.table in ("", name)])
    return tuple(merged[name])


def _read(name: str) -> list[dict[str, str]]:
    return [row for row, _ in rows_with_origin(name)]


def _num(name: str, text: str) -> float | None:
    """A catalog figure (blank: not known), read by the one number rule (numbers.py), as
    `flopsheet catalog check` reads it."""
    text = (text or "").strip()
    return numbers.check(name, text) if text else None


def _bool(text: str) -> bool:
    return (text or "").strip().upper() in ("TRUE", "YES", "1")


def _split(text: str) -> list[str]:
    return [a.strip() for a in (text or "").split(";") if a.strip()]


NUMBER_TYPES = ("float", "int", "float | None", "int | None")   # required figures, and those that may be unknown


def _build(cls, raw: dict[str, str]):
    """Make a dataclass row from a CSV row, converting by the field's annotation (a field typed
    `float` is required: every row has it; `float | None` may be unknown, None)."""
    values: dict[str, object] = {}
    for f in fields(cls):
        if not f.init:                    # a derived field (Model's), filled by the class itself
            continue
        text = raw.get(f.name, "")
        if f.type in NUMBER_TYPES:
            v = _num(f.name, text)
            if v is None and "None" not in str(f.type):
                raise value_error(f"{cls.__name__} {raw.get('name') or ''} has no {f.name}, which every row needs")
            values[f.name] = int(v) if (v is not None and str(f.type).startswith("int")) else v
        elif f.type == "bool":
            values[f.name] = _bool(text)
        elif f.type == "tuple[str, ...]":
            values[f.name] = tuple(_split(text))
        else:
            values[f.name] = (text or "").strip()
    return cls(**values)


# ---------------------------------------------------------------- GPUs
@dataclass(frozen=True)
class Gpu:
    name: str
    vendor: str
    family: str
    form_factor: str
    aliases: tuple[str, ...]
    tier: str
    memory_gb: float                      # required (private_catalog.REQUIRED): the nameplate, as the datasheet says
    memory_type: str
    usable_gib: float | None              # GiB CUDA / ROCm reports as the device's total (blank: unmeasured)
    usable_source: str
    usable_as_of: str
    bandwidth_tbs: float
    fp32_tflops: float | None
    tf32_tflops: float | None
    bf16_tflops: float | None
    fp16_tflops: float | None
    fp8_tflops: float | None
    int8_tops: float | None
    fp4_tflops: float | None
    sparsity: str
    tdp_w: float | None
    interconnect: str
    interconnect_gbs: float | None
    launch_year: int | None
    price_usd: float | None               # the card (or module), central figure
    price_as_of: str
    price_source: str
    price_low_usd: float | None
    price_high_usd: float | None
    price_kind: str                       # list, street, reseller, analyst estimate, press, proxy
    system_price_usd: float | None        # all-in per GPU: its share of a complete server
    system_price_kind: str
    system_price_as_of: str
    system_price_source: str
    system_gpus: int | None               # GPUs in the smallest system sold (HGX/UBB board 8, NVL72 rack 72)
    lesson_price_usd: float | None        # the lesson's own figure, for its comparison table
    source: str
    as_of: str
    note: str

    @property
    def memory_gib(self) -> float:
        """GiB a job can budget on this GPU: the total CUDA / ROCm reports where published (usable_gib; less than
        the nameplate: the driver keeps some, and ECC on a GDDR card keeps 1/16), else the nameplate read as GiB
        (usable_source says so). The one figure every memory budget reads: fit checks, KV capacity, the batch that
        fits, training memory, the picker and the workbooks."""
        return self.usable_gib if self.usable_gib is not None else self.memory_gb

    def need(self, figure: str, needed_for: str) -> float:
        """A figure a calculation needs: the number, or #N/A naming the figure, the GPU and how
        to supply it (never a default in its place)."""
        value = getattr(self, figure)
        if value is None:
            raise MissingFigure(figure, self.name, needed_for, how_to_supply(figure, self))
        return float(value)

    def _format_rate(self, column: str) -> float | None:
        """The catalog's dense rate for a tensor column: 0 where the GPU has no units for the
        format, None where not known. On NVIDIA and AMD GPUs FP16 and BF16 run at one rate where
        both have units (SIXTEEN_BIT_VENDORS), so there one figure stands for the other."""
        value = getattr(self, column)
        if value is None and column in SIXTEEN_BIT and self.vendor in SIXTEEN_BIT_VENDORS:
            value = getattr(self, SIXTEEN_BIT[column]) or None   # the other's 0 (no units) says nothing of this one
        return value

    def tensor_tflops(self, precision: Precision | str) -> float | None:
        """The catalog's dense rate of the units a format's products run on (16-bit for int4,
        GGUF and NF4), or None where unknown or the GPU has no units for it."""
        return self._format_rate(as_precision(precision).tensor_column) or None

    def has_units(self, precision: Precision | str) -> bool | None:
        """Whether the GPU has tensor units for the format (None: the catalog does not say)."""
        rate = self._format_rate(as_precision(precision).tensor_column)
        return None if rate is None else rate > 0

    def weight_only(self, precision: Precision | str) -> bool:
        """The format's weights are dequantised to 16-bit for the products: by design (int4, GGUF,
        NF4: a 16-bit tensor column), or because the GPU has no units for a sub-16-bit format
        (FP8 on an A100, FP4 on an H100: what vLLM's weight-only kernels do)."""
        row = as_precision(precision)
        if row.bits_per_param >= 16:
            return False
        return row.tensor_column in SIXTEEN_BIT or self.has_units(row) is False

    def tensor_peak(self, precision: Precision | str, needed_for: str, weight_only: bool = True) -> TensorPeak:
        """The dense rate a format's matrix products really get on this GPU, and the width of the
        units they run on (which sets the engine's achieved share). A sub-16-bit format the GPU has
        no units for runs weight-only on its 16-bit units, never slower than 16-bit (refused when
        `weight_only` is False, as for training); a 16- or 32-bit format it lacks is refused; a
        figure the catalog does not have is #N/A naming it."""
        row = as_precision(precision)
        rate = self._format_rate(row.tensor_column)
        if rate is None:
            raise MissingFigure(row.tensor_column, self.name, needed_for, how_to_supply(row.tensor_column, self))
        if rate > 0:
            return TensorPeak(rate, unit_bits(row))
        if row.bits_per_param >= 16:
            other = "fp16" if row.tensor_column == "bf16_tflops" else "bf16"
            raise value_error(f"{self.name} has no {row.name} tensor units; use {other}")
        if not weight_only:
            raise value_error(f"{self.name} has no {row.name} tensor units, so {needed_for} cannot run in "
                              f"{row.name}; use bf16 or fp16")
        return self.sixteen_bit_peak(needed_for)

    def sixteen_bit_peak(self, needed_for: str) -> TensorPeak:
        """The 16-bit units' rate (BF16, or FP16 where the GPU has no BF16 units: T4, V100), on which
        attention and weight-only formats run."""
        for column in ("bf16_tflops", "fp16_tflops"):
            rate = self._format_rate(column)
            if rate is None:
                raise MissingFigure(column, self.name, needed_for, how_to_supply(column, self))
            if rate > 0:
                return TensorPeak(rate, 16)
        raise value_error(f"{self.name} has no 16-bit tensor units for {needed_for}")

    def nvlink_class(self, needed_for: str) -> bool:
        """A GPU-to-GPU link fast enough to shard a model across GPUs (see NVLINK_CLASS_GBS)."""
        return self.need("interconnect_gbs", needed_for) >= NVLINK_CLASS_GBS


@dataclass(frozen=True)
class TensorPeak:
    tflops: float        # dense TFLOPS the products run at
    bits: int            # width of the units they run on: 16, 8 or 4


# FP16 and BF16 dense tensor rates are equal on NVIDIA (Ampere and later) and AMD (CDNA) GPUs with units
# for both (their datasheets; tests/test_missing.py checks the catalog), so on those one figure gives
# the other. Not on Intel Gaudi 3 (FP16 a quarter of BF16).
SIXTEEN_BIT = {"fp16_tflops": "bf16_tflops", "bf16_tflops": "fp16_tflops"}
SIXTEEN_BIT_VENDORS = ("NVIDIA", "AMD")


def unit_bits(precision: Precision | str) -> int:
    """Width of the tensor units a format's products run on where the GPU has units for it."""
    row = as_precision(precision)
    if row.tensor_column in SIXTEEN_BIT or row.tensor_column in ("fp32_tflops", "tf32_tflops") \
            or row.bits_per_param >= 16:
        return 16
    return 8 if row.bits_per_param >= 8 else 4


# How to give a GPU figure the catalog lacks: GPU_DEFINE's argument where it has one, else the spec token.
_DEFINE_ARGS = ("memory_gb", "bandwidth_tbs", "bf16_tflops", "fp8_tflops", "tdp_w", "price_usd", "interconnect_gbs",
                "fp4_tflops")
_SPEC_TOKENS = {"fp32_tflops": "fp32=", "tf32_tflops": "tf32=", "fp16_tflops": "fp16=", "int8_tops": "int8="}


def how_to_supply(figure: str, gpu: Gpu) -> str:
    """Where a user gives a GPU figure the catalog lacks (the end of a MissingFigure message)."""
    define = (f"GPU_DEFINE(..., {figure}, ...)" if figure in _DEFINE_ARGS
              else f'a GPU spec with {_SPEC_TOKENS[figure]}... ("gpu: 80GB 3.35TB/s {_SPEC_TOKENS[figure]}...")'
              if figure in _SPEC_TOKENS else "GPU_DEFINE")
    if gpu.source == "GPU_DEFINE":           # a GPU described in a cell: add the figure there
        return f"give it in {define}"
    return (f"add it in a private catalog (a gpus.csv row with name {gpu.name!r} and {figure}, in a "
            f"FLOPSHEET_CATALOG folder) or describe the GPU with {define}")


# Tiers a deployment may draw on (GPU_RECOMMEND's `tiers`): one list, in the order a data centre prefers.
TIERS = ("datacenter", "workstation", "consumer")

# NVLink-class: GPU-to-GPU bandwidth (GB/s, bidirectional, as the catalog records it) at or above
# NVLink 2 (V100, 300 GB/s); below it (PCIe, consumer bridges) tensor parallelism is impractical.
NVLINK_CLASS_GBS = 300

_FORM_WORDS = {"SXM": ("SXM", "SXM4", "SXM5", "SXM2"), "PCIe": ("PCIe",), "NVL": ("NVL",),
               "OAM": ("OAM",), "HGX": ("HGX", "SXM"), "NVL72": ("NVL72",)}

GPU_FIELDS = {f.name for f in fields(Gpu)}

# ---------------------------------------------------------------- purchase prices
# The one place a GPU's purchase price is read (GPU_SPEC, GPU_COMPARE, the picker, the report, the
# workbooks). Three figures, three meanings (docs/cost-model.md, "Which price"):
#   card    the GPU (or module) alone, the central sourced figure: compare GPUs with it
#   system  all-in per GPU: its share of a complete server; what owning costs (picker, report,
#           DATACENTER_COST_PER_GPU_HOUR)
#   lesson  the lesson's own figure, kept only to reproduce its comparison table
PRICE_FIELDS = {"card": "price_usd", "system": "system_price_usd", "lesson": "lesson_price_usd"}
PURCHASE_PRICES = tuple(PRICE_FIELDS)


def gpu_price(gpu: Gpu, basis: str = "card") -> float | None:
    """A GPU's purchase price on one basis (card, system or lesson); None where none is sourced."""
    if basis not in PRICE_FIELDS:
        raise value_error(f"unknown price basis {quote(basis)}; use {', '.join(PURCHASE_PRICES)}")
    return getattr(gpu, PRICE_FIELDS[basis])


@cache
def gpus() -> tuple[Gpu, ...]:
    return tuple(_build(Gpu, r) for r in _read("gpus.csv"))


@cache
def _gpu_index() -> NameIndex[Gpu]:
    index: NameIndex[Gpu] = NameIndex("GPU")
    for g in gpus():
        mem = f"{g.memory_gb:g}GB" if g.memory_gb else ""
        forms = _FORM_WORDS.get(g.form_factor, ())
        loose = [g.family, f"{g.family} {mem}"]
        for form in forms:
            loose += [f"{g.family} {form}", f"{g.family} {form} {mem}", f"{g.family} {mem} {form}"]
        _add(index, g, g.name, g.aliases, loose)
    return index


def gpu(name: str) -> Gpu:
    """Look a GPU up by any of its names ("H100" is the SXM part, as in the lesson)."""
    return _gpu_index().resolve(name)


def gpu_names() -> list[str]:
    return [g.name for g in gpus()]


# ---------------------------------------------------------------- cloud prices
@dataclass(frozen=True)
class CloudPrice:
    provider: str
    instance: str
    gpu: str
    gpu_count: int | None
    region: str
    pricing: str
    usd_per_hour: float | None
    usd_per_gpu_hour: float | None
    price_date: str
    status: str
    source: str
    as_of: str
    note: str
    cluster_network_gbps: float | None = None   # GPU traffic between instances, Gb/s an instance (blank: none stated)
    network_source: str = ""

    def network_gbps_per_gpu(self) -> float | None:
        """Gb/s each GPU gets on the network between instances (None: the catalog states none)."""
        return self.cluster_network_gbps / (self.gpu_count or 1) if self.cluster_network_gbps else None


# ---------------------------------------------------------------- hosted-API prices
@dataclass(frozen=True)
class ApiPrice:
    """A hosted API's price for a model, per 1M tokens, input and output apart (api_prices.csv)."""
    provider: str
    model: str                             # the catalog model it serves (open weights), or the API's own name
    open_weight: bool
    usd_per_1m_input: float | None
    usd_per_1m_output: float | None
    source: str
    as_of: str
    note: str

    def blended(self, prompt_tokens: float, output_tokens: float) -> float:
        """$ per 1M tokens at a mix: (input price x prompt + output price x output) / (prompt + output)."""
        return ((self.usd_per_1m_input or 0) * prompt_tokens + (self.usd_per_1m_output or 0) * output_tokens) / (
            prompt_tokens + output_tokens)

    def per_request(self, prompt_tokens: float, output_tokens: float) -> float:
        return ((self.usd_per_1m_input or 0) * prompt_tokens + (self.usd_per_1m_output or 0) * output_tokens) / 1e6


@cache
def api_prices() -> tuple[ApiPrice, ...]:
    return tuple(_build(ApiPrice, r) for r in _read("api_prices.csv"))


PRICINGS = ("on-demand", "spot", "capacity-block", "reserved-1yr", "reserved-3yr", "community")
PRICE_SETS = ("current", "lesson", "historical")


@cache
def cloud_prices() -> tuple[CloudPrice, ...]:
    return tuple(_build(CloudPrice, r) for r in _read("cloud.csv"))


@cache
def _instance_index() -> NameIndex[str]:
    index: NameIndex[str] = NameIndex("cloud instance")
    for p in cloud_prices():
        if key(p.instance) not in index.exact:
            index.add(p.instance, p.instance)
    return index


def cheapest_cloud_price(gpu_name: str, pricing: str = "on-demand", together: int = 1, job_gpus: int | None = None,
                         joined_gbps: float = 0.0) -> CloudPrice | None:
    """The one home of "the cloud rate for N GPUs of this kind": the cheapest current row of a GPU for one pricing
    whose instance holds at least `together` of them (None when the catalog has none). A job of `job_gpus` GPUs
    more than an instance holds joins several instances: such a row qualifies only where the catalog states a
    network between its instances of at least `joined_gbps` Gb/s a GPU (one-GPU rentals over the public network
    are not a training cluster). The picker, the report, the plan and the workbooks all price through it."""
    def fits(p: CloudPrice) -> bool:
        n = p.gpu_count or 1
        return n >= together and (not job_gpus or job_gpus <= n or (p.network_gbps_per_gpu() or 0.0) >= joined_gbps > 0)
    priced = [(p.usd_per_gpu_hour, p) for p in cloud_prices() if p.gpu == gpu_name and p.status == "current"
              and p.pricing == pricing and p.usd_per_gpu_hour is not None and p.usd_per_gpu_hour > 0 and fits(p)]
    return min(priced, key=lambda rate_row: rate_row[0])[1] if priced else None


def cloud_price(instance: str, pricing: str = "on-demand", provider: str = "",
                price_set: str = "current") -> CloudPrice:
    """The newest matching price row of an instance (status `current` unless asked)."""
    name = _instance_index().resolve(instance, name_of=str)
    rows = [p for p in cloud_prices() if p.instance == name and p.status == price_set
            and (not provider or key(p.provider) == key(provider))]
    if not rows:
        raise na_error(f"no {price_set} prices for {name}" + (f" at {quote(provider)}" if provider else ""))
    matching = [p for p in rows if p.pricing == pricing]
    if not matching:
        have = ", ".join(sorted({p.pricing for p in rows}))
        raise na_error(f"no {price_set} {pricing} price for {name}; it has: {have}")
    return max(matching, key=lambda p: p.price_date)


# ---------------------------------------------------------------- models
@dataclass(frozen=True)
class Model:
    name: str
    aliases: tuple[str, ...]
    family: str
    params: float | None
    active_params: float | None
    published_params: float | None
    published_active_params: float | None
    layers: int | None
    hidden: int | None
    heads: int | None
    kv_heads: int | None
    head_dim: int | None
    ffn: int | None
    vocab: int | None
    tied_embeddings: bool
    gated_mlp: bool
    norm: str
    attn_bias: bool
    mlp_bias: bool
    pos_embedding: str
    n_experts: int | None
    experts_per_token: int | None
    shared_experts: int | None
    moe_layers: int | None
    dense_ffn: int | None
    sliding_window: int | None
    local_layers: int | None      # layers using the window (blank: all); the rest hold the whole context
    local_attention: str          # sliding (default) or chunked (Llama 4)
    kv_lora_rank: int | None
    q_lora_rank: int | None
    qk_rope_dim: int | None
    extras: tuple[str, ...]       # small additions to the parameter count (shape.EXTRAS)
    context_length: int | None
    source: str
    as_of: str
    note: str
    # The checkpoint's own format where its config.json has a `quantization_config` (blank: none), and the parts
    # it leaves unconverted at 16 bits (shape.KEEPABLE, from `modules_to_not_convert`): served in that format,
    # those parts count at 16 bits and the rest at the format (arch.weight_bytes); any other precision asked
    # applies to every weight, as for a model without such a config.
    quant_format: str
    quant_keep: tuple[str, ...]
    layout_from: str = ""         # not a column: the catalog model whose layout a bare count borrowed (resolve)
    # Derived once, here, whenever a model is made (catalog row, MODEL_DEFINE, imported config, borrowed layout;
    # `dataclasses.replace` fills them again): every estimate reads these, none re-derives them.
    head_size: int = field(init=False)            # head_dim, else hidden / heads
    kv_head_count: int = field(init=False)        # kv_heads, else heads (multi-head attention)
    total_params: float = field(init=False)       # params, else counted from the shape
    active: float = field(init=False)             # parameters a token uses: active_params, else total
    input_embedding_params: float = field(init=False)   # vocab x hidden: a row lookup, not a matrix product
    output_head_params: float = field(init=False)       # vocab x hidden when untied from the embedding, else 0
    moe_layer_count: int = field(init=False)
    expert_params: float = field(init=False)      # one routed expert, summed over the MoE layers (0: dense)
    shared_expert_params: float = field(init=False)     # the always-on shared experts, all MoE layers
    kept_params: float = field(init=False)        # held at 16 bits when served in quant_format (0: none)

    def __post_init__(self):
        for name, value in shape.derived(self).items():
            object.__setattr__(self, name, value)

    @property
    def is_moe(self) -> bool:
        return bool(self.n_experts)

    def dim(self, figure: str, needed_for: str = "this estimate") -> int:
        """A shape figure an estimate needs (layers, hidden, heads, n_experts, ...): the number, or
        #N/A naming it and how to give it (a model known only by its size has no shape)."""
        value = getattr(self, figure)
        if value is None:
            raise MissingFigure(figure, self.name, needed_for, "give the model's shape with MODEL_DEFINE(layers, hidden, "
                                "heads, kv_heads, ffn, vocab, ...) or a models.csv row in a FLOPSHEET_CATALOG folder")
        return int(value)

    @property
    def has_layout(self) -> bool:
        """Its own layout (layers, hidden, heads), not one borrowed for a bare count."""
        return shape.has_shape(self) and not self.layout_from


MODEL_FIELDS = {f.name for f in fields(Model) if f.init and f.name != "layout_from"}   # the catalog's columns
DERIVED_MODEL_FIELDS = ("layout_from",) + tuple(f.name for f in fields(Model) if not f.init)
_MODEL_SUFFIX = re.compile(r"(hf|instruct|chat|base|it)$")


@cache
def models() -> tuple[Model, ...]:
    return tuple(_complete(_build(Model, r)) for r in _read("models.csv"))


def _complete(m: Model) -> Model:
    """A private row may give only the shape: its parameter count columns are the counted ones."""
    if m.params or not m.total_params:
        return m
    return replace(m, params=m.total_params, active_params=m.active if m.is_moe else None)


def model_from_row(row: dict) -> Model:
    """A Model from a row of values (a MODEL_DEFINE spec, an imported config)."""
    return _complete(_build(Model, private_catalog.row_text(row, MODEL_FIELDS)))


def gpu_from_row(row: dict) -> Gpu:
    return _build(Gpu, private_catalog.row_text(row, GPU_FIELDS))


def size_only_model(params: float) -> Model:
    """A model known only by its parameter count (no shape yet: `resolve.model` lends it one)."""
    return _build(Model, {"name": f"{params / 1e9:.4g}B parameters", "params": repr(float(params))})


@cache
def _model_index() -> NameIndex[Model]:
    index: NameIndex[Model] = NameIndex("model")
    for m in models():
        _add(index, m, m.name, m.aliases)
    return index


def _add(index: NameIndex, row, name: str, aliases, loose=()) -> None:
    """Index a row; two rows sharing a name (possible only through a private catalog) is an
    error in that catalog, said as such."""
    try:
        index.add(row, name, aliases, loose)
    except ValueError as e:
        raise value_error(f"{e} (check the private catalog with `flopsheet catalog check`)") from None


def model(name: str) -> Model:
    index = _model_index()
    k = key(name)
    while k not in index.exact and _MODEL_SUFFIX.search(k):   # "...-Instruct-hf" -> base name
        k = _MODEL_SUFFIX.sub("", k)
    return index.exact.get(k) or index.resolve(name)


def is_model_name(name: str) -> bool:
    try:
        model(name)
        return True
    except FlopsheetError:
        return False


# ---------------------------------------------------------------- number formats
@dataclass(frozen=True)
class Precision:
    name: str
    bits_per_param: float
    aliases: tuple[str, ...]
    kind: str
    tensor_column: str
    source: str
    as_of: str
    note: str

    @property
    def bytes_per_param(self) -> float:
        return self.bits_per_param / 8


@cache
def precisions() -> tuple[Precision, ...]:
    return tuple(_build(Precision, r) for r in _read("precisions.csv"))


@cache
def _precision_index() -> NameIndex[Precision]:
    index: NameIndex[Precision] = NameIndex("precision")
    for p in precisions():
        index.add(p, p.name, p.aliases)
    return index


def precision_row(name: str) -> Precision:
    try:
        return _precision_index().exact[key(name)]
    except KeyError:
        valid = ", ".join(p.name for p in precisions())
        raise FlopsheetError(f"unknown precision {quote(name)}; valid: {valid}") from None


def as_precision(value: Precision | str) -> Precision:
    """The Precision row itself, or the row a name gives (engine entry points accept both;
    the registry has already turned worksheet arguments into rows)."""
    return value if isinstance(value, Precision) else precision_row(value)


TABLE_CLASSES = {"gpus.csv": Gpu, "models.csv": Model, "cloud.csv": CloudPrice, "api_prices.csv": ApiPrice}
TABLE_FILES = tuple(n for n in private_catalog.TABLES if resources.files("udfs").joinpath("data", n).is_file())
_CACHED = (gpus, _gpu_index, cloud_prices, _instance_index, models, _model_index, api_prices, rows_with_origin,
           _in_effect)


def _table_class(name: str):
    if name == "engines.csv":
        from .engines import Engine  # engines.py builds on this module, so it is imported late
        return Engine
    return TABLE_CLASSES.get(name)


def reload() -> None:
    """Forget loaded rows, so a changed private catalog (or FLOPSHEET_CATALOG) is read again."""
    from . import engines
    for function in (*_CACHED, engines.engines, engines._index):
        function.cache_clear()


def check_folder(folder: Path) -> tuple[list, list[str]]:
    """Problems of a private catalog folder checked against the packaged catalog, and a
    summary line per row (new, or which packaged row it overrides)."""
    merged, problems = validate([folder])
    summary = []
    for rows in merged.values():
        for row, origin in rows:
            if origin != private_catalog.PACKAGED:
                what = row.get("name") or f"{row.get('provider')} {row.get('instance')}"
                summary.append(f"{Path(origin).name}: {what}")
    return problems, summary


def validate(folders: list[Path]) -> tuple[dict[str, list], list]:
    """The one validator of private catalogs, for `flopsheet catalog check` and the loader:
    every table merged with `folders`, and every problem (file, line, column, why): cells by
    type and range, rows too short or duplicated, figures that contradict each other, prices
    for unknown GPUs, models without a size, names claimed twice, folders that are not there."""
    problems = private_catalog.folder_problems(folders)
    merged = {}
    for name in TABLE_FILES:
        rows, found = private_catalog.merge(name, _packaged(name), columns(name), folders)
        problems += found
        merged[name] = rows
        problems += [_problem(origin, column, why) for row, origin in rows if origin != private_catalog.PACKAGED
                     for column, why in private_catalog.row_problems(name, row)]
    problems += _cloud_problems(merged)
    problems += _model_problems(merged["models.csv"])
    problems += _checkpoint_problems(merged["models.csv"])
    problems += _engine_problems(merged.get("engines.csv", []))
    for name in ("gpus.csv", "models.csv", "engines.csv"):
        index: NameIndex = NameIndex(name)
        for row, origin in merged.get(name, []):
            try:
                index.add(row, row["name"], _split(row.get("aliases", "")))
            except ValueError as e:
                problems.append(_problem(origin, "aliases", str(e)))
    return merged, problems


def _cloud_problems(merged: dict) -> list:
    """Private prices must name a known GPU and a known pricing and status."""
    gpu_names = {key(r.get("name", "")) for r, _ in merged["gpus.csv"]}
    gpu_names |= {key(a) for r, _ in merged["gpus.csv"] for a in _split(r.get("aliases", ""))}
    problems = []
    for row, origin in merged.get("cloud.csv", []):
        if origin == private_catalog.PACKAGED:
            continue
        if key(row["gpu"]) not in gpu_names:
            problems.append(_problem(origin, "gpu", f"GPU {quote(row['gpu'])} is in no gpus.csv (packaged or private)"))
        for column, valid in (("pricing", PRICINGS), ("status", PRICE_SETS)):
            if row.get(column) not in valid:
                problems.append(_problem(origin, column, f"{quote(row.get(column))} must be one of {', '.join(valid)}"))
    return problems


def _model_problems(rows) -> list:
    """A private model needs its size: params, or the shape to count them from."""
    problems = []
    for row, origin in rows:
        if origin == private_catalog.PACKAGED:
            continue
        try:
            complete = _complete(_build(Model, row)).params
        except FlopsheetError:                # a bad number, reported with its cell
            continue
        if not complete:
            problems.append(_problem(origin, "params", "give params, or the shape (layers, hidden, heads, "
                                                       "kv_heads, ffn, vocab) to compute it from"))
    return problems


def _checkpoint_problems(rows) -> list:
    """A private model's checkpoint format must be a known precision and its kept parts ones the counter
    knows (shape.KEEPABLE): refused here, naming row and column, not at every later estimate of the model
    as if the precision asked were wrong."""
    problems = []
    for row, origin in rows:
        if origin == private_catalog.PACKAGED:
            continue
        fmt = (row.get("quant_format") or "").strip()
        if fmt:
            try:
                precision_row(fmt)
            except FlopsheetError as e:
                problems.append(_problem(origin, "quant_format", f"checkpoint format: {e}"))
        unknown = [part for part in _split(row.get("quant_keep", "")) if part not in shape.KEEPABLE]
        if unknown:
            problems.append(_problem(origin, "quant_keep", f"{', '.join(map(quote, unknown))} is not a part a "
                                     f"checkpoint may keep at 16 bits; parts: {', '.join(shape.KEEPABLE)}"))
        elif _split(row.get("quant_keep", "")) and not fmt:
            problems.append(_problem(origin, "quant_keep", "names kept parts but quant_format is blank: give the "
                                     "checkpoint's format the rest of the weights are in"))
    return problems


def _engine_problems(rows) -> list:
    """Private engine rows whose choices, fractions or formats do not read (engines.row_problems)."""
    from .engines import row_problems
    return [_problem(origin, column, message) for row, origin in rows if origin != private_catalog.PACKAGED
            for column, message in row_problems(row)]


def _problem(origin: str, column: str, message: str):
    file, line = origin.rsplit(":", 1)
    return private_catalog.Problem(file, int(line), column, message)


def catalog_date() -> str:
    """The newest `as_of` over all catalogs: the date printed on workbooks and reports."""
    dates = [r.as_of for table in (gpus(), cloud_prices(), models()) for r in table if r.as_of]
    return max(dates) if dates else ""
