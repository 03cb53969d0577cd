"""Tables returned by worksheet functions: a header row and data rows (plain lists, so
they spill into Excel as 2-D arrays); `to_frame` gives pandas where a caller wants it."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Table:
    header: list[str]
    rows: list[list]

    def to_list(self) -> list[list]:
        """The spill form: header row first; missing values as empty strings."""
        return [list(self.header)] + [["" if v is None else v for v in row] for row in self.rows]

    def to_records(self) -> list[dict]:
        return [dict(zip(self.header, row)) for row in self.rows]

    def to_frame(self):
        try:  # imported here only: the engine stays standard-library (and runs in Pyodide)
            import pandas as pd
        except ImportError:
            raise ImportError("Table.to_frame needs pandas: pip install 'flopsheet[pandas]' "
                              "(to_list() and to_records() need nothing)") from None
        return pd.DataFrame(self.rows, columns=self.header)
