"""Inference serving plan: traffic and latency target to the GPUs the serving model needs
(GPUS_FOR_TRAFFIC's model in native formulas: serving_calc), beside the lesson's bandwidth-bound
batch-1 estimate; memory fit, monthly cost owned vs cloud, cost per 1M tokens and a comparison
with an API price."""

from __future__ import annotations

from openpyxl.chart import Reference

from udfs.physics import defaults
from udfs.physics.economics import HOURS_PER_MONTH, Ownership

from . import serving_calc
from . import serving_figures as sf
from . import styles as st
from .cloud_vs_own import lookup
from .common import Book, C, Check, Expr, Lit, product

KEY = "inference_plan"
FILENAME = "inference_plan.xlsx"
TITLE = "Inference serving plan"

GPU_CELL = "B12"        # the gpu input: the price defaults follow it
# defaults: today's catalog for the GPU chosen (as cloud_vs_own and the report: all-in price per GPU in a
# server, TDP, cheapest current on-demand rate; "n/a" where the catalog has none)
CATALOG_INPUTS = {"IP_CloudRate": "=" + lookup("od_usd_per_gpu_hour", GPU_CELL),
                  "IP_HardwareCost": "=" + lookup("system_price_usd", GPU_CELL),
                  "IP_PowerW": "=" + lookup("tdp_w", GPU_CELL)}
# the lesson's worked example, its prices included: an H100 at $30,000 and 700 W, $3.20/GPU-hour
PRESETS = {"lesson": {"IP_CloudRate": 3.20, "IP_HardwareCost": 30000, "IP_PowerW": 700, "IP_Kwh": 0.12,
                      "IP_Lifetime": 3, "IP_Utilization": 0.7}}

ALT_INPUTS = {"requests_per_minute": 2500, "output_tokens": 350, "prompt_tokens": 1200, "IP_Headroom": 0.3,
              "IP_Latency": 8, "model": "Llama 3.1 8B", "precision": "int8", "gpu": "L40S 48GB", "IP_Batch": 8,
              "IP_Efficiency": 0.6, "IP_GPUsPerInstance": 4, "IP_CloudRate": 1.86, "IP_HardwareCost": 9000,
              "IP_PowerW": 350, "IP_Utilization": 0.5, "IP_ApiIn": 0.5, "IP_ApiOut": 1.5, "IP_HoursPerMonth": 720}


DEFAULT_MODEL, DEFAULT_PROMPT, DEFAULT_OUTPUT = "Llama 2 7B", 500, 200


def default_api_offer():
    """The hosted-API price the sheet starts with: the catalog's offer for the default model at the default mix
    (the same model or its size class; udfs.planning.api_compare), as every serving report compares."""
    from udfs.catalogs import resolve
    from udfs.planning import api_compare
    offer = api_compare.offer_for(resolve.model(DEFAULT_MODEL), DEFAULT_PROMPT, DEFAULT_OUTPUT)
    assert offer is not None, "the catalog lists an API for the default model's size class"
    return offer


