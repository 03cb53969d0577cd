"""`flopsheet model import` on hostile config.json files (issue 23 item 6): every one is either
imported as a row the private catalog loads, or refused with a one-line reason (exit 2), never a
traceback; with `--add` a refused config writes nothing, so it can never make the catalog refuse
to load. The configs are built here from real ones, one break each."""

import copy
import json
import subprocess
import sys
from pathlib import Path

import pytest

from udfs.catalogs import catalog, hf_config
from udfs.cli import main as cli_main
from udfs.errors import MESSAGE_LIMIT, FlopsheetError

ROOT = Path(__file__).resolve().parent.parent
CONFIGS = Path(__file__).parent / "data" / "hf_configs"
DENSE = json.loads((CONFIGS / "Llama-3.2-1B.json").read_text())
MOE = json.loads((CONFIGS / "Qwen3-30B-A3B.json").read_text())
MLA = json.loads((CONFIGS / "DeepSeek-V3.json").read_text())
MULTIMODAL = json.loads((CONFIGS / "gemma-3-4b-it.json").read_text())
SCOUT = json.loads((CONFIGS / "Llama-4-Scout-17B-16E-Instruct.json").read_text())


def _with(base, **changes):
    config = copy.deepcopy(base)
    for k, v in changes.items():
        if v is _DROP:
            config.pop(k, None)
        else:
            config[k] = v
    return config


_DROP = object()


def _text_with(base, **changes):
    """A multimodal config with its `text_config` changed."""
    return _with(base, text_config=_with(base["text_config"], **changes))


def _nested(depth: int) -> str:
    return '{"model_type": "llama", "x": ' + "[" * depth + "]" * depth + "}"


# (label, what the file holds: a dict written as JSON, or raw text/bytes), and whether it must be refused
REFUSED = {
    "negative layers": _with(DENSE, num_hidden_layers=-5),
    "zero layers": _with(DENSE, num_hidden_layers=0),
    "fractional layers": _with(DENSE, num_hidden_layers=16.5),
    "layers as a list": _with(DENSE, num_hidden_layers=[16]),
    "layers as an object": _with(DENSE, num_hidden_layers={"n": 16}),
    "layers true": _with(DENSE, num_hidden_layers=True),
    "layers as words": _with(DENSE, num_hidden_layers="sixteen"),
    "layers 1e308": _with(DENSE, num_hidden_layers=1e308),
    "layers with 5000 digits": '{"model_type": "llama", "num_hidden_layers": ' + "9" * 5000 + "}",
    "negative hidden": _with(DENSE, hidden_size=-2048),
    "more KV heads than heads": _with(DENSE, num_key_value_heads=64),
    "heads not a multiple of KV heads": _with(DENSE, num_key_value_heads=7),
    "more heads than hidden": _with(DENSE, num_attention_heads=4096, num_key_value_heads=4096, head_dim=None),
    "zero heads": _with(DENSE, num_attention_heads=0),
    "NaN hidden": '{"model_type": "llama", "hidden_size": NaN, "num_hidden_layers": 2}',
    "Infinity vocab": '{"model_type": "llama", "vocab_size": Infinity}',
    "-Infinity layers": '{"model_type": "llama", "num_hidden_layers": -Infinity}',
    "missing intermediate_size": _with(DENSE, intermediate_size=_DROP),
    "null intermediate_size": _with(DENSE, intermediate_size=None),
    "missing hidden_size": _with(DENSE, hidden_size=_DROP),
    "missing model_type": _with(DENSE, model_type=_DROP),
    "model_type a list": _with(DENSE, model_type=["llama"]),
    "model_type unsupported": _with(DENSE, model_type="mamba"),
    "tie_word_embeddings as text": _with(DENSE, tie_word_embeddings="false"),
    "attention_bias a number": _with(DENSE, attention_bias=2),
    "text_config a list": _with(MULTIMODAL, text_config=[1, 2]),
    "text_config a string": _with(MULTIMODAL, text_config="llama"),
    "experts per token above experts (active above total)": _with(MOE, num_experts_per_tok=500),
    "negative experts": _with(MOE, num_experts=-8),
    "MoE without any expert width": _with(MOE, moe_intermediate_size=_DROP, intermediate_size=_DROP),
    "mlp_only_layers not a list": _with(MOE, mlp_only_layers=7),
    "mlp_only_layers of lists": _with(MOE, mlp_only_layers=[[1]]),
    "decoder_sparse_step zero": _with(MOE, decoder_sparse_step=0),
    "decoder_sparse_step negative": _with(MOE, decoder_sparse_step=-1),
    "first_k_dense_replace beyond the layers": _with(MLA, first_k_dense_replace=1000),
    "kv_lora_rank negative": _with(MLA, kv_lora_rank=-512),
    "kv_lora_rank a string": _with(MLA, kv_lora_rank="lots"),
    "MLA with different head widths": _with(MLA, v_head_dim=64),
    "sliding_window negative": _with(MOE, sliding_window=-4096, use_sliding_window=True),
    "sliding_window a list": _with(MOE, sliding_window=[4096], use_sliding_window=True),
    "use_sliding_window a string": _with(MOE, sliding_window=4096, use_sliding_window="yes"),
    "layer_types not a list": _with(MOE, sliding_window=4096, use_sliding_window=True, layer_types=5),
    "more local layers than layers": _with(MOE, sliding_window=4096, use_sliding_window=True,
                                           layer_types=["sliding_attention"] * 100),
    "attention_chunk_size negative": _text_with(SCOUT, attention_chunk_size=-8192),
    "no_rope_layers a number": _text_with(SCOUT, no_rope_layers=3),
    "no_rope_layers longer than the layers": _text_with(SCOUT, no_rope_layers=[1] * 500),
    "negative layers in text_config": _text_with(SCOUT, num_hidden_layers=-48),
    "sliding_window_pattern zero": _with(MULTIMODAL, sliding_window_pattern=0),
    "context length negative": _with(DENSE, max_position_embeddings=-1),
    "a top-level list": "[1, 2, 3]",
    "a top-level string": '"config"',
    "a top-level null": "null",
    "empty file": "",
    "not JSON": "{model_type: llama}",
    "truncated JSON": '{"model_type": "llama", "hidden_size": 20',
    "nested 100,000 deep": _nested(100_000),
    "non-UTF-8 bytes": b'{"model_type": "llama", "name": "\xff\xfe"}',
    "UTF-16 file": json.dumps(DENSE).encode("utf-16"),
    "a binary file": bytes(range(256)) * 4,
}
ACCEPTED = {
    "real dense config": DENSE,
    "UTF-8 with a byte-order mark": b"\xef\xbb\xbf" + json.dumps(DENSE).encode(),
    "numbers written as text": _with(DENSE, num_hidden_layers="16", hidden_size="2,048"),
    "whole numbers written as floats": _with(DENSE, num_hidden_layers=16.0),
    "nulls for optional fields": _with(DENSE, head_dim=None, num_key_value_heads=None, sliding_window=None),
    "unknown extra fields nested deep": _with(DENSE, extra={"a": {"b": {"c": [1, [2, [3]]]}}}),
    "_name_or_path not text": _with(DENSE, _name_or_path=["x"]),
    "real MoE config": MOE,
    "real MLA config": MLA,
    "real multimodal config": MULTIMODAL,
}


