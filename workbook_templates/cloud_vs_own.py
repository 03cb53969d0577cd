"""Cloud vs own: total cost of owning a GPU (capital with a cost of capital, power x PUE,
opex) against renting the hours used, the break-even utilization, hours and months, and a
chart of cumulative cost over the lifetime."""

from __future__ import annotations

from openpyxl.chart import LineChart, Reference

from udfs.physics.economics import NETWORK_SHARE, SYSTEM_POWER_FACTOR, USD_PER_KW_MONTH, Ownership

from . import styles as st
from .common import Book, Expr

KEY = "cloud_vs_own"
FILENAME = "cloud_vs_own.xlsx"
TITLE = "Cloud vs own"
STEPS = 12          # the cumulative-cost table and chart: the lifetime in twelve equal steps

def lookup(attr: str, gpu: str) -> str:
    """A catalog figure of the GPU chosen ("n/a" where the catalog has none: nothing guessed)."""
    look = f"INDEX(CatGpu_{attr},MATCH({gpu},CatGpuNames,0))"
    return f'IF({look}="","n/a",{look})'


GPU_CELL = "B16"
# defaults: today's catalog for the GPU chosen (as the report prices owning and renting it)
CATALOG_INPUTS = {"CO_HardwareCost": "=" + lookup("system_price_usd", GPU_CELL),
                  "CO_PowerW": "=" + lookup("tdp_w", GPU_CELL), "CO_CloudRate": "=" + lookup("od_usd_per_gpu_hour",
                                                                                            GPU_CELL)}
# the lesson's Q6: an A100 at $12,000 against $5.12/GPU-hour on AWS, 70% for 3 years, the lesson's power model
PRESETS = {"lesson": {"CO_Scenario": "A100 80GB: buy or rent (lesson Q6)", "CO_HardwareCost": 12000,
                      "CO_PowerW": 400, "CO_PUE": 1.0, "CO_CostOfCapital": 0.0, "CO_CloudRate": 5.12}}

ALT_INPUTS = {"CO_HardwareCost": 30000, "CO_Lifetime": 4, "CO_PowerW": 700, "CO_PUE": 1.4, "CO_Kwh": 0.15,
              "CO_Utilization": 0.55, "CO_CostOfCapital": 0.08, "CO_Residual": 3000, "CO_Opex": 800,
              "CO_CloudRate": 6.88, "CO_GPU": "H100 SXM 80GB"}


