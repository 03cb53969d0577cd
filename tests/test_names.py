"""Forgiving name resolution."""

import pytest

from udfs.catalogs import catalog
from udfs.errors import FlopsheetError


@pytest.mark.parametrize("text,name", [
    ("H100", "H100 SXM 80GB"), ("nvidia h100", "H100 SXM 80GB"), ("NVIDIA H100 SXM5 80GB", "H100 SXM 80GB"),
    ("h100-sxm", "H100 SXM 80GB"), ("H100 PCIe", "H100 PCIe 80GB"), ("RTX 4090", "RTX 4090 24GB"),
    ("GeForce RTX 4090 24 GB", "RTX 4090 24GB"), ("rtx4090", "RTX 4090 24GB"), ("4090", "RTX 4090 24GB"),
    ("A100", "A100 SXM 80GB"), ("A100 40GB", "A100 SXM 40GB"), ("A100 PCIe 40GB", "A100 PCIe 40GB"),
    ("AMD Instinct MI300X", "MI300X 192GB"), ("l40s", "L40S 48GB")])
def test_gpu_names(text, name):
    assert catalog.gpu(text).name == name


@pytest.mark.parametrize("text,name", [
    ("Llama 2 7B", "Llama 2 7B"), ("meta-llama/Llama-2-7b-hf", "Llama 2 7B"), ("llama-2-70b", "Llama 2 70B"),
    ("Meta-Llama-3.1-8B-Instruct", "Llama 3.1 8B")])
def test_model_names(text, name):
    assert catalog.model(text).name == name


def test_unknown_gpu_lists_closest():
    with pytest.raises(FlopsheetError) as info:
        catalog.gpu("RTX 4091")
    assert "RTX 4090" in info.value.message and info.value.code == "#N/A"
