"""Loads the compiled operators (libqfleet_torch.so) into torch.ops.qfleet, and an app's
library (libqfleet_<app>.so) into torch.ops.qfleet_<app>."""
import ctypes
import os
import sys

import torch

from ._paths import find_library

_LOADED = None
# Where each app's library lies in a build tree (apps/<folder>/libqfleet_<app>.so).
_APP_FOLDERS = {"meta": "meta_control", "classify": "classify", "qgan": "qgan", "rl": "rl"}


def library_path() -> str:
    """Where the operator library is: $QFLEET_TORCH_LIBRARY, next to this package, or in build_dir()."""
    return find_library("qfleet_torch", "QFLEET_TORCH_LIBRARY", "adapters/torch",
                        "the compiled operator library libqfleet_torch.so")


def _libstdcxx_first():
    """Puts the C++ runtime into the process's global symbol scope before our libraries.

    torch.ops.load_library opens libqfleet_torch.so with RTLD_GLOBAL, so the weak copies of
    standard-library templates it holds (4,621 std:: symbols when built with Ubuntu 24.04's
    g++ 13) come before libstdc++ for every library loaded after it. On the H100 machine the
    app library's std::ostream << long then ran libqfleet_torch.so's copy and crashed
    (SIGSEGV in csv_pulses; the same run passed with libstdc++ preloaded). Opening libstdc++
    RTLD_GLOBAL first makes those references bind to the runtime itself."""
    if sys.platform.startswith("linux"):
        try:
            ctypes.CDLL("libstdc++.so.6", mode=ctypes.RTLD_GLOBAL)
        except OSError:  # not a glibc/libstdc++ system: nothing to put first
            pass


def load() -> str:
    global _LOADED
    if _LOADED is None:
        path = library_path()
        _libstdcxx_first()
        torch.ops.load_library(path)
        _LOADED = path
    return _LOADED


_APPS = {}


def app_library_path(app: str) -> str:
    """Where an app's library is: $QFLEET_<APP>_LIBRARY, libqfleet_<app>.so next to this package,
    or in build_dir()'s apps/<folder>/."""
    return find_library(f"qfleet_{app}", f"QFLEET_{app.upper()}_LIBRARY", f"apps/{_APP_FOLDERS.get(app, app)}",
                        f"the app library libqfleet_{app}.so")


def load_app(app: str):
    """Loads an app's library once (after the operator library it links) and returns torch.ops.qfleet_<app>."""
    if app not in _APPS:
        load()
        path = app_library_path(app)
        torch.ops.load_library(path)
        _APPS[app] = path
    return getattr(torch.ops, f"qfleet_{app}")


def run_app_main(module: str, main, wait_policy) -> None:
    """`python -m <module>`: the app's OpenMP wait policy as its binary applies it
    (apps/common/main.hpp: OMP_WAIT_POLICY = wait_policy unless the user set one, None:
    the runtime's default; the runtime reads it when it loads, and torch has loaded it by
    now, so start again with it set), then exit with main()."""
    if wait_policy is not None and "OMP_WAIT_POLICY" not in os.environ:
        os.environ["OMP_WAIT_POLICY"] = wait_policy
        sys.stdout.flush()
        sys.stderr.flush()
        os.execv(sys.executable, [sys.executable, "-m", module, *sys.argv[1:]])
    sys.exit(main())