def build(path, inputs: dict | None = None) -> Book:
    from udfs.api.functions import common as cm
    from udfs.api.functions import economics as e
    book = Book(KEY, TITLE,
                "Plan the GPUs for serving a model: from traffic (requests per minute, tokens per request) and a "
                "latency target to the serving model's batch, throughput per model copy and GPUs (the same model as "
                "the GPUS_FOR_TRAFFIC worksheet function, in native formulas), beside the lesson's batch-1 "
                "estimate; memory fit, monthly cost owned vs cloud, cost per 1M tokens, and what the same traffic "
                "costs on an API.",
                ["Type the traffic: requests per minute, output and input tokens per request, burst headroom and "
                 "the latency target for one response.",
                 "Choose the model, precision, GPU and inference engine. The 'Serving calculation' sheet shows "
                 "every step: KV fit, time per output token by batch, the batch kept and the copies needed.",
                 "The cloud price per GPU-hour, the owned GPU's all-in price and power default to today's catalog "
                 "for the GPU chosen (the report's figures); type over them. The API prices start at the catalog's "
                 "cheapest hosted offer for the default model's size class (API_PRICE_LIST); type the one you "
                 "compare with. The lesson's prices ($3.20/GPU-hour, $30,000, 700 W) are the preset "
                 "flopsheet templates --preset lesson.",
                 "The lesson's batch-1 estimate (batch size and bandwidth efficiency are its inputs) stays beside "
                 "the serving model: 1,000 requests/min x 200 tokens + 20% = 4,000 tokens/s; a 7B model in FP16 "
                 "on an H100 decodes ~167 tokens/s at batch 1."],
                ["Memory in GB of GPU memory (2^30 bytes); model files in GB (10^9 bytes).", "Speed in tokens per "
                 "second (tok/s); latency in milliseconds per token.", "Money in US dollars; a month is 730 hours "
                 "unless you change it."],
                inputs=inputs)
    ws = book.sheet("Serving", "Inference serving plan",
                    "GPUs needed: the serving model, step by step on 'Serving calculation'. Beside it, the lesson's "
                    "estimate.")
    book.section(ws, 4, "Inputs")
    inp = {}
    api = default_api_offer().price
    api_unit = f"$ per 1M ({api.provider}, {api.as_of})"
    spec = [
        ("requests_per_minute", "Requests per minute", 1000, "#,##0", "requests/min", None),
        ("output_tokens", "Output tokens per request", DEFAULT_OUTPUT, "#,##0", "tokens", None),
        ("prompt_tokens", "Input (prompt) tokens per request", DEFAULT_PROMPT, "#,##0", "tokens", None),
        ("IP_Headroom", "Burst headroom", defaults.HEADROOM, st.FRACTION, "", None),
        ("IP_Latency", "Latency target per response", 5, "0.0", "s", None),
        ("model", "Model (or a parameter count)", DEFAULT_MODEL, None, "", "CatModelNames"),
        ("precision", "Precision", "fp16", None, "", "CatPrecisionNames"),
        ("gpu", "GPU", "H100 SXM 80GB", None, "", "CatGpuNames"),
        ("engine", "Inference engine", sf.DEFAULT_ENGINE, None, "", "ListEngines"),
        ("IP_Batch", "Lesson's estimate: batch size", 1, "#,##0", "sequences", None),
        ("IP_Efficiency", "Lesson's estimate: bandwidth efficiency", defaults.BANDWIDTH_EFFICIENCY, st.FRACTION, "", None),
        ("IP_Headroom_GB", "Lesson's estimate: memory kept free per GPU", 5, st.GB, "GB", None),
        ("IP_GPUsPerInstance", "GPUs per instance", 8, "0", "GPUs", None),
        ("IP_CloudRate", "Cloud price per GPU-hour", CATALOG_INPUTS["IP_CloudRate"], st.USD, "$/GPU-hour", None),
        ("IP_HardwareCost", "Owned: purchase price per GPU (all-in)", CATALOG_INPUTS["IP_HardwareCost"], st.USD0, "$",
         None),
        ("IP_PowerW", "Owned: power per GPU", CATALOG_INPUTS["IP_PowerW"], "#,##0", "W", None),
        ("IP_Kwh", "Owned: electricity price", Ownership.usd_per_kwh, '"$"0.000', "$/kWh", None),
        ("IP_Lifetime", "Owned: lifetime", Ownership.lifetime_years, "0.0", "years", None),
        ("IP_Utilization", "Owned: utilization", Ownership.utilization, st.FRACTION, "", None),
        ("IP_HoursPerMonth", "Hours per month", HOURS_PER_MONTH, "#,##0", "hours", None),
        ("IP_ApiIn", "API price, input tokens", api.usd_per_1m_input, st.USD, api_unit, None),
        ("IP_ApiOut", "API price, output tokens", api.usd_per_1m_output, st.USD, api_unit, None),
    ]
    args_of = {"requests_per_minute": None, "IP_Headroom": None, "IP_Efficiency": cm.EFFICIENCY,
               "IP_Batch": cm.BATCH, "IP_CloudRate": cm.CLOUD_USD_PER_GPU_HOUR,
               "IP_HardwareCost": cm.HARDWARE_COST_USD, "IP_PowerW": cm.POWER_W, "IP_Kwh": cm.USD_PER_KWH,
               "IP_Lifetime": cm.LIFETIME_YEARS, "IP_Utilization": e.UTIL_DEFAULT}
    for r, (name, label, value, fmt, unit, choices) in enumerate(spec, start=5):
        inp[name] = book.input(ws, r, label, name, value, fmt=fmt, unit=unit, choices=choices, arg=args_of.get(name),
                               allow_other=name == "model",
                               help="Catalog model name, or type a parameter count." if name == "model" else "",
                               whole=name in ("IP_GPUsPerInstance",))
    gpu = inp["gpu"]
    assert gpu.coord == GPU_CELL
    rpm, tin, tout = inp["requests_per_minute"], inp["prompt_tokens"], inp["output_tokens"]
    calc = serving_calc.build(book, serving_calc.Inputs(
        inp["model"], gpu, inp["precision"], inp["engine"], rpm, tin, tout, inp["IP_Headroom"], inp["IP_Latency"]))
    sf.write(book)
    top = 5 + len(spec) + 1          # results
    book.section(ws, top, "Results: the serving model (the same as GPUS_FOR_TRAFFIC)")
    res = {}
    r = top + 1

    def row(label, unit=""):
        nonlocal r
        ws.cell(row=r, column=1, value=label)
        if unit:
            ws.cell(row=r, column=3, value=unit).font = st.NOTE_FONT
        coord = f"B{r}"
        r += 1
        return coord

    res["gpus_needed"], lesson_gpus = _serving(book, ws, row, inp, calc)
    per = inp["IP_GPUsPerInstance"]
    need_ref, per_ref = res["gpus_needed"].coord, per.coord
    res["inst"] = book.glue(ws, row("Instances needed (serving model)", "instances"),
                            f'IF(ISNUMBER({need_ref}),ROUNDUP({need_ref}/{per_ref},0),"-")',
                            lambda get: _instances(get(res["gpus_needed"]), get(per)), fmt="#,##0", key=True,
                            label="Instances needed")
    inst = res["inst"]
    res["gpus"] = book.glue(ws, row("GPUs provisioned (instances x GPUs)", "GPUs"),
                            f'IF(ISNUMBER({inst.coord}),{inst.coord}*{per_ref},"-")',
                            lambda get: get(inst) * get(per) if isinstance(get(inst), (int, float)) else "-",
                            fmt="#,##0", label="GPUs provisioned")
    r += 1
    book.section(ws, r, "The lesson's estimate (bandwidth-bound decode at the batch you type)")
    r += 1
    params = book.params(ws, row("Parameters", "parameters"), inp["model"])
    res["size"] = book.calc(ws, row("Model file size", "GB (10^9 bytes)"), "MODEL_SIZE_GB",
                            {"model_or_params": params, "precision": inp["precision"]}, fmt='0.0" GB"',
                            label="Model size")
    res["tps"] = book.calc(ws, row("Decode speed per GPU (lesson)", "tok/s"), "GPU_TOKENS_PER_SEC",
                           {"gpu_or_bandwidth": gpu, "model_size_gb": res["size"], "batch": inp["IP_Batch"],
                            "efficiency": inp["IP_Efficiency"]}, fmt=st.TOK_S, label="Tokens/s per GPU")
    res["lat"] = book.calc(ws, row("Latency per token (lesson)", "ms/token"), "TOKEN_LATENCY_MS",
                           {"gpu_or_bandwidth": gpu, "model_size_gb": res["size"], "batch": inp["IP_Batch"],
                            "efficiency": inp["IP_Efficiency"]}, fmt=st.MS, label="Token latency")
    res["need"] = book.calc(ws, row("Throughput needed (with headroom)", "tok/s"), "TOKENS_PER_SEC_NEEDED",
                            {"requests_per_minute": rpm, "tokens_per_request": tout,
                             "headroom": inp["IP_Headroom"]}, fmt=st.TOK_S, label="Tokens/s needed")
    res["per_req"] = book.calc(ws, row("Speed one response needs for the latency target", "tok/s"),
                               "TOKENS_PER_SEC_PER_REQUEST", {"tokens_per_request": tout,
                                                              "latency_s": inp["IP_Latency"]},
                               fmt=st.TOK_S, label="Tokens/s per request",
                               unless=f'NOT({inp["IP_Latency"].coord}>0)')        # blank: no latency target
    lat = res["lat"]
    res["meets"] = book.glue(ws, row("Meets the latency target? (lesson)"),
                             f'IF(NOT(ISNUMBER({res["per_req"].coord})),"n/a",'
                             f'IF(1000/{lat.coord}>={res["per_req"].coord},"Yes","No"))',
                             lambda get: "n/a" if not isinstance(get(res["per_req"]), (int, float)) else
                             "Yes" if 1000 / get(lat) >= get(res["per_req"]) else "No",
                             label="Meets latency")
    res["gpus_tp"] = book.calc(ws, lesson_gpus, "INSTANCES_NEEDED",
                               {"tokens_per_sec_needed": res["need"], "tokens_per_sec_per_instance": res["tps"]},
                               fmt="#,##0", label="Lesson's GPUs")
    res["mem"] = book.calc(ws, row("Memory to serve (weights + 20% for the KV cache)", "GB"), "GPU_MEMORY",
                           {"model_or_params": params, "precision": inp["precision"], "optimizer": Lit("none")},
                           fmt=st.GB, label="Memory to serve")
    res["copy"] = book.calc(ws, row("GPUs to hold one copy of the model (lesson)", "GPUs"), "GPUS_NEEDED",
                            {"memory_gb": res["mem"], "gpu_or_capacity": gpu, "headroom_gb": inp["IP_Headroom_GB"]},
                            fmt="#,##0", label="GPUs per model copy (lesson)", addin=False)
    # not repeated on the add-in sheet: the defined name gpus_needed (the headline) has the worksheet
    # function's spelling, and LibreOffice reads GPUS_NEEDED( there as the name
    res["fits"] = book.glue(ws, row("Fits on one GPU? (lesson)"), f'IF({res["copy"].coord}=1,"Yes","No")',
                            lambda get: "Yes" if get(res["copy"]) == 1 else "No", label="Fits on one GPU")
    r += 1
    book.section(ws, r, "Cost (for the serving model's GPUs)")
    r += 1
    hours = inp["IP_HoursPerMonth"]
    cloud_rate, hw, power = inp["IP_CloudRate"].coord, inp["IP_HardwareCost"].coord, inp["IP_PowerW"].coord
    # nothing fits, or the catalog has no price for the GPU: the costs say n/a
    no_gpus = f"NOT(AND(ISNUMBER({res['gpus'].coord}),ISNUMBER({cloud_rate})))"
    no_owned = f"NOT(AND(ISNUMBER({res['gpus'].coord}),ISNUMBER({hw}),ISNUMBER({power})))"
    no_price = f"NOT(AND(ISNUMBER({hw}),ISNUMBER({power})))"
    res["cloud_m"] = book.calc(ws, row("Monthly cost, cloud", "$/month"), "JOB_COST",
                             {"usd_per_hour": product(res["gpus"], inp["IP_CloudRate"]), "hours": hours},
                             fmt=st.USD0, key=True, label="Monthly cost, cloud", unless=no_gpus)
    book.define("monthly_cost_usd", res["cloud_m"])
    res["owned_h"] = book.calc(ws, row("Owned cost per used GPU-hour", "$/GPU-hour"), "OWNED_COST_PER_GPU_HOUR",
                             {"hardware_cost_usd": inp["IP_HardwareCost"], "lifetime_years": inp["IP_Lifetime"],
                              "power_w": inp["IP_PowerW"], "usd_per_kwh": inp["IP_Kwh"],
                              "utilization": inp["IP_Utilization"]}, fmt=st.USD, label="Owned $/GPU-hour",
                             unless=no_price)
    res["owned_m"] = book.calc(ws, row("Monthly cost, owned (used hours)", "$/month"), "JOB_COST",
                             {"usd_per_hour": product(res["gpus"], res["owned_h"]),
                              "hours": product(hours, inp["IP_Utilization"])},
                             fmt=st.USD0, key=True, label="Monthly cost, owned", unless=no_owned)
    res["c1m"] = book.calc(ws, row("Owned cost per 1M output tokens (lesson model)", "$ per 1M"),
                         "COST_PER_1M_TOKENS",
                         {"hardware_cost_usd": inp["IP_HardwareCost"], "utilization": inp["IP_Utilization"],
                          "tokens_per_sec": res["tps"], "lifetime_years": inp["IP_Lifetime"],
                          "usd_per_kwh": inp["IP_Kwh"], "power_w": inp["IP_PowerW"]},
                         fmt='"$"#,##0.0000', label="Owned $ per 1M output tokens", unless=no_price)
    res["tok_m"] = book.glue(ws, row("Tokens per month (input + output)", "tokens"),
                           f"{rpm.coord}*60*{hours.coord}*({tin.coord}+{tout.coord})",
                           lambda get: get(rpm) * 60 * get(hours) * (get(tin) + get(tout)), fmt="#,##0",
                           label="Tokens per month")
    res["share"] = book.glue(ws, row("Input share of tokens"), f"{tin.coord}/({tin.coord}+{tout.coord})",
                           lambda get: get(tin) / (get(tin) + get(tout)), fmt="0.0%", label="Input share")
    cloud_m_ref = res["cloud_m"].coord
    res["cloud_1m"] = book.glue(ws, row("Cloud cost per 1M tokens served (all tokens)", "$ per 1M"),
                                f'IF(ISNUMBER({cloud_m_ref}),{cloud_m_ref}/{res["tok_m"].coord}*1000000,"n/a")',
                              lambda get: get(res["cloud_m"]) / get(res["tok_m"]) * 1e6
                              if isinstance(get(res["cloud_m"]), (int, float)) else "n/a", fmt='"$"#,##0.0000',
                              label="Cloud $ per 1M tokens")
    res["api_m"] = book.calc(ws, row("API: monthly cost for the same tokens", "$/month"), "API_MONTHLY_COST",
                           {"tokens_per_month": res["tok_m"], "input_share": res["share"],
                            "api_usd_per_1m_input_tokens": inp["IP_ApiIn"], "api_usd_per_1m_output_tokens": inp["IP_ApiOut"]},
                           fmt=st.USD0, key=True, label="API monthly cost")
    blended = Expr(lambda s: f'{res["api_m"].ref(s)}/{res["tok_m"].ref(s)}*1000000',
                   lambda get: get(res["api_m"]) / get(res["tok_m"]) * 1e6)
    res["api_be"] = book.calc(ws, row("Self-hosting (cloud) beats the API above", "tokens/month"),
                            "API_BREAKEVEN_TOKENS", {"self_host_usd_per_month": res["cloud_m"],
                                                     "api_usd_per_1m_tokens": blended},
                            fmt="#,##0", label="API break-even tokens/month",
                            unless=f'NOT(ISNUMBER({res["cloud_m"].coord}))')
    cm_, om, am = res["cloud_m"], res["owned_m"], res["api_m"]
    book.glue(ws, row("Cheapest option this month"),
              # MIN skips a cost that says n/a (no price in the catalog, or nothing fits)
              f'IF(MIN({cm_.coord},{om.coord},{am.coord})={cm_.coord},"Cloud",'
              f'IF(MIN({cm_.coord},{om.coord},{am.coord})={om.coord},"Owned","API"))',
              lambda get: _cheapest(get(cm_), get(om), get(am)),
              key=True, label="Cheapest")
    # architecture-aware costs per input/output token exist as worksheet functions only
    for fn, label in (("COST_PER_1M_INPUT_TOKENS", "Cloud $ per 1M input tokens (architecture-aware)"),
                      ("COST_PER_1M_OUTPUT_TOKENS", "Cloud $ per 1M output tokens (architecture-aware)")):
        book.addin_only(label, fn, {"usd_per_gpu_hour": inp["IP_CloudRate"], "model": inp["model"], "gpu": gpu,
                                    "precision": inp["precision"], "prompt_tokens": tin, "output_tokens": tout,
                                    "batch": inp["IP_Batch"]}, '"$"#,##0.0000')
    st.set_widths(ws, {"A": 46, "B": 20, "C": 16})
    ws.freeze_panes = "A4"

    # chart: monthly cost, cloud vs owned vs API
    first = r + 2
    ws.cell(row=first, column=1, value="Monthly cost").font = st.SECTION_FONT
    for i, (label, ref) in enumerate((("Cloud", cm_), ("Owned", om), ("API", am))):
        ws.cell(row=first + 1 + i, column=1, value=label)
        cell = ws.cell(row=first + 1 + i, column=2, value=f"={ref.coord}")
        cell.number_format = st.USD0
    chart = st.bar_chart("Monthly cost: cloud, owned, API",
                         Reference(ws, min_col=2, min_row=first + 1, max_row=first + 3),
                         Reference(ws, min_col=1, min_row=first + 1, max_row=first + 3), horizontal=False,
                         height=9, width=14, number_format='"$"#,##0', titles_from_data=False)
    book.chart(ws, chart, "E4")
    return book.finish(path)


