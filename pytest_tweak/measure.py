"""Warm-up, calibration and timing samples.

A sample is the time of one *round*: ``iterations`` back-to-back calls followed by one device
synchronize, divided by ``iterations``. On cpu the synchronize does nothing; on cuda and xpu it
waits for the queued kernels, so a sample is device time, not the time to launch them, while
the calls inside a round still overlap launch and execution as they do in real use.

The plan (iterations, rounds) is calibrated per case: each round lasts at least
``min_round_s`` (far above the timer's resolution), and the rounds together fill about
``max_time_s`` but never fewer than ``min_rounds``. The garbage collector is collected and
switched off while samples are taken (as ``timeit`` does), so a collection of the test suite's
garbage does not land in one sample.
"""

from __future__ import annotations

import contextlib
import gc
import math
import statistics
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from typing import Any

__all__ = [
    "MeasureSettings",
    "Plan",
    "Stats",
    "SyncEvery",
    "gc_paused",
    "plan_rounds",
    "time_rounds",
    "warm_up",
]


@dataclass(frozen=True)
class MeasureSettings:
    """How long to warm up and how much to measure, per case.

    Args:
        warmup_s: Keep calling the model (after the compiling first call) for at least this
            long before measuring.
        min_warmup_calls: ... and at least this many times.
        max_time_s: The timed rounds of one case together take about this long.
        min_rounds: Never fewer rounds than this, whatever ``max_time_s`` says.
        max_rounds: Never more rounds than this.
        min_round_s: Each round lasts at least this long (more calls per round if needed).
        cpu_threads: torch's intra-op threads for a cpu case, compile included (inductor
            builds its thread count into the kernels); ``None`` keeps torch's setting. One
            thread, as ``torch.utils.benchmark.Timer`` defaults to, keeps the numbers stable
            on small shared machines.
    """

    warmup_s: float = 0.2
    min_warmup_calls: int = 3
    max_time_s: float = 1.0
    min_rounds: int = 10
    max_rounds: int = 10_000
    min_round_s: float = 0.001
    cpu_threads: int | None = 1

    def __post_init__(self) -> None:
        for name in ("warmup_s", "max_time_s", "min_round_s"):
            value = getattr(self, name)
            if not isinstance(value, (int, float)) or value < 0 or math.isnan(value):
                raise ValueError(f"{name} must be a number of seconds >= 0, got {value!r}")
        for name in ("min_warmup_calls", "min_rounds", "max_rounds"):
            value = getattr(self, name)
            if not isinstance(value, int) or value < 1:
                raise ValueError(f"{name} must be an integer >= 1, got {value!r}")
        if self.cpu_threads is not None and (
            not isinstance(self.cpu_threads, int) or self.cpu_threads < 1
        ):
            raise ValueError(
                f"cpu_threads must be an integer >= 1 or None, got {self.cpu_threads!r}"
            )
        if self.max_rounds < self.min_rounds:
            raise ValueError(
                f"max_rounds ({self.max_rounds}) must be >= min_rounds ({self.min_rounds})"
            )


@dataclass(frozen=True)
class Plan:
    """How a case is timed: ``rounds`` samples of ``iterations`` calls each."""

    iterations: int
    rounds: int
    estimate_s: float


@dataclass(frozen=True)
class Stats:
    """Summary of per-call timing samples, in seconds."""

    min: float
    max: float
    mean: float
    median: float
    stddev: float
    rounds: int
    iterations: int

    @classmethod
    def from_samples(cls, samples: Sequence[float], iterations: int) -> Stats:
        if not samples:
            raise ValueError("no timing samples")
        return cls(
            min=min(samples),
            max=max(samples),
            mean=statistics.fmean(samples),
            median=statistics.median(samples),
            stddev=statistics.stdev(samples) if len(samples) > 1 else 0.0,
            rounds=len(samples),
            iterations=iterations,
        )

    def as_dict(self) -> dict[str, float | int]:
        return {
            "min": self.min,
            "max": self.max,
            "mean": self.mean,
            "median": self.median,
            "stddev": self.stddev,
            "rounds": self.rounds,
            "iterations": self.iterations,
        }


class SyncEvery:
    """Call ``call`` and synchronize after every ``every``-th call.

    Timing harnesses such as pytest-benchmark's ``pedantic`` run a target ``iterations`` times
    per round between two timer reads; with ``every == iterations`` the last call of each round
    waits for the device, so the round's time covers the device work of all its calls.
    """

    def __init__(self, call: Callable[[], Any], sync: Callable[[], None], every: int) -> None:
        if every < 1:
            raise ValueError(f"every must be >= 1, got {every}")
        self._call = call
        self._sync = sync
        self._every = every
        self._count = 0

    def __call__(self) -> Any:
        result = self._call()
        self._count += 1
        if self._count % self._every == 0:
            self._sync()
        return result


def warm_up(call: Callable[[], Any], sync: Callable[[], None], settings: MeasureSettings) -> int:
    """Call until both ``warmup_s`` and ``min_warmup_calls`` are reached; return the count."""
    calls = 0
    start = time.perf_counter()
    while calls < settings.min_warmup_calls or time.perf_counter() - start < settings.warmup_s:
        call()
        calls += 1
    sync()
    return calls


def plan_rounds(
    call: Callable[[], Any], sync: Callable[[], None], settings: MeasureSettings
) -> Plan:
    """Estimate the time of one call and choose iterations per round and the round count."""
    calls = 1
    while True:
        sync()
        start = time.perf_counter()
        for _ in range(calls):
            call()
        sync()
        elapsed = time.perf_counter() - start
        # Grow the probe until it is long enough to be timed well (or plainly slow).
        if elapsed >= settings.min_round_s or calls >= 1 << 20:
            break
        calls *= 10 if elapsed < settings.min_round_s / 10 else 2
    estimate = max(elapsed / calls, 1e-9)
    iterations = max(1, math.ceil(settings.min_round_s / estimate))
    rounds = int(settings.max_time_s / (estimate * iterations))
    rounds = min(max(rounds, settings.min_rounds), settings.max_rounds)
    return Plan(iterations=iterations, rounds=rounds, estimate_s=estimate)


@contextlib.contextmanager
def gc_paused() -> Iterator[None]:
    """Collect garbage now and keep the collector off inside the block."""
    was_enabled = gc.isenabled()
    gc.collect()
    gc.disable()
    try:
        yield
    finally:
        if was_enabled:
            gc.enable()


def time_rounds(call: Callable[[], Any], sync: Callable[[], None], plan: Plan) -> list[float]:
    """Take ``plan.rounds`` samples of ``plan.iterations`` calls; seconds per call each."""
    samples: list[float] = []
    timer = time.perf_counter_ns
    with gc_paused():
        sync()
        for _ in range(plan.rounds):
            start = timer()
            for _ in range(plan.iterations):
                call()
            sync()
            samples.append((timer() - start) / 1e9 / plan.iterations)
    return samples
