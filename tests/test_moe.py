"""Mixture-of-experts at load (udfs/physics/moe.py): experts a batch touches, active parameters as
the authors count them, expert-parallel memory, and the per-expert cost in a decode step."""

import math
import shutil
from pathlib import Path

import pytest

import udfs
from udfs.catalogs import catalog, resolve
from udfs.errors import FlopsheetError
from udfs.physics import calibration as cal
from udfs.physics import capacity, collectives, moe, serving

MEASURED = Path(__file__).resolve().parents[1] / "benchmarks" / "measured" / "inference_measured.csv"


@pytest.mark.parametrize("experts,k", [(8, 2), (32, 4), (128, 4), (128, 8), (256, 8)])
def test_touched_experts_limits_and_monotone(experts, k):
    assert moe.touched_experts(experts, k, 0) == 0
    assert moe.touched_experts(experts, k, 1) == pytest.approx(k)          # one token reads its k experts
    assert moe.touched_experts(experts, k, 1e6) == pytest.approx(experts)  # a huge batch reads them all
    counts = [moe.touched_experts(experts, k, b) for b in (1, 2, 4, 16, 64, 256, 1024)]
    assert all(a <= b for a, b in zip(counts, counts[1:]))      # never fewer with more tokens
    assert counts[0] < counts[1] < counts[2] < counts[3]          # strictly more while experts remain
    assert all(k <= c <= experts for c in counts)


def test_touched_experts_by_hand():
    # 128 experts, top 4, a batch of 256: 128 x (1 - (124/128)^256)
    assert moe.touched_experts(128, 4, 256) == pytest.approx(128 * (1 - (124 / 128) ** 256))
    # a batch of hundreds reads nearly every expert; two tokens read fewer than 2k when they can overlap
    assert moe.touched_experts(128, 4, 300) > 0.99 * 128
    assert moe.touched_experts(8, 2, 2) == pytest.approx(8 * (1 - 0.75 ** 2))
    assert moe.touched_experts(8, 2, 2) < 4


@pytest.mark.parametrize("name,published", [("gpt-oss-120b", 5.13e9), ("gpt-oss-20b", 3.61e9)])
def test_param_count_active_as_openai_counts(name, published):
    # the model card's active count: unembedding read, embedding a lookup
    model = catalog.model(name)
    assert model.published_active_params == pytest.approx(published, rel=1e-3)
    assert udfs.call("PARAM_COUNT", name, "active") == pytest.approx(model.published_active_params, rel=0.01)


def test_param_count_active_other_authors():
    # DeepSeek counts as OpenAI does: 37B for V3 and R1
    for name in ("DeepSeek-V3", "DeepSeek-R1"):
        model = catalog.model(name)
        assert udfs.call("PARAM_COUNT", name, "active") == pytest.approx(model.published_active_params, rel=0.02)
    # Qwen counts the embedding too: our figure plus the lookup table is its "3.3B"
    qwen = catalog.model("Qwen3 30B-A3B")
    ours = udfs.call("PARAM_COUNT", "Qwen3 30B-A3B", "active")
    assert ours + qwen.input_embedding_params == pytest.approx(qwen.published_active_params, rel=0.02)
    assert ours < 0.95 * qwen.published_active_params
    # Mixtral: 13B in the paper
    assert udfs.call("PARAM_COUNT", "Mixtral 8x7B", "active") == pytest.approx(13e9, rel=0.02)
    # a dense model's active count is its total
    assert udfs.call("PARAM_COUNT", "Llama 2 7B", "active") == udfs.call("PARAM_COUNT", "Llama 2 7B")


def test_expert_parallel_memory_split():
    model = catalog.model("DeepSeek-V3")
    experts_total = model.expert_params * model.n_experts
    rest = model.total_params - experts_total
    one = moe.expert_parallel_weight_bytes(model, "fp8", 1)
    assert one == pytest.approx(model.total_params)               # one GPU holds everything (1 byte each)
    tp = moe.expert_parallel_weight_bytes(model, "fp8", 8, "tp")
    assert tp == pytest.approx(model.total_params / 8)              # EP experts + TP attention: an even split
    rep = moe.expert_parallel_weight_bytes(model, "fp8", 8, "replicated")
    assert rep == pytest.approx(experts_total / 8 + rest)           # data-parallel attention keeps the rest whole
    assert rep > tp
    assert moe.expert_parallel_weight_bytes(model, "bf16", 8, "tp") == pytest.approx(2 * tp)
    assert moe.experts_per_gpu(model, 8) == 32
    with pytest.raises(udfs.FlopsheetError):
        moe.expert_parallel_weight_bytes(model, "fp8", 8, "pipeline")


