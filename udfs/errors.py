"""The one error type every worksheet function raises.

Each error carries the Excel error value that a spreadsheet user would expect
(#VALUE! for wrong types, #NUM! for numbers out of range, #N/A for names that
are not in a catalog) and a message written for that user, never a traceback. A message
shows a user's input through `quote` (a short prefix, never a whole 100,000-character
cell) and is never longer than MESSAGE_LIMIT characters.
"""

from __future__ import annotations

EXCEL_ERRORS = ("#NULL!", "#DIV/0!", "#VALUE!", "#REF!", "#NAME?", "#NUM!", "#N/A",
                "#GETTING_DATA", "#SPILL!", "#CALC!", "#FIELD!", "#BLOCKED!", "#UNKNOWN!",
                "#CONNECT!", "#BUSY!")
QUOTE_LIMIT = 40          # characters of an input a message shows
MESSAGE_LIMIT = 500       # the longest message a cell, the CLI or a log line gets


def quote(value, limit: int = QUOTE_LIMIT) -> str:
    """repr() of an input, cut to `limit` characters with its full length noted."""
    if isinstance(value, int) and not isinstance(value, bool) and abs(value) >= 10 ** limit:
        return f"a {len(str(abs(value)))}-digit number"
    try:
        text = repr(value)
    except Exception:  # noqa: BLE001 - repr of a hostile object must not hide the real error
        return f"a {type(value).__name__}"
    if len(text) <= limit:
        return text
    size = f"{len(value):,} characters" if isinstance(value, str) else type(value).__name__
    return f"{text[:limit]}... ({size})"


def clip(message: str, limit: int = MESSAGE_LIMIT) -> str:
    """A message no longer than `limit` (the backstop behind `quote`)."""
    return message if len(message) <= limit else message[:limit - 3] + "..."


class FlopsheetError(ValueError):
    """A bad input or an impossible request, with the Excel error it maps to."""

    def __init__(self, message: str, code: str = "#VALUE!"):
        message = clip(message, MESSAGE_LIMIT - len(code) - 2)
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


class MissingFigure(FlopsheetError):
    """#N/A: a catalog figure a calculation needs is not known (never replaced by a default).
    The picker and the report read `figure` and `subject` to mark the option not comparable."""

    def __init__(self, figure: str, subject: str, needed_for: str, how: str):
        super().__init__(f"{needed_for} needs {figure} of {subject}, which the catalog does not have: {how}", "#N/A")
        self.figure, self.subject, self.needed_for, self.how = figure, subject, needed_for, how


def given(value: float | None, what: str) -> float:
    """A figure the inputs guarantee (a serving scenario's traffic, a priced row's monthly cost):
    the number, or a clear #NUM! naming it (never a TypeError) if it ever arrives blank."""
    if value is None:
        raise num_error(f"{what} is needed here and was not given")
    return value
