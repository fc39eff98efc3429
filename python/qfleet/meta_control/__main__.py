"""python -m qfleet.meta_control: the qfleet-meta command line (the same C++ code; docs/meta_control.md).

    python -m qfleet.meta_control                     # the default ("fast" preset)
    python -m qfleet.meta_control --preset paper      # 1000 iterations, 32 tasks, 5 inner steps
    python -m qfleet.meta_control --config run.json --set algorithm=reptile --set iterations=500
    python -m qfleet.meta_control --resume            # continue from <output_dir>/checkpoint.pt
"""
from .. import _lib
from . import main

if __name__ == "__main__":
    _lib.run_app_main("qfleet.meta_control", main, wait_policy=None)  # as apps/meta_control/main.cpp
