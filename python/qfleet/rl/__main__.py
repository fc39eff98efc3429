"""python -m qfleet.rl: the qfleet-rl command line (the same C++ code; docs/rl.md).

    python -m qfleet.rl train --out rl-out --set total_steps=576000
    python -m qfleet.rl bench-env --env num_envs=16384 --steps 100
    python -m qfleet.rl compare --ppo rl-out --out rl-compare

Like the binary, it runs with passive OpenMP waiting unless OMP_WAIT_POLICY is set
(apps/common/main.hpp says why)."""
from .. import _lib
from . import main

if __name__ == "__main__":
    _lib.run_app_main("qfleet.rl", main, wait_policy="passive")  # as apps/rl/main.cpp
