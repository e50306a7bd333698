"""Medians, their distribution-free confidence intervals, and run summaries."""

from __future__ import annotations

import math
import random

import pytest
from hypothesis import given
from hypothesis import strategies as st

from pytest_tweak.stats import Summary, chi2_quantile, median_ci, normal_quantile, t_quantile


@pytest.mark.parametrize(("n", "ranks"), [(10, (2, 9)), (20, (6, 15)), (100, (40, 61))])
def test_median_ci_uses_the_ranks_of_the_exact_binomial_tables(
    n: int, ranks: tuple[int, int]
) -> None:
    samples = [float(i) for i in range(1, n + 1)]
    random.Random(n).shuffle(samples)
    assert median_ci(samples) == (float(ranks[0]), float(ranks[1]))


def test_median_ci_covers_the_true_median_about_95_percent_of_the_time() -> None:
    rng = random.Random(0)
    trials = 2000
    covered = 0
    for _ in range(trials):
        samples = [rng.lognormvariate(0.0, 0.3) for _ in range(40)]  # true median 1
        low, high = median_ci(samples)
        covered += low <= 1.0 <= high
    assert 0.93 <= covered / trials <= 0.99


@given(st.lists(st.floats(min_value=1e-9, max_value=1e3), min_size=1, max_size=200))
def test_summary_orders_its_numbers(samples: list[float]) -> None:
    summary = Summary.of(samples)
    assert summary.n == len(samples)
    assert summary.min <= summary.q1 <= summary.median <= summary.q3 <= summary.max
    assert summary.log_sd >= 0
    assert Summary.from_dict(summary.as_dict(), "x") == summary


def test_summary_log_sd_shrinks_like_one_over_sqrt_n() -> None:
    rng = random.Random(1)
    small = Summary.of([rng.lognormvariate(0, 0.1) for _ in range(25)])
    large = Summary.of([rng.lognormvariate(0, 0.1) for _ in range(400)])
    # the median of a normal sample has sd 1.2533 * sigma / sqrt(n)
    assert large.log_sd == pytest.approx(1.2533 * 0.1 / 20, rel=0.35)
    assert small.log_sd > 2 * large.log_sd


def test_summary_refuses_empty_or_non_positive_samples() -> None:
    with pytest.raises(ValueError, match="no samples"):
        Summary.of([])
    with pytest.raises(ValueError, match="positive"):
        Summary.of([1.0, 0.0])
    with pytest.raises(ValueError, match="positive"):
        Summary.of([1.0, math.nan])


@pytest.mark.parametrize(
    ("data", "problem"),
    [
        ([], "expected an object"),
        ({"n": 0}, "'n' must be an integer >= 1"),
        ({"n": 3, "median": -1}, "'median' must be a positive number"),
        (
            {"n": 3, "median": 1, "q1": 1, "q3": 1, "min": 1, "max": 1, "log_sd": "x"},
            "'log_sd' must be a number >= 0",
        ),
        (
            {"n": 3, "median": 5, "q1": 1, "q3": 1, "min": 1, "max": 2, "log_sd": 0},
            "min <= median <= max",
        ),
    ],
)
def test_summary_from_bad_json_names_the_field(data: object, problem: str) -> None:
    with pytest.raises(ValueError, match="where: .*" + problem.replace("(", r"\(")):
        Summary.from_dict(data, "where")


def test_normal_quantile() -> None:
    assert normal_quantile(0.975) == pytest.approx(1.959964)
    assert normal_quantile(0.99) == pytest.approx(2.326348)
    with pytest.raises(ValueError):
        normal_quantile(1.0)


@pytest.mark.parametrize(
    ("p", "df", "table"),
    [(0.99, 1, 31.82052), (0.99, 2, 6.964557), (0.99, 4, 3.746947), (0.975, 10, 2.228139)],
)
def test_t_quantile_matches_the_tables(p: float, df: int, table: float) -> None:
    assert t_quantile(p, df) == pytest.approx(table, rel=1e-6)


def test_t_quantile_tends_to_the_normal_and_refuses_bad_arguments() -> None:
    assert t_quantile(0.99, 4000) == pytest.approx(normal_quantile(0.99), rel=1e-3)
    with pytest.raises(ValueError, match="df >= 1"):
        t_quantile(0.99, 0)


@pytest.mark.parametrize(
    ("p", "df", "table"), [(0.99, 1, 6.634897), (0.99, 2, 9.210340), (0.99, 9, 21.66599)]
)
def test_chi2_quantile_is_within_a_percent_of_the_tables(p: float, df: int, table: float) -> None:
    assert chi2_quantile(p, df) == pytest.approx(table, rel=0.01)
