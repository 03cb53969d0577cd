"""`flopsheet addin install`: the classic xlwings add-in (Windows desktop Excel only).

The classic add-in finds UDFs through the config key `UDF Modules` and starts the
interpreter named by `Interpreter_Win`; both go into the user's ~/.xlwings/xlwings.conf
(lines of `"KEY","value"`, keys case-insensitive, as the add-in's VBA reads them).
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

UDF_MODULE = "addin.functions"


def config_path() -> Path:
    return Path.home() / ".xlwings" / "xlwings.conf"


def update_config(path: Path, settings: dict[str, str]) -> None:
    """Set `settings` in an xlwings.conf file, keeping every other line as it was."""
    lines = path.read_text(encoding="utf-8").splitlines() if path.exists() else []
    wanted = {k.lower(): (k, v) for k, v in settings.items()}
    out = []
    for line in lines:
        values = re.findall(r'"[^"]*"', line)
        key = values[0].strip('"').lower() if values else None
        if key in wanted:
            name, value = wanted.pop(key)
            if key == "udf modules":  # keep the user's other UDF modules
                others = [m for m in values[1].strip('"').split(";") if m and m != value] if len(values) > 1 else []
                value = ";".join(others + [value])
            line = f'"{name}","{value}"'
        out.append(line)
    out += [f'"{name}","{value}"' for name, value in wanted.values()]
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("\n".join(out) + "\n", encoding="utf-8")


NOT_WINDOWS = """\
The classic xlwings add-in runs only in desktop Excel on Windows; this is {platform}.
On Windows, `flopsheet addin install` would:
  1. add "UDF Modules" = "{module}" and "Interpreter_Win" = this Python to ~/.xlwings/xlwings.conf,
  2. run `xlwings addin install` (copies xlwings.xlam into Excel's XLSTART folder),
  3. tell you to click "Import Functions" on the xlwings ribbon tab.
Instead, here:
  * Excel on Mac or the web (or Windows without local Python): xlwings Lite, free —
      flopsheet addin lite --out flopsheet-lite
  * a team: xlwings Server —  flopsheet serve   (licence terms: docs/deploy/README.md)"""


def install(dry_run: bool = False) -> int:
    if not sys.platform.startswith("win"):
        print(NOT_WINDOWS.format(platform=sys.platform, module=UDF_MODULE))
        return 1
    settings = {"UDF Modules": UDF_MODULE, "Interpreter_Win": sys.executable}
    path = config_path()
    print(f"Setting in {path}: " + ", ".join(f"{k} = {v}" for k, v in settings.items()))
    if dry_run:
        return 0
    update_config(path, settings)
    # xlwings has no __main__; its console script is xlwings.cli:main
    command = [sys.executable, "-c", "from xlwings.cli import main; main()", "addin", "install"]
    print("Running: xlwings addin install")
    rc = subprocess.call(command, env=dict(os.environ))
    if rc == 0:
        print("Done. In Excel: File > Options > Trust Center > Trust Center Settings > Macro Settings > tick\n"
              "'Trust access to the VBA project object model'; then on the xlwings tab click 'Import Functions'.\n"
              "Type =GPU_TOKENS_PER_SEC(\"H100\",14) in a cell.")
    return rc
