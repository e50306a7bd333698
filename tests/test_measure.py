"""Timers, calibration, warm-up and interleaved sampling, on fake clocks so numbers are exact."""

from __future__ import annotations

import gc
import statistics
import sys
import time
from collections.abc import Callable
from dataclasses import replace
from types import SimpleNamespace
from typing import Any

import pytest
import torch

from pytest_tweak import measure
from pytest_tweak.measure import (
    EventTimer,
    HostTimer,
    Instruments,
    MeasureSettings,
    calibrate,
    gc_paused,
    host_reference_workload,
    host_weight,
    normalized_series,
    reference_workload,
    warm_up,
)


class FakeClock:
    """Time that moves only when a fake model runs."""

    def __init__(self) -> None:
        self.now = 0.0

    def perf_counter(self) -> float:
        return self.now

    def perf_counter_ns(self) -> int:
        return round(self.now * 1e9)


@pytest.fixture
def clock(monkeypatch: pytest.MonkeyPatch) -> FakeClock:
    fake = FakeClock()
    monkeypatch.setattr(
        measure,
        "time",
        SimpleNamespace(perf_counter=fake.perf_counter, perf_counter_ns=fake.perf_counter_ns),
    )
    return fake


class ScriptedTimer:
    """A SampleTimer whose samples come from ``cost(call_name, sample_index)``; it advances
    the fake clock by the sample's duration and logs which workload was sampled."""

    def __init__(self, clock: FakeClock, cost: Callable[[str, int], float]) -> None:
        self.clock = clock
        self.cost = cost
        self.log: list[str] = []

    def __call__(self, call: Callable[[], Any], iterations: int) -> float:
        name = call()
        per_call = self.cost(name, self.log.count(name))
        self.log.append(name)
        self.clock.now += per_call * iterations
        return per_call


def named(name: str) -> Callable[[], str]:
    return lambda: name


def test_host_timer_reads_perf_counter_ns_around_the_calls_and_syncs(clock: FakeClock) -> None:
    syncs = []

    def call() -> None:
        clock.now += 2**-14

    timer = HostTimer(lambda: syncs.append(clock.now))
    assert timer(call, 4) == pytest.approx(2**-14, rel=1e-4)
    # before the first call (work queued earlier stays out) and after the last (the calls'
    # device work stays in), each before the clock is read
    assert syncs == [0.0, 4 * 2**-14]


def test_a_primed_host_timer_runs_one_untimed_call_first_so_a_cold_call_stays_out(
    clock: FakeClock,
) -> None:
    # the first call after other workloads ran reloads its weights: 4x slower here
    costs: list[float] = []

    def call() -> None:
        cost = 4 * 2**-14 if not costs else 2**-14
        costs.append(cost)
        clock.now += cost

    primed = HostTimer(lambda: None, prime=True)
    assert primed(call, 2) == pytest.approx(2**-14, rel=1e-4)
    assert len(costs) == 3  # the untimed call, then the two timed ones
    costs.clear()
    assert HostTimer(lambda: None)(call, 2) == pytest.approx(2.5 * 2**-14, rel=1e-4)


def test_every_latency_timer_is_primed() -> None:
    assert measure.make_timer(torch.device("cpu"), 1).prime
    assert measure.make_timer(torch.device("cpu"), None).prime
    # made, not used: no accelerator here, and making the timer touches none
    assert measure.make_timer(torch.device("cuda")).prime
    assert measure.make_timer(torch.device("xpu")).prime


def test_an_accelerator_sample_is_primed_before_its_synchronize(clock: FakeClock) -> None:
    # the untimed call's device work must be drained before the clock starts, or one more
    # call's worth of device time would land in the sample
    events: list[str] = []

    def call() -> None:
        events.append("call")
        clock.now += 2**-14

    timer = HostTimer(lambda: events.append("sync"), min_round_s=0.02, prime=True)
    assert timer(call, 2) == pytest.approx(2**-14, rel=1e-4)
    assert events == ["call", "sync", "call", "call", "sync"]