TRAFFIC_ROWS = [  # (GPUS_FOR_TRAFFIC part, label, kept-column key, unit, number format)
    ("copies", "Model copies", "copies", "copies", "#,##0"),
    ("gpus_per_copy", "GPUs per copy (tensor-parallel group)", "n", "GPUs", "#,##0"),
    ("batch", "Requests decoded together per copy (batch)", "batch", "requests", "#,##0"),
    ("tokens_per_sec_per_copy", "Output tokens/s per copy", "tps", "tok/s", st.TOK_S),
]


def _traffic_args(inp: dict) -> dict:
    """GPUS_FOR_TRAFFIC's arguments from the plan's inputs (the engine cell's default choice is a blank)."""
    eng, lat, out = inp["engine"], inp["IP_Latency"], inp["output_tokens"]
    return {"model": inp["model"], "gpu": inp["gpu"], "requests_per_minute": inp["requests_per_minute"],
            "prompt_tokens": inp["prompt_tokens"], "output_tokens": out,
            "max_tpot_ms": Expr(lambda s: f"{lat.ref(s)}*1000/{out.ref(s)}",
                                lambda get: (get(lat) or 0) * 1000 / get(out)),
            "precision": inp["precision"],
            "engine": Expr(lambda s: f'IF({eng.ref(s)}="{sf.DEFAULT_ENGINE}","",{eng.ref(s)})',
                           lambda get: "" if get(eng) == sf.DEFAULT_ENGINE else get(eng)),
            "headroom": inp["IP_Headroom"],
            "spare": Lit(0)}     # the calculation sheet sizes the copies the traffic needs, no spare copy (yet)


