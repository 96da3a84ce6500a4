"""The statistics of reliable comparisons over seeds (Agarwal et al., 2021; rliable's definitions), in numpy.

- :func:`iqm`: the interquartile mean, the mean of the middle 50% of the runs (``scipy.stats.trim_mean(x, 0.25)``:
  ``floor(n / 4)`` runs cut at each end).
- :func:`bootstrap_ci`: a percentile bootstrap confidence interval over the runs.
- :func:`probability_of_improvement`: ``P(X > Y)``, a run of X against a run of Y, ties counting half (the
  Mann-Whitney U statistic over ``n * m``).
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

#: resamples of a bootstrap
REPS = 2000
CONFIDENCE = 0.95


def iqm(scores: np.ndarray, axis: int = 0) -> np.ndarray:
    """The interquartile mean of ``scores`` along ``axis`` (the runs)."""
    ordered = np.sort(np.asarray(scores, dtype=np.float64), axis=axis)
    n = ordered.shape[axis]
    cut = n // 4
    return np.take(ordered, np.arange(cut, n - cut), axis=axis).mean(axis=axis)


def bootstrap_ci(
    scores: np.ndarray,
    statistic: Callable[..., np.ndarray] = iqm,
    reps: int = REPS,
    confidence: float = CONFIDENCE,
    seed: int = 0,
) -> tuple[np.ndarray, np.ndarray]:
    """The percentile bootstrap interval of ``statistic`` over the runs (axis 0 of ``scores``; more axes, a curve, are kept).

    :param statistic: called as ``statistic(resampled, axis=1)`` on ``[reps, runs, ...]``.
    :return: the low and high ends, each of the shape of ``scores[0]``.
    """
    scores = np.asarray(scores, dtype=np.float64)
    picks = np.random.default_rng(seed).integers(0, len(scores), size=(reps, len(scores)))
    values = statistic(scores[picks], axis=1)
    tail = 100 * (1 - confidence) / 2
    return np.percentile(values, tail, axis=0), np.percentile(values, 100 - tail, axis=0)


def _wins(x: np.ndarray, y: np.ndarray) -> np.ndarray:
    """The share of pairs in which a run of ``x`` beats a run of ``y`` (ties half), over the last axis of each: ``[..., n]``
    and ``[..., m]`` give ``[...]``."""
    x, y = x[..., :, None], y[..., None, :]
    return np.mean((x > y) + 0.5 * (x == y), axis=(-2, -1))


def probability_of_improvement(x: np.ndarray, y: np.ndarray) -> float:
    """``P(X > Y)``: the chance that a run of ``x`` scores above a run of ``y``, ties counting half."""
    return float(_wins(np.asarray(x, dtype=np.float64), np.asarray(y, dtype=np.float64)))


def improvement_ci(x: np.ndarray, y: np.ndarray, reps: int = REPS, confidence: float = CONFIDENCE, seed: int = 0) -> tuple[float, float]:
    """The percentile bootstrap interval of :func:`probability_of_improvement`, the runs of each side resampled apart."""
    rng = np.random.default_rng(seed)
    x, y = np.asarray(x, dtype=np.float64), np.asarray(y, dtype=np.float64)
    values = _wins(x[rng.integers(0, len(x), (reps, len(x)))], y[rng.integers(0, len(y), (reps, len(y)))])
    tail = 100 * (1 - confidence) / 2
    return float(np.percentile(values, tail)), float(np.percentile(values, 100 - tail))


def final_score(frames: np.ndarray, values: np.ndarray) -> float:
    """The last value of a curve."""
    return float(values[-1])


def auc_score(frames: np.ndarray, values: np.ndarray) -> float:
    """The area under a curve over its frames, divided by their span: the curve's mean over training."""
    frames, values = np.asarray(frames, dtype=np.float64), np.asarray(values, dtype=np.float64)
    if len(frames) < 2 or frames[-1] == frames[0]:
        return float(values.mean())
    return float(np.trapezoid(values, frames) / (frames[-1] - frames[0]))