def test_expert_exchange_grows_with_tokens_and_is_zero_on_one_gpu():
    model = catalog.model("DeepSeek-V3")
    link = collectives.link_class(catalog.gpu("H200 SXM"), 8)
    assert moe.expert_exchange_s(model, 64, 1, link) == 0
    small, large = (moe.expert_exchange_s(model, t, 8, link) for t in (1, 256))
    assert 0 < small < large
    # 58 MoE layers x 2 all-to-alls of a token's k x hidden 16-bit values (8 x 7,168 x 2 bytes each)
    assert small == pytest.approx(58 * 2 * collectives.all_to_all_s(link, 8, 8 * 7168 * 2))
    assert large - small == pytest.approx(58 * 2 * 7 / 8 * 255 * 8 * 7168 * 2 / link.bus_bytes_per_s)


def test_expert_grouped_kernels_by_hand():
    model = catalog.model("Qwen3 30B-A3B")
    bandwidth, rate, layer = 3.0e12, 7e14, 20.0
    per_layer = model.expert_params / model.moe_layer_count      # 3 x 2048 x 768 weights
    assert per_layer == pytest.approx(3 * 2048 * 768)
    # batch 1: the k = 8 experts in one grouped kernel per GEMM (gate+up 2/3, down 1/3): 8 x 3 x 2048 x 768 bytes
    # at 3 TB/s = 12.6 us, split 8.4 / 4.2 us, both above the 2 us floor, plus 20 us a layer, over 48 layers
    assert moe.expert_seconds(model, 1, per_layer, 1, bandwidth, rate, layer_us=layer) == pytest.approx(
        48 * (8 * 3 * 2048 * 768 / 3.0e12 + 20e-6))
    # a layer's GEMMs never below the floor however few their bytes: one GPU of 64 holding a 1/64 slice
    floor = cal.MOE_GEMM_FLOOR_US * 1e-6
    assert moe.expert_seconds(model, 1, per_layer / 64, 1, bandwidth, rate, layer_us=0) == pytest.approx(
        48 * 2 * floor)
    # 512 tokens touch every expert (128 x 1.0): 128 x 3 x 2048 x 768 bytes = 604 MB at 3 TB/s, 201 us, against their
    # products, 2 x 512 x 8 x 3 x 2048 x 768 FLOPs at 700 TFLOP/s = 27 us: the bytes bind
    touched = moe.touched_experts(128, 8, 512)
    assert touched == pytest.approx(128, rel=1e-6)
    assert moe.expert_seconds(model, 512, per_layer, 1, bandwidth, rate, layer_us=layer) == pytest.approx(
        48 * (touched * per_layer / 3.0e12 + 20e-6))
    # expert parallel: each of 4 GPUs runs its own touched experts, whole, and the step waits for the GPU that
    # touches the most of them (at 512 tokens every expert is touched: a quarter each, no imbalance left); the
    # fixed time a layer is every GPU's
    assert moe.expert_seconds(model, 512, per_layer, 1, bandwidth, rate, ep=4, layer_us=0) == pytest.approx(
        48 * 32 * per_layer / 3.0e12, rel=1e-6)
    assert moe.expert_seconds(model, 1, per_layer, 1, bandwidth, rate, ep=4, layer_us=layer) == pytest.approx(
        48 * (max(moe.busiest_rank_experts(128, 8, 1, 4) * per_layer * 2 / 3 / bandwidth, floor)
              + max(moe.busiest_rank_experts(128, 8, 1, 4) * per_layer / 3 / bandwidth, floor) + 20e-6))
    # the shipped fixed time a layer is calibration's
    assert moe.expert_seconds(model, 1, per_layer, 1, bandwidth, rate) == pytest.approx(
        moe.expert_seconds(model, 1, per_layer, 1, bandwidth, rate, layer_us=cal.MOE_LAYER_US))


