#!/usr/bin/env python3
"""theta_m for the truncated Taylor action of the matrix exponential.

Al-Mohy & Higham, "Computing the action of the matrix exponential", SIAM J. Sci.
Comput. 33(2), 488-511 (2011), section 3: s steps of T_m(A/s) equal exp(A + dA)
with dA = s h_{m+1}(A/s), h_{m+1}(x) = log(exp(-x) T_m(x)) = sum_{k > m} c_k x^k.
theta_m is the largest theta with h~_{m+1}(theta) / theta <= u, h~ = sum |c_k| x^k,
so ||A/s||_1 <= theta_m keeps the relative backward error below the unit roundoff u.

Prints the tables of src/kernels/expm_action.hpp (u = 2^-53 and 2^-24). For
u = 2^-53 they reproduce the published values (Higham & Al-Mohy, Acta Numerica
2010, table A.3, m <= 30, and AMH 2011 table 3.1) to the digits given there.
Needs mpmath. Run: python3 tools/expm_theta.py
"""
import mpmath as mp

mp.mp.dps = 80
TERMS = 600  # series terms of h~; theta_55 for u = 2^-24 is ~0.8 of the radius of convergence


def log_series(m):
    # f = exp(-x) T_m(x): f_0 = 1, f_1..f_m = 0; log f from k f_k = sum_j j l_j f_{k-j}.
    fact = [mp.factorial(i) for i in range(TERMS + 1)]
    f = [mp.mpf(0)] * (TERMS + 1)
    for k in range(TERMS + 1):
        f[k] = sum((mp.mpf(-1) ** (k - i)) / (fact[i] * fact[k - i]) for i in range(0, min(k, m) + 1))
    f[0] = mp.mpf(1)
    for k in range(1, m + 1):
        f[k] = mp.mpf(0)
    l = [mp.mpf(0)] * (TERMS + 1)
    for k in range(1, TERMS + 1):
        acc = f[k] * k
        for j in range(m + 1, k):
            if f[k - j] != 0:
                acc -= j * l[j] * f[k - j]
        l[k] = acc / k
    return [abs(c) for c in l]


def theta(m, u):
    c = log_series(m)
    ratio = lambda t: sum(c[k] * t ** (k - 1) for k in range(m + 1, TERMS + 1))
    lo, hi = mp.mpf(0), mp.mpf(1)
    while ratio(hi) <= u:
        lo, hi = hi, hi * 2
    for _ in range(80):
        mid = (lo + hi) / 2
        if ratio(mid) <= u:
            lo = mid
        else:
            hi = mid
    return lo


if __name__ == "__main__":
    for name, u in (("double", mp.mpf(2) ** -53), ("float", mp.mpf(2) ** -24)):
        vals = [theta(m, u) for m in range(1, 56)]
        print(name)
        print(",\n".join(", ".join(mp.nstr(v, 6) for v in vals[i:i + 5]) for i in range(0, 55, 5)))
