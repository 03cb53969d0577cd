"""Recalculate (or render) workbooks headless with LibreOffice Calc: one soffice call for
many files, a fresh profile per call with recalculation-on-load forced."""

from __future__ import annotations

import os
import shutil
import subprocess
import tempfile
from pathlib import Path

XLSX_FILTER = "xlsx:Calc MS Excel 2007 XML"
REGISTRY = """<?xml version="1.0" encoding="UTF-8"?>
<oor:items xmlns:oor="http://openoffice.org/2001/registry" xmlns:xs="http://www.w3.org/2001/XMLSchema" \
xmlns:xsi="http://www.w3.org/2001/XMLSchema-instance">
<item oor:path="/org.openoffice.Office.Calc/Formula/Load"><prop oor:name="OOXMLRecalcMode" oor:op="fuse">\
<value>0</value></prop></item>
<item oor:path="/org.openoffice.Office.Calc/Formula/Load"><prop oor:name="ODFRecalcMode" oor:op="fuse">\
<value>0</value></prop></item>
</oor:items>
"""


def soffice() -> str | None:
    return shutil.which("soffice") or shutil.which("libreoffice")


def convert(paths: list[str | os.PathLike], outdir: str | os.PathLike, to: str = XLSX_FILTER,
            timeout: float = 180) -> list[Path]:
    """Convert every file in one LibreOffice run; returns the output paths (asserted to exist)."""
    exe = soffice()
    if exe is None:
        raise RuntimeError("LibreOffice (soffice) is not installed")
    outdir = Path(outdir)
    outdir.mkdir(parents=True, exist_ok=True)
    paths = [Path(p).resolve() for p in paths]
    for p in paths:
        if p.parent == outdir.resolve() and to.startswith("xlsx"):
            raise ValueError(f"{p} would be overwritten by its own output; use another outdir")
    with tempfile.TemporaryDirectory(prefix="flopsheet-lo-") as profile:
        user = Path(profile, "user")
        user.mkdir()
        (user / "registrymodifications.xcu").write_text(REGISTRY, encoding="utf-8")
        cmd = [exe, f"-env:UserInstallation=file://{profile}", "--headless", "--norestore", "--nologo",
               "--convert-to", to, "--outdir", str(outdir), *map(str, paths)]
        run = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout)
    ext = "." + to.split(":", 1)[0]
    outs = [outdir / (p.stem + ext) for p in paths]
    missing = [str(o) for o in outs if not o.exists()]
    if missing:
        raise RuntimeError(f"LibreOffice produced no {', '.join(missing)} (rc={run.returncode}): "
                           f"{run.stdout[-2000:]} {run.stderr[-2000:]}")
    return outs
