"""Print set-up for every visible sheet: one page wide, landscape only where the sheet is
wider than a portrait page, header rows repeated, nothing printed under 8 pt.

Fit-to-width shrinks the whole sheet; the scale it needs is estimated from the column widths
(and charts) in the print area, as LibreOffice converts widths to points. A sheet whose
smallest font would print under 8 pt must be made narrower by its writer; only wide catalog
tables (`partial=True`) may instead print their leading columns, and their page header says so.
"""

from __future__ import annotations

from openpyxl.utils import get_column_letter
from openpyxl.utils.cell import column_index_from_string, coordinate_from_string
from openpyxl.worksheet.pagebreak import Break

import udfs

MIN_PT = 8.0
PAPER = {"portrait": 595.0, "landscape": 842.0}     # A4 width in points
MARGIN_IN = 0.3
PT_PER_WIDTH_UNIT = 7.0
DEFAULT_FONT_PT = 11.0
EMU_PER_PT = 12700


def column_pt(ws, column: int) -> float:
    """Printed width of a column in points. LibreOffice prints a width unit as 7 pt, Excel as
    about 5.25 pt: planning with the wider keeps the text >= 8 pt in both."""
    dim = ws.column_dimensions.get(get_column_letter(column))
    if dim is not None and dim.hidden:
        return 0.0
    return PT_PER_WIDTH_UNIT * _width(ws, column)


def printable_pt(orientation: str) -> float:
    return PAPER[orientation] - 2 * 72 * MARGIN_IN


def _chart_right_pt(ws) -> float:
    """How far right the sheet's charts reach, in points from column A."""
    right = 0.0
    for chart in ws._charts:
        first = _anchor(chart)[0]
        offset = 0 if isinstance(chart.anchor, str) else chart.anchor._from.colOff
        left = sum(column_pt(ws, c) for c in range(1, first)) + offset / EMU_PER_PT
        right = max(right, left + chart.width * 72 / 2.54)
    return right


def _anchor(chart) -> tuple[int, int]:
    """(column, row) of a chart's top-left cell, 1-based."""
    if isinstance(chart.anchor, str):
        letters, row = coordinate_from_string(chart.anchor)
        return column_index_from_string(letters), row
    return chart.anchor._from.col + 1, chart.anchor._from.row + 1


def _chart_pages(ws) -> None:
    """A chart below the cells starts a new page: never cut in two, never a page holding only its edge
    (a chart under the title alone stays on the first page)."""
    for chart in ws._charts:
        column, row = _anchor(chart)
        if column == 1 and row > 5 and all(b.id != row - 1 for b in ws.row_breaks.brk):
            ws.row_breaks.append(Break(id=row - 1))


def _chart_last_row(ws) -> int:
    """The last row a chart covers (rows of the default 15 pt height below its anchor)."""
    last = 0
    for chart in ws._charts:
        last = max(last, _anchor(chart)[1] + int(chart.height * 72 / 2.54 / 15) + 1)
    return last


def _chart_last_column(ws) -> int:
    right, column, total = _chart_right_pt(ws), 0, 0.0
    while total < right:
        column += 1
        total += column_pt(ws, column)
    return column


def content_pt(ws, last_column: int | None = None) -> float:
    last = last_column or ws.max_column
    return max(sum(column_pt(ws, c) for c in range(1, last + 1)), _chart_right_pt(ws))


def smallest_font(ws) -> float:
    sizes = [cell.font.sz for row in ws.iter_rows() for cell in row
             if cell.value is not None and cell.font is not None and cell.font.sz]
    return min(sizes, default=DEFAULT_FONT_PT)


def printed_font(ws) -> float:
    """The smallest font as printed once fit-to-width has shrunk the sheet."""
    orientation = ws.page_setup.orientation or "portrait"
    last = _print_last_column(ws)
    scale = min(1.0, printable_pt(orientation) / max(content_pt(ws, last), 1.0))
    return smallest_font(ws) * scale


def _print_last_column(ws) -> int:
    if ws.print_area:
        ref = ws.print_area[0] if isinstance(ws.print_area, (list, tuple)) else ws.print_area
        last = ref.split("!")[-1].split(":")[-1].replace("$", "")
        return column_index_from_string(coordinate_from_string(last)[0])
    return ws.max_column


def _columns_that_fit(ws, budget_pt: float) -> int:
    total, last = 0.0, 0
    for c in range(1, ws.max_column + 1):
        total += column_pt(ws, c)
        if total > budget_pt:
            break
        last = c
    return max(last, 1)


def _width(ws, column: int) -> float:
    dim = ws.column_dimensions.get(get_column_letter(column))
    return dim.width if dim is not None and dim.width else 8.43


def fit_row_heights(ws) -> None:
    """Rows tall enough for their wrapped text (neither Excel nor LibreOffice re-measures rows
    on opening a file, so wrapped text would overlap the next row)."""
    merged = {(r.min_row, r.min_col): r.max_col for r in ws.merged_cells.ranges}
    need: dict[int, float] = {}
    for row in ws.iter_rows():
        for cell in row:
            if not isinstance(cell.value, str) or not (cell.alignment and cell.alignment.wrap_text):
                continue
            last = merged.get((cell.row, cell.column), cell.column)
            size = (cell.font.sz if cell.font is not None and cell.font.sz else DEFAULT_FONT_PT)
            per_line = max(1, int(sum(_width(ws, c) for c in range(cell.column, last + 1)) * 0.9 * 11 / size))
            lines = sum(-(-len(part) // per_line) or 1 for part in cell.value.split("\n"))
            need[cell.row] = max(need.get(cell.row, 0.0), lines * size * 1.25 + 3)
    for r, height in need.items():
        if (ws.row_dimensions[r].height or 0) < height:
            ws.row_dimensions[r].height = height


def setup(ws, *, title_rows: str | None = None, partial: bool = False) -> None:
    """Page set-up of one visible sheet (see the module docstring)."""
    fit_row_heights(ws)
    width = content_pt(ws)
    ws.page_setup.orientation = "portrait" if width <= printable_pt("portrait") else "landscape"
    ws.page_setup.paperSize = ws.PAPERSIZE_A4
    ws.sheet_properties.pageSetUpPr.fitToPage = True
    ws.page_setup.fitToWidth = 1
    ws.page_setup.fitToHeight = 0
    ws.print_options.gridLines = False
    ws.page_margins.left = ws.page_margins.right = MARGIN_IN
    ws.page_margins.top = ws.page_margins.bottom = 0.55
    ws.page_margins.header = ws.page_margins.footer = 0.25
    ws.HeaderFooter.scaleWithDoc = False            # header and footer keep their size when the sheet shrinks
    ws.oddFooter.center.text = "&A - page &P of &N"
    ws.oddHeader.right.text = f"Flopsheet {udfs.__version__}"
    if title_rows:
        ws.print_title_rows = title_rows
    budget = printable_pt("landscape") * smallest_font(ws) / MIN_PT
    last = ws.max_column
    if width > budget and partial:
        last = _columns_that_fit(ws, budget)
        ws.oddHeader.left.text = (f"Printed: columns A-{get_column_letter(last)}; "
                                  "the other columns are on screen")
    _chart_pages(ws)
    # an explicit area (cells and charts): nothing outside it can add a blank page
    ws.print_area = f"A1:{get_column_letter(max(last, _chart_last_column(ws)))}{max(ws.max_row, _chart_last_row(ws))}"
