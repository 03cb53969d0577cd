"""Evidence per estimate: how far the measured rows of an estimate's regime say it may be off.

A regime is defined here, once, for the accuracy tool (benchmarks/accuracy.py, which scores every
measured row out of sample and writes udfs/data/evidence.csv) and for the worksheet and the
picker (which read that file). Its parts:

- metric: decode (one sequence), throughput (a batch or the largest batch the engine runs:
  SERVING_THROUGHPUT, GPUS_FOR_TRAFFIC, cost per token), prefill (time to first token),
  training (whole-run GPU-hours: TRAINING_GPU_HOURS), memory (serving weights and KV cache),
  training_memory (per-GPU memory to train or fine-tune: TRAINING_MEMORY_GB, LORA_MEMORY_GB, QLORA_MEMORY_GB);
- engine (serving metrics; training and memory have none);
- vendor and GPU family (the catalog's `family`; a GPU_DEFINE GPU is a family of its own);
- architecture: dense or MoE;
- layout: one GPU or parallel (training: any, since GPU-hours are a total).

A regime is *measured* when at least one scored row has all six parts. The number format is not a part
of it (a regime's band is read over all its formats), but an estimate's evidence says which formats its
regime measured: `at_precision` counts the rows in the format asked (16-bit counts bf16 and fp16 as one:
same width, same tensor rate), and where none is, `label` and `text` say "measured in fp8, not bf16", so
a buyer told "measured" gets a measurement of what they buy or is told what was measured instead. Its band is the P10 and
P90 of the signed out-of-sample errors, (estimate - measured) / measured, of the first level
holding MIN_BAND_ROWS rows, going up LEVELS (regime, engine and vendor, vendor, metric; dense and MoE
kept apart below the metric level), joined
with the regime's own rows' P10..P90 so that a regime's own misses are never left out. An
unmeasured regime takes the band of the first level up with MIN_BAND_ROWS rows, widened
UNMEASURED_WIDENING times in log space and never narrower than any measured regime within that
level, and its text says "no measurement". A band always holds
0, so low <= point <= high. docs/accuracy.md states the rule and its basis.
"""

from __future__ import annotations

import csv
import io
import math
import statistics
from dataclasses import dataclass, fields
from functools import cache, lru_cache
from importlib import resources

from ..catalogs import engines
from ..errors import na_error
from ..words import plural

METRICS = ("decode", "throughput", "prefill", "training", "memory", "training_memory")
ESTIMATES = ("point", "low", "high")
# The levels a band falls back through, narrowest first: the Regime fields each one keeps. Dense and
# MoE stay apart below the metric level: MoE rows miss by far more (docs/accuracy.md, Known misses), so
# their errors would widen a dense model's band, and dense rows' would narrow a MoE model's.
LEVELS = (("regime", ("metric", "engine", "vendor", "family", "architecture", "layout")),
          ("engine and vendor", ("metric", "engine", "vendor", "architecture")),
          ("vendor", ("metric", "vendor", "architecture")),
          ("metric", ("metric",)))
# Fewest rows whose P10/P90 is read as a band (with fewer, P10 and P90 are the extremes of a
# handful of rows, and the next level up is used as well).
MIN_BAND_ROWS = 5
# Basis: on 155 measurements from sources the model had never seen (issue 20), the median
# absolute error was 25% where the published out-of-sample figure was ~7%: about 3.5x. A regime
# nothing measured is treated as such a source: its fallback band, in log space, x3.
UNMEASURED_WIDENING = 3.0
FILE = "evidence.csv"


@dataclass(frozen=True)
class Regime:
    metric: str
    engine: str           # "" for training and memory
    vendor: str
    family: str
    architecture: str     # dense or MoE
    layout: str           # one GPU, parallel, or any (training)

    def describe(self) -> str:
        parts = [self.engine, f"{self.vendor} {self.family}".strip(), self.architecture, self.layout]
        return f"{self.metric}: " + ", ".join(p for p in parts if p and p != "any")

    def key(self, level: tuple[str, ...]) -> tuple[str, ...]:
        return tuple(getattr(self, f) for f in level)


