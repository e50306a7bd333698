"""Timing: sample timers per device, calibration, warm-up until stable, interleaved sampling.

A *sample* is the time of ``iterations`` back-to-back calls divided by ``iterations``.

- *Latency* (`HostTimer`, every device): ``time.perf_counter_ns`` around the calls, with the
  device synchronized before the first call and after the last (a no-op on cpu). This is the
  steady-state time per call that a user of the model sees, host work (Python, guards, kernel
  launches) included, as ``torch.utils.benchmark.Timer`` and PyTorch's dynamo benchmark
  harness measure it. The L2 cache is not flushed between the calls: back-to-back calls are
  what is timed, and what one call leaves in the cache the next one finds, as in use.
- *Device time* (`EventTimer`, cuda and xpu, one code path through
  ``torch.get_device_module``): two timing events around the calls. Before the start event
  the timer queues a few zero-fills of a 256 MB buffer, as ``triton.testing.do_bench`` does
  to flush the L2 cache; they also keep the device busy while the host queues the calls, so
  the device runs them back to back and the figure is the kernels' time alone, launch
  overhead left out. The number of fills adapts until they outlast the host's queueing.

Latency minus device time is the *host overhead*: the share of each call the device spends
waiting for the host, which CUDA graphs (``mode="reduce-overhead"``) remove.

`measure` calibrates ``iterations`` per workload so a sample lasts at least ``min_round_s``
(far above the timer's resolution), warms the case up until two consecutive windows of samples
agree (within ``warmup_s``), then takes samples of the case and of its companion workloads
(the case's device time, fixed *reference* workloads, and the model in eager) in turn, so
slow drifts of the machine hit all of them alike. It stops once the median of the primary
figure is known to ``precision_pct`` or when ``max_time_s`` is spent. The garbage collector
and any trace function (coverage, debuggers) are off while samples are taken, as pyperf and
pytest-benchmark do.
"""

from __future__ import annotations

import contextlib
import gc
import math
import statistics
import sys
import time
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any, Protocol

from .stats import Summary

if TYPE_CHECKING:
    import torch

__all__ = [
    "ACCELERATOR_MIN_ROUND_S",
    "HOST_REFERENCE",
    "REFERENCE",
    "CaseChecks",
    "EventTimer",
    "HostTimer",
    "Instruments",
    "MeasureSettings",
    "Measurement",
    "SampleTimer",
    "WarmUp",
    "calibrate",
    "gc_paused",
    "host_reference_workload",
    "host_weight",
    "make_device_timer",
    "make_timer",
    "measure",
    "normalized_series",
    "reference_workload",
    "step_in",
    "warm_up",
]

#: Bytes zeroed before each device sample: larger than any current GPU's L2 (as do_bench).
FLUSH_BYTES = 256 * 1024 * 1024
#: Samples per window when checking that warm-up has settled.
_WINDOW = 5
#: The shortest latency sample on cuda and xpu. Each sample starts with the host launching
#: the first kernels onto an idle device and ends waiting for the device: a fixed cost of
#: 0.1-0.2 ms on the H200, which inflated a 3.3 ms model's latency by 3-5 % (and let the
#: host's speed into a device-bound figure) when a sample held one call. Over 20 ms of
#: back-to-back calls it is under 1 %, and the figure is the steady state. Device-time
#: samples stay short: their spacer fills must outlast the host's queueing of the sample.
ACCELERATOR_MIN_ROUND_S = 0.02
#: The workloads a measurement normalizes by: a device-bound one (eager matrix products) and,
#: on cuda and xpu, a host-bound one (a burst of tiny kernel launches).
REFERENCE = "reference"
HOST_REFERENCE = "host_reference"


#: The fewest samples after which a precise median may stop the sampling (one sample's spread
#: is zero, which would read as perfectly precise).
_MIN_PRECISE_ROUNDS = 3


