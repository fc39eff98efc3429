"""python -m qfleet.classify: the qfleet-classify command line (the same C++ code; docs/classify.md).

Like the binary, it runs with passive OpenMP waiting unless OMP_WAIT_POLICY is set
(apps/common/main.hpp says why)."""
from .. import _lib
from . import main

if __name__ == "__main__":
    _lib.run_app_main("qfleet.classify", main, wait_policy="passive")  # as apps/classify/main.cpp
