"""The figures the inference plan's serving calculation looks up, written from Flopsheet's
engine at build time (never retyped): its constants, the engine profiles, each catalog model's
serving shape, the layouts a bare parameter count borrows, and what the engine derives by rule
for an (engine, GPU) or (engine, number format) pair. Each table defines named ranges
(`Shape_*`, `Eng_*`, ...) that the calculation sheet's native formulas use."""

from __future__ import annotations

import math
from itertools import pairwise

from udfs.catalogs import catalog, engines, resolve
from udfs.errors import FlopsheetError
from udfs.physics import calibration as cal
from udfs.physics import arch, capacity, collectives, moe, serving, shape
from udfs.physics.arch import decode_attention_width, kv_bytes_per_layer_token, prefill_attention_width
from udfs.units import GIB, TB, TERA

from . import styles as st
from .common import Book, col, write_text

SHEET = "Serving figures"
SHAPES = "Model shapes"
ENGINES = "Engines"
DEFAULT_ENGINE = "Default for the GPU"      # the engine input's first choice: the engine's own default
SEP = " | "                                  # joins an engine and a GPU (or format) into one lookup key
KERNEL_NOT_READ = "not read"                 # the MoE kernel table reads the engine and format, not this release
GROUP_SIZES = [n for n in capacity.TP_CHOICES if n > 1]   # the tensor-parallel groups the plan compares

# (name, label, value, basis): the engine's constants, each with its home in the code
CONSTANTS = [
    ("SrvK_GiB", "Bytes per GiB", GIB, "udfs.units.GIB"),
    ("SrvK_TB", "Bytes/s per TB/s", TB, "udfs.units.TB"),
    ("SrvK_Tera", "FLOP/s per TFLOPS", TERA, "udfs.units.TERA"),
    ("SrvK_AttnFrac", "Share of the 16-bit peak prefill attention reaches", cal.ATTENTION_FRACTION,
     "udfs.physics.calibration.ATTENTION_FRACTION"),
    ("SrvK_MoeFloorUs", "Least time of one grouped expert GEMM (us)", cal.MOE_GEMM_FLOOR_US,
     "udfs.physics.calibration.MOE_GEMM_FLOOR_US"),
    ("SrvK_MoeLayerUs", "Fixed time of a MoE layer of a decode step (us)", cal.MOE_LAYER_US,
     "udfs.physics.calibration.MOE_LAYER_US"),
    ("SrvK_MoeRoutingPasses", "Activation passes of routing per token and expert", cal.MOE_ROUTING_PASSES,
     "udfs.physics.calibration.MOE_ROUTING_PASSES"),
    ("SrvK_EagerUs", "Added time per layer of a step run without CUDA graphs (us)", cal.EAGER_LAYER_US,
     "udfs.physics.calibration.EAGER_LAYER_US"),
    ("SrvK_SamplerBytes", "Bytes a row x vocabulary entry holds at vLLM's profile-run sampler peak",
     cal.SAMPLER_PEAK_BYTES, "udfs.physics.calibration.SAMPLER_PEAK_BYTES"),
    ("SrvK_SamplerBytesFI", "... where FlashInfer's sampler runs (the engine's FlashInfer sampler: 1)",
     cal.SAMPLER_PEAK_BYTES_FLASHINFER, "udfs.physics.calibration.SAMPLER_PEAK_BYTES_FLASHINFER"),
    ("SrvK_SamplerBytesInPlace", "... where the sampler works in place (vLLM 0.17.0 on; the engine's sampler sorts: 0)",
     cal.SAMPLER_PEAK_BYTES_IN_PLACE, "udfs.physics.calibration.SAMPLER_PEAK_BYTES_IN_PLACE"),
]

