"""The Assumptions and sources sheet: the method's assumptions with their basis, and every
catalog figure the report used (model, GPUs, cloud prices, the scenario's price overrides) with
its source and date."""

from __future__ import annotations

from openpyxl import Workbook

from udfs.catalogs import catalog, engines
from udfs.physics import economics
from udfs.physics import defaults
from udfs.physics.economics import HOURS_PER_MONTH
from udfs.planning import picker
from udfs.planning import report_model
from udfs.planning.report_model import Result

from .. import styles as st
from .cells import header_row, put, section, sheet_title

TITLE = "Assumptions and sources"
PRINT_PARTIAL = True        # wide: only the columns that fit one page wide print (printing.setup partial)


ASSUMPTION_WIDTHS = {"A": 26, "B": 22, "C": 18, "D": 12, "E": 10, "F": 10, "G": 12, "H": 12, "I": 12, "J": 12,
                     "K": 24, "L": 24, "M": 40, "N": 40, "O": 40, "P": 12}
LAST = 9                          # text blocks span the first nine columns (the printed width)



def _memory_rules() -> str:
    """The default engines' shares of GPU memory, as their profiles hold them (udfs/data/engines.csv)."""
    return "the serving engine's own: " + "; ".join(
        f"{name} {engines.engine(name).memory_rule_text}" for name in ("vLLM", "SGLang", "TensorRT-LLM"))

def _across(ws, row: int, column: int, text: str):
    """Text wrapped across the table to its last column (its row height follows, see printing)."""
    cell = put(ws, row, column, text)
    ws.merge_cells(start_row=row, start_column=column, end_row=row, end_column=LAST)
    cell.alignment = st.WRAP
    return cell


def _mfu_assumption(res: Result) -> tuple[object, str]:
    """The recommended option's MFU and its basis, from the training-efficiency table (the picker's)."""
    sc, best = res.scenario, res.best
    table = ("udfs/data/training_efficiency.csv (TRAINING_MFU): the steady-state MFU of a step-time model (the "
             "matrix products at the achieved share measured for the GPU generation, precision and dense/MoE, "
             "attention, memory-bound work); x TRAINING_GOODPUT for pre-training, as it is for fine-tuning, the "
             "exposed gradient synchronisation at the option's GPUs added")
    if sc.serving or best is None:
        return "by GPU (training only)", table
    found = picker.training_mfu(best.gpu_row, sc.model, sc.precision, sc.kind)
    return found.mfu, f"{table}. For {best.gpu}: {res.mfu_basis}"


