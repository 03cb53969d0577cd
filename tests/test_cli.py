"""The `flopsheet` command as a user runs it (a real subprocess)."""

import csv
import io
import json
import subprocess
import sys

import pytest

import udfs


def flopsheet(*args):
    return subprocess.run([sys.executable, "-m", "udfs", *args], capture_output=True, text=True)


def test_calc_prints_the_lesson_value():
    out = flopsheet("calc", "GPU_TOKENS_PER_SEC", "H100", "14")
    assert out.returncode == 0 and out.stdout == "167.5\n"


def test_calc_dense_bf16_from_vendor_datasheet():
    out = flopsheet("calc", "GPU_SPEC", "H100", "bf16_tflops")
    assert out.returncode == 0 and 980 <= float(out.stdout) <= 1000


def test_empty_string_omits_an_argument():
    a = flopsheet("calc", "GPU_MEMORY", "7e9", "", "", "", "", "weights").stdout
    b = flopsheet("calc", "GPU_MEMORY", "7B", "bf16", "adamw", "2", "0.01", "weights").stdout
    assert a == b and round(float(a), 1) == 13.0


def test_table_prints_csv_with_header():
    out = flopsheet("calc", "GPU_COMPARE")
    rows = list(csv.reader(io.StringIO(out.stdout)))
    assert rows[0][0] == "GPU" and len(rows) == 8


def test_json_output():
    out = flopsheet("calc", "GPU_MEMORY_TABLE", "7e9", "--json")
    data = json.loads(out.stdout)
    assert data["header"] == ["part", "GB"] and data["rows"][-1][0] == "total"
    assert json.loads(flopsheet("calc", "JOB_COST", "32.77", "10", "--json").stdout) == pytest.approx(327.7)


@pytest.mark.parametrize("args,code", [
    (("GPU_TOKENS_PER_SEC", "H1000", "14"), "#N/A"),
    (("GPU_MEMORY", "-7e9"), "#NUM!"),
    (("GPU_MEMORY", "7e9", "fp12"), "#VALUE!"),
    (("COST_PER_1M_TOKENS", "700", "1.5", "65"), "#NUM!"),
    (("NO_SUCH_FUNCTION",), "#NAME?"),
    (("GPU_MEMORY",), "#VALUE!")])
def test_bad_input_is_a_clear_error_with_status_2(args, code):
    out = flopsheet("calc", *args)
    assert out.returncode == 2 and out.stdout == ""
    assert out.stderr.startswith(code + ": ") and "Traceback" not in out.stderr


def test_functions_lists_every_registered_name():
    out = flopsheet("functions", "--json")
    listed = json.loads(out.stdout)
    assert {f["name"] for f in listed} == set(udfs.functions())
    for f in listed:
        assert f["help"] and isinstance(f["args"], list)
    text = flopsheet("functions").stdout
    for name in udfs.functions():
        assert name + "(" in text


def test_help_and_version():
    assert "calc" in flopsheet("--help").stdout
    assert udfs.__version__ in flopsheet("--version").stdout
