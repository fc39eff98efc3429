"""Timing of cases side by side in one run, for the bench scripts (torch_layer.py, cli_npy.py).

The cases are interleaved: each round runs a block of `number` calls of every case in turn,
so the shared machine's drift within a run hits every case alike, and the ratios between
the cases (the figures the scripts report) are read within one run."""
import statistics
import time


def interleaved(cases, rounds, number=1):
    """{name: (median, min, max)} seconds per call of each case over the rounds; one warm-up
    call of each case first."""
    for fn in cases.values():
        fn()
    per_call = {k: [] for k in cases}
    for _ in range(rounds):
        for k, fn in cases.items():
            t0 = time.perf_counter()
            for _ in range(number):
                fn()
            per_call[k].append((time.perf_counter() - t0) / number)
    return {k: (statistics.median(v), min(v), max(v)) for k, v in per_call.items()}
