"""Budget-planning template workbooks (openpyxl), native formulas over catalog sheets.

`NAMES` lists the workbooks; `module(name)` is a workbook's module (each has KEY, FILENAME,
TITLE, ALT_INPUTS and build(path, inputs=None)); `build(name, path)` writes one. See README.md."""

from __future__ import annotations

import importlib

NAMES = ("training_budget", "finetune_cost", "inference_plan", "cloud_vs_own", "gpu_comparison")


def module(name: str):
    if name not in NAMES:
        raise KeyError(f"unknown workbook {name!r}; choose from {', '.join(NAMES)}")
    return importlib.import_module(f"{__name__}.{name}")


def build(name: str, path, inputs: dict | None = None):
    return module(name).build(path, inputs=inputs)
