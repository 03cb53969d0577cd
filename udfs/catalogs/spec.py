"""Models and GPUs described in a cell: the spec texts MODEL_DEFINE and GPU_DEFINE return,
which every `model` and `gpu` argument accepts.

    model: 32L d4096 h32/kv8 ffn14336 v128256
    model: 48L d2048 h32/kv4 hd128 ffn6144 v151936 experts128/top8 moe_ffn768 qk_norm name="Qwen3 30B-A3B"
    gpu: 80GB 3.35TB/s bf16=989.5 fp8=1979 HBM3 700W $30000 link900 vendor=NVIDIA name="H100"

A spec is a list of tokens (any order; `name=` may be quoted). Parsing gives the same row
dict a catalog CSV line gives, so a spec is built into a catalog `Model`/`Gpu` the way the
catalog builds its rows, and formatting a row gives its spec back (a round trip).
"""

from __future__ import annotations

import re
import shlex
from dataclasses import dataclass
from functools import lru_cache
from types import SimpleNamespace
from collections.abc import Callable

from ..errors import num_error, value_error
from ..physics.shape import EXTRAS, counts

MODEL_PREFIX, GPU_PREFIX = "model:", "gpu:"
# One way to match each number ("12", "1.5", ".5", "2e3"): a pattern with two ways to split
# a run of digits (as [0-9]*\.?[0-9]+ had) backtracks quadratically on a long word of digits.
_NUM = r"((?:\d+(?:\.\d+)?|\.\d+)(?:e[+-]?\d+)?)"
# The longest spec text read: the longest real spec is about 200 characters and a name at most
# names.MAX_NAME_CHARS; refusing longer texts first bounds the work any one cell can ask for.
MAX_SPEC_CHARS = 1000


def fmt_number(x: float) -> str:
    """Shortest exact text of a number: 128256, 3.35, 989.5."""
    return str(int(x)) if float(x).is_integer() else repr(float(x))


def is_model_spec(text) -> bool:
    return isinstance(text, str) and text.strip().lower().startswith(MODEL_PREFIX)


def is_gpu_spec(text) -> bool:
    return isinstance(text, str) and text.strip().lower().startswith(GPU_PREFIX)


@dataclass(frozen=True)
class Token:
    pattern: str                       # full-match regex, case-insensitive
    fields: tuple[str, ...]            # row fields its groups fill, in order
    convert: Callable = int
    text: Callable[[dict], str | None] = lambda row: None   # how a row writes it (None: omitted)
    flag: tuple[str, object] | tuple[()] = ()    # a bare word: sets field to value


def _tok(pattern, fields, convert=int, text=None, flag=()):
    return Token(pattern, tuple(fields), convert, text or (lambda row: None), flag)


def _has(*names):
    return lambda row: all(row.get(n) not in (None, "", 0) for n in names)


def _given(name):
    return lambda row: row.get(name) not in (None, "")


def _when(test, render):
    return lambda row: render(row) if test(row) else None


