"""The object behind the ``tweak`` fixture: one (device, backend, config) case of one test."""

from __future__ import annotations

import contextlib
import dataclasses
import time
import traceback
from collections.abc import Callable, Sequence
from typing import Any

import pytest
import torch

from .backends import Backend, TorchInductorBackend, refuse_compiled
from .baselines import BaselineEntry, BaselineError, broken_entry_message
from .case import BenchmarkResult, CaseError, run_case
from .devices import lock_name, release_memory, to_device
from .fingerprint import apply_policy, differences
from .hookspec import implementers
from .locks import device_lock
from .logs import capture_torch_logs
from .measure import MeasureSettings
from .options import benchmarks_disabled
from .results import CaseRecord
from .runstate import LockUse, RunState
from .stats import Summary
from .terminal import failure_message
from .verdict import (
    Change,
    Judging,
    Limits,
    Status,
    Verdict,
    baseline_figure,
    for_host_weight,
    precision_needed,
)

__all__ = ["TweakFixture"]


class _ReplayClock:
    """A timer for pytest-benchmark that replays samples pytest-tweak already took.

    pytest-benchmark reads its timer before and after each round; this clock advances by one
    recorded round duration between the two reads, so pytest-benchmark's statistics, table,
    ``--benchmark-json`` and ``--benchmark-save`` hold pytest-tweak's (device-accurate)
    samples.
    """

    __name__ = "pytest_tweak.replay"

    def __init__(self, round_durations: Sequence[float]) -> None:
        self._durations = list(round_durations)
        self._reads = 0
        self._now = 0.0

    def __call__(self) -> float:
        if self._reads % 2:  # the end of a round
            self._now += self._durations[self._reads // 2]
        self._reads += 1
        return self._now


class _PedanticRunner:
    """Report a case's samples through pytest-benchmark, so its table and files show them."""

    def __init__(self, benchmark: Any, *, measure: bool | None = None) -> None:
        self._benchmark = benchmark
        # pytest-benchmark turns itself off under xdist; pytest-tweak measures anyway (the
        # device lock keeps workers apart) unless benchmarks were turned off on purpose
        self._measure = not benchmark.disabled if measure is None else measure

    @property
    def disabled(self) -> bool:
        return not self._measure

    def run_once(self, call: Callable[[], Any]) -> Any:
        return self._benchmark.pedantic(call, rounds=1, iterations=1)

    def failed(self, error: BaseException) -> None:
        """The case failed before its samples were recorded: hand the failure to
        pytest-benchmark as the benchmark's error (else it also warns, at teardown, that its
        fixture "was not used at all": a second error under ``-W error``)."""
        if getattr(self._benchmark, "_mode", None):  # used already (calibration, a sample)
            return

        def fail() -> None:
            raise _CaseFailed(str(error))

        with contextlib.suppress(_CaseFailed):
            self._benchmark.pedantic(fail, rounds=1, iterations=1)

    def record(self, samples: Sequence[float], iterations: int) -> None:
        benchmark = self._benchmark
        if benchmark.disabled:  # off under xdist: its table and files are not made
            # one no-op call marks the fixture used (else it warns "not used at all")
            benchmark.pedantic(_noop, rounds=1, iterations=1)
            return
        if not hasattr(benchmark, "_timer"):
            raise RuntimeError(
                "pytest-tweak cannot hand its samples to this pytest-benchmark version "
                "(no BenchmarkFixture._timer); install pytest-benchmark>=4"
            )
        # pedantic binds the timer when it starts: swap ours in for this one call
        benchmark._timer = _ReplayClock([s * iterations for s in samples])
        benchmark.pedantic(_noop, rounds=len(samples), iterations=iterations, warmup_rounds=0)


def _noop() -> None:
    return None


class _CaseFailed(Exception):
    """A failed case, as pytest-benchmark sees it."""


def _decisive(
    settings: MeasureSettings, entry: BaselineEntry | None, judging: Judging
) -> MeasureSettings:
    """The case's measurement against its baseline: when the baseline's noise leaves room for
    a decision, sampling goes on until the new median is known well enough to decide it
    (`precision_needed`), with up to the time budget again as extra (at most 2x in all).

    The stopping rule looks at the interval's width only, never at the estimate (a
    fixed-width sequential rule in the manner of Chow and Robbins): it does not stop when
    the change happens to look small or large, so the verdict's false-alarm rate stays what
    its confidence says. Without a baseline, or when no amount of sampling could decide it,
    the settings stay as they are. So they do when the verdict judges device time
    (``--tweak-metric=device``): sampling stops on the latency's precision, and device time,
    sampled beside it, is far less noisy than the latency whose precision would be bought."""
    if entry is None or not entry.runs:
        return settings
    figure = baseline_figure(judging.metric, entry)  # what the verdict will judge
    if figure == "device":
        return settings
    runs = [getattr(run, figure) for run in entry.runs]
    # the prior the verdict will judge this case with (a host-bound case's is wider)
    judging, _ = for_host_weight(judging, entry, figure)
    needed = precision_needed(runs, judging)
    if needed is None or needed >= settings.precision_pct:
        return settings
    return dataclasses.replace(settings, precision_pct=needed, max_time_s=2.0 * settings.max_time_s)


class TweakFixture:
    """What a test gets as ``tweak``.

    Attributes:
        device: The ``torch.device`` of this case.
        config: The config of this case: a `TorchInductorBackendConfig`, or the config of
            another registered backend.
        backend: The backend built from ``config`` (a `TorchInductorBackend` for inductor
            configs).
        backend_name: The registered name of the backend (``inductor``, ``aot_eager``, ...).
    """

    def __init__(
        self,
        request: pytest.FixtureRequest,
        session: RunState,
        device: str,
        config: Any,
        backend: Backend | None = None,
        backend_name: str = "inductor",
        limits: Limits | None = None,
        status: Callable[[str | None], None] | None = None,
    ) -> None:
        self._request = request
        self._session = session
        self._limits = limits if limits is not None else session.options.limits
        self.device = torch.device(device)
        self.config = config
        self.backend: Backend = backend if backend is not None else TorchInductorBackend(config)
        self.backend_name = backend_name
        self.result: BenchmarkResult | None = None
        self._case_failed = False
        #: Shows a transient progress text (None: erases it); None when progress is off.
        self._status = status

    def __repr__(self) -> str:
        return f"<tweak device={self.device} backend={self.backend_name} config={self.config.id}>"

    def _teardown(self, benchmark: Any) -> None:
        """After a case that failed to run: by teardown, the frames of the failure (and the
        reference cycles through them) are gone, so collecting now hands the failed model's
        device memory back before the next test starts. pytest-benchmark's fixture, which
        this one asks for, is not blamed for going unused in a test that only compiled."""
        if self._case_failed:
            release_memory(self.device)
        if getattr(benchmark, "_mode", "") is None:  # pytest-benchmark: never used
            benchmark.skipped = True  # its teardown then keeps its "not used at all" warning

    def compile(self, model: Callable[..., Any], /) -> Callable[..., Any]:
        """Move ``model`` to this case's device and compile it with this case's config."""
        return self.backend.compile(to_device(model, self.device), self.device)

    def benchmark(self, model: Callable[..., Any], /, *args: Any, **kwargs: Any) -> BenchmarkResult:
        """Compile, check, warm up and time ``model(*args, **kwargs)`` on this case's device.

        Tensors in the arguments are moved to the device. Graph breaks and recompiles are
        counted from dynamo; the first output is compared with the eager model's. A case over
        its limits, or wrong against eager, fails the test here; so does a regression against
        its baseline. Can be called once per test (pytest-benchmark records one benchmark per
        test). ``model`` is positional only: a keyword named ``model`` is the model's own.
        """
        return self._run(model, args, kwargs, None)

    def benchmark_inputs(
        self, model: Callable[..., Any], inputs: Sequence[Any], /, **kwargs: Any
    ) -> BenchmarkResult:
        """Like `benchmark`, over several input sets: one call runs the model on each in turn.

        Each element of ``inputs`` is a tuple of positional arguments, or else the one
        argument; ``kwargs`` go to every call. Recompiles between the sets are counted, so
        ``tweak.benchmark_inputs(model, [torch.randn(b, 64) for b in (2, 8, 32)])`` shows what
        ``dynamic=True``, ``None`` or ``False`` does with changing batch sizes. The timings are
        per pass over all the sets; ``result.output`` is the list of the outputs. ``model``
        and ``inputs`` are positional only: keywords of those names are the model's own
        (``inputs=`` of a ``generate``, say).
        """
        if isinstance(inputs, (torch.Tensor, str, bytes)) or not isinstance(inputs, Sequence):
            raise TypeError(
                "benchmark_inputs takes a list of input sets (each a tuple of arguments, or one "
                f"argument), got {type(inputs).__name__}"
            )
        if not inputs:
            raise ValueError("benchmark_inputs needs at least one input set")
        return self._run(model, (), kwargs, list(inputs))

    def _run(
        self,
        model: Callable[..., Any],
        args: Sequence[Any],
        kwargs: dict[str, Any],
        inputs: list[Any] | None,
    ) -> BenchmarkResult:
        if self.result is not None:
            raise RuntimeError(
                "tweak.benchmark() can be called once per test, and this test has been "
                "measured already: time one model on several inputs in one call, "
                "tweak.benchmark_inputs(model, [x1, x2]), or write one test per model "
                "(or @pytest.mark.parametrize the inputs: one case per input)"
            )
        refuse_compiled(model, "tweak.benchmark()")
        started = time.perf_counter()
        nodeid = self._request.node.nodeid
        options = self._session.options
        self._check_baseline()
        benchmark = self._request.getfixturevalue("benchmark")
        if getattr(benchmark, "_mode", None):  # pytest-benchmark: used by the test already
            pytest.fail(
                f"pytest-tweak: this test already timed something with pytest-benchmark's "
                f"`benchmark` fixture ({benchmark._mode}), and tweak.benchmark() times through "
                "that same fixture, which times once per test: time the model and the other "
                "code in separate tests",
                pytrace=False,
            )
        # pytest-benchmark records the test's parameters: the case's id, not its repr
        benchmark.params = {**(benchmark.params or {}), "tweak": self._request.param.id}
        runner = _PedanticRunner(benchmark, measure=not benchmarks_disabled(self._request.config))
        status = self._status
        on_phase = None
        if status is not None:
            name = self._request.node.name

            def on_phase(phase: str) -> None:
                status(f"tweak: {name} {phase}... {time.perf_counter() - started:.1f} s")

        if self.device.index is not None:
            torch.get_device_module(self.device.type).set_device(self.device.index)
        lock = lock_name(self.device)
        with capture_torch_logs(options.logs) as logs, device_lock(lock) as waited_s:
            try:
                result = run_case(
                    model,
                    args,
                    kwargs,
                    backend=self.backend,
                    device=self.device,
                    settings=_decisive(
                        options.settings,
                        None if options.save else self._session.baselines.get(nodeid),
                        options.judging[self.device.type],
                    ),
                    runner=runner,
                    instruments=self._session.instruments,
                    checks=options.checks,
                    inputs=inputs,
                    on_phase=on_phase,
                )
            except CaseError as exc:
                error: CaseError | None = exc
            else:
                error = None
            finally:
                if status is not None:
                    status(None)
            self._session.lock_uses.append(LockUse(nodeid, lock, waited_s))
        if options.logs:
            self._request.node.add_report_section(
                "call", "tweak logs", logs.text or "(torch logged nothing)"
            )
        if error is not None:
            self._case_failed = True
            runner.failed(error)
            # counted and named in the summary and the reports, like a case with figures
            self._session.add_error(
                nodeid,
                device=self.device.type,
                backend=self.backend_name,
                config_id=self.config.id,
                config=self.config.describe(),
                error=str(error),
            )
            pytest.fail(f"pytest-tweak: {error}", pytrace=False)
        self.result = result
        if getattr(benchmark, "_mode", None):  # a later benchmark(...) names who used it
            benchmark._mode = "tweak.benchmark(...)"
        session = self._session
        benchmark.extra_info["tweak"] = _extra_info(self, result, session.fingerprint)
        verdict = self._verdict(result, compare=not runner.disabled)
        record = CaseRecord(
            nodeid=nodeid,
            device=self.device.type,
            config_id=self.config.id,
            config=self.config.describe(),
            result=result,
            verdict=verdict,
            baseline=session.baselines.get(nodeid),
            backend=self.backend_name,
            fingerprint=session.fingerprint,
            over_limit=self._limits.check(
                result.graph_breaks, result.recompiles, result.cudagraph_skips
            ),
        )
        case = session.add(record)
        info = benchmark.extra_info["tweak"]
        info["verdict"] = _verdict_info(verdict)
        # pytest-tweak's own time in this call: everything but the measured phases
        info["phases"]["own_s"] = time.perf_counter() - started - sum(info["phases"].values())
        self._request.config.hook.pytest_tweak_case_result(item=self._request.node, record=record)
        if verdict.failed:
            judging = session.options.judging[self.device.type]
            pytest.fail(
                failure_message(
                    case,
                    str(session.options.baseline_path),
                    judging,
                    session.options.test_root,
                    session.options.resave_flags,
                ),
                pytrace=False,
            )
        return result

    def _check_baseline(self) -> None:
        """Fail the case, before it runs, when the baseline file is broken. (A broken entry
        of this case fails it after it is measured, so that its figures are reported:
        `_verdict`.)"""
        try:
            self._session.load()
        except BaselineError as exc:
            pytest.fail(
                f"pytest-tweak: {exc}. Fix or remove the file (it is left as it is).",
                pytrace=False,
            )

    def _verdict(self, result: BenchmarkResult, *, compare: bool) -> Verdict:
        """The first verdict the ``pytest_tweak_verdict`` implementations return (pytest-tweak's
        own runs last); ``NOT_COMPARED`` when there is nothing to judge."""
        session = self._session
        # over a limit, or wrong against eager: fails whatever the speed, baseline or not
        failures = session.failures(result, self._limits)
        item = self._request.node
        problem = None if session.options.save else session.skipped.get(item.nodeid)
        if problem is not None:  # a save records the entry anew: no failure then
            options = session.options
            broken = broken_entry_message(
                options.baseline_path, item.nodeid, problem, options.test_root, options.resave_flags
            )
            return Verdict(Status.FAILED, failures=(*failures, broken))
        run = session.run_to_compare(result, compare=compare)
        if run is None:
            return Verdict(Status.FAILED if failures else Status.NOT_COMPARED, failures=failures)
        baseline = session.baselines.get(item.nodeid)
        changed = [] if baseline is None else differences(baseline.fingerprint, session.fingerprint)
        if changed:
            session.environment_changed[item.nodeid] = changed
            policy = apply_policy(
                session.options.fingerprint_policy,
                "the baseline was recorded in another environment: " + "; ".join(changed),
                "--tweak-fingerprint-policy",
                ": record a baseline here with --tweak-save",
            )
            if not policy.compare:
                status = Status.FAILED if failures else Status.NOT_COMPARED
                return Verdict(status, failures=failures, notes=(policy.note or "",))
            if policy.failure is not None:
                failures = (*failures, policy.failure)
        hook = self._request.config.hook.pytest_tweak_verdict
        try:
            verdict = hook(
                item=item,
                baseline=baseline,
                run=run,
                result=result,
                judging=session.options.judging[self.device.type],
            )
            what = (
                f"returned {verdict!r} ({type(verdict).__name__}); it must return a "
                "pytest_tweak.Verdict or None"
            )
        except Exception as exc:  # a rule's bug fails its case, which stays in the reports
            at = traceback.extract_tb(exc.__traceback__)[-1]
            verdict, what = None, f"raised {type(exc).__name__}: {exc} ({at.filename}:{at.lineno})"
        if not isinstance(verdict, Verdict):
            problem = f"pytest_tweak_verdict {what} (implemented by: {implementers(hook)})"
            return Verdict(Status.FAILED, failures=(*failures, problem))
        if failures:  # the case's own failures stand, whichever rule judged its speed
            verdict = dataclasses.replace(
                verdict, status=Status.FAILED, failures=(*failures, *verdict.failures)
            )
        return verdict


def _extra_info(
    fixture: TweakFixture, result: BenchmarkResult, fingerprint: dict[str, Any]
) -> dict[str, Any]:
    return {
        "device": fixture.device.type,
        "backend": fixture.backend_name,
        "config": fixture.config.id,
        "graph_breaks": result.graph_breaks,
        "break_reasons": [reason.as_dict() for reason in result.break_reasons],
        "recompiles": result.recompiles,
        "recompile_reasons": [str(r) for r in result.recompile_reasons],
        "graph_count": result.graph_count,
        "compile_time_s": result.compile_time_s,
        "compile_times": result.compile_times.as_dict(),
        "compile_cache": result.compile_cache.as_dict(),
        "cold_compile": result.cold_compile,
        "recompile_limit_hit": result.recompile_limit_hit,
        "recompile_limit_frames": list(result.recompile_limit_frames),
        "peak_memory_bytes": result.peak_memory_bytes,
        "eager_peak_memory_bytes": result.eager_peak_memory_bytes,
        "accuracy": None if result.accuracy is None else result.accuracy.as_dict(),
        "input_sets": result.input_sets,
        "phases": result.phases.as_dict(),
        "iterations": result.iterations,
        "stopped": result.stopped,
        "host_bound": result.host_bound,
        "warmup_stable": result.warmup_stable,
        "timing": _summary(result.timing),
        "normalized": _summary(result.normalized),
        "eager": _summary(result.eager),
        "speedup": _summary(result.speedup),
        "device_time": _summary(result.device_time),
        "host_overhead_s": result.host_overhead_s,
        "host_weight": result.host_weight,
        "cudagraph_skips": list(result.cudagraph_skips),
        "load_share": result.load_share,
        "unstable": result.unstable,
        "fingerprint": dict(fingerprint),
    }


def _summary(summary: Summary | None) -> dict[str, float | int] | None:
    return None if summary is None else summary.as_dict()


def _verdict_info(verdict: Verdict) -> dict[str, Any]:
    def change(c: Change | None) -> dict[str, Any] | None:
        return None if c is None else {**dataclasses.asdict(c), "status": str(c.status)}

    return {
        "status": str(verdict.status),
        "failed": verdict.failed,
        "change": change(verdict.change),
        "speedup": change(verdict.speedup),
        "problems": list(verdict.problems),
        "failures": list(verdict.failures),
        "notes": list(verdict.notes),
    }