@dataclass(frozen=True)
class MeasureSettings:
    """How long to warm up and how much to measure, per case.

    Args:
        warmup_s: Warm up for at most this long (after the compiling call); warm-up ends
            earlier, as soon as the timings are stable.
        stable_pct: Warm-up is over when the medians of two consecutive windows of samples
            differ by at most this many percent.
        max_time_s: Spend at most about this long taking samples (all workloads together).
        min_rounds: Take at least this many samples of each workload.
        max_rounds: ... and at most this many.
        min_round_s: Each sample lasts at least this long (more calls per sample if needed).
        precision_pct: Stop early once the 95 % confidence interval of the primary median
            (normalized by the reference, or absolute) is within this many percent.
        cpu_threads: torch's intra-op threads for a cpu case, compile included (inductor
            builds its thread count into the kernels); ``None`` keeps torch's setting. One
            thread, as ``torch.utils.benchmark.Timer`` defaults to, keeps the numbers stable
            on small shared machines.
        reference: Also time the fixed reference workload, interleaved with the case, to
            normalize for the speed of the machine.
        eager: Also time the model without compiling, interleaved, for the speed-up.
    """

    warmup_s: float = 1.0
    stable_pct: float = 2.0
    max_time_s: float = 2.0
    min_rounds: int = 10
    max_rounds: int = 1000
    min_round_s: float = 0.002
    precision_pct: float = 1.0
    cpu_threads: int | None = 1
    reference: bool = True
    eager: bool = True

    def __post_init__(self) -> None:
        for name in ("warmup_s", "max_time_s", "min_round_s", "stable_pct", "precision_pct"):
            value = getattr(self, name)
            if (
                not isinstance(value, (int, float))
                or isinstance(value, bool)
                or value < 0
                or math.isnan(value)
            ):
                raise ValueError(f"{name} must be a number >= 0, got {value!r}")
        for name in ("min_rounds", "max_rounds"):
            value = getattr(self, name)
            if not isinstance(value, int) or isinstance(value, bool) or value < 1:
                raise ValueError(f"{name} must be an integer >= 1, got {value!r}")
        if self.cpu_threads is not None and (
            not isinstance(self.cpu_threads, int)
            or isinstance(self.cpu_threads, bool)
            or self.cpu_threads < 1
        ):
            raise ValueError(
                f"cpu_threads must be an integer >= 1 or None, got {self.cpu_threads!r}"
            )
        if self.max_rounds < self.min_rounds:
            raise ValueError(
                f"max_rounds ({self.max_rounds}) must be >= min_rounds ({self.min_rounds})"
            )
        for name in ("reference", "eager"):  # "no" is truthy: it would time the companion
            if not isinstance(getattr(self, name), bool):
                raise ValueError(f"{name} must be True or False, got {getattr(self, name)!r}")

    @classmethod
    def fast(cls, **overrides: Any) -> MeasureSettings:
        """Settings for a quick local look (``--tweak-fast``): short, no eager companion."""
        base = cls(warmup_s=0.2, max_time_s=0.3, min_rounds=5, precision_pct=3.0, eager=False)
        return replace(base, **overrides)


@dataclass(frozen=True)
class CaseChecks:
    """What a case checks besides speed.

    Attributes:
        accuracy: Compare the compiled output with the eager model's on the same inputs.
        rtol, atol: Tolerances for that comparison; ``None``: by dtype (see `accuracy`).
        memory: Read the peak memory of one compiled (and one eager) call after timing.
        cold: Compile against empty caches, so the compile time is a first compile's.
    """

    accuracy: bool = True
    rtol: float | None = None
    atol: float | None = None
    memory: bool = True
    cold: bool = False


class SampleTimer(Protocol):
    """Times ``iterations`` back-to-back calls; returns seconds per call."""

    def __call__(self, call: Callable[[], Any], iterations: int) -> float: ...