def build(path, inputs: dict | None = None) -> Book:
    from udfs.api.functions import common as cm
    from udfs.api.functions import economics as e
    book = Book(KEY, TITLE,
                "Decide whether to rent cloud GPUs or buy them: the total cost of ownership over the hardware's "
                "life against renting only the hours you use, the utilization and the number of months at which "
                "owning pays off, and the cumulative cost of both month by month.",
                ["Type the purchase price per GPU (with its share of the server), its life, power, PUE and "
                 "electricity price, and your cost of capital, resale value and other running costs.",
                 "Type the expected utilization (share of hours the GPU does useful work) and the cloud price "
                 "per GPU-hour you would otherwise pay.",
                 "Read the totals, the owned cost per used GPU-hour and the break-evens; the chart compares the "
                 "cumulative cost month by month.",
                 "Defaults are today's catalog for the GPU chosen: its all-in price per GPU in a server, TDP and "
                 "cheapest current on-demand rate, with the report's ownership defaults (PUE 1.58, 8% cost of "
                 "capital); type over any of them. The lesson's Q6 (an A100 at $12,000, $5.12/GPU-hour on AWS, 70% "
                 "for 3 years = 18,396 GPU-hours = $94,187.52 in the cloud) is the preset "
                 "flopsheet templates --preset lesson."],
                ["Money in US dollars; rates per GPU-hour.", "Power in watts per GPU; electricity in $/kWh; a year "
                 "is 8,760 hours.", "Utilization, PUE overhead and cost of capital as fractions (70% = 0.7)."],
                inputs=inputs)
    ws = book.sheet("Cloud vs own", "Cloud vs own: one GPU",
                    "Owned power is drawn every hour of the period (as in the lesson); cloud is paid only for the "
                    "hours used.")
    book.section(ws, 4, "Inputs")
    book.input(ws, 5, "Scenario name", "CO_Scenario", "A100 80GB: buy or rent (today's catalog)", text=True)
    gpu = book.input(ws, 16, "GPU (catalog prices)", "CO_GPU", "A100 SXM 80GB", choices="CatGpuNames",
                     help="The price, power and cloud rate default to this GPU's catalog figures (shown in column "
                          "E beside your inputs).")
    assert gpu.coord == GPU_CELL
    for r, attr, fmt in ((6, "system_price_usd", st.USD0), (8, "tdp_w", "#,##0"),
                         (15, "od_usd_per_gpu_hour", st.USD)):
        ws.cell(row=r, column=4, value="catalog:").font = st.NOTE_FONT

        def ref_value(get, attr=attr):
            from udfs.catalogs import catalog

            from .catalog_sheets import gpu_value
            v = gpu_value(catalog.gpu(get(gpu)), attr)
            return "n/a" if v is None else v
        book.glue(ws, f"E{r}", f'IF(INDEX(CatGpu_{attr},MATCH({gpu.coord},CatGpuNames,0))="","n/a",'
                  f'INDEX(CatGpu_{attr},MATCH({gpu.coord},CatGpuNames,0)))', ref_value, fmt=fmt,
                  label=f"Catalog {attr}")
    hw = book.input(ws, 6, "Purchase price per GPU (all-in)", "CO_HardwareCost", CATALOG_INPUTS["CO_HardwareCost"],
                    fmt=st.USD0, arg=cm.HARDWARE_COST_USD)
    life = book.input(ws, 7, "Lifetime / period", "CO_Lifetime", 3, fmt="0.0", unit="years", arg=cm.LIFETIME_YEARS)
    power = book.input(ws, 8, "Power per GPU", "CO_PowerW", CATALOG_INPUTS["CO_PowerW"], fmt="#,##0", unit="W",
                       arg=cm.POWER_W)
    pue = book.input(ws, 9, "PUE (facility overhead)", "CO_PUE", Ownership.pue, fmt="0.00", unit="x", arg=e.PUE)
    kwh = book.input(ws, 10, "Electricity price", "CO_Kwh", Ownership.usd_per_kwh, fmt='"$"0.000', unit="$/kWh",
                     arg=cm.USD_PER_KWH)
    util = book.input(ws, 11, "Utilization", "CO_Utilization", Ownership.utilization, fmt=st.FRACTION,
                      arg=e.UTIL_DEFAULT)
    rate = book.input(ws, 12, "Cost of capital", "CO_CostOfCapital", Ownership.cost_of_capital, fmt="0.0%",
                      unit="per year", arg=e.RATE)
    resid = book.input(ws, 13, "Resale value at the end", "CO_Residual", 0, fmt=st.USD0, arg=e.RESIDUAL)
    opex = book.input(ws, 14, "Other running cost", "CO_Opex", 0, fmt=st.USD0, unit="$/year", arg=e.OPEX)
    cloud = book.input(ws, 15, "Cloud price per GPU-hour", "CO_CloudRate", CATALOG_INPUTS["CO_CloudRate"], fmt=st.USD,
                       unit="$/GPU-hour", arg=cm.CLOUD_USD_PER_GPU_HOUR)

    book.section(ws, 17, "Results")
    ws["C16"] = "(catalog figures in column E)"
    ws["C16"].font = st.NOTE_FONT
    owned_args = {"hardware_cost_usd": hw, "power_w": power, "pue": pue, "usd_per_kwh": kwh,
                  "cost_of_capital": rate, "residual_value_usd": resid, "opex_usd_per_year": opex}
    rows = [
        (18, "GPU-hours used over the period", "GPU_HOURS", {"years": life, "utilization": util}, "#,##0", False),
        (19, "Cloud cost over the period", "CLOUD_COST", {"usd_per_gpu_hour": cloud, "years": life,
                                                          "utilization": util}, st.USD, True),
        (20, "Total cost of owning over the period (TCO)", "TCO", {**owned_args, "years": life}, st.USD, True),
        (22, "Owned cost per used GPU-hour", "OWNED_COST_PER_GPU_HOUR",
         {**owned_args, "lifetime_years": life, "utilization": util}, st.USD, True),
        (23, "Break-even utilization (own if above)", "BREAKEVEN_UTILIZATION",
         {**owned_args, "cloud_usd_per_gpu_hour": cloud, "lifetime_years": life}, "0.0%", True),
        (24, "Break-even months (simple payback)", "BREAKEVEN_MONTHS",
         {k: v for k, v in owned_args.items() if k not in ("cost_of_capital", "residual_value_usd")}
         | {"cloud_usd_per_gpu_hour": cloud, "utilization": util}, "#,##0.0", True),
        (25, "Break-even GPU-hours (purchase price only)", "BREAKEVEN_HOURS",
         {"hardware_cost_usd": hw, "cloud_usd_per_gpu_hour": cloud}, "#,##0", False),
    ]
    out = {}
    for r, label, fn, args, fmt, key in rows:
        ws.cell(row=r, column=1, value=label)
        out[r] = book.calc(ws, f"B{r}", fn, args, fmt=fmt, key=key, label=label)
    ws.cell(row=21, column=1, value="Owning saves (cloud - TCO)")
    book.glue(ws, "B21", "B19-B20", lambda get: get(out[19]) - get(out[20]), fmt=st.USD, key=True,
              label="Saving")

    # the data-centre view (the model the picker and the report use): server power, network, colocation
    ws.cell(row=18, column=4, value="Data-centre view").font = st.BOLD
    spower = book.input(ws, 19, "Server power per GPU", "CO_ServerPowerW",
                        f"={lookup('tdp_w', GPU_CELL)}*{SYSTEM_POWER_FACTOR!r}",
                        fmt="#,##0", unit="W", arg=e.SYSTEM_POWER, col=5, label_col=4)
    share = book.input(ws, 20, "Scale-out network share", "CO_NetworkShare", NETWORK_SHARE, fmt="0%",
                       arg=e.NETWORK, col=5, label_col=4)
    colo = book.input(ws, 21, "Colocation ($/kW-month)", "CO_ColoKwMonth", USD_PER_KW_MONTH, fmt=st.USD,
                      arg=e.COLOCATION, col=5, label_col=4)
    ws.cell(row=22, column=4, value="Cost per used GPU-hour")
    book.calc(ws, "E22", "DATACENTER_COST_PER_GPU_HOUR",
              {**{k: v for k, v in owned_args.items() if k != "power_w"}, "power_w": spower, "network_share": share,
               "usd_per_kw_month": colo, "lifetime_years": life, "utilization": util}, fmt=st.USD, key=True,
              label="Data-centre cost per used GPU-hour")
    ws.cell(row=23, column=4, value="(server price in B6; GPU TDP x 1.82; 0 colocation if you own the building)"
            ).font = st.NOTE_FONT

    # cumulative cost by month
    top = 28
    book.section(ws, top - 1, "Cumulative cost over the lifetime", header=["Month", "Cloud (cumulative)",
                                                                            "Owned (cumulative)"])
    for step in range(1, STEPS + 1):       # the horizon follows the lifetime input: its last row is its end
        r = top + step
        month = book.glue(ws, f"A{r}", f"{life.coord}*{12 // STEPS * step}",
                          lambda get, step=step: get(life) * (12 // STEPS * step), fmt=st.PLAIN,
                          label=f"Month of step {step}")
        years = Expr(lambda s, r=r: f"A{r}/12", lambda get, month=month: get(month) / 12)
        book.calc(ws, f"B{r}", "CLOUD_COST", {"usd_per_gpu_hour": cloud, "years": years, "utilization": util},
                  fmt=st.USD0, label=f"Cloud, step {step}", addin=False)
        book.calc(ws, f"C{r}", "TCO", {**owned_args, "years": years}, fmt=st.USD0, label=f"Owned, step {step}",
                  addin=False)
    st.set_widths(ws, {"A": 44, "B": 20, "C": 20, "D": 26, "E": 12})
    ws.freeze_panes = "A4"

    chart = LineChart()
    chart.title = "Cumulative cost: cloud vs owned"
    chart.y_axis.title = "$"
    chart.y_axis.numFmt = '"$"#,##0'
    chart.x_axis.title = "Month"
    chart.add_data(Reference(ws, min_col=2, max_col=3, min_row=top, max_row=top + STEPS), titles_from_data=True)
    chart.set_categories(Reference(ws, min_col=1, min_row=top + 1, max_row=top + STEPS))
    for s in chart.series:
        s.smooth = False
    st.readable_chart(chart)
    chart.height, chart.width = 10, 24                # below the table: the sheet prints one page wide
    book.chart(ws, chart, f"A{top + STEPS + 2}")
    return book.finish(path)
