"""Calling a worksheet function as Excel does (udfs.api.registry.call), and the Excel error a bad call answers."""

import pytest

from udfs.api import registry
from udfs.errors import FlopsheetError


def call(name, *args, **kw):
    return registry.call(name, *args, **kw)


def error(name, *args, **kw) -> FlopsheetError:
    """The FlopsheetError the call raises (the test fails if it answers instead)."""
    with pytest.raises(FlopsheetError) as e:
        registry.call(name, *args, **kw)
    return e.value
