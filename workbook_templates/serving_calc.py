"""The serving model (udfs/physics/capacity.py: serving_point, gpus_for_traffic) in native formulas:
the 'Serving calculation' sheet resolves the figures it needs (catalog sheets and the
'Serving figures' tables), works out each tensor-parallel group size (1, 2, 4, 8 GPUs per
copy): KV fit, batch limit, the largest batch within the TPOT target (searched on the
'Batch search' sheet by bisection, as the engine does), throughput, copies and GPUs, keeps
the group needing the fewest GPUs, and shows the step time by operation for candidate
batches at that group. Every figure is a formula a reader can follow cell by cell."""

from __future__ import annotations

from dataclasses import dataclass

from openpyxl.chart import Reference, ScatterChart, Series

from udfs.physics import capacity, defaults
from udfs.words import plural

from . import serving_figures as sf
from . import styles as st
from .common import Book, C, col

SHEET = "Serving calculation"
SEARCH = "Batch search"
GROUPS = capacity.TP_CHOICES                  # tensor-parallel sizes the engine tries, in its order
FIRST_GROUP_COL = 2                          # column B: the first group size
CHOSEN_COL = FIRST_GROUP_COL + len(GROUPS)   # the group kept
SEARCH_STEPS = 22                            # bisection steps: enough for a batch limit of 4 million
CANDIDATES = tuple(2 ** i for i in range(12))   # 1 .. 2048: the batches shown step by step
# number formats that scale rather than show scientific notation
BYTES_PER_S = '[>=1E12]#,##0.00,,,," TB/s";#,##0.0,,," GB/s"'
FLOP_PER_S = '[>=1E15]#,##0.00,,,,," PFLOP/s";#,##0,,,," TFLOP/s"'
FLOP_COUNT = '[>=1E15]#,##0.00,,,,," PFLOP";[>=1E12]#,##0.0,,,," TFLOP";#,##0.0,,," GFLOP"'
SECONDS = '0.000000" s"'


@dataclass
class Inputs:
    """Cells of the plan's inputs (the main sheet's named cells)."""
    model: C
    gpu: C
    precision: C
    engine: C
    rpm: C
    prompt: C
    output: C
    headroom: C
    latency: C


class Sheet:
    """Rows of label | value | basis, each value cell named `Srv...`."""

    def __init__(self, book: Book, ws, row: int):
        self.book, self.ws, self.row = book, ws, row

    def section(self, text: str, gap: int = 1):
        self.row += gap
        self.ws.cell(row=self.row, column=1, value=text).font = st.SECTION_FONT
        self.row += 1

    def value(self, name: str, label: str, formula: str, basis: str = "", fmt: str | None = None) -> str:
        ws, r = self.ws, self.row
        ws.cell(row=r, column=1, value=label)
        cell = ws.cell(row=r, column=2, value="=" + formula)
        st.style_output(cell, fmt)
        if basis:
            note = ws.cell(row=r, column=3, value=basis)
            note.font = st.NOTE_FONT
        self.book.define(name, C(ws.title, f"B{r}"))
        self.row += 1
        return name