def _serving(book: Book, ws, row, inp: dict, calc: dict) -> tuple[C, str]:
    """The headline rows: the serving model's GPUs (the lesson's estimate right below it) and
    operating point, read from the kept group of the calculation sheet; each is checked against
    GPUS_FOR_TRAFFIC. Returns the headline cell and the lesson's row."""
    args = _traffic_args(inp)
    coord = row("GPUs needed (serving model)", "GPUs")
    best, any_ = calc["best"], calc["any"]
    cell = ws[coord]
    cell.value = (f'=IF({any_.ref(ws.title)}="yes",{best.ref(ws.title)},'
                  f'IF(SrvMissing<>"none","n/a: "&SrvMissing,"none fits"))')
    st.style_output(cell, "#,##0", True)
    target = C(ws.title, coord, number=True)
    book.checks.append(Check(target, "GPUs needed", "GPUS_FOR_TRAFFIC", {**args, "part": Lit("gpus")}))
    book.addin_rows.append(("GPUs needed (serving model)", target, "GPUS_FOR_TRAFFIC", {**args, "part": Lit("gpus")},
                            "#,##0"))
    book.define("gpus_needed", target)
    lesson = row("The lesson's estimate: GPUs for the traffic", "GPUs")     # filled by the lesson's section
    for part, label, key, unit, fmt in TRAFFIC_ROWS:
        c = row(label, unit)
        ws[c].value = f'=IF({any_.ref(ws.title)}="yes",{calc[key].ref(ws.title)},"-")'
        st.style_output(ws[c], fmt)
        t = C(ws.title, c, number=True)
        book.checks.append(Check(t, label, "GPUS_FOR_TRAFFIC", {**args, "part": Lit(part)}))
        book.addin_rows.append((label, t, "GPUS_FOR_TRAFFIC", {**args, "part": Lit(part)}, fmt))
    for label, ref, unit, fmt in (("Time per output token at that batch", calc["tpot"], "ms", st.MS),
                                  ("What limits the batch", calc["limited_by"], "", None),
                                  ("Inference engine", calc["engine"], "", None)):
        c = row(label, unit)
        ws[c].value = f"={ref.ref(ws.title)}"
        st.style_output(ws[c], fmt)
    return target, lesson


def _instances(gpus, per):
    return -(-int(gpus) // int(per)) if isinstance(gpus, (int, float)) else "-"


def _cheapest(cloud, owned, api) -> str:
    costs = [(v, k) for v, k in ((cloud, "Cloud"), (owned, "Owned"), (api, "API")) if isinstance(v, (int, float))]
    return min(costs, key=lambda c: c[0])[1]
