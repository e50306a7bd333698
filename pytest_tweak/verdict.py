"""The regression decision: a case's new numbers against its baseline, with the noise counted.

A speed figure (seconds per call, or the ratio to the reference workload) is compared on the
log scale. Its uncertainty adds up the spread of the new run's median, the spread of the
baseline's medians, and the noise *between* runs (processes, machines of one class), which
within-run samples cannot show: it is estimated from the baseline's repeated runs when there
are some, shrunk towards the configured run-to-run noise so that three lucky runs cannot make
the test overconfident, and taken from that setting alone when the baseline has one run.
A baseline whose runs refute that setting (they spread more than noise of its size gives, by
a chi-square test at the verdict's confidence) is judged on its own spread instead, with
Student's t for the few runs it has (`_run_noise`).

With ``c`` the estimated change, ``h`` the half-width of its one-sided ``confidence`` interval
and ``t`` the threshold (all as log ratios):

- regressed: ``c > t`` and ``c - h > 0`` (slower by more than the threshold, and really slower);
- improved: faster by more than the threshold percentage, and ``c + h < 0``;
- inconclusive: otherwise, when ``h > t`` (the noise is too high to tell a change of the
  threshold's size from no change);
- unchanged: otherwise.

More graph breaks or more recompiles than the baseline is a regression whatever the speed; so
is a compile time beyond its own, looser threshold (compared only when the inductor cache was
in the same state, hit or miss, in both runs: a warm and a cold compile differ tenfold), and a
peak memory beyond its threshold.

Independent of any baseline, a case *fails* (status ``failed``) when its counts exceed the
`Limits` set for it or its output differs from eager's.
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Sequence
from dataclasses import dataclass, replace
from enum import Enum

from .baselines import BaselineEntry, RunRecord
from .formatting import format_bytes, format_seconds
from .measure import host_weight
from .stats import Summary, chi2_quantile, normal_quantile, t_quantile

__all__ = [
    "COMPILE_FLOOR_S",
    "DEFAULT_COMPILE_THRESHOLD_PCT",
    "DEFAULT_CONFIDENCE",
    "DEFAULT_MEMORY_THRESHOLD_PCT",
    "PROBLEM_KINDS",
    "Change",
    "Judging",
    "Limits",
    "Status",
    "Verdict",
    "baseline_figure",
    "baseline_too_noisy",
    "case_failures",
    "compare",
    "for_host_weight",
    "inconclusive_advice",
    "judge",
    "precision_needed",
]

#: A compile-time change smaller than this is never a regression, whatever its percentage:
#: one compile is one sample, and on a shared machine a warm compile of a small model moves
#: by a good fraction of a second between runs.
COMPILE_FLOOR_S = 1.0
#: The defaults of `Judging`'s optional fields (the plugin's and the command line's too).
DEFAULT_CONFIDENCE = 0.99
DEFAULT_COMPILE_THRESHOLD_PCT = 50.0
DEFAULT_MEMORY_THRESHOLD_PCT = 10.0


class Status(str, Enum):
    """The outcome of comparing a case with its baseline."""

    NEW = "new"  # no baseline for this case
    UNCHANGED = "unchanged"
    IMPROVED = "improved"
    REGRESSED = "regressed"
    INCONCLUSIVE = "inconclusive"  # too noisy to decide
    NOT_COMPARED = "not compared"  # --tweak-save, or timing disabled
    FAILED = "failed"  # over a limit, or wrong against eager, whatever the speed

    def __str__(self) -> str:
        return self.value


@dataclass(frozen=True)
class Judging:
    """How changes are judged.

    Args:
        threshold_pct: The smallest slow-down that counts, in percent.
        run_noise_pct: Run-to-run noise of a median (one standard deviation, percent) assumed
            when the baseline cannot show it (one run), and the prior it is shrunk towards.
        host_bound_run_noise_pct: The same for a host-bound accelerator case (its latency
            1.5x its device time or more: `pytest_tweak.measure.host_weight` 1), whose
            latency moves with the host's speed, which differs between processes far more
            than a device's; the prior moves from ``run_noise_pct`` to this one with the
            baseline's host weight. ``None``: ``run_noise_pct`` for every case. Not used for
            ``metric="device"``.
        confidence: One-sided confidence that a reported regression is real.
        metric: ``normalized`` (latency over the reference workloads'), ``absolute``
            (latency) or ``device`` (device time on cuda and xpu; where a run or the
            baseline has none, latency is compared, with a note).
        fail_inconclusive: An inconclusive verdict fails the test.
        compile_threshold_pct: The smallest compile-time increase that fails, in percent
            (and at least `COMPILE_FLOOR_S`).
        memory_threshold_pct: The smallest peak-memory increase that fails, in percent.
    """

    threshold_pct: float
    run_noise_pct: float
    host_bound_run_noise_pct: float | None = None
    confidence: float = DEFAULT_CONFIDENCE
    metric: str = "normalized"
    fail_inconclusive: bool = False
    compile_threshold_pct: float = DEFAULT_COMPILE_THRESHOLD_PCT
    memory_threshold_pct: float = DEFAULT_MEMORY_THRESHOLD_PCT

    def __post_init__(self) -> None:
        if not self.threshold_pct > 0:
            raise ValueError(f"threshold_pct must be > 0, got {self.threshold_pct!r}")
        if not self.run_noise_pct >= 0:
            raise ValueError(f"run_noise_pct must be >= 0, got {self.run_noise_pct!r}")
        if self.host_bound_run_noise_pct is not None and not self.host_bound_run_noise_pct >= 0:
            raise ValueError(
                f"host_bound_run_noise_pct must be >= 0 or None, got "
                f"{self.host_bound_run_noise_pct!r}"
            )
        if not 0.5 < self.confidence < 1:
            raise ValueError(f"confidence must be in (0.5, 1), got {self.confidence!r}")
        if self.metric not in ("normalized", "absolute", "device"):
            raise ValueError(
                f"metric must be 'normalized', 'absolute' or 'device', got {self.metric!r}"
            )
        if not (self.compile_threshold_pct > 0 and self.memory_threshold_pct > 0):
            raise ValueError("compile_threshold_pct and memory_threshold_pct must be > 0")


@dataclass(frozen=True)
class Limits:
    """Most graph breaks, recompiles and CUDA-graph skips (graphs inductor ran without CUDA
    graphs in ``reduce-overhead``/``max-autotune`` modes) a case may have, baseline or not;
    ``None``: no limit.

    The ``*_source`` fields say where each limit was set, for the failure message.
    """

    graph_breaks: int | None = None
    recompiles: int | None = None
    graph_breaks_source: str = "default"
    recompiles_source: str = "default"
    cudagraph_skips: int | None = None
    cudagraph_skips_source: str = "default"

    def check(
        self, graph_breaks: int, recompiles: int, cudagraph_skips: Sequence[str] = ()
    ) -> tuple[str, ...]:
        """What exceeds the limits, in words."""
        problems = []
        if self.cudagraph_skips is not None and len(cudagraph_skips) > self.cudagraph_skips:
            problems.append(
                f"CUDA graphs skipped {len(cudagraph_skips)} time(s), over the limit "
                f"{self.cudagraph_skips} (set by {self.cudagraph_skips_source}): "
                + "; ".join(cudagraph_skips)
            )
        if self.graph_breaks is not None and graph_breaks > self.graph_breaks:
            problems.append(
                f"graph breaks {graph_breaks} exceed the limit {self.graph_breaks} "
                f"(set by {self.graph_breaks_source})"
            )
        if self.recompiles is not None and recompiles > self.recompiles:
            problems.append(
                f"recompiles {recompiles} exceed the limit {self.recompiles} "
                f"(set by {self.recompiles_source})"
            )
        return tuple(problems)


def case_failures(
    limits: Limits,
    *,
    graph_breaks: int,
    recompiles: int,
    accuracy_problem: str | None,
    cudagraph_skips: Sequence[str] = (),
) -> tuple[str, ...]:
    """Why a case fails whatever its speed and baseline: over a limit, or wrong."""
    failures = list(limits.check(graph_breaks, recompiles, cudagraph_skips))
    if accuracy_problem is not None:
        failures.append(accuracy_problem)
    return tuple(failures)


#: Weight, in runs, of the configured run-to-run noise against the baseline's own runs.
_PRIOR_RUNS = 2
#: The fewest baseline runs whose own spread may replace the configured noise (`_run_noise`).
_MIN_RUNS_ALONE = 3


@dataclass(frozen=True)
class Change:
    """One figure of a case against its baseline.

    Attributes:
        metric: What was compared: ``time``, ``normalized time`` or ``speed-up``.
        new: The new median.
        base: The baseline's value (geometric mean of its runs' medians).
        pct: Estimated change in percent; positive is worse (slower, or less speed-up).
        low_pct, high_pct: The confidence interval of ``pct``.
        noise_pct: Half-width of that interval, percent: the change the noise can fake.
        runs: Runs in the baseline.
        status: What the change amounts to.
        sampling_pct: This run's own uncertainty (one standard deviation of its median's
            log, percent), which measuring longer shrinks.
        between_pct: The run-to-run noise used (one standard deviation, percent): the
            baseline runs' own spread shrunk towards the configured run noise, or that
            spread alone where it refutes the configured run noise (`_run_noise`).
        spread_pct: The baseline runs' own spread (standard deviation of their medians'
            logs, percent); ``None`` with one run.
        excess_pct: The part of that spread their own sampling does not explain (percent;
            ``None`` with one run): what `_run_noise` weighs against the configured noise.
        df: Degrees of freedom of the interval's Student's t quantile where the baseline's
            runs refuted the configured noise and were used alone; ``None``: the normal's.
    """

    metric: str
    new: float
    base: float
    pct: float
    low_pct: float
    high_pct: float
    noise_pct: float
    runs: int
    status: Status
    sampling_pct: float = 0.0
    between_pct: float = 0.0
    spread_pct: float | None = None
    excess_pct: float | None = None
    df: int | None = None

    def describe(self, threshold_pct: float, confidence: float) -> str:
        if self.metric == "speed-up":
            values = f"{self.new:.3g}x vs baseline {self.base:.3g}x"
        elif self.metric in ("time", "device time"):
            values = f"median {format_seconds(self.new)} vs baseline {format_seconds(self.base)}"
        else:
            values = f"{self.new:.4g} vs baseline {self.base:.4g} (time / reference)"
        # the interval in the same sense as the estimate beside it: "7.5% faster (99%
        # interval 2.8% .. 11.9% faster)", never a faster estimate with a signed-slower one
        pct, low, high = map(self._shown, (self.pct, self.low_pct, self.high_pct))
        if pct >= 0:
            word = "less speed-up" if self.metric == "speed-up" else "slower"
            change = f"+{pct:.1f}% {word}"
            span = f"{low:+.1f}% .. {high:+.1f}%"
        else:
            word = "more speed-up" if self.metric == "speed-up" else "faster"
            change = f"{-pct:.1f}% {word}"
            span = f"{-high:.1f}% .. {-low:.1f}% {word}"
        return (
            f"{self.metric}: {values}: {change} "
            f"({confidence:.0%} interval {span}), "
            f"threshold {threshold_pct:g}%, noise ±{self.noise_pct:.1f}% "
            f"({self.runs} baseline run{'s' if self.runs != 1 else ''})"
        )

    def _shown(self, pct: float) -> float:
        """``pct`` (positive is worse) in the figure's own terms: a time's change, or for the
        speed-up, how much of it was lost (negative: gained), as ``1 - new / base`` reads:
        0.998x against 0.917x is 8.8 % more speed-up, not the 8.1 % its time sense gives."""
        if self.metric != "speed-up":
            return pct
        return pct / (100.0 + pct) * 100.0


@dataclass(frozen=True)
class Verdict:
    """The status of a case, the speed change behind it, and what went wrong."""

    status: Status
    change: Change | None = None
    speedup: Change | None = None
    problems: tuple[str, ...] = ()
    notes: tuple[str, ...] = ()
    fail_inconclusive: bool = False
    failures: tuple[str, ...] = ()

    @property
    def failed(self) -> bool:
        """Whether the verdict fails its test (inconclusive only with fail_inconclusive)."""
        return (
            self.status in (Status.REGRESSED, Status.FAILED)
            or (self.status is Status.INCONCLUSIVE and self.fail_inconclusive)
            or bool(self.failures)
        )

    @property
    def change_pct(self) -> float | None:
        """The median's change against the baseline, in percent; ``None`` without one."""
        return None if self.change is None else self.change.pct

    @property
    def problem_kinds(self) -> list[str]:
        """What its problems other than the time are about, as `judge` names them
        (`PROBLEM_KINDS`, in that order); a hook's own problems are not among them."""
        return [k for k in PROBLEM_KINDS if any(p.startswith(k) for p in self.problems)]