def test_calibrate_makes_a_sample_last_min_round_s_ignoring_a_slow_first_probe(
    clock: FakeClock,
) -> None:
    timer = ScriptedTimer(clock, lambda name, i: 1e-2 if i == 0 else 1e-4)
    assert calibrate(named("case"), timer, min_round_s=2e-3) == 24  # 1.2 * 2 ms / 0.1 ms
    slow = ScriptedTimer(clock, lambda name, i: 5e-3)
    assert calibrate(named("case"), slow, min_round_s=2e-3) == 1


def test_warm_up_stops_once_two_windows_agree(clock: FakeClock) -> None:
    # timings settle geometrically (caches filling, clocks ramping up) towards 1 ms
    def cost(name: str, i: int) -> float:
        return 1e-3 * (1 + 0.5 * 0.8**i)

    timer = ScriptedTimer(clock, cost)
    done = warm_up(named("case"), timer, 1, MeasureSettings(warmup_s=10, stable_pct=2))
    assert done.stable
    # the first sample count m whose windows (medians at m-3 and m-8) agree within 2 %
    first = next(m for m in range(10, 100) if cost("", m - 8) / cost("", m - 3) <= 1.02)
    assert done.samples == first == 21


def test_warm_up_gives_up_at_its_time_cap_when_timings_keep_drifting(clock: FakeClock) -> None:
    timer = ScriptedTimer(clock, lambda name, i: 1e-3 * (1.1**i))
    done = warm_up(named("case"), timer, 1, MeasureSettings(warmup_s=0.05, stable_pct=2))
    assert not done.stable and 0.05 <= done.seconds < 0.07


def test_measure_interleaves_workloads_and_stops_when_precise(clock: FakeClock) -> None:
    costs = {"case": 1e-3, "reference": 5e-4, "eager": 2e-3}
    timer = ScriptedTimer(clock, lambda name, i: costs[name])
    workloads = {name: named(name) for name in costs}
    settings = MeasureSettings(min_rounds=10, max_time_s=100, min_round_s=1e-3)
    result = measure.measure(workloads, timer, settings, primary=("case", "reference"))
    assert result.stopped == "precise"  # constant samples: precise at the first check
    assert {n: len(v) for n, v in result.samples.items()} == dict.fromkeys(costs, 10)
    timed = timer.log[-30:]
    assert timed == ["case", "reference", "eager"] * 10  # in turn, round by round
    assert result.iterations == {"case": 1, "reference": 3, "eager": 1}  # 1.2 x 1 ms / 0.5 ms
    normalized = result.ratio("case", "reference")
    assert normalized is not None and normalized.median == pytest.approx(2.0)
    speedup = result.ratio("eager", "case")
    assert speedup is not None and speedup.median == pytest.approx(2.0)


def test_measure_stops_at_the_time_budget_when_noise_keeps_it_imprecise(
    clock: FakeClock,
) -> None:
    noisy = ScriptedTimer(clock, lambda name, i: 1e-3 * (1 + 0.5 * (i % 3)))
    settings = MeasureSettings(min_rounds=5, max_time_s=0.1, precision_pct=0.01)
    result = measure.measure({"case": named("case")}, noisy, settings)
    assert result.stopped == "time budget"
    assert 0.1 <= result.seconds < 0.11


def test_one_sample_is_never_taken_for_a_precise_median(clock: FakeClock) -> None:
    # its spread is zero: min_rounds=1 stopped every case after one sample (eleventh trial)
    noisy = ScriptedTimer(clock, lambda name, i: 1e-3 * (1 + 0.5 * (i % 2)))
    settings = MeasureSettings(min_rounds=1, max_time_s=0.05, precision_pct=50)
    result = measure.measure({"case": named("case")}, noisy, settings)
    assert len(result.samples["case"]) >= measure._MIN_PRECISE_ROUNDS