# ---------------------------------------------------------------- model spec
MODEL_TOKENS = (
    _tok(r"(\d+)L", ["layers"], text=lambda r: f"{r['layers']}L"),
    _tok(r"d(\d+)", ["hidden"], text=lambda r: f"d{r['hidden']}"),
    _tok(r"h(\d+)/kv(\d+)", ["heads", "kv_heads"], text=lambda r: f"h{r['heads']}/kv{r.get('kv_heads') or r['heads']}"),
    _tok(r"hd(\d+)", ["head_dim"], text=_when(lambda r: r.get("head_dim") and r["head_dim"] != r["hidden"] // r["heads"],
                                              lambda r: f"hd{r['head_dim']}")),
    _tok(r"ffn(\d+)", ["spec_ffn"], text=lambda r: f"ffn{r['spec_ffn']}"),
    _tok(r"v(\d+)", ["vocab"], text=lambda r: f"v{r['vocab']}"),
    _tok(r"experts(\d+)/top(\d+)", ["n_experts", "experts_per_token"],
         text=_when(_has("n_experts"), lambda r: f"experts{r['n_experts']}/top{r.get('experts_per_token') or 1}")),
    _tok(r"shared(\d+)", ["shared_experts"], text=_when(_has("shared_experts"), lambda r: f"shared{r['shared_experts']}")),
    _tok(r"moe_ffn(\d+)", ["moe_ffn"], text=_when(lambda r: r.get("moe_ffn") and r["moe_ffn"] != r["spec_ffn"],
                                                  lambda r: f"moe_ffn{r['moe_ffn']}")),
    _tok(r"dense(\d+)", ["dense_layers"], text=_when(_has("dense_layers"), lambda r: f"dense{r['dense_layers']}")),
    _tok(r"window(\d+)", ["sliding_window"], text=_when(_has("sliding_window"), lambda r: f"window{r['sliding_window']}")),
    _tok(r"local(\d+)", ["local_layers"], text=_when(_has("local_layers"), lambda r: f"local{r['local_layers']}")),
    _tok(r"chunked", [], flag=("local_attention", "chunked"),
         text=_when(lambda r: r.get("local_attention") == "chunked", lambda r: "chunked")),
    _tok(r"mla(\d+)/(\d+)", ["kv_lora_rank", "qk_rope_dim"],
         text=_when(_has("kv_lora_rank"), lambda r: f"mla{r['kv_lora_rank']}/{r.get('qk_rope_dim') or 0}")),
    _tok(r"q_lora(\d+)", ["q_lora_rank"], text=_when(_has("q_lora_rank"), lambda r: f"q_lora{r['q_lora_rank']}")),
    _tok(r"ctx(\d+)", ["context_length"], text=_when(_has("context_length"), lambda r: f"ctx{r['context_length']}")),
    _tok(r"tied", [], flag=("tied_embeddings", True), text=_when(_has("tied_embeddings"), lambda r: "tied")),
    _tok(r"bias", [], flag=("attn_bias", True), text=_when(_has("attn_bias"), lambda r: "bias")),
    _tok(r"mlp_bias", [], flag=("mlp_bias", True), text=_when(_has("mlp_bias"), lambda r: "mlp_bias")),
    _tok(r"learned_pos", [], flag=("pos_embedding", "learned"),
         text=_when(lambda r: r.get("pos_embedding") == "learned", lambda r: "learned_pos")),
    _tok(r"gelu", [], flag=("gated_mlp", False), text=_when(lambda r: r.get("gated_mlp") is False, lambda r: "gelu")),
    _tok(r"layernorm", [], flag=("norm", "layernorm"), text=_when(lambda r: r.get("norm") == "layernorm",
                                                                  lambda r: "layernorm")),
)
_EXTRA_TOKEN = re.compile("|".join(EXTRAS), re.I)
MODEL_DEFAULTS: dict[str, object] = {"gated_mlp": True, "norm": "rmsnorm", "tied_embeddings": False, "attn_bias": False,
                  "mlp_bias": False, "pos_embedding": "rope", "extras": ()}
REQUIRED_MODEL = ("layers", "hidden", "heads", "vocab", "spec_ffn")


def _split(text: str, prefix: str) -> tuple[list[str], str]:
    if len(text) > MAX_SPEC_CHARS:
        raise value_error(f"a {prefix[:-1]} spec text is at most {MAX_SPEC_CHARS:,} characters; "
                          f"this one has {len(text):,}")
    body = text.strip()[len(prefix):]
    try:
        words = shlex.split(body)
    except ValueError as e:
        raise value_error(f"cannot read {text!r}: {e}") from None
    name = ""
    rest = []
    for w in words:
        if w.lower().startswith("name="):
            name = w[5:].strip()
        else:
            rest.append(w)
    return rest, name


def _parse(words: list[str], tokens, what: str, extra=None) -> dict:
    row: dict = {}
    for w in words:
        for t in tokens:
            m = re.fullmatch(t.pattern, w, re.I)
            if m:
                if t.flag:
                    row[t.flag[0]] = t.flag[1]
                for field, group in zip(t.fields, m.groups()):
                    row[field] = t.convert(group)
                break
        else:
            if extra is None or not extra(row, w):
                raise value_error(f"{what} spec: unknown token {w!r}; expected e.g. {EXAMPLES[what]}")
    return row


def _model_extra(row: dict, word: str) -> bool:
    if _EXTRA_TOKEN.fullmatch(word):
        row["extras"] = tuple(row.get("extras", ())) + (word.lower(),)
        return True
    return False


def parse_model(text: str) -> dict:
    """A model spec to its catalog row (values), with exact parameter counts."""
    words, name = _split(text, MODEL_PREFIX)
    spec = _parse(words, MODEL_TOKENS, "model", _model_extra)
    missing = [f for f in REQUIRED_MODEL if not spec.get(f)]
    if missing or "kv_heads" not in spec:
        need = [{"spec_ffn": "ffn"}.get(f, f) for f in missing] + ([] if "kv_heads" in spec else ["heads/kv_heads"])
        raise value_error(f"model spec lacks {', '.join(need)}; expected e.g. {EXAMPLES['model']}")
    return model_row(spec, name)