class HostTimer:
    """Latency: ``perf_counter_ns`` around the calls, with ``sync`` before the first and after
    the last (``sync`` is a no-op on cpu; on cuda and xpu it waits for the device), so the
    sample holds the calls' host work and their device work, and nothing queued before.

    With ``thread_clock`` (a cpu case on one thread, where every instruction of the call runs
    on the calling thread) the sample is that thread's CPU time (``time.thread_time_ns``)
    instead: the latency the call has with a core to itself. The wall clock is read beside it;
    on a busy machine the difference is the time other processes took the core while the case
    waited (`load_share`), which would otherwise be most of the noise: on this project's
    2-core runner with other work beside it, the spread (interquartile range) of the case's
    samples fell from 47-59 % of the median (wall) to 8-12 % (thread CPU time).

    With ``prime``, one untimed call runs before each sample, so every timed call starts as
    back-to-back calls do, with the workload's weights and code in the caches, whatever ran
    before it. Without it a sample's first call pays for reloading what the interleaved
    workloads evicted, a cost shared by however many calls calibration put in a sample: a
    2 ms cpu model got 1 call a sample in some windows and 2 in others, and its normalized
    time moved 4 % with that choice (``benchmarks/window_sources.py``).
    """

    def __init__(
        self,
        sync: Callable[[], None],
        min_round_s: float = 0.0,
        thread_clock: bool = False,
        prime: bool = False,
    ) -> None:
        self._sync = sync
        self.prime = prime
        #: the shortest sample this timer wants (see `ACCELERATOR_MIN_ROUND_S`)
        self.min_round_s = min_round_s
        self.thread_clock = thread_clock
        #: wall and thread CPU nanoseconds over every sample taken (thread clock only)
        self.wall_ns = 0
        self.cpu_ns = 0

    def __call__(self, call: Callable[[], Any], iterations: int) -> float:
        timer = time.perf_counter_ns
        if self.prime:
            call()
        if self.thread_clock:
            cpu_timer = time.thread_time_ns
            wall_start, cpu_start = timer(), cpu_timer()
            for _ in range(iterations):
                call()
            cpu, wall = cpu_timer() - cpu_start, timer() - wall_start
            self.wall_ns += wall
            self.cpu_ns += cpu
            return cpu / 1e9 / iterations
        self._sync()
        start = timer()
        for _ in range(iterations):
            call()
        self._sync()
        return (timer() - start) / 1e9 / iterations

    def load_share(self) -> float | None:
        """The share of the wall time of the samples so far that the thread did not run (other
        processes had its core), 0 to 1; ``None`` without the thread clock or samples."""
        if not self.thread_clock or self.wall_ns <= 0:
            return None
        return min(max(1.0 - self.cpu_ns / self.wall_ns, 0.0), 1.0)


