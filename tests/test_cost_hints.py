"""COST_PER_1M_OUTPUT_TOKENS (and the other token costs) refuse a copy that does not fit with #NUM!, and the message
names the smallest n_gpus that holds it (buyer pass, 2026-11-24): a finance reader should not have to guess."""

import re

import pytest

from udfs.api import registry
from udfs.catalogs import catalog
from udfs.errors import FlopsheetError

ARGS = ("Llama 3.1 70B", "H100", "bf16", 1000, 200)


def test_the_refusal_names_the_smallest_n_gpus_that_fits():
    model, gpu = catalog.model(ARGS[0]), catalog.gpu(ARGS[1])
    weights_gib = model.total_params * 2 / 2**30              # bf16: 2 bytes a parameter, by hand
    assert weights_gib > gpu.usable_gib > weights_gib / 2     # one GPU cannot hold it, half of it fits on each of two
    with pytest.raises(FlopsheetError) as refused:
        registry.call("COST_PER_1M_OUTPUT_TOKENS", 3.2, *ARGS, 1)
    assert refused.value.code == "#NUM!"
    n = int(re.search(r"the smallest n_gpus that holds it is (\d+)", refused.value.message).group(1))
    assert n == 2
    assert registry.call("COST_PER_1M_OUTPUT_TOKENS", 3.2, *ARGS, n) > 0


def test_a_model_too_large_for_any_copy_says_so():
    model, gpu = catalog.model("DeepSeek-R1"), catalog.gpu("T4")
    assert model.total_params * 2 / 2**30 / 64 > gpu.usable_gib     # fp16 weights alone overflow 64 GPUs, by hand
    with pytest.raises(FlopsheetError) as refused:
        registry.call("BLENDED_COST_PER_1M_TOKENS", 3.2, model.name, gpu.name, "fp16", 1000, 200, 1)
    assert refused.value.code == "#NUM!" and "it fits no copy of up to 64 GPUs" in refused.value.message
