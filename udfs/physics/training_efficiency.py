"""Training efficiency: the model FLOPs utilisation (MFU) a training run reaches, by GPU generation x
precision x dense/MoE x scope.

scope says what the figure includes:
- steady: steady-state training throughput (the MFU a benchmark or a paper's throughput table reports);
- run: whole-run GPU-hours (what a model card's GPU-hours imply): restarts after failures,
  checkpointing, evaluation, stragglers and other time the GPUs are held but not training.

**steady** is a step-time model (`steady`): the time a token takes on one GPU is
  the matrix products, 6·N FLOPs at `share` of the precision's dense tensor peak,
+ causal attention, 6·layers·seq·width FLOPs (QKᵀ and AV, forward and backward, half the square masked) on the
  16-bit units at flash attention's share (calibration.ATTENTION_FRACTION),
+ the memory-bound work between them (norms, activations, residuals, rotary: calibration.NONMATRIX_BYTES a hidden
  unit a layer) at the memory bandwidth,
+ for a mixture-of-experts model, its routing (`moe_seconds`): the permutes that copy each token to its k experts and
  back (moe.routing_seconds, forward and again for the gradients) at the memory bandwidth, and the expert-parallel
  all-to-alls, four per MoE layer (dispatch and combine forward, their gradients backward), over the expert group's
  link (collectives: NVLink inside a server, each GPU's NIC across servers), exposed: within a micro-batch the
  dispatch, the experts' products and the combine run one after the other,
and the MFU is 6·N / (peak x that time). The one constant chosen from rows is `share`, the achieved share of the
tensor peak on the matrix products, ONE per generation x precision x dense/MoE: each row's share is the one that
reproduces its MFU under the model (`share_from`), and a cell is the median of its rows' shares (the rule:
`cells_from`; size class "any"). A MoE row whose routing the model adds chooses no share (the accuracy tool leaves
it out of the rule): a MoE model trains at the dense share plus its routing, and such rows only score that.
Size and sequence length move the MFU through the physics, not through cells:
a small hidden size spends more of its time in memory-bound work, a long sequence in attention.

**run** is the steady-state MFU x TRAINING_GOODPUT (the share of a run's wall-clock time spent training:
restarts after failures, checkpointing, evaluation; the Llama 3 paper's >90%). No run figure is chosen from
whole-run rows, but the rule was picked after scoring it and the size-class cells of their median MFU on the same
20 whole-run rows: the cells scored worse at the shipped fold deal (26.3% vs 17.9%) and a point better over 30 deals
(16.3% vs 17.2%) and leaving one source out (16.8% vs 17.1%), so 17.9% is out of sample for the figures, not for that
choice (docs/accuracy.md, "Whole runs"); whole-run rows only score it.

The accuracy tool writes the file from benchmarks/measured/training_measured.csv and scores every row against a
table chosen without that row's source. MFU is counted on the active parameters, 6·N·D, against the dense tensor
peak of the training precision (fp8 rows against the fp8 peak). Where a cell has no measured row, `lookup` falls
back by a stated rule and says so in its basis (`Efficiency.basis`; measured False):
  steady: the share of the nearest generation in NEAREST (Blackwell -> Hopper, CDNA3 -> Hopper, Ada -> Ampere,
  ...), else the median of every generation's shares of that precision;
  run: the steady figure, with those fallbacks, x TRAINING_GOODPUT;
and fp8 with no fp8 cell of its own is the bf16 figure times the fp8 / bf16 steady MFU ratio of the nearest
generation measured in both (at this model's shape), or FP8_FALLBACK where none is; a MoE model with no MoE cell
in its own generation gets the dense share with its routing and exchange by physics (moe_seconds; x
TRAINING_GOODPUT for a whole run), and a MoE model whose routing is not known the dense figure x
MOE_TRAINING_EFFICIENCY.
Precisions other than bf16 and fp8 have no cells: 16-bit fp16 takes the bf16 cells (same tensor peak); any other
precision takes them too, and the basis says so.
"""

