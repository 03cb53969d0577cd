"""A model and a price added through FLOPSHEET_CATALOG are what the team server answers
with: `flopsheet serve` started on 127.0.0.1 with the variable set, called as Excel does."""

import importlib.util

import pytest

httpx = pytest.importorskip("httpx")
if importlib.util.find_spec("xlwings_server") is None:
    pytest.skip("xlwings-server is not installed (pip install 'flopsheet[server]')", allow_module_level=True)

from .serve import start_serve, stop  # noqa: E402

pytestmark = pytest.mark.server


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    folder = tmp_path_factory.mktemp("team-catalog")
    (folder / "models.csv").write_text("name,layers,hidden,heads,kv_heads,ffn,vocab,source,as_of\n"
                                       "Acme Chat 8B,32,4096,32,8,14336,128256,internal,2026-11-01\n")
    (folder / "gpus.csv").write_text("name,price_usd\nH100,24500\n")
    proc, client = start_serve(tmp_path_factory, env={"FLOPSHEET_CATALOG": str(folder)})
    yield client
    client.close()
    stop(proc)


def call(server, name, *args):
    body = {"func_name": name.lower(), "args": [[[a]] for a in args], "caller_address": "[Book1.xlsx]Sheet1!A1",
            "client": "Office.js", "version": "0.37.8", "runtime": "1.4", "culture_info_name": "en-US",
            "date_format": "M/d/yyyy", "session_id": "test-session"}
    r = server.post("/xlwings/custom-functions-call", json=body)
    assert r.status_code == 200, r.text
    return r.json()["result"]


def test_private_model_by_name_through_the_server(server):
    assert call(server, "PARAM_COUNT", "Acme Chat 8B") == [[8030261248]]
    assert call(server, "DECODE_TOKENS_PER_SEC", "Acme Chat 8B", "H100") == \
        call(server, "DECODE_TOKENS_PER_SEC", "Llama 3 8B", "H100")


def test_private_price_through_the_server(server):
    assert call(server, "GPU_SPEC", "H100", "price_usd") == [[24500]]


def test_specs_through_the_server(server):
    spec = call(server, "MODEL_DEFINE", 32, 4096, 32, 8, 14336, 128256)[0][0]
    assert spec == "model: 32L d4096 h32/kv8 ffn14336 v128256"
    assert call(server, "PARAM_COUNT", spec) == [[8030261248]]
    gpu = call(server, "GPU_DEFINE", 80, 3.35, 989.5, 1979, "HBM3", "", "", "", "", "", "NVIDIA")[0][0]
    assert call(server, "DECODE_TOKENS_PER_SEC", spec, gpu) == call(server, "DECODE_TOKENS_PER_SEC", "Llama 3 8B", "H100")
