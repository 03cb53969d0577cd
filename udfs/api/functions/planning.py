"""Capacity planning (Q4) and the roofline (Q5) from the lesson's worked answers."""

from dataclasses import replace

from ...physics import lesson
from ...catalogs.catalog import Gpu
from ...errors import value_error
from ..registry import Arg, worksheet
from .common import HEADROOM, PRECISION, positive


@worksheet("TOKENS_PER_SEC_NEEDED", "Output tokens per second a service must sustain: requests per minute / 60 x "
           "tokens per request x (1 + burst headroom).", "tokens/s", "Planning",
           [positive("requests_per_minute", "Requests per minute", "requests/min"),
            positive("tokens_per_request", "Output tokens per request", "tokens"),
            replace(HEADROOM, help="Burst headroom on top of the average")],
           examples=[((1000, 200), 4000.0), ((1000, 200, 0), 3333.333)],
           formula='{requests_per_minute}/60*{tokens_per_request}*(1+{headroom})', kind="rate")
def tokens_per_sec_needed(requests_per_minute, tokens_per_request, headroom):
    return lesson.tokens_per_sec_needed(requests_per_minute, tokens_per_request, headroom)


@worksheet("INSTANCES_NEEDED", "Serving instances needed: required throughput / throughput per instance, rounded up.",
           "instances", "Planning",
           [positive("tokens_per_sec_needed", "Throughput to sustain", "tokens/s"),
            positive("tokens_per_sec_per_instance", "Throughput of one instance", "tokens/s")],
           examples=[((4000, 400), 10), ((4001, 400), 11)],
           formula='ROUNDUP({tokens_per_sec_needed}/{tokens_per_sec_per_instance}-1E-9,0)', kind="count")
def instances_needed(tokens_per_sec_needed, tokens_per_sec_per_instance):
    return lesson.instances_needed(tokens_per_sec_needed, tokens_per_sec_per_instance)


@worksheet("TOKENS_PER_SEC_PER_REQUEST", "Generation speed one request needs to finish within a latency target: "
           "tokens / seconds.", "tokens/s per request", "Planning",
           [positive("tokens_per_request", "Output tokens per request", "tokens"),
            positive("latency_s", "Latency target (e.g. p95)", "s")],
           examples=[((200, 5), 40.0)],
           formula='{tokens_per_request}/{latency_s}', kind="rate")
def tokens_per_sec_per_request(tokens_per_request, latency_s):
    return tokens_per_request / latency_s


@worksheet("RIDGE_POINT", "Roofline ridge point: peak dense tensor FLOPs / memory bandwidth. Workloads with a higher "
           "arithmetic intensity are compute-bound, lower ones bandwidth-bound. Give a GPU name, or peak TFLOPS and "
           "bandwidth_tbs.", "FLOPs/byte", "Planning",
           [Arg("gpu_or_tflops", "gpu_or_tflops", "GPU name, or peak TFLOPS as a number", "name or TFLOPS",
                min=0, min_open=True),
            PRECISION,
            Arg("bandwidth_tbs", "number", "Memory bandwidth when a TFLOPS number is given", "TB/s", default="",
                min=0, min_open=True)],
           examples=[((312, "bf16", 2.0), 156.0), (("A100 SXM 80GB",), 153.016), (("H100",), 295.373)], kind="ratio")
def ridge_point(gpu_or_tflops, precision, bandwidth_tbs):
    tflops = gpu_or_tflops
    if isinstance(gpu_or_tflops, Gpu):                # a catalog GPU: its peak and bandwidth
        tflops = gpu_or_tflops.tensor_peak(precision, "the ridge point").tflops
        bandwidth_tbs = bandwidth_tbs or gpu_or_tflops.bandwidth_tbs
    if not bandwidth_tbs:
        raise value_error("bandwidth_tbs is required when gpu_or_tflops is a number")
    return lesson.ridge_point(tflops, bandwidth_tbs)


@worksheet("ARITHMETIC_INTENSITY", "Arithmetic intensity of one weight matrix (d_in x d_out) applied to a number of "
           "tokens: 2 x tokens x d_in x d_out FLOPs per weight byte loaded. Batch-1 decode in 16-bit is 1.",
           "FLOPs/byte", "Planning",
           [positive("tokens", "Tokens multiplied at once (batch x sequence; 1 for batch-1 decode)", "tokens"),
            positive("d_in", "Matrix input size", "elements", default=4096),
            positive("d_out", "Matrix output size", "elements", default=16384),
            PRECISION],
           examples=[((1,), 1.0), ((32 * 2048,), 65536.0), ((1, 4096, 16384, "int4"), 4.0)], kind="ratio")
def arithmetic_intensity(tokens, d_in, d_out, precision):
    return lesson.matmul_intensity(tokens, d_in, d_out, precision.bytes_per_param)