from __future__ import annotations

import csv
import io
import math
import statistics
from dataclasses import dataclass, fields, replace
from functools import cache
from importlib import resources

from . import calibration as cal, collectives, moe
from .defaults import SEQ_LEN
from ..catalogs import resolve
from ..catalogs.catalog import Gpu, Model
from ..errors import na_error, value_error
from ..units import TERA

FILE = "training_efficiency.csv"
# The scopes a caller asks for. The shipped table holds steady cells only: scope run is computed from them
# (_run: steady x TRAINING_GOODPUT) and no code reads a run cell.
SCOPES = ("run", "steady")
ARCHITECTURES = ("dense", "MoE")
# Size classes by active parameters (small runs, 1-13B; large, 30-70B; frontier, 175B and up): the cells of the
# replaced size-class rule, which the accuracy tool still scores as a baseline.
SIZE_CLASSES = (("<20B", 0.0), ("20-100B", 20e9), (">=100B", 100e9))
ANY_SIZE = "any"          # the size class of a steady share: one for every size
# fp8 / bf16 MFU where no generation has both measured: half, i.e. an fp8 run no faster than bf16
# (every catalog GPU with both lists an fp8 dense peak twice its bf16 one). Measured fp8 runs are
# faster than bf16 but reach less of their fp8 peak (llm-foundry's H100 FP8 table), so this is the
# cautious end.
FP8_FALLBACK = 0.5
# The architecture generation of each catalog GPU family (the vendors' own names for them).
GENERATION_BY_FAMILY = {
    **dict.fromkeys(("A100", "A10", "A10G", "A40", "RTX A6000", "RTX 3090", "RTX 3090 Ti"), "Ampere"),
    **dict.fromkeys(("H100", "H200", "H20"), "Hopper"),
    **dict.fromkeys(("L40S", "L40", "L4", "L20", "RTX 6000 Ada", "RTX 4090", "RTX 4080"), "Ada"),
    **dict.fromkeys(("B200", "GB200", "B300", "GB300", "RTX PRO 6000 Blackwell", "RTX 5090"), "Blackwell"),
    **dict.fromkeys(("MI300X", "MI325X"), "CDNA3"), "MI355X": "CDNA4",
    "V100": "Volta", "T4": "Turing", "Gaudi 3": "Gaudi",
}
# Where a generation has no cell, the generations tried next, nearest first: the previous generation
# of the same vendor, or for another vendor's the NVIDIA generation of the same years.
NEAREST = {"Blackwell": ("Hopper",), "Hopper": ("Ampere",), "Ampere": ("Hopper",), "Ada": ("Ampere",),
           "Volta": ("Ampere",), "Turing": ("Ampere",), "CDNA3": ("Hopper",), "CDNA4": ("CDNA3", "Hopper"),
           "Gaudi": ("Hopper",)}
KEY = ("generation", "precision", "size_class", "architecture", "scope")


@dataclass(frozen=True)
class Cell:
    """One table cell, as udfs/data/training_efficiency.csv ships it: a steady cell's value (size class "any") is
    the achieved share of the tensor peak on the matrix products. Every cell is scope steady: a whole run is the
    steady figure x TRAINING_GOODPUT (_run), so a run-scope cell is never read."""
    generation: str
    precision: str
    size_class: str
    architecture: str
    scope: str
    value: float
    rows: int
    source: str           # the measured rows it is the median of (benchmarks/measured/...:line, model)
    as_of: str

    def key(self) -> tuple[str, ...]:
        return tuple(getattr(self, k) for k in KEY)


@dataclass(frozen=True)
class Point:
    """One measured row as the rule reads it (value: its whole-run MFU, or its steady share, share_from)."""
    generation: str
    precision: str
    size_class: str
    architecture: str
    scope: str
    value: float
    row: str