# (column name, header, value(model), number format): a catalog model's serving shape
SHAPE_COLUMNS = [
    ("params", "Parameters (weights in memory)", lambda m: m.total_params, st.PARAMS),
    ("lookup", "Input-embedding parameters read as a lookup", arch.lookup_params, st.PARAMS),
    ("matmul", "Parameters in products per token", arch.matmul_params, st.PARAMS),
    ("dense", "... of which outside routed experts", capacity._dense_matmul_params, st.PARAMS),
    ("dense_stream", "Parameters read per step outside experts", lambda m: serving.streamed_params(m, 0), st.PARAMS),
    ("quant_format", "The checkpoint's own format (blank: none)", lambda m: m.quant_format or None, None),
    ("kept", "Parameters it keeps at 16 bits in that format", lambda m: m.kept_params, st.PARAMS),
    ("kept_stream", "... of which read per step", lambda m: arch.kept_streamed(m, m.quant_format)
     if m.quant_format else 0, st.PARAMS),
    ("per_expert", "Parameters per routed expert", lambda m: moe.routed(m)[0], st.PARAMS),
    ("experts", "Routed experts", lambda m: moe.routed(m)[1], "0"),
    ("top_k", "Experts per token", lambda m: moe.routed(m)[2], "0"),
    ("moe_layers", "MoE layers", lambda m: m.moe_layer_count, "0"),
    ("expert_ffn", "Width of one routed expert (its FFN; a MoE kernel pads it per GPU)",
     lambda m: m.dim("ffn") if m.is_moe else 0, "#,##0"),
    ("gemm_share", "Share of an expert in its first GEMM (gate+up 2/3, or up 1/2)",
     lambda m: moe.gemm_shares(m)[0], "0.000"),
    ("layers", "Layers", lambda m: m.layers, "0"),
    ("mlp_values", "Values a token holds in the MLP block at its peak beside 2 x hidden: 3 (ungated 2) x FFN width",
     lambda m: (3 if m.gated_mlp else 2) * capacity.ffn_width(m), "#,##0"),
    ("vocab", "Vocabulary (rows of logits)", lambda m: m.dim("vocab"), "#,##0"),
    ("hidden", "Hidden size", lambda m: m.hidden, "#,##0"),
    ("heads", "Attention heads", lambda m: m.heads, "0"),
    ("head_dim", "Head size", lambda m: m.head_size, "0"),
    ("attn_width", "Key + value width a head multiplies per cached token in decode (2 x head size; MLA's latent: 576 + 512)",
     decode_attention_width, "#,##0"),
    ("prefill_width", "Key + value width a head multiplies per earlier position in prefill (2 x head size; MLA: "
     "192 + 128)", prefill_attention_width, "#,##0"),
    ("kv_values", "KV values per token per layer", lambda m: kv_bytes_per_layer_token(m, "fp16")
     / catalog.as_precision("fp16").bytes_per_param, "#,##0"),
    ("kv_heads", "KV heads (GPUs beyond them replicate KV)", lambda m: m.kv_head_count, "0"),
    ("mla", "Latent KV (MLA): 1", lambda m: 1 if m.kv_lora_rank else 0, "0"),
    ("global_layers", "Layers caching the whole context", lambda m: shape.kv_layers(m)[0], "0"),
    ("local_layers", "Layers caching a window", lambda m: shape.kv_layers(m)[1], "0"),
    ("window", "Window (tokens)", lambda m: shape.kv_layers(m)[2] or 0, "#,##0"),
]

