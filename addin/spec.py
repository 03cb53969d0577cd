"""What the add-ins say about each registry function (names, optional flags, help texts).

Standard library and the engine only, so tests and tools can use it without xlwings.
"""

from udfs.api import registry


def registry_functions() -> dict:
    """The registry's functions (one place, so every add-in and test sees the same set)."""
    return registry.functions()


def python_optional(fn, a) -> bool:
    """Optional in the signature: the registry's optional arguments, and a required one
    that follows an optional one (Python and Excel both need optional ones last; the
    registry still answers "... is required" when it is left blank)."""
    first = next((i for i, x in enumerate(fn.args) if x.optional), len(fn.args))
    return fn.args.index(a) >= first


def arg_doc(fn, a) -> str:
    return a.describe() + (" Required." if python_optional(fn, a) and not a.optional else "")


def docstring(fn) -> str:
    text = fn.help
    if fn.unit and fn.unit != "table":
        text += f" Result in {fn.unit}."
    return text