#: The words `judge` starts a problem with, besides the time's (its metric's name).
PROBLEM_KINDS = ("graph breaks", "recompiles", "compile time", "peak memory")


def compare(
    new: Summary,
    base_runs: Sequence[Summary],
    *,
    metric: str,
    judging: Judging,
    higher_is_better: bool = False,
) -> Change:
    """Judge the change of one figure from ``base_runs`` (one summary per run) to ``new``."""
    k = len(base_runs)
    if k == 0:
        raise ValueError("no baseline runs to compare with")
    base_logs = [math.log(run.median) for run in base_runs]
    base_log = sum(base_logs) / k
    estimate = math.log(new.median) - base_log
    if higher_is_better:
        estimate = -estimate
    between, within_base, spread, df = _baseline_noise(base_runs, judging)
    excess = None if spread is None else max(spread - within_base, 0.0)
    variance = (between + new.log_sd**2) + (between + within_base) / k
    half = _quantile(judging.confidence, df) * math.sqrt(variance)
    threshold = math.log1p(judging.threshold_pct / 100.0)
    # faster by more than the threshold, in percent: -T % (never, for T >= 100)
    faster = (
        math.log1p(-judging.threshold_pct / 100.0) if judging.threshold_pct < 100 else -math.inf
    )
    if estimate > threshold and estimate - half > 0:
        status = Status.REGRESSED
    elif estimate < faster and estimate + half < 0:
        status = Status.IMPROVED
    elif half > threshold:
        status = Status.INCONCLUSIVE
    else:
        status = Status.UNCHANGED
    return Change(
        metric=metric,
        new=new.median,
        base=math.exp(base_log),
        pct=math.expm1(estimate) * 100.0,
        low_pct=math.expm1(estimate - half) * 100.0,
        high_pct=math.expm1(estimate + half) * 100.0,
        noise_pct=math.expm1(half) * 100.0,
        runs=k,
        status=status,
        sampling_pct=new.log_sd * 100.0,
        between_pct=math.sqrt(between) * 100.0,
        spread_pct=None if spread is None else math.sqrt(spread) * 100.0,
        excess_pct=None if excess is None else math.sqrt(excess) * 100.0,
        df=df,
    )


