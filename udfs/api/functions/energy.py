"""Energy and carbon (udfs/physics/energy.py): kWh, joules and carbon per token at SERVING_THROUGHPUT's
operating point, per training run from TRAINING_GPU_HOURS, what fits in a power envelope, and the
sourced grid-intensity table (udfs/data/grid_intensity.csv). docs/energy.md explains the basis."""

from dataclasses import replace

from ...catalogs import grid
from ...physics import economics, energy
from ..registry import Arg, worksheet
from ..table import Table
from .common import GPU, MODEL, positive
from .compute import MFU, ON_GPUS, TOKENS, training_gpu_hours
from .common import MODEL_OR_PARAMS, PRECISION
from .economics import PUE as LESSON_PUE
from .serving import SERVING_ARGS, serving_throughput

POWER_AUTO = positive("power_w", "Power of the server per GPU while it works (blank: the GPU's TDP x "
                      f"{economics.SYSTEM_POWER_FACTOR:.2f}, NVIDIA DGX H100's 10.2 kW for 8 x 700 W GPUs: the most "
                      "the server is rated to draw, so the result is an upper bound; give a measured power for a "
                      "closer figure)", "W", default="")
PUE = replace(LESSON_PUE, default=economics.DC_PUE,
              help="Facility power usage effectiveness: the grid draws the servers' power x PUE (default 1.58, "
                   "unlike the lesson's 1: the Uptime Institute survey average, as DATACENTER_COST_PER_GPU_MONTH; "
                   "~1.3 new colocation, 1.1-1.2 hyperscale; 1 for the IT power alone)")
REGION = Arg("region", "text", "Grid region: a country (\"France\" or \"FRA\"), a group (\"World\", \"EU\") or a "
             "Google Cloud region (\"gcp europe-west4\": the provider is named, as AWS us-east-1 and Google us-east1 "
             "are different grids); GRID_INTENSITY_LIST lists them with source and year")
ENERGY_PARTS = ("kwh_per_1m_tokens", "tokens_per_kwh", "joules_per_token", "tokens_per_sec_per_mw", "kw")
EXAMPLE = ("Llama 3.1 8B", "H100 SXM", "fp8", 2048, 2048)
AT_POINT = ("at SERVING_THROUGHPUT's operating point for the same inputs (the prompts' prefill is in the same "
            "GPU-seconds, so every joule is charged to the output tokens, as COST_PER_1M_OUTPUT_TOKENS charges "
            "every dollar)")


def _serving(model, gpu, precision, prompt_tokens, output_tokens, n_gpus, max_tpot_ms, engine, kv_precision,
             power_w, pue) -> dict[str, float]:
    """Every energy figure of one model copy at its operating point."""
    tokens_per_sec = serving_throughput(model, gpu, precision, prompt_tokens, output_tokens, n_gpus, max_tpot_ms,
                                        engine, kv_precision, "point")
    watts = energy.power_per_gpu_w(gpu, power_w or None, "energy at the serving operating point")
    figures = (tokens_per_sec, n_gpus, watts, pue)
    return {"kwh_per_1m_tokens": energy.kwh_per_1m_tokens(*figures), "tokens_per_kwh": energy.tokens_per_kwh(*figures),
            "joules_per_token": energy.joules_per_token(*figures),
            "tokens_per_sec_per_mw": energy.tokens_per_sec_per_mw(*figures),
            "kw": energy.facility_kw(n_gpus, watts, pue)}


@worksheet("ENERGY_PER_1M_TOKENS_KWH", "Energy from the grid per million output tokens: n_gpus x power_w x PUE / "
           f"(output tokens/s x 3,600) x 1e6 / 1,000, {AT_POINT}. part = kwh_per_1m_tokens (default), "
           "tokens_per_kwh, joules_per_token (n_gpus x power_w x PUE / tokens/s), tokens_per_sec_per_mw (output "
           "tokens/s a megawatt of facility power serves) or kw (the copy's draw from the grid).",
           "kWh per 1M output tokens", "Energy",
           SERVING_ARGS + [POWER_AUTO, PUE, Arg("part", "choice", "What to return", choices=ENERGY_PARTS,
                                                default="kwh_per_1m_tokens")],
           examples=[(EXAMPLE, 0.06231), (EXAMPLE + (1, "", "", "", 700, 1, "joules_per_token"), 0.077945)],
           kind="energy")
def energy_per_1m_tokens_kwh(model, gpu, precision, prompt_tokens, output_tokens, n_gpus, max_tpot_ms, engine,
                             kv_precision, power_w, pue, part):
    return _serving(model, gpu, precision, prompt_tokens, output_tokens, n_gpus, max_tpot_ms, engine, kv_precision,
                    power_w, pue)[part]


@worksheet("CARBON_PER_1M_TOKENS_KG", "Greenhouse gas per million output tokens: ENERGY_PER_1M_TOKENS_KWH x the "
           "region's grid intensity (GRID_INTENSITY) / 1,000, in kg CO2-equivalent. Location-based: the grid's "
           "average, before any renewable purchases of the operator. An unknown region is #N/A naming it.",
           "kg CO2e per 1M output tokens", "Energy",
           [MODEL, GPU, REGION] + SERVING_ARGS[2:] + [POWER_AUTO, PUE],
           examples=[(("Llama 3.1 8B", "H100 SXM", "World", "fp8", 2048, 2048), 0.029469)], kind="emissions")
