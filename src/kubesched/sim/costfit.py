"""Fitting the upstream cost model (:mod:`kubesched.sim.costmodel`) to measured attempts.

Least squares on *relative* error (each row divided by its measurement), since the goal is a
bounded percentage error from 0.1 ms attempts to 100 ms ones; coefficients are kept
non-negative (a cost cannot be negative) by refitting without the ones that come out below
zero until none does. Columns no measured point exercises are not fitted: they keep the
value of ``fallback`` (the shipped calibration) and are listed as such.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np

from kubesched.sim.costmodel import COEFFICIENTS


@dataclass(frozen=True, slots=True)
class Fit:
    """A fit's coefficients and which of them the data determined."""

    coefficients: dict[str, float]
    fitted: tuple[str, ...]
    """Coefficients the measurements determined (the others came from the fallback)."""


def fit(x: np.ndarray, y: np.ndarray, fallback: Mapping[str, float] | None = None) -> Fit:
    """Coefficients minimising the relative error of ``x @ c`` against ``y``.

    ``x``: float64 ``[P, len(COEFFICIENTS)]`` (:func:`~kubesched.sim.costmodel.features`);
    ``y``: float64 ``[P]`` measured seconds, all positive.
    """
    x = np.asarray(x, dtype=np.float64)
    y = np.asarray(y, dtype=np.float64)
    if x.ndim != 2 or x.shape != (len(y), len(COEFFICIENTS)):
        raise ValueError(f"x is {x.shape}, want ({len(y)}, {len(COEFFICIENTS)})")
    if len(y) == 0 or not np.all(y > 0):
        raise ValueError("measurements must be positive")
    base = dict(fallback or {})
    active = [j for j in range(x.shape[1]) if np.any(x[:, j] != 0)]
    fixed_cols = [j for j in range(x.shape[1]) if j not in active]
    # What the unfitted columns predict is taken off the target first.
    rest = np.zeros(len(y))
    for j in fixed_cols:
        rest += x[:, j] * base.get(COEFFICIENTS[j], 0.0)
    a = x / y[:, None]
    b = (y - rest) / y
    coef = np.zeros(x.shape[1])
    while active:
        sol, *_ = np.linalg.lstsq(a[:, active], b, rcond=None)
        if np.all(sol >= 0):
            coef[active] = sol
            break
        active = [j for j, v in zip(active, sol, strict=True) if v > 0]
    out = {
        name: float(coef[j]) if np.any(x[:, j] != 0) else float(base.get(name, 0.0))
        for j, name in enumerate(COEFFICIENTS)
    }
    fitted = tuple(COEFFICIENTS[j] for j in range(x.shape[1]) if np.any(x[:, j] != 0))
    return Fit(out, fitted)


def predict(x: np.ndarray, coefficients: Mapping[str, float]) -> np.ndarray:
    """Predicted seconds, float64 ``[P]``, for design matrix ``x`` ``[P, C]``."""
    c = np.array([coefficients[name] for name in COEFFICIENTS], dtype=np.float64)
    result: np.ndarray = np.asarray(x, dtype=np.float64) @ c
    return result


def errors_percent(
    predicted: Sequence[float] | np.ndarray, measured: Sequence[float] | np.ndarray
) -> np.ndarray:
    """Signed error of each prediction in percent of its measurement, float64 ``[P]``."""
    p = np.asarray(predicted, dtype=np.float64)
    m = np.asarray(measured, dtype=np.float64)
    result: np.ndarray = (p - m) / m * 100.0
    return result


def summary(errors: np.ndarray) -> dict[str, float]:
    """Median and worst absolute error (percent) of ``errors`` ``[P]``; zeros when empty."""
    if len(errors) == 0:
        return {"medianAbsErrorPercent": 0.0, "maxAbsErrorPercent": 0.0}
    e = np.abs(errors)
    return {
        "medianAbsErrorPercent": round(float(np.median(e)), 1),
        "maxAbsErrorPercent": round(float(np.max(e)), 1),
    }
