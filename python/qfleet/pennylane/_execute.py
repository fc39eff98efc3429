"""Running a batch of tapes: tapes of one structure become one engine call.

A tape's rows are its broadcast batch (1 row when it is not broadcast). Tapes whose
plans share a key are stacked row-wise into per-sample weights and run together;
results are cut back per tape in PennyLane's result format.
"""
from __future__ import annotations

import os

import numpy as np
import pennylane as qml

from ._translate import plan_tape


class Job:
    """One tape in a batch: its plan, parameters, rows and wire order."""

    def __init__(self, tape, plan, wire_order):
        self.tape = tape
        self.plan = plan
        self.wire_order = wire_order
        self.params = tape.get_parameters(trainable_only=False)
        self.batch = plan.batch_size(self.params)
        self.rows = self.batch or 1
        self.weights = plan.weights(self.params, self.rows)


def make_jobs(device, tapes, analytic_only=False):
    jobs = []
    for tape in tapes:
        wire_order = device.wires if device.wires is not None else tape.wires
        analytic = analytic_only or not tape.shots
        plan = device._plan(tape, wire_order, analytic)
        jobs.append(Job(tape, plan, wire_order))
    return jobs


def groups(jobs):
    """Indices of jobs grouped by plan key (insertion order)."""
    out = {}
    for i, j in enumerate(jobs):
        out.setdefault(j.plan.key, []).append(i)
    return out.values()


def _stack(jobs, idx):
    """(inputs, per-sample weights [rows, n_weights], row bounds of each job): the tapes'
    parameters are all weights, and the programs read no input columns."""
    weights = jobs[idx[0]].weights if len(idx) == 1 else np.concatenate([jobs[i].weights for i in idx], axis=0)
    bounds = np.cumsum([0] + [jobs[i].rows for i in idx])
    return None, weights, bounds


def _unbatch(x, batch):
    """Drops the row axis of an unbroadcast tape's result."""
    return x if batch is not None else x[0]


def _pack(tape, per_mp):
    return per_mp[0] if len(tape.measurements) == 1 else tuple(per_mp)


# ---- analytic execution --------------------------------------------------------


def _state_result(job, mp, states, mixed):
    st = states
    if job.plan.phase_params and not mixed:
        st = st * np.exp(-1j * job.plan.phases(job.params, job.rows))[:, None]
    gates = mp.diagonalizing_gates()
    if gates:  # PennyLane's process_state reads observables in their eigenbasis (as default.qubit)
        u = qml.matrix(qml.tape.QuantumScript(gates), wire_order=job.wire_order)
        st = st @ u.T if not mixed else u @ st @ u.conj().T
    st = _unbatch(st, job.batch)
    if mixed:
        if type(mp) is qml.measurements.StateMP:  # qml.state() of a mixed-state device: its density matrix
            return qml.density_matrix(wires=job.wire_order).process_density_matrix(st, job.wire_order)
        return mp.process_density_matrix(st, job.wire_order)
    return mp.process_state(st, job.wire_order)


def _analytic_results(job, out, states, mixed):
    res = []
    for m, mp in zip(job.plan.measures, job.tape.measurements):
        if m.kind == "expval":
            r = out[:, m.cols[0]]
        elif m.kind == "var":
            r = np.maximum(out[:, m.cols[1]] - out[:, m.cols[0]] ** 2, 0.0)
        elif m.kind == "probs":
            r = np.clip(out[:, m.cols[0]:m.cols[1]], 0.0, None)
        elif m.kind == "diag_expval":
            r = out[:, m.cols[0]:m.cols[1]] @ m.diag
        elif m.kind == "diag_var":
            p = out[:, m.cols[0]:m.cols[1]]
            r = np.maximum(p @ m.diag ** 2 - (p @ m.diag) ** 2, 0.0)
        else:
            res.append(_state_result(job, mp, states, mixed))
            continue
        res.append(np.asarray(_unbatch(r, job.batch)))
    return _pack(job.tape, res)


def run_analytic(jobs, idx, mixed, results):
    plan = jobs[idx[0]].plan
    program = plan.compile()
    inputs, weights, bounds = _stack(jobs, idx)
    out = program_forward(program, inputs, weights) if program.n_outputs() else None
    states = None
    if plan.needs_state:
        states = program.density_matrices(inputs, weights) if mixed else program.states(inputs, weights)
    for k, i in enumerate(idx):
        lo, hi = bounds[k], bounds[k + 1]
        results[i] = _analytic_results(jobs[i], None if out is None else out[lo:hi],
                                       None if states is None else states[lo:hi], mixed)