def _figures(s: Sheet, i: Inputs):
    """The figures the model needs: model shape, GPU, engine, number formats, traffic."""
    model, gpu, prec = (x.ref(SHEET, absolute=True) for x in (i.model, i.gpu, i.precision))
    s.section("Model (a parameter count borrows a catalog layout, as the engine does)", gap=0)
    s.value("SrvLayout", "Layout from", f"IF(ISNUMBER({model}),INDEX(SrvLenderNames,MATCH({model},SrvLenderFrom,1)),"
            f"{model})", "Model shapes sheet")
    s.value("SrvShapeRow", "Row in the Model shapes sheet", "MATCH(SrvLayout,ShapeNames,0)")
    num = f"ISNUMBER({model})"
    s.value("SrvParams", "Parameters (weights in memory)", f"IF({num},{model},INDEX(Shape_params,SrvShapeRow))",
            "", st.PARAMS)
    s.value("SrvLookup", "Input-embedding parameters read as a lookup", "INDEX(Shape_lookup,SrvShapeRow)", "",
            st.PARAMS)
    for name, label, key in (("SrvMatmul", "Parameters in products per token", "matmul"),
                             ("SrvDense", "... of which outside routed experts", "dense"),
                             ("SrvDenseStream", "Parameters read per step outside experts", "dense_stream")):
        s.value(name, label, f"IF({num},{model}-SrvLookup,INDEX(Shape_{key},SrvShapeRow))", "", st.PARAMS)
    own = f"INDEX(Shape_quant_format,SrvShapeRow)={prec}"       # served in the checkpoint's own format
    for name, label, key in (("SrvUnconv", "Parameters kept at 16 bits (a quantized checkpoint in its own format)",
                              "kept"), ("SrvUnconvStream", "... of which read per step", "kept_stream")):
        s.value(name, label, f"IF({num},0,IF({own},INDEX(Shape_{key},SrvShapeRow),0))",
                "arch.kept_params: the parts its quantization_config leaves unconverted", st.PARAMS)
    for name, label, key in (("SrvPerExpert", "Parameters per routed expert", "per_expert"),
                             ("SrvExperts", "Routed experts", "experts"), ("SrvTopK", "Experts per token", "top_k"),
                             ("SrvMoeLayers", "MoE layers", "moe_layers"),
                             ("SrvExpertFfn", "Width of one routed expert", "expert_ffn"),
                             ("SrvGemmShare", "Share of an expert in its first GEMM", "gemm_share")):
        s.value(name, label, f"IF({num},0,INDEX(Shape_{key},SrvShapeRow))", "none for a bare count", "#,##0")
    for name, label, key in (("SrvLayers", "Layers", "layers"), ("SrvHidden", "Hidden size", "hidden"),
                             ("SrvMlpValues", "MLP values a token holds at the peak (beside 2 x hidden)", "mlp_values"),
                             ("SrvVocab", "Vocabulary", "vocab"),
                             ("SrvHeads", "Attention heads", "heads"), ("SrvHeadDim", "Head size", "head_dim"),
                             ("SrvAttnWidth", "Key + value width per head in decode", "attn_width"),
                             ("SrvPrefillWidth", "Key + value width per head in prefill", "prefill_width"),
                             ("SrvKvValues", "KV values per token per layer", "kv_values"),
                             ("SrvKvHeads", "KV heads", "kv_heads"), ("SrvMla", "Latent KV (MLA): 1", "mla"),
                             ("SrvGlobal", "Layers caching the whole context", "global_layers"),
                             ("SrvLocal", "Layers caching a window", "local_layers"),
                             ("SrvWindow", "Window (tokens; 0: none)", "window")):
        s.value(name, label, f"INDEX(Shape_{key},SrvShapeRow)", "", "#,##0")

    s.section("GPU (GPUs sheet; link from Serving figures)")
    s.value("SrvGpuRow", "Row in the GPU catalog", f"MATCH({gpu},CatGpuNames,0)")
    s.value("SrvMemory", "Memory CUDA reports (GiB; the nameplate where unmeasured)", "INDEX(CatGpu_memory_gib,SrvGpuRow)", "",
            st.GB)
    s.value("SrvBandwidth", "Memory bandwidth (TB/s)", "INDEX(CatGpu_bandwidth_tbs,SrvGpuRow)", "", st.TBS)
    pair = f'MATCH({gpu}&"{sf.SEP}"&{prec},GP_keys,0)'
    s.value("SrvPeak", "Tensor rate of the weight format's products (TFLOPS)", f"INDEX(GP_tflops,{pair})",
            "weight-only formats run on the 16-bit units; blank: unknown", st.TFLOPS)
    s.value("SrvPeak16", "16-bit tensor rate (attention, TFLOPS)", f"INDEX(SrvGpu_peak16,MATCH({gpu},SrvGpuNames,0))",
            "", st.TFLOPS)
    s.value("SrvGpuName", "GPU", f"{gpu}")
    s.value("SrvLink", "GPU-to-GPU link class", f"INDEX(SrvGpu_link,MATCH({gpu},SrvGpuNames,0))",
            "udfs/physics/collectives.py link_class (a pair of GPUs)")
    s.value("SrvHopS", "Hand-off between neighbouring GPUs (s)", f"INDEX(SrvGpu_hop_s,MATCH({gpu},SrvGpuNames,0))",
            "a layer pipeline's hand-off (collectives.send_recv_s)", SECONDS)
    s.value("SrvLinkGBs", "Link rate (GB/s, both directions)", f"INDEX(SrvGpu_link_gbs,MATCH({gpu},SrvGpuNames,0))",
            "blank: unknown", "#,##0")

    eng = i.engine.ref(SHEET, absolute=True)
    s.section("Engine (Engines sheet; pairs from Serving figures)")
    s.value("SrvEngine", "Engine", f'IF({eng}="{sf.DEFAULT_ENGINE}",INDEX(SrvGpu_engine,MATCH({gpu},SrvGpuNames,0)),'
            f"{eng})")
    s.value("SrvEngRow", "Row in the Engines sheet", "MATCH(SrvEngine,EngineNames,0)")
    for name, label, attr, fmt in (("SrvMulti", "Several GPUs work as", "multi_gpu", None),
                                   ("SrvMoePar", "MoE layers over a group (tensor or expert)", "moe_parallel", None),
                                   ("SrvMemRule", "Memory rule", "memory_rule", None),
                                   ("SrvMemFrac", "Memory share", "memory_fraction", "0.00"),
                                   ("SrvReserve", "Flat reserve (GiB)", "activation_reserve_gib", "0.0"),
                                   ("SrvKvRes", "KV cache per request", "kv_reservation", None),
                                   ("SrvQuantFactor", "Bandwidth factor for weight-only quantised formats",
                                    "quantized_factor", "0.00"),
                                   ("SrvLayerUs", "Fixed time per layer (us)", "layer_overhead_us", "0.0"),
                                   ("SrvStepUs", "Fixed time per step (us)", "step_overhead_us", "0.0"),
                                   ("SrvSeqUs", "CPU time per running sequence per step (us; blank: overlapped)",
                                    "sequence_overhead_us", "0.0"),
                                   ("SrvFlashSampler", "Sampler runs FlashInfer's top-k / top-p (1: yes)",
                                    "flashinfer_sampler", "0"),
                                   ("SrvSamplerSorts", "Start-up sampler sorts the vocabulary (1: yes)",
                                    "sampler_sorts", "0")):
        s.value(name, label, f"INDEX(Eng_{attr},SrvEngRow)", "", fmt)
    key = f'SrvEngine&"{sf.SEP}"&{gpu}'
    s.value("SrvBwFrac", "Achieved share of memory bandwidth", f"INDEX(EG_bandwidth,MATCH({key},EG_keys,0))", "",
            "0.00")
    s.value("SrvCap", "Engine batch cap (0: none)", f"INDEX(EG_cap,MATCH({key},EG_keys,0))", "", "#,##0")
    s.value("SrvGraphCap", "CUDA graphs up to (sequences; 0: not modelled)", f"INDEX(EG_graph,MATCH({key},EG_keys,0))",
            "Engine.graph_cap: the engine's capture cap on the GPU", "#,##0")
    s.value("SrvProfTokens", "Profile run kept out of the KV cache (tokens; 0: none)",
            f"INDEX(EG_profile,MATCH({key},EG_keys,0))", "Engine.profile_tokens: vLLM's token budget on the GPU",
            "#,##0")

    key = f'SrvEngine&"{sf.SEP}"&{gpu}&"{sf.SEP}"&{prec}'
    s.value("SrvKernel", "Kernel the release runs the MoE experts with",
            f'IF(SrvExperts=0,"none (dense)",IFERROR(INDEX(MK_kernel,MATCH({key},MK_keys,0)),"none (no padding)"))',
            f"Engine.moe_kernel; '{sf.KERNEL_NOT_READ}': the engine answers #N/A")
    s.value("SrvKernelRead", "The kernel's padding is known?", f'IF(SrvKernel="{sf.KERNEL_NOT_READ}","no","yes")')
    for name, label, table in (("SrvPadHidden", "... pads the hidden size to a multiple of", "MK_hidden"),
                               ("SrvPadShard", "... pads each GPU's expert width to a multiple of", "MK_shard"),
                               ("SrvPadCopied", "... holds this many bits a value twice", "MK_copied_bits")):
        s.value(name, label, f"IFERROR(INDEX({table},MATCH({key},MK_keys,0)),0)",
                "0: no kernel padding (capacity.kernel_padding_gib)", "#,##0.00")

    s.section("Number formats (Precisions sheet; Serving figures)")
    s.value("SrvWidth", "Bytes per weight", f"INDEX(CatPrecision_bytes_per_param,MATCH({prec},CatPrecisionNames,0))",
            "", "0.000")
    s.value("SrvUnconvWidth", "Bytes per weight kept at 16 bits",
            f'INDEX(CatPrecision_bytes_per_param,MATCH("{defaults.KEPT_PRECISION}",CatPrecisionNames,0))',
            "defaults.KEPT_PRECISION", "0.000")
    s.value("SrvWeightBytes", "Weight bytes in memory", "SrvParams*SrvWidth+SrvUnconv*(SrvUnconvWidth-SrvWidth)",
            "arch.weight_bytes", "#,##0")
    s.value("SrvDenseBytes", "Weight bytes read per step outside experts",
            "SrvDenseStream*SrvWidth+SrvUnconvStream*(SrvUnconvWidth-SrvWidth)", "serving.streamed_bytes", "#,##0")
    pair = f'MATCH({gpu}&"{sf.SEP}"&{prec},GP_keys,0)'
    s.value("SrvBits", "Products run on units of (bits)", f"INDEX(GP_bits,{pair})", "", "0")
    s.value("SrvQuantized", "Weights dequantised to 16-bit (1: yes)", f"INDEX(GP_weight_only,{pair})", "", "0")
    s.value("SrvKvFormat", "KV-cache format", f'INDEX(EP_kv,MATCH(SrvEngine&"{sf.SEP}"&{prec},EP_keys,0))')
    s.value("SrvKvWidth", "Bytes per KV value", "INDEX(CatPrecision_bytes_per_param,"
            "MATCH(SrvKvFormat,CatPrecisionNames,0))", "", "0.000")
    s.value("SrvMatmulFrac", "Achieved share of the tensor peak (products)",
            "IF(SrvBits>0,INDEX(Eng_matmul,SrvEngRow,MATCH(SrvBits,Eng_matmul_bits,0)),0)", "", "0.00")
    s.value("SrvMatmulFrac16", "Achieved share of the 16-bit peak (attention)",
            "INDEX(Eng_matmul,SrvEngRow,MATCH(16,Eng_matmul_bits,0))", "", "0.00")

    s.section("Rates per GPU")
    s.value("SrvBwWeights", "Weights stream at (bytes/s)", "SrvBandwidth*SrvK_TB*SrvBwFrac*"
            "IF(SrvQuantized=1,SrvQuantFactor,1)", "bandwidth x share (x factor if quantised)", BYTES_PER_S)
    s.value("SrvBwKv", "KV cache streams at (bytes/s)", "SrvBandwidth*SrvK_TB*SrvBwFrac", "", BYTES_PER_S)
    s.value("SrvFlops", "Products run at (FLOP/s)", "SrvPeak*SrvK_Tera*SrvMatmulFrac", "", FLOP_PER_S)
    s.value("SrvFlops16", "Attention runs at (FLOP/s)", "SrvPeak16*SrvK_Tera*SrvMatmulFrac16", "", FLOP_PER_S)
    s.value("SrvFlopsAttn", "Prefill attention runs at (FLOP/s)", "SrvPeak16*SrvK_Tera*SrvK_AttnFrac",
            "flash attention on the 16-bit units", FLOP_PER_S)
    s.value("SrvHasPeak", "The catalog has the GPU's tensor TFLOPS?", 'IF(AND(SrvPeak>0,SrvPeak16>0),"yes","no")',
            "without it the step time cannot be estimated (the engine answers #N/A or #VALUE!)")

    p, o = i.prompt.ref(SHEET, absolute=True), i.output.ref(SHEET, absolute=True)
    s.section("Traffic and lengths")
    latency = i.latency.ref(SHEET, absolute=True)
    # a blank (or 0) latency target is no target, as GPUS_FOR_TRAFFIC's blank max_tpot_ms: "none" compares
    # above every number, so every batch meets it
    s.value("SrvTarget", "TPOT target (ms per output token)", f'IF({latency}>0,{latency}*1000/{o},"none")',
            "latency target / output tokens (blank latency: none)", st.MS)
    s.value("SrvDemand", "Output tokens/s needed, with headroom",
            f"{i.rpm.ref(SHEET, absolute=True)}/60*{o}*(1+{i.headroom.ref(SHEET, absolute=True)})", "", st.TOK_S)
    s.value("SrvContext", "Mean context while decoding (tokens)", f"{p}+{o}/2", "prompt + half the output", "#,##0.0")
    s.value("SrvKvTokens", "KV tokens reserved per request", f'{p}+IF(SrvKvRes="max",{o},{o}/2)',
            "prompt + output (or half of it when KV grows)", "#,##0.0")
    for name, label, tokens in (("SrvLtContext", "Layer-tokens cached at the mean context", "SrvContext"),
                                ("SrvLtKv", "Layer-tokens reserved per request", "SrvKvTokens"),
                                ("SrvLtPrompt", "Layer-tokens attended in a prompt", p)):
        s.value(name, label, f"SrvGlobal*{tokens}+SrvLocal*IF(SrvWindow>0,MIN({tokens},SrvWindow),{tokens})",
                "global layers x tokens + window layers x min(tokens, window)", "#,##0")
    s.value("SrvPrefillFlops", "FLOPs of one prompt's matrix products in the weight format",
            f"2*(SrvMatmul-SrvUnconvStream)*{p}", "2 x product parameters x tokens, at the weight format's rate",
            FLOP_COUNT)
    s.value("SrvPrefillFlops16", "... and in the parts kept at 16 bits", f"2*SrvUnconvStream*{p}",
            "at the 16-bit rate (capacity._product_seconds_per_token)", FLOP_COUNT)
    s.value("SrvPrefillAttnFlops", "FLOPs of one prompt's attention", f"SrvHeads*SrvPrefillWidth*{p}*SrvLtPrompt",
            "causal attention (grows with the square of the prompt), at flash attention's rate", FLOP_COUNT)