def model_row(spec: dict, name: str = "") -> dict:
    """Spec fields (ffn = dense MLP width, moe_ffn = expert width, dense_layers = non-MoE
    layers) to catalog columns (ffn = expert width for MoE, dense_ffn, moe_layers)."""
    row = dict(MODEL_DEFAULTS)
    row.update({k: v for k, v in spec.items() if k not in ("spec_ffn", "moe_ffn", "dense_layers")})
    _check_model(row, spec)
    if spec.get("n_experts"):
        dense = spec.get("dense_layers") or 0      # a spec without `dense` has none
        row.update(ffn=spec.get("moe_ffn") or spec["spec_ffn"], moe_layers=spec["layers"] - dense,
                   dense_ffn=spec["spec_ffn"] if dense else None)
    else:
        row["ffn"] = spec["spec_ffn"]
    n = counts(SimpleNamespace(**row))
    row.update(params=n["total"], active_params=n["active"] if spec.get("n_experts") else None)
    _within_limits("models.csv", row, "model")
    row["name"] = name or format_model(row)
    row.setdefault("source", "MODEL_DEFINE")
    return row


def _within_limits(table: str, row: dict, what: str) -> None:
    """The ranges a catalog row of `table` must meet (private_catalog.LIMITS: the one range
    check), so a spec text is held to what a private catalog CSV is: 1e308 TB/s is refused."""
    from . import catalog, private_catalog
    columns = catalog.columns(table)
    reasons = private_catalog.row_reasons(table, private_catalog.row_text(row, columns), columns)
    if reasons:
        raise num_error(f"{what} spec: {reasons[0][1]}")