@dataclass(frozen=True)
class Efficiency:
    mfu: float
    basis: str
    measured: bool        # True: an exact cell (no fallback step)


@dataclass(frozen=True)
class Shape:
    """What the step-time model reads of a model and its training sequence."""
    params: float         # active parameters N: 6·N FLOPs a token in the matrix products
    layers: int
    hidden: int
    attention_width: int  # query heads x head size: the width of QKᵀ and AV
    seq_len: int
    routed_model: Model | None = None   # a mixture-of-experts model whose routing moe_seconds reads (top-k, MoE layers)
    expert_parallel: int = 0      # GPUs its experts are spread over; 0: expert_group's rule
    job_gpus: int = 0             # GPUs of the whole job where known (caps expert_group's rule); 0: not known

    def text(self) -> str:
        m = self.routed_model
        routed = "" if m is None else \
            f", top-{m.experts_per_token} of {m.n_experts} experts in {m.moe_layer_count} layers" + \
            (f" over EP{self.expert_parallel}" if self.expert_parallel else "")
        return f"{self.layers} layers x {self.hidden} hidden, {self.seq_len:,}-token sequences{routed}"


def shape_of(model: Model, seq_len: int = SEQ_LEN) -> Shape:
    """The shape of a model at `seq_len`: its layout, or the one a model known only by its size borrows
    (resolve.model, as every worksheet function does)."""
    if not (model.layers and model.hidden and model.heads):
        model = resolve.model(model)
    if not (model.layers and model.hidden and model.heads):
        raise value_error(f"{model.name} has no layout (layers, hidden, heads) for the training step model")
    return Shape(model.active, model.layers, model.hidden, model.heads * model.head_size, seq_len,
                 model if model.is_moe else None)


def generation_of(gpu: Gpu) -> str:
    return GENERATION_BY_FAMILY.get(gpu.family, f"other ({gpu.family})")


def size_class(active_params: float) -> str:
    return [name for name, low in SIZE_CLASSES if active_params >= low][-1]


def table_precision(precision: str) -> str:
    return "fp8" if precision == "fp8" else "bf16"


# ---------------------------------------------------------------- the step-time model (scope steady)
def _peak(gpu: Gpu, precision: str) -> float:
    """FLOP/s of the precision's dense tensor peak: the MFU's denominator."""
    return gpu.tensor_peak(precision, "training time", weight_only=False).tflops * TERA


def overhead_seconds(shape: Shape, gpu: Gpu) -> float:
    """Seconds a token spends outside the matrix products on one GPU: causal attention at ATTENTION_FRACTION of
    the 16-bit peak, the memory-bound work at the memory bandwidth, and a MoE model's routing (moe_seconds)."""
    sixteen = gpu.sixteen_bit_peak("training attention").tflops * TERA      # attention runs in 16-bit
    attention = 6 * shape.layers * shape.seq_len * shape.attention_width / (sixteen * cal.ATTENTION_FRACTION)
    return attention + cal.NONMATRIX_BYTES * shape.layers * shape.hidden / (gpu.bandwidth_tbs * 1e12) + \
        moe_seconds(shape, gpu)


def expert_group(shape: Shape, gpu: Gpu) -> int:
    """GPUs a MoE layer's experts are spread over: the layout's where it is stated, else the largest group of one
    server's GPUs (the catalog's system_gpus; NVL72 on GB200) that splits the experts evenly (128 experts on GB200:
    64): expert parallelism kept inside the GPU fabric, as the Megatron-Core MoE recipes lay out three of their four
    H100 layouts of Qwen3-235B-A22B (EP8 on 8-GPU servers; yanring/Megatron-MoE-ModelZoo), and no more GPUs than the
    job has where it is known (shape.job_gpus). A server size the catalog lacks is #N/A naming system_gpus (one GPU
    would mean no all-to-all at all)."""
    if shape.expert_parallel:
        return shape.expert_parallel
    experts = shape.routed_model.n_experts if shape.routed_model is not None and shape.routed_model.n_experts else 1
    server = int(gpu.need("system_gpus", "a MoE model's default expert-parallel group (one server's GPUs)"))
    cap = max(1, min(experts, server, shape.job_gpus or server))
    return max(d for d in range(1, cap + 1) if experts % d == 0)