GN_KEY = 'SrvGpuName&"' + sf.SEP + '"&{c}{split}'     # the (GPU, group size) all-reduce figures' key


# rows of the group block (label, key, formula with {c} = this column's letter, format)
def _group_rows(prompt: str, out: str) -> list[tuple[str, str, str | None, str | None]]:
    return [
        ("GPUs per model copy", "n", None, "0"),
        ("GPUs sharing one step", "split", 'IF(SrvMulti="tensor",{c}{n},1)', "0"),
        ("KV replication (GPUs beyond the KV heads)", "repl", "IF(SrvMla=1,{c}{split},MAX(1,{c}{split}/SrvKvHeads))",
         "0.00"),
        ("Weights per GPU (GiB)", "wgib", "SrvWeightBytes/{c}{n}/SrvK_GiB", st.GB),
        ("Routed experts a GPU holds (whole ones under expert parallelism)", "xlocal",
         'IF(AND(OR(SrvMoePar="expert",SrvMoePar="expert_dp"),{c}{split}>1),ROUNDUP(SrvExperts/{c}{split},0),'
         'SrvExperts)', "#,##0"),
        ("Width of each of its experts (a 1/n slice under tensor parallelism)", "xwidth",
         'IF(AND(OR(SrvMoePar="expert",SrvMoePar="expert_dp"),{c}{split}>1),SrvExpertFfn,SrvExpertFfn/{c}{split})',
         "#,##0.0"),
        ("MoE kernel padding per GPU (GiB)", "pad",
         'IF(OR(SrvExperts=0,SrvPadHidden=0),0,3*(((ROUNDUP(SrvHidden/SrvPadHidden,0)*SrvPadHidden'
         '*ROUNDUP({c}{xwidth}/SrvPadShard,0)*SrvPadShard)-SrvHidden*{c}{xwidth})*SrvWidth*8'
         '+ROUNDUP(SrvHidden/SrvPadHidden,0)*SrvPadHidden*ROUNDUP({c}{xwidth}/SrvPadShard,0)*SrvPadShard*SrvPadCopied)'
         '*{c}{xlocal}*SrvMoeLayers/8/SrvK_GiB/IF(SrvMulti="tensor",1,{c}{n}))', st.GB),
        ("Memory the engine uses (GiB)", "usable", 'SrvMemory*IF(SrvMemRule="total",SrvMemFrac,1)', st.GB),
        ("Profile run's peak (GiB)", "profile",
         "IF(SrvProfTokens>0,MAX(SrvProfTokens*(2*SrvHidden+SrvMlpValues/{c}{split})*2,MIN(IF(SrvCap>0,SrvCap,"
         "SrvProfTokens),SrvProfTokens)*SrvVocab*IF(SrvFlashSampler=1,SrvK_SamplerBytesFI,"
         "IF(SrvSamplerSorts=1,SrvK_SamplerBytes,SrvK_SamplerBytesInPlace)))"
         "/SrvK_GiB,0)", st.GB),
        ("Left after weights, padding and reserve (GiB)", "left",
         "{c}{usable}-{c}{wgib}-{c}{pad}-SrvReserve-{c}{profile}", st.GB),
        ("KV budget (GiB)", "budget", 'MAX(0,{c}{left})*IF(SrvMemRule="free",SrvMemFrac,1)', st.GB),
        ("KV cache per request (GiB)", "perseq", "SrvKvValues*SrvKvWidth*SrvLtKv*{c}{repl}/{c}{n}/SrvK_GiB", "0.000"),
        ("Requests whose KV cache fits", "fits", "INT({c}{budget}/{c}{perseq})", "#,##0"),
        ("Batch limit (KV fit, engine cap)", "limit", "IF(SrvCap>0,MIN({c}{fits},SrvCap),{c}{fits})", "#,##0"),
        ("All-reduce latency per step (s)", "arlat",
         'IF({c}{split}<=1,0,SrvLayers*2*INDEX(GN_latency_s,MATCH(' + GN_KEY + ',GN_keys,0)))', SECONDS),
        ("All-reduce time per token (s)", "artok",
         ("IF(OR({c}{split}<=1,NOT(SrvLinkGBs>0)),0,SrvLayers*2*2*({c}{split}-1)/{c}{split}*SrvHidden*2"
          "/INDEX(GN_bus,MATCH(" + GN_KEY + ",GN_keys,0)))"), SECONDS),
        ("One-shot all-reduce latency per step (s; the ring's where the link has none)", "a1lat",
         ('IF({c}{split}<=1,0,IF(INDEX(GN_one_rate,MATCH(' + GN_KEY + ',GN_keys,0))>0,'
          'SrvLayers*2*INDEX(GN_one_latency_s,MATCH(' + GN_KEY + ',GN_keys,0)),{c}{arlat}))'), SECONDS),
        ("One-shot all-reduce time per token (s)", "a1tok",
         ('IF(OR({c}{split}<=1,NOT(SrvLinkGBs>0)),0,IF(INDEX(GN_one_rate,MATCH(' + GN_KEY + ',GN_keys,0))>0,'
          'SrvLayers*2*({c}{split}-1)*SrvHidden*2/INDEX(GN_one_rate,MATCH(' + GN_KEY + ',GN_keys,0)),{c}{artok}))'),
         SECONDS),
        ("Fixed time per step (s)", "fixed",
         ('SrvStepUs*0.000001+SrvLayers*SrvLayerUs*0.000001+IF(AND(SrvMulti<>"tensor",{c}{n}>1),'
          '({c}{n}-1)*SrvHopS,0)'), SECONDS),
        ("CPU time per running sequence per step (s)", "seq", "SrvSeqUs*0.000001", SECONDS),
        ("Prefill compute per request (s)", "prefill",
         guard("(SrvPrefillFlops/SrvFlops+IF(SrvPrefillFlops16>0,SrvPrefillFlops16/SrvFlops16,0)"
               "+SrvPrefillAttnFlops/SrvFlopsAttn)/{c}{split}+"
               + all_reduce_s("{c}", "{arlat}", "{artok}", "{a1lat}", "{a1tok}", prompt)), SECONDS),
        # a decode step's parts that do not depend on the batch, once: tpot_ms adds them up at a batch
        ("Dense weights read per step (s)", "wread", guard("SrvDenseBytes/SrvBwWeights/{c}{split}"),
         SECONDS),
        ("Dense products per sequence (s)", "wflop", guard("2*((SrvDense-SrvUnconvStream)/SrvFlops"
                                                               "+IF(SrvUnconvStream>0,SrvUnconvStream/SrvFlops16,0))"
                                                               "/{c}{split}"), SECONDS),
        ("Routed expert parameters read per touched expert, per MoE layer", "xparams",
         'IF(SrvExperts>0,SrvPerExpert/SrvMoeLayers/{c}{split}*IF(SrvMoePar="expert",{c}{split},1),0)', "#,##0"),
        ("Attention per sequence (s)", "attn",
         guard("MAX(SrvKvValues*SrvKvWidth*SrvLtContext*{c}{repl}/{c}{split}/SrvBwKv,"
               "2*SrvHeads*SrvAttnWidth*SrvLtContext/{c}{split}/SrvFlops16)"), SECONDS),
        ("Prefill share per sequence per step (s)", "pshare", guard("{c}{prefill}/" + out), SECONDS),
        ("Time per running sequence per step (s)", "seqstep",
         guard("{c}{attn}+{c}{seq}+{c}{pshare}"), SECONDS),
    ]


