"""GPU comparison: the catalog with derived metrics (bandwidth and TFLOPS per $1k, 7B FP16
decode tokens/s, GPUs needed to hold chosen models), sortable, with charts and sources."""

from __future__ import annotations

from openpyxl.chart import Reference

from udfs.catalogs import catalog

from . import styles as st
from .common import Book, C, Lit, write_value

KEY = "gpu_comparison"
FILENAME = "gpu_comparison.xlsx"
TITLE = "GPU comparison"

ALT_INPUTS = {"GC_ModelA": "Mistral 7B", "GC_ModelB": "Mixtral 8x7B", "GC_Precision": "int4", "GC_Headroom": 2,
              "GC_Batch": 4, "GC_Efficiency": 0.8}


def card(g) -> float | None:
    """The card price this workbook compares GPUs on (catalog.gpu_price, as GPU_COMPARE's default)."""
    return catalog.gpu_price(g, "card")


def _attr(name, attr):
    from .catalog_sheets import gpu_value
    v = gpu_value(catalog.gpu(name), attr)
    return "n/a" if v is None else v


def build(path, inputs: dict | None = None) -> Book:
    from udfs.api.functions import common as cm
    book = Book(KEY, TITLE,
                "Compare every GPU in the catalog: memory, bandwidth, dense BF16 TFLOPS and price, with derived "
                "metrics (bandwidth and TFLOPS per $1,000, decode speed of a 7B FP16 model, GPUs needed to hold "
                "two models you choose). Every figure's source and date is on the Sources sheet.",
                ["Choose two models, a precision and the memory kept free per GPU; the table shows how many of "
                 "each GPU hold each model (the lesson's inference estimate).",
                 "Sort or filter the table with the header arrows (sorting is allowed on the protected sheet).",
                 "The charts show decode speed and bandwidth per dollar."],
                ["Memory in GB of GPU memory (2^30 bytes); bandwidth in TB/s; TFLOPS dense (no sparsity).",
                 "Prices: purchase price per GPU in US dollars where the catalog has a sourced one ('n/a' "
                 "otherwise)."],
                inputs=inputs)
    ws = book.sheet("Comparison", "GPU comparison",
                    "7B FP16 tokens/s: the lesson's bandwidth-bound decode estimate for a 7e9-parameter model in "
                    "FP16 (14 GB) at the batch and efficiency below.")
    book.section(ws, 3, "Inputs")
    ma = book.input(ws, 4, "Model A", "GC_ModelA", "Llama 2 7B", choices="CatModelNames")
    mb = book.input(ws, 5, "Model B", "GC_ModelB", "Llama 2 70B", choices="CatModelNames")
    prec = book.input(ws, 6, "Precision", "GC_Precision", "fp16", choices="CatPrecisionNames")
    head = book.input(ws, 7, "Memory kept free per GPU", "GC_Headroom", 5, fmt=st.GB, unit="GB",
                      help="GB left free on each GPU (the lesson: 5 of 80).")
    batch = book.input(ws, 8, "Batch size (7B speed)", "GC_Batch", 1, fmt="#,##0", arg=cm.BATCH)
    eff = book.input(ws, 9, "Bandwidth efficiency", "GC_Efficiency", cm.EFFICIENCY.default, fmt=st.FRACTION,
                     arg=cm.EFFICIENCY)
    ws["D4"], ws["D5"], ws["D6"] = "Memory to serve A", "Memory to serve B", "7B FP16 model size"
    pa = book.params(ws, "F4", ma, label="Parameters A")
    pb = book.params(ws, "F5", mb, label="Parameters B")
    mem_a = book.calc(ws, "E4", "GPU_MEMORY", {"model_or_params": pa, "precision": prec, "optimizer": Lit("none")},
                      fmt=st.GB, label="Memory to serve model A")
    mem_b = book.calc(ws, "E5", "GPU_MEMORY", {"model_or_params": pb, "precision": prec, "optimizer": Lit("none")},
                      fmt=st.GB, label="Memory to serve model B")
    size7 = book.calc(ws, "E6", "MODEL_SIZE_GB", {"model_or_params": Lit(7e9), "precision": Lit("fp16")}, fmt='0.0" GB"',
                      label="7B FP16 model size")
    ws["G4"], ws["G5"] = "parameters", "parameters"
    ws["F4"].number_format = ws["F5"].number_format = st.PARAMS

    header = ["GPU", "Vendor", "Memory (GB)", "Bandwidth (TB/s)", "BF16 TFLOPS (dense)", "Card price ($)",
              "Bandwidth per $1k (GB/s)", "BF16 TFLOPS per $1k", "7B FP16 tokens/s", "GPUs to hold model A",
              "GPUs to hold model B", "TDP (W)"]
    top = 12
    book.section(ws, top - 1, "All catalog GPUs (sortable)", header=header)
    gpus = sorted(catalog.gpus(), key=lambda g: not card(g))     # GPUs with a price first (for the chart)
    priced = sum(1 for g in gpus if card(g))
    for i, g in enumerate(gpus):
        r = top + 1 + i
        write_value(ws.cell(row=r, column=1), g.name)
        write_value(ws.cell(row=r, column=2), g.vendor)
        name = C(ws.title, f"A{r}", name=True)

        def look(col, attr, fmt, r=r, name=g.name):
            book.glue(ws, f"{col}{r}", f'IF(INDEX(CatGpu_{attr},MATCH(A{r},CatGpuNames,0))="","n/a",'
                      f'INDEX(CatGpu_{attr},MATCH(A{r},CatGpuNames,0)))', lambda get: _attr(name, attr), fmt=fmt,
                      label=f"{name} {attr}")
        look("C", "memory_gb", st.GB)
        look("D", "bandwidth_tbs", "0.000")
        look("E", "bf16_tflops", "#,##0.0")
        look("F", "price_usd", st.USD0)
        look("L", "tdp_w", "#,##0")

        def per_k(col, num, r=r, name=g.name, scale=1.0, label=""):
            def value(get, name=name, num=num, scale=scale):
                g2 = catalog.gpu(name)
                v = getattr(g2, num)
                return "n/a" if (v is None or not card(g2)) else v * scale / card(g2) * 1000
            src = "D" if num == "bandwidth_tbs" else "E"
            factor = "*1000" if scale != 1.0 else ""
            book.glue(ws, f"{col}{r}", f'IF(OR({src}{r}="n/a",F{r}="n/a"),"n/a",{src}{r}{factor}/F{r}*1000)',
                      value, fmt="#,##0.00", label=f"{name} {label}")
        per_k("G", "bandwidth_tbs", scale=1000.0, label="bandwidth per $1k")
        per_k("H", "bf16_tflops", label="TFLOPS per $1k")
        book.calc(ws, f"I{r}", "GPU_TOKENS_PER_SEC", {"gpu_or_bandwidth": name, "model_size_gb": size7,
                                                      "batch": batch, "efficiency": eff},
                  fmt=st.TOK_S, label=f"7B tokens/s on {g.name}", addin=i < 3)
        book.calc(ws, f"J{r}", "GPUS_NEEDED", {"memory_gb": mem_a, "gpu_or_capacity": name, "headroom_gb": head},
                  fmt="#,##0", label=f"GPUs for A on {g.name}", addin=i < 3,
                  unless=f"INDEX(CatGpu_memory_gib,MATCH(A{r},CatGpuNames,0))<={head.coord}")
        book.calc(ws, f"K{r}", "GPUS_NEEDED", {"memory_gb": mem_b, "gpu_or_capacity": name, "headroom_gb": head},
                  fmt="#,##0", label=f"GPUs for B on {g.name}", addin=i < 3,
                  unless=f"INDEX(CatGpu_memory_gib,MATCH(A{r},CatGpuNames,0))<={head.coord}")
    last = top + len(gpus)
    ws.auto_filter.ref = f"A{top}:L{last}"
    ws.freeze_panes = f"B{top + 1}"
    ws.row_dimensions[top].height = 45
    st.set_widths(ws, {"A": 28, "B": 9, "C": 12, "D": 16, "E": 12, "F": 12, "G": 12, "H": 12, "I": 13, "J": 11,
                       "K": 11, "L": 9})        # one page wide at >= 8 pt
    ws.print_title_rows = f"{top}:{top}"

    # charts below the table (the sheet prints one page wide), tall enough to label every GPU
    row = last + 2
    for title, col, count in (("7B FP16 decode tokens/s per GPU (bandwidth-bound)", 9, len(gpus)),
                              ("Bandwidth per $1,000 (GB/s), GPUs with a price", 7, priced)):
        height = st.bar_chart_height(count)
        names = Reference(ws, min_col=1, min_row=top + 1, max_row=top + count)
        book.chart(ws, st.bar_chart(title, Reference(ws, min_col=col, min_row=top, max_row=top + count), names,
                                    height=height, width=24), f"A{row}")
        row += int(height * 28.35 / 15) + 2
    return book.finish(path)
