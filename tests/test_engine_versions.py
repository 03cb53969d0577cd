"""Engines by version (issue 20 item 3): a profile states the versions it describes; an engine named
with a version resolves to the profile whose range holds it; the default states the release it answers for."""

import pytest

from udfs.api import registry
from udfs.catalogs import catalog, engines
from udfs.errors import FlopsheetError
from udfs.physics import calibration as cal, capacity


@pytest.mark.parametrize("name,profile", [
    ("vLLM 0.5.4", "vLLM V0"), ("vllm v0.6.3", "vLLM V0"), ("vllm-v0", "vLLM V0"), ("vLLM 0.7.3", "vLLM V0"),
    ("vllm 0.4.0.post1", "vLLM V0"), ("vLLM", "vLLM"), ("vLLM V1", "vLLM"), ("vllm 0.9.0", "vLLM"),
    ("vLLM 0.10.2", "vLLM"), ("vLLM v0.10.1rc1", "vLLM"), ("SGLang 0.4.1", "SGLang"), ("trtllm 1.0.0", "TensorRT-LLM")])
def test_a_version_picks_its_profile(name, profile):
    assert engines.engine(name).name == profile


def test_the_default_is_the_release_deployed_today_with_its_defaults():
    """'vLLM' answers for 0.33.0, the newest on PyPI (2026-11-24), with 0.33.0's defaults read in its wheel: 0.92 of
    memory (0.90 to 0.19.1), 16,384 tokens on GPUs of 160 GiB or more and CUDA graphs to 1,024 on B200 (from 0.28.0);
    a named older release answers with its own (engine_releases.csv); 0.8.0-0.8.5 are #N/A saying why."""
    mi300x, b200, h100 = catalog.gpu("MI300X"), catalog.gpu("B200"), catalog.gpu("H100")
    default = engines.engine("", mi300x)
    assert default.name == "vLLM" and default.covers((0, 10, 2)) and not default.covers((0, 7, 3))
    assert (default.release, default.newest_release, default.memory_fraction) == ("0.33.0", "0.33.0", 0.92)
    assert "0.33.0" in default.version and "0.33.0" in engines.DEFAULT_ENGINE_TEXT
    assert (default.token_budget(mi300x), default.token_budget(b200), default.token_budget(h100)) == (16384, 16384, 8192)
    assert (default.graph_cap(b200), default.graph_cap(h100), default.graph_cap(mi300x)) == (1024, 512, 512)
    old, mid = engines.engine("vLLM 0.19.1"), engines.engine("vLLM 0.27.0")
    assert (old.release, old.memory_fraction, old.token_budget(b200), old.graph_cap(b200)) == ("0.19.1", 0.90, 8192, 512)
    assert (mid.memory_fraction, mid.token_budget(mi300x), mid.graph_cap(b200)) == (0.92, 8192, 512)
    assert engines.engine("vLLM 0.28.0").token_budget(b200) == 16384 and engines.engine("vLLM 0.20.0").memory_fraction == 0.92
    for release in ("0.8.0", "0.8.3", "0.8.5"):
        with pytest.raises(FlopsheetError) as info:
            engines.engine(f"vLLM {release}")
        assert info.value.code == "#N/A" and "not hold" in info.value.message
    assert all(e.version for e in engines.engines() if e.family)


def test_each_release_row_is_complete_or_says_why_not():
    """Every row of engine_releases.csv either sets every default the profile's own release row sets for it (a blank
    tier is no tier) with its source and as_of, or is not held with its reason; rows do not overlap and lie inside
    their profile's range."""
    rows = engines.release_defaults()
    assert rows
    for row in rows:
        profile = engines.engine(row.engine)
        assert row.source and row.as_of and profile.version_range
        lo = engines._numbers(row.version_range.split("-")[0])
        assert profile.covers(lo)
        if not row.not_held:
            assert row.memory_fraction and row.max_batch and row.max_num_tokens and row.graph_max_batch
        others = [r for r in rows if r is not row and r.engine == row.engine]
        assert not any(engines._in_range(lo, r.version_range) for r in others)