def test_busiest_rank_experts_by_hand_and_limits():
    # one GPU (or tensor parallel): every touched expert
    assert moe.busiest_rank_experts(256, 8, 64, 1) == pytest.approx(moe.touched_experts(256, 8, 64))
    # 2 GPUs of one expert each, one token choosing 1 of 2: a count of 0 or 1 per GPU, never both 1: the
    # independent-hit approximation gives P(max = 1) = 1 - (1 - 1/2)^2 = 3/4 (exact: 1)
    assert moe.busiest_rank_experts(2, 1, 1, 2) == pytest.approx(0.75)
    # 8 GPUs x 32 experts, q = touched/E: E[max] = sum_j 1 - F(j)^8 with F the Binomial(32, q) CDF, by hand
    q = moe.touched_experts(256, 8, 16) / 256
    cdf = [sum(math.comb(32, i) * q ** i * (1 - q) ** (32 - i) for i in range(j + 1)) for j in range(32)]
    assert moe.busiest_rank_experts(256, 8, 16, 8) == pytest.approx(sum(1 - f ** 8 for f in cdf))
    # the busiest GPU runs more than the mean share, at most its E/n, and all of them once every expert is touched
    for tokens in (1, 4, 16, 64):
        mean = moe.touched_experts(256, 8, tokens) / 8
        assert mean < moe.busiest_rank_experts(256, 8, tokens, 8) <= 32
    assert moe.busiest_rank_experts(256, 8, 5000, 8) == pytest.approx(32)
    assert moe.busiest_rank_experts(256, 8, 0, 8) == 0


@pytest.mark.libreoffice
@pytest.mark.skipif(shutil.which("soffice") is None, reason="LibreOffice (soffice) is not installed")
def test_workbook_busiest_rank_formula_equals_moe(tmp_path):
    """The inference plan's native formula for the busiest GPU's experts (serving_calc.busiest_experts_s), recalculated
    in LibreOffice, equals moe.busiest_rank_experts, expert parallel or not."""
    from openpyxl import Workbook

    from workbook_templates import serving_calc
    from workbook_templates.recalc import convert

    cases = [(256, 8, 1, 8), (256, 8, 64, 8), (256, 8, 16, 4), (128, 8, 10, 2), (8, 2, 3, 8), (256, 8, 64, 1)]
    wb = Workbook()
    ws = wb.active
    ws.title = "S"
    for i, (experts, k, batch, split) in enumerate(cases):
        for col, value in enumerate((experts, k, "expert")):
            ws.cell(row=i + 1, column=col + 1, value=value)
        touched = f"A{i + 1}*(1-(1-B{i + 1}/A{i + 1})^{batch})"
        formula = serving_calc.busiest_experts_s(touched, str(split))
        ws.cell(row=i + 1, column=4, value="=" + formula.replace("SrvExperts", f"A{i + 1}")
                .replace("SrvMoePar", f"C{i + 1}"))
    path = tmp_path / "busiest.xlsx"
    wb.save(path)
    out = convert([path], tmp_path / "out")[0]
    from openpyxl import load_workbook
    got = load_workbook(out, data_only=True)["S"]
    for i, (experts, k, batch, split) in enumerate(cases):
        assert got.cell(row=i + 1, column=4).value == pytest.approx(moe.busiest_rank_experts(experts, k, batch, split),
                                                                    rel=1e-9)


def test_moe_step_reads_follow_the_batch():
    model, gpu = resolve.model("gpt-oss-120b"), resolve.gpu("H100 SXM")
    # weights read per step: k experts at batch 1, nearly all at a batch of hundreds
    assert serving.streamed_params(model, 1) < 0.15 * model.total_params
    assert serving.streamed_params(model, 512) > 0.98 * (model.total_params - model.input_embedding_params)
    # (256 at most: with NVFP4's scales, 4.5 bits, 512 x 2,048 tokens no longer fit beside the weights)
    steps = [capacity.decode_step(model, gpu, "fp4", b, 2048, eng="trtllm").weights for b in (1, 16, 128, 256)]
    assert all(a < b for a, b in zip(steps, steps[1:]))
    dense = resolve.model("Llama 3.1 8B")     # a dense model's step is untouched by the MoE terms
    assert moe.expert_seconds(dense, 512, 1e6, 1, 3e12, 7e14) == 0 == moe.routing_seconds(dense, 512, 3e12)