def test_measure_takes_at_least_min_rounds_even_over_budget(clock: FakeClock) -> None:
    slow = ScriptedTimer(clock, lambda name, i: 1.0)
    settings = MeasureSettings(min_rounds=4, max_time_s=0.0, warmup_s=0)
    result = measure.measure({"case": named("case")}, slow, settings)
    assert len(result.samples["case"]) == 4


def test_gc_and_tracing_are_off_while_sampling_and_restored() -> None:
    def tracer(*args: Any) -> None:
        return None

    before = sys.gettrace()
    sys.settrace(tracer)
    try:
        assert gc.isenabled()
        with gc_paused():
            assert not gc.isenabled()
            assert sys.gettrace() is None
        assert gc.isenabled() and sys.gettrace() is tracer
    finally:
        sys.settrace(before)


class _StandInEvent:
    """A stand-in for torch.cuda.Event / torch.xpu.Event: records the fake clock."""

    def __init__(self, clock: FakeClock, enable_timing: bool = False) -> None:
        assert enable_timing
        self.clock = clock
        self.at: float | None = None

    def record(self) -> None:
        self.at = self.clock.now

    def synchronize(self) -> None:
        return None

    def elapsed_time(self, end: _StandInEvent) -> float:
        assert self.at is not None and end.at is not None
        return (end.at - self.at) * 1e3  # milliseconds, as torch's events


def test_event_timer_on_a_stand_in_device_module_returns_event_time_per_call(
    clock: FakeClock,
) -> None:
    module = SimpleNamespace(Event=lambda enable_timing: _StandInEvent(clock, enable_timing))
    timer = EventTimer(torch.device("cpu"), module=module, flush_bytes=1024)

    def call() -> None:
        clock.now += 1e-3

    assert timer(call, 5) == pytest.approx(1e-3)
    # The stand-in's fills take no time (1 us is the floor): to outlast the 5 ms the host
    # spent queueing, the next sample is preceded by 1.5 * 5 ms / 1 us + 1 fills.
    assert timer.fills == 7501 and timer.host_bound_samples == 0
    capped = EventTimer(torch.device("cpu"), module=module, flush_bytes=1024, max_spacer_s=0)
    capped(call, 5)
    assert capped.fills == 1 and capped.host_bound_samples == 1  # reported, not hidden


def test_event_timer_on_a_stand_in_device_module_reuses_a_given_flush_buffer(
    clock: FakeClock,
) -> None:
    module = SimpleNamespace(Event=lambda enable_timing: _StandInEvent(clock, enable_timing))
    flush = torch.ones(256, dtype=torch.int32)
    timer = EventTimer(torch.device("cpu"), module=module, flush=flush)
    timer(lambda: None, 1)
    assert timer._flush is flush and int(flush.sum()) == 0  # zeroed in place, not replaced


def test_instruments_build_a_device_reference_once_and_release_it() -> None:
    instruments = Instruments()
    cpu = torch.device("cpu")
    first = instruments.reference(cpu)
    assert instruments.reference(cpu) is first
    assert isinstance(instruments.timer(cpu), HostTimer)
    assert instruments.timer(cpu) is not instruments.timer(cpu)  # timers adapt per case
    instruments.release()
    assert instruments.reference(cpu) is not first


def test_reference_workload_is_fixed_and_deterministic() -> None:
    first, second = reference_workload(torch.device("cpu")), reference_workload(torch.device("cpu"))
    assert torch.equal(first(), second())
    assert first().shape == (64, 256)


@pytest.mark.parametrize(
    "kwargs",
    [
        {"warmup_s": -1},
        {"max_time_s": float("nan")},
        {"min_rounds": 0},
        {"min_rounds": 5, "max_rounds": 2},
        {"precision_pct": -1},
        {"cpu_threads": 0},
    ],
)
def test_bad_settings_are_refused(kwargs: dict[str, float]) -> None:
    with pytest.raises(ValueError):
        MeasureSettings(**kwargs)  # type: ignore[arg-type]


