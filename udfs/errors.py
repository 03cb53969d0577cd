"""The one error type every worksheet function raises.

Each error carries the Excel error value that a spreadsheet user would expect
(#VALUE! for wrong types, #NUM! for numbers out of range, #N/A for names that
are not in a catalog) and a message written for that user, never a traceback.
"""

from __future__ import annotations

EXCEL_ERRORS = ("#NULL!", "#DIV/0!", "#VALUE!", "#REF!", "#NAME?", "#NUM!", "#N/A",
                "#GETTING_DATA", "#SPILL!", "#CALC!", "#FIELD!", "#BLOCKED!", "#UNKNOWN!",
                "#CONNECT!", "#BUSY!")


class FlopsheetError(ValueError):
    """A bad input or an impossible request, with the Excel error it maps to."""

    def __init__(self, message: str, code: str = "#VALUE!"):
        super().__init__(message)
        self.message = message
        self.code = code

    def __str__(self) -> str:  # what the CLI and the add-ins show
        return f"{self.code}: {self.message}"


def value_error(message: str) -> FlopsheetError:
    return FlopsheetError(message, "#VALUE!")


def num_error(message: str) -> FlopsheetError:
    return FlopsheetError(message, "#NUM!")


def na_error(message: str) -> FlopsheetError:
    return FlopsheetError(message, "#N/A")
