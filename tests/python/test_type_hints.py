"""Every public function and method of qfleet (test_docstrings.py's names, with the classes'
constructors) has type hints on each parameter and its return: the package ships py.typed
(PEP 561), so type checkers and IDEs take the signatures as they are written."""
import inspect
import pathlib

import pytest

from test_docstrings import MODULES, public_members, skip_without_its_packages


def signatures(module_name):
    """(name, function) for each public function, method, property getter and constructor."""
    for name, obj in public_members(module_name):
        if isinstance(obj, property):
            yield name, obj.fget
        elif inspect.isfunction(obj):
            yield name, obj
        elif inspect.isclass(obj):
            init = vars(obj).get("__init__")  # its own constructor (a dataclass's is generated, annotated)
            if init is None:  # or one inherited from a qfleet base (qfleet.pennylane's devices)
                init = next((vars(c)["__init__"] for c in obj.__mro__[1:] if "__init__" in vars(c)
                             and str(c.__module__).startswith("qfleet")), None)
            if inspect.isfunction(init):
                yield f"{name}.__init__", init


def unannotated(module_name):
    out = []
    for name, fn in signatures(module_name):
        sig = inspect.signature(fn)  # (through functools.wraps to the function written)
        bare = [p.name for p in sig.parameters.values()
                if p.name not in ("self", "cls") and p.kind not in (p.VAR_POSITIONAL, p.VAR_KEYWORD)
                and p.annotation is inspect.Parameter.empty]
        if sig.return_annotation is inspect.Signature.empty:
            bare.append("return")
        if bare:
            out.append(f"{name} ({', '.join(bare)})")
    return out


@pytest.mark.parametrize("module_name", MODULES)
def test_every_public_signature_is_annotated(module_name):
    skip_without_its_packages(module_name)
    missing = unannotated(module_name)
    assert not missing, f"without type hints: {'; '.join(missing)}"


def test_the_package_is_marked_typed():
    import qfleet
    assert (pathlib.Path(qfleet.__file__).parent / "py.typed").is_file()
