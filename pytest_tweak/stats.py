"""Statistics of timing samples: medians, their confidence intervals, and compact summaries.

Timings are skewed (a sample can only be slowed down, by an interrupt or a busy neighbour), so
everything here is rank-based or on the log scale: the median and a distribution-free
confidence interval for it from order statistics (the binomial argument: the chance that the
median lies between the l-th and u-th smallest of n samples does not depend on the
distribution), and the spread of that estimate as a standard deviation of its logarithm, which
is what the verdict adds up across runs. Pure Python, no numpy: these run once per case.
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, TypeGuard

__all__ = [
    "Summary",
    "chi2_quantile",
    "interval",
    "lead",
    "median_ci",
    "normal_quantile",
    "t_quantile",
]

#: Two-sided 95 %: the interval used to estimate the spread of a run's median.
_Z95 = 1.959963984540054


def normal_quantile(p: float) -> float:
    """The ``p`` quantile of the standard normal distribution (``0 < p < 1``)."""
    if not 0.0 < p < 1.0:
        raise ValueError(f"p must be in (0, 1), got {p}")
    return statistics.NormalDist().inv_cdf(p)


def t_quantile(p: float, df: int) -> float:
    """The ``p`` quantile of Student's t with ``df`` degrees of freedom (``0.5 <= p < 1``),
    to the last few digits: bisection on its distribution function."""
    if not 0.5 <= p < 1.0 or df < 1:
        raise ValueError(f"need 0.5 <= p < 1 and df >= 1, got p={p}, df={df}")

    def cdf(t: float) -> float:  # t >= 0
        return 1.0 - 0.5 * _beta_inc(df / 2.0, 0.5, df / (df + t * t))

    low, high = 0.0, 1.0
    while cdf(high) < p:
        low, high = high, 2.0 * high
    for _ in range(200):
        middle = (low + high) / 2.0
        if cdf(middle) < p:
            low = middle
        else:
            high = middle
        if high - low < 1e-12 * high:
            break
    return (low + high) / 2.0


def chi2_quantile(p: float, df: int) -> float:
    """The ``p`` quantile of the chi-square distribution with ``df`` degrees of freedom, by
    the Wilson-Hilferty approximation (within 1 % of the tables for ``df >= 1``, p <= 0.999)."""
    if not 0.0 < p < 1.0 or df < 1:
        raise ValueError(f"need 0 < p < 1 and df >= 1, got p={p}, df={df}")
    a = 2.0 / (9.0 * df)
    return df * (1.0 - a + normal_quantile(p) * math.sqrt(a)) ** 3


def _beta_inc(a: float, b: float, x: float) -> float:
    """The regularized incomplete beta function I_x(a, b), by its continued fraction."""
    if x <= 0.0:
        return 0.0
    if x >= 1.0:
        return 1.0
    front = math.exp(
        math.lgamma(a + b) - math.lgamma(a) - math.lgamma(b) + a * math.log(x) + b * math.log1p(-x)
    )
    if x < (a + 1.0) / (a + b + 2.0):
        return front * _beta_fraction(a, b, x) / a
    return 1.0 - front * _beta_fraction(b, a, 1.0 - x) / b


def _beta_fraction(a: float, b: float, x: float) -> float:
    """The continued fraction of the incomplete beta function (modified Lentz)."""
    tiny = 1e-300

    def bounded(v: float) -> float:
        return tiny if abs(v) < tiny else v

    c, d = 1.0, 1.0 / bounded(1.0 - (a + b) * x / (a + 1.0))
    h = d
    for m in range(1, 500):
        for numerator in (
            m * (b - m) * x / ((a + 2 * m - 1.0) * (a + 2 * m)),
            -(a + m) * (a + b + m) * x / ((a + 2 * m) * (a + 2 * m + 1.0)),
        ):
            d = 1.0 / bounded(1.0 + numerator * d)
            c = bounded(1.0 + numerator / c)
            h *= d * c
        if abs(d * c - 1.0) < 1e-15:
            break
    return h


def median_ci(samples: Sequence[float], z: float = _Z95) -> tuple[float, float]:
    """A distribution-free confidence interval for the median of ``samples``.

    The interval runs from the l-th to the u-th smallest sample, with ranks from the normal
    approximation of Binomial(n, 1/2) at ``z`` (for 10 samples at 95 %: the 2nd and 9th; for
    100: the 40th and 61st, as the exact tables give); it narrows like 1/sqrt(n).
    """
    ordered = sorted(samples)
    n = len(ordered)
    if n == 0:
        raise ValueError("no samples")
    half = z * math.sqrt(n) / 2.0
    lower = max(1, round(n / 2.0 - half))
    upper = min(n, round(n / 2.0 + half + 1.0))
    return ordered[lower - 1], ordered[upper - 1]


@dataclass(frozen=True)
class Summary:
    """What a significance test needs of one run's samples, in a few numbers.

    Attributes:
        n: Number of samples.
        median: Their median.
        q1, q3: First and third quartiles.
        min, max: Extremes.
        log_sd: Standard deviation of ``log(median)`` as an estimate, from the width of the
            median's 95 % confidence interval (``0`` for a single sample).
    """

    n: int
    median: float
    q1: float
    q3: float
    min: float
    max: float
    log_sd: float

    @classmethod
    def of(cls, samples: Sequence[float]) -> Summary:
        """Summarize positive samples (seconds, or ratios of seconds)."""
        if not samples:
            raise ValueError("no samples to summarize")
        if any(not math.isfinite(s) or s <= 0 for s in samples):
            raise ValueError("samples must be positive finite numbers")
        ordered = sorted(samples)
        n = len(ordered)
        if n == 1:
            only = ordered[0]
            return cls(1, only, only, only, only, only, 0.0)
        q1, _, q3 = statistics.quantiles(ordered, n=4, method="inclusive")
        low, high = median_ci(ordered)
        return cls(
            n=n,
            median=statistics.median(ordered),
            q1=q1,
            q3=q3,
            min=ordered[0],
            max=ordered[-1],
            log_sd=(math.log(high) - math.log(low)) / (2.0 * _Z95),
        )

    @property
    def rel_ci_pct(self) -> float:
        """Half-width of the median's 95 % interval, in percent of the median."""
        return (math.exp(_Z95 * self.log_sd) - 1.0) * 100.0

    def as_dict(self) -> dict[str, float | int]:
        """As the baseline file and the JSON report write it."""
        return {
            "n": self.n,
            "median": self.median,
            "q1": self.q1,
            "q3": self.q3,
            "min": self.min,
            "max": self.max,
            "log_sd": self.log_sd,
        }

    @classmethod
    def from_dict(cls, data: Any, where: str) -> Summary:
        """Build from parsed JSON; `ValueError` names the field that is wrong."""
        if not isinstance(data, Mapping):
            raise ValueError(f"{where}: expected an object, got {type(data).__name__}")
        n = data.get("n")
        if not isinstance(n, int) or isinstance(n, bool) or n < 1:
            raise ValueError(f"{where}: 'n' must be an integer >= 1, got {n!r}")
        values: dict[str, float] = {}
        for name in ("median", "q1", "q3", "min", "max"):
            value = data.get(name)
            if not _is_number(value) or not math.isfinite(value) or value <= 0:
                raise ValueError(f"{where}: {name!r} must be a positive number, got {value!r}")
            values[name] = float(value)
        log_sd = data.get("log_sd")
        if not _is_number(log_sd) or not math.isfinite(log_sd) or log_sd < 0:
            raise ValueError(f"{where}: 'log_sd' must be a number >= 0, got {log_sd!r}")
        if not values["min"] <= values["median"] <= values["max"]:
            raise ValueError(f"{where}: needs min <= median <= max")
        return cls(n=n, log_sd=float(log_sd), **values)


def _is_number(value: Any) -> TypeGuard[float]:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def interval(summary: Summary) -> tuple[float, float]:
    """The 95 % confidence interval of ``summary``'s median (from its ``log_sd``)."""
    spread = math.exp(_Z95 * summary.log_sd)
    return summary.median / spread, summary.median * spread


def lead(first: Summary, second: Summary) -> tuple[float, bool]:
    """How much slower ``second`` is than ``first``, in percent of ``first``'s median, and
    whether that is more than noise: the two medians' 95 % intervals do not overlap."""
    margin = (second.median / first.median - 1.0) * 100.0
    return margin, interval(first)[1] < interval(second)[0]