def program_forward(program, inputs, weights):
    return program.forward(inputs, weights)


# ---- finite shots ----------------------------------------------------------------


def _bits(indices, n):
    shifts = np.arange(n - 1, -1, -1, dtype=np.int64)
    return ((indices[..., None] >> shifts) & 1).astype(np.int64)


def _shot_results(job, bits):
    tape = job.tape
    per_bin = []
    for lo, hi in tape.shots.bins():
        res = []
        for mp in tape.measurements:
            rows = [mp.process_samples(bits[b], job.wire_order, shot_range=(lo, hi), bin_size=None)
                    for b in range(job.rows)]
            if job.batch is None:
                res.append(rows[0])
            elif isinstance(rows[0], dict):  # counts: a list per broadcast batch, as PennyLane's
                res.append(list(rows))      # (tuples nest measurements and shot bins)
            else:
                res.append(np.stack([np.asarray(r) for r in rows]))
        per_bin.append(_pack(tape, res))
    return tuple(per_bin) if tape.shots.has_partitioned_shots else per_bin[0]


def _available_memory() -> int:
    """Bytes of memory free for new allocations: Linux's MemAvailable, else the free pages."""
    try:
        with open("/proc/meminfo", encoding="ascii") as f:
            for line in f:
                if line.startswith("MemAvailable:"):
                    return int(line.split()[1]) * 1024
    except OSError:
        pass
    return os.sysconf("SC_AVPHYS_PAGES") * os.sysconf("SC_PAGE_SIZE")


def _check_shot_memory(name, shots, rows, n):
    """Refuses, before anything is allocated, shots whose samples would not fit: per shot and
    row the engine's int64 outcome, then _bits' int64 bit per wire and its intermediate of the
    same size (2 n + 1 numbers of 8 bytes); LibTorch's allocator would otherwise fail with its
    own text, or the machine start swapping."""
    need = 8.0 * shots * rows * (2 * n + 1)
    free = _available_memory()
    if need > 0.8 * free:
        raise ValueError(f"{name}: shots = {shots} needs about {need / 2**30:.3g} GiB for the samples "
                         f"({rows} row(s) of {n} wire(s), {8 * (2 * n + 1)} bytes per shot and row), "
                         f"more than the {free / 2**30:.3g} GiB of memory available; lower shots")


def run_shots(jobs, idx, seed_source, results, name="qfleet"):
    plan = jobs[idx[0]].plan
    program = plan.compile()
    n = len(jobs[idx[0]].wire_order)
    for i in idx:  # each tape has its own shot count: one sampling call per tape
        job = jobs[i]
        _check_shot_memory(name, int(job.tape.shots.total_shots), job.rows, max(n, plan.n_qubits))
        inputs, weights, _ = _stack(jobs, [i])
        seed = int(seed_source.integers(0, 2**62))
        samples = program.sample(inputs, weights, [], int(job.tape.shots.total_shots), seed)
        bits = _bits(samples, plan.n_qubits)[..., plan.n_qubits - n:] if n else np.zeros(samples.shape + (0,),
                                                                                             dtype=np.int64)
        results[i] = _shot_results(job, bits)


def execute(device, tapes, mixed):
    jobs = make_jobs(device, tapes)
    results = [None] * len(jobs)
    for idx in groups(jobs):
        idx = list(idx)
        if jobs[idx[0]].tape.shots:
            run_shots(jobs, idx, device._rng, results, device.name)
        else:
            run_analytic(jobs, idx, mixed, results)
    return tuple(results)


# ---- adjoint derivatives -----------------------------------------------------------


def _columns(job):
    """Weight column of each trainable parameter (None: a global phase, whose derivative is 0)."""
    col = {p: j for j, p in enumerate(job.plan.weight_params)}
    return [col.get(p) for p in job.tape.trainable_params]


def _param_batched(job, p):
    return np.ndim(job.params[p]) > 0


