"""python -m qfleet.qgan: the qfleet-qgan command line (the same C++ code; docs/qgan.md).

The binary sets OMP_WAIT_POLICY=passive before its OpenMP runtime loads (apps/classify/main.cpp
says why); from Python, torch is imported first, so set it in the environment yourself on a
busy machine."""
import sys

from . import main

if __name__ == "__main__":
    sys.exit(main())