def _write(tmp_path: Path, content) -> Path:
    path = tmp_path / "config.json"
    if isinstance(content, dict):
        path.write_text(json.dumps(content))
    elif isinstance(content, bytes):
        path.write_bytes(content)
    else:
        path.write_text(content)
    return path


def test_there_are_many_hostile_kinds():
    assert len(REFUSED) + len(ACCEPTED) >= 60


def _import(tmp_path, content, capsys):
    path = _write(tmp_path, content)
    folder = tmp_path / "team"
    code = cli_main(["model", "import", str(path), "--name", "Hostile 1B", "--add", str(folder)])
    out = capsys.readouterr()
    return code, out, folder


@pytest.mark.parametrize("label", REFUSED)
def test_a_hostile_config_is_refused_with_one_line_and_writes_nothing(tmp_path, capsys, label):
    code, out, folder = _import(tmp_path, REFUSED[label], capsys)
    assert code == 2, (label, out.err)
    message = out.err.strip()
    assert message.startswith(("#VALUE!: ", "#NUM!: ")) and "\n" not in message and len(message) <= MESSAGE_LIMIT, message
    assert not (folder / "models.csv").exists()


@pytest.mark.parametrize("label", ACCEPTED)
def test_an_odd_but_valid_config_is_imported_as_a_row_that_loads(tmp_path, capsys, label):
    code, out, folder = _import(tmp_path, ACCEPTED[label], capsys)
    assert code == 0, (label, out.err)
    _, problems = catalog.validate([folder])
    assert problems == []


@pytest.mark.parametrize("label, words", [
    ("negative layers", ["num_hidden_layers must be >= 1", "got -5"]),
    ("more KV heads than heads", ["kv_heads (64) must not exceed heads (32)"]),
    ("experts per token above experts (active above total)", ["experts_per_token (500) must not exceed n_experts"]),
    ("NaN hidden", ["NaN", "not a number JSON allows"]),
    ("Infinity vocab", ["Infinity"]),
    ("layers as a list", ["num_hidden_layers must be a number, got a list"]),
    ("tie_word_embeddings as text", ["tie_word_embeddings must be true or false"]),
    ("nested 100,000 deep", ["nested too deeply"]),
    ("non-UTF-8 bytes", ["not UTF-8"]),
    ("missing intermediate_size", ["lacks intermediate_size"]),
])
def test_the_reason_is_named(tmp_path, label, words):
    path = _write(tmp_path, REFUSED[label])
    with pytest.raises(FlopsheetError) as e:
        hf_config.model_row(hf_config.read(path), "x", "x")
    for word in words:
        assert word in e.value.message, (word, e.value.message)


def test_the_command_exits_2_without_a_traceback(tmp_path):
    """Through the real command line, as a user runs it."""
    for label in ("negative layers", "NaN hidden", "nested 100,000 deep", "non-UTF-8 bytes", "layers as a list"):
        path = _write(tmp_path, REFUSED[label])
        run = subprocess.run([sys.executable, "-m", "udfs", "model", "import", str(path), "--add",
                              str(tmp_path / "team")], capture_output=True, text=True, cwd=ROOT, timeout=120,
                             check=False)
        assert run.returncode == 2 and "Traceback" not in run.stderr, (label, run.stderr)
        assert len(run.stderr.strip().splitlines()) == 1, run.stderr
    assert not (tmp_path / "team" / "models.csv").exists()