def _check_model(row: dict, spec: dict) -> None:
    """Shapes that cannot exist, said plainly (a spec is typed by hand)."""
    checks = [(row["heads"] % (row.get("kv_heads") or row["heads"]) == 0, "heads must be a multiple of kv_heads"),
              ((row.get("kv_heads") or 1) <= row["heads"], "kv_heads cannot exceed heads"),
              (row.get("head_dim") or row["hidden"] // row["heads"] > 0, "hidden must be at least heads"),
              (not spec.get("n_experts") or spec.get("experts_per_token"),
               "experts need experts_per_token (the routed experts each token uses, top-k)"),
              (not spec.get("n_experts") or (spec.get("experts_per_token") or 0) <= spec["n_experts"],
               "experts_per_token cannot exceed experts"),
              ((spec.get("dense_layers") or 0) <= row["layers"], "dense layers cannot exceed layers"),
              ((row.get("local_layers") or 0) <= row["layers"], "local layers cannot exceed layers"),
              (not row.get("local_layers") or row.get("sliding_window"), "local layers need a sliding window")]
    for ok, message in checks:
        if not ok:
            raise value_error(f"model spec: {message}")


def _spec_fields(row: dict) -> dict:
    """Catalog columns back to spec fields (inverse of `model_row`)."""
    spec = dict(row)
    if row.get("n_experts"):
        moe_layers = row.get("moe_layers") or row["layers"]
        spec.update(spec_ffn=row.get("dense_ffn") or row["ffn"], moe_ffn=row["ffn"],
                    dense_layers=row["layers"] - moe_layers)
    else:
        spec["spec_ffn"] = row["ffn"]
    return spec


def _quote(name: str) -> str:
    """Bare when it is one word, else in double quotes (readable inside an Excel string)."""
    if re.fullmatch(r"[\w.\-/]+", name):
        return name
    return '"' + name.replace("\\", "\\\\").replace('"', '\\"') + '"'


def _spec_text(prefix: str, words: list[str], name: str) -> str:
    """The words that have a value, then the name, behind the spec's prefix."""
    if name:
        words = [*words, f"name={_quote(name)}"]
    return prefix + " " + " ".join(w for w in words if w)


def _row_of(entry) -> dict:
    """A catalog dataclass (Model, Gpu) as the row dict the formatters read."""
    return {k: getattr(entry, k) for k in entry.__dataclass_fields__}


def format_model(row: dict, name: str = "") -> str:
    spec = _spec_fields(row)
    words = [t.text(spec) for t in MODEL_TOKENS] + list(row.get("extras") or ())
    return _spec_text(MODEL_PREFIX, words, name)


def model_from_catalog(model) -> str:
    """The spec of a catalog `Model` (its name kept)."""
    return format_model(_row_of(model), model.name)


# ---------------------------------------------------------------- GPU spec
_TENSOR = ("fp32", "tf32", "bf16", "fp16", "fp8", "fp4")
GPU_TOKENS = (
    _tok(_NUM + r"GB", ["memory_gb"], float, lambda r: f"{fmt_number(r['memory_gb'])}GB"),
    _tok(_NUM + r"TB/s", ["bandwidth_tbs"], float, lambda r: f"{fmt_number(r['bandwidth_tbs'])}TB/s"),
    # a tensor figure of 0 is kept: the GPU has no units for the format (blank: not known)
    *[_tok(fr"{p}={_NUM}", [f"{p}_tflops"], float,
           _when(_given(f"{p}_tflops"), lambda r, p=p: f"{p}={fmt_number(r[f'{p}_tflops'])}")) for p in _TENSOR],
    _tok(fr"int8={_NUM}", ["int8_tops"], float,
         _when(_given("int8_tops"), lambda r: f"int8={fmt_number(r['int8_tops'])}")),
    _tok(r"((?:HBM|GDDR|LPDDR)[\w.]*|unified)", ["memory_type"], str,
         _when(_has("memory_type"), lambda r: re.split(r"[^\w.]", r["memory_type"], maxsplit=1)[0])),
    _tok(_NUM + r"W", ["tdp_w"], float, _when(_has("tdp_w"), lambda r: f"{fmt_number(r['tdp_w'])}W")),
    _tok(r"\$" + _NUM, ["price_usd"], float, _when(_has("price_usd"), lambda r: f"${fmt_number(r['price_usd'])}")),
    _tok(r"link" + _NUM, ["interconnect_gbs"], float,
         _when(_has("interconnect_gbs"), lambda r: f"link{fmt_number(r['interconnect_gbs'])}")),
    _tok(r"vendor=([\w.\-]+)", ["vendor"], str, _when(_has("vendor"), lambda r: f"vendor={r['vendor']}")),
    # the GiB CUDA / ROCm reports as the device's total (blank: the nameplate is the budget, as for an unmeasured row)
    _tok(r"usable=" + _NUM + r"GiB", ["usable_gib"], float,
         _when(_has("usable_gib"), lambda r: f"usable={fmt_number(r['usable_gib'])}GiB")),
)
REQUIRED_GPU = ("memory_gb", "bandwidth_tbs")
EXAMPLES = {"model": "model: 32L d4096 h32/kv8 ffn14336 v128256",
            "GPU": "gpu: 80GB 3.35TB/s bf16=989.5 fp8=1979 HBM3 700W"}


def parse_gpu(text: str) -> dict:
    words, name = _split(text, GPU_PREFIX)
    row = _parse([w.replace(",", "") for w in words], GPU_TOKENS, "GPU")
    missing = [f for f in REQUIRED_GPU if not row.get(f)]
    if missing:
        raise value_error(f"GPU spec lacks {', '.join(missing)}; expected e.g. {EXAMPLES['GPU']}")
    return gpu_row(row, name)


def gpu_row(row: dict, name: str = "") -> dict:
    row = {k: v for k, v in row.items() if v not in (None, "")}
    if row.get("memory_type") == "unified":
        row["memory_type"] = "Unified memory"
    if row.get("interconnect_gbs"):
        row.setdefault("interconnect", f"{fmt_number(row['interconnect_gbs'])} GB/s")
    _within_limits("gpus.csv", row, "GPU")
    row["name"] = name or format_gpu(row)
    row.setdefault("source", "GPU_DEFINE")
    return row


def format_gpu(row: dict, name: str = "") -> str:
    shown = dict(row)
    if shown.get("memory_type") == "Unified memory":
        shown["memory_type"] = "unified"
    return _spec_text(GPU_PREFIX, [t.text(shown) for t in GPU_TOKENS], name)


def gpu_from_catalog(gpu) -> str:
    return format_gpu(_row_of(gpu), gpu.name)


# ---------------------------------------------------------------- built once per text
# (a bounded cache: a server sees endless distinct texts)
@lru_cache(maxsize=1024)
def model(text: str):
    """The catalog `Model` a model spec describes (parsed once per distinct text)."""
    from . import catalog
    return catalog.model_from_row(parse_model(text))


@lru_cache(maxsize=1024)
def gpu(text: str):
    from . import catalog
    return catalog.gpu_from_row(parse_gpu(text))