@dataclass(frozen=True)
class Measured:
    """One scored measured row, as udfs/data/evidence.csv ships it."""
    metric: str
    engine: str
    vendor: str
    family: str
    architecture: str
    layout: str
    model: str
    params_b: float
    gpu: str
    precision: str
    n_gpus: int
    error_in: float       # with the shipped constants
    error_out: float      # every constant chosen from rows re-chosen without this row
    row: str              # measured file:line
    description: str
    source: str
    as_of: str

    @property
    def regime(self) -> Regime:
        return Regime(self.metric, self.engine, self.vendor, self.family, self.architecture, self.layout)


COLUMNS = tuple(f.name for f in fields(Measured))


def family_of(gpu) -> str:
    """The GPU family of the regime: the catalog's, or the GPU's own name for one described in a
    cell (GPU_DEFINE), which no measured row shares."""
    if getattr(gpu, "source", "") == "GPU_DEFINE" or not getattr(gpu, "family", ""):
        return f"{gpu.name} (defined)"
    return gpu.family


def regime_of(metric: str, gpu, moe: bool, n_gpus: int | None = 1, engine: str = "") -> Regime:
    """The regime of an estimate (or of a measured row). `engine` is the engine profile's name."""
    if metric not in METRICS:
        raise ValueError(f"metric {metric!r}: one of {', '.join(METRICS)}")
    serving = metric in ("decode", "throughput", "prefill")
    layout = "any" if metric == "training" else ("parallel" if (n_gpus or 1) > 1 else "one GPU")
    return Regime(metric, engine if serving else "", gpu.vendor or "", family_of(gpu), "MoE" if moe else "dense",
                  layout)


# ---------------------------------------------------------------------------- the shipped rows

def parse(text: str) -> tuple[Measured, ...]:
    rows = []
    for r in csv.DictReader(io.StringIO(text)):
        rows.append(Measured(
            metric=r["metric"], engine=r["engine"], vendor=r["vendor"], family=r["family"],
            architecture=r["architecture"], layout=r["layout"], model=r["model"], params_b=float(r["params_b"]),
            gpu=r["gpu"], precision=r["precision"], n_gpus=int(r["n_gpus"]), error_in=float(r["error_in"]),
            error_out=float(r["error_out"]), row=r["row"], description=r["description"], source=r["source"],
            as_of=r["as_of"]))
    return tuple(rows)


def render(rows: list[Measured]) -> str:
    """The CSV text of udfs/data/evidence.csv (the accuracy tool writes it with this)."""
    out = io.StringIO()
    writer = csv.writer(out, lineterminator="\n")
    writer.writerow(COLUMNS)
    for m in rows:
        writer.writerow([f"{getattr(m, c):.4f}" if c in ("error_in", "error_out") else
                         f"{m.params_b:g}" if c == "params_b" else getattr(m, c) for c in COLUMNS])
    return out.getvalue()


@cache
def measured() -> tuple[Measured, ...]:
    return parse(resources.files("udfs").joinpath("data", FILE).read_text(encoding="utf-8"))


# ---------------------------------------------------------------------------- bands

def band_of(errors: list[float]) -> tuple[float, float]:
    """P10 and P90 of signed errors (inclusive quantiles; one row: its error twice)."""
    if len(errors) == 1:
        return errors[0], errors[0]
    q = statistics.quantiles(errors, n=10, method="inclusive")
    return q[0], q[-1]


# Formats whose measurements stand for each other: the same width and the same tensor-core rate on every
# GPU that has both (a bf16 estimate and an fp16 measurement are the same bytes and FLOPs).
SAME_FORMAT = {"bf16": "16-bit", "fp16": "16-bit"}


def format_class(precision: str) -> str:
    """The format a measurement counts for: bf16 and fp16 are one (16-bit), any other format itself."""
    name = str(precision or "").lower()
    return SAME_FORMAT.get(name, name)


def widen(error: float, factor: float) -> float:
    """An error scaled in log space: (1 + e)^factor - 1 (never below -100%)."""
    return math.exp(math.log1p(error) * factor) - 1


