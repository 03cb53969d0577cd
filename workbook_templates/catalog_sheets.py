"""Catalog sheets filled from Flopsheet's catalogs (GPUs, cloud prices, models, number
formats), the Lists sheet behind the drop-downs, and the Sources sheet. Every row keeps
its source and as_of date; named ranges (CatGpuNames, CatGpu_bandwidth_tbs, ...) are what
the native formulas look figures up in."""

from __future__ import annotations

from udfs.catalogs import catalog
from udfs.physics.lesson import OPTIMIZERS
from udfs.planning import picker

from . import styles as st
from .common import Book, col, write_text

FIRST = 3          # first data row (row 1: title, row 2: column headers)
# wide reference tables: printed as their leading columns (the figures), the rest on screen
PARTIAL_PRINT = ("GPUs", "Cloud prices", "Models", "Precisions", "Model shapes")   # + the serving shapes (serving_figures)

GPU_COLUMNS = [  # (attribute, header, number format); the figures first: they are what prints
    ("name", "GPU", None), ("memory_gb", "Memory (GB, nameplate)", st.GB),
    ("memory_gib", "Usable memory (GiB: what CUDA reports; nameplate where unmeasured)", st.GB),
    ("bandwidth_tbs", "Bandwidth (TB/s)", "0.000"), ("fp32_tflops", "FP32 TFLOPS", "#,##0.0"),
    ("tf32_tflops", "TF32 TFLOPS (dense)", "#,##0.0"), ("bf16_tflops", "BF16 TFLOPS (dense)", "#,##0.0"),
    ("fp16_tflops", "FP16 TFLOPS (dense)", "#,##0.0"), ("fp8_tflops", "FP8 TFLOPS (dense)", "#,##0.0"),
    ("int8_tops", "INT8 TOPS (dense)", "#,##0.0"), ("fp4_tflops", "FP4 TFLOPS (dense)", "#,##0.0"),
    ("tdp_w", "TDP (W)", "#,##0"), ("price_usd", "Card price ($)", st.USD0),
    ("system_price_usd", "All-in price per GPU in a server ($)", st.USD0),
    ("od_usd_per_gpu_hour", "Cheapest on-demand $/GPU-hour (current)", st.USD),
    ("spot_usd_per_gpu_hour", "Cheapest spot $/GPU-hour (current, below on-demand)", st.USD),
    ("owned_usd_per_gpu_hour", "Owned $/GPU-hour (all-in price, data-centre model, 70% use)", st.USD),
    ("vendor", "Vendor", None), ("form_factor", "Form factor", None), ("tier", "Tier", None),
    ("memory_type", "Memory type", None), ("launch_year", "Launch year", "0"), ("price_as_of", "Price as of", None),
]
GPU_TAIL = [("source", "Source", None), ("as_of", "As of", None), ("price_source", "Price source", None),
            ("usable_source", "Usable memory source", None),
            ("note", "Note", None)]
TENSOR_PRECISIONS = [p.name for p in catalog.precisions()]


def cheapest(gpu_name: str, pricing: str) -> float | None:
    """The GPU's cheapest current price for a pricing; a discount (spot, reserved) only where it
    undercuts the cheapest on-demand price: a spot offer dearer than another provider's on-demand
    is no saving, and a finance reader would read spot > on-demand as a contradiction."""
    row = catalog.cheapest_cloud_price(gpu_name, pricing)
    if row is None:
        return None
    on_demand = catalog.cheapest_cloud_price(gpu_name, "on-demand")
    if pricing != "on-demand" and on_demand is not None and row.usd_per_gpu_hour >= on_demand.usd_per_gpu_hour:
        return None
    return row.usd_per_gpu_hour


def owned_rate(gpu_name: str) -> float | None:
    """$ per used GPU-hour of owning the GPU: the report's and the picker's rate (picker.owned_rate: the
    all-in system price in the data-centre model at its defaults); None without a price."""
    rate = picker.owned_rate(catalog.gpu(gpu_name))
    return rate[0] if rate else None


def gpu_value(g, attr):
    if attr == "owned_usd_per_gpu_hour":
        return owned_rate(g.name)
    if attr == "od_usd_per_gpu_hour":
        return cheapest(g.name, "on-demand")
    if attr == "spot_usd_per_gpu_hour":
        return cheapest(g.name, "spot")
    basis = {field: b for b, field in catalog.PRICE_FIELDS.items()}.get(attr)
    return catalog.gpu_price(g, basis) if basis else getattr(g, attr)


