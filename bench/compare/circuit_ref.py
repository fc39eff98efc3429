"""High-precision reference for the hybrid-classifier layer.

AngleEmbedding (RX on wire i with angle x[b, i]) followed by L
StronglyEntanglingLayers (PennyLane: Rot(phi, theta, omega) = RZ(omega) RY(theta)
RZ(phi) on every wire, then CNOT(i, (i + r_l) mod n) for i = 0..n-1 with the
default ranges r_l = (l mod (n - 1)) + 1), outputs <Z_i> for every wire.
Wire 0 is the most significant bit of the state index (PennyLane's order).

Arithmetic is numpy extended precision (np.clongdouble: 64-bit mantissa on
x86-64, ~1e-19 relative), independent of every alternative. The gradient of
sum_i <Z_i> with respect to the inputs and weights is the adjoint method
(one backward sweep), exact for these rotation gates: with P the Pauli
generator of R(a) = exp(-i a P / 2), dF/da = Im <lambda_k | P | phi_k>.
"""

from __future__ import annotations

import numpy as np

LD = np.longdouble
CLD = np.clongdouble


def default_ranges(n: int, layers: int) -> list[int]:
    if n == 1:
        return [0] * layers
    return [(l % (n - 1)) + 1 for l in range(layers)]


def gate_list(n: int, layers: int):
    """Elementary gates in application order.

    ("R", pauli, wire, ("x", i)) or ("R", pauli, wire, ("w", l, i, j)) or ("CNOT", c, t)."""
    gates = []
    for i in range(n):
        gates.append(("R", "X", i, ("x", i)))
    ranges = default_ranges(n, layers)
    for l in range(layers):
        for i in range(n):
            gates.append(("R", "Z", i, ("w", l, i, 0)))
            gates.append(("R", "Y", i, ("w", l, i, 1)))
            gates.append(("R", "Z", i, ("w", l, i, 2)))
        if n > 1:
            for i in range(n):
                gates.append(("CNOT", i, (i + ranges[l]) % n))
    return gates


def _view(psi, n, k):
    B = psi.shape[0]
    return psi.reshape(B, 2**k, 2, 2 ** (n - k - 1))


def _rot(psi, n, k, pauli, a, inverse=False):
    """Apply R_P(a) (or its inverse) on wire k; a: [B] (per sample) extended precision."""
    if inverse:
        a = -a
    c = np.cos(a / 2)[:, None, None].astype(CLD)
    s = np.sin(a / 2)[:, None, None].astype(CLD)
    v = _view(psi, n, k)
    a0 = v[:, :, 0, :]
    a1 = v[:, :, 1, :]
    out = np.empty_like(v)
    if pauli == "X":  # [[c, -is], [-is, c]]
        out[:, :, 0, :] = c * a0 - 1j * s * a1
        out[:, :, 1, :] = -1j * s * a0 + c * a1
    elif pauli == "Y":  # [[c, -s], [s, c]]
        out[:, :, 0, :] = c * a0 - s * a1
        out[:, :, 1, :] = s * a0 + c * a1
    elif pauli == "Z":  # diag(e^{-ia/2}, e^{ia/2})
        out[:, :, 0, :] = (c - 1j * s) * a0
        out[:, :, 1, :] = (c + 1j * s) * a1
    else:
        raise ValueError(pauli)
    return out.reshape(psi.shape)


def _pauli(psi, n, k, pauli):
    v = _view(psi, n, k)
    a0 = v[:, :, 0, :]
    a1 = v[:, :, 1, :]
    out = np.empty_like(v)
    if pauli == "X":
        out[:, :, 0, :] = a1
        out[:, :, 1, :] = a0
    elif pauli == "Y":
        out[:, :, 0, :] = -1j * a1
        out[:, :, 1, :] = 1j * a0
    else:
        out[:, :, 0, :] = a0
        out[:, :, 1, :] = -a1
    return out.reshape(psi.shape)


def _cnot_perm(n, c, t):
    idx = np.arange(2**n)
    bc = 1 << (n - 1 - c)
    bt = 1 << (n - 1 - t)
    return np.where(idx & bc, idx ^ bt, idx)


def reference(x: np.ndarray, w: np.ndarray):
    """x: [B, n] float64 inputs, w: [L, n, 3] float64 weights.

    Returns (out [B, n], grad_x [B, n], grad_w [L, n, 3]) as extended-precision
    arrays, where the gradients are those of sum_{b, i} <Z_i>_b."""
    x = np.asarray(x, dtype=LD)
    w = np.asarray(w, dtype=LD)
    B, n = x.shape
    L = w.shape[0]
    gates = gate_list(n, L)
    perms = {}

    def angle(ref):
        if ref[0] == "x":
            return x[:, ref[1]]
        return np.full(B, w[ref[1], ref[2], ref[3]], dtype=LD)

    psi = np.zeros((B, 2**n), dtype=CLD)
    psi[:, 0] = 1
    for g in gates:
        if g[0] == "R":
            psi = _rot(psi, n, g[2], g[1], angle(g[3]))
        else:
            key = (g[1], g[2])
            if key not in perms:
                perms[key] = _cnot_perm(n, *key)
            psi = psi[:, perms[key]]
    probs = (psi.real**2 + psi.imag**2)
    out = np.empty((B, n), dtype=LD)
    for k in range(n):
        p = probs.reshape(B, 2**k, 2, 2 ** (n - k - 1))
        out[:, k] = p[:, :, 0, :].sum(axis=(1, 2)) - p[:, :, 1, :].sum(axis=(1, 2))

    lam = np.zeros_like(psi)
    for k in range(n):
        lam += _pauli(psi, n, k, "Z")
    phi = psi
    gx = np.zeros((B, n), dtype=LD)
    gw = np.zeros((L, n, 3), dtype=LD)
    for g in reversed(gates):
        if g[0] == "R":
            pauli, k, ref = g[1], g[2], g[3]
            val = np.sum(np.conj(lam) * _pauli(phi, n, k, pauli), axis=1).imag  # [B]
            if ref[0] == "x":
                gx[:, ref[1]] += val
            else:
                gw[ref[1], ref[2], ref[3]] += val.sum()
            a = angle(ref)
            phi = _rot(phi, n, k, pauli, a, inverse=True)
            lam = _rot(lam, n, k, pauli, a, inverse=True)
        else:
            perm = perms[(g[1], g[2])]
            phi = phi[:, perm]
            lam = lam[:, perm]
    return out, gx, gw


def max_abs_err(a, ref) -> float:
    a = np.asarray(a, dtype=LD)
    return float(np.max(np.abs(a - ref))) if a.size else 0.0
