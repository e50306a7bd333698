"""The regression decision: a case's new numbers against its baseline.

A case regressed when its median is slower than the baseline's by more than the threshold,
or when it has more graph breaks or more recompiles than the baseline. Faster is reported,
never a failure.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import Enum

from .baselines import BaselineEntry

__all__ = ["Status", "Verdict", "format_seconds", "judge"]


class Status(str, Enum):
    """The outcome of comparing a case with its baseline."""

    NEW = "new"  # no baseline for this case
    UNCHANGED = "unchanged"
    IMPROVED = "improved"
    REGRESSED = "regressed"
    NOT_COMPARED = "not compared"  # --tweak-save, or timing disabled

    def __str__(self) -> str:
        return self.value


@dataclass(frozen=True)
class Verdict:
    """A status, the median change in percent (when compared) and what regressed."""

    status: Status
    change_pct: float | None = None
    problems: tuple[str, ...] = ()

    @property
    def failed(self) -> bool:
        return self.status is Status.REGRESSED


def judge(
    baseline: BaselineEntry | None,
    *,
    median_s: float,
    graph_breaks: int,
    recompiles: int,
    threshold_pct: float,
) -> Verdict:
    """Compare new numbers with ``baseline``.

    ``threshold_pct`` is the allowed slow-down of the median in percent: with 10, a median
    10 % slower than the baseline still passes and 10.1 % slower fails.
    """
    if baseline is None:
        return Verdict(Status.NEW)
    change = (median_s / baseline.median_s - 1.0) * 100.0
    problems: list[str] = []
    if change > threshold_pct:
        problems.append(
            f"median {format_seconds(median_s)} vs baseline {format_seconds(baseline.median_s)}:"
            f" {change:+.1f}% slower, threshold {threshold_pct:g}%"
        )
    if graph_breaks > baseline.graph_breaks:
        problems.append(
            f"graph breaks {graph_breaks} vs baseline {baseline.graph_breaks}"
            f" (+{graph_breaks - baseline.graph_breaks})"
        )
    if recompiles > baseline.recompiles:
        problems.append(
            f"recompiles {recompiles} vs baseline {baseline.recompiles}"
            f" (+{recompiles - baseline.recompiles})"
        )
    if problems:
        return Verdict(Status.REGRESSED, change, tuple(problems))
    if change < -threshold_pct:
        return Verdict(Status.IMPROVED, change)
    return Verdict(Status.UNCHANGED, change)


def format_seconds(seconds: float) -> str:
    """``0.000123`` -> ``123.0 us``; three significant digits, unit picked to fit."""
    for unit, scale in (("s", 1.0), ("ms", 1e-3), ("us", 1e-6)):
        if abs(seconds) >= scale:
            return f"{seconds / scale:.4g} {unit}"
    return f"{seconds / 1e-9:.4g} ns"
