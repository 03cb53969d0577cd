"""Where a MoE training step's time goes, beside the step the measurement implies (issue 20).

    python3 benchmarks/training_decomposition.py [--measured DIR]

A developer tool, like benchmarks/tp_decomposition.py. For every steady-state MoE training row the step model scores
(metric `mfu`: a catalog MoE model, its routing by physics), it prints the time a token takes on one GPU as
udfs/physics/training_efficiency.py models it, split into what it is made of:

  matrix     6·N at the share of the peak the model's MFU for the row implies (the generation's dense share)
  attention  causal attention, 6·layers·sequence·width FLOPs at ATTENTION_FRACTION of the 16-bit peak
  memory     the memory-bound work between the products (NONMATRIX_BYTES a hidden unit a layer)
  routing    the permutes to the k experts and back (moe.routing_seconds, forward and backward)
  all-to-all four expert-parallel exchanges a MoE layer over the row's EP group (exchange_seconds), exposed

beside the step the measurement implies (6·N / (peak x measured MFU)) and the MFU error the report scores; the
tokens each expert multiplies in one grouped GEMM (EP x the tokens a GPU routes in a micro-batch x k / experts);
then what the row's note states that the model does not take: the busiest pipeline stage under the split the note
states (`busiest_stage`: in a pipeline every micro-batch passes every stage, so the step runs at the slowest stage's
pace; the recipes count the embedding and the loss as a layer's slot each, and the output head of Qwen3-235B-A22B
is about two layers' work), the recompute it states (`recompute`), the routing's balance (a dropless run against the
same run with forced balance, where the source gives both: a ratio read off the row's own source, so it explains a
row and cannot score one), an all-to-all overlapped with another micro-batch (named, not timed); and the error with
the first three. Nothing here is chosen from rows and nothing here changes an estimate: the busiest stage was tried
as a term of the scored model and not adopted, and recompute was tried twice before (docs/accuracy.md, "MoE
training steps by part").
"""

from __future__ import annotations

import argparse
import re
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from udfs.physics import calibration as cal, moe, training_efficiency as teff  # noqa: E402
from udfs.units import TERA  # noqa: E402

from benchmarks import accuracy  # noqa: E402

ENDS_SPLIT = "counting the embedding and the loss as a layer each"     # the note's words for the recipes' split
STAGES, VIRTUAL = re.compile(r"\bPP(\d+)"), re.compile(r"\bVPP(\d+)")
FIGURE = {name: re.compile(rf"\b{name}(\d+)") for name in ("TP", "CP", "EP")}
MICRO_BATCH = re.compile(r"\bMBS (\d+)")
BALANCE = re.compile(r"dropless routing (\d+) TFLOP/s.*?\((\d+) with forced load balancing\)")


def stated(note: str, name: str, default: int = 1) -> int:
    found = FIGURE[name].search(note) if name in FIGURE else MICRO_BATCH.search(note)
    return int(found[1]) if found else default


def parts(r: accuracy.TrainingRow) -> dict[str, float]:
    """Seconds a token takes on one GPU by part, at the share the model's MFU for the row implies (so the parts
    add up to the model's step), and the step the measured MFU implies."""
    shape, gpu, prec = r.shape, r.gpu, r.precision
    assert shape is not None and shape.routed_model is not None and r.mfu
    model_mfu = teff.lookup(gpu, shape, prec, r.moe, "steady").mfu
    peak = teff._peak(gpu, prec)
    share = teff.share_from(shape, gpu, prec, model_mfu)
    sixteen = gpu.sixteen_bit_peak("training attention").tflops * TERA
    m = shape.routed_model
    out = {
        "matrix": 6 * shape.params / (peak * share),
        "attention": 6 * shape.layers * shape.seq_len * shape.attention_width / (sixteen * cal.ATTENTION_FRACTION),
        "memory": cal.NONMATRIX_BYTES * shape.layers * shape.hidden / (gpu.bandwidth_tbs * 1e12),
        "routing": 2 * moe.routing_seconds(m, 1, gpu.bandwidth_tbs * 1e12),
        "all_to_all": 4 * m.moe_layer_count * teff.exchange_seconds(m, gpu, teff.expert_group(shape, gpu),
                                                                     shape.seq_len) / shape.seq_len,
    }
    out["model"] = 6 * shape.params / (peak * model_mfu)
    out["measured"] = 6 * shape.params / (peak * r.mfu)
    out["share"] = share
    return out


def tokens_per_expert(r: accuracy.TrainingRow) -> float:
    """Tokens each expert multiplies in one grouped GEMM: the EP group's GPUs each route the tokens of their share
    of a micro-batch (sequence parallel splits a sequence over TP, context parallel over CP), k copies each, over
    the layer's experts; where the experts are split by tensor parallelism (expert TP = TP, Megatron-Core 0.6's
    default) the TP group gathers its tokens first, so each GPU's slice of an expert multiplies all of them."""
    shape = r.shape
    assert shape is not None and shape.routed_model is not None
    m = shape.routed_model
    group = teff.expert_group(shape, r.gpu)
    split = 1 if "experts split by tensor parallelism" in r.note else stated(r.note, "TP")
    per_gpu = stated(r.note, "MBS") * shape.seq_len / (split * stated(r.note, "CP"))
    return group * per_gpu * (m.experts_per_token or 1) / (m.n_experts or 1)