def all_reduce_s(g: str, lat: str, tok: str, lat1: str, tok1: str, tokens: str) -> str:
    """Seconds of a step's all-reduces over `tokens` tokens (collectives.engine_all_reduce_s): the faster of the
    ring's line and the one-shot kernel's (the ring's again where the link has none)."""
    return f"MIN({g}{lat}+{g}{tok}*{tokens},{g}{lat1}+{g}{tok1}*{tokens})"


def experts_s(batch: str, split: str, params: str) -> str:
    """Seconds per GPU for the routed experts of a step (moe.expert_seconds and moe.routing_seconds): per MoE
    layer, one grouped kernel per GEMM over the experts this GPU runs (all touched ones, or under expert parallelism
    the busiest GPU's: moe.busiest_rank_experts; `params` a GPU reads of each: a 1/n slice of every expert, or whole
    experts when the engine runs MoE layers expert-parallel) on its roofline with the floor, plus the fixed time a
    MoE layer (calibration.MOE_LAYER_US) and routing."""
    touched = f"SrvExperts*(1-(1-SrvTopK/SrvExperts)^{batch})"
    rows = f"{batch}*SrvTopK/({touched})"
    runs = f"{busiest_experts_s(touched, split)}*{params}"
    gemm = [f"MAX({runs}*{share}*SrvWidth/SrvBwWeights,2*{runs}*{share}*{rows}/SrvFlops,SrvK_MoeFloorUs*0.000001)"
            for share in ("SrvGemmShare", "(1-SrvGemmShare)")]
    routing = f"SrvK_MoeRoutingPasses*{batch}*SrvTopK*SrvHidden*2/{split}/SrvBwKv"
    return (f"IF(SrvExperts>0,SrvMoeLayers*({'+'.join(gemm)}+SrvK_MoeLayerUs*0.000001)"
            f"+SrvMoeLayers*{routing},0)")