def _baseline_noise(
    base_runs: Sequence[Summary], judging: Judging
) -> tuple[float, float, float | None, int | None]:
    """(between, within, spread, df): the run-to-run noise as a log variance (`_run_noise`),
    the mean of the runs' own sampling variances, the runs' raw spread (``None`` with one run)
    and the degrees of freedom of the interval's quantile (``None``: the normal's)."""
    k = len(base_runs)
    base_logs = [math.log(run.median) for run in base_runs]
    base_log = sum(base_logs) / k
    within_base = sum(run.log_sd**2 for run in base_runs) / k
    prior = math.log1p(judging.run_noise_pct / 100.0) ** 2
    if k < 2:
        return prior, within_base, None, None
    spread = sum((x - base_log) ** 2 for x in base_logs) / (k - 1)
    measured = max(spread - within_base, 0.0)
    between, df = _run_noise(prior, measured, k, judging.confidence)
    return between, within_base, spread, df


def _run_noise(
    prior: float, measured: float, runs: int, confidence: float
) -> tuple[float, int | None]:
    """The run-to-run noise (log variance) of a baseline of ``runs`` runs whose medians spread
    ``measured`` beyond their own sampling, and the degrees of freedom of the quantile to use
    with it (``None``: the normal's).

    The runs' spread is shrunk towards the configured noise ``prior``, which weighs as
    `_PRIOR_RUNS` runs, so that a few runs that happen to agree cannot make the interval
    narrow. Unless the runs refute the prior: a chi-square test at the verdict's confidence
    says a spread this large is not what noise of the prior's size gives (a host whose speed
    swings between processes, as a launch-bound model's does on a shared GPU host). The
    prior is then set aside, the runs' own spread is the noise, and the interval is
    Student's t with ``runs - 1`` degrees of freedom, as a few runs' own spread warrants.
    Two runs are never enough for that: one degree of freedom makes t's 99 % quantile 31.8,
    an interval of millions of percent from two runs a machine's swing set apart (seen on a
    quiet 2-core VM); they stay pooled with the prior."""
    if (
        runs >= _MIN_RUNS_ALONE
        and measured > 0
        and (runs - 1) * measured > prior * chi2_quantile(confidence, runs - 1)
    ):
        return measured, runs - 1
    return (_PRIOR_RUNS * prior + (runs - 1) * measured) / (_PRIOR_RUNS + runs - 1), None


