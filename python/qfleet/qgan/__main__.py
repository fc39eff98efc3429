"""python -m qfleet.qgan: the qfleet-qgan command line (the same C++ code; docs/qgan.md).

Like the binary, it runs with passive OpenMP waiting unless OMP_WAIT_POLICY is set
(apps/common/main.hpp says why)."""
from .. import _lib
from . import main

if __name__ == "__main__":
    _lib.run_app_main("qfleet.qgan", main, wait_policy="passive")  # as apps/qgan/main.cpp
