"""Mixture-of-experts at load: which experts a decode step reads, what their small matrix products
cost, routing, and expert parallelism (EP) beside tensor parallelism (TP). Standard library only.

Experts touched. A token picks k of a layer's E routed experts. With routing uniform over the experts
and independent between tokens, a batch of B tokens touches on average
    E x (1 - (1 - k/E)^B)        (k at B = 1; nearly all E at a batch of hundreds when k/E is not tiny)
distinct experts per MoE layer. Basis: MoE models are trained with a load-balancing term that drives
each expert's share of tokens towards k/E (Switch Transformer, Fedus et al. 2021; Mixtral, Jiang et
al. 2024); for any shares, the expected count sum_e 1 - (1 - p_e)^B is largest when they are equal,
so uniform routing is the most a batch can read (the slow side). Shared experts and dense layers are
always read.

Each touched expert's products. An expert multiplies only its own tokens, B x k / touched of them: at
small counts far below the GPU's ridge point, so the bytes of the touched experts bound the step. Engines run
a layer's experts as one grouped kernel per GEMM (gate and up fused, then down; or up and down), not one
kernel per expert, so each GEMM is timed on its roofline over every touched expert a GPU runs, never below a
per-GEMM floor (calibration.MOE_GEMM_FLOOR_US), and each MoE layer adds a fixed time
(calibration.MOE_LAYER_US, chosen from rows: routing, sorting, quantising the activations, the kernels' ramp
and tail). Until 2026-11-24 every touched expert's GEMMs paid the floor apart, which made gpt-oss-120b at 4-128
in flight up to 3x too slow. Routing adds moving each token's activations to its experts and back
(calibration.MOE_ROUTING_PASSES passes of k x hidden 16-bit values per token).

Layouts. Under TP every GPU holds 1/n of every expert (and runs every touched expert's GEMMs on its
slice); under EP each GPU holds E/n whole experts and runs the touched ones among them, and every step
waits for the GPU that touches the most (`busiest_rank_experts`: at one token, k = 8 of 256 experts over 8
GPUs, the busiest runs about 2.5 where the mean is 1; at a batch that touches every expert, E/n each); attention and
dense layers are either split (TP) or replicated with each GPU serving its own sequences (data-parallel
attention), in which case the tokens reach their experts and come back by two all-to-alls per MoE
layer (`expert_exchange_s`, timed by the collectives model's all-to-all).
"""

from __future__ import annotations

import math

from . import calibration as cal
from . import arch, collectives
from ..catalogs.catalog import Model, Precision, as_precision
from ..errors import num_error, value_error

ATTENTION_LAYOUTS = ("tp", "replicated")


def active_params(model: Model) -> float:
    """Parameters a token uses, as the model's authors count them: for mixture-of-experts the routed
    top-k and shared experts, attention, dense layers and the output head, but not the input embedding,
    which is a row lookup (gpt-oss-120b 5.13B and gpt-oss-20b 3.61B in OpenAI's model card; DeepSeek's
    37B for V3/R1). Qwen and Mistral also count the embedding (Qwen3-30B-A3B "3.3B" in the Qwen3 blog,
    Mixtral "13B" in Jiang et al. 2024): this figure is 0.31B and 0.13B below their counts. A dense
    model's active count is its total."""
    return arch.matmul_params(model) if model.is_moe else model.total_params


def touched_experts(experts: float, k: float, tokens: float) -> float:
    """Expected distinct experts `tokens` tokens route to in one MoE layer, each choosing k of
    `experts` uniformly: E x (1 - (1 - k/E)^tokens); 0 for no token."""
    if experts <= 0 or tokens <= 0:
        return 0.0
    k = min(k, experts)
    return experts * (1 - (1 - k / experts) ** tokens)


