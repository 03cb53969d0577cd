"""What backs an estimate: the measured rows of its regime, the nearest measured configuration
and the error band (udfs/physics/evidence.py; docs/accuracy.md, Evidence per estimate)."""

from ...physics import evidence
from ..registry import Arg, worksheet
from .common import ENGINE, GPU, MODEL, N_GPUS, PRECISION

WORKLOADS = {"serving": "throughput", "decode": "decode", "prefill": "prefill", "training": "training",
             "memory": "memory", "training_memory": "training_memory"}


@worksheet("ESTIMATE_EVIDENCE", "What backs an estimate for a model on a GPU: how many measured rows share its "
           "regime (metric, engine, GPU family, dense or MoE, one GPU or parallel) and, where they are not all in the "
           "format asked, which formats they measured (bf16 and fp16 count for each other), the P10 / P90 of their "
           "out-of-sample error (the band estimate = low / high uses), and the nearest measured configuration with "
           "its error. Says \"no measurement\" where nothing measured the regime; its band is then wider "
           "(docs/accuracy.md states the rule).", "evidence text", "Planning",
           [MODEL, GPU, PRECISION, ENGINE,
            Arg("workload", "choice", "Which estimate: serving (throughput at load: SERVING_THROUGHPUT, "
                "GPUS_FOR_TRAFFIC, cost per token), decode (one sequence), prefill (time to first token), training "
                "(TRAINING_GPU_HOURS), memory (serving memory) or training_memory (TRAINING_MEMORY_GB, LORA_MEMORY_GB, "
                "QLORA_MEMORY_GB); blank: serving", choices=tuple(WORKLOADS), default=""),
            N_GPUS],
           returns="text",
           examples=[(("Llama 3.1 405B", "H100", "fp8", "", "memory", 8),
                      "1 measured row in this regime (memory: NVIDIA H100, dense, parallel); error band P10 -18%, "
                      "P90 +0% (P10/P90 of its rows and of the 4 rows of its metric level); nearest measured: "
                      "Llama 3.1 405B | inference weights (vLLM) | FP8 | H100 80GB | 8 | weights per GPU (memory) "
                      "(-18.2% out of sample)"),
                     (("Llama 3.1 70B", "B200", "fp8", "", "memory", 2),
                      "no measurement in this regime (memory: NVIDIA B200, dense, parallel); error band P10 -34%, "
                      "P90 +0% (the 4 rows of its metric level, widened x3 in log space, and no narrower than any "
                      "measured regime among them); nearest measured configuration, outside this regime: "
                      "gpt-oss-120b | inference weights (vLLM) | MXFP4 | H100 80GB | 1 | weights per GPU (memory) "
                      "(-0.2% out of sample)")], kind="text")
def estimate_evidence(model, gpu, precision, engine, workload, n_gpus):
    return evidence.for_option(WORKLOADS[workload or "serving"], model, gpu, precision, n_gpus, engine).text()
