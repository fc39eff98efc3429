"""Where the package's compiled libraries are: next to it (an installed wheel) or in a build
tree. Imports nothing but the standard library, so the torch-free engine binding
(_engine.py) and the operator loader (_lib.py) share it."""
import os
import pathlib

PACKAGE_DIR = pathlib.Path(__file__).resolve().parent


def build_dir():
    """The build tree the package takes its libraries from when they are not installed next
    to it: $QFLEET_BUILD_DIR, or <source>/build when the package is the source tree's
    python/qfleet (`PYTHONPATH=python` from a checkout built with the README's commands)."""
    env = os.environ.get("QFLEET_BUILD_DIR")
    if env:
        return pathlib.Path(env)
    source = PACKAGE_DIR.parent.parent
    if (source / "CMakeLists.txt").exists() and (source / "build").is_dir():
        return source / "build"
    return None


def not_found(what: str, variable: str, built: str) -> ImportError:
    """The error for a library found neither next to the package nor in build_dir()."""
    where = build_dir()
    return ImportError(
        f"qfleet: {what} was not found next to the package ({PACKAGE_DIR})"
        + (f" nor in the build tree {where}" if where else "")
        + f"; install qfleet with `pip install .`, set QFLEET_BUILD_DIR to a build folder, or point {variable} "
        f"at a build's {built}")


def find_library(stem: str, variable: str, folder: str, what: str) -> str:
    """Where lib<stem>.so is: $<variable>, next to the package (any platform's name), or in
    build_dir()/<folder>; else the not_found error naming `what`."""
    env = os.environ.get(variable)
    if env:
        return env
    for name in (f"lib{stem}.so", f"lib{stem}.dylib", f"{stem}.dll"):
        if (PACKAGE_DIR / name).exists():
            return str(PACKAGE_DIR / name)
    built = pathlib.Path(folder) / f"lib{stem}.so"
    where = build_dir()
    if where is not None and (where / built).exists():
        return str(where / built)
    raise not_found(what, variable, str(built))