def routed(model: Model) -> tuple[float, float, float]:
    """(parameters of one routed expert over all MoE layers, experts, experts per token); zeros if dense."""
    if not model.expert_params:
        return 0.0, 0.0, 0.0
    return model.expert_params, model.dim("n_experts"), model.experts_per_token or 1


def gemm_shares(model: Model) -> tuple[float, ...]:
    """Share of one expert's weights in each of its GEMMs: gate and up fused (2/3) then down (1/3)
    for a gated MLP; up and down (1/2 each) otherwise."""
    return (2 / 3, 1 / 3) if model.gated_mlp else (1 / 2, 1 / 2)


def tokens_per_expert(model: Model, tokens: float) -> float:
    """Tokens each touched expert multiplies in one step: tokens x k / touched (B x k / E at load)."""
    _, experts, k = routed(model)
    touched = touched_experts(experts, k, tokens)
    return tokens * k / touched if touched else 0.0


def busiest_rank_experts(experts: float, k: float, tokens: float, ranks: int) -> float:
    """Expected touched experts on the busiest of `ranks` GPUs each holding E/ranks whole experts (expert
    parallel), which every step waits for: the mean of the largest of `ranks` counts, each Binomial(E/ranks, q)
    with q = touched / E the chance an expert is touched (balls into bins under uniform top-k routing; the
    experts' hits taken as independent), sum over j of 1 - F(j)^ranks. All touched experts for one rank."""
    touched = touched_experts(experts, k, tokens)
    if ranks <= 1 or not touched:
        return touched
    local = math.ceil(experts / ranks)
    q = min(touched / experts, 1.0)
    if q >= 1:
        return float(local)
    cdf, total = 0.0, 0.0
    for j in range(local):
        cdf += math.comb(local, j) * q ** j * (1 - q) ** (local - j)
        total += 1 - min(cdf, 1.0) ** ranks
    return total


def expert_seconds(model: Model, tokens: float, params: float, width_bytes: float, bandwidth: float, rate: float,
                   ep: int = 1, layer_us: float = cal.MOE_LAYER_US) -> float:
    """Seconds per GPU for the routed experts of one step of `tokens` tokens, as the engines run them: per MoE layer
    one grouped kernel per GEMM over every touched expert this GPU runs (vLLM's and SGLang's fused_moe, FlashInfer's
    and TensorRT-LLM's MoE GEMMs), timed on its roofline, max(the experts' bytes / bandwidth, their FLOPs / rate,
    the per-GEMM floor), plus the layer's fixed time `layer_us` (calibration.MOE_LAYER_US: routing, sorting,
    activation quantisation, the kernels' ramp and tail). `params` is one routed expert of one MoE layer as this GPU
    holds it (a 1/tp slice of every expert, or E/ep whole experts, padded as the engine's kernel pads it); under
    expert parallelism the step waits for the GPU that touches the most of its own (busiest_rank_experts)."""
    _, experts, k = routed(model)
    touched = touched_experts(experts, k, tokens)
    if not touched:
        return 0.0
    runs = busiest_rank_experts(experts, k, tokens, ep) * params     # expert parameters this GPU multiplies
    rows = tokens * k / touched
    floor = cal.MOE_GEMM_FLOOR_US * 1e-6
    kernels = sum(max(runs * s * width_bytes / bandwidth, 2 * runs * s * rows / rate, floor)
                  for s in gemm_shares(model))
    return model.moe_layer_count * (kernels + layer_us * 1e-6)


def routing_seconds(model: Model, tokens: float, bandwidth: float, split: int = 1) -> float:
    """Moving the tokens' activations to their experts and back within a GPU: MOE_ROUTING_PASSES
    reads or writes of k x hidden 16-bit values per token per MoE layer (a GPU of `split` holds 1/split)."""
    _, experts, k = routed(model)
    if not experts:
        return 0.0
    moved = cal.MOE_ROUTING_PASSES * tokens * k * model.dim("hidden") * 2 / split
    return model.moe_layer_count * moved / bandwidth