def moe_seconds(shape: Shape, gpu: Gpu) -> float:
    """Seconds a token of a MoE model spends on its routing on one GPU, outside the 6·N matrix products: the
    permutes (moe.routing_seconds, forward, and the same bytes again for the gradients) at the memory bandwidth,
    and four all-to-alls per MoE layer (dispatch and combine forward, their gradients backward: exchange_seconds)
    for a micro-batch of one sequence, all exposed. 0 for a dense model."""
    model = shape.routed_model
    if model is None or not model.is_moe:
        return 0.0
    routing = 2 * moe.routing_seconds(model, 1, gpu.bandwidth_tbs * 1e12)
    group = expert_group(shape, gpu)
    return routing + 4 * model.moe_layer_count * exchange_seconds(model, gpu, group, shape.seq_len) / shape.seq_len


def exchange_seconds(model: Model, gpu: Gpu, group: int, tokens: float) -> float:
    """One expert-parallel dispatch (or combine) of `tokens` tokens' k x hidden 16-bit activations over `group`
    GPUs (collectives.all_to_all_s). Inside one server every copy crosses the GPU link; across servers each token
    crosses a GPU's NIC once for each other server holding one of its experts (moe.touched_experts over the
    servers: uniform routing), as DeepEP's internode dispatch sends it (one copy a server, forwarded over NVLink;
    the dispatcher the Megatron-Core MoE recipes run across servers), while its copies for experts in its own
    server take the GPU link; the two run at once, so the slower decides."""
    if group <= 1:
        return 0.0
    k, width = model.experts_per_token or 1, model.dim("hidden") * 2
    server = max(1, gpu.system_gpus or 1)
    inside = min(group, server)
    link = collectives.link_class(gpu, inside, "the expert-parallel all-to-all") if inside > 1 else None
    near = collectives.all_to_all_s(link, inside, tokens * k * width * inside / group) if link else 0.0
    if group <= server:
        return near
    servers = math.ceil(group / server)
    remote = moe.touched_experts(servers, 1, k) * (servers - 1) / servers
    far = collectives.all_to_all_s(collectives.network(), servers, tokens * width * remote * servers / (servers - 1))
    return max(near, far)


def mfu_at(shape: Shape, gpu: Gpu, precision: str, share: float) -> float:
    """6·N / (peak x the time a token takes) with the matrix products at `share` of the peak."""
    peak = _peak(gpu, precision)
    matrix = 6 * shape.params / (peak * share)
    return 6 * shape.params / (peak * (matrix + overhead_seconds(shape, gpu)))


def share_from(shape: Shape, gpu: Gpu, precision: str, mfu: float) -> float:
    """The matrix share that reproduces a measured MFU (mfu_at's inverse); a row whose MFU the overheads alone
    exceed cannot be one: #VALUE!."""
    peak = _peak(gpu, precision)
    matrix = 6 * shape.params / (peak * mfu) - overhead_seconds(shape, gpu)
    if matrix <= 0:
        raise value_error(f"an MFU of {mfu:g} leaves no time for the matrix products at {shape.text()}")
    return 6 * shape.params / (peak * matrix)


# ---------------------------------------------------------------- the table
def cells_from(points: list[Point], as_of: str) -> list[Cell]:
    """The rule: each cell is the median value of the measured rows in it."""
    groups: dict[tuple[str, ...], list[Point]] = {}
    for p in points:
        groups.setdefault(tuple(getattr(p, k) for k in KEY), []).append(p)
    return [Cell(gen, prec, size, arch, scope, round(statistics.median(p.value for p in ps), 4), len(ps),
                 "; ".join(p.row for p in ps), as_of) for (gen, prec, size, arch, scope), ps in sorted(groups.items())]


