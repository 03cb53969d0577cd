"""QLoRA's hours are LoRA's (no sourced slowdown for dequantising the NF4 base): the answer says so, so a buyer
does not read them as measured QLoRA speed (buyer pass, 2026-11-24)."""

from udfs.api import registry

NOTE = "at LoRA's speed (the NF4 base's dequantisation in each pass is not modelled)"


def test_a_qlora_answer_says_its_hours_are_loras():
    assert NOTE in registry.call("GPU_RECOMMEND", "qlora", "Llama 3.1 70B")
    assert NOTE not in registry.call("GPU_RECOMMEND", "lora", "Llama 3.1 70B")
