#!/usr/bin/env python3
"""Prints the coefficient table of Gelu16 (src/backend/cpu/vec_math.h): Phi(|x|), the
normal CDF, on 16 intervals of s = |x| * 2 sqrt(2) (interval k: s in [k, k + 1), t = s - k),
a degree-5 polynomial in t on each, from a Chebyshev fit in double at 60 nodes, rounded to
float. Interval 15 (|x| >= 5.30, where 1 - Phi < 5.7e-8) holds 1 exactly. Run it with
numpy installed; it also prints the largest error of the float coefficients over
intervals 0-14 (at 4,001 points each, evaluated in double; Gelu16 evaluates in float,
which adds rounding: tests/backend/vec_math_test.cc bounds the GELU it gives).
"""
import math

import numpy as np

DEGREE, INTERVALS, NODES = 5, 16, 60


def phi(s):
    return 0.5 * (1.0 + math.erf(s / 4.0))  # s / 4 = |x| / sqrt(2)


def main():
    rows, worst = [], 0.0
    for k in range(INTERVALS):
        if k == INTERVALS - 1:
            rows.append([1.0] + [0.0] * DEGREE)
            continue
        nodes = 0.5 + 0.5 * np.cos(np.pi * (np.arange(NODES) + 0.5) / NODES)
        fit = np.polynomial.chebyshev.Chebyshev.fit(nodes, [phi(k + t) for t in nodes], DEGREE, domain=[0, 1])
        coef = fit.convert(kind=np.polynomial.Polynomial, domain=[-1, 1], window=[-1, 1]).coef
        coef = np.float32(coef).astype(np.float64)
        t = np.linspace(0, 1, 4001)
        worst = max(worst, max(abs(np.polyval(coef[::-1], t) - np.array([phi(k + u) for u in t]))))
        rows.append(list(coef))
    print(f"// largest error of the float coefficients: {worst:.2e}")
    for d in range(DEGREE + 1):
        print("{" + ", ".join(f"{rows[k][d]:.9e}f" for k in range(INTERVALS)) + "},")


if __name__ == "__main__":
    main()
