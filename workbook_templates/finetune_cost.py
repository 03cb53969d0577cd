"""Fine-tuning job cost: the second seed's comparison of 8-GPU instances (hourly rate,
speed-up relative to an A100, hours, job cost, effective cost per A100-equivalent hour)
and the memory and cost of full fine-tuning, LoRA and QLoRA on each option."""

from __future__ import annotations

from openpyxl.chart import BarChart, Reference

from . import styles as st
from .common import Book, Lit, product, write_value

KEY = "finetune_cost"
FILENAME = "finetune_cost.xlsx"
TITLE = "Fine-tuning job cost"

OPTIONS = [  # name, instance, GPU, $/hour, speed-up vs A100, hours  (second seed's worked example)
    ("A100 - p4d.24xlarge", "p4d.24xlarge", "A100 SXM 40GB", 32.77, 1.0, 10.0),
    ("H100 - p5.48xlarge", "p5.48xlarge", "H100 SXM 80GB", 41.04, 2.5, 4.0),
    ("'L40' - g5.48xlarge (A10G)", "g5.48xlarge", "A10G 24GB", 17.50, 0.5, 20.0),
]
METHODS = [  # name, precision, optimizer, adapter fraction, relative time
    ("Full fine-tune", "bf16", "adamw", 0.01, 1.0),
    ("LoRA (16-bit base)", "bf16", "qlora", 0.01, 1.0),
    ("QLoRA (4-bit base)", "int4", "qlora", 0.01, 1.0),
]

def catalog_rate(instance: str) -> float:
    """Today's catalog on-demand price of an instance (its newest current row, as CLOUD_PRICE)."""
    from udfs.catalogs import catalog
    return catalog.cloud_price(instance).usd_per_hour


# the second seed's worked example, its hourly rates included (the defaults are today's catalog rates)
PRESETS = {"lesson": {f"Option{i}_Rate": rate for i, (_, _, _, rate, _, _) in enumerate(OPTIONS, start=1)}}

# a second input set for the tests (changes every kind of input)
ALT_INPUTS = {"FT_Model": "Llama 2 13B", "FT_Headroom": 8, "FT_Baseline": "A100 SXM 80GB",
              "Option1_Rate": 40.96, "Option2_Rate": 55.04, "Option2_Speedup": 3.0, "Option3_Hours": 25,
              "Option3_GPU": "L40S 48GB", "Option1_GPUs": 4, "Method1_Precision": "fp16", "Method2_Adapter": 0.05,
              "Method3_Time": 1.3, "Method2_Optimizer": "sgd"}


