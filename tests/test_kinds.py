"""Results declare their kind from one closed table and the output guard checks by kind (issue 19
item 3): not by matching words in free-text unit strings."""

from dataclasses import replace

import pytest

import udfs
from udfs.api import guard, kinds, registry
from udfs.catalogs import catalog
from udfs.errors import FlopsheetError

NON_NEGATIVE = [k for k, v in kinds.KINDS.items() if v.non_negative]


def test_every_function_declares_a_kind_from_the_closed_table():
    for fn in registry.functions().values():
        assert fn.kind in kinds.KINDS, fn.name
        assert (fn.kind == "table") == (fn.returns == "table"), fn.name


def test_a_declaration_with_an_unknown_kind_fails():
    with pytest.raises(ValueError, match="unknown result kind 'speed'"):
        registry.worksheet("NOT_A_FUNCTION", "x", "x", "x", [], kind="speed")(lambda: 0)
    assert "NOT_A_FUNCTION" not in registry.REGISTRY


@pytest.mark.parametrize("kind", NON_NEGATIVE)
def test_a_negative_result_of_a_non_negative_kind_is_num(kind):
    with pytest.raises(FlopsheetError, match=f"negative {kind}"):
        guard.check_result("F", kind, -1.5)
    with pytest.raises(FlopsheetError, match=f"negative {kind}"):
        guard.check_result("F", kind, [[1.0, -2.0]])
    assert guard.check_result("F", kind, 2.0) == 2.0


def test_text_and_flags_pass_and_nothing_is_inf_or_nan():
    assert guard.check_result("F", "text", "-5 is a name") == "-5 is a name"
    assert guard.check_result("F", "flag", False) is False
    for kind in kinds.KINDS:
        with pytest.raises(FlopsheetError, match="not a finite number"):
            guard.check_result("F", kind, float("nan"))


def test_the_declared_kind_decides_not_the_unit_words():
    """A rate (unit "tokens/s", no money or memory word) used to pass negative; a function whose
    unit has money words but whose result is text is not checked as money."""
    fn = registry.get("TOKENS_PER_SEC_NEEDED")
    assert fn.kind == "rate"
    negative = replace(fn, impl=lambda **kw: -3.0)
    with pytest.raises(FlopsheetError, match="TOKENS_PER_SEC_NEEDED: the result would be negative rate"):
        registry.call(negative, 100, 200)
    worded = replace(fn, impl=lambda **kw: -3.0, unit="$ cost price GB", kind="text")
    assert registry.call(worded, 100, 200) == -3.0


def test_a_catalog_field_is_checked_by_its_own_kind():
    with pytest.raises(FlopsheetError, match="negative money"):
        guard.check_result("GPU_SPEC", "field", -27500.0, "Price USD")
    assert guard.check_result("GPU_SPEC", "field", "H100 SXM 80GB", "name") == "H100 SXM 80GB"
    assert udfs.call("GPU_SPEC", "H100", "memory_gb") == 80


def test_every_catalog_field_has_a_kind():
    fields = catalog.GPU_FIELDS | catalog.MODEL_FIELDS | set(catalog.DERIVED_MODEL_FIELDS)
    assert sorted(f for f in fields if kinds.of_column(f) is None) == []


@pytest.mark.parametrize("name", [n for n, f in registry.functions().items() if f.returns == "table"])
def test_every_table_column_has_a_kind(name):
    fn = registry.get(name)
    for args, _ in fn.examples or [((),)]:
        table = udfs.call(name, *args)
        assert [c for c in table.header if kinds.of_column(c) is None] == [], name


def test_table_columns_are_checked_by_their_kind():
    table = udfs.call("GPU_MEMORY_TABLE", 7e9)
    bad = replace(table, rows=[["weights", -1.0]])
    with pytest.raises(FlopsheetError, match="GB would be negative memory"):
        guard.check_result("GPU_MEMORY_TABLE", "table", bad)
    text_in_a_money_word_column = udfs.call("GPU_RANK", "serve", "Llama 3.1 8B", "bf16")
    assert "cost_unit" in text_in_a_money_word_column.header
