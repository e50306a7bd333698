"""Warm-up, calibration and sampling, on a fake clock so the numbers are exact."""

from __future__ import annotations

import gc
from types import SimpleNamespace

import pytest

from pytest_tweak import measure
from pytest_tweak.measure import (
    MeasureSettings,
    Plan,
    Stats,
    SyncEvery,
    gc_paused,
    plan_rounds,
    time_rounds,
    warm_up,
)


class FakeClock:
    """A model that takes `cost` seconds per call, and a device queue drained by sync."""

    def __init__(self, cost: float) -> None:
        self.now = 0.0
        self.cost = cost
        self.calls = 0
        self.syncs = 0

    def perf_counter(self) -> float:
        return self.now

    def perf_counter_ns(self) -> int:
        return round(self.now * 1e9)

    def call(self) -> None:
        self.calls += 1
        self.now += self.cost

    def sync(self) -> None:
        self.syncs += 1


@pytest.fixture
def clock(monkeypatch: pytest.MonkeyPatch) -> FakeClock:
    fake = FakeClock(cost=2**-14)  # ~61 us, exact in binary
    monkeypatch.setattr(
        measure,
        "time",
        SimpleNamespace(perf_counter=fake.perf_counter, perf_counter_ns=fake.perf_counter_ns),
    )
    return fake


def test_warm_up_runs_for_the_time_and_the_count(clock: FakeClock) -> None:
    calls = warm_up(clock.call, clock.sync, MeasureSettings(warmup_s=2**-7, min_warmup_calls=3))
    assert calls == 128 and clock.syncs == 1
    clock.cost = 1.0
    assert warm_up(clock.call, clock.sync, MeasureSettings(warmup_s=0.01, min_warmup_calls=3)) == 3


def test_plan_makes_each_round_long_and_fills_the_time(clock: FakeClock) -> None:
    settings = MeasureSettings(max_time_s=0.5, min_round_s=2**-10)
    plan = plan_rounds(clock.call, clock.sync, settings)
    assert plan.estimate_s == 2**-14
    assert plan.iterations == 16  # 16 calls of 2**-14 s make a round of 2**-10 s
    assert plan.rounds == 512  # 0.5 s of rounds


def test_plan_respects_min_and_max_rounds(clock: FakeClock) -> None:
    clock.cost = 0.1
    plan = plan_rounds(clock.call, clock.sync, MeasureSettings(max_time_s=0.5, min_rounds=10))
    assert (plan.iterations, plan.rounds) == (1, 10)
    clock.cost = 1e-6
    plan = plan_rounds(
        clock.call, clock.sync, MeasureSettings(max_time_s=100, min_rounds=1, max_rounds=50)
    )
    assert plan.rounds == 50


def test_time_rounds_returns_seconds_per_call_and_syncs_each_round(clock: FakeClock) -> None:
    samples = time_rounds(clock.call, clock.sync, Plan(iterations=4, rounds=3, estimate_s=0))
    assert samples == pytest.approx([2**-14] * 3, rel=1e-4)  # ns clock
    assert clock.calls == 12 and clock.syncs == 4  # one before, one per round


def test_sync_every_waits_after_the_last_call_of_each_round() -> None:
    events: list[str] = []
    timed = SyncEvery(lambda: events.append("call"), lambda: events.append("sync"), every=3)
    for _ in range(6):
        timed()
    assert events == ["call", "call", "call", "sync"] * 2


def test_gc_is_paused_while_sampling_and_restored() -> None:
    assert gc.isenabled()
    with gc_paused():
        assert not gc.isenabled()
    assert gc.isenabled()


def test_stats_from_samples() -> None:
    stats = Stats.from_samples([1.0, 2.0, 3.0, 10.0], iterations=5)
    assert (stats.min, stats.max, stats.median, stats.mean) == (1.0, 10.0, 2.5, 4.0)
    assert stats.rounds == 4 and stats.iterations == 5
    assert stats.stddev == pytest.approx(4.082, rel=1e-3)
    with pytest.raises(ValueError):
        Stats.from_samples([], iterations=1)


@pytest.mark.parametrize(
    "kwargs",
    [
        {"warmup_s": -1},
        {"max_time_s": float("nan")},
        {"min_rounds": 0},
        {"min_rounds": 5, "max_rounds": 2},
        {"min_warmup_calls": 1.5},
    ],
)
def test_bad_settings_are_refused(kwargs: dict[str, float]) -> None:
    with pytest.raises(ValueError):
        MeasureSettings(**kwargs)  # type: ignore[arg-type]
