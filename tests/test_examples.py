"""Every worked example declared in the registry, checked against the engine. The
expected figures are hand-checked (written down from arithmetic, not from the code)."""

import pytest

import udfs
from udfs.api.table import Table

from .numeric import matches_shown

CASES = [(fn.name, args, expected) for fn in udfs.functions().values() for args, expected in fn.examples]


@pytest.mark.parametrize("name,args,expected", CASES, ids=[f"{c[0]}{c[1]}" for c in CASES])
def test_declared_example(name, args, expected):
    result = udfs.call(name, *args)
    if expected is None:           # a table example: it must build, with a header
        assert isinstance(result, Table) and result.header and result.rows
    else:
        assert matches_shown(result, expected), f"{name}{args} = {result!r}, expected {expected!r}"


def test_every_function_has_an_example(registry):
    missing = [f.name for f in registry.values() if not f.examples]
    assert not missing, f"functions without a worked example: {missing}"


def test_every_function_states_units_and_help(registry):
    for fn in registry.values():
        assert fn.unit and len(fn.help) > 20, fn.name
        for arg in fn.args:
            assert arg.help, (fn.name, arg.name)
            if arg.type in ("number", "count") and arg.name not in ("headroom",):
                assert arg.unit, f"{fn.name}.{arg.name} has no unit"