def test_fast_settings_are_shorter_and_overridable() -> None:
    fast = MeasureSettings.fast()
    default = MeasureSettings()
    assert fast.max_time_s < default.max_time_s and fast.warmup_s < default.warmup_s
    assert not fast.eager
    assert MeasureSettings.fast(max_time_s=5.0).max_time_s == 5.0


def test_host_weight_is_0_when_device_bound_1_when_host_bound_and_a_line_between() -> None:
    assert host_weight(1.0e-3, 1.0e-3) == 0.0  # latency is device time: device-bound
    assert host_weight(1.09e-3, 1.0e-3) == 0.0
    assert host_weight(1.3e-3, 1.0e-3) == pytest.approx(0.5)
    assert host_weight(0.8e-3, 0.27e-3) == 1.0  # the launch-bound model: 3x
    assert host_weight(1.0e-3, None) == 0.0  # cpu: no device time


def test_normalized_series_mixes_the_references_by_weight() -> None:
    samples = {
        "case": [8.0, 9.0],
        "reference": [2.0, 2.0],
        "host_reference": [4.0, 3.0],
    }
    assert normalized_series(samples, "case", "reference", 0.0) == [4.0, 4.5]
    assert normalized_series(samples, "case", "reference", 1.0) == [2.0, 3.0]
    half = normalized_series(samples, "case", "reference", 0.5)
    assert half == pytest.approx([8.0 / (2.0 * 4.0) ** 0.5, 9.0 / (2.0 * 3.0) ** 0.5])
    # without a host reference (cpu), the weight does not matter
    assert normalized_series({"case": [8.0], "reference": [2.0]}, "case", "reference", 1) == [4]


class _SlowHost:
    """A launch-bound model on a stand-in accelerator: the host needs ``host_s`` to queue a
    call, the device ``device_s`` to run it; host speed is ``self.speed`` (1: nominal)."""

    def __init__(self, clock: FakeClock, host_s: float, device_s: float) -> None:
        self.clock, self.host_s, self.device_s = clock, host_s, device_s
        self.speed = 1.0

    def latency_call(self) -> None:  # what the host timer sees: the longer of the two
        self.clock.now += max(self.host_s * self.speed, self.device_s)


def test_measure_on_a_stand_in_xpu_times_latency_device_time_and_host_reference(
    clock: FakeClock,
) -> None:
    """The accelerator path without the hardware (an honest stand-in for torch.xpu's events):
    latency by the host timer, device time by the event timer, and a host-bound case
    normalized by the host-bound reference, so a host that runs 30 % slower in this process
    leaves the normalized figure where it was."""
    module = SimpleNamespace(Event=lambda enable_timing: _StandInEvent(clock, enable_timing))
    results = []
    for speed in (1.0, 1.3):
        model = _SlowHost(clock, host_s=8e-4, device_s=2.7e-4)
        model.speed = speed
        device_timer = EventTimer(torch.device("cpu"), module=module, flush_bytes=1024)

        def device_workload(m: _SlowHost = model) -> None:  # the events see the kernels only
            clock.now += m.device_s

        def host_reference(s: float = speed) -> None:
            clock.now += 2e-4 * s

        def reference() -> None:
            clock.now += 1e-3

        workloads = {
            "case": model.latency_call,
            "device": device_workload,
            "reference": reference,
            "host_reference": host_reference,
        }
        settings = MeasureSettings(min_rounds=10, max_time_s=100, min_round_s=1e-3)
        result = measure.measure(
            workloads,
            HostTimer(lambda: None),
            settings,
            primary=("case", "reference"),
            timers={"device": device_timer},
        )
        device = result.summary("device")
        assert device is not None and device.median == pytest.approx(2.7e-4)
        timing = result.summary("case")
        assert timing is not None and timing.median == pytest.approx(8e-4 * speed)
        assert result.host_weight() == 1.0
        normalized = result.normalized()
        assert normalized is not None
        results.append(normalized.median)
    assert results[0] == pytest.approx(4.0) and results[1] == pytest.approx(4.0)


