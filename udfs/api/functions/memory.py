"""Memory: the lesson's estimator, GPUs needed, model file size and KV cache."""

from ...catalogs.catalog import Model
from ...physics import arch, lesson
from ..registry import Arg, worksheet
from ...catalogs.resolve import require_own_layout
from ..table import Table
from ...units import GB, MEMORY_UNITS
from .common import BATCH, KV_PRECISION, MEMORY_UNIT, MODEL, OPTIMIZER, PARAMS, PART, PRECISION, positive

ACT_MULT = Arg("activation_multiplier", "number", "Activations as a multiple of weight bytes (training)", "x",
               default=2.0, min=0)
ADAPTER = Arg("adapter_fraction", "number", "QLoRA: fraction of parameters in the trainable adapter", "fraction",
              default=0.01, min=0, max=1)


@worksheet("GPU_MEMORY", "GPU memory to train or serve a model (the lesson's estimator): weights, FP32 gradients, "
           "optimizer states and activations.", "GB of GPU memory (GiB)", "Memory",
           [PARAMS, PRECISION, OPTIMIZER, ACT_MULT, ADAPTER, PART],
           examples=[((7e9,), 143.424), (("7B", "bf16", "adamw", 2, 0.01, "weights"), 13.039),
                     ((7e9, "fp16", "none"), 15.646), ((7e9, "int4", "qlora"), 10.822)],
           formula='CHOOSE(MATCH({part},{"total","weights","gradients","optimizer","activations"},0),{model_or_params}*{precision.bytes_per_param}+IF({optimizer}="none",0,IF({optimizer}="qlora",{model_or_params}*{adapter_fraction}*4,{model_or_params}*4))+IF({optimizer}="none",0,IF({optimizer}="sgd",{model_or_params}*4,IF({optimizer}="qlora",INT({model_or_params}*{adapter_fraction})*4*3,{model_or_params}*4*3)))+{model_or_params}*{precision.bytes_per_param}*IF({optimizer}="none",0.2,{activation_multiplier}),{model_or_params}*{precision.bytes_per_param},IF({optimizer}="none",0,IF({optimizer}="qlora",{model_or_params}*{adapter_fraction}*4,{model_or_params}*4)),IF({optimizer}="none",0,IF({optimizer}="sgd",{model_or_params}*4,IF({optimizer}="qlora",INT({model_or_params}*{adapter_fraction})*4*3,{model_or_params}*4*3))),{model_or_params}*{precision.bytes_per_param}*IF({optimizer}="none",0.2,{activation_multiplier}))/1073741824',
           kind="memory")
def gpu_memory(model_or_params, precision, optimizer, activation_multiplier, adapter_fraction, part):
    est = lesson.model_memory_estimate(model_or_params, precision, optimizer, activation_multiplier, adapter_fraction)
    return est[part]


@worksheet("GPU_MEMORY_TABLE", "The lesson's memory breakdown as a table: one row per part.",
           "GB of GPU memory (GiB)", "Memory", [PARAMS, PRECISION, OPTIMIZER, ACT_MULT, ADAPTER], returns="table",
           examples=[((7e9,), None)], kind="table")
def gpu_memory_table(model_or_params, precision, optimizer, activation_multiplier, adapter_fraction):
    est = lesson.model_memory_estimate(model_or_params, precision, optimizer, activation_multiplier, adapter_fraction)
    return Table(["part", "GB"], [[part, est[part]] for part in lesson.MEMORY_PARTS[1:] + ("total",)])


@worksheet("GPUS_NEEDED", "GPUs needed to hold a memory requirement, leaving headroom free on each GPU.",
           "GPUs", "Memory",
           [positive("memory_gb", "Memory to hold", "GB of GPU memory"),
            Arg("gpu_or_capacity", "gpu_or_capacity", "GPU name (its usable memory: the GiB CUDA reports, the nameplate where "
                "unmeasured) or memory per GPU", "GB",
                default=80, min=0, min_open=True),
            Arg("headroom_gb", "number", "Memory kept free on each GPU", "GB", default=5, min=0)],
           examples=[((143.4,), 2), ((266.4,), 4), ((1434.2,), 20), ((30, "RTX 4090", 2), 2)],
           formula='MAX(1,ROUNDUP({memory_gb}/({gpu_or_capacity}-{headroom_gb}),0))', kind="count")
def gpus_needed(memory_gb, gpu_or_capacity, headroom_gb):
    return lesson.gpus_needed(memory_gb, gpu_or_capacity, headroom_gb)


SIZED = Arg("model_or_params", "model_or_count", "Parameter count (7e9 or \"7B\": x bytes per parameter) or a catalog "
            "model name (its weights as served: a quantized checkpoint in its own format keeps its unconverted parts "
            "at 16 bits, as gpt-oss's MXFP4 checkpoints do; the native formula counts parameters x bytes)",
            "parameters", min=0, min_open=True)


@worksheet("MODEL_SIZE_GB", "Size of a model's weights file: parameters x bytes per parameter; for a catalog model its "
           "weights as served (arch.weight_bytes: a quantized checkpoint's 16-bit parts at 16 bits).",
           "GB (10^9 bytes)", "Memory", [SIZED, PRECISION],
           examples=[(("7B", "fp16"), 14.0), ((70e9, "int4"), 35.0)],
           formula='{model_or_params}*{precision.bytes_per_param}/1E9', kind="memory")
def model_size_gb(model_or_params, precision):
    if isinstance(model_or_params, Model):      # one answer for a model's weight bytes: arch.weight_bytes
        return arch.weight_bytes(model_or_params, precision) / GB
    return model_or_params * precision.bytes_per_param / GB


@worksheet("KV_CACHE_GB", "KV cache of a model: 2 (K and V) x layers x KV heads x head size x bytes, per token "
           "and sequence; grouped-query attention, sliding windows and MLA from the catalog's architecture.",
           "GB of GPU memory (GiB) unless unit says GB", "Memory",
           [MODEL, positive("context", "Tokens held per sequence in the KV cache (prompt + output so far)", "tokens"),
            BATCH, KV_PRECISION, MEMORY_UNIT],
           examples=[(("Llama 2 70B", 4096, 32, "fp16", "GB"), 42.950), (("Llama 2 70B", 8192, 32, "fp16", "GB"), 85.899),
                     (("Llama 2 70B", 4096, 32), 40.0)], kind="memory")
def kv_cache_gb(model, context, batch, kv_precision, unit):
    require_own_layout(model)
    return arch.kv_cache_bytes(model, context, batch, kv_precision) / MEMORY_UNITS[unit.lower()]