def busiest_experts_s(touched: str, split: str) -> str:
    """Touched experts the busiest GPU runs (moe.busiest_rank_experts): under expert parallelism the mean of the
    largest of n Binomial(E/n, touched/E) counts, sum over j of 1 - F(j)^n; all touched experts otherwise."""
    local = f"ROUNDUP(SrvExperts/{split},0)"
    cdf = f'BINOMDIST(ROW(INDIRECT("1:"&{local}))-1,{local},MIN(1,({touched})/SrvExperts),TRUE)'
    return f'IF(SrvMoePar="expert",SUMPRODUCT(1-{cdf}^{split}),{touched})'


def eager_s(batch: str) -> str:
    """Seconds a decode step of `batch` sequences adds beyond the engine's CUDA-graph cap (Engine.layer_us)."""
    return f"IF(AND(SrvGraphCap>0,{batch}>SrvGraphCap),SrvLayers*SrvK_EagerUs*0.000001,0)"


def weights_s(g: str, rows: dict[str, int], batch: str) -> str:
    """Seconds per GPU of a step's products at `batch` for the group whose cells `g` prefixes: the dense weights
    on their roofline, and the routed experts."""
    return (f"MAX({g}{rows['wread']},{g}{rows['wflop']}*{batch})"
            f"+{experts_s(batch, g + str(rows['split']), g + str(rows['xparams']))}")


def tpot_ms(c: str, rows: dict[str, int], batch: str) -> str:
    """TPOT (ms) at `batch` for the group in column `c` of the calculation sheet, from the group's rows: one decode
    step (weights, then per running sequence its attention, CPU time (vLLM V0's) and share of the prefills; the
    all-reduces at the batch, the faster of the ring and the one-shot kernel; the fixed time per step; a batch beyond
    the engine's CUDA-graph cap pays the eager launches per layer)."""
    g = f"'{SHEET}'!${c}$"
    ar = all_reduce_s(g, *(str(rows[k]) for k in ("arlat", "artok", "a1lat", "a1tok")), batch)
    return guard(f"1000*({weights_s(g, rows, batch)}+{ar}+{g}{rows['fixed']}+{eager_s(batch)}"
                 f"+{batch}*{g}{rows['seqstep']})")


LINK_MISSING, PEAK_MISSING = "no link rate in the catalog", "no tensor TFLOPS in the catalog"
KERNEL_MISSING = "the release's MoE kernel not read"      # Engine.moe_kernel answers #N/A
# an engine running MoE layers with data-parallel attention (moe_parallel expert_dp) lays a group out in a way these
# formulas do not follow (weights per GPU, KV cache, all-to-alls): said, not computed; GPUS_FOR_TRAFFIC sizes it
DP_ATTENTION = "data-parallel attention: not in these formulas (GPUS_FOR_TRAFFIC sizes it)"
# why a group size does not work, in the engine's order (weights, KV, then the TPOT target)
STATUS = (f'IF(AND({{c}}{{n}}>1,SrvExperts>0,SrvMoePar="expert_dp"),"{DP_ATTENTION}",'
          f'IF(SrvKernelRead="no","{KERNEL_MISSING}",'
          'IF({c}{left}<=0,"weights do not fit",'
          'IF({c}{fits}<1,"one request\'s KV cache does not fit",'
          f'IF(AND({{c}}{{n}}>1,NOT(SrvLinkGBs>0)),"{LINK_MISSING}",'
          f'IF(SrvHasPeak<>"yes","{PEAK_MISSING}",'
          'IF({c}{tpot1}>SrvTarget,"batch 1 misses the TPOT target","ok")))))))')


