"""Resolve once: every way of naming a model, a GPU or an engine becomes one complete object,
here, before any estimate runs.

A model is named by a catalog name or Hugging Face id, a MODEL_DEFINE spec text, an imported
config (a row of values), or a bare parameter count. Each becomes a `catalog.Model` whose
derived figures (head size, KV heads, total and active parameters, embedding and output head,
per-expert and shared-expert sizes) are filled when it is made (`shape.derived`). A model
without a layout of its own (a bare count, a private row giving only `params`) borrows one by
the one rule below, and says where it came from (`Model.layout_from`). The engine, the picker,
the sweep, the scenario and the report all take these objects; none looks a name up again.
"""

from __future__ import annotations

import math
from dataclasses import replace

from . import catalog, engines, spec
from ..physics import shape
from .catalog import Gpu, Model
from .engines import Engine
from ..errors import num_error, value_error


def model(value) -> Model:
    """The complete model for a catalog row, a count (int or float), a name, an HF id or a spec
    text, or a row of values (an imported config)."""
    if isinstance(value, Model):
        found = value
    elif isinstance(value, dict):
        found = catalog.model_from_row(value)
    elif isinstance(value, (int, float)) and not isinstance(value, bool):
        if not value > 0 or math.isinf(value):
            raise num_error(f"a parameter count must be a finite number > 0, got {value:g}")
        found = catalog.size_only_model(float(value))
    else:
        text = str(value).strip()
        found = spec.model(text) if spec.is_model_spec(text) else catalog.model(text)
    return found if shape.has_shape(found) else borrow_layout(found)


def lender(params: float) -> Model:
    """The one rule for a model known only by its size: the catalog's dense, gated-MLP (modern,
    Llama-style) model with a layout of its own whose size is nearest by ratio (ties: by name).
    Its layers, hidden size, heads, KV heads and vocabulary stand in for the unknown ones."""
    dense = [m for m in catalog.models() if m.has_layout and not m.is_moe and m.gated_mlp and m.total_params]
    return min(dense, key=lambda m: (abs(math.log(m.total_params / params)), m.name))


def borrow_layout(found: Model) -> Model:
    """A model with a size but no layout, with the layout of `lender` and its own size (dense)."""
    if not found.total_params:
        raise value_error(f"{found.name} has neither a parameter count nor a shape: give params, or MODEL_DEFINE("
                          f"layers, hidden, heads, kv_heads, ffn, vocab)")
    source = lender(found.total_params)
    return replace(source, name=found.name, aliases=found.aliases, params=found.total_params, active_params=None,
                   published_params=None, published_active_params=None, layout_from=source.name,
                   note=f"layout of {source.name} (the catalog's dense model nearest in size)")


def require_own_layout(found: Model) -> None:
    """Estimates whose answer is the shape itself (KV cache, memory, batch and context limits,
    training memory) refuse a layout borrowed for a bare count."""
    if not found.has_layout:
        raise value_error(f"this estimate needs the model's shape (layers, heads, KV heads), not only its size "
                          f"({found.name}): give a catalog name or MODEL_DEFINE(layers, hidden, heads, kv_heads, "
                          f"ffn, vocab)")


def gpu(value) -> Gpu:
    """The GPU row for a catalog row, a name or a GPU_DEFINE spec text."""
    if isinstance(value, Gpu):
        return value
    text = str(value).strip()
    return spec.gpu(text) if spec.is_gpu_spec(text) else catalog.gpu(text)


def engine(value, on: Gpu | None = None) -> Engine:
    """The engine profile for a profile, a name, or blank (the GPU's default engine)."""
    return engines.engine(value or None, on)