ENGINE_COLUMNS = [  # engine profile fields the calculation reads
    ("multi_gpu", "Several GPUs", None), ("moe_parallel", "MoE layers over a group", None),
    ("memory_rule", "Memory rule", None),
    ("memory_fraction", "Memory share", "0.00"), ("activation_reserve_gib", "Reserve (GiB)", "0.0"),
    ("kv_reservation", "KV per request", None), ("quantized_factor", "Weight-only quantised bandwidth factor", "0.00"),
    ("layer_overhead_us", "Fixed time per layer (us)", "0.0"), ("step_overhead_us", "Fixed time per step (us)", "0.0"),
    ("sequence_overhead_us", "CPU time per running sequence per step (us; blank: overlapped)", "0.0"),
    ("graph_max_batch", "CUDA graphs up to (sequences; blank: not modelled)", "#,##0"),
    ("flashinfer_sampler", "FlashInfer sampler (1: yes)", "0"),
    ("sampler_sorts", "Start-up sampler sorts (1: yes)", "0"),
    ("matmul_fraction_16", "16-bit product share of peak", "0.00"),
    ("matmul_fraction_8", "8-bit product share of peak", "0.00"),
    ("matmul_fraction_4", "4-bit product share of peak", "0.00"),
]
MATMUL_BITS = (16, 8, 4)        # the order of the matmul_fraction columns above


def _header(ws, row: int, headers: list[str]):
    for i, h in enumerate(headers, start=1):
        ws.cell(row=row, column=i, value=h).alignment = st.WRAP
    st.style_header_row(ws, row, 1, len(headers))


def _fill(ws, row: int, values: list, fmts: list | None = None):
    for i, v in enumerate(values, start=1):
        cell = ws.cell(row=row, column=i)
        if isinstance(v, str):
            write_text(cell, v)
        else:
            cell.value = v
        if fmts and fmts[i - 1]:
            cell.number_format = fmts[i - 1]


def _name_column(book: Book, sheet: str, name: str, column: int, first: int, last: int):
    book.define(name, f"'{sheet}'!${col(column)}${first}:${col(column)}${last}")


def _cell_value(value):
    """A profile field as a cell holds it: a flag as 1 or 0 (Excel's TRUE is not = 1), anything else as it is."""
    return int(value) if isinstance(value, bool) else value


def _figure(value):
    """A shape figure as a number; a name (the checkpoint's format) or blank as it is."""
    return value if value is None or isinstance(value, str) else float(value)


def shapes_sheet(book: Book):
    """One row per catalog model: the shape figures the serving model reads."""
    ws = book.wb.create_sheet(SHAPES)
    ws["A1"] = ("Serving shape of each catalog model (written from Flopsheet's engine: capacity, serving, shape "
                "and arch modules; a model without a layout borrows one as the engine does)")
    ws["A1"].font = st.SECTION_FONT
    _header(ws, 2, ["Model"] + [h for _, h, _, _ in SHAPE_COLUMNS] + ["Layout", "As of"])
    models = [resolve.model(m) for m in catalog.models()]
    for r, m in enumerate(models, start=3):
        _fill(ws, r, [m.name] + [_figure(fn(m)) for _, _, fn, _ in SHAPE_COLUMNS] + [m.layout_from or "own", m.as_of],
              [None] + [f for *_, f in SHAPE_COLUMNS] + [None, None])
    last = 2 + len(models)
    _name_column(book, SHAPES, "ShapeNames", 1, 3, last)
    for i, (key, *_rest) in enumerate(SHAPE_COLUMNS, start=2):
        _name_column(book, SHAPES, f"Shape_{key}", i, 3, last)
    st.set_widths(ws, {"A": 20, **{col(i): 6.5 for i in range(2, len(SHAPE_COLUMNS) + 2)},
                       col(len(SHAPE_COLUMNS) + 2): 9, col(len(SHAPE_COLUMNS) + 3): 10})
    ws.row_dimensions[2].height = 90
    ws.freeze_panes = "B3"
    ws.print_title_rows = "1:2"
    return ws


