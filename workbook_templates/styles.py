"""Shared look of every template: input cells yellow and unlocked, formula cells locked,
number formats for dollars, GB and tokens/s, headers and notes."""

from __future__ import annotations

from openpyxl.styles import Alignment, Border, Font, PatternFill, Protection, Side

USD = '"$"#,##0.00'
USD0 = '"$"#,##0'
GB = '0.0" GB"'
GIB = '0.0" GB"'
TOK_S = '#,##0.0" tok/s"'
MS = '0.00" ms"'
HOURS = '#,##0.0" h"'
DAYS = '#,##0.0" days"'
INT = '#,##0'
FRACTION = '0%'
PLAIN = 'General'
NUMBER = '#,##0.00'
SCI = '0.00E+00'
TFLOPS = '#,##0.0" TFLOPS"'
TBS = '0.000" TB/s"'
FACTOR = '0.00"x"'

INPUT_FILL = PatternFill("solid", fgColor="FFF2CC")       # pale yellow: type here
INPUT_BORDER = Border(*(Side(style="thin", color="BF9000"),) * 4)
OUTPUT_FILL = PatternFill("solid", fgColor="E2EFDA")      # pale green: key results
HEADER_FILL = PatternFill("solid", fgColor="1F4E78")
HEADER_FONT = Font(bold=True, color="FFFFFF")
TITLE_FONT = Font(bold=True, size=16, color="1F4E78")
SECTION_FONT = Font(bold=True, size=12, color="1F4E78")
NOTE_FONT = Font(italic=True, size=9, color="595959")
BOLD = Font(bold=True)
WRAP = Alignment(wrap_text=True, vertical="top")
LOCKED = Protection(locked=True)
UNLOCKED = Protection(locked=False)


def style_input(cell, number_format: str | None = None):
    cell.fill = INPUT_FILL
    cell.border = INPUT_BORDER
    cell.protection = UNLOCKED
    if number_format:
        cell.number_format = number_format


def style_output(cell, number_format: str | None = None, key: bool = False):
    cell.protection = LOCKED
    cell.alignment = Alignment(horizontal="right")
    if key:
        cell.fill = OUTPUT_FILL
        cell.font = BOLD
    if number_format:
        cell.number_format = number_format


def style_header_row(ws, row: int, first_col: int, last_col: int):
    for c in range(first_col, last_col + 1):
        cell = ws.cell(row=row, column=c)
        cell.fill = HEADER_FILL
        cell.font = HEADER_FONT
        cell.alignment = Alignment(wrap_text=True, vertical="center")


def set_widths(ws, widths: dict[str, float]):
    for col, width in widths.items():
        ws.column_dimensions[col].width = width


def bar_chart(title: str, data, categories, *, horizontal: bool = True, height: float = 10, width: float = 16,
              number_format: str | None = None, titles_from_data: bool = True, legend: bool = False):
    """A native bar (horizontal) or column chart of one data block against its category labels,
    the shape every workbook and the report use; callers add their own extra touches."""
    from openpyxl.chart import BarChart
    chart = BarChart()
    chart.type = "bar" if horizontal else "col"
    chart.title = title
    chart.add_data(data, titles_from_data=titles_from_data)
    chart.set_categories(categories)
    if number_format:
        chart.y_axis.numFmt = number_format
    if not legend:
        chart.legend = None
    chart.height, chart.width = height, width
    return chart