def test_a_moe_layer_costs_its_bytes_and_its_fixed_time():
    # Qwen3-30B-A3B (128 experts of 768) at load on TensorRT-LLM: the step's experts are their touched bytes at the
    # weight bandwidth (their products stay below it at FP8) and the fixed time of each of the 48 MoE layers
    model, gpu = resolve.model("Qwen3 30B-A3B"), resolve.gpu("H100 SXM")
    step = capacity.decode_step(model, gpu, "fp8", 256, 2048, eng="trtllm")
    bandwidth = gpu.bandwidth_tbs * 1e12 * 0.80
    touched = moe.touched_experts(128, 8, 256)
    assert step.experts == pytest.approx(48 * (touched * 3 * 2048 * 768 / bandwidth + cal.MOE_LAYER_US * 1e-6))
    assert 0 < step.experts < step.weights
    assert math.isfinite(step.total)


def test_expert_parallel_engine_layout():
    # the packaged engines split MoE layers tensor-parallel (their defaults); an engine row saying "expert"
    # runs E/n whole experts a GPU: the same weights per GPU and the same links, and waits for the busiest GPU
    from dataclasses import replace

    from udfs.catalogs import engines
    assert all(not e.expert_parallel for e in engines.engines())
    model, gpu = resolve.model("DeepSeek-R1"), resolve.gpu("H200 SXM")
    tp = engines.engine("SGLang")
    ep = replace(tp, moe_parallel="expert")
    a, b = (capacity.decode_step(model, gpu, "fp8", 256, 2048, 8, eng=e) for e in (tp, ep))
    # grouped kernels read the same bytes either way: at 256 tokens nearly every expert is touched, so the busiest
    # GPU's 32 whole experts are within 0.1% of a 1/8 slice of the 255.9 touched, never fewer
    assert a.weights <= b.weights == pytest.approx(a.weights, rel=1e-3)
    assert (b.attention, b.allreduce, b.overhead) == (a.attention, a.allreduce, a.overhead)
    fp8 = catalog.as_precision("fp8")
    bandwidth, rate = capacity._bandwidth(gpu, fp8, tp), capacity._decode_flops(gpu, fp8, tp, 256)
    one = model.expert_params / model.moe_layer_count          # one expert of one layer, whole
    saved = moe.expert_seconds(model, 256, one / 8, 1, bandwidth, rate) - moe.expert_seconds(model, 256, one, 1,
                                                                                           bandwidth, rate, ep=8)
    assert a.weights - b.weights == pytest.approx(saved)
    assert (a.experts - b.experts) == pytest.approx(saved)
    assert capacity.kv_budget_gib(model, gpu, "fp8", 8, tp) == capacity.kv_budget_gib(model, gpu, "fp8", 8, ep)
    # one GPU: nothing to split, the same step
    small = resolve.model("Qwen3 30B-A3B")
    one = [capacity.decode_step(small, gpu, "fp8", 64, 2048, 1, eng=e).total for e in (tp, ep)]
    assert one[0] == one[1]


def test_engine_row_moe_parallel_choices():
    from udfs.catalogs import engines
    base = {"multi_gpu": "tensor", "memory_rule": "total", "kv_reservation": "mean", "kv_precision": "16bit"}
    for ok in ("tensor", "expert", "expert_dp", ""):
        assert engines.row_problems({**base, "moe_parallel": ok}) == []
    assert [c for c, _ in engines.row_problems({**base, "moe_parallel": "pipeline"})] == ["moe_parallel"]


def test_moe_serving_has_a_measured_regime_and_the_row_lies_in_its_band():
    # MLPerf v4.1's Mixtral 8x7B rows (a steady state: TensorRT-LLM on 8 x H100, scored as eight one-GPU copies and
    # filed by that copy's layout) back MoE serving on one H100 with TensorRT-LLM: ESTIMATE_EVIDENCE and the picker
    # read them. A burst of requests sent at once (gpt-oss-120b on 8 x B200 with vLLM, vLLM PR #23696) is scored
    # apart and backs no option.
    from udfs.physics import evidence
    mixtral = catalog.model("Mixtral 8x7B")
    ev = evidence.for_option("throughput", mixtral, catalog.gpu("H100"), "fp8", 1, "TensorRT-LLM")
    assert ev.measured and ev.rows >= 1
    rows = [m for m in evidence.measured() if m.model == "Mixtral 8x7B" and m.family == ev.regime.family
            and m.metric == "throughput" and m.layout == "one GPU"]
    assert rows and all(ev.low_error <= m.error_out <= ev.high_error for m in rows)
    # gpt-oss-120b on 8 x B200 with vLLM is now measured by InferenceX's steady rows (4-128 in flight), and by them
    # alone: the burst (vLLM PR #23696) is not among the rows its band is read from
    oss = evidence.for_option("throughput", catalog.model("gpt-oss-120b"), catalog.gpu("B200"), "fp4", 8, "vLLM")
    backing = [m for m in evidence.measured() if m.model == "gpt-oss-120b" and m.family == "B200"
               and m.engine == "vLLM" and m.metric == "throughput" and m.layout == "parallel"]
    assert oss.measured and oss.rows == len(backing) > 0
    burst = next(i for i, line in enumerate(open(MEASURED), 1) if "#23696" in line)
    assert all("(fixed_batch)" in m.description for m in backing)
    assert f"inference_measured.csv:{burst}" not in {m.row for m in backing}


