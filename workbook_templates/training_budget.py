"""Training budget: memory (the lesson's estimator) and whether it fits, GPUs needed,
training FLOPs (6·N·D), GPU-hours at an MFU, wall-clock days, and cost at the cheapest
current on-demand and spot cloud prices and on owned hardware; a chart of cost by GPU."""

from __future__ import annotations

from openpyxl.chart import Reference

from udfs.catalogs import catalog
from udfs.physics import training_efficiency

from . import styles as st
from .catalog_sheets import cheapest
from .common import Book, C, write_value

KEY = "training_budget"
FILENAME = "training_budget.xlsx"
TITLE = "Training budget"

ALT_INPUTS = {"TB_Model": "Mistral 7B", "TB_Tokens": 5e11, "TB_Precision": "fp8", "TB_Optimizer": "sgd",
              "TB_GPU": "H100 SXM 80GB", "TB_GPUCount": 64, "TB_MFU": 0.35, "TB_Headroom": 4,
              "TB_OwnedRate": 2.1}


def tensor_missing(gpu: str, precision: str) -> str:
    return f'INDEX(CatGpuTensor,MATCH({gpu},CatGpuNames,0),MATCH({precision},CatTensorPrecisions,0))=""'


def catalog_rate(gpu: str) -> str:
    """The catalog's owned $/GPU-hour of a GPU ("n/a" where it has no price)."""
    look = f"INDEX(CatGpu_owned_usd_per_gpu_hour,MATCH({gpu},CatGpuNames,0))"
    return f'IF({look}="","n/a",{look})'


def default_mfu() -> float:
    """The table's whole-run MFU for the sheet's default model and GPU (Llama 2 7B, A100 SXM 80GB, bf16)."""
    eff = training_efficiency.for_gpu(catalog.gpu("A100 SXM 80GB"), catalog.model("Llama 2 7B"), "bf16")
    return round(eff.mfu, 4)