def test_the_start_up_sampler_sorts_up_to_0_16_and_works_in_place_from_0_17():
    """vLLM's profile run samples 1,024 rows of Llama 3.1 8B's 128,256-entry vocabulary on an H100: PyTorch's sort to
    0.16 (calibration.SAMPLER_PEAK_BYTES a row x entry), the in-place Triton (then FlashInfer) path from 0.17.0
    (SAMPLER_PEAK_BYTES_IN_PLACE); the sampler, not the forward pass, sets the peak at both."""
    model, h100 = catalog.model("Llama 3.1 8B"), catalog.gpu("H100")
    sort, in_place = engines.engine("vLLM 0.16.0"), engines.engine("vLLM 0.17.0")
    assert sort.sampler_sorts and not in_place.sampler_sorts and not engines.engine("vLLM").sampler_sorts
    for eng, per_entry in ((sort, cal.SAMPLER_PEAK_BYTES), (in_place, cal.SAMPLER_PEAK_BYTES_IN_PLACE)):
        assert capacity.profile_run_gib(model, h100, 1, eng) == pytest.approx(1024 * 128256 * per_entry / 2**30)


def test_the_release_named_moves_the_estimate_by_its_defaults():
    """Llama 3.1 8B on one B200: 0.33.0's 0.92 memory share and 16,384-token profile run against 0.19.1's 0.90 and
    8,192 change the KV budget by the memory share's difference less the larger profile run, and nothing else."""
    model, b200 = catalog.model("Llama 3.1 8B"), catalog.gpu("B200")
    new, old = engines.engine("vLLM"), engines.engine("vLLM 0.19.1")
    gap = capacity.kv_budget_gib(model, b200, "bf16", 1, new) - capacity.kv_budget_gib(model, b200, "bf16", 1, old)
    expected = (b200.memory_gib * (0.92 - 0.90)
                - (capacity.profile_run_gib(model, b200, 1, new) - capacity.profile_run_gib(model, b200, 1, old)))
    assert gap == pytest.approx(expected) and gap != 0


def test_the_multi_step_profile_is_v0_with_its_cpu_time_spread_over_the_window():
    """vLLM V0 with --num-scheduler-steps 10 does V0's CPU work between steps once per 10 decode steps (vLLM RFC
    #6854): its time per step and per running sequence are V0's / 10 (V0's per-sequence time as V0's rows choose
    it, not the prior), its kernels V0's; nothing retyped that could go stale when V0's value is re-chosen."""
    v0, multi = engines.engine("vLLM V0"), engines.engine("vLLM V0 multi-step")
    assert multi.scheduler_steps == 10
    assert multi.step_overhead_us == pytest.approx(v0.step_overhead_us / 10)
    assert multi.sequence_overhead_us == pytest.approx(v0.sequence_overhead_us / 10)
    assert multi.layer_overhead_us == v0.layer_overhead_us and multi.graph_max_batch == v0.graph_max_batch


def test_v0_waits_for_the_cpu_between_steps():
    """The V0 engine's step carries the CPU work the GPU waits for (vLLM RFC #6854 per step, RFC #6801 per running
    sequence), so one stream decodes slower than on V1 by the difference of their fixed times, and nothing else;
    a batch of 64 by 63 more sequences' CPU time on top (V1 overlaps it: blank)."""
    model, gpu = catalog.model("Llama 3.1 8B"), catalog.gpu("H100")
    v0, v1 = engines.engine("vLLM 0.5.4"), engines.engine("vLLM 0.9.2")
    assert v0.sequence_overhead_us and not v1.sequence_overhead_us
    old, new = (capacity.decode_step(model, gpu, "bf16", 1, 1024, 1, None, e) for e in (v0, v1))
    fixed = (v0.step_overhead_us - v1.step_overhead_us + model.layers * (v0.layer_overhead_us - v1.layer_overhead_us)
             + v0.sequence_overhead_us)
    assert old.total - new.total == pytest.approx(fixed * 1e-6) and old.total > new.total
    old64, new64 = (capacity.decode_step(model, gpu, "bf16", 64, 1024, 1, None, e) for e in (v0, v1))
    assert (old64.overhead - new64.overhead) - (old.overhead - new.overhead) \
        == pytest.approx(63 * v0.sequence_overhead_us * 1e-6)
    assert registry.call("DECODE_TOKENS_PER_SEC", "Llama 3.1 8B", "H100", "bf16", 1, 1024, 1, "vllm-v0") \
        == pytest.approx(1 / old.total)


@pytest.fixture
def private(private_catalog):
    """A private catalog folder holding one engines.csv (conftest.private_catalog)."""
    return lambda text: private_catalog("engines.csv", text)


COLUMNS = ("name,aliases,multi_gpu,memory_rule,memory_fraction,activation_reserve_gib,kv_reservation,kv_precision,"
           "precisions,bandwidth_fraction_hbm,bandwidth_fraction_gddr,quantized_factor,layer_overhead_us,"
           "step_overhead_us,matmul_fraction_16,matmul_fraction_8,matmul_fraction_4,family,version,version_range,"
           "source,as_of\n")