def busiest_stage(r: accuracy.TrainingRow, seconds: dict[str, float]) -> float:
    """The busiest pipeline stage's work over the mean stage's under the split the note states (1.0 where it
    states none, or its slots do not divide evenly). Chunk c of the pp x vpp model chunks runs on stage c mod pp
    (Megatron's interleaved schedule); with the recipes' split the embedding and the loss take a slot each. A
    layer's time is the token's time less the output head's 6 x vocab x hidden products and the embedding's share
    of 6·N, over the layers."""
    shape = r.shape
    stages, virtual = STAGES.search(r.note), VIRTUAL.search(r.note)
    if shape is None or not stages or ENDS_SPLIT not in r.note:
        return 1.0
    pp, vpp = int(stages[1]), int(virtual[1]) if virtual else 1
    slots, chunks = shape.layers + 2, pp * vpp
    if pp <= 1 or slots % chunks:
        return 1.0
    model = shape.routed_model
    assert model is not None
    head_params = model.output_head_params or model.input_embedding_params      # the tied matrix is the head
    embedding_params = 0.0 if model.tied_embeddings else model.input_embedding_params   # in 6·N: the catalog's count
    peak = teff._peak(r.gpu, r.precision)
    head, embedding = (6 * n / (peak * seconds["share"]) for n in (head_params, embedding_params))
    layer = (seconds["model"] - head - embedding) / shape.layers
    costs = [embedding] + [layer] * shape.layers + [head]
    per = slots // chunks
    chunk = [sum(costs[c * per:(c + 1) * per]) for c in range(chunks)]
    stage = [sum(chunk[c] for c in range(g, chunks, pp)) for g in range(pp)]
    return max(stage) * pp / sum(stage)


def balance(note: str) -> tuple[float, str]:
    """The measured cost of dropless routing where the source gives the same run with forced balance (its
    TFLOP/s forced over dropless), and what the note says of the routing's balance."""
    found = BALANCE.search(note)
    if found:
        return int(found[2]) / int(found[1]), "dropless"
    return 1.0, "forced" if "forced router load balancing" in note or "forced load balancing" in note else "not stated"


def recompute(r: accuracy.TrainingRow, seconds: dict[str, float]) -> tuple[float, str]:
    """Seconds a token spends recomputing what the note says the run recomputes, which the step model does not
    charge: full recompute runs the forward pass again (a third of the products, attention and memory-bound work,
    half the routing and two of the four all-to-alls); Megatron's selective `moe` module the MoE layer's forward
    (the routed experts' products, half the routing and two all-to-alls); the other selective modules (norms,
    activations, attention's core under flash attention) a few percent at most, not counted here."""
    note, m = r.note, r.shape.routed_model if r.shape is not None else None
    assert m is not None
    half = seconds["routing"] / 2 + seconds["all_to_all"] / 2
    if "full recompute" in note:
        return (seconds["matrix"] + seconds["attention"] + seconds["memory"]) / 3 + half, "full"
    modules = re.search(r"selective recompute \(([^)]*)\)", note)
    if modules and "moe" in [w.strip() for w in modules[1].split(",")]:
        experts = (m.experts_per_token or 1) * m.expert_params
        return seconds["matrix"] * experts / r.params / 3 + half, "moe module"
    return 0.0, "selective (small)" if "recompute" in note and "no recompute" not in note else "none"


def overlapped(note: str) -> str:
    return "a2a overlapped" if "1F1B overlap" in note or "A2A_OVERLAP=1" in note else ""


def moe_rows(directory: Path) -> list[accuracy.TrainingRow]:
    found, _ = accuracy.read_training(directory)
    return [r for r in found if r.mfu and accuracy.routed(r)]


def table(rows: list[accuracy.TrainingRow]) -> list[str]:
    out = ["us a token on one GPU: matrix / attention / memory / routing / all-to-all make up the model's step; the "
           "measured step; the MFU error the report scores; tokens an expert multiplies in one grouped GEMM; then "
           "what the note states and the model leaves out: the busiest pipeline stage (x), recompute (us), the "
           "routing's balance (x: dropless over forced where the source gives both); the error with them",
           f"{'row':<26} {'GPU':<6} {'seq':>7} {'EP':>3} {'matrix':>7} {'attn':>6} {'mem':>5} {'route':>5} "
           f"{'a2a':>6} {'model':>7} {'meas':>7} {'error':>7} {'tok/exp':>7} {'stage':>6} {'recomp':>7} "
           f"{'bal':>5} {'with':>7}  recompute, balance, overlap"]
    for r in rows:
        s = parts(r)
        assert r.shape is not None
        stage, (again, what), (ratio, routing) = busiest_stage(r, s), recompute(r, s), balance(r.note)
        us = {k: v * 1e6 for k, v in s.items()}
        with_stated = s["measured"] / ((s["model"] * stage + again) * ratio) - 1
        out.append(f"{r.ref.split('/')[-1]:<26} {r.gpu.family:<6} {r.shape.seq_len:>7,} "
                   f"{teff.expert_group(r.shape, r.gpu):>3} {us['matrix']:>7.1f} {us['attention']:>6.1f} "
                   f"{us['memory']:>5.1f} {us['routing']:>5.1f} {us['all_to_all']:>6.1f} {us['model']:>7.1f} "
                   f"{us['measured']:>7.1f} {s['measured'] / s['model'] - 1:>+7.1%} {tokens_per_expert(r):>7,.0f} "
                   f"{stage:>6.3f} {again * 1e6:>7.1f} {ratio:>5.2f} {with_stated:>+7.1%}  "
                   f"{what}, {routing}{', ' + overlapped(r.note) if overlapped(r.note) else ''}")
    return out


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--measured", help="folder of measured CSVs (default benchmarks/measured)")
    args = parser.parse_args(argv)
    print("\n".join(table(moe_rows(accuracy.measured_dir(args.measured)))))


if __name__ == "__main__":
    main()