@dataclass(frozen=True)
class Evidence:
    regime: Regime
    rows: int                      # measured rows in the regime itself
    low_error: float               # P10 of signed error, <= 0
    high_error: float              # P90 of signed error, >= 0
    basis: str                     # where the band comes from
    nearest: Measured | None       # the closest measured configuration (in the regime, else the level used)
    precision: str = ""            # the format asked ("" when none was)
    at_precision: int = 0          # the regime's rows in that format (format_class)
    formats: tuple[str, ...] = ()  # the formats the regime's rows measured, most rows first
    other_models: tuple[str, ...] = ()   # a MoE regime measured only on these models, not the one asked

    @property
    def measured(self) -> bool:
        return self.rows > 0

    @property
    def same_format(self) -> bool:
        """A measured regime with a row in the format asked (or no format asked)."""
        return self.measured and (not self.precision or self.at_precision > 0)

    @property
    def format_phrase(self) -> str:
        """"in fp8, not bf16" where the regime's rows measured only other formats than the one asked; else ""."""
        return "" if not self.measured or self.same_format else f"in {'/'.join(self.formats)}, not {self.precision}"

    @property
    def label(self) -> str:
        """"measured", "measured in fp8, not bf16" (the regime measured only other formats) or "unverified"."""
        if not self.measured:
            return "unverified"
        return f"measured {self.format_phrase}" if self.format_phrase else "measured"

    def value_range(self, point: float, inverse: bool = False) -> tuple[float, float]:
        """(low, high) of a result from its point. Error e = estimate / truth - 1, so the truth
        is point / (1 + e); a result inverse to the metric (GPUs or cost for a throughput) moves
        the other way: point x (1 + e)."""
        if inverse:
            return point * (1 + self.low_error), point * (1 + self.high_error)
        return point / (1 + self.high_error), point / (1 + self.low_error)

    def pick(self, point: float, estimate: str, inverse: bool = False) -> float:
        if estimate == "point":
            return point
        low, high = self.value_range(point, inverse)
        return low if estimate == "low" else high

    def text(self) -> str:
        band = f"P10 {self.low_error:+.0%}, P90 {self.high_error:+.0%}"
        near = "" if self.nearest is None else (f"; nearest measured: {self.nearest.description} "
                                                 f"({self.nearest.error_out:+.1%} out of sample)")
        if self.measured:
            return (f"{plural(self.rows, 'measured row')} in this regime "
                    f"({self.regime.describe()}){self._formats_text()}; error band {band} ({self.basis}){near}")
        if self.other_models:
            return (f"no measurement of this MoE model in this regime ({self.regime.describe()}: its rows measure "
                    f"{', '.join(self.other_models)}, and a MoE step's fixed time chosen from one model's rows does "
                    f"not carry to another); error band {band} ({self.basis}){near}")
        return (f"no measurement in this regime ({self.regime.describe()}); error band {band} ({self.basis})"
                f"{near.replace('nearest measured', 'nearest measured configuration, outside this regime')}")


    def _formats_text(self) -> str:
        """Which formats measured the regime, where not all were the one asked."""
        if not self.precision or self.at_precision == self.rows:
            return ""
        if not self.at_precision:
            return f", measured in {'/'.join(self.formats)}, none in {self.precision} (the format asked)"
        same = [f for f in self.formats if format_class(f) == format_class(self.precision)]
        asked = "the format asked" if same == [self.precision] else f"counted for {self.precision}: same width and rate"
        rest = "/".join(f for f in self.formats if f not in same)
        return f", {self.at_precision} of them in {'/'.join(same)} ({asked}), the rest in {rest}"


def _at(level: tuple[str, ...], regime: Regime, rows: tuple[Measured, ...]) -> list[Measured]:
    return [m for m in rows if m.regime.key(level) == regime.key(level)]


def _distance(m: Measured, gpu: str, family: str, params_b: float | None, precision: str, n_gpus: int) -> float:
    """How far a measured configuration is from the one asked about: GPU (same 0, same family 1,
    else 2), model size (|log2| of the parameter ratio), precision (0.5) and GPUs (0.5 x |log2|)."""
    d = 0.0 if m.gpu == gpu else (1.0 if m.family == family else 2.0)
    if params_b and m.params_b:
        d += abs(math.log2(params_b / m.params_b))
    d += 0.0 if not precision or format_class(m.precision) == format_class(precision) else 0.5
    return d + 0.5 * abs(math.log2(max(n_gpus, 1) / max(m.n_gpus, 1)))


def _found(regime: Regime, rows: tuple[Measured, ...], start: int) -> tuple[str, list[Measured]]:
    """The first level from `start` up holding MIN_BAND_ROWS rows (the metric level at worst)."""
    for name, level in LEVELS[start:-1]:
        found = _at(level, regime, rows)
        if len(found) >= MIN_BAND_ROWS:
            return name, found
    return LEVELS[-1][0], _at(LEVELS[-1][1], regime, rows)