def _quantile(confidence: float, df: int | None) -> float:
    """The one-sided quantile of the verdict's interval: normal, or Student's t with ``df``."""
    return normal_quantile(confidence) if df is None else t_quantile(confidence, df)


#: The interval a decisive measurement aims for, as a share of the threshold: room for an
#: estimate near zero to fall inside it, and so be "unchanged".
_DECISIVE_SHARE = 0.8


def precision_needed(base_runs: Sequence[Summary], judging: Judging) -> float | None:
    """The precision (``MeasureSettings.precision_pct``: the 95 % interval of the new run's
    median, percent) at which the new run's own sampling leaves room, beside the baseline's
    noise, for an interval of at most 0.8x the threshold: the run can then be decided either
    way. ``None`` when the baseline's noise alone is wider: no amount of measuring decides."""
    if not base_runs:
        return None
    between, within_base, _, df = _baseline_noise(base_runs, judging)
    k = len(base_runs)
    target = math.log1p(_DECISIVE_SHARE * judging.threshold_pct / 100.0)
    room = (target / _quantile(judging.confidence, df)) ** 2 - between * (1 + 1 / k)
    room -= within_base / k
    if room <= 0:
        return None
    return math.expm1(normal_quantile(0.975) * math.sqrt(room)) * 100.0


