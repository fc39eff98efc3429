"""python -m qfleet.rl: the qfleet-rl command line (the same C++ code; docs/rl.md).

    python -m qfleet.rl train --out rl-out --set total_steps=576000
    python -m qfleet.rl bench-env --env num_envs=16384 --steps 100
    python -m qfleet.rl compare --ppo rl-out --out rl-compare

The binary sets OMP_WAIT_POLICY=passive before its OpenMP runtime loads (apps/classify/main.cpp
says why); from Python, torch is imported first, so set it in the environment yourself on a
busy machine."""
import sys

from . import main

if __name__ == "__main__":
    sys.exit(main())
