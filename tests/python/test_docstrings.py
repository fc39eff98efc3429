"""Every public Python name of qfleet has a docstring: the names of each public module's
__all__ (or, without one, what the module defines itself), and their public methods and
properties. help(), IDEs and an API reference read them."""
import importlib
import inspect

import pytest

MODULES = ["qfleet", "qfleet.control", "qfleet.rl", "qfleet.meta_control", "qfleet.qgan", "qfleet.classify",
           "qfleet.pennylane", "qfleet.tensor_file", "qfleet.noise", "qfleet.train", "qfleet.problem", "qfleet.check"]


def public(module_name):
    mod = importlib.import_module(module_name)
    names = getattr(mod, "__all__", None)
    if names is None:
        names = [n for n, v in vars(mod).items() if not n.startswith("_")
                 and getattr(v, "__module__", None) == module_name]
    for n in names:
        obj = getattr(mod, n)
        if inspect.isclass(obj) or inspect.isfunction(obj):
            yield f"{module_name}.{n}", obj


def public_members(module_name):
    """public()'s names and, for qfleet's classes, their public methods and properties: what
    needs a docstring, type hints (test_type_hints.py) and a place in the API reference
    (test_api_reference.py)."""
    for name, obj in public(module_name):
        yield name, obj
        if not inspect.isclass(obj) or not str(obj.__module__).startswith("qfleet"):
            continue
        for k, v in vars(obj).items():
            if not k.startswith("_") and (inspect.isfunction(v) or isinstance(v, property)):
                yield f"{name}.{k}", v


def undocumented(module_name):
    return [name for name, obj in public_members(module_name) if not (obj.__doc__ or "").strip()]


def skip_without_its_packages(module_name):
    """Skips the test where what `module_name` imports is not installed."""
    pytest.importorskip("torch")
    extra = {"qfleet.rl": "gymnasium", "qfleet.pennylane": "pennylane"}.get(module_name)
    if extra:
        pytest.importorskip(extra)


@pytest.mark.parametrize("module_name", MODULES)
def test_every_public_name_has_a_docstring(module_name):
    skip_without_its_packages(module_name)
    missing = undocumented(module_name)
    assert not missing, f"no docstring: {', '.join(missing)}"