def inconclusive_advice(
    change: Change, judging: Judging, load_share: float | None = None
) -> list[str]:
    """Why ``change`` could not be decided, and what would decide it, in numbers: which side
    is noisy (this run's samples, or the run-to-run noise the baseline shows), how many
    baseline runs or how much longer a measurement would bring the noise under the
    threshold, or that nothing would on this machine; and whether other processes took the
    case's core while it was measured."""
    threshold = math.log1p(judging.threshold_pct / 100.0)
    new_var = (change.sampling_pct / 100.0) ** 2
    prior = math.log1p(judging.run_noise_pct / 100.0) ** 2
    # what the baseline's runs show of this machine's run-to-run noise, as `compare` weighed
    # it; with one run, nothing: the projection then assumes further runs agree as well as
    # this run agrees with it
    measured = (change.excess_pct / 100.0) ** 2 if change.excess_pct is not None else 0.0
    k = change.runs

    def half(runs: int, sampling: float) -> float:
        # the noise `compare` would find with ``runs`` baseline runs spread as these are (the
        # baseline's own sampling is small beside the rest: left out)
        between, df = _run_noise(prior, measured, runs, judging.confidence)
        return _quantile(judging.confidence, df) * math.sqrt(between * (1 + 1 / runs) + sampling)

    lines = [
        f"noise ±{change.noise_pct:.1f}% against the {judging.threshold_pct:g}% threshold: this "
        f"run's median is known to ±{change.sampling_pct:.1f}% (one sd), the run-to-run noise "
        f"used is ±{change.between_pct:.1f}% per run"
        + (
            f" (the baseline's {k} runs spread ±{change.spread_pct:.1f}%)"
            if change.spread_pct is not None
            else f" (the configured --tweak-run-noise: the baseline has {k} run)"
        )
    ]
    if change.df is not None:
        lines.append(
            f"the baseline's runs spread far more than the configured --tweak-run-noise "
            f"({judging.run_noise_pct:g}%) allows: it is set aside, and the interval is "
            f"Student's t on the {k} runs alone"
        )
    if load_share is not None and load_share >= 0.1:
        lines.append(
            f"the machine was busy: other processes had this case's core {load_share:.0%} of "
            "the time it was measured (its samples count only its own CPU time, but a busy "
            "neighbour still slows its caches and clock)"
        )
    more = next((n for n in range(k + 1, 21) if half(n, new_var) <= threshold), None)
    both = next((n for n in range(k + 1, 21) if half(n, new_var / 4.0) <= threshold), None)
    if new_var > measured and half(k, new_var / 4.0) <= threshold:
        lines.append(
            "this run's own samples are the noisy side: measuring 4x longer (--tweak-max-time)"
            " would decide it"
        )
    elif more is not None:
        lines.append(
            f"the run-to-run noise is the noisy side: {more - k} more baseline run(s) "
            f"(--tweak-save --tweak-append, {more} in all) would bring the noise to "
            f"±{math.expm1(half(more, new_var)) * 100.0:.1f}%"
        )
    elif both is not None:
        lines.append(
            f"neither alone decides it, both together would: {both - k} more baseline run(s) "
            f"(--tweak-save --tweak-append, {both} in all) and 4x longer measurement "
            f"(--tweak-max-time) would bring the noise to "
            f"±{math.expm1(half(both, new_var / 4.0)) * 100.0:.1f}%"
        )
    elif new_var > measured:
        lines.append(
            f"this run's own samples are the noisy side (±{change.sampling_pct:.1f}% one sd): "
            "neither 4x longer measurement (--tweak-max-time) nor more baseline runs decides "
            "it; its samples scatter widely (a busy machine, or a model whose time is not "
            "steady): measure much longer, or on a quieter machine"
        )
    else:
        # the least noise 20 baseline runs and 4x longer measurement would leave, over the
        # threshold here (else `both` said so); never more than the noise now, which a
        # baseline that spreads less than the configured prior can be under
        floor = min(math.expm1(half(20, new_var / 4.0)) * 100.0, change.noise_pct)
        lines.append(
            f"neither more runs nor longer measurement decides a {judging.threshold_pct:g}% "
            f"change here: even 20 baseline runs and 4x longer measurement leave the noise at "
            f"±{floor:.1f}% at this confidence; raise --tweak-threshold above {floor:.1f}% "
            "or gate on a quieter machine"
        )
    return lines