def test_experts_read_worksheet_function():
    # one answer: what a decode step reads is what the physics uses, and batch 1 reads the active count
    for name in ("gpt-oss-120b", "Mixtral 8x7B", "DeepSeek-V3"):
        model = resolve.model(name)
        assert udfs.call("EXPERTS_READ", name, 1) == pytest.approx(model.experts_per_token)
        assert udfs.call("EXPERTS_READ", name, 1, "params_read") == pytest.approx(
            udfs.call("PARAM_COUNT", name, "active"))
        assert udfs.call("EXPERTS_READ", name, 300, "params_read") == pytest.approx(serving.streamed_params(model, 300))
        many = udfs.call("EXPERTS_READ", name, 300)
        assert many == pytest.approx(moe.touched_experts(model.n_experts, model.experts_per_token, 300))
        assert udfs.call("EXPERTS_READ", name, 300, "tokens_per_expert") == pytest.approx(
            300 * model.experts_per_token / many)
    # a dense model reads no expert, and all its matrices (the input embedding is a lookup)
    dense = resolve.model("Llama 2 7B")
    assert udfs.call("EXPERTS_READ", "Llama 2 7B", 64) == 0
    assert udfs.call("EXPERTS_READ", "Llama 2 7B", 64, "params_read") == dense.total_params - 32000 * 4096
    # a size without a shape has no experts to count: said, not guessed
    with pytest.raises(udfs.FlopsheetError):
        udfs.call("EXPERTS_READ", 7e9, 1)


def test_expert_parallel_with_data_parallel_attention():
    # SGLang's --ep-size 8 --enable-dp-attention for DeepSeek-R1 on 8 x H200: attention, dense layers and the
    # shared expert whole on every GPU, the routed experts split 8 ways; each GPU serves its own sequences, so
    # MLA's latent cache is no longer replicated 8 times; two all-to-alls per MoE layer instead of all-reduces
    from dataclasses import replace

    from udfs.catalogs import engines
    from udfs.units import GIB
    model, gpu = resolve.model("DeepSeek-R1"), resolve.gpu("H200 SXM")
    tp = engines.engine("SGLang")
    dp = replace(tp, moe_parallel="expert_dp")
    assert dp.expert_parallel and dp.dp_attention and not tp.dp_attention
    reserve = tp.activation_reserve_gib
    assert capacity.held(model, gpu, "fp8", 8, dp).fixed_gib == pytest.approx(
        moe.expert_parallel_weight_bytes(model, "fp8", 8, "replicated") / GIB + reserve)
    assert capacity.held(model, gpu, "fp8", 8, dp).fixed_gib > capacity.held(model, gpu, "fp8", 8, tp).fixed_gib
    assert capacity.kv_share(model, 8, tp) == 1          # the latent vector on every GPU under TP
    assert capacity.kv_share(model, 8, dp) == 1 / 8
    step = capacity.decode_step(model, gpu, "fp8", 256, 2048, 8, eng=dp)
    link = collectives.link_class(gpu, 8)
    assert step.allreduce == pytest.approx(moe.expert_exchange_s(model, 256 / 8, 8, link))
    a, b = (capacity.serving_point(model, gpu, "fp8", 1024, 1024, 8, eng=e) for e in (tp, dp))
    assert b.batch > a.batch
    # a lone prompt is prefilled on its own GPU (its attention and dense layers are not split): slower to
    # its first token than under tensor parallelism, by at most the 8 GPUs it does not share
    lone = [capacity.prefill_seconds(model, gpu, "fp8", 4096, 1, 8, eng=e) for e in (tp, dp)]
    assert lone[0] < lone[1] <= 8 * lone[0] * 1.5
    # eight prompts on eight GPUs: one each, about as long as one prompt alone
    assert capacity.prefill_seconds(model, gpu, "fp8", 4096, 8, 8, eng=dp) == pytest.approx(lone[1], rel=0.1)
    # a dense model has no experts to spread: the same step as tensor parallel
    dense = resolve.model("Llama 3.3 70B")
    assert capacity.decode_step(dense, gpu, "fp8", 64, 2048, 8, eng=dp) == \
        capacity.decode_step(dense, gpu, "fp8", 64, 2048, 8, eng=tp)


