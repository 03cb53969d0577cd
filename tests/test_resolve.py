"""Resolve once: every way of naming a model gives one complete object, its derived figures filled
once (shape.derived), and a bare parameter count borrows a layout by one rule (resolve.lender)."""

import ast
import math
from dataclasses import replace
from pathlib import Path

import pytest

from udfs.physics import capacity
from udfs.catalogs import catalog, hf_config, resolve
from udfs.planning import picker
from udfs.api import registry
from udfs.errors import FlopsheetError

ROOT = Path(__file__).resolve().parents[1]
CONFIGS = ROOT / "tests" / "data" / "hf_configs"
DERIVED = catalog.DERIVED_MODEL_FIELDS[1:]


def _derived(m):
    return {name: getattr(m, name) for name in DERIVED}


def test_every_way_of_naming_llama3_8b_gives_the_same_figures():
    spec = registry.call("MODEL_DEFINE", 32, 4096, 32, 8, 14336, 128256)
    config = hf_config.read(CONFIGS / "Meta-Llama-3-8B.json")
    named = [resolve.model("Llama 3 8B"), resolve.model("meta-llama/Meta-Llama-3-8B"), resolve.model(spec),
             resolve.model(hf_config.model_row(config, "imported", "test"))]
    first = _derived(named[0])
    assert first["head_size"] == 128 and first["kv_head_count"] == 8 and first["total_params"] == 8_030_261_248
    for m in named[1:]:
        assert _derived(m) == first, m.name


def test_derived_figures_of_a_dense_and_a_moe_model():
    llama = catalog.model("Llama 2 7B")
    assert (llama.head_size, llama.kv_head_count, llama.active) == (128, 32, llama.params)
    assert llama.input_embedding_params == llama.output_head_params == 32000 * 4096     # untied head
    assert llama.expert_params == llama.shared_expert_params == 0
    v3 = catalog.model("DeepSeek-V3")
    k, e = v3.experts_per_token, v3.n_experts
    assert v3.total_params - (e - k) * v3.expert_params == pytest.approx(v3.active)
    assert v3.shared_expert_params == v3.shared_experts * v3.expert_params
    assert v3.moe_layer_count == 58
    tied = catalog.model("gemma-3-27b-it")
    assert tied.output_head_params == 0 and tied.input_embedding_params == tied.vocab * tied.hidden


def test_replace_fills_the_derived_figures_again():
    llama = catalog.model("Llama 2 7B")
    wider = replace(llama, head_dim=None, heads=16, kv_heads=None, params=1e10)
    assert (wider.head_size, wider.kv_head_count, wider.total_params) == (256, 16, 1e10)


@pytest.mark.parametrize("params", [1e9, 7e9, 3e10, 1.2e11, 4e11, 1e12])
def test_a_bare_count_borrows_the_nearest_dense_gated_layout(params):
    m = resolve.model(params)
    lender = catalog.model(m.layout_from)
    assert not lender.is_moe and lender.gated_mlp and lender.has_layout
    nearest = min(abs(math.log(x.total_params / params)) for x in catalog.models()
                  if x.has_layout and not x.is_moe and x.gated_mlp)
    assert abs(math.log(lender.total_params / params)) == nearest
    assert m.total_params == m.active == params and (m.layers, m.kv_head_count) == (lender.layers, lender.kv_head_count)
    assert not m.has_layout and registry.call("MODEL_SPEC", params, "layout_from") == lender.name


def test_a_count_and_its_text_resolve_alike_and_bad_counts_are_refused():
    assert resolve.model(1.2e11) == registry.coerce_arg(registry.get("SERVING_BATCH").args[0], "120B")
    for bad in (0, -1, math.inf):
        with pytest.raises(FlopsheetError):
            resolve.model(bad)


def test_a_private_row_with_only_its_size_borrows_too():
    sized = catalog.size_only_model(7e9)
    assert not sized.has_layout and resolve.model(sized).layout_from == resolve.lender(7e9).name


@pytest.mark.parametrize("fn,kw", [("KV_CACHE_GB", {"context": 4096}), ("MAX_BATCH", {"gpu": "H100", "context": 4096}),
                                   ("SERVING_MEMORY_GB", {}), ("FITS", {"gpu": "H100"}), ("MAX_CONTEXT", {"gpu": "H100"}),
                                   ("TRAINING_MEMORY_GB", {}), ("QLORA_MEMORY_GB", {})])
def test_estimates_of_the_shape_itself_refuse_a_borrowed_layout(fn, kw):
    with pytest.raises(FlopsheetError, match="needs the model's shape"):
        registry.call(fn, 7e9, **kw)
    assert registry.call(fn, "Llama 2 7B", **kw) is not None


def test_speed_estimates_use_the_borrowed_layout_as_the_lender_resized():
    lent = replace(resolve.lender(7e9), params=7e9)          # the lender's layout carrying 7e9 parameters
    h100 = catalog.gpu("H100")
    assert registry.call("SERVING_BATCH", 7e9, "H100") == capacity.serving_point(lent, h100).batch
    step = capacity.decode_step(lent, h100, context=2000).total
    assert registry.call("DECODE_TOKENS_PER_SEC", "7B", "H100", context=2000) == 1 / step


def _hidden_over_heads(path: Path) -> list[int]:
    """Lines dividing something by `.heads` (the head-size fallback)."""
    lines = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.BinOp) and isinstance(node.op, (ast.FloorDiv, ast.Div)) \
                and isinstance(node.right, ast.Attribute) and node.right.attr == "heads":
            lines.append(node.lineno)
    return lines


def test_the_head_size_fallback_has_one_home():
    found = {p.relative_to(ROOT).as_posix(): _hidden_over_heads(p) for p in (ROOT / "udfs").rglob("*.py")}
    assert {p for p, lines in found.items() if lines} == {next(p for p in found if p.endswith("shape.py"))}
    assert len(next(v for p, v in found.items() if p.endswith("shape.py"))) == 1


def _lookups(path: Path) -> list[str]:
    """Calls that look a GPU or an engine up by name (catalog.gpu(...), engines.engine(...))."""
    found = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) \
                and (node.func.attr, getattr(node.func.value, "id", "")) in (("gpu", "catalog"), ("engine", "engines")):
            found.append(f"{path.name}:{node.lineno}")
    return found


def test_planning_takes_resolved_gpus_and_engines():
    """The picker, sweep, scenario and report model work on the rows resolved once: only the
    scenario file's reader turns names into rows (when it checks them)."""
    found = [hit for p in sorted((ROOT / "udfs" / "planning").glob("*.py")) for hit in _lookups(p)]
    assert all(hit.startswith("scenario.py:") for hit in found), found
    assert len(found) == 2          # candidates.gpus and workload.engine, checked as the file is read
    opt = next(o for o in picker.rank("serve", "Llama 3.1 8B", "fp8") if o.gpu == "H100 SXM 80GB")
    assert opt.gpu_row is catalog.gpu("H100")