def render(cells: list[Cell]) -> str:
    out = io.StringIO()
    writer = csv.writer(out, lineterminator="\n")
    writer.writerow([f.name for f in fields(Cell)])
    writer.writerows([getattr(c, f.name) for f in fields(Cell)] for c in cells)
    return out.getvalue()


def parse(text: str) -> tuple[Cell, ...]:
    return tuple(Cell(r["generation"], r["precision"], r["size_class"], r["architecture"], r["scope"],
                      float(r["value"]), int(r["rows"]), r["source"], r["as_of"]) for r in csv.DictReader(io.StringIO(text)))


@cache
def shipped() -> tuple[Cell, ...]:
    return parse(resources.files("udfs.data").joinpath(FILE).read_text(encoding="utf-8"))


def _cell_text(c: Cell) -> str:
    what = "share" if c.scope == "steady" else "cell"
    return f"{c.generation} {c.precision}{'' if c.size_class == ANY_SIZE else ' ' + c.size_class} {c.architecture} " \
           f"{c.scope} {what} {c.value:.3f} ({c.rows} measured rows)"


def _share(cells, gen: str, prec: str, arch: str) -> tuple[Cell | float, list[str]] | None:
    """The steady share: the generation's, the nearest generation's, else the median of every generation's."""
    for g in (gen, *NEAREST.get(gen, ())):
        found = [c for c in cells if (c.generation, c.precision, c.architecture, c.scope) == (g, prec, arch, "steady")]
        if found:
            return found[0], [] if g == gen else [f"no {gen} share: the nearest generation, {g}"]
    pooled = [c.value for c in cells if (c.precision, c.architecture, c.scope) == (prec, arch, "steady")]
    if pooled:
        return statistics.median(pooled), [f"no {gen} share nor a nearer generation's: the median of every "
                                           f"generation's {prec} {arch} steady shares"]
    return None


def _steady(cells, gpu: Gpu, shape: Shape, prec: str, arch: str) -> tuple[float, list[str], bool] | None:
    found = _share(cells, generation_of(gpu), prec, arch)
    if found is None:
        return None
    share, steps = found
    value = share.value if isinstance(share, Cell) else share
    text = _cell_text(share) if isinstance(share, Cell) else f"median share {share:.3f}"
    mfu = mfu_at(shape, gpu, prec, value)
    return mfu, steps + [f"{text} on the matrix products, with attention and memory-bound work at "
                         f"{shape.text()}: MFU {mfu:.3f}"], not steps


def _run(cells, gpu: Gpu, shape: Shape, prec: str, arch: str) -> tuple[float, list[str], bool] | None:
    """Run scope: the steady-state MFU (the step-time model on the generation's share, with its fallbacks) x
    TRAINING_GOODPUT, the share of a run's wall-clock time spent training (the Llama 3 paper's >90%). No figure is
    chosen from whole-run rows: they only score it."""
    found = _steady(cells, gpu, shape, prec, arch)
    if found is None:
        return None
    mfu, steps, measured = found
    whole = mfu * cal.TRAINING_GOODPUT
    return whole, steps + [f"x TRAINING_GOODPUT {cal.TRAINING_GOODPUT:g} (restarts, checkpointing, evaluation): "
                           f"whole-run MFU {whole:.3f}"], measured


def _figure(cells, gpu, shape, prec, arch, scope):
    return (_steady if scope == "steady" else _run)(cells, gpu, shape, prec, arch)