def engines_sheet(book: Book):
    ws = book.wb.create_sheet(ENGINES)
    ws["A1"] = "Inference engine profiles (udfs/data/engines.csv: each row's source and basis are on the right)"
    ws["A1"].font = st.SECTION_FONT
    _header(ws, 2, ["Engine"] + [h for _, h, _ in ENGINE_COLUMNS] + ["Source"])
    rows = engines.engines()
    for r, e in enumerate(rows, start=3):
        _fill(ws, r, [e.name] + [_cell_value(getattr(e, a)) for a, _, _ in ENGINE_COLUMNS] + [e.source],
              [None] + [f for *_, f in ENGINE_COLUMNS] + [None])
        ws.cell(row=r, column=len(ENGINE_COLUMNS) + 2).alignment = st.WRAP
    last = 2 + len(rows)
    _name_column(book, ENGINES, "EngineNames", 1, 3, last)
    for i, (attr, *_rest) in enumerate(ENGINE_COLUMNS, start=2):
        _name_column(book, ENGINES, f"Eng_{attr}", i, 3, last)
    first_mm = 2 + [a for a, *_ in ENGINE_COLUMNS].index("matmul_fraction_16")
    book.define("Eng_matmul", f"'{ENGINES}'!${col(first_mm)}$3:${col(first_mm + 2)}${last}")
    # the bits each matmul column is for, as numbers (a header row holds text)
    bits_row = last + 2
    ws.cell(row=bits_row, column=1, value="Bits of the columns above")
    for i, bits in enumerate(MATMUL_BITS):
        ws.cell(row=bits_row, column=first_mm + i, value=bits)
    book.define("Eng_matmul_bits", f"'{ENGINES}'!${col(first_mm)}${bits_row}:${col(first_mm + 2)}${bits_row}")
    # 7.5 a value column: the profiles' 30-odd columns print on one page wide at 8 pt (tests/test_finance_reader.py)
    st.set_widths(ws, {"A": 16, **{col(i): 7.5 for i in range(2, len(ENGINE_COLUMNS) + 2)},
                       col(len(ENGINE_COLUMNS) + 2): 20})
    ws.row_dimensions[2].height = 75
    ws.freeze_panes = "B3"
    ws.print_title_rows = "1:2"
    return ws


def _block(book: Book, ws, row: int, title: str, headers: list[str], rows: list[list], names: dict[int, str],
           fmts: list | None = None, widths_ok: bool = True) -> int:
    """A titled table at `row`; `names` {column: defined name} for its data columns. Returns the next free row."""
    ws.cell(row=row, column=1, value=title).font = st.SECTION_FONT
    _header(ws, row + 1, headers)
    for r, values in enumerate(rows, start=row + 2):
        _fill(ws, r, values, fmts)
    first, last = row + 2, row + 1 + len(rows)
    for column, name in names.items():
        _name_column(book, ws.title, name, column, first, last)
    return last + 2


