"""Inference serving plan: traffic and latency target to per-GPU decode speed (the lesson's
bandwidth-bound estimate), GPUs and instances with burst headroom, memory fit, monthly
cost owned vs cloud, cost per 1M tokens and a comparison with an API price."""

from __future__ import annotations

from openpyxl.chart import Reference

from . import styles as st
from .common import Book, Expr, Lit, product

KEY = "inference_plan"
FILENAME = "inference_plan.xlsx"
TITLE = "Inference serving plan"

ALT_INPUTS = {"IP_RPM": 2500, "IP_OutTokens": 350, "IP_InTokens": 1200, "IP_Headroom": 0.3, "IP_Latency": 8,
              "IP_Model": "Llama 3.1 8B", "IP_Precision": "int8", "IP_GPU": "L40S 48GB", "IP_Batch": 8,
              "IP_Efficiency": 0.6, "IP_GPUsPerInstance": 4, "IP_CloudRate": 1.86, "IP_HardwareCost": 9000,
              "IP_PowerW": 350, "IP_Utilization": 0.5, "IP_ApiIn": 0.5, "IP_ApiOut": 1.5, "IP_HoursPerMonth": 720}


def build(path, inputs: dict | None = None) -> Book:
    from udfs.api.functions import common as cm
    from udfs.api.functions import economics as e
    book = Book(KEY, TITLE,
                "Plan the GPUs for serving a model: from traffic (requests per minute, tokens per request) and a "
                "latency target to decode speed per GPU, GPUs and instances with burst headroom, memory fit, "
                "monthly cost owned vs cloud, cost per 1M tokens, and what the same traffic costs on an API.",
                ["Type the traffic: requests per minute, output and input tokens per request, burst headroom and "
                 "the latency target for one response.",
                 "Choose the model, precision and GPU; set the batch size (sequences decoded together) and the "
                 "bandwidth efficiency.",
                 "Type the cloud price per GPU-hour, or the purchase price and power of an owned GPU, and the API "
                 "prices to compare with.",
                 "Defaults are the lesson's: 1,000 requests/min x 200 tokens + 20% = 4,000 tokens/s; a 7B model "
                 "in FP16 on an H100 decodes ~167 tokens/s at batch 1."],
                ["Memory in GB of GPU memory (2^30 bytes); model files in GB (10^9 bytes).", "Speed in tokens per "
                 "second (tok/s); latency in milliseconds per token.", "Money in US dollars; a month is 730 hours "
                 "unless you change it."],
                inputs=inputs)
    ws = book.sheet("Serving", "Inference serving plan",
                    "Decode speed is the lesson's bandwidth-bound estimate: batch x bandwidth x efficiency / model "
                    "size. Memory is the lesson's inference estimate (weights + 20% for the KV cache).")
    book.section(ws, 4, "Inputs")
    inp = {}
    spec = [
        ("IP_RPM", "Requests per minute", 1000, "#,##0", "requests/min", None),
        ("IP_OutTokens", "Output tokens per request", 200, "#,##0", "tokens", None),
        ("IP_InTokens", "Input (prompt) tokens per request", 500, "#,##0", "tokens", None),
        ("IP_Headroom", "Burst headroom", 0.2, st.FRACTION, "", None),
        ("IP_Latency", "Latency target per response", 5, "0.0", "s", None),
        ("IP_Model", "Model (or a parameter count)", "Llama 2 7B", None, "", "CatModelNames"),
        ("IP_Precision", "Precision", "fp16", None, "", "CatPrecisionNames"),
        ("IP_GPU", "GPU", "H100 SXM 80GB", None, "", "CatGpuNames"),
        ("IP_Batch", "Batch size (sequences decoded together)", 1, "#,##0", "sequences", None),
        ("IP_Efficiency", "Bandwidth efficiency", 0.7, st.FRACTION, "", None),
        ("IP_Headroom_GB", "Memory kept free per GPU", 5, st.GB, "GB", None),
        ("IP_GPUsPerInstance", "GPUs per instance", 8, "0", "GPUs", None),
        ("IP_CloudRate", "Cloud price per GPU-hour", 3.20, st.USD, "$/GPU-hour", None),
        ("IP_HardwareCost", "Owned: purchase price per GPU", 30000, st.USD0, "$", None),
        ("IP_PowerW", "Owned: power per GPU", 700, "#,##0", "W", None),
        ("IP_Kwh", "Owned: electricity price", 0.12, '"$"0.000', "$/kWh", None),
        ("IP_Lifetime", "Owned: lifetime", 3, "0.0", "years", None),
        ("IP_Utilization", "Owned: utilization", 0.7, st.FRACTION, "", None),
        ("IP_HoursPerMonth", "Hours per month", 730, "#,##0", "hours", None),
        ("IP_ApiIn", "API price, input tokens", 3.0, st.USD, "$ per 1M", None),
        ("IP_ApiOut", "API price, output tokens", 15.0, st.USD, "$ per 1M", None),
    ]
    args_of = {"IP_RPM": None, "IP_Headroom": None, "IP_Efficiency": cm.EFFICIENCY, "IP_Batch": cm.BATCH,
               "IP_CloudRate": cm.CLOUD_USD_PER_GPU_HOUR, "IP_HardwareCost": cm.HARDWARE_COST_USD, "IP_PowerW": cm.POWER_W,
               "IP_Kwh": cm.USD_PER_KWH, "IP_Lifetime": cm.LIFETIME_YEARS, "IP_Utilization": e.UTIL_DEFAULT}
    for r, (name, label, value, fmt, unit, choices) in enumerate(spec, start=5):
        inp[name] = book.input(ws, r, label, name, value, fmt=fmt, unit=unit, choices=choices, arg=args_of.get(name),
                             allow_other=name == "IP_Model",
                             help="Catalog model name, or type a parameter count." if name == "IP_Model" else "",
                             whole=name in ("IP_GPUsPerInstance",))
    gpu = inp["IP_GPU"]
    top = 5 + len(spec) + 1          # results
    book.section(ws, top, "Results")
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

    params = book.params(ws, row("Parameters", "parameters"), inp["IP_Model"])
    res["size"] = book.calc(ws, row("Model file size", "GB (10^9 bytes)"), "MODEL_SIZE_GB",
                          {"model_or_params": params, "precision": inp["IP_Precision"]}, fmt='0.0" GB"', label="Model size")
    res["tps"] = book.calc(ws, row("Decode speed per GPU", "tok/s"), "GPU_TOKENS_PER_SEC",
                         {"gpu_or_bandwidth": gpu, "model_size_gb": res["size"], "batch": inp["IP_Batch"],
                          "efficiency": inp["IP_Efficiency"]}, fmt=st.TOK_S, key=True, label="Tokens/s per GPU")
    res["lat"] = book.calc(ws, row("Latency per token", "ms/token"), "TOKEN_LATENCY_MS",
                         {"gpu_or_bandwidth": gpu, "model_size_gb": res["size"], "batch": inp["IP_Batch"],
                          "efficiency": inp["IP_Efficiency"]}, fmt=st.MS, label="Token latency")
    res["need"] = book.calc(ws, row("Throughput needed (with headroom)", "tok/s"), "TOKENS_PER_SEC_NEEDED",
                          {"requests_per_minute": inp["IP_RPM"], "tokens_per_request": inp["IP_OutTokens"],
                           "headroom": inp["IP_Headroom"]}, fmt=st.TOK_S, key=True, label="Tokens/s needed")
    res["per_req"] = book.calc(ws, row("Speed one response needs for the latency target", "tok/s"),
                             "TOKENS_PER_SEC_PER_REQUEST", {"tokens_per_request": inp["IP_OutTokens"],
                                                            "latency_s": inp["IP_Latency"]},
                             fmt=st.TOK_S, label="Tokens/s per request")
    lat = res["lat"]
    res["meets"] = book.glue(ws, row("Meets the latency target?"), f'IF(1000/{lat.coord}>={res["per_req"].coord},'
                           f'"Yes","No")', lambda get: "Yes" if 1000 / get(lat) >= get(res["per_req"]) else "No",
                           label="Meets latency")
    res["gpus_tp"] = book.calc(ws, row("GPUs needed for the throughput", "GPUs"), "INSTANCES_NEEDED",
                             {"tokens_per_sec_needed": res["need"], "tokens_per_sec_per_instance": res["tps"]},
                             fmt="#,##0", key=True, label="GPUs needed")
    res["inst"] = book.calc(ws, row("Instances needed", "instances"), "INSTANCES_NEEDED",
                          {"tokens_per_sec_needed": res["need"],
                           "tokens_per_sec_per_instance": product(res["tps"], inp["IP_GPUsPerInstance"])},
                          fmt="#,##0", key=True, label="Instances needed")
    res["mem"] = book.calc(ws, row("Memory to serve (weights + KV allowance)", "GB"), "GPU_MEMORY",
                         {"model_or_params": params, "precision": inp["IP_Precision"], "optimizer": Lit("none")},
                         fmt=st.GB, label="Memory to serve")
    res["copy"] = book.calc(ws, row("GPUs to hold one copy of the model", "GPUs"), "GPUS_NEEDED",
                          {"memory_gb": res["mem"], "gpu_or_capacity": gpu, "headroom_gb": inp["IP_Headroom_GB"]},
                          fmt="#,##0", label="GPUs per model copy")
    res["fits"] = book.glue(ws, row("Fits on one GPU?"), f'IF({res["copy"].coord}=1,"Yes","No")',
                          lambda get: "Yes" if get(res["copy"]) == 1 else "No", label="Fits on one GPU")
    inst, per = res["inst"], inp["IP_GPUsPerInstance"]
    res["gpus"] = book.glue(ws, row("GPUs provisioned (instances x GPUs)", "GPUs"), f"{inst.coord}*{per.coord}",
                          lambda get: get(inst) * get(per), fmt="#,##0", label="GPUs provisioned")
    hours = inp["IP_HoursPerMonth"]
    res["cloud_m"] = book.calc(ws, row("Monthly cost, cloud", "$/month"), "JOB_COST",
                             {"usd_per_hour": product(res["gpus"], inp["IP_CloudRate"]), "hours": hours},
                             fmt=st.USD0, key=True, label="Monthly cost, cloud")
    res["owned_h"] = book.calc(ws, row("Owned cost per used GPU-hour", "$/GPU-hour"), "OWNED_COST_PER_GPU_HOUR",
                             {"hardware_cost_usd": inp["IP_HardwareCost"], "lifetime_years": inp["IP_Lifetime"],
                              "power_w": inp["IP_PowerW"], "usd_per_kwh": inp["IP_Kwh"],
                              "utilization": inp["IP_Utilization"]}, fmt=st.USD, label="Owned $/GPU-hour")
    res["owned_m"] = book.calc(ws, row("Monthly cost, owned (used hours)", "$/month"), "JOB_COST",
                             {"usd_per_hour": product(res["gpus"], res["owned_h"]),
                              "hours": product(hours, inp["IP_Utilization"])},
                             fmt=st.USD0, key=True, label="Monthly cost, owned")
    res["c1m"] = book.calc(ws, row("Owned cost per 1M output tokens (lesson model)", "$ per 1M"),
                         "COST_PER_1M_TOKENS",
                         {"hardware_cost_usd": inp["IP_HardwareCost"], "utilization": inp["IP_Utilization"],
                          "tokens_per_sec": res["tps"], "lifetime_years": inp["IP_Lifetime"],
                          "usd_per_kwh": inp["IP_Kwh"], "power_w": inp["IP_PowerW"]},
                         fmt='"$"#,##0.0000', label="Owned $ per 1M output tokens")
    rpm, tin, tout = inp["IP_RPM"], inp["IP_InTokens"], inp["IP_OutTokens"]
    res["tok_m"] = book.glue(ws, row("Tokens per month (input + output)", "tokens"),
                           f"{rpm.coord}*60*{hours.coord}*({tin.coord}+{tout.coord})",
                           lambda get: get(rpm) * 60 * get(hours) * (get(tin) + get(tout)), fmt="#,##0",
                           label="Tokens per month")
    res["share"] = book.glue(ws, row("Input share of tokens"), f"{tin.coord}/({tin.coord}+{tout.coord})",
                           lambda get: get(tin) / (get(tin) + get(tout)), fmt="0.0%", label="Input share")
    res["cloud_1m"] = book.glue(ws, row("Cloud cost per 1M tokens served (all tokens)", "$ per 1M"),
                              f'{res["cloud_m"].coord}/{res["tok_m"].coord}*1000000',
                              lambda get: get(res["cloud_m"]) / get(res["tok_m"]) * 1e6, fmt='"$"#,##0.0000',
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
                            fmt="#,##0", label="API break-even tokens/month")
    cm_, om, am = res["cloud_m"], res["owned_m"], res["api_m"]
    book.glue(ws, row("Cheapest option this month"),
              f'IF(MIN({cm_.coord},{om.coord},{am.coord})={cm_.coord},"Cloud",'
              f'IF(MIN({cm_.coord},{om.coord},{am.coord})={om.coord},"Owned","API"))',
              lambda get: ("Cloud" if min(get(cm_), get(om), get(am)) == get(cm_) else
                           "Owned" if min(get(cm_), get(om), get(am)) == get(om) else "API"),
              key=True, label="Cheapest")
    # architecture-aware costs per input/output token exist as worksheet functions only
    for fn, label in (("COST_PER_1M_INPUT_TOKENS", "Cloud $ per 1M input tokens (architecture-aware)"),
                      ("COST_PER_1M_OUTPUT_TOKENS", "Cloud $ per 1M output tokens (architecture-aware)")):
        book.addin_only(label, fn, {"usd_per_gpu_hour": inp["IP_CloudRate"], "model": inp["IP_Model"], "gpu": gpu,
                                    "precision": inp["IP_Precision"], "prompt_tokens": tin, "output_tokens": tout,
                                    "batch": inp["IP_Batch"]}, '"$"#,##0.0000')
    # the serving-capacity model (continuous batching, latency target, engine) has no native formula
    lat_in = inp["IP_Latency"]
    tpot = Expr(lambda s: f"{lat_in.ref(s)}*1000/{tout.ref(s)}", lambda get: 0)
    shape = {"model": inp["IP_Model"], "gpu": gpu, "precision": inp["IP_Precision"], "prompt_tokens": tin,
             "output_tokens": tout}
    book.addin_only("Serving throughput per model copy at the latency target (serving model)", "SERVING_THROUGHPUT",
                    {**shape, "max_tpot_ms": tpot}, st.TOK_S)
    book.addin_only("Concurrent requests per copy at that point (serving model)", "SERVING_BATCH",
                    {**shape, "max_tpot_ms": tpot}, "#,##0")
    book.addin_only("GPUs for the traffic at the latency target (serving model)", "GPUS_FOR_TRAFFIC",
                    {"model": inp["IP_Model"], "gpu": gpu, "requests_per_minute": rpm, "prompt_tokens": tin,
                     "output_tokens": tout, "max_tpot_ms": tpot, "precision": inp["IP_Precision"],
                     "headroom": inp["IP_Headroom"]}, "#,##0")
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