def _regressed_past_step(change: Change, floor: float | None, judging: Judging) -> str | None:
    """Why a regression stands although its run stepped midway: even had the run gone at its
    faster part throughout (``floor``, its figure over the median), the low end of the
    change's interval is past the threshold. ``None`` when the step could hide it."""
    if change.status is not Status.REGRESSED or floor is None:
        return None
    at_floor = ((1.0 + change.low_pct / 100.0) * floor - 1.0) * 100.0
    if at_floor <= judging.threshold_pct:
        return None
    return (
        f"it regressed all the same: even its faster part is at least {at_floor:+.1f}% "
        f"against the baseline, past the {judging.threshold_pct:g}% threshold"
    )


def judge(
    baseline: BaselineEntry | None,
    new: RunRecord,
    *,
    graph_breaks: int,
    recompiles: int,
    judging: Judging,
    compile_time_s: float | None = None,
    compile_cache: str | None = None,
    peak_memory_bytes: int | None = None,
    failures: tuple[str, ...] = (),
) -> Verdict:
    """Compare a new run, its counts, compile time and memory with ``baseline``; ``failures``
    (limits, accuracy) make the status ``failed`` whatever the comparison says."""
    if baseline is None:
        return Verdict(Status.FAILED if failures else Status.NEW, failures=failures)
    notes: list[str] = []
    figure, label = _gated_figure(judging.metric, new, baseline, notes)
    judging, note = for_host_weight(judging, baseline, figure)
    notes += [note] if note else []
    base_figures = [getattr(run, figure) for run in baseline.runs]
    change = compare(getattr(new, figure), base_figures, metric=label, judging=judging)
    speedup = None
    base_speedups = [run.speedup for run in baseline.runs if run.speedup is not None]
    if new.speedup is not None and len(base_speedups) == len(baseline.runs):
        speedup = compare(
            new.speedup, base_speedups, metric="speed-up", judging=judging, higher_is_better=True
        )
    if new.unstable is not None:
        notes.insert(0, f"unstable measurement: {new.unstable}")
        held = _regressed_past_step(change, new.step_floor, judging)
        if held is None:
            change = replace(change, status=Status.INCONCLUSIVE)
        else:
            notes.insert(1, held)
    elif change.status is Status.INCONCLUSIVE:
        notes += inconclusive_advice(change, judging, new.load_share)
    problems: list[str] = []
    if change.status is Status.REGRESSED:
        problems.append(change.describe(judging.threshold_pct, judging.confidence))
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
    problem, note = _compile_change(baseline, compile_time_s, compile_cache, judging)
    problems += [problem] if problem else []
    notes += [note] if note else []
    memory = _memory_change(baseline, peak_memory_bytes, judging)
    problems += [memory] if memory else []
    status = Status.REGRESSED if problems else change.status
    return Verdict(
        status=Status.FAILED if failures else status,
        change=change,
        speedup=speedup,
        problems=tuple(problems),
        notes=tuple(notes),
        fail_inconclusive=judging.fail_inconclusive,
        failures=failures,
    )