def carbon_per_1m_tokens_kg(model, gpu, region, precision, prompt_tokens, output_tokens, n_gpus, max_tpot_ms, engine,
                            kv_precision, power_w, pue):
    kwh = _serving(model, gpu, precision, prompt_tokens, output_tokens, n_gpus, max_tpot_ms, engine, kv_precision,
                   power_w, pue)["kwh_per_1m_tokens"]
    return energy.carbon_kg(kwh, grid.region(region).g_co2e_per_kwh)


def _training_kwh(model_or_params, tokens, gpu, mfu, precision, power_w, pue, n_gpus) -> float:
    hours = training_gpu_hours(model_or_params, tokens, gpu, mfu, precision, "point", "run", n_gpus, "full")  # held all run
    return energy.training_kwh(hours, energy.power_per_gpu_w(gpu, power_w or None, "a training run's energy"), pue)


TRAINING_ARGS = [MODEL_OR_PARAMS, TOKENS, GPU]


@worksheet("TRAINING_ENERGY_KWH", "Energy from the grid for a training run: TRAINING_GPU_HOURS x power_w x PUE / "
           "1,000 (every GPU busy for the whole run; n_gpus as TRAINING_GPU_HOURS's).", "kWh", "Energy",
           TRAINING_ARGS + [MFU, PRECISION, POWER_AUTO, PUE, ON_GPUS],
           examples=[(("Llama 2 7B", 2e12, "A100"), 198_346)], kind="energy")
def training_energy_kwh(model_or_params, tokens, gpu, mfu, precision, power_w, pue, n_gpus):
    return _training_kwh(model_or_params, tokens, gpu, mfu, precision, power_w, pue, n_gpus)


@worksheet("TRAINING_CARBON_KG", "Greenhouse gas of a training run: TRAINING_ENERGY_KWH x the region's grid "
           "intensity (GRID_INTENSITY) / 1,000, in kg CO2-equivalent (location-based).", "kg CO2e", "Energy",
           TRAINING_ARGS + [REGION, MFU, PRECISION, POWER_AUTO, PUE, ON_GPUS],
           examples=[(("Llama 2 7B", 2e12, "A100", "World"), 93_806)], kind="emissions")
def training_carbon_kg(model_or_params, tokens, gpu, region, mfu, precision, power_w, pue, n_gpus):
    kwh = _training_kwh(model_or_params, tokens, gpu, mfu, precision, power_w, pue, n_gpus)
    return energy.carbon_kg(kwh, grid.region(region).g_co2e_per_kwh)


@worksheet("GPUS_FOR_POWER_KW", "Whole GPUs (or whole systems) a power envelope holds: power_kw x 1,000 / "
           "(power_w x PUE), rounded down; systems of GPU_SPEC(gpu, \"system_gpus\") GPUs each. power_kw is what the "
           "site may draw from the grid (give PUE 1 for an IT-power budget).", "GPUs", "Energy",
           [positive("power_kw", "Power envelope: what the site may draw from the grid", "kW"), GPU, PUE, POWER_AUTO,
            Arg("part", "choice", "gpus (default) or systems", choices=("gpus", "systems"), default="gpus")],
           examples=[((1000, "H100"), 496), ((1000, "H100", 1.58, "", "systems"), 62)], kind="count")
def gpus_for_power_kw(power_kw, gpu, pue, power_w, part):
    watts = energy.power_per_gpu_w(gpu, power_w or None, "the GPUs a power envelope holds")
    if part == "gpus":
        return energy.whole_units_in(power_kw, watts, pue)
    per_system = gpu.need("system_gpus", "the systems a power envelope holds")
    return energy.whole_units_in(power_kw, watts * per_system, pue)


@worksheet("GRID_INTENSITY", "Carbon intensity of a region's electricity: grams of CO2-equivalent per kWh, from "
           "the sourced table GRID_INTENSITY_LIST shows (Ember's yearly data for countries and groups, lifecycle; "
           "Google's region carbon data for Google Cloud regions, operational). Unknown region: #N/A naming it.",
           "g CO2e/kWh", "Energy", [REGION],
           examples=[(("World",), 472.94), (("gcp europe-west4",), 208.81), (("France",), 44.18)], kind="emissions")
def grid_intensity(region):
    return grid.region(region).g_co2e_per_kwh


GRID_COLUMNS = ["region", "kind", "g_co2e_per_kwh", "year", "basis", "source", "as_of"]


@worksheet("GRID_INTENSITY_LIST", "Every region of the grid-intensity table: name, kind (country, group, cloud "
           "region), g CO2e per kWh, the year it describes, its basis (lifecycle or operational), source and date.",
           "table", "Energy", [], returns="table", examples=[((), None)], kind="table")
def grid_intensity_list():
    return Table(GRID_COLUMNS, [[getattr(r, c) for c in GRID_COLUMNS] for r in grid.intensities()])