def guard(formula: str) -> str:
    """A step time needs the tensor peak: without it the cell says n/a (no division by zero)."""
    return f'IF(SrvHasPeak="yes",{formula},"n/a")'


def build(book: Book, inputs: Inputs) -> dict[str, C]:
    """Write the calculation and search sheets; returns the cells the plan shows."""
    ws = book.wb.create_sheet(SHEET)
    book.main_sheets.append(SHEET)
    st.heading(ws, "Serving calculation: the serving model in native formulas",
               ("The same model as GPUS_FOR_TRAFFIC (udfs/physics/capacity.py, docs/serving-model.md): the largest batch "
                "whose KV cache fits and whose time per output token (TPOT) meets the target, its throughput, "
                "and the copies the traffic needs; for 1, 2, 4 and 8 GPUs per copy, keeping the fewest GPUs."),
               merge_to=11, height=32)
    s = Sheet(book, ws, 4)
    _figures(s, inputs)
    out = inputs.output.ref(SHEET, absolute=True)

    # ---- per group size
    s.section("Each tensor-parallel group size (columns), and the one kept (last column)")
    head = s.row
    ws.cell(row=head, column=1, value="GPUs per copy")
    for j, n in enumerate(GROUPS):
        ws.cell(row=head, column=FIRST_GROUP_COL + j, value=plural(n, "GPU"))
    ws.cell(row=head, column=CHOSEN_COL, value="Kept")
    st.style_header_row(ws, head, 1, CHOSEN_COL)
    spec = _group_rows(inputs.prompt.ref(SHEET, absolute=True), out)
    rows = {key: head + 1 + k for k, (_, key, _, _) in enumerate(spec)}
    extra = ["tpot1", "found", "tpotfound", "foundtps", "tpotcap", "captps", "batch", "tpot", "tps", "copies", "gpus",
             "status", "usable_gpus"]
    for k, key in enumerate(extra):
        rows[key] = head + 1 + len(spec) + k
    assert len(rows) == len(spec) + len(extra), "a row key used twice"
    for (label, key, formula, fmt) in spec:
        r = rows[key]
        ws.cell(row=r, column=1, value=label)
        for j, n in enumerate(GROUPS):
            c = col(FIRST_GROUP_COL + j)
            cell = ws.cell(row=r, column=FIRST_GROUP_COL + j)
            cell.value = n if formula is None else "=" + formula.format(c=c, **rows)
            st.style_output(cell, fmt)
    search_rows = _search_sheet(book, rows)
    last_lo = f"'{SEARCH}'!{{c}}{search_rows['final']}"
    below_cap = "AND(SrvGraphCap>0,SrvGraphCap<{c}{found})"
    group = [
        ("TPOT at batch 1 (ms)", "tpot1", tpot_ms("{c}", rows, "1"), st.MS),
        ("Largest batch within limit and TPOT target", "found", last_lo, "#,##0"),
        ("TPOT at that batch (ms)", "tpotfound", tpot_ms("{c}", rows, "{c}{found}"), st.MS),
        ("Throughput at that batch (output tokens/s)", "foundtps", "IFERROR({c}{found}/({c}{tpotfound}/1000),0)",
         "#,##0"),
        ("TPOT at the CUDA-graph cap below it (ms; -: none)", "tpotcap",
         f'IF({below_cap},{tpot_ms("{c}", rows, "SrvGraphCap")},"-")', st.MS),
        ("Throughput at the CUDA-graph cap below it (output tokens/s; 0: none)", "captps",
         f"IF({below_cap},IFERROR(SrvGraphCap/({{c}}{{tpotcap}}/1000),0),0)", "#,##0"),
        ("Batch (the better of the two: capacity._graph_cap)", "batch",
         "IF({c}{captps}>{c}{foundtps},SrvGraphCap,{c}{found})", "#,##0"),
        ("TPOT at that batch (ms)", "tpot", "IF({c}{captps}>{c}{foundtps},{c}{tpotcap},{c}{tpotfound})", st.MS),
        ("Throughput per copy (output tokens/s)", "tps", 'IF(ISNUMBER({c}{tpot}),{c}{batch}/({c}{tpot}/1000),"n/a")',
         "#,##0"),
        ("Copies the traffic needs", "copies",
         'IF(ISNUMBER({c}{tps}),MAX(1,ROUNDUP(SrvDemand/{c}{tps}-0.000000001,0)),"n/a")', "#,##0"),
        ("GPUs", "gpus", 'IF(ISNUMBER({c}{copies}),{c}{copies}*{c}{n},"n/a")', "#,##0"),
        ("Status", "status", STATUS, None),
        ("GPUs, where the group works", "usable_gpus", '=IF({c}{status}="ok",{c}{gpus},"-")', "#,##0"),
    ]
    for label, key, formula, fmt in group:
        r = rows[key]
        ws.cell(row=r, column=1, value=label)
        for j in range(len(GROUPS)):
            c = col(FIRST_GROUP_COL + j)
            text = formula.lstrip("=").replace("{c}", c)
            for k2, v in rows.items():
                text = text.replace("{" + k2 + "}", str(v))
            cell = ws.cell(row=r, column=FIRST_GROUP_COL + j, value="=" + text)
            st.style_output(cell, fmt)
    first, last = col(FIRST_GROUP_COL), col(CHOSEN_COL - 1)
    usable = f"${first}${rows['usable_gpus']}:${last}${rows['usable_gpus']}"
    # the kept column: the first group (fewest GPUs per copy) with the fewest GPUs
    s.row = rows["usable_gpus"] + 1
    s.section("The group kept")
    def count(text: str) -> str:
        return ",".join(f'IF({col(FIRST_GROUP_COL + j)}{rows["status"]}="{text}",1,0)' for j in range(len(GROUPS)))
    # as the engine: a group it cannot estimate (a figure missing) stops the comparison
    s.value("SrvMissing", "Figure the catalog lacks",
            f'IF(SUM({count(KERNEL_MISSING)})>0,"MoE kernel not read",IF(SUM({count(LINK_MISSING)})>0,"no link rate",'
            f'IF(SUM({count(PEAK_MISSING)})>0,"no tensor TFLOPS","none")))',
            "the engine answers #N/A")
    s.value("SrvFits", "Does any group work?", f'IF(AND(SrvMissing="none",SUM({count("ok")})>0),"yes","no")')
    s.value("SrvBestGpus", "Fewest GPUs", f"MIN({usable})", "", "#,##0")
    s.value("SrvKept", "Kept group (column)", f'IF(SrvFits="yes",MATCH(SrvBestGpus,{usable},0),1)', "1 = 1 GPU, "
            "2 = 2 GPUs, 3 = 4 GPUs, 4 = 8 GPUs", "0")
    for r in rows.values():
        cell = ws.cell(row=r, column=CHOSEN_COL, value=f"=INDEX(${first}{r}:${last}{r},1,SrvKept)")
        fmt = ws.cell(row=r, column=FIRST_GROUP_COL).number_format
        st.style_output(cell, fmt)
    s.value("SrvLimitedBy", "What limits the batch",
            f'IF(${col(CHOSEN_COL)}${rows["batch"]}<${col(CHOSEN_COL)}${rows["found"]},"CUDA-graph cap",'
            f'IF(${col(CHOSEN_COL)}${rows["batch"]}<${col(CHOSEN_COL)}${rows["limit"]},"TPOT target",'
            f'IF(AND(SrvCap>0,${col(CHOSEN_COL)}${rows["fits"]}>SrvCap),"engine batch cap","KV cache")))')
    kept = {k: C(SHEET, f"{col(CHOSEN_COL)}{r}", number=True) for k, r in rows.items()}
    first_candidate = _candidates(s, rows)
    _curve_sheet(book, rows, first_candidate)
    st.set_widths(ws, {"A": 36, "B": 13.5, **{col(c): 11.5 for c in range(3, 12)}})   # prints one page wide at >= 8 pt
    ws.freeze_panes = "B4"
    return {**kept, "any": C(SHEET, _named_cell(book, "SrvFits")), "best": C(SHEET, _named_cell(book, "SrvBestGpus")),
            "limited_by": C(SHEET, _named_cell(book, "SrvLimitedBy")),
            "engine": C(SHEET, _named_cell(book, "SrvEngine"))}


