"""The regression decision, on synthetic numbers."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from pytest_tweak.baselines import BaselineEntry
from pytest_tweak.verdict import Status, format_seconds, judge

BASE = BaselineEntry(median_s=0.001, graph_breaks=1, recompiles=2)


def _judge(median: float, breaks: int = 1, recompiles: int = 2, threshold: float = 10.0):
    return judge(
        BASE, median_s=median, graph_breaks=breaks, recompiles=recompiles, threshold_pct=threshold
    )


def test_no_baseline_is_new() -> None:
    verdict = judge(None, median_s=1.0, graph_breaks=9, recompiles=9, threshold_pct=10)
    assert verdict.status is Status.NEW and not verdict.failed


def test_slower_beyond_threshold_regresses_with_all_numbers_in_the_message() -> None:
    verdict = _judge(0.00125)
    assert verdict.failed and verdict.change_pct == pytest.approx(25.0)
    (problem,) = verdict.problems
    assert problem == "median 1.25 ms vs baseline 1 ms: +25.0% slower, threshold 10%"


def test_slower_within_threshold_is_unchanged() -> None:
    assert _judge(0.00109).status is Status.UNCHANGED


def test_faster_is_improved_never_a_failure() -> None:
    verdict = _judge(0.0005)
    assert verdict.status is Status.IMPROVED and not verdict.failed


def test_more_graph_breaks_regress_even_when_faster() -> None:
    verdict = _judge(0.0005, breaks=3)
    assert verdict.failed
    assert verdict.problems == ("graph breaks 3 vs baseline 1 (+2)",)


def test_more_recompiles_regress() -> None:
    assert _judge(0.001, recompiles=3).problems == ("recompiles 3 vs baseline 2 (+1)",)


def test_fewer_breaks_and_recompiles_are_fine() -> None:
    assert not _judge(0.001, breaks=0, recompiles=0).failed


@given(
    st.floats(min_value=1e-7, max_value=10.0),
    st.floats(min_value=1e-7, max_value=10.0),
    st.floats(min_value=0.1, max_value=200.0),
)
def test_fails_exactly_when_the_change_exceeds_the_threshold(
    base: float, new: float, threshold: float
) -> None:
    verdict = judge(
        BaselineEntry(median_s=base, graph_breaks=0, recompiles=0),
        median_s=new,
        graph_breaks=0,
        recompiles=0,
        threshold_pct=threshold,
    )
    change = (new / base - 1) * 100
    assert verdict.failed == (change > threshold)
    assert (verdict.status is Status.IMPROVED) == (change < -threshold)


@pytest.mark.parametrize(
    ("seconds", "text"),
    [(2.5, "2.5 s"), (0.0123, "12.3 ms"), (0.000123456, "123.5 us"), (5e-8, "50 ns")],
)
def test_format_seconds(seconds: float, text: str) -> None:
    assert format_seconds(seconds) == text
