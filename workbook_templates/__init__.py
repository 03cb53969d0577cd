"""Budget-planning template workbooks (openpyxl), native formulas over catalog sheets.

`build_all(outdir)` writes every workbook; `WORKBOOKS` maps a short name to its module
(each has KEY, FILENAME, TITLE, ALT_INPUTS and build(path, inputs=None))."""

from __future__ import annotations

import importlib

NAMES = ("training_budget", "finetune_cost", "inference_plan", "cloud_vs_own", "gpu_comparison")


def module(name: str):
    if name not in NAMES:
        raise KeyError(f"unknown workbook {name!r}; choose from {', '.join(NAMES)}")
    return importlib.import_module(f"{__name__}.{name}")


def build(name: str, path, inputs: dict | None = None):
    return module(name).build(path, inputs=inputs)