def expert_exchange_s(model: Model, tokens_per_gpu: float, n_gpus: int, link: collectives.Link) -> float:
    """Expert-parallel dispatch and combine with data-parallel attention: two all-to-alls per MoE layer
    (collectives.all_to_all_s over the GPUs' link class), each of the k x hidden 16-bit activations of
    the tokens a GPU serves."""
    _, experts, k = routed(model)
    if n_gpus <= 1 or not experts:
        return 0.0
    size = tokens_per_gpu * k * model.dim("hidden") * 2
    return model.moe_layer_count * 2 * collectives.all_to_all_s(link, n_gpus, size)


def busiest_rank_prompts(ranks: int, per_rank: float) -> float:
    """Expected prompts the busiest of `ranks` data-parallel attention ranks admits in one step, each rank
    admitting on average `per_rank`: the mean of the largest of `ranks` independent Poisson counts,
    sum over k >= 0 of 1 - F(k)^ranks, F the Poisson CDF. Basis: a rank admits a prompt when one of its many
    running answers ends (one for one, at steady state), and the superposition of many independent sparse
    streams is Poisson (Palm-Khintchine); ranks admit independently unless the engine lines their prefills
    up (Engine.dp_balance). `per_rank` itself for one rank."""
    if not (math.isfinite(per_rank) and math.isfinite(ranks)):
        raise num_error(f"prompts a rank admits a step must be finite, got {per_rank!r} over {ranks!r} ranks")
    if ranks <= 1 or per_rank <= 0:
        return max(per_rank, 0.0)
    # Each term's Poisson probability in log space (exp(-per_rank) underflows past ~745). Below the mean less
    # 30 standard deviations F(k) < e^-450, so those terms are 1 each; the sum ends within 60 deviations above.
    spread = math.sqrt(per_rank)
    start = max(0, math.floor(per_rank - 30 * spread))
    total, cdf, log_rate = float(start), 0.0, math.log(per_rank)
    for k in range(start, math.ceil(per_rank + 60 * spread) + 100):
        p = math.exp(k * log_rate - per_rank - math.lgamma(k + 1))
        cdf += p
        total += 1 - min(cdf, 1.0) ** ranks
        # The terms left, each 1 - F(j)^ranks <= ranks x P(X > j), sum past the mean to at most
        # ranks x p x ((k+1)/(k+1-per_rank))^2 (geometric, ratio per_rank/(k+1)): stop on that bound, not on
        # the summed CDF, whose rounding at large per_rank never comes within 1e-12 of 1
        if k > per_rank and ranks * p * ((k + 1) / (k + 1 - per_rank)) ** 2 < 1e-12:
            return total
    raise num_error(f"the busiest of {ranks} ranks admitting {per_rank:g} prompts a step did not converge")


def expert_parallel_weight_bytes(model: Model, precision: Precision | str, n_gpus: int,
                                 attention: str = "tp") -> float:
    """Weight bytes per GPU with the routed experts split over n GPUs (E/n whole experts each) and the
    rest (attention, dense layers, shared experts, embeddings) split (`tp`) or held whole on every GPU
    (`replicated`, data-parallel attention)."""
    if attention not in ATTENTION_LAYOUTS:
        raise value_error(f"attention must be one of {', '.join(ATTENTION_LAYOUTS)}, got {attention!r}")
    per_expert, experts, _ = routed(model)
    experts_bytes = per_expert * experts * as_precision(precision).bytes_per_param
    rest = arch.weight_bytes(model, precision) - experts_bytes      # a checkpoint's 16-bit parts at 16 bits
    return experts_bytes / n_gpus + rest / (n_gpus if attention == "tp" else 1)


def experts_per_gpu(model: Model, n_gpus: int) -> int:
    """Whole routed experts each GPU holds under EP (the last may hold fewer)."""
    _, experts, _ = routed(model)
    return math.ceil(experts / n_gpus) if experts else 0