def _named_cell(book: Book, name: str) -> str:
    return book.wb.defined_names[name].attr_text.split("!")[-1].replace("$", "")


def _search_sheet(book: Book, rows: dict[str, int]) -> dict[str, int]:
    """Bisection for the largest batch in [1, limit] whose TPOT meets the target (capacity._largest):
    per step, the batch tried, its TPOT, and the range still open."""
    ws = book.wb.create_sheet(SEARCH)
    ws["A1"] = "Batch search: the largest batch within the limit whose TPOT meets the target"
    ws["A1"].font = st.SECTION_FONT
    ws["A2"] = ("Bisection, as the engine does: try the middle of the open range; if its TPOT meets the target it "
                "becomes the largest known good batch, else the range ends below it. A finished search has "
                "lowest = highest.")
    ws["A2"].font = st.NOTE_FONT
    ws["A2"].alignment = st.WRAP
    ws.merge_cells("A2:E2")
    ws.row_dimensions[2].height = 45
    ws.cell(row=4, column=1, value="GPUs per copy")
    for j in range(len(GROUPS)):
        ws.cell(row=4, column=FIRST_GROUP_COL + j, value=f"=\'{SHEET}\'!{col(FIRST_GROUP_COL + j)}{rows['n']}")
    st.style_header_row(ws, 4, 1, CHOSEN_COL - 1)
    r = 5
    lo_row, hi_row = r, r + 1
    ws.cell(row=lo_row, column=1, value="Start: largest known good batch")
    ws.cell(row=hi_row, column=1, value="Start: largest batch still possible (the limit)")
    for j in range(len(GROUPS)):
        c = col(FIRST_GROUP_COL + j)
        st.style_output(ws.cell(row=lo_row, column=FIRST_GROUP_COL + j, value="=1"), "#,##0")
        st.style_output(ws.cell(row=hi_row, column=FIRST_GROUP_COL + j,
                                value=f"=MAX(1,'{SHEET}'!{c}{rows['limit']})"), "#,##0")
    r += 2
    for step in range(1, SEARCH_STEPS + 1):
        labels = (f"Step {step}: batch tried", f"Step {step}: its TPOT (ms)",
                  f"Step {step}: largest known good batch", f"Step {step}: largest batch still possible")
        for k, label in enumerate(labels):
            ws.cell(row=r + k, column=1, value=label)
        for j in range(len(GROUPS)):
            c = col(FIRST_GROUP_COL + j)
            mid, tp = f"{c}{r}", f"{c}{r + 1}"
            cells = [f"INT(({c}{lo_row}+{c}{hi_row}+1)/2)", tpot_ms(c, rows, mid),
                     f"IF({tp}<=SrvTarget,{mid},{c}{lo_row})", f"IF({tp}<=SrvTarget,{c}{hi_row},{mid}-1)"]
            for k, f in enumerate(cells):
                cell = ws.cell(row=r + k, column=FIRST_GROUP_COL + j, value="=" + f)
                st.style_output(cell, st.MS if k == 1 else "#,##0")
        lo_row, hi_row = r + 2, r + 3
        r += 4
    ws.cell(row=r, column=1, value="Batch found").font = st.BOLD
    ws.cell(row=r + 1, column=1, value="Search finished (lowest = highest)?")
    for j in range(len(GROUPS)):
        c = col(FIRST_GROUP_COL + j)
        st.style_output(ws.cell(row=r, column=FIRST_GROUP_COL + j, value=f"={c}{lo_row}"), "#,##0", True)
        ws.cell(row=r + 1, column=FIRST_GROUP_COL + j, value=f'=IF({c}{lo_row}={c}{hi_row},"yes","no")')
    st.set_widths(ws, {"A": 44, **{col(c): 12 for c in range(2, CHOSEN_COL)}})
    ws.freeze_panes = "B5"
    return {"final": r}


CANDIDATE_HEADERS = ["Batch", "Within the limit?", "Weights (ms)", "Attention (ms)", "All-reduce (ms)",
                     "Fixed (ms)", "Step (ms)", "Prefill share (ms)", "TPOT (ms)", "Throughput (output tok/s)",
                     "Meets the TPOT target?"]