def _fp8_ratio(cells, gpu: Gpu, shape: Shape, arch: str) -> tuple[float, str]:
    """fp8 MFU / bf16 MFU at this shape, from the steady shares of the nearest generation holding both."""
    gen = generation_of(gpu)
    for g in (gen, *NEAREST.get(gen, ())):
        for a in dict.fromkeys((arch, "dense")):
            both = {c.precision: c.value for c in cells if (c.generation, c.architecture, c.scope) == (g, a, "steady")}
            if "fp8" in both and "bf16" in both:
                ratio = mfu_at(shape, gpu, "fp8", both["fp8"]) / mfu_at(shape, gpu, "bf16", both["bf16"])
                return ratio, f"the {g} {a} fp8 / bf16 steady shares at this shape"
    return FP8_FALLBACK, "FP8_FALLBACK: no faster than bf16"


def lookup(gpu: Gpu, shape: Shape, precision: str, is_moe: bool, scope: str,
           cells: tuple[Cell, ...] | list[Cell] | None = None) -> Efficiency:
    """The MFU for one configuration from `cells` (the shipped table by default), with its basis."""
    cells = shipped() if cells is None else cells
    prec = table_precision(precision)
    arch = "MoE" if is_moe else "dense"
    steps = [] if precision in (prec, "fp16") else [f"no {precision} cells: the {prec} cells"]
    own = [c for c in cells if (c.generation, c.precision, c.architecture) == (generation_of(gpu), prec, arch)]
    if prec == "fp8" and not [c for c in own if c.scope in (scope, "steady")]:
        bf16 = lookup(gpu, shape, "bf16", is_moe, scope, cells)
        ratio, why = _fp8_ratio(cells, gpu, shape, arch)
        return Efficiency(bf16.mfu * ratio, f"{bf16.basis}; no fp8 cell: the bf16 figure x {ratio:.3f} ({why})", False)
    if shape.routed_model is not None:
        # a MoE share is chosen from rows whose routing is not modelled (accuracy.efficiency_cells), so it holds the
        # routing in: a shape whose routing moe_seconds adds takes the dense share instead (_moe_from_dense)
        cells = [c for c in cells if (c.architecture, c.scope) != ("MoE", "steady")]
        own = [c for c in own if c.scope != "steady"]
    found = _figure(cells, gpu, shape, prec, arch, scope) if (own or not is_moe) else None
    if found is None and is_moe:
        found = _moe_from_dense(cells, gpu, shape, prec, scope)
    if found is None or not math.isfinite(found[0]) or found[0] <= 0:
        raise na_error(f"no training efficiency for {generation_of(gpu)} {precision} {scope}: no measured cell and "
                       f"no fallback")
    return Efficiency(found[0], "; ".join(steps + found[1]), found[2] and not steps)


def _moe_from_dense(cells, gpu: Gpu, shape: Shape, prec: str, scope: str) -> tuple[float, list[str], bool] | None:
    """A MoE model without a MoE cell in its generation: the dense share with the model's routing and expert
    exchange by physics (the shape carries them: moe_seconds), x TRAINING_GOODPUT for a whole run; a model whose
    routing is not known, the dense figure x MOE_TRAINING_EFFICIENCY."""
    if shape.routed_model is not None:
        dense = _figure(cells, gpu, shape, prec, "dense", scope)
        return None if dense is None else (dense[0], dense[1] + [
            "no MoE share: the dense share, the routing and expert all-to-alls by physics (moe_seconds)"], False)
    dense = _figure(cells, gpu, replace(shape, routed_model=None), prec, "dense", scope)
    return None if dense is None else (dense[0] * cal.MOE_TRAINING_EFFICIENCY, dense[1] + [
        f"no MoE cell: the dense figure x MOE_TRAINING_EFFICIENCY {cal.MOE_TRAINING_EFFICIENCY:g}"], False)


def for_gpu(gpu: Gpu, model: Model, precision: str = "bf16", scope: str = "run",
            seq_len: int = SEQ_LEN) -> Efficiency:
    """The one answer to "what efficiency for this GPU, precision and model" (TRAINING_MFU, the
    training functions with mfu blank, the picker and the report)."""
    return lookup(gpu, shape_of(model, seq_len), precision, model.is_moe, scope)
