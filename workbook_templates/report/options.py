"""The Options sheet (every option: GPU x count x rent or own, best first, with a 'vs best'
formula) and the same table as CSV (`flopsheet report --csv`)."""

from __future__ import annotations

import csv
import io

from openpyxl import Workbook

from udfs.planning.reasons import Status
from udfs.planning.report_model import Result
from udfs.planning.scenario import Scenario

from .. import styles as st
from .cells import column_letter, cost_label, header_row, put, sheet_title

TITLE = "Options"
PRINT_PARTIAL = True        # wide: only the columns that fit one page wide print (printing.setup partial)


def option_columns(sc: Scenario) -> list[tuple[str, str, object]]:
    """(header, number format, getter) of the Options table and the CSV."""
    cols = [("Rank", st.INT, lambda r: r.rank), ("GPU", "", lambda r: r.gpu), ("GPUs", st.INT, lambda r: r.count),
            ("Systems x GPUs", "", lambda r: f"{r.units:,} x {r.purchase_unit}" if r.units else ""),
            ("Count rule", "", lambda r: "auto (fewest)" if r.auto_count else "scenario count"),
            ("Rent or own", "", lambda r: r.basis), ("Verdict", "", verdict),
            ("Fits in memory", "", lambda r: "yes" if r.fits else "no")]
    if sc.serving:
        cols += [("Capacity (tokens/s)", st.TOK_S, lambda r: r.capacity_tps),
                 ("Tokens/s per request", st.TOK_S, lambda r: r.per_request_tps),
                 ("Seconds per request", '0.0" s"', lambda r: r.seconds_per_request),
                 ("Spare copies", st.INT, lambda r: r.spare_copies),
                 ("First token: p95 slot wait + mean", '0.00" s"',
                  lambda r: r.ttft_p95_ms / 1000 if r.ttft_p95_ms is not None else None),
                 ("Latency: p95 slot wait + mean", '0.0" s"', lambda r: r.latency_p95_s)]
    else:
        cols += [("Days", st.DAYS, lambda r: r.days), ("GPU-hours", st.INT, lambda r: r.gpu_hours),
                 ("Scale-out efficiency", st.FRACTION, lambda r: r.scale_efficiency)]
    cur = sc.currency             # money in the report's currency (Currency.maybe converts), the CSV too
    sym, usd0, usd2 = cur.symbol, cur.number_format(), cur.number_format(2)
    cols += [(f"{sym} per GPU-hour", usd2, lambda r: cur.maybe(r.rate)),
             (cost_label(sc), usd0, lambda r: cur.maybe(r.total_cost))]
    if sc.serving:
        cols.append((f"{sym} per 1M output tokens", usd2, lambda r: cur.maybe(r.cost_per_1m)))
    else:
        cols.append((f"Cash per month held ({sym})", usd0, lambda r: cur.maybe(r.monthly_cost)))
    cols += [(f"Cost low ({sym})", usd0, lambda r: cur.maybe(r.cost_range[0]) if r.cost_range else None),
             (f"Cost high ({sym})", usd0, lambda r: cur.maybe(r.cost_range[1]) if r.cost_range else None),
             ("Evidence", "", lambda r: "" if r.evidence is None else r.evidence.label),
             ("Measured rows in its regime", st.INT, lambda r: r.evidence.rows if r.evidence else None)]
    cols += [(f"Capex ({sym})", usd0, lambda r: cur.maybe(r.capex)),
             ("GPU-hours rented" + (" a month" if sc.serving else ""), st.INT, lambda r: r.rented_hours),
             ("Break-even month (own vs rent)", st.INT, lambda r: r.breakeven_month)]
    cols += [("Why it fails / note", "", lambda r: cur.usd_marked(r.reason.text()) if r.reason else ""),
             ("Price basis", "", lambda r: cur.usd_marked(r.rate_note))]
    return cols


def verdict(r) -> str:
    return "OK" if r.ok else "unverified" if r.reason.status is Status.UNVERIFIED else "fails"


def write(wb: Workbook, res: Result):
    sc = res.scenario
    ws = wb.create_sheet(TITLE)
    sheet_title(ws, "Every option: GPU x count x rent or own",
           "Sorted best first; options that fail a constraint are at the bottom with the reason, the unverified (no "
           "measured row in their regime) first among them. Cost low / high: the cost over the regime's P10..P90 "
           "measured error. 'vs best' is a formula: this option's cost over the recommendation's.")
    all_cols = option_columns(sc)
    basis = next(c for c in all_cols if c[0] == "Price basis")
    cols = [c for c in all_cols if c is not basis]      # on the sheet the price basis comes last (not printed)
    head = 4
    names = [c[0] for c in cols]
    cost_col = names.index(cost_label(sc)) + 1
    vs_col = len(cols) + 1
    header_row(ws, head, names + ["vs best", basis[0]])
    best_ref = None
    for i, r in enumerate(res.rows):
        row = head + 1 + i
        for j, (_, fmt, get) in enumerate(cols, start=1):
            v = get(r)
            put(ws, row, j, v if v is not None else None, fmt or None)
        if not r.ok:
            for j in range(1, len(cols) + 1):
                ws.cell(row=row, column=j).font = st.NOTE_FONT
        elif best_ref is None:
            best_ref = f"${column_letter(cost_col)}${row}"
            for j in range(1, len(cols) + 1):
                ws.cell(row=row, column=j).fill = st.OUTPUT_FILL
        if best_ref and r.ok and r.total_cost is not None:
            c = ws.cell(row=row, column=vs_col, value=f"=IF({best_ref}>0,{column_letter(cost_col)}{row}/{best_ref},\"\")")
            c.number_format = st.FACTOR
        if not r.ok:
            put(ws, row, vs_col + 1, basis[2](r)).font = st.NOTE_FONT
        else:
            put(ws, row, vs_col + 1, basis[2](r))
        for j in (names.index("Why it fails / note") + 1, vs_col + 1):
            ws.cell(row=row, column=j).alignment = st.WRAP
    widths = {"A": 5, "B": 17, "C": 6, "D": 12, "E": 7, "F": 7, "G": 8}
    wide = {"Why it fails / note": 22, cost_label(sc): 12, "Capacity (tokens/s)": 13}
    for j, (name, _, _) in enumerate(cols, start=1):
        letter = column_letter(j)
        if letter not in widths:
            widths[letter] = wide.get(name, 10)
    widths[column_letter(vs_col)] = 7
    widths[column_letter(vs_col + 1)] = 40
    st.set_widths(ws, widths)
    ws.freeze_panes = ws.cell(row=head + 1, column=3)
    ws.auto_filter.ref = f"A{head}:{column_letter(vs_col + 1)}{head + len(res.rows)}"
    ws.print_title_rows = f"{head}:{head}"



def options_csv(res: Result) -> str:
    cols = option_columns(res.scenario)
    buf = io.StringIO()
    w = csv.writer(buf, lineterminator="\n")
    w.writerow([c[0] for c in cols])
    for r in res.rows:
        vals = []
        for _, _, get in cols:
            v = get(r)
            # a CSV opened in a spreadsheet must not run user text as a formula
            if isinstance(v, str) and v.startswith(("=", "+", "-", "@")):
                v = "'" + v
            vals.append("" if v is None else v)
        w.writerow(vals)
    return buf.getvalue()

