"""xlwings Lite for real: Flopsheet's custom functions in Pyodide (CPython on WebAssembly)
under node, called the way Lite calls them (xlwings' custom_functions_meta and
custom_functions_call on main.py), through both routes of `flopsheet addin lite`:

* nothing hosted: the generated main.py alone (engine and catalogs inside), with only
  xlwings present, as Lite provides it;
* the wheel route: requirements.txt's wheel installed by micropip, with its dependencies
  from PyPI pure wheels only (no pandas, no Pyodide CDN).

Pyodide comes from the npm registry and the wheels from PyPI (tests/pyodide_setup.py,
run by scripts/test). Skipped only when node is not installed."""

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from addin.spec import registry_functions
from udfs import __version__

from . import pyodide_setup
from .officejs import engine, same

if shutil.which("node") is None:
    pytest.skip("node is not installed: cannot run Pyodide (install node and npm)", allow_module_level=True)

ROOT = Path(__file__).resolve().parent.parent
HERE = Path(__file__).resolve().parent / "pyodide"
MAIN_DIR = "/home/pyodide/lite"
ROW = {"range": [[32.77, 10.0, 2.5]]}  # JOB_COST hourly rates along a row (1x3)
COLUMN = {"range": [[1.0], [2.0], [""]]}  # hours down a column, the last cell blank (3x1)
EMPTY = {"range": [[1.0], [None]]}  # an empty cell is null (jsnull in Pyodide): the default


def example(fn):
    args = list(fn.examples[0][0]) if fn.examples else []
    return args + [None] * (len(fn.args) - len(args))


def plain(args):
    """The engine's view of the arguments: ranges as their 2-D lists."""
    return [a["range"] if isinstance(a, dict) else a for a in args]


def cases():
    """(label, function, args): every function's example, ranges of every shape, tables and
    bad inputs. A range is {"range": rows}; the driver sends the rest as Excel does."""
    fns = registry_functions()
    out = [(f"example {name}", name, example(fn)) for name, fn in fns.items()]
    out += [
        ("1xN row", "JOB_COST", [ROW, 10]),
        ("Nx1 column", "JOB_COST", [32.77, COLUMN]),
        ("NxM row x column", "JOB_COST", [ROW, COLUMN]),
        ("Nx1 with an empty cell", "GPU_TOKENS_PER_SEC", ["H100", 14, EMPTY, None]),
        ("omitted optionals", "GPU_MEMORY", [7e9, None, None, None, None, None]),
        ("NxM block", "MODEL_SIZE_GB", [{"range": [[7e9, 13e9], [70e9, 1e9]]}, "fp16"]),
        ("1xN text row", "GPU_TOKENS_PER_SEC", [{"range": [["H100", "A100", "RTX 4090"]]}, 14, None, None]),
        ("table GPU_LIST", "GPU_LIST", [None]),
        ("table from a 1xN row of names", "GPU_COMPARE", [{"range": [["H100", "A100"]]}, None]),
        ("table from a Nx1 column of names", "GPU_COMPARE", [{"range": [["H100"], ["A100"]]}, None]),
        ("table GPU_MEMORY_TABLE", "GPU_MEMORY_TABLE", [7e9, None, None, None, None]),
        ("bad GPU", "GPU_TOKENS_PER_SEC", ["no such gpu", 14, None, None]),
        ("bad number", "JOB_COST", ["abc", 10]),
        ("bad cell in a range", "JOB_COST", [{"range": [[32.77], ["abc"]]}, 10]),
    ]
    return out


def run_lite(tmp_path, main_py: Path, load: list[Path], files: dict, requirements=None) -> dict:
    try:
        pyodide = pyodide_setup.ensure()
        wheels = {p.name.split("-")[0]: p for p in pyodide_setup.wheel_files()}
    except pyodide_setup.SetupError as e:
        pytest.fail(f"Pyodide set-up failed (node is installed, so this is an error): {e}")
    job = {"pyodide": str(pyodide), "load": [str(wheels[name]) for name in load],
           "files": {f"{MAIN_DIR}/main.py": str(main_py), **{k: str(v) for k, v in files.items()}},
           "driver": str(HERE / "lite_driver.py"),
           "input": {"main_dir": MAIN_DIR, "requirements": requirements,
                     "calls": [{"func": name, "args": args} for _, name, args in cases()]}}
    (tmp_path / "job.json").write_text(json.dumps(job))
    r = subprocess.run(["node", str(HERE / "run.mjs"), str(tmp_path / "job.json")],
                       capture_output=True, text=True, timeout=300)
    assert r.returncode == 0 and "RESULT" in r.stdout, r.stderr[-4000:]
    return json.loads(r.stdout.split("RESULT", 1)[1])