def figures_sheet(book: Book):
    """Constants, per-GPU link and default engine, (engine, GPU) and (engine, format) figures,
    per-format figures, and the layouts a bare parameter count borrows."""
    ws = book.wb.create_sheet(SHEET)
    st.heading(ws, "Figures the serving calculation looks up (written from Flopsheet's engine)",
               "Nothing here is typed by hand: each table is written from the engine when the workbook is made.")
    ws.cell(row=4, column=1, value="Constants").font = st.SECTION_FONT
    _header(ws, 5, ["Constant", "Value", "Home in the code"])
    for r, (name, label, value, basis) in enumerate(CONSTANTS, start=6):
        _fill(ws, r, [label, value, basis], [None, "#,##0.##", None])
        book.define(name, f"'{SHEET}'!$B${r}")
    row = 6 + len(CONSTANTS) + 1
    gpus = catalog.gpus()
    row = _block(book, ws, row, "GPUs: default engine and GPU-to-GPU link",
                 ["GPU", "Default engine", "Link class (blank: unknown)", "Link GB/s (both directions)",
                  "16-bit tensor TFLOPS (attention; blank: unknown)", "Pipeline hand-off (s)"],
                 [[g.name, engines.default_engine_name(g), _link(g), g.interconnect_gbs, _peak(g, None)[0],
                   _hand_off(g)] for g in gpus],
                 {1: "SrvGpuNames", 2: "SrvGpu_engine", 3: "SrvGpu_link", 4: "SrvGpu_link_gbs", 5: "SrvGpu_peak16",
                  6: "SrvGpu_hop_s"}, [None, None, None, "#,##0", "#,##0.0", "0.000000"])
    row = _block(book, ws, row, "GPUs of a tensor-parallel group: one all-reduce as the engines run it, the ring's "
                 "latency and the bus bandwidth it reaches, and where the link has one (NVLink) the one-shot kernel's "
                 "latency and the one-way rate each GPU reads its peers at; the faster wins at a size "
                 "(collectives.engine_all_reduce_s; blank: the link rate is unknown, or no one-shot kernel)",
                 ["GPU | GPUs", "All-reduce latency (s)", "Bus bandwidth (bytes/s)", "One-shot latency (s)",
                  "One-shot rate (bytes/s)"],
                 [[g.name + SEP + str(n), *_all_reduce(g, n)] for g in gpus for n in GROUP_SIZES],
                 {1: "GN_keys", 2: "GN_latency_s", 3: "GN_bus", 4: "GN_one_latency_s", 5: "GN_one_rate"},
                 [None, "0.000000", "#,##0", "0.000000", "#,##0"])
    pairs = [(e, g) for e in engines.engines() for g in gpus]
    row = _block(book, ws, row, "Engine on a GPU: achieved share of memory bandwidth, batch limit, the profile run "
                 "kept out of the KV cache (vLLM's token budget on that GPU), CUDA graphs captured up to",
                 ["Engine | GPU", "Bandwidth share", "Batch cap (blank: none)", "Profile run (tokens; 0: none)",
                  "CUDA graphs up to (sequences; blank: not modelled)"],
                 [[e.name + SEP + g.name, e.bandwidth_fraction(g), e.batch_cap(g), e.profile_tokens(g), e.graph_cap(g)]
                  for e, g in pairs],
                 {1: "EG_keys", 2: "EG_bandwidth", 3: "EG_cap", 4: "EG_profile", 5: "EG_graph"},
                 [None, "0.00", "#,##0", "#,##0", "#,##0"])
    precisions = catalog.precisions()
    row = _block(book, ws, row, "A number format on a GPU: the tensor rate its products get, the units' width, "
                 "weights dequantised to 16-bit (1: yes); blank: the catalog has no figure or the GPU no units",
                 ["GPU | format", "Products TFLOPS (dense)", "Units (bits)", "Weight-only (1: yes)"],
                 [[g.name + SEP + p.name, *_peak(g, p), 1 if g.weight_only(p) else 0]
                  for g in gpus for p in precisions],
                 {1: "GP_keys", 2: "GP_tflops", 3: "GP_bits", 4: "GP_weight_only"}, [None, "#,##0.0", "0", "0"])
    row = _block(book, ws, row, "Engine and weight format: the KV-cache format the engine uses",
                 ["Engine | format", "KV-cache format"],
                 [[e.name + SEP + p.name, e.kv_format(p)] for e in engines.engines() for p in precisions],
                 {1: "EP_keys", 2: "EP_kv"})
    row = _block(book, ws, row, "Engine, GPU and weight format: the kernel the engine's release runs a MoE layer's "
                 "experts with and the widths it pads them to (Engine.moe_kernel, udfs/data/moe_kernels.csv; "
                 f"capacity.kernel_padding_gib). '{KERNEL_NOT_READ}': the table reads this engine and format but not "
                 "this release on this GPU, and the engine answers #N/A; a pair not listed: no padding",
                 ["Engine | GPU | format", "Kernel", "Hidden size to a multiple of", "Expert width per GPU to a "
                  "multiple of", "Bits a value held twice"],
                 _kernel_rows(gpus, precisions),
                 {1: "MK_keys", 2: "MK_kernel", 3: "MK_hidden", 4: "MK_shard", 5: "MK_copied_bits"},
                 [None, None, "#,##0", "#,##0", "0.00"])
    row = _block(book, ws, row, "Engine choices (the plan's drop-down)", ["Engine"],
                 [[name] for name in engine_choices()], {1: "ListEngines"})
    lenders = _lenders()
    row = _block(book, ws, row, "A bare parameter count borrows the layout of the dense catalog model nearest in size "
                 "(by ratio): counts from the first column up take the model beside them",
                 ["From (parameters)", "Layout of"], lenders, {1: "SrvLenderFrom", 2: "SrvLenderNames"},
                 ["#,##0", None])
    st.set_widths(ws, {"A": 46, "B": 22, "C": 30, "D": 16, "E": 16})
    ws.freeze_panes = "A4"
    return ws