def write(wb: Workbook, res: Result):
    sc = res.scenario
    usd = sc.currency.usd_symbol        # catalog prices stay in USD, whatever the report's currency
    ws = wb.create_sheet(TITLE)
    sheet_title(ws, "Assumptions and sources", "Every catalog figure the report used, with its source and date.")
    row = 4
    section(ws, row, "Method and engine assumptions")
    row += 1
    header_row(ws, row, ["Assumption", "Value", "Basis"])
    row += 1
    assumptions = [
        ("Model FLOPs utilization (training)", *_mfu_assumption(res)),
        ("Usable share of GPU memory", _memory_rules(), "udfs/data/engines.csv (memory_fraction, memory_rule; a named "
         "release's in udfs/data/engine_releases.csv): the same rules every fit and KV budget applies"),
        ("Training FLOPs per token", "6 x parameters (4 x for LoRA/QLoRA)", "udfs/planning/picker.py"),
        ("Training parallelism", "ZeRO-3 data parallel, full recompute, micro-batch 1 x 2,048",
         f"udfs/planning/picker.py; sharded models need a >= {catalog.NVLINK_CLASS_GBS:g} GB/s (NVLink-class) GPU link"),
        ("Default deadline (days)", defaults.DEADLINE_DAYS, "when the scenario gives none"),
        ("Serving throughput per copy", "continuous batching at the largest batch the KV cache holds under the "
         "engine's memory rules and the latency target allows", "udfs/physics/capacity.py (SERVING_THROUGHPUT); "
         "docs/serving-model.md"),
        ("GPUs per serving copy", "the tensor-parallel group of 1, 2, 4 or 8 needing the fewest GPUs for the "
         "traffic", "udfs/physics/capacity.py (GPUS_FOR_TRAFFIC)"),
        ("Hours per month", HOURS_PER_MONTH, "8,760 / 12"),
        ("Rented cost", f"{usd}/GPU-h x GPU-hours rented: every GPU 730 h a month serving; the job's GPU-hours "
         "training", "udfs/planning/sweep.py"),
        ("Owned monthly cash per GPU", f"capital recovery of the all-in system price at the cost of capital (residual "
         f"netted) + scale-out network (share of the system price, recovered the same way) + colocation {usd}/kW-month "
         f"x the server's kW + the server's power x PUE x {usd}/kWh for every hour + opex; the same whatever the "
         "utilization", "udfs.physics.economics.datacenter_month (DATACENTER_COST_PER_GPU_MONTH)"),
        ("Server power per GPU", f"GPU TDP x {economics.SYSTEM_POWER_FACTOR:.2f}",
         "NVIDIA DGX H100: up to 10.2 kW for 8 x 700 W GPUs"),
        ("Owned cost of a training job", "GPU-hours x monthly cash / (730 h x utilization)",
         "the job's share of GPUs busy that share of their life"),
        ("Serving cost per 1M output tokens", "monthly cost / output tokens produced a month (peak requests/min x "
         "tokens x 60 x 730 h x average share of the peak)", "udfs.planning.scenario.Scenario.tokens_per_month"),
        ("Capex (owned)", "GPUs x all-in system price x (1 + network share)", "paid up front"),
        ("Break-even month", "first month the rent of the same GPUs at the cheapest cloud rate reaches the capex "
         "plus the running cash (simple payback)", "udfs.planning.sweep.breakeven_month"),
        ("All-in system price per GPU", "a published server price / its GPUs; else the card price + 44.1% platform "
         "allowance (the H100 HGX server per GPU over the H100 card price)", "udfs/data/gpus.csv system_price_*"),
        ("Cloud rate", f"cheapest current on-demand {usd}/GPU-h in the catalog, unless the scenario overrides it",
         "udfs/data/cloud.csv"),
    ]
    ws.merge_cells(start_row=row - 1, start_column=3, end_row=row - 1, end_column=LAST)
    for label, value, basis in assumptions:
        put(ws, row, 1, label)
        put(ws, row, 2, value, "0%" if isinstance(value, float) and value < 1 else None)
        _across(ws, row, 3, basis).font = st.NOTE_FONT
        row += 1
    row += 1

    model = sc.model
    section(ws, row, "Model")
    row += 1
    mcols = ["Model", "Parameters", "Layers", "Hidden", "Heads", "KV heads", "As of"]
    header_row(ws, row, mcols)
    row += 1
    vals = [model.name, model.params, model.layers, model.hidden, model.heads, model.kv_heads, model.as_of]
    for j, v in enumerate(vals, start=1):
        put(ws, row, j, v, st.PARAMS if j == 2 else (st.INT if isinstance(v, (int, float)) else None))
    row += 1
    _across(ws, row, 1, "Source: " + (model.source or "scaled from the nearest catalog model")).font = st.NOTE_FONT
    row += 2

    section(ws, row, "GPUs")
    row += 1
    gcols = ["GPU", "Memory (GB, nameplate)", "Usable memory (GiB, what CUDA reports)",
             "Bandwidth (TB/s)", f"{sc.precision} dense TFLOPS", "TDP (W)",
             "Link (GB/s)", f"Card price ({usd})", "Card price as of", f"All-in per GPU ({usd})", "All-in as of",
             "Card price kind", "All-in kind", "Card price source", "All-in source", "Source", "As of"]
    header_row(ws, row, gcols)
    row += 1
    for name in res.used_gpus:
        g = catalog.gpu(name)
        vals = [g.name, g.memory_gb, g.memory_gib, g.bandwidth_tbs, g.tensor_tflops(sc.precision), g.tdp_w, g.interconnect_gbs,
                catalog.gpu_price(g, "card"), g.price_as_of, catalog.gpu_price(g, "system"), g.system_price_as_of,
                g.price_kind,
                g.system_price_kind, g.price_source, g.system_price_source, g.source, g.as_of]
        for j, v in enumerate(vals, start=1):
            money = j in (8, 10) and v is not None
            put(ws, row, j, v, sc.currency.usd_format() if money else ("#,##0.###" if isinstance(v, float) else None))
        row += 1
    row += 1
    section(ws, row, "GPU sources")
    row += 1
    for name in res.used_gpus:
        g = catalog.gpu(name)
        text = f"{g.name}: specifications: {g.source}" + (f"; price: {g.price_source}" if g.price_source else "")
        _across(ws, row, 1, text).font = st.NOTE_FONT
        row += 1
    row += 1

    section(ws, row, "Cloud prices (the instance each GPU's option is rented in: the cheapest current on-demand row "
                     "holding the GPUs that share a link, with a cluster network where a job spans instances)")
    row += 1
    ccols = ["GPU", "Provider", "Instance", f"{usd} per GPU-hour", "Region", "Price date", "As of"]
    header_row(ws, row, ccols)
    row += 1
    prices = []
    for name, p in report_model.cloud_rows(res):
        if p is None:
            put(ws, row, 1, name)
            _across(ws, row, 2, "no current on-demand price in the catalog").font = st.NOTE_FONT
        else:
            prices.append(p)
            for j, v in enumerate([p.gpu, p.provider, p.instance, p.usd_per_gpu_hour, p.region, p.price_date,
                                   p.as_of], start=1):
                put(ws, row, j, v, sc.currency.usd_format(2) if j == 4 else None)
        row += 1
    row += 1
    section(ws, row, "Cloud price sources")
    row += 1
    for p in prices:
        _across(ws, row, 1, f"{p.gpu} ({p.provider} {p.instance}): {p.source}").font = st.NOTE_FONT
        row += 1
    if sc.cloud_overrides or sc.purchase_overrides:
        row += 1
        section(ws, row, "Price overrides from the scenario (used instead of the catalog)")
        row += 1
        header_row(ws, row, ["GPU", f"Negotiated {usd}/GPU-h", f"Purchase price ({usd})"])
        row += 1
        for g in sorted(set(sc.cloud_overrides) | set(sc.purchase_overrides)):
            put(ws, row, 1, g)
            put(ws, row, 2, sc.cloud_overrides.get(g), sc.currency.usd_format(2))
            put(ws, row, 3, sc.purchase_overrides.get(g), sc.currency.usd_format())
            row += 1
    for cells in ws.iter_rows(min_row=4):      # catalog text quoting USD ("midpoint of $25k-$30k") says USD
        for cell in cells:
            if isinstance(cell.value, str):
                cell.value = sc.currency.usd_marked(cell.value)
    for cells in ws.iter_rows(min_row=4, max_col=2):
        for cell in cells:
            if isinstance(cell.value, str) and cell.coordinate not in ws.merged_cells:
                cell.alignment = st.WRAP
    st.set_widths(ws, ASSUMPTION_WIDTHS)