def lite_command(out: Path, *extra) -> None:
    r = subprocess.run([sys.executable, "-m", "udfs", "addin", "lite", "--out", str(out), *extra],
                       cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stderr


@pytest.fixture(scope="module")
def standalone(tmp_path_factory):
    out = tmp_path_factory.mktemp("lite-standalone")
    lite_command(out)
    return out, run_lite(out, out / "main.py", ["xlwings"], {})


@pytest.fixture(scope="module")
def wheel_route(tmp_path_factory):
    out = tmp_path_factory.mktemp("lite-wheel")
    lite_command(out, "--wheel-url", "https://files.example.invalid/flopsheet.whl")
    wheel = next(out.glob("flopsheet-*-py3-none-any.whl"))
    target = f"/home/pyodide/wheels/{wheel.name}"
    # micropip resolves the wheel's dependencies: the pure wheels loaded here must satisfy
    # them, since nothing can be fetched (Lite would fetch the URL in requirements.txt).
    result = run_lite(out, out / "main.py", ["xlwings", "openpyxl", "et_xmlfile", "micropip", "packaging"],
                      {target: wheel}, requirements=[f"emfs:{target}"])
    return out, result


ROUTES = ["standalone", "wheel_route"]


@pytest.fixture(params=ROUTES)
def lite(request):
    return request.getfixturevalue(request.param)


def test_runs_in_pyodide_with_flopsheet_from_the_route(lite):
    folder, out = lite
    assert out["platform"] == "emscripten" and out["xlwings"] == "0.37.8"
    assert out["udfs_version"] == __version__
    if (folder / "requirements.txt").read_text().strip():  # wheel route: installed by micropip
        assert out["udfs_file"].startswith("/lib/python3") and "site-packages" in out["udfs_file"]
    else:  # unpacked from main.py
        assert f"flopsheet-{__version__}-" in out["udfs_file"]
    # tables are lists of lists: neither pandas nor numpy is needed (or present)
    assert not out["pandas_installed"] and out["loaded"] in ([], ["openpyxl"])
    assert out["missing_requirements"] == [], "every requirement of the wheel installs from PyPI pure wheels"


def test_every_function_is_listed(lite):
    _, out = lite
    assert sorted(out["functions"]) == sorted(registry_functions())


def test_every_call_matches_the_engine(lite):
    _, out = lite
    fns = registry_functions()
    problems = []
    for (label, name, args), got in zip(cases(), out["results"]):
        assert "exception" not in got, (label, name, got)  # a 500 in Lite: never
        status, value = engine(fns[name], *plain(args))
        if status == 200:
            ok = "result" in got and same(got["result"], value)
        else:  # an xlwings error: #VALUE! in the cell with the message on hover
            ok = got.get("xlwings_error") == value
        if not ok:
            problems.append((label, name, args, got, value))
    assert not problems, problems[:3]


def test_shapes_and_bad_inputs(lite):
    _, out = lite
    got = {label: r for (label, _, _), r in zip(cases(), out["results"])}
    assert got["example GPU_TOKENS_PER_SEC"]["result"] == [[pytest.approx(167.5)]]
    assert [len(r) for r in got["1xN row"]["result"]] == [3]  # one row of three, not an error
    assert got["1xN row"]["result"][0][0] == pytest.approx(327.7)
    assert [len(r) for r in got["Nx1 column"]["result"]] == [1, 1, 1]
    assert [len(r) for r in got["NxM row x column"]["result"]] == [3, 3, 3]
    assert got["Nx1 with an empty cell"]["result"] == [[pytest.approx(167.5)], [pytest.approx(167.5)]]
    assert [len(r) for r in got["NxM block"]["result"]] == [2, 2]
    assert got["table GPU_LIST"]["result"][0][0] == "name" and len(got["table GPU_LIST"]["result"]) > 5
    assert len(got["table GPU_MEMORY_TABLE"]["result"]) > 2
    assert [row[0] for row in got["table from a 1xN row of names"]["result"][1:]] == \
           [row[0] for row in got["table from a Nx1 column of names"]["result"][1:]]
    assert got["bad GPU"]["xlwings_error"].startswith("#N/A") and "no such gpu" in got["bad GPU"]["xlwings_error"]
    assert got["bad number"]["xlwings_error"].startswith("#VALUE!")
    assert got["bad cell in a range"]["result"][1] == [{"type": "Error", "errorType": "Value"}]


def test_standalone_main_carries_the_version_and_needs_no_requirement(standalone):
    folder, _ = standalone
    text = (folder / "main.py").read_text()
    assert f'FLOPSHEET_VERSION = "{__version__}"' in text and "https://" not in text.split("_ARCHIVE")[0]
    assert (folder / "requirements.txt").read_text().strip() == ""


def test_a_truncated_paste_is_reported(tmp_path):
    from addin import lite
    text = lite.standalone_main()
    cut = text.index('"""\n\n\ndef _unpack')
    broken = text[:cut - 500] + text[cut:]
    (tmp_path / "main.py").write_text(broken)
    r = subprocess.run([sys.executable, "-c", "import main"], cwd=tmp_path, capture_output=True, text=True)
    assert r.returncode != 0 and "incomplete paste" in r.stderr

