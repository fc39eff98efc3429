"""The Python API reference (Sphinx: docs/python_api, scripts/build_api_docs.sh) builds without
a warning, nitpicky, and holds every public name test_docstrings.py walks.

Sphinx runs in this process, so autodoc documents the qfleet the rest of the suite imports
(the installed package in scripts/test.sh, or PYTHONPATH=python); the build must leave the
objects it documents as they were, for the tests that run after it (autodoc_preserve_defaults,
for one, would set every function's __signature__, which Gymnasium's env checker reads)."""
import inspect
import pathlib
import posixpath
import warnings

import pytest

from test_docstrings import MODULES, public_members

SOURCE = pathlib.Path(__file__).resolve().parents[2] / "docs" / "python_api"


@pytest.fixture(scope="module")
def built(tmp_path_factory):
    pytest.importorskip("sphinx", reason="sphinx (python/requirements.txt) builds the API reference")
    for package in ("torch", "gymnasium", "pennylane"):  # every module's page imports it
        pytest.importorskip(package)
    from sphinx.cmd.build import build_main

    before = attributes()
    out = tmp_path_factory.mktemp("python_api")
    log = out / "warnings.txt"
    with warnings.catch_warnings():  # (Sphinx 9's napoleon still reads autodoc's options the old way)
        warnings.filterwarnings("ignore", "The mapping interface for autodoc options", module="sphinx")
        status = build_main(["-W", "--keep-going", "-n", "-q", "-N", "-w", str(log), "-b", "html",
                             str(SOURCE), str(out / "html")])
    assert status == 0, f"sphinx-build failed:\n{log.read_text()}"
    assert attributes() == before, "the build changed the attributes of what it documented"
    return out / "html"


def attributes():
    """The attribute names of every public function and method (a function's __dict__)."""
    return {name: sorted(vars(getattr(obj, "fget", obj))) for m in MODULES for name, obj in public_members(m)
            if inspect.isfunction(getattr(obj, "fget", obj))}


def test_reference_builds_without_a_warning(built):
    assert (built / "index.html").is_file()


def test_every_public_name_is_in_the_reference(built):
    from sphinx.util.inventory import InventoryFile

    with open(built / "objects.inv", "rb") as f:
        inventory = InventoryFile.load(f, "", posixpath.join)
    documented = {name for role, entries in inventory.items() if role.startswith("py:") for name in entries}
    missing = [name for m in MODULES for name, _ in public_members(m) if name not in documented]
    assert not missing, f"not in the API reference: {', '.join(missing)}"
