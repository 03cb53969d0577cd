"""What Excel's custom-functions runtime (Office.js) must receive back, shared by the xlwings
Server tests and the xlwings Lite (Pyodide) tests: the engine's own answer, and a comparison
that knows how xlwings writes numbers, blanks and error cells."""


from udfs.api import registry
from udfs.errors import FlopsheetError
from udfs.api.table import Table

from .numeric import same_number

ERROR_TYPES = {"#DIV/0!": "Div0", "#N/A": "NotAvailable", "#NAME?": "Name", "#NULL!": "Null",
               "#NUM!": "Num", "#REF!": "Ref", "#VALUE!": "Value"}


def expected_cells(result):
    """The engine's answer as Office.js must get it (2-D, errors as Excel error objects)."""
    if isinstance(result, Table):
        return result.to_list()
    if isinstance(result, list):
        return result
    return [[result]]


def same(actual, expected) -> bool:
    if isinstance(expected, list):
        return (isinstance(actual, list) and len(actual) == len(expected)
                and all(same(a, e) for a, e in zip(actual, expected)))
    if isinstance(expected, str) and expected in ERROR_TYPES:
        return actual == {"type": "Error", "errorType": ERROR_TYPES[expected]}
    if isinstance(expected, (int, float)) and isinstance(actual, (int, float)):
        return same_number(actual, expected, rel=1e-12)
    if expected is None:
        return actual in ("", None)
    return actual == expected


def engine(fn, *args):
    """(200, cells) or (400, message) from the engine itself."""
    try:
        return 200, expected_cells(registry.call_array(fn, *args))
    except FlopsheetError as e:
        return 400, str(e)