class EventTimer:
    """Device time between two timing events of ``torch.get_device_module(device)``, with the
    device kept busy while the host queues the calls (see the module's docstring).

    ``module`` defaults to the real device module; tests without the hardware pass a stand-in.
    """

    def __init__(
        self,
        device: torch.device,
        module: Any = None,
        flush_bytes: int = FLUSH_BYTES,
        max_spacer_s: float = 0.05,
        flush: torch.Tensor | None = None,
    ) -> None:
        import torch

        self._module = module if module is not None else torch.get_device_module(device.type)
        self._device = device
        self._start = self._module.Event(enable_timing=True)
        self._end = self._module.Event(enable_timing=True)
        # ``flush``: a buffer made earlier for this device (see `Instruments`), reused
        self._flush = (
            flush
            if flush is not None
            else torch.empty(flush_bytes // 4, dtype=torch.int32, device=device)
        )
        self._fill_s = self._time_fill()
        self._max_fills = max(1, int(max_spacer_s / self._fill_s))
        self.fills = 1
        self.host_bound_samples = 0

    def _time_fill(self) -> float:
        self._flush.zero_()
        self._start.record()
        for _ in range(5):
            self._flush.zero_()
        self._end.record()
        self._end.synchronize()
        return max(float(self._start.elapsed_time(self._end)) / 1e3 / 5, 1e-6)

    def __call__(self, call: Callable[[], Any], iterations: int) -> float:
        for _ in range(self.fills):
            self._flush.zero_()
        host_start = time.perf_counter_ns()
        self._start.record()
        for _ in range(iterations):
            call()
        self._end.record()
        host_s = (time.perf_counter_ns() - host_start) / 1e9
        self._end.synchronize()
        device_s = float(self._start.elapsed_time(self._end)) / 1e3
        # The fills must outlast the host's queueing, or the device waits for launches.
        if host_s > 0.8 * self.fills * self._fill_s:
            if self.fills >= self._max_fills:
                self.host_bound_samples += 1
            self.fills = min(self._max_fills, math.ceil(1.5 * host_s / self._fill_s) + 1)
        return device_s / iterations


@contextlib.contextmanager
def gc_paused() -> Iterator[None]:
    """Collect garbage now; keep the collector and any trace function off inside the block."""
    was_enabled = gc.isenabled()
    tracer = sys.gettrace()
    gc.collect()
    gc.disable()
    sys.settrace(None)
    try:
        yield
    finally:
        sys.settrace(tracer)
        if was_enabled:
            gc.enable()


def calibrate(call: Callable[[], Any], timer: SampleTimer, min_round_s: float) -> int:
    """Calls per sample so that one sample lasts at least ``min_round_s``."""
    iterations = 1
    while True:
        # the best of three probes: the first calls after compiling can be slow
        per_call = max(min(timer(call, iterations) for _ in range(3)), 1e-9)
        if per_call * iterations >= min_round_s or iterations >= 1 << 20:
            return iterations
        # aim a little above the target; grow at most 100x per probe
        wanted = math.ceil(1.2 * min_round_s / per_call)
        iterations = min(max(wanted, iterations + 1), iterations * 100, 1 << 20)


@dataclass(frozen=True)
class WarmUp:
    """How warm-up went: samples taken, seconds spent, and whether the timings settled."""

    samples: int
    seconds: float
    stable: bool


def warm_up(
    call: Callable[[], Any], timer: SampleTimer, iterations: int, settings: MeasureSettings
) -> WarmUp:
    """Take samples until two consecutive windows agree within ``stable_pct``, or time is up."""
    start = time.perf_counter()
    samples: list[float] = []
    while True:
        samples.append(timer(call, iterations))
        elapsed = time.perf_counter() - start
        if len(samples) >= 2 * _WINDOW:
            recent = statistics.median(samples[-_WINDOW:])
            before = statistics.median(samples[-2 * _WINDOW : -_WINDOW])
            if abs(recent / before - 1.0) * 100.0 <= settings.stable_pct:
                return WarmUp(len(samples), elapsed, True)
        if elapsed >= settings.warmup_s:
            return WarmUp(len(samples), elapsed, False)


@dataclass(frozen=True)
class Measurement:
    """Samples of the case and of its companions, taken in turn.

    Attributes:
        samples: Seconds per call for each workload (``case``, and ``reference`` and
            ``eager`` when measured), one value per round; rounds line up across workloads.
        iterations: Calls per sample, per workload.
        warmup: How the case's warm-up went.
        prepare_s: Time spent before sampling: calibration and warm-up of every workload.
        seconds: Time spent taking the samples.
        stopped: Why sampling ended: ``precise``, ``time budget`` or ``max rounds``.
        host_bound: The device ran out of queued work during some device-time samples (the
            host queued the calls slower than the fills could cover).
        load_share: Share of the samples' wall time that other processes took the case's
            core (cpu on one thread; ``None`` elsewhere).
    """

    samples: Mapping[str, tuple[float, ...]]
    iterations: Mapping[str, int]
    warmup: WarmUp
    prepare_s: float
    seconds: float
    stopped: str
    host_bound: bool = False
    load_share: float | None = None

    def summary(self, name: str) -> Summary | None:
        """Seconds per call of workload ``name``; ``None`` when it was not measured."""
        values = self.samples.get(name)
        return Summary.of(values) if values else None

    def ratio(self, numerator: str, denominator: str) -> Summary | None:
        """The round-by-round ratio of two workloads, e.g. ``eager`` / ``case``."""
        top, bottom = self.samples.get(numerator), self.samples.get(denominator)
        if not top or not bottom:
            return None
        return Summary.of(_ratios(top, bottom))

    def host_weight(self) -> float:
        """`host_weight` of the case, from its latency and device-time medians (0 without a
        host reference or a device time)."""
        return _weight_now(self.samples, "case")

    def normalized(self, name: str = "case") -> Summary | None:
        """``name``'s time over the reference workloads', round by round (see
        `normalized_series`, with the case's `host_weight`); ``None`` without a reference."""
        series = self._over_reference(name)
        return None if series is None else Summary.of(series)

    def step(self, name: str = "case") -> str | None:
        """`step_in` of ``name``'s samples, judged on its time over the reference's when a
        reference was measured: a machine whose speed changed midway moves both, and that is
        the machine, not a broken measurement."""
        values = self.samples.get(name)
        return step_in(values, self._over_reference(name)) if values else None

    def step_floor(self, name: str = "case") -> float | None:
        """With a `step`, the faster third's median over the median of the whole series the
        step was judged on (its time over the reference's when measured), at most 1: where
        the run's figure would have been had it run at its faster part throughout. ``None``
        without a step."""
        values = self.samples.get(name)
        if not values or self.step(name) is None:
            return None
        series = self._over_reference(name) or list(values)
        thirds = _thirds_step(series)
        if thirds is None:
            return None
        return min(1.0, min(thirds) / statistics.median(series))

    def _over_reference(self, name: str) -> list[float] | None:
        """The rounds of `normalized`; ``None`` without samples of ``name`` or a reference."""
        if not self.samples.get(name) or not self.samples.get(REFERENCE):
            return None
        return normalized_series(self.samples, name, REFERENCE, _weight_now(self.samples, name))


def measure(
    workloads: Mapping[str, Callable[[], Any]],
    timer: SampleTimer,
    settings: MeasureSettings,
    primary: tuple[str, str | None] = ("case", None),
    on_phase: Callable[[str], None] | None = None,
    timers: Mapping[str, SampleTimer] | None = None,
) -> Measurement:
    """Warm up and take interleaved samples of ``workloads`` (the first one is the case).

    ``timer`` times every workload but those ``timers`` names (the case's device time, say).
    ``primary`` names the figure whose precision decides when to stop: a workload, or its
    normalized time (``("case", "reference")``: over the reference workload, and, when a
    ``host_reference`` is measured too, over the mix of both that `host_weight` picks).
    ``on_phase`` is told ``warming up`` (calibration and warm-up) and ``measuring`` (sampling)
    as each starts.
    """
    names = list(workloads)
    case = names[0]
    timer_of = {n: (timers or {}).get(n, timer) for n in names}
    prepare_start = time.perf_counter()
    with gc_paused():
        if on_phase is not None:
            on_phase("warming up")
        iterations = {
            n: calibrate(
                workloads[n],
                timer_of[n],
                max(settings.min_round_s, getattr(timer_of[n], "min_round_s", 0.0)),
            )
            for n in names
        }
        warm = warm_up(workloads[case], timer_of[case], iterations[case], settings)
        for name in names[1:]:  # companions are eager code or the case itself: two settle them
            for _ in range(2):
                timer_of[name](workloads[name], iterations[name])
        samples: dict[str, list[float]] = {n: [] for n in names}
        if on_phase is not None:
            on_phase("measuring")
        start = time.perf_counter()
        prepare_s = start - prepare_start
        stopped = "max rounds"
        for rounds in range(1, settings.max_rounds + 1):
            for name in names:
                samples[name].append(timer_of[name](workloads[name], iterations[name]))
            if rounds < settings.min_rounds:
                continue
            if time.perf_counter() - start >= settings.max_time_s:
                stopped = "time budget"
                break
            # one or two samples show no spread to judge a median's precision by
            if rounds >= _MIN_PRECISE_ROUNDS and _precise(samples, primary, settings.precision_pct):
                stopped = "precise"
                break
        seconds = time.perf_counter() - start
    return Measurement(
        samples={n: tuple(v) for n, v in samples.items()},
        iterations=iterations,
        warmup=warm,
        prepare_s=prepare_s,
        seconds=seconds,
        stopped=stopped,
        host_bound=any(getattr(t, "host_bound_samples", 0) for t in timer_of.values()),
        load_share=_load_share(timer_of.values()),
    )


def _load_share(timers: Iterable[SampleTimer]) -> float | None:
    shares = {id(t): t.load_share() for t in timers if isinstance(t, HostTimer)}
    known = [share for share in shares.values() if share is not None]
    return max(known) if known else None


#: A case whose first and last thirds of samples differ by more than this factor, each third
#: steady, stepped midway (`step_in`).
STEP_FACTOR = 1.25


def step_in(samples: Sequence[float], judged: Sequence[float] | None = None) -> str | None:
    """Why ``samples`` (in the order taken) are not one steady figure: the first third's
    median and the last third's differ by more than `STEP_FACTOR`, and each third is steady
    on its own (its interquartile range smaller than half the gap), which is a step, not
    noise: dynamo falling back to eager at its recompile limit, a cache that filled or was
    lost midway. With ``judged`` (the same rounds over a reference), the step must show
    there too. ``None`` when there is no such step (or fewer than 9 samples)."""
    step = _thirds_step(samples)
    if step is None or (judged is not None and _thirds_step(judged) is None):
        return None
    a, b = step
    seen = "" if judged is None else ", and its time over the reference's with it"
    return (
        f"its time stepped from {a * 1e3:.4g} ms to {b * 1e3:.4g} ms per call between the "
        f"first and the last third of its {len(samples)} samples{seen}: something changed "
        "midway (often a fallback to eager at dynamo's recompile limit, or a cache filled or "
        "lost; on a busy machine, at times a neighbour), so it is not judged as noise"
    )


def _thirds_step(values: Sequence[float]) -> tuple[float, float] | None:
    """The medians of the first and the last third of ``values`` when they differ by more
    than `STEP_FACTOR` and each third is steady (see `step_in`); else ``None``."""
    n = len(values)
    if n < 9:
        return None
    third = n // 3
    first, last = sorted(values[:third]), sorted(values[-third:])
    a, b = statistics.median(first), statistics.median(last)
    low, high = min(a, b), max(a, b)
    if low <= 0 or high / low <= STEP_FACTOR:
        return None

    def iqr(part: list[float]) -> float:
        return part[(3 * len(part)) // 4] - part[len(part) // 4]

    if max(iqr(first), iqr(last)) >= (high - low) / 2:
        return None
    return a, b


def host_weight(latency_s: float, device_s: float | None) -> float:
    """How much of a case's latency moves with the host's speed, 0 to 1, from its latency and
    its device time (medians, seconds per call).

    Back-to-back calls overlap the host's queueing with the device's work, so a call takes
    about the longer of the two: a device-bound case (latency within 10 % of its device time)
    gets 0, and its normalized time is over the device-bound reference alone; a host-bound one
    (latency 1.5x its device time or more: the device waits for launches) gets 1, over the
    host-bound reference alone; in between, a straight line. Without a device time (cpu) the
    weight is 0.
    """
    if device_s is None or device_s <= 0 or latency_s <= 0:
        return 0.0
    return min(max((latency_s / device_s - 1.1) / 0.4, 0.0), 1.0)


def _precise(
    samples: Mapping[str, Sequence[float]], primary: tuple[str, str | None], precision_pct: float
) -> bool:
    top, bottom = primary
    if bottom is None:
        values: Sequence[float] = samples[top]
    else:
        values = normalized_series(samples, top, bottom, _weight_now(samples, top))
    return Summary.of(values).rel_ci_pct <= precision_pct


def _weight_now(samples: Mapping[str, Sequence[float]], case: str) -> float:
    device = samples.get("device")
    if not device or HOST_REFERENCE not in samples:
        return 0.0
    return host_weight(statistics.median(samples[case]), statistics.median(device))


def normalized_series(
    samples: Mapping[str, Sequence[float]], top: str, bottom: str, weight: float = 0.0
) -> list[float]:
    """Round by round, ``top`` over ``bottom``; with ``weight`` > 0 (and a host reference
    measured), over ``bottom ** (1 - weight) * host_reference ** weight``."""
    hosts = samples.get(HOST_REFERENCE)
    if weight <= 0 or not hosts:
        return _ratios(samples[top], samples[bottom])
    return [
        a / (b ** (1.0 - weight) * h**weight)
        for a, b, h in zip(samples[top], samples[bottom], hosts, strict=True)
    ]


def _ratios(top: Sequence[float], bottom: Sequence[float]) -> list[float]:
    """Round-by-round ratios of two workloads' samples (the rounds line up)."""
    return [a / b for a, b in zip(top, bottom, strict=True)]


def make_timer(device: torch.device, threads: int | None = None) -> HostTimer:
    """The latency timer of ``device``: `HostTimer` with the device's synchronize, each
    sample primed with an untimed call (and, on cuda and xpu, samples of at least
    `ACCELERATOR_MIN_ROUND_S`); on cpu with ``threads`` 1 the thread's CPU time.

    On cuda and xpu the untimed call runs before the synchronize, so its device work stays
    out of the sample, and the first timed call finds the host's caches holding the case's
    code path (guards, the kernel launcher) rather than the workload timed before it. Unprimed,
    that first call carried a start-up cost that differed from process to process: a
    compute-bound model's normalized latency spread 0.30 % (sd) between 17 fresh processes on
    an H100, primed 0.17 %, and read 0.3 % nearer do_bench's median
    (``benchmarks/between_processes.py``, docs/measurement.md)."""
    from .devices import make_synchronizer

    cpu = device.type == "cpu"
    return HostTimer(
        make_synchronizer(device),
        min_round_s=0.0 if cpu else ACCELERATOR_MIN_ROUND_S,
        thread_clock=cpu and threads == 1,
        prime=True,
    )


def make_device_timer(device: torch.device, flush: torch.Tensor | None = None) -> SampleTimer:
    """`EventTimer` (device time) on cuda and xpu, zeroing ``flush`` (a new 256 MB buffer when
    not given) before each sample; on cpu, where every call's time is the host's, the latency
    timer."""
    if device.type == "cpu":
        return make_timer(device)
    return EventTimer(device, flush=flush)


class Instruments:
    """The per-device tools of a run, made once and lent to every case.

    A device's L2 flush buffer (256 MB) and its reference workloads (fixed weights made on the
    cpu, then copied) cost tens to hundreds of milliseconds to build on a GPU; a run of many
    cases builds them once per device here. Each case still gets fresh timers, since an
    `EventTimer` adapts to the case it times. `release` drops everything (end of the run).
    """

    def __init__(self) -> None:
        self._flush: dict[str, torch.Tensor] = {}
        self._reference: dict[str, Callable[[], Any]] = {}
        self._host_reference: dict[str, Callable[[], Any]] = {}

    def timer(self, device: torch.device, threads: int | None = None) -> HostTimer:
        """A new latency timer for one case on ``device`` (see `make_timer`)."""
        return make_timer(device, threads)

    def device_timer(self, device: torch.device) -> SampleTimer | None:
        """A new device-time timer for one case on ``device``; ``None`` on cpu, where device
        time and latency are one figure."""
        import torch

        if device.type == "cpu":
            return None
        key = str(device)
        if key not in self._flush:
            self._flush[key] = torch.empty(FLUSH_BYTES // 4, dtype=torch.int32, device=device)
        return make_device_timer(device, self._flush[key])

    def reference(self, device: torch.device) -> Callable[[], Any]:
        """The reference workload on ``device`` (the same object for every case)."""
        key = str(device)
        if key not in self._reference:
            self._reference[key] = reference_workload(device)
        return self._reference[key]

    def host_reference(self, device: torch.device) -> Callable[[], Any] | None:
        """The host-bound reference workload on ``device``; ``None`` on cpu."""
        if device.type == "cpu":
            return None
        key = str(device)
        if key not in self._host_reference:
            self._host_reference[key] = host_reference_workload(device)
        return self._host_reference[key]

    def release(self) -> None:
        """Drop the buffers and workloads, so their device memory can be freed."""
        self._flush.clear()
        self._reference.clear()
        self._host_reference.clear()


def reference_workload(device: torch.device) -> Callable[[], Any]:
    """The fixed workload timed beside each case to normalize for the machine's speed today.

    Eager matrix products and element-wise ops on fixed, seeded inputs: the same kinds of work
    a model does, through the same math libraries and memory system, but never changed by the
    code under test. Its size is fixed per device type, so its times compare across runs.
    """
    import torch

    rows, width = (64, 256) if device.type == "cpu" else (2048, 2048)
    generator = torch.Generator().manual_seed(0)
    weights = [
        (torch.randn(width, width, generator=generator) / math.sqrt(width)).to(device)
        for _ in range(4)
    ]
    x0 = torch.randn(rows, width, generator=generator).to(device)

    def run() -> Any:
        with torch.no_grad():
            x = x0
            for w in weights:
                x = torch.relu(x @ w) + x
            return x

    return run


def host_reference_workload(device: torch.device, launches: int = 64) -> Callable[[], Any]:
    """The fixed host-bound workload timed beside each accelerator case: a burst of
    ``launches`` tiny eager kernels (element-wise products and sums of 256 numbers, into
    tensors made once). The device finishes each kernel long before the host has launched the
    next, so its latency is the host's speed at launching work (Python, torch's dispatcher,
    the driver), which is what a launch-bound model's latency moves with."""
    import torch

    a = torch.ones(256, device=device)
    b = torch.full((256,), 0.5, device=device)
    c = torch.empty(256, device=device)

    def run() -> Any:
        with torch.no_grad():
            for _ in range(launches // 2):
                torch.mul(a, b, out=c)
                torch.add(c, b, out=c)
            return c

    return run