def build(path, inputs: dict | None = None) -> Book:
    from udfs.api.functions.common import USD_PER_HOUR
    book = Book(KEY, TITLE,
                "Compare what one fine-tuning job costs on different cloud instances: job cost = hourly rate x "
                "hours, and the effective cost of one A100-equivalent hour = hourly rate / speed-up (the second "
                "seed's rule), plus the memory and cost of full fine-tuning, LoRA and QLoRA on each option.",
                ["Pick the model and the baseline GPU (the one the speed-ups are relative to).",
                 "For each option type the instance, GPU, hourly rate, speed-up relative to the baseline and the "
                 "job's hours (the rates default to today's catalog on-demand price of each instance; the speed-ups "
                 "and hours are the seed's. The seed's own rates are the preset flopsheet templates --preset "
                 "lesson: $32.77 x 10 h = $327.70; $41.04 / 2.5 = $16.42 per A100-equivalent hour; $17.50 / 0.5 = "
                 "$35.00).",
                 "Read the job cost and the effective hourly cost; the catalog speed-up (dense BF16 TFLOPS) is "
                 "shown beside the speed-up you typed, as a cross-check.",
                 "Below, the method table shows memory (the lesson's estimator), GPUs needed and cost per option "
                 "for full fine-tuning, LoRA and QLoRA; set a relative time per method if it runs faster."],
                ["Money in US dollars; rates per instance-hour.", "Memory in GB of GPU memory (2^30 bytes, as GPU "
                 "sizes are stated).", "Speed-up: times the baseline GPU's speed (A100 = 1)."],
                inputs=inputs)
    ws = book.sheet("Fine-tuning", "Fine-tuning job cost",
                    "Seed note: the seed calls g5.48xlarge an 'L40' instance; AWS g5 has A10G GPUs (24 GB), which "
                    "the catalog follows. Rates: today's catalog (the seed's: --preset lesson).")
    book.section(ws, 4, "Job")
    model = book.input(ws, 5, "Model (or a parameter count)", "FT_Model", "Llama 2 7B", choices="CatModelNames",
                       allow_other=True, help="Catalog model name, or type a parameter count such as 7000000000.")
    baseline = book.input(ws, 6, "Baseline GPU (speed-up = 1)", "FT_Baseline", "A100 SXM 40GB",
                          choices="CatGpuNames", help="GPU the speed-ups are relative to.")
    params = book.params(ws, "B8", model, label="Parameters of the model")
    ws["A8"] = "Parameters"
    headroom = book.input(ws, 7, "Memory kept free per GPU", "FT_Headroom", 5, unit="GB", fmt=st.GB,
                          help="GB left free on each GPU when counting GPUs needed (the lesson: 5 of 80).")

    header = ["Option", "Instance", "GPU", "Rate ($/hour)", "Speed-up vs baseline", "Job hours", "GPUs per instance",
              "Job cost", "Effective $ per A100-equivalent hour", "Catalog speed-up (BF16 TFLOPS)"]
    book.section(ws, 9, "Options (inputs in yellow)", header=header)
    opt = []
    for i, (name, inst, gpu, _seed_rate, speed, hours) in enumerate(OPTIONS, start=1):
        r = 10 + i
        o = {
            "name": book.input(ws, r, "", f"Option{i}_Name", name, text=True, col=1),
            "instance": book.input(ws, r, "", f"Option{i}_Instance", inst, text=True, col=2),
            "gpu": book.input(ws, r, "", f"Option{i}_GPU", gpu, choices="CatGpuNames", col=3),
            "rate": book.input(ws, r, "", f"Option{i}_Rate", catalog_rate(inst), fmt=st.USD, arg=USD_PER_HOUR,
                               col=4, help="Price per instance-hour; default: today's catalog on-demand price of "
                                           f"{inst} (Cloud prices sheet)."),
            "speed": book.input(ws, r, "", f"Option{i}_Speedup", speed, fmt=st.FACTOR, col=5,
                                help="Speed relative to the baseline GPU (A100 = 1); > 0."),
            "hours": book.input(ws, r, "", f"Option{i}_Hours", hours, fmt=st.HOURS, col=6,
                                help="Hours the job takes on this option."),
            "gpus": book.input(ws, r, "", f"Option{i}_GPUs", 8, fmt="0", col=7, whole=True,
                               help="GPUs in one instance (for the memory fit below)."),
        }
        label = f"option {i}"
        o["cost"] = book.calc(ws, f"H{r}", "JOB_COST", {"usd_per_hour": o["rate"], "hours": o["hours"]},
                              fmt=st.USD, key=True, label=f"Job cost, {label}")
        o["eff"] = book.calc(ws, f"I{r}", "EFFECTIVE_HOURLY_COST", {"usd_per_hour": o["rate"], "speedup": o["speed"]},
                             fmt=st.USD, key=True, label=f"Effective $/A100-eq hour, {label}")
        book.calc(ws, f"J{r}", "SPEEDUP", {"gpu": o["gpu"], "baseline_gpu": baseline, "workload": Lit("training")},
                  fmt=st.FACTOR, label=f"Catalog speed-up, {label}",
                  unless=f'OR(INDEX(CatGpu_bf16_tflops,MATCH({o["gpu"].coord},CatGpuNames,0))="",'
                         f'INDEX(CatGpu_bf16_tflops,MATCH({baseline.coord},CatGpuNames,0))="")')
        opt.append(o)

    mheader = ["Method", "Precision", "Optimizer (lesson estimator)", "Adapter fraction", "Relative time vs full",
               "Memory (GB)"] + [f"GPUs needed, option {i}" for i in (1, 2, 3)] + \
              [f"Fits one instance, option {i}" for i in (1, 2, 3)] + [f"Job cost, option {i}" for i in (1, 2, 3)]
    book.section(ws, 15, "Full fine-tune, LoRA and QLoRA (memory: the lesson's estimator; LoRA = the estimator's "
                 "adapter-only optimizer states on a 16-bit base)", header=mheader)
    from openpyxl.utils import get_column_letter as L
    for j, (mname, prec, optim, frac, rel) in enumerate(METHODS, start=1):
        r = 16 + j
        write_value(ws.cell(row=r, column=1), mname)
        p = book.input(ws, r, "", f"Method{j}_Precision", prec, choices="CatPrecisionNames", col=2)
        oz = book.input(ws, r, "", f"Method{j}_Optimizer", optim, choices="ListOptimizers", col=3)
        fr = book.input(ws, r, "", f"Method{j}_Adapter", frac, fmt="0.00", col=4,
                        help="QLoRA/LoRA: fraction of parameters in the trainable adapter (0 to 1).")
        tm = book.input(ws, r, "", f"Method{j}_Time", rel, fmt=st.FACTOR, col=5,
                        help="Job time relative to the full fine-tune's hours on the same option.")
        mem = book.calc(ws, f"F{r}", "GPU_MEMORY", {"model_or_params": params, "precision": p, "optimizer": oz,
                                                     "adapter_fraction": fr},
                        fmt=st.GB, label=f"Memory, {mname}")
        for i, o in enumerate(opt):
            need = book.calc(ws, f"{L(7 + i)}{r}", "GPUS_NEEDED",
                             {"memory_gb": mem, "gpu_or_capacity": o["gpu"], "headroom_gb": headroom},
                             fmt="0", label=f"GPUs needed, {mname}, option {i + 1}")
            book.glue(ws, f"{L(10 + i)}{r}", f'IF({need.coord}<={o["gpus"].ref(ws.title)},"Yes","No")',
                      lambda get, need=need, o=o: "Yes" if get(need) <= get(o["gpus"]) else "No",
                      label=f"Fits, {mname}, option {i + 1}")
            book.calc(ws, f"{L(13 + i)}{r}", "JOB_COST", {"usd_per_hour": o["rate"], "hours": product(o["hours"], tm)},
                      fmt=st.USD, label=f"Job cost, {mname}, option {i + 1}")
    st.set_widths(ws, {"A": 22, "B": 12, "C": 14, "D": 8, "E": 8, "F": 8, "G": 8, "H": 10, "I": 10, "J": 9,
                       "K": 8, "L": 8, "M": 9, "N": 9, "O": 9})     # one page wide at >= 8 pt
    ws.row_dimensions[10].height = 58
    ws.row_dimensions[16].height = 58
    ws.freeze_panes = "A4"

    chart = BarChart()
    chart.type = "col"
    chart.title = "Job cost and effective cost per A100-equivalent hour"
    chart.y_axis.title = "$"
    chart.y_axis.numFmt = '"$"#,##0'
    data = Reference(ws, min_col=8, max_col=9, min_row=10, max_row=13)
    chart.add_data(data, titles_from_data=True)
    chart.set_categories(Reference(ws, min_col=1, min_row=11, max_row=13))
    chart.height, chart.width = 8, 18
    book.chart(ws, st.readable_chart(chart), "A22")
    return book.finish(path)
