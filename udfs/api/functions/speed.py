"""Speed: the lesson's bandwidth-bound decode estimate and its per-token latency."""

from ...physics import lesson
from ..registry import worksheet
from .common import BATCH, EFFICIENCY, GPU_OR_BANDWIDTH, MODEL_SIZE_GB

SPEED_ARGS = [GPU_OR_BANDWIDTH, MODEL_SIZE_GB, BATCH, EFFICIENCY]


@worksheet("GPU_TOKENS_PER_SEC", "Decode speed when memory bandwidth is the limit (the lesson's formula): "
           "batch x bandwidth x efficiency / model size.", "tokens/s", "Speed", SPEED_ARGS,
           examples=[(("H100", 14), 167.5), ((3.35, 14), 167.5), ((2.0, 26), 53.846), ((3.35, 14, 1, 1), 239.286)],
           formula='{batch}/({model_size_gb}*1E9/({gpu_or_bandwidth}*1E12*{efficiency}))', kind="rate")
def gpu_tokens_per_sec(gpu_or_bandwidth, model_size_gb, batch, efficiency):
    return lesson.tokens_per_sec(gpu_or_bandwidth, model_size_gb, batch, efficiency)


@worksheet("TOKEN_LATENCY_MS", "The lesson's per-token latency: time to stream the model once, divided by the batch.",
           "ms/token", "Speed", SPEED_ARGS, examples=[(("H100", 14), 5.970), ((2.0, 26), 18.571)],
           formula='{model_size_gb}*1E9/({gpu_or_bandwidth}*1E12*{efficiency})/{batch}*1000', kind="time")
def token_latency_ms(gpu_or_bandwidth, model_size_gb, batch, efficiency):
    return lesson.token_latency_ms(gpu_or_bandwidth, model_size_gb, batch, efficiency)