def _widest_regime(rows: list[Measured]) -> tuple[float, float]:
    """The hull of the P10..P90 bands of every measured regime among `rows`."""
    bands = [band_of([m.error_out for m in rows if m.regime == r]) for r in {m.regime for m in rows}]
    return min(b[0] for b in bands), max(b[1] for b in bands)


def other_moe_models(regime: Regime, own: list[Measured], model: str) -> tuple[str, ...]:
    """The models a MoE regime's rows measure where none is `model` (else ()). A MoE step rests on a fixed time a
    MoE layer chosen from measured MoE rows (calibration.MOE_LAYER_US), which does not carry from one model to
    another: re-chosen without a model's rows and scored on them, the 270 rows it is chosen from miss by 28.7%, against
    12.5% with folds dealt by row (docs/accuracy.md, targets table). So a MoE model its regime never measured is read
    as a regime nothing measured: the band of the level above, widened UNMEASURED_WIDENING times."""
    if regime.architecture != "MoE" or not model or not own or any(m.model == model for m in own):
        return ()
    return tuple(sorted({m.model for m in own}))


@lru_cache(maxsize=4096)      # the picker asks for many options; the shipped rows never change in a run
def lookup(regime: Regime, gpu: str = "", params_b: float | None = None, precision: str = "",
           n_gpus: int = 1, rows: tuple[Measured, ...] | None = None, model: str = "") -> Evidence:
    """The evidence for an estimate in `regime` (rows: the shipped ones by default) of `model` (a catalog name;
    "" where none is known): a MoE model its regime's rows do not measure is unmeasured there (other_moe_models)."""
    rows = measured() if rows is None else rows
    own = _at(LEVELS[0][1], regime, rows)
    others = other_moe_models(regime, own, model)
    own = [] if others else own
    name, found = _found(regime, rows, 0 if own else 1)
    if not found:
        raise na_error(f"no measured row for the metric {regime.metric}: its estimates carry no evidence")
    low, high = band_of([m.error_out for m in found])
    if own:
        own_low, own_high = band_of([m.error_out for m in own])
        low, high = min(low, own_low), max(high, own_high)
        basis = (f"P10/P90 of its {len(own)} rows" if len(found) == len(own) else
                 f"P10/P90 of its rows and of the {len(found)} rows of its {name} level")
    else:
        wide_low, wide_high = _widest_regime(found)
        low = min(widen(min(low, 0.0), UNMEASURED_WIDENING), wide_low)
        high = max(widen(max(high, 0.0), UNMEASURED_WIDENING), wide_high)
        basis = (f"the {len(found)} rows of its {name} level, widened x{UNMEASURED_WIDENING:g} in log space, "
                 f"and no narrower than any measured regime among them")
    nearest = min(own or found, key=lambda m: _distance(m, gpu, regime.family, params_b, precision, n_gpus))
    same = [m for m in own if format_class(m.precision) == format_class(precision)]
    counts = {f: sum(m.precision == f for m in own) for f in {m.precision for m in own}}
    formats = tuple(sorted(counts, key=lambda f: (-counts[f], f)))
    return Evidence(regime, len(own), min(low, 0.0), max(high, 0.0), basis, nearest, precision, len(same), formats,
                    others)


def for_option(metric: str, model, gpu, precision="", n_gpus: int | None = 1, engine=None) -> Evidence:
    """Evidence for an estimate of `metric` for a model (catalog Model, or None for a bare
    parameter count: dense) on a GPU, with an engine (profile, name, or blank: the GPU's default).
    `.measured`, `.rows`, `.low_error` / `.high_error` (the band), `.value_range(point)` and
    `.text()` are what the worksheet, the picker and the report show."""
    moe = bool(model is not None and model.is_moe)
    name = engines.engine(engine or None, gpu).name if metric in ("decode", "throughput", "prefill") else ""
    regime = regime_of(metric, gpu, moe, n_gpus, name)
    params_b = model.params / 1e9 if model is not None and getattr(model, "params", None) else None
    return lookup(regime, gpu.name, params_b, str(getattr(precision, "name", precision) or ""), n_gpus or 1,
                  model=model.name if moe else "")