def _table(book: Book, title: str, heading: str, columns, rows, value, prefix: str, names: dict[str, str]):
    """Write a catalog table and define `prefix_<attr>` ranges for the columns in `names`."""
    ws = book.wb.create_sheet(title)
    ws["A1"] = heading
    ws["A1"].font = st.SECTION_FONT
    for i, (_, header, _) in enumerate(columns, start=1):
        ws.cell(row=2, column=i, value=header)
    st.style_header_row(ws, 2, 1, len(columns))
    for r, row in enumerate(rows, start=FIRST):
        for i, (attr, _, fmt) in enumerate(columns, start=1):
            v = value(row, attr)
            cell = ws.cell(row=r, column=i)
            if isinstance(v, str):
                write_text(cell, v)
            elif isinstance(v, tuple):
                write_text(cell, "; ".join(v))
            else:
                cell.value = v
            if fmt:
                cell.number_format = fmt
    last = FIRST + len(rows) - 1
    for i, (attr, _, _) in enumerate(columns, start=1):
        if attr in names:
            book.define(names[attr], f"{_q(title)}!${col(i)}${FIRST}:${col(i)}${last}")
    ws.freeze_panes = f"B{FIRST}"
    ws.auto_filter.ref = f"A2:{col(len(columns))}{last}"
    ws.print_title_rows = "1:2"
    for i, (attr, _, _) in enumerate(columns, start=1):
        ws.column_dimensions[col(i)].width = 22 if i == 1 else (60 if attr in ("source", "note", "price_source")
                                                                else 10)
    ws.row_dimensions[2].height = 75
    return ws, last


def _q(title: str) -> str:
    return "'" + title.replace("'", "''") + "'"


def gpu_sheet(book: Book):
    gpus = catalog.gpus()
    tensor_cols = [(f"tensor:{p}", p, "#,##0.0") for p in TENSOR_PRECISIONS]
    columns = GPU_COLUMNS + tensor_cols + GPU_TAIL
    numeric = {a: f"CatGpu_{a}" for a, _, f in GPU_COLUMNS if a not in ("vendor", "form_factor", "tier",
                                                                       "memory_type", "price_as_of")}
    numeric["name"] = "CatGpuNames"

    def value(g, attr):
        if attr.startswith("tensor:"):
            return g.tensor_tflops(attr.split(":", 1)[1])
        return gpu_value(g, attr)

    ws, last = _table(book, "GPUs", "GPU catalog (dense tensor figures; the last block: dense tensor TFLOPS by "
                      "number format, as Flopsheet's engine picks them)", columns, gpus, value, "CatGpu", numeric)
    start = len(GPU_COLUMNS) + 1
    end = start + len(tensor_cols) - 1
    book.define("CatGpuTensor", f"'GPUs'!${col(start)}${FIRST}:${col(end)}${last}")
    book.define("CatTensorPrecisions", f"'GPUs'!${col(start)}$2:${col(end)}$2")
    return ws


def cloud_sheet(book: Book):
    columns = [("provider", "Provider", None), ("instance", "Instance", None), ("gpu", "GPU", None),
               ("gpu_count", "GPUs", "0"), ("region", "Region", None), ("pricing", "Pricing", None),
               ("usd_per_hour", "$/hour", st.USD), ("usd_per_gpu_hour", "$/GPU-hour", st.USD),
               ("price_date", "Price date", None), ("status", "Status", None), ("source", "Source", None),
               ("as_of", "As of", None), ("note", "Note", None)]
    names = {"instance": "CatCloudInstances", "gpu": "CatCloud_gpu", "usd_per_hour": "CatCloud_usd_per_hour",
             "usd_per_gpu_hour": "CatCloud_usd_per_gpu_hour", "pricing": "CatCloud_pricing",
             "status": "CatCloud_status"}
    ws, _ = _table(book, "Cloud prices", "Cloud GPU prices (status: current = newest sourced; lesson = the "
                   "lesson's figures; historical = superseded)", columns, catalog.cloud_prices(),
                   lambda p, a: getattr(p, a), "CatCloud", names)
    ws.column_dimensions["A"].width = 14
    ws.column_dimensions["B"].width = 22
    ws.column_dimensions["C"].width = 22
    return ws