def build(path, inputs: dict | None = None) -> Book:
    from udfs.api.functions.compute import MFU, TOKENS
    book = Book(KEY, TITLE,
                "Budget a training run: will the model fit, how many GPUs, how much compute (6 x parameters x "
                "tokens), how many GPU-hours and days, and what it costs on cloud prices and on owned hardware.",
                ["Choose the model from the drop-down (or type a parameter count), the training tokens, precision "
                 "and optimizer.",
                 "Choose the GPU and how many train together, and the model FLOPs utilisation (MFU): its default is "
                 "the training-efficiency table's whole-run figure for the default model and GPU (TRAINING_MFU gives "
                 "it for any GPU, precision and model: the steady-state MFU, about 0.40-0.49 on A100 and H100, x 0.90 for a "
                 "whole run).",
                 "The owned cost per GPU-hour defaults to the catalog's for the GPU chosen (the rate the report "
                 "uses); type your own (see the Cloud vs own workbook).",
                 "Read memory, fit, FLOPs, GPU-hours, days and cost; the table below prices the same run on every "
                 "catalog GPU with a current on-demand price."],
                ["Memory in GB of GPU memory (2^30 bytes).", "FLOPs: floating-point operations; GPU-hours at the "
                 "GPU's dense tensor peak x MFU.", "Prices: US dollars per GPU-hour, the cheapest current catalog "
                 "price for the GPU (see Cloud prices)."],
                inputs=inputs)
    ws = book.sheet("Training", "Training budget",
                    "Default inputs: the lesson's Llama 2 7B on 2T tokens on A100 (TRAINING_GPU_HOURS example: "
                    "~172,000 GPU-hours at the table's whole-run MFU; Meta's model card: 184,320).")
    book.section(ws, 4, "Inputs")
    book.input(ws, 5, "Scenario name", "TB_Scenario", "Llama 2 7B pre-training (lesson example)", text=True)
    model = book.input(ws, 6, "Model (or a parameter count)", "TB_Model", "Llama 2 7B", choices="CatModelNames",
                       allow_other=True, help="Catalog model name, or type a parameter count such as 7000000000.")
    tokens = book.input(ws, 7, "Training tokens", "TB_Tokens", 2e12, fmt=st.TOKENS, arg=TOKENS, unit="tokens")
    prec = book.input(ws, 8, "Precision", "TB_Precision", "bf16", choices="CatPrecisionNames",
                      help="Weight format; also picks the GPU's tensor peak used for speed.")
    optim = book.input(ws, 9, "Optimizer", "TB_Optimizer", "adamw", choices="ListOptimizers",
                       help="Optimizer states counted by the lesson's memory estimator.")
    gpu = book.input(ws, 10, "GPU", "TB_GPU", "A100 SXM 80GB", choices="CatGpuNames", help="GPU from the catalog.")
    count = book.input(ws, 11, "GPUs training together", "TB_GPUCount", 1024, fmt="#,##0", whole=True,
                       unit="GPUs", help="Number of GPUs in the run (whole number >= 1).")
    mfu = book.input(ws, 12, "Model FLOPs utilisation (MFU)", "TB_MFU", default_mfu(), fmt=st.FRACTION, arg=MFU,
                     help="Whole-run MFU of the training-efficiency table for the default model and GPU "
                          "(=TRAINING_MFU(GPU, model)); one figure for every GPU below: type the one you expect.")
    headroom = book.input(ws, 13, "Memory kept free per GPU", "TB_Headroom", 5, fmt=st.GB, unit="GB",
                          help="GB left free on each GPU when counting GPUs needed (the lesson: 5 of 80).")
    # default: the catalog's owned rate for the GPU chosen (the report's: all-in price, data-centre model)
    owned = book.input(ws, 14, "Owned cost per GPU-hour", "TB_OwnedRate", "=" + catalog_rate(gpu.coord),
                       fmt=st.USD, unit="$/GPU-hour",
                       help="Default: the catalog's owned rate for the GPU chosen (GPUs sheet: all-in price, "
                            "data-centre model at 70% use, as the report). Type your own to replace it.")

    book.section(ws, 16, "Results")
    labels = [
        (17, "Parameters (total, for memory)"), (18, "Active parameters (for compute)"),
        (19, "Memory to train (lesson estimator)"), (20, "Memory per GPU, spread evenly (ZeRO-3 / FSDP)"),
        (21, "GPUs needed to hold it"), (22, "Fits on the GPUs chosen?"), (23, "Training compute"),
        (24, "GPU-hours"), (25, "Wall-clock days on the GPUs chosen"), (26, "Cloud on-demand $/GPU-hour (cheapest)"),
        (27, "Cloud spot $/GPU-hour (cheapest)"), (28, "Cost, cloud on-demand"), (29, "Cost, cloud spot"),
        (30, "Cost, owned hardware"),
    ]
    for r, text in labels:
        ws.cell(row=r, column=1, value=text)
    params = book.params(ws, "B17", model, label="Parameters")
    book.params(ws, "B18", model, active=True, label="Active parameters")
    mem = book.calc(ws, "B19", "GPU_MEMORY", {"model_or_params": params, "precision": prec, "optimizer": optim},
                    fmt=st.GB, key=True, label="Memory to train")
    book.glue(ws, "B20", f"B19/{count.coord}", lambda get: get(mem) / get(count), fmt=st.GB,
              label="Memory per GPU")
    need = book.calc(ws, "B21", "GPUS_NEEDED", {"memory_gb": mem, "gpu_or_capacity": gpu, "headroom_gb": headroom},
                     fmt="#,##0", key=True, label="GPUs needed")
    book.glue(ws, "B22", f'IF({count.coord}>=B21,"Yes","No")',
              lambda get: "Yes" if get(count) >= get(need) else "No", label="Fits")
    book.calc(ws, "B23", "TRAINING_FLOPS", {"model_or_params": model, "tokens": tokens}, fmt=st.FLOPS,
              label="Training FLOPs")
    missing = tensor_missing(gpu.coord, prec.coord)
    common = {"model_or_params": model, "tokens": tokens, "gpu": gpu, "mfu": mfu, "precision": prec}
    book.calc(ws, "B24", "TRAINING_GPU_HOURS", common, fmt="#,##0", key=True, label="GPU-hours", unless=missing)
    book.calc(ws, "B25", "TRAINING_DAYS", {**common, "n_gpus": count}, fmt=st.DAYS, key=True,
              label="Wall-clock days", unless=missing)
    od = book.glue(ws, "B26", f'IF(INDEX(CatGpu_od_usd_per_gpu_hour,MATCH({gpu.coord},CatGpuNames,0))="","n/a",'
                   f'INDEX(CatGpu_od_usd_per_gpu_hour,MATCH({gpu.coord},CatGpuNames,0)))',
                   lambda get: cheapest(catalog.gpu(get(gpu)).name, "on-demand") or "n/a", fmt=st.USD,
                   label="On-demand price")
    spot = book.glue(ws, "B27", f'IF(INDEX(CatGpu_spot_usd_per_gpu_hour,MATCH({gpu.coord},CatGpuNames,0))="","n/a",'
                     f'INDEX(CatGpu_spot_usd_per_gpu_hour,MATCH({gpu.coord},CatGpuNames,0)))',
                     lambda get: cheapest(catalog.gpu(get(gpu)).name, "spot") or "n/a", fmt=st.USD,
                     label="Spot price")
    for r, price, label in ((28, od, "on-demand"), (29, spot, "spot"), (30, owned, "owned")):
        guard = f'OR({price.coord}="n/a",{missing})'
        book.calc(ws, f"B{r}", "TRAINING_COST", {**common, "usd_per_gpu_hour": price}, fmt=st.USD0, key=True,
                  label=f"Cost, {label}", unless=guard)
    for r, unit in ((17, "parameters"), (18, "parameters"), (23, "FLOPs"), (24, "GPU-hours"),
                    (26, "$/GPU-hour"), (27, "$/GPU-hour")):
        ws.cell(row=r, column=3, value=unit).font = st.NOTE_FONT

    # cost of the same run on every GPU with a current on-demand price
    gpus = [g for g in catalog.gpus() if cheapest(g.name, "on-demand") and g.bf16_tflops]
    header = ["GPU", "On-demand $/GPU-hour", "Spot $/GPU-hour", "GPU-hours", "Days on the GPUs chosen",
              "Cost on-demand", "Cost spot"]
    top = 33
    book.section(ws, top - 1, "Cost of this run by GPU (cheapest current catalog prices)", header=header)
    for i, g in enumerate(gpus):
        r = top + 1 + i
        write_value(ws.cell(row=r, column=1), g.name)
        name = C(ws.title, f"A{r}", name=True)
        row_od = book.glue(ws, f"B{r}", f"INDEX(CatGpu_od_usd_per_gpu_hour,MATCH(A{r},CatGpuNames,0))",
                           lambda get, n=g.name: cheapest(n, "on-demand"), fmt=st.USD, label=f"{g.name} on-demand")
        row_spot = book.glue(ws, f"C{r}", f'IF(INDEX(CatGpu_spot_usd_per_gpu_hour,MATCH(A{r},CatGpuNames,0))="",'
                             f'"n/a",INDEX(CatGpu_spot_usd_per_gpu_hour,MATCH(A{r},CatGpuNames,0)))',
                             lambda get, n=g.name: cheapest(n, "spot") or "n/a", fmt=st.USD, label=f"{g.name} spot")
        row_missing = tensor_missing(f"A{r}", prec.coord)
        args = {**common, "gpu": name}
        book.calc(ws, f"D{r}", "TRAINING_GPU_HOURS", args, fmt="#,##0", label=f"GPU-hours on {g.name}",
                  unless=row_missing, addin=False)
        book.calc(ws, f"E{r}", "TRAINING_DAYS", {**args, "n_gpus": count}, fmt=st.DAYS,
                  label=f"Days on {g.name}", unless=row_missing, addin=False)
        book.calc(ws, f"F{r}", "TRAINING_COST", {**args, "usd_per_gpu_hour": row_od}, fmt=st.USD0,
                  label=f"Cost on-demand on {g.name}", unless=row_missing, addin=False)
        book.calc(ws, f"G{r}", "TRAINING_COST", {**args, "usd_per_gpu_hour": row_spot}, fmt=st.USD0,
                  label=f"Cost spot on {g.name}", unless=f'OR(C{r}="n/a",{row_missing})', addin=False)
    last = top + len(gpus)
    ws.row_dimensions[top].height = 32
    st.set_widths(ws, {"A": 44, "B": 22, "C": 16, "D": 14, "E": 16, "F": 16, "G": 16})
    ws.freeze_panes = "A4"

    chart = st.bar_chart("Cost of this training run by GPU (on-demand)",
                         Reference(ws, min_col=6, min_row=top, max_row=last),
                         Reference(ws, min_col=1, min_row=top + 1, max_row=last), number_format='"$"#,##0')
    chart.y_axis.title = "$"
    chart.height, chart.width = st.bar_chart_height(len(gpus)), 26   # below the table: one page wide
    book.chart(ws, chart, f"A{last + 2}")
    return book.finish(path)