def for_host_weight(
    judging: Judging, baseline: BaselineEntry, figure: str
) -> tuple[Judging, str | None]:
    """``judging`` with the run-noise prior moved towards ``host_bound_run_noise_pct`` by the
    baseline's host weight (the median over its runs with a device time), and a note saying
    so; ``judging`` itself for the ``device`` figure (a `RunRecord` field), for cpu cases and
    where no run has device time. `judge` and the decisive budget both judge with it."""
    host_prior = judging.host_bound_run_noise_pct
    if host_prior is None or figure == "device" or host_prior <= judging.run_noise_pct:
        return judging, None
    weights = [
        host_weight(run.timing.median, run.device.median)
        for run in baseline.runs
        if run.device is not None
    ]
    weight = statistics.median(weights) if weights else 0.0
    if weight <= 0:
        return judging, None
    prior = judging.run_noise_pct + (host_prior - judging.run_noise_pct) * weight
    note = (
        f"host-bound case (host weight {weight:.2f}: its latency moves with the host's speed, "
        f"which differs between processes): run-to-run noise prior {prior:.2g}% instead of "
        f"{judging.run_noise_pct:g}% (--tweak-run-noise sets one for every case)"
    )
    return replace(judging, run_noise_pct=prior), note


#: ``--tweak-metric`` -> the `RunRecord` field it judges, its label, and what stands in for it
#: (with the note's words) where a run or the baseline lacks it.
_METRICS = {
    "device": ("device", "device time", "compared latency: no device time in "),
    "normalized": (
        "normalized",
        "normalized time",
        "compared absolute time: the reference workload is missing from ",
    ),
}