def test_host_reference_workload_is_none_on_cpu_and_runs_tiny_kernels() -> None:
    cpu = torch.device("cpu")
    instruments = Instruments()
    assert instruments.host_reference(cpu) is None and instruments.device_timer(cpu) is None
    burst = host_reference_workload(cpu, launches=4)
    assert torch.equal(burst(), torch.ones(256))  # 1 * 0.5 + 0.5, pair after pair


def test_the_thread_clock_counts_the_threads_cpu_time_not_the_time_it_waited() -> None:
    """Real clocks: a call that sleeps takes wall time but almost no CPU time; the timer
    returns the CPU time and says the thread was off its core most of the sample."""
    timer = HostTimer(lambda: None, thread_clock=True)
    per_call = timer(lambda: time.sleep(0.02), 2)
    assert per_call < 0.01  # CPU time: far below the 20 ms each call waited
    share = timer.load_share()
    assert share is not None and share > 0.5
    assert HostTimer(lambda: None).load_share() is None  # the wall clock knows no load


def test_a_cpu_case_on_one_thread_is_timed_by_the_thread_clock() -> None:
    cpu = torch.device("cpu")
    assert measure.make_timer(cpu, threads=1).thread_clock
    assert not measure.make_timer(cpu, threads=2).thread_clock  # other threads' work counts
    assert not measure.make_timer(cpu).thread_clock


def test_a_step_midway_is_named_and_noise_is_not() -> None:
    steady = [1e-3 * (1 + 0.05 * ((i * 7) % 5 - 2)) for i in range(30)]
    assert measure.step_in(steady) is None
    stepped = [1e-3] * 15 + [3e-3] * 15  # a fallback to eager halfway
    text = measure.step_in(stepped)
    assert text is not None and "stepped from 1 ms to 3 ms" in text
    wild = [1e-3 if i % 2 else 3e-3 for i in range(30)]  # bimodal throughout: noise, no step
    assert measure.step_in(wild) is None
    assert measure.step_in([1e-3, 3e-3] * 4) is None  # too few samples to tell


def test_a_step_the_reference_took_too_is_the_machine_not_a_broken_measurement() -> None:
    # a 2-core VM whose host slowed by half midway (seen on CI machines): case and reference
    # both stepped, their ratio did not, and the normalized figure is sound
    slow_down = [1.0] * 15 + [1.5] * 15
    case = tuple(1e-3 * f * (1 + 0.01 * (i % 3)) for i, f in enumerate(slow_down))
    reference = tuple(2e-3 * f for f in slow_down)
    machine = measure.Measurement(
        samples={"case": case, "reference": reference},
        iterations={"case": 1, "reference": 1},
        warmup=measure.WarmUp(samples=3, seconds=0.1, stable=True),
        prepare_s=0.1,
        seconds=1.0,
        stopped="time budget",
    )
    assert measure.step_in(case) is not None  # on its own, the case's time did step
    assert machine.step("case") is None
    # dynamo falling back to eager halfway: the case steps and the reference does not
    fallback = replace(machine, samples={"case": case, "reference": (2e-3,) * 30})
    text = fallback.step("case")
    assert text is not None
    assert "stepped from 1.01 ms to 1.515 ms" in text
    assert "and its time over the reference's with it" in text
    # its faster part, on the series the step was judged on (over the reference): about the
    # first half's ratio over the whole run's median
    floor = fallback.step_floor("case")
    assert floor is not None
    first = statistics.median(c / 2e-3 for c in case[:10])
    whole = statistics.median(c / 2e-3 for c in case)
    assert floor == pytest.approx(first / whole)
    assert 0.6 < floor < 0.9
    assert machine.step_floor("case") is None  # no step: no floor
