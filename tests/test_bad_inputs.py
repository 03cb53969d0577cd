"""Every function, called with every kind of bad input a spreadsheet can hold, gives a
FlopsheetError with an Excel error code and a readable message: never a traceback, never
a silently wrong number. Driven by the registry, so new functions are covered too."""

import math

import pytest

import udfs
from udfs.errors import EXCEL_ERRORS, FlopsheetError

FUNCTIONS = list(udfs.functions().values())
NUMERIC = ("number", "integer", "count", "params", "model_or_params", "model_or_count", "gpu_or_tflops", "gpu_or_bandwidth",
           "gpu_or_capacity")


def good_args(fn):
    args = list(fn.examples[0][0])
    return args + [None] * (len(fn.args) - len(args))


def bad_call(fn, index, value):
    args = good_args(fn)
    args[index] = value
    with pytest.raises(FlopsheetError) as info:
        udfs.call(fn.name, *args)
    err = info.value
    assert err.code in EXCEL_ERRORS
    assert fn.args[index].name in err.message or "unknown" in err.message or "must" in err.message, err.message
    assert "Traceback" not in str(err)
    return err


def cases(predicate):
    return [(fn, i) for fn in FUNCTIONS for i, a in enumerate(fn.args) if predicate(a)]


def ids(cases_):
    return [f"{fn.name}.{fn.args[i].name}" for fn, i in cases_]


TEXT_IN_NUMBER = cases(lambda a: a.type in NUMERIC)


@pytest.mark.parametrize("fn,i", TEXT_IN_NUMBER, ids=ids(TEXT_IN_NUMBER))
def test_text_where_a_number_belongs(fn, i):
    err = bad_call(fn, i, "lots")
    assert err.code in ("#VALUE!", "#N/A")


@pytest.mark.parametrize("fn,i", TEXT_IN_NUMBER, ids=ids(TEXT_IN_NUMBER))
@pytest.mark.parametrize("value", [math.nan, math.inf, -math.inf])
def test_nan_and_infinity(fn, i, value):
    assert bad_call(fn, i, value).code == "#NUM!"


NEGATIVE = cases(lambda a: a.type in NUMERIC and a.min is not None and a.min >= 0)


@pytest.mark.parametrize("fn,i", NEGATIVE, ids=ids(NEGATIVE))
def test_negative_numbers_say_what_is_allowed(fn, i):
    err = bad_call(fn, i, -1)
    assert err.code == "#NUM!" and "must be" in err.message


ZERO = cases(lambda a: a.type in NUMERIC and a.min == 0 and a.min_open)


@pytest.mark.parametrize("fn,i", ZERO, ids=ids(ZERO))
def test_zero_where_positive_required(fn, i):
    assert bad_call(fn, i, 0).code == "#NUM!"


REQUIRED = cases(lambda a: not a.optional)


@pytest.mark.parametrize("fn,i", REQUIRED, ids=ids(REQUIRED))
@pytest.mark.parametrize("blank", [None, "", "   "])
def test_blank_required_argument(fn, i, blank):
    err = bad_call(fn, i, blank)
    assert "required" in err.message


EVERY = cases(lambda a: a.type != "list")


@pytest.mark.parametrize("fn,i", EVERY, ids=ids(EVERY))
@pytest.mark.parametrize("code", ["#N/A", "#DIV/0!", "#REF!"])
def test_error_values_pass_through(fn, i, code):
    assert bad_call(fn, i, code).code == code


CHOICES = cases(lambda a: a.type in ("choice", "precision"))


@pytest.mark.parametrize("fn,i", CHOICES, ids=ids(CHOICES))
def test_unknown_choice_lists_valid_ones(fn, i):
    err = bad_call(fn, i, "bogus")
    arg = fn.args[i]
    options = arg.choices or ("fp16", "bf16", "int4")
    assert all(o in err.message for o in options)


GPUS = cases(lambda a: a.type in ("gpu", "gpu_or_bandwidth", "gpu_or_capacity"))


@pytest.mark.parametrize("fn,i", GPUS, ids=ids(GPUS))
def test_unknown_gpu_suggests_close_names(fn, i):
    err = bad_call(fn, i, "H1000")
    assert err.code == "#N/A" and "H100" in err.message


def test_ambiguous_name_lists_options():
    with pytest.raises(FlopsheetError) as info:
        udfs.call("GPU_SPEC", "A100 PCIe", "memory_gb")
    assert "ambiguous" in info.value.message and "40GB" in info.value.message and "80GB" in info.value.message


def test_booleans_are_not_numbers():
    with pytest.raises(FlopsheetError):
        udfs.call("GPU_TOKENS_PER_SEC", True, 14)


def test_utilization_outside_0_1():
    for u in (0, 1.5, -0.2):
        with pytest.raises(FlopsheetError) as info:
            udfs.call("COST_PER_1M_TOKENS", 700, u, 65)
        assert info.value.code == "#NUM!"


def test_too_many_arguments_and_unknown_function():
    with pytest.raises(FlopsheetError):
        udfs.call("JOB_COST", 1, 2, 3)
    with pytest.raises(FlopsheetError) as info:
        udfs.call("GPU_MEMROY", 7e9)
    assert info.value.code == "#NAME?" and "GPU_MEMORY" in info.value.message


def test_headroom_larger_than_gpu():
    with pytest.raises(FlopsheetError) as info:
        udfs.call("GPUS_NEEDED", 100, 4, 5)
    assert info.value.code == "#NUM!"
    # the GPU's figure is the GiB CUDA reports (RTX 4090: 23.64 GiB), and the message says GiB
    with pytest.raises(FlopsheetError) as info:
        udfs.call("GPUS_NEEDED", 30, "RTX 4090", 23.7)
    assert "(23.64 GiB)" in info.value.message


@pytest.mark.parametrize("value", [1e-300, 1e300])
def test_huge_and_tiny_numbers_give_finite_answers_or_errors(value):
    for fn in FUNCTIONS:
        for i, arg in enumerate(fn.args):
            if arg.type not in ("number", "count", "params", "model_or_params"):
                continue
            args = good_args(fn)
            args[i] = value
            try:
                result = udfs.call(fn.name, *args)
            except FlopsheetError:
                continue
            if isinstance(result, float):
                assert math.isfinite(result), (fn.name, arg.name, value, result)