def baseline_figure(metric: str, baseline: BaselineEntry) -> str:
    """The field of `RunRecord` that `judge` compares for ``metric``, as far as ``baseline``
    decides it: ``device`` or ``normalized`` where every baseline run has it, else the
    latency (``timing``). `judge` also falls back to the latency when the new run lacks it."""
    field = _METRICS[metric][0] if metric in _METRICS else "timing"
    return field if all(getattr(run, field) is not None for run in baseline.runs) else "timing"


def _gated_figure(
    metric: str, new: RunRecord, baseline: BaselineEntry, notes: list[str]
) -> tuple[str, str]:
    """The field of `RunRecord` that ``metric`` judges and its label; the latency
    (``timing``) where this run or a baseline run lacks it, said in ``notes``."""
    if metric not in _METRICS:
        return "timing", "time"
    field, label, fallback = _METRICS[metric]
    if getattr(new, field) is None or baseline_figure(metric, baseline) != field:
        notes.append(fallback + ("this run" if getattr(new, field) is None else "the baseline"))
        return "timing", "time"
    return field, label


def _compile_change(
    baseline: BaselineEntry, new_s: float | None, cache: str | None, judging: Judging
) -> tuple[str | None, str | None]:
    """(problem, note) of the compile time against the baseline's."""
    base_s = baseline.compile_time_s
    if new_s is None or base_s is None or baseline.compile_cache is None or base_s <= 0:
        return None, None
    if cache != baseline.compile_cache:
        return None, (
            f"compile time not compared: the inductor cache was {cache or 'unknown'} in this "
            f"run and {baseline.compile_cache} in the baseline's"
        )
    pct = (new_s / base_s - 1.0) * 100.0
    if pct > judging.compile_threshold_pct and new_s - base_s > COMPILE_FLOOR_S:
        return (
            f"compile time {new_s:.3g} s vs baseline {base_s:.3g} s: +{pct:.0f}% "
            f"(cache {cache}), threshold {judging.compile_threshold_pct:g}% and "
            f"{COMPILE_FLOOR_S:g} s"
        ), None
    return None, None


def _memory_change(baseline: BaselineEntry, new: int | None, judging: Judging) -> str | None:
    base = baseline.peak_memory_bytes
    if new is None or base is None:
        return None
    if new > base * (1.0 + judging.memory_threshold_pct / 100.0):
        change = f"+{(new / base - 1.0) * 100.0:.0f}%" if base > 0 else "from nothing"
        return (
            f"peak memory {format_bytes(new)} vs baseline {format_bytes(base)}: {change}, "
            f"threshold {judging.memory_threshold_pct:g}%"
        )
    return None


def baseline_too_noisy(entry: BaselineEntry, judging: Judging) -> str | None:
    """Why ``entry`` is too noisy to gate at ``judging``'s threshold, or ``None``: its last run
    judged against all its runs gets an interval wider than the threshold, so an unchanged
    run like it could only read *inconclusive*. Says the interval, the runs' spread, the
    run's own sampling, and whether more runs or longer measurement would narrow it."""
    change = judge(entry, entry.runs[-1], graph_breaks=0, recompiles=0, judging=judging).change
    if change is None or change.noise_pct <= judging.threshold_pct:
        return None
    spread = (
        f"its {change.runs} runs spread {change.spread_pct:.1f}%"
        if change.spread_pct is not None
        else "one run"
    )
    remedy = (
        "measure longer (--tweak-max-time)"
        if change.sampling_pct > change.between_pct
        else "append runs recorded on a quiet machine (--tweak-save --tweak-append)"
    )
    return (
        f"±{change.noise_pct:.1f}% against {judging.threshold_pct:g}%; {spread}, "
        f"sampling ±{change.sampling_pct:.1f}% a run: {remedy}"
    )