ROW = "tensor,total,0.90,1.5,mean,16bit,fp16,0.80,0.90,0.90,10,300,0.70,0.45,0.35"


def test_a_version_no_profile_covers_is_na_naming_those_that_are(private):
    private(COLUMNS + f"Acme 1,acme-1,{ROW},Acme,1.x,1-1.9,ours,2026-11\n"
                      f"Acme 3,acme-3,{ROW},Acme,3.0 and later,3-,ours,2026-11\n")
    assert engines.engine("Acme 1.4.0").name == "Acme 1" and engines.engine("acme 3.2.1").name == "Acme 3"
    with pytest.raises(FlopsheetError) as info:
        engines.engine("Acme 2.5.0")
    assert info.value.code == "#N/A" and "2.5" in info.value.message and "Acme 1: 1.x" in info.value.message


# Releases as a worksheet user types them (issue 20 item 3, last pass's review): a release must lie in the named
# profile's range and be no newer than the family's newest published release (engines.csv newest_release).
@pytest.mark.parametrize("typed,why", [
    ("vLLM 99.1", "newer than vLLM's newest release 0.33.0"),
    ("vLLM 0.34", "newer than vLLM's newest release 0.33.0"),
    ("vLLM V0 0.10.1", "describes releases up to 0.7"),       # V0 named: resolves within V0 or is refused
    ("vLLM V1 0.5", "describes releases 0.8 to 0.33.0"),      # the V1 profile named with a V0-era release
    ("vLLM latest", "'latest' is not a release of vLLM"),
    ("vLLM banana", "'banana' is not a release of vLLM"),
    ("SGLang 0.6", "newer than SGLang's newest release 0.5.23"),
    ("SGLang 0.2.15", "outside the releases SGLang's profiles describe"),
    ("trtllm 1.4.0", "newer than TensorRT-LLM's newest release 1.4.0rc1"),    # the final after its release candidate
    ("TGI 4.0", "outside the releases Text Generation Inference's profiles describe"),
    ("llama.cpp 99", "llama.cpp's profile states no releases"),
    ("llama.cpp b4000", "'b4000' is not a release of llama.cpp"),
    ("Intel Gaudi software 1.17", "outside the releases Intel Gaudi software's profiles describe"),
    ("intel gaudi software 1.18", "outside the releases Intel Gaudi software's profiles describe"),  # no alias now
    ("vLLM 0.10", "'0.10' is not a release number"),          # a series: its releases' kernels differ
    ("vLLM 0.11", "'0.11' is not a release number"),
    ("vLLM -1", "'-1' is not a release of vLLM"),              # a sign, not release 1
    ("ollama 0.5.7", "ollama runs llama.cpp's profile, which states no releases"),
    ("vLLM \uff11", "a release is written in ASCII digits"),  # full-width digits
    ("vLLM \uff10.\uff11\uff10.\uff11", "a release is written in ASCII digits"),
])
def test_a_release_outside_what_the_profile_describes_is_value_naming_the_range(typed, why):
    with pytest.raises(FlopsheetError) as info:
        engines.engine(typed)
    assert info.value.code == "#VALUE!" and why in info.value.message
    with pytest.raises(FlopsheetError) as cell:            # the same typed into a worksheet function's engine cell
        registry.call("DECODE_TOKENS_PER_SEC", "Llama 3.1 8B", "H100", "bf16", 1, 1024, 1, typed)
    assert cell.value.code == "#VALUE!" and why in cell.value.message


@pytest.mark.parametrize("typed,profile,release", [
    ("vLLM 0.9.2", "vLLM", "0.9.2"), ("vLLM 0.19.1", "vLLM", "0.19.1"), ("vllm v0.10.1rc1", "vLLM", "0.10.1rc1"),
    ("vLLM V0 0.6.3", "vLLM V0", "0.6.3"), ("vllm-v0 0.7.3", "vLLM V0", "0.7.3"),
    ("trtllm 1.3.0rc14", "TensorRT-LLM", "1.3.0rc14"), ("SGLang 0.5.12", "SGLang", "0.5.12"),
    ("TGI 3.3.5", "Text Generation Inference", "3.3.5"), ("Intel Gaudi software 1.18.0", "Intel Gaudi software", "1.18.0")])
def test_a_release_within_the_range_resolves_in_the_profile_named(typed, profile, release):
    found = engines.engine(typed)
    assert (found.name, found.release) == (profile, release)