def _candidates(s: Sheet, rows: dict[str, int]) -> int:
    """Candidate batches at the kept group: the step time by operation, TPOT and throughput.
    Returns the row of the first candidate (the kept batch is the row after the last)."""
    ws = s.ws
    s.section("Candidate batches at the kept group: one decode step by operation, TPOT and throughput")
    head = s.row
    for i, h in enumerate(CANDIDATE_HEADERS, start=1):
        ws.cell(row=head, column=i, value=h).alignment = st.WRAP
    st.style_header_row(ws, head, 1, len(CANDIDATE_HEADERS))
    ws.row_dimensions[head].height = 32
    k = f"'{SHEET}'!${col(CHOSEN_COL)}$"
    kept = {key: f"{k}{r}" for key, r in rows.items()}
    ar_rows = [str(rows[x]) for x in ("arlat", "artok", "a1lat", "a1tok")]
    batches = [str(b) for b in CANDIDATES] + [f"={kept['batch']}"]
    for i, b in enumerate(batches):
        r = head + 1 + i
        ws.cell(row=r, column=1, value=int(b) if b.isdigit() else b)
        st.style_output(ws.cell(row=r, column=1), "#,##0", key=not b.isdigit())
        a = f"$A{r}"
        cells = [f'IF({a}<={kept["limit"]},"yes","no")', guard(f"1000*({weights_s(k, rows, a)})"),
                 guard(f"1000*{a}*{kept['attn']}"), f"1000*{all_reduce_s(k, *ar_rows, a)}",
                 f"1000*({kept['fixed']}+{eager_s(a)}+{a}*{kept['seq']})", guard(f"SUM(C{r}:F{r})"),
                 guard(f"1000*{a}*{kept['pshare']}"), guard(f"G{r}+H{r}"), guard(f"{a}/(I{r}/1000)"),
                 f'IF(I{r}<=SrvTarget,"yes","no")']
        fmts = [None, st.MS, st.MS, st.MS, st.MS, st.MS, st.MS, st.MS, "#,##0", None]
        for j, (f, fmt) in enumerate(zip(cells, fmts), start=2):
            st.style_output(ws.cell(row=r, column=j, value="=" + f), fmt)
    ws.cell(row=head + 1 + len(batches), column=1,
            value="The last row is the batch kept; its TPOT equals the kept column above.").font = st.NOTE_FONT
    s.row = head + 2 + len(batches)
    return head + 1


CURVE = "Serving curve"
CURVE_HEADERS = ["Batch", "Tokens/s per user", "Output tokens/s per GPU"]


def _curve_sheet(book: Book, rows: dict[str, int], first: int):
    """The serving trade-off curve (SERVING_CURVE) of the kept group, read off the candidate batches:
    batch 1 up to the operating point (the batch kept), tokens/s per GPU against tokens/s each user
    sees, the kept batch marked. A candidate beyond the kept batch shows the kept point again, so the
    table has no gaps and no errors whatever the inputs."""
    ws = book.wb.create_sheet(CURVE)
    book.main_sheets.append(CURVE)
    st.heading(ws, "Serving curve: throughput per GPU against speed per user",
               ("One model copy of the kept group ('Serving calculation') at batch 1, 2, 4, ... up to the batch kept: "
                "larger batches give more output tokens per GPU and fewer to each user. The same points as the "
                "SERVING_CURVE worksheet function for these inputs (up to batch 2,048, then the batch kept); the kept batch is "
                "the red point."), merge_to=8, height=45)
    head = 4
    for i, h in enumerate(CURVE_HEADERS, start=1):
        ws.cell(row=head, column=i, value=h).alignment = st.WRAP
    st.style_header_row(ws, head, 1, len(CURVE_HEADERS))
    calc = f"'{SHEET}'!"
    kept_row = first + len(CANDIDATES)
    batch, n = f"{calc}${col(CHOSEN_COL)}${rows['batch']}", f"{calc}${col(CHOSEN_COL)}${rows['n']}"
    ok = f'AND(SrvFits="yes",ISNUMBER({calc}$I${kept_row}))'

    def point(src: int, r: int):
        """Batch, per user, per GPU for the calculation sheet's row `src`, written in row `r`."""
        def pick(c: str) -> str:     # beyond the kept batch: the kept point
            return f"IF({calc}$A${src}<={batch},{calc}${c}${src},{calc}${c}${kept_row})"
        cells = (pick("A"), f"1000/{pick('I')}", f"{pick('J')}/{n}")
        for j, (f, fmt) in enumerate(zip(cells, ("#,##0", "#,##0.0", "#,##0")), start=1):
            st.style_output(ws.cell(row=r, column=j, value=f'=IF({ok},{f},"n/a")'), fmt)

    for i in range(len(CANDIDATES)):
        point(first + i, head + 1 + i)
    mark = head + len(CANDIDATES) + 2
    ws.cell(row=mark, column=1, value="Kept batch").font = st.BOLD
    point(kept_row, mark + 1)
    chart = ScatterChart()
    chart.title = "Output tokens/s per GPU against tokens/s per user"
    for lo, hi, title, colour in ((head + 1, head + len(CANDIDATES), "Batch 1 to the batch kept", "4472C4"),
                                  (mark + 1, mark + 1, "Batch kept", "C00000")):
        series = Series(Reference(ws, min_col=3, min_row=lo, max_row=hi),
                        Reference(ws, min_col=2, min_row=lo, max_row=hi), title=title)
        series.marker.symbol = "circle" if lo != mark + 1 else "diamond"
        series.marker.graphicalProperties.solidFill = colour
        if lo == mark + 1:
            series.marker.size = 10
            series.graphicalProperties.line.noFill = True
        chart.series.append(series)
    chart.x_axis.title = "Output tokens/s each user sees"
    chart.y_axis.title = "Output tokens/s per GPU"
    chart.x_axis.number_format = chart.y_axis.number_format = "#,##0"
    chart.x_axis.delete = chart.y_axis.delete = False
    chart.height, chart.width = 9, 16
    book.chart(ws, chart, f"A{mark + 3}")
    st.set_widths(ws, {"A": 12, "B": 14, "C": 16})
    book.define("CurveKeptPerUser", C(CURVE, f"B{mark + 1}"))
    book.define("CurveKeptPerGpu", C(CURVE, f"C{mark + 1}"))