def test_mla_decode_attention_runs_on_the_absorbed_latent():
    """DeepSeek-R1's decode attention, as FlashMLA counts it: 2 x heads x context x (d_k + d_v) FLOPs per layer with
    d_k = latent + RoPE key and d_v = latent (the config's kv_lora_rank and qk_rope_dim), not 2 x the head size; at a
    large batch the step's attention is those FLOPs at the 16-bit rate (compute-bound). A GQA model keeps 2 x its
    head size."""
    from dataclasses import replace
    from udfs.catalogs import engines
    from udfs.physics import arch
    from udfs.physics.shape import kv_layer_tokens
    ds, llama = catalog.model("DeepSeek-R1"), catalog.model("Llama 3.1 8B")
    # FlashMLA (docs/20250422-new-kernel-deep-dive.md) and DeepSeek-V2 s.2.1.3: d_k = 512 + 64 = 576, d_v = 512
    assert arch.decode_attention_width(ds) == 1088 > 2 * ds.head_size
    assert arch.decode_attention_width(llama) == 2 * llama.head_size
    gpu = catalog.gpu("B200")
    eng = replace(engines.engine("TensorRT-LLM", gpu), moe_parallel="expert_dp")
    batch, context = 2048, 3000
    step = capacity.decode_step(ds, gpu, "fp4", batch, context, 8, "fp8", eng)
    d_k, d_v = 576, 512
    flops = 2 * ds.dim("heads") * (d_k + d_v) * kv_layer_tokens(ds, context) * batch / 8     # layers x context
    rate = capacity._decode_flops(gpu, None, eng, batch)
    assert step.attention == pytest.approx(flops / rate)


def test_mla_prefill_attention_runs_on_the_up_projected_heads():
    """DeepSeek-R1's prefill attention expands the latent into 128 heads whose queries and keys are 192 wide (128 +
    the 64-wide RoPE part) and whose values are 128 wide (config.json qk_nope_head_dim, qk_rope_head_dim,
    v_head_dim; DeepSeek-V2 s.2.1.2): (192 + 128) / (2 x 128) = 1.25x what 2 x the head size counts. A GQA model
    keeps 2 x its head size."""
    from udfs.physics import arch
    from udfs.physics.shape import kv_layer_tokens
    ds, llama = catalog.model("DeepSeek-R1"), catalog.model("Llama 3.1 8B")
    assert arch.prefill_attention_width(ds) == 320
    assert arch.prefill_attention_width(llama) == 256
    prompt = 4096
    two_head_sizes = 2 * 128 * 128 * prompt * kv_layer_tokens(ds, prompt)     # heads x 2 x head size
    assert capacity.attention_flops(ds, prompt) == pytest.approx(1.25 * two_head_sizes)
    assert capacity.attention_flops(llama, prompt) == pytest.approx(
        2 * 32 * 128 * prompt * kv_layer_tokens(llama, prompt))


def test_busiest_rank_prompts_is_the_mean_largest_poisson_count():
    """E[max] of independent Poisson counts, checked against a direct double sum over two ranks' counts (not the
    tail sum the function uses); one rank admits its mean; more ranks, a busier busiest one."""
    def pmf(k, lam):
        return math.exp(-lam) * lam ** k / math.factorial(k)
    lam = 0.4375                                        # 7,168 in flight over 8 ranks, 2,048-token answers
    direct = sum(max(a, b) * pmf(a, lam) * pmf(b, lam) for a in range(40) for b in range(40))
    assert moe.busiest_rank_prompts(2, lam) == pytest.approx(direct, rel=1e-9)
    assert moe.busiest_rank_prompts(1, lam) == lam
    assert lam < moe.busiest_rank_prompts(2, lam) < moe.busiest_rank_prompts(8, lam)