def _kernel_rows(gpus, precisions) -> list[list]:
    """(key, kernel, hidden multiple, shard multiple, copied bits) for every engine, GPU and format the MoE kernel
    table reads (Engine.moe_kernel: a kernel, or #N/A where it reads the engine and format but not this release on
    this GPU: KERNEL_NOT_READ); pairs it does not read (no padding) are left out."""
    rows = []
    for e in engines.engines():
        for g in gpus:
            for p in precisions:
                try:
                    k = e.moe_kernel(g, p)
                except FlopsheetError:
                    rows.append([SEP.join((e.name, g.name, p.name)), KERNEL_NOT_READ, None, None, None])
                    continue
                if k is not None:
                    rows.append([SEP.join((e.name, g.name, p.name)), k.kernel, k.hidden_multiple, k.shard_multiple,
                                 k.copied_bits])
    return rows


def _peak(g, precision) -> tuple[float | None, int | None]:
    """(TFLOPS, unit bits) a format's products get on the GPU (None: attention, on the 16-bit
    units), as the engine takes them (serving.peak_flops); blanks where the engine refuses."""
    try:
        flops, bits = serving.peak_flops(g, precision, "the serving calculation")
    except FlopsheetError:
        return None, None
    return flops / TERA, bits


def _link(g) -> str | None:
    """The link class a pair of the GPUs talks over; blank where the link rate is unknown."""
    try:
        return capacity._link(g, 2).kind
    except FlopsheetError:
        return None


def _hand_off(g) -> float | None:
    """Seconds of one hand-off between neighbouring GPUs (a layer pipeline); blank where unknown."""
    try:
        return collectives.send_recv_s(capacity._link(g, 2), 0)
    except FlopsheetError:
        return None


def _all_reduce(g, n: int) -> tuple[float | None, ...]:
    """(ring latency, bus bytes/s, one-shot latency, one-shot bytes/s) of an all-reduce over n GPUs as the engines
    run it (collectives.engine_all_reduce_lines): the ring is latency + 2(n-1)/n x bytes / bus, the one-shot kernel
    latency + (n-1) x bytes / rate; the one-shot pair blank where the link has none."""
    try:
        link = capacity._link(g, n)
    except FlopsheetError:
        return None, None, None, None
    (ring_s, _), one = collectives.engine_all_reduce_lines(link, n)
    return ring_s, link.bus_bytes_per_s, *((one[0], (n - 1) / one[1]) if one else (None, None))


def _lenders() -> list[list]:
    """The models resolve.lender lends a layout from, in size order, each from the geometric
    midpoint with the one below (the rule is nearest by ratio). Each lender lends to its own
    size, so asking the rule for every catalog size finds them all."""
    seen = {}
    for m in catalog.models():
        if m.total_params:
            found = resolve.lender(m.total_params)
            seen[found.total_params] = found.name
    sizes = sorted(seen)
    rows = [[0.0, seen[sizes[0]]]]
    for lo, hi in pairwise(sizes):
        rows.append([math.sqrt(lo * hi), seen[hi]])
    return rows


def write(book: Book):
    figures_sheet(book)
    engines_sheet(book)
    shapes_sheet(book)


def engine_choices() -> list[str]:
    return [DEFAULT_ENGINE] + engines.engine_names()
