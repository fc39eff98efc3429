"""The package's metadata says what is true: one version everywhere it is written (CMake's
project version is the source), the torch release the extension is built for pinned alike in
pyproject.toml and the tested environment, optional dependencies' floors at least the release
that has what qfleet imports, the license file and the citation file."""
import importlib
import pathlib
import re
import tomllib

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[2]


def cmake_version():
    m = re.search(r"project\(qfleet VERSION ([0-9.]+)", (ROOT / "CMakeLists.txt").read_text())
    assert m, "CMakeLists.txt has no project(qfleet VERSION ...)"
    return m.group(1)


def pyproject():
    with open(ROOT / "pyproject.toml", "rb") as f:
        return tomllib.load(f)


def test_one_version_everywhere():
    v = cmake_version()
    hpp = (ROOT / "include" / "qfleet" / "version.hpp").read_text()
    major, minor, patch = v.split(".")
    assert f'#define QFLEET_VERSION_STRING "{v}"' in hpp
    for part, value in (("MAJOR", major), ("MINOR", minor), ("PATCH", patch)):
        assert f"#define QFLEET_VERSION_{part} {value}" in hpp
    assert pyproject()["project"]["version"] == v
    init = (ROOT / "python" / "qfleet" / "__init__.py").read_text()
    assert f'__version__ = "{v}"' in init
    dist = list((ROOT / "python").glob("qfleet_source_tree-*.dist-info"))
    assert [d.name for d in dist] == [f"qfleet_source_tree-{v}.dist-info"]
    assert f"Version: {v}\n" in (dist[0] / "METADATA").read_text()
    assert f"version: {v}\n" in (ROOT / "CITATION.cff").read_text()


def test_torch_pinned_to_the_release_built_and_tested():
    req = (ROOT / "python" / "requirements.txt").read_text()
    tested = re.search(r"^torch==([0-9]+\.[0-9]+)\.[0-9]+$", req, re.M).group(1)
    p = pyproject()
    assert f"torch=={tested}.*" in p["project"]["dependencies"]
    assert f"torch=={tested}.*" in p["build-system"]["requires"]
    floor = re.search(r"QFLEET_TORCH_MIN_VERSION ([0-9.]+)", (ROOT / "CMakeLists.txt").read_text()).group(1)
    assert tuple(map(int, floor.split("."))) <= tuple(map(int, tested.split(".")))


# What qfleet imports from each optional dependency, and the first release that has it.
FLOORS = {"gymnasium": ("1.1", "gymnasium.vector", "AutoresetMode"),
          "pennylane": ("0.45", "pennylane.exceptions", "DeviceError")}  # (0.45: the release tested)


@pytest.mark.parametrize("package", sorted(FLOORS))
def test_optional_floors_have_what_qfleet_imports(package):
    floor, module, name = FLOORS[package]
    extras = pyproject()["project"]["optional-dependencies"]
    declared = [r for reqs in extras.values() for r in reqs if re.match(rf"{package}\b", r)]
    assert declared, f"{package} is in no extra"
    for r in declared:
        m = re.search(r">=([0-9.]+)", r)
        assert m and tuple(map(int, m.group(1).split("."))) >= tuple(map(int, floor.split("."))), r
    mod = pytest.importorskip(module)
    assert hasattr(mod, name), f"{module}.{name}: qfleet imports it"


def test_python_floor_is_one_torch_supports():
    assert pyproject()["project"]["requires-python"] == ">=3.10"


def test_license_and_citation():
    text = (ROOT / "LICENSE").read_text()
    assert "Apache License" in text and "Version 2.0, January 2004" in text
    assert pyproject()["project"]["license"] == {"text": "Apache-2.0"}
    cff = (ROOT / "CITATION.cff").read_text()
    assert "cff-version: 1.2.0" in cff and "license: Apache-2.0" in cff
    importlib.import_module("qfleet")  # (the package the metadata describes imports)
