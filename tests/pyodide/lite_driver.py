# Runs inside Pyodide (tests/pyodide/run.mjs): what xlwings Lite does with main.py.
# Lite provides xlwings with its Office.js decorators (XLWINGS_ON_SERVER before the first
# import), optionally installs requirements.txt with micropip, imports main.py, publishes
# custom_functions_meta(main) and answers each cell with custom_functions_call(data, main).
import importlib.util
import json
import os
import sys

os.environ["XLWINGS_ON_SERVER"] = "true"
# xlwings' Office.js module checks a licence key when imported; Lite's runtime supplies its
# own, this test is noncommercial use (the key xlwings accepts for that).
os.environ.setdefault("XLWINGS_LICENSE_KEY", "noncommercial")
job = json.loads(JOB_INPUT)  # noqa: F821 - set by run.mjs

if job.get("requirements"):
    import micropip

    await micropip.install(job["requirements"])  # noqa: F704 - Pyodide runs top-level await
    # micropip reports a dependency it could not download as installed: check for real.
    import importlib.metadata
    from packaging.requirements import Requirement

    def _present(name):
        try:
            return importlib.metadata.version(name) is not None
        except importlib.metadata.PackageNotFoundError:
            return False

    required = [Requirement(r) for r in importlib.metadata.requires("flopsheet") or []]
    missing = [str(r) for r in required if not r.marker and not _present(r.name)]
else:
    missing = []

sys.path.insert(0, job["main_dir"])
import main  # noqa: E402
import xlwings  # noqa: E402
import xlwings.server as lite  # noqa: E402
from js import JSON  # noqa: E402

meta = lite.custom_functions_meta(main)
enums = {f["id"]: {p["name"] for p in f["parameters"] if "customEnumId" in p} for f in meta["functions"]}


def as_excel(name, args):
    """Arguments as Excel sends them: a range as its rows of cells, a single value as a
    1x1 range, a drop-down (enum) parameter as a plain value, an omitted one as null."""
    params = next(f["parameters"] for f in meta["functions"] if f["id"] == name)
    out = []
    for p, a in zip(params, args):
        if a is None or p["name"] in enums[name]:
            out.append(a)
        elif isinstance(a, dict):
            out.append(a["range"])
        else:
            out.append([[a]])
    return out


async def call(name, args):
    data = {"func_name": name.lower(), "args": as_excel(name, args), "caller_address": "[Book1]Sheet1!A1",
            "client": "Office.js", "version": xlwings.__version__, "runtime": "1.4",
            "culture_info_name": "en-US", "date_format": "M/d/yyyy"}
    # Through JavaScript, as Lite hands Excel's call over: JS null arrives as pyodide's jsnull.
    data = JSON.parse(json.dumps(data)).to_py()
    try:
        return {"result": await lite.custom_functions_call(data, main)}
    except xlwings.XlwingsError as e:  # Lite shows the message in the cell as #VALUE!
        return {"xlwings_error": str(e)}
    except Exception as e:  # noqa: BLE001 - anything else would be a bug: report it, do not hide it
        return {"exception": f"{type(e).__name__}: {e}"}


results = [await call(c["func"], c["args"]) for c in job["calls"]]  # noqa: F704
import udfs  # noqa: E402

json.dumps({
    "python": sys.version.split()[0], "platform": sys.platform, "xlwings": xlwings.__version__,
    "udfs_file": udfs.__file__, "udfs_version": udfs.__version__,
    "pandas_installed": importlib.util.find_spec("pandas") is not None,
    "loaded": sorted(m for m in ("pandas", "numpy", "openpyxl") if m in sys.modules),
    "missing_requirements": missing, "functions": [f["id"] for f in meta["functions"]], "results": results,
})
