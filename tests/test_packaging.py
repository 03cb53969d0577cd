"""Ready to publish: `python -m build` makes an sdist and a pure wheel that pass
`twine check --strict`, with the licence, URLs and classifiers, the version taken from
udfs.__version__ only, and the wheel installs in a fresh virtual environment where
`flopsheet calc GPU_TOKENS_PER_SEC H100 14` prints 167.5 (the README's first example)."""

import email
import os
import re
import subprocess
import sys
import tarfile
import zipfile
from pathlib import Path

import pytest

from udfs import __version__

pytestmark = pytest.mark.slow
ROOT = Path(__file__).resolve().parent.parent


def run(command, **kw):
    r = subprocess.run([str(c) for c in command], capture_output=True, text=True, timeout=600, **kw)
    assert r.returncode == 0, f"{command}:\n{r.stdout[-3000:]}\n{r.stderr[-3000:]}"
    return r.stdout


@pytest.fixture(scope="module")
def dist(tmp_path_factory):
    out = tmp_path_factory.mktemp("package") / "dist"
    run([sys.executable, "-m", "build", "--outdir", out, ROOT])
    wheels, sdists = list(out.glob("*.whl")), list(out.glob("*.tar.gz"))
    assert [w.name for w in wheels] == [f"flopsheet-{__version__}-py3-none-any.whl"]
    assert [s.name for s in sdists] == [f"flopsheet-{__version__}.tar.gz"]
    return wheels[0], sdists[0]


def wheel_metadata(wheel: Path):
    with zipfile.ZipFile(wheel) as z:
        return email.message_from_bytes(z.read(f"flopsheet-{__version__}.dist-info/METADATA"))


def test_twine_check_passes(dist):
    out = run([sys.executable, "-m", "twine", "check", "--strict", *dist])
    assert out.count("PASSED") == 2


def test_metadata_licence_urls_and_classifiers(dist):
    wheel, _ = dist
    meta = wheel_metadata(wheel)
    assert meta["Name"] == "flopsheet" and meta["Version"] == __version__
    assert meta["License-Expression"] == "MIT" and meta["License-File"] == "LICENSE"
    urls = dict(u.split(", ", 1) for u in meta.get_all("Project-URL"))
    assert {"Homepage", "Source", "Issues", "Changelog"} <= set(urls)
    classifiers = meta.get_all("Classifier")
    assert "Programming Language :: Python :: 3" in classifiers and any(c.startswith("Topic ::") for c in classifiers)
    required = [r for r in meta.get_all("Requires-Dist") if "extra ==" not in r]
    assert required == ["openpyxl>=3.1"], "the engine is standard library; pandas is the optional extra"
    with zipfile.ZipFile(wheel) as z:
        names = z.namelist()
    assert f"flopsheet-{__version__}.dist-info/licenses/LICENSE" in names
    assert "udfs/data/gpus.csv" in names and "addin/server_app.py" in names
    assert not [n for n in names if n.startswith("tests/") or "__pycache__" in n]


def test_sdist_has_licence_changelog_and_deployment_files(dist):
    _, sdist = dist
    with tarfile.open(sdist) as t:
        names = {n.split("/", 1)[1] for n in t.getnames() if "/" in n}
    assert {"LICENSE", "CHANGELOG.md", "README.md", "pyproject.toml", "docs/deploy/flopsheet.service",
            "docs/deploy/Containerfile", "udfs/data/gpus.csv"} <= names


def test_version_is_single_sourced():
    assert __version__ not in (ROOT / "pyproject.toml").read_text()
    assert f"## {__version__}" in (ROOT / "CHANGELOG.md").read_text()


def readme_install_steps() -> str:
    """The README's shell block that installs the built wheel (also looked for in docs/)."""
    for doc in [ROOT / "README.md", *sorted((ROOT / "docs").glob("**/*.md"))]:
        for block in re.findall(r"```(?:bash|sh|console)\n(.*?)```", doc.read_text(encoding="utf-8"), re.S):
            if "py3-none-any.whl" in block and "pip install" in block and "flopsheet calc" in block:
                return block
    pytest.fail("no install-from-wheel steps (pip install ...py3-none-any.whl; flopsheet calc) in README.md or docs/")


def test_readme_install_steps_work_in_a_fresh_venv(dist, tmp_path):
    """Run the README's steps as written, with HOME in a temporary folder and the built
    dist/ beside the working folder: a fresh venv, the wheel, and the first calculation."""
    wheel, _ = dist
    steps = readme_install_steps()
    home = tmp_path / "home"
    home.mkdir()
    env = dict(os.environ, HOME=str(home), PIP_DISABLE_PIP_VERSION_CHECK="1")
    env.pop("VIRTUAL_ENV", None)
    out = run(["bash", "-euo", "pipefail", "-c", steps], cwd=wheel.parent.parent, env=env)
    expected = re.search(r"flopsheet calc GPU_TOKENS_PER_SEC H100 14\s+#\s*(\S+)", steps).group(1)
    assert out.strip().splitlines()[-1] == expected == "167.5"
    venv_python = next(home.glob("*/bin/python"))
    where = run([venv_python, "-c", "import udfs; print(udfs.__file__)"], cwd=tmp_path)
    assert where.startswith(str(home)), "flopsheet was imported from the venv, not the checkout"
    # the nothing-hosted Lite files come from the installed package alone (no xlwings needed)
    run([venv_python.parent / "flopsheet", "addin", "lite", "--out", tmp_path / "lite"], cwd=tmp_path)
    assert f'FLOPSHEET_VERSION = "{__version__}"' in (tmp_path / "lite" / "main.py").read_text()