def test_attention_dp_ranks_wait_for_the_busiest_ranks_prefill():
    """With data-parallel attention a step waits for the rank prefilling the most prompts: the step's prefill is the
    mean (batch / answer prompts, each prefill_compute_s) plus (busiest - mean per rank) x one prompt's rank-bound
    work, its attention and non-expert products on one GPU, worked by hand here for DeepSeek-R1 on 8 B200 (NVFP4:
    3,150 TFLOPS achieved, 0.35 x 9,000; attention at 0.5 x 2,250). Balanced ranks (dp_balance) pay the mean only,
    as does a tensor-parallel layout."""
    from dataclasses import replace
    from udfs.catalogs import engines
    from udfs.catalogs.catalog import as_precision
    from udfs.physics.shape import kv_layer_tokens
    ds, gpu, fp4 = catalog.model("DeepSeek-R1"), catalog.gpu("B200"), as_precision("fp4")
    tp = engines.engine("TensorRT-LLM", gpu)
    dp = replace(tp, moe_parallel="expert_dp")
    batch, prompt, answer = 7168, 1024, 2048
    mean = batch * capacity.prefill_compute_s(ds, gpu, fp4, prompt, 1, 8, dp) / answer
    balanced = capacity._prefill_per_step_s(ds, gpu, fp4, prompt, answer, 8, replace(dp, dp_balance=True), batch)
    assert balanced == pytest.approx(mean)
    dense = 37_552_297_472 - 129_280 * 7_168 - 8 * 44_040_192 * 58       # active, less input embedding and 8 experts
    own = 2 * dense * prompt / 3150e12 + 128 * 320 * prompt * kv_layer_tokens(ds, prompt) / (2250e12 * 0.5)
    per_rank = batch / 8 / answer
    extra = (moe.busiest_rank_prompts(8, per_rank) - per_rank) * own
    assert capacity._prefill_per_step_s(ds, gpu, fp4, prompt, answer, 8, dp, batch) == pytest.approx(mean + extra)
    assert capacity._prefill_per_step_s(ds, gpu, fp4, prompt, answer, 8, tp, batch) == pytest.approx(
        batch * capacity.prefill_compute_s(ds, gpu, fp4, prompt, 1, 8, tp) / answer)


def test_a_private_engine_row_can_line_up_its_attention_dp_ranks(tmp_path):
    """dp_balance is a column of engines.csv: a private row may set it (checked like any column) and the engine
    built from it pays no wait for the busiest rank."""
    from udfs.catalogs import engines, private_catalog
    from udfs.catalogs.catalog import _build, columns
    path = tmp_path / "engines.csv"
    path.write_text("name,moe_parallel,dp_balance\nTensorRT-LLM,expert_dp,TRUE\n")
    rows, problems = private_catalog.read_file(path, columns("engines.csv"), "engines.csv")
    assert problems == [] and rows[0][0]["dp_balance"] == "TRUE"
    packaged = next(r for r in catalog.rows_with_origin("engines.csv") if r[0]["name"] == "TensorRT-LLM")[0]
    eng = _build(engines.Engine, {**packaged, **rows[0][0]})
    assert eng.dp_balance and eng.dp_attention
    assert not engines.engine("TensorRT-LLM").dp_balance


def test_busiest_rank_prompts_returns_at_large_and_bad_counts():
    """exp(-800) underflows to 0, which once left the tail sum looping for ever. By hand: the mean largest of 8
    normals is 1.4236 deviations above the mean, so 8 ranks admitting 800 (deviation 28.28) give about 840.3 and
    1e6 (deviation 1,000) about 1,001,424 (Poisson's skew moves these by under 1); two ranks at 1 give
    sum_k 1 - F(k)^2 = 0.86466 + 0.45866 + 0.15415 + 0.03762 + 0.00731 + 0.00119 + 0.00017 + ... = 1.52378.
    NaN or infinite counts are #NUM!."""
    assert moe.busiest_rank_prompts(8, 800) == pytest.approx(800 + 1.4236 * 800 ** 0.5, abs=1)
    assert moe.busiest_rank_prompts(8, 1e6) == pytest.approx(1e6 + 1.4236 * 1000, abs=1)
    assert moe.busiest_rank_prompts(2, 1) == pytest.approx(1.52378, abs=2e-5)
    for bad in (math.nan, math.inf):
        with pytest.raises(FlopsheetError, match="#NUM!"):
            moe.busiest_rank_prompts(8, bad)