def _mp_jacobian(m, out, jw, j):
    """d result / d weight j for every row: [rows] or [rows, 2^k]."""
    if j is None:
        shape = (out.shape[0],) if m.kind != "probs" else (out.shape[0], m.cols[1] - m.cols[0])
        return np.zeros(shape)
    if m.kind == "expval":
        return jw[:, m.cols[0], j]
    if m.kind == "var":
        return jw[:, m.cols[1], j] - 2.0 * out[:, m.cols[0]] * jw[:, m.cols[0], j]
    if m.kind in ("diag_expval", "diag_var"):
        return (jw[:, m.cols[0]:m.cols[1], j] * _diag_weights(m, out)).sum(axis=1)
    return jw[:, m.cols[0]:m.cols[1], j]


def _diag_weights(m, out):
    """d result / d probabilities [rows, 2^k] of a diagonal observable's expectation value
    (its diagonal) or variance (diag^2 - 2 <O> diag)."""
    if m.kind == "diag_expval":
        return m.diag[None, :]  # (out is None in a VJP without variances)
    e = out[:, m.cols[0]:m.cols[1]] @ m.diag
    return m.diag ** 2 - 2.0 * e[:, None] * m.diag


def _format_jacobian(job, out, jw):
    cols = _columns(job)
    per_mp = []
    for m in job.plan.measures:
        entries = [np.asarray(_unbatch(_mp_jacobian(m, out, jw, j), job.batch)) for j in cols]
        per_mp.append(entries[0] if len(entries) == 1 else tuple(entries))
    return _pack(job.tape, per_mp)


def jacobians(device, tapes, mixed, with_results):
    jobs = make_jobs(device, tapes, analytic_only=True)
    results, jacs = [None] * len(jobs), [None] * len(jobs)
    for idx in groups(jobs):
        idx = list(idx)
        plan = jobs[idx[0]].plan
        program = plan.compile()
        inputs, weights, bounds = _stack(jobs, idx)
        out = program_forward(program, inputs, weights)
        _, jw = program.jacobian(inputs, weights)
        for k, i in enumerate(idx):
            lo, hi = bounds[k], bounds[k + 1]
            jacs[i] = _format_jacobian(jobs[i], out[lo:hi], jw[lo:hi])
            if with_results:
                results[i] = _analytic_results(jobs[i], out[lo:hi], None, mixed)
    return (tuple(results), tuple(jacs)) if with_results else tuple(jacs)


def _output_cotangents(job, dy, out):
    """Cotangents on the engine's outputs [rows, n_outputs] from the measurements' cotangents."""
    per_mp = (dy,) if len(job.tape.measurements) == 1 else tuple(dy)
    g = np.zeros((job.rows, job.plan.compile().n_outputs()))
    for m, c in zip(job.plan.measures, per_mp):
        c = np.asarray(qml.math.unwrap(c), dtype=np.float64)
        c = c.reshape(job.rows, -1) if m.kind == "probs" else c.reshape(job.rows)
        if m.kind == "expval":
            g[:, m.cols[0]] += c
        elif m.kind == "var":
            g[:, m.cols[1]] += c
            g[:, m.cols[0]] -= 2.0 * out[:, m.cols[0]] * c
        elif m.kind in ("diag_expval", "diag_var"):
            g[:, m.cols[0]:m.cols[1]] += c[:, None] * _diag_weights(m, out)
        else:
            g[:, m.cols[0]:m.cols[1]] += c
    return g


def vjps(device, tapes, cotangents):
    jobs = make_jobs(device, tapes, analytic_only=True)
    out_vjp = [None] * len(jobs)
    for idx in groups(jobs):
        idx = list(idx)
        plan = jobs[idx[0]].plan
        program = plan.compile()
        inputs, weights, bounds = _stack(jobs, idx)
        out = None
        if any(m.kind in ("var", "diag_var") for m in plan.measures):
            out = program_forward(program, inputs, weights)
        g = np.concatenate([
            _output_cotangents(jobs[i], cotangents[i], None if out is None else out[bounds[k]:bounds[k + 1]])
            for k, i in enumerate(idx)], axis=0)
        _, gw = program.vjp(inputs, weights, g)
        for k, i in enumerate(idx):
            job, rows = jobs[i], gw[bounds[k]:bounds[k + 1]]
            grads = []
            for p, j in zip(job.tape.trainable_params, _columns(job)):
                col = np.zeros(job.rows) if j is None else rows[:, j]
                grads.append(np.asarray(col if _param_batched(job, p) else col.sum()))
            out_vjp[i] = tuple(grads)
    return tuple(out_vjp)
