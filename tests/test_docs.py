from pathlib import Path

from udfs import docs


def test_readme_function_reference_is_generated_from_the_registry():
    readme = (Path(__file__).resolve().parent.parent / "README.md").read_text(encoding="utf-8")
    assert docs.reference() in readme, "README is stale: run `python -m udfs.docs --write`"