def test_v0_named_with_its_release_answers_with_v0s_figures():
    """'vLLM V0 0.6.3' is V0 (4 ms a step of CPU time the GPU waits for, 242.5 us a sequence), not V1: one Llama 3.1 8B
    stream on one H100 decodes at V0's rate, slower than V1's by V0's CPU time per step."""
    v0, v1 = engines.engine("vLLM V0"), engines.engine("vLLM")

    def rate(name):
        return registry.call("DECODE_TOKENS_PER_SEC", "Llama 3.1 8B", "H100", "bf16", 1, 1024, 1, name)
    assert rate("vLLM V0 0.6.3") == rate("vLLM V0") < rate("vLLM 0.9.2") == rate("vLLM")
    gap_s = 1 / rate("vLLM V0 0.6.3") - 1 / rate("vLLM")
    assert gap_s * 1e6 == pytest.approx(4000 + 242.489 - 300 + 32 * (46.0 - 48.8), abs=0.5)
    assert (v0.step_overhead_us, v0.sequence_overhead_us, v1.step_overhead_us) == (4000, 242.489, 300)


@pytest.mark.parametrize("cell,why", [
    ("latest", "'latest' is not a release number"), ("banana", "'banana' is not a release number"),
    ("0.10", "'0.10' is not a release number"), ("0.7.3", "'0.7.3' is outside the row's version_range '0.8-'"),
    ("0.34.0", "newer than newest_release '0.33.0'")])
def test_a_private_release_cell_is_checked(private, cell, why):
    """A private row's `release` (the release 'vLLM' answers for) must be a full release number in the profile's range,
    no newer than the newest published: the row is refused with its file, line and column."""
    private(f"name,release\nvLLM,{cell}\n")
    with pytest.raises(FlopsheetError) as info:
        engines.engine("vLLM")
    assert "column release" in info.value.message and why in info.value.message


def test_a_private_version_range_is_checked(private):
    private("name,version_range\nvLLM V0,banana\n")
    with pytest.raises(FlopsheetError) as info:
        engines.engine("vLLM V0")
    assert "column version_range" in info.value.message and "'banana' is not a range of releases" in info.value.message


def test_a_private_release_newer_than_the_newest_published_is_refused(private):
    private("name,version_range,release\nvLLM,0.8-,0.34.0\n")
    with pytest.raises(FlopsheetError) as info:
        engines.engine("vLLM")
    assert "column release" in info.value.message and "newer than newest_release '0.33.0'" in info.value.message


@pytest.mark.parametrize("release", ["0.10", "0.11", "0.10.1", "0.10.1.1", "0.19.1", "0.13.0rc1", "0.33.0", "1"])
def test_one_rule_reads_a_release_in_a_cell_and_in_a_catalog(release, private):
    """Review item 9: a release a worksheet accepts ('vLLM 0.10.1') is one a private engines.csv `release` cell accepts,
    and a series one refuses ('0.10') the other refuses too (engines.release_problem for both)."""
    try:
        engines.engine(f"vLLM {release}")
        typed = True
    except FlopsheetError as e:
        assert e.code == "#VALUE!"
        typed = False
    private(f"name,release\nvLLM,{release}\n")
    try:
        engines.engine("vLLM")
        cell = True
    except FlopsheetError as e:
        assert "column release" in e.message
        cell = False
    assert typed == cell == (len(release.split(".")) >= 3)


def test_habana_is_no_alias_and_the_gaudi_profile_states_its_release():
    """Review item 13: 'habana' is a vendor word the name index drops, so it named nothing (a dead alias): it is unknown,
    said so with the Gaudi profile among the names; the profile answers for 1.18.0, Intel's table's release."""
    with pytest.raises(FlopsheetError) as info:
        engines.engine("habana")
    assert info.value.code == "#N/A" and "Intel Gaudi software" in info.value.message
    gaudi = engines.engine("", catalog.gpu("Gaudi 3"))
    assert (gaudi.name, gaudi.release) == ("Intel Gaudi software", "1.18.0")
    assert "habana" not in gaudi.aliases and engines.engine("Intel Gaudi software 1.18.0").release == "1.18.0"


def test_sglang_and_tensorrt_llm_say_which_release_they_hold():
    """Review item 12: SGLang holds 0.4.0's defaults (its wheel's server_args) and says so; TensorRT-LLM's docs name no
    release and its profile says that instead of claiming one."""
    sglang, trt = engines.engine("SGLang"), engines.engine("TensorRT-LLM")
    assert sglang.release == "0.4.0" and "0.4.0's defaults" in sglang.version and "sglang 0.4.0 wheel" in sglang.source
    assert trt.release == "" and "no release stated" in trt.version
    assert sglang.as_of == trt.as_of == "2026-11-24"