def model_sheet(book: Book):
    columns = [("name", "Model", None), ("family", "Family", None), ("params", "Parameters", st.PARAMS),
               ("active_params", "Active parameters (MoE) or parameters", st.PARAMS), ("layers", "Layers", "0"),
               ("hidden", "Hidden size", "#,##0"), ("heads", "Heads", "0"), ("kv_heads", "KV heads", "0"),
               ("context_length", "Context length", "#,##0"), ("source", "Source", None), ("as_of", "As of", None),
               ("note", "Note", None)]

    def value(m, attr):
        return m.active if attr == "active_params" else getattr(m, attr)
    return _table(book, "Models", "Model catalog (parameter counts from each model's configuration)", columns,
                  catalog.models(), value, "CatModel",
                  {"name": "CatModelNames", "params": "CatModel_params", "active_params": "CatModel_active_params"})[0]


def precision_sheet(book: Book):
    columns = [("name", "Format", None), ("bits_per_param", "Bits per parameter", "0.000"),
               ("bytes_per_param", "Bytes per parameter", "0.00000"), ("kind", "Kind", None),
               ("tensor_column", "Tensor figure used", None), ("source", "Source", None), ("as_of", "As of", None),
               ("note", "Note", None)]

    def value(p, attr):
        return p.bytes_per_param if attr == "bytes_per_param" else getattr(p, attr)
    return _table(book, "Precisions", "Number formats", columns, catalog.precisions(), value, "CatPrecision",
                  {"name": "CatPrecisionNames", "bytes_per_param": "CatPrecision_bytes_per_param"})[0]


LISTS = {
    "ListOptimizers": OPTIMIZERS,
    "ListPricing": catalog.PRICINGS,
    "ListWorkload": ("training", "inference"),
    "ListYesNo": ("TRUE", "FALSE"),
}


def lists_sheet(book: Book):
    ws = book.wb.create_sheet("Lists")
    ws["A1"] = "Choices behind the drop-downs"
    ws["A1"].font = st.SECTION_FONT
    for i, (name, values) in enumerate(LISTS.items(), start=1):
        ws.cell(row=2, column=i, value=name)
        for r, v in enumerate(values, start=FIRST):
            write_text(ws.cell(row=r, column=i), v)
        book.define(name, f"'Lists'!${col(i)}${FIRST}:${col(i)}${FIRST + len(values) - 1}")
        ws.column_dimensions[col(i)].width = 18
    st.style_header_row(ws, 2, 1, len(LISTS))
    return ws


def sources_sheet(book: Book):
    ws = book.wb.create_sheet("Sources")
    ws["A1"] = "Sources: every catalog figure's source and date"
    ws["A1"].font = st.SECTION_FONT
    header = ["Catalog", "Item", "Figures", "Source", "As of"]
    for i, h in enumerate(header, start=1):
        ws.cell(row=2, column=i, value=h)
    st.style_header_row(ws, 2, 1, len(header))
    rows = []
    for g in catalog.gpus():
        rows.append(("GPUs", g.name, "specifications", g.source, g.as_of))
        if g.price_usd:
            rows.append(("GPUs", g.name, "purchase price", g.price_source, g.price_as_of))
    for p in catalog.cloud_prices():
        rows.append(("Cloud prices", f"{p.provider} {p.instance} {p.pricing} ({p.status})", "price", p.source,
                     p.as_of))
    for m in catalog.models():
        rows.append(("Models", m.name, "architecture, parameters", m.source, m.as_of))
    for p in catalog.precisions():
        rows.append(("Precisions", p.name, "bits per parameter", p.source, p.as_of))
    for r, row in enumerate(rows, start=FIRST):
        for i, v in enumerate(row, start=1):
            write_text(ws.cell(row=r, column=i), v or "")
    st.set_widths(ws, {"A": 14, "B": 30, "C": 18, "D": 74, "E": 12})
    for row in ws.iter_rows(min_row=FIRST, min_col=4, max_col=4):
        row[0].alignment = st.WRAP
    ws.freeze_panes = f"A{FIRST}"
    ws.auto_filter.ref = f"A2:E{FIRST + len(rows) - 1}"
    ws.print_title_rows = "1:2"
    return ws


def write_all(book: Book, gpus: bool = True):
    if gpus and "GPUs" not in book.wb.sheetnames:
        gpu_sheet(book)
    cloud_sheet(book)
    model_sheet(book)
    precision_sheet(book)
    lists_sheet(book)
    sources_sheet(book)
