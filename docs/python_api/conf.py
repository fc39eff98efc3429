"""Sphinx configuration of qfleet's Python API reference (scripts/build_api_docs.sh builds it;
tests/python/test_api_reference.py builds it without a warning, nitpicky).

autodoc imports the package as the running interpreter finds it (the installed one, or
PYTHONPATH=python); only where none is importable does it take the checkout's python/, which
finds its libraries in build/ (python/qfleet/_paths.py). The modules import torch and the
compiled operators, as autodoc documents what a user imports."""
import dataclasses
import importlib.util
import pathlib
import sys

_ROOT = pathlib.Path(__file__).resolve().parents[2]
if importlib.util.find_spec("qfleet") is None:
    sys.path.insert(0, str(_ROOT / "python"))

import qfleet  # noqa: E402  (after the path; imports no torch)

project = "qfleet"
author = "the qfleet authors"
copyright = "the qfleet authors"  # noqa: A001  (Sphinx's name)
release = version = qfleet.__version__

extensions = ["sphinx.ext.autodoc", "sphinx.ext.napoleon"]
html_theme = "alabaster"  # Sphinx's own: no theme package to install
html_title = f"qfleet {release} Python API"
exclude_patterns = ["_build"]
templates_path = []
html_static_path = []

# Every public module is a page with automodule; these options apply to each.
autodoc_default_options = {"members": True, "member-order": "bysource", "show-inheritance": True}
autodoc_typehints = "signature"
autodoc_class_signature = "mixed"
# qfleet's own docstrings only: a member without one is left out (and test_api_reference.py
# fails), not given the docstring of the torch, Gymnasium or PennyLane method it overrides.
autodoc_inherit_docstrings = False
napoleon_google_docstring = True  # the Args: sections of the PennyLane devices' docstrings
napoleon_numpy_docstring = False  # prose docstrings: no underlined sections to find in them

# Nitpicky (-n): every type in a signature must resolve. Without intersphinx (the build runs
# offline, and no other package's inventory is fetched) the types of other packages cannot:
# torch, NumPy, Gymnasium and PennyLane have them in their own references, and the standard
# library's abstract types and os.PathLike in Python's (builtins and typing resolve without
# it). qfleet's own names must all resolve.
nitpick_ignore_regex = [
    (r"py:.*", r"(torch|numpy|gymnasium|pennylane)(\..+)?"),
    (r"py:.*", r"collections\.abc\..+|os\.PathLike"),
]


def _public_bases(app, name, obj, options, bases):
    """A private base (qfleet.pennylane's _QfleetDevice) is shown as the bases it stands for."""
    i = 0
    while i < len(bases):
        if bases[i].__name__.startswith("_") and bases[i].__module__.startswith("qfleet"):
            bases[i:i + 1] = bases[i].__bases__
        else:
            i += 1


def _dataclass_factories(app, what, name, obj, options, signature, return_annotation):
    """A dataclass field's default_factory shows as a call (dict()) rather than <factory>, which
    is not Python, so Sphinx could not parse the signature around it."""
    if not signature or "<factory>" not in signature or not dataclasses.is_dataclass(obj):
        return None
    for f in dataclasses.fields(obj):
        if f.init and f.default_factory is not dataclasses.MISSING:
            signature = signature.replace("<factory>", f"{f.default_factory.__qualname__}()", 1)
    return signature, return_annotation


def setup(app):
    app.connect("autodoc-process-bases", _public_bases)
    app.connect("autodoc-process-signature", _dataclass_factories)
