"""One case: a model, its inputs, a backend and a device, compiled, counted and timed.

`run_case` is shared by the ``tweak`` fixture (which reports the samples to pytest-benchmark)
and by `tune`; a `Runner` says whether timing is on and where the samples go.
"""

from __future__ import annotations

import contextlib
import functools
import importlib
import os
import time
import traceback
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

import torch

from .accuracy import Accuracy, compare_outputs
from .backends import Backend, EagerBackend, TorchInductorBackend, compile_disabled
from .counters import (
    BreakReason,
    CacheUse,
    CompileTimes,
    GraphBreakLog,
    Recompile,
    cold_caches,
    cudagraph_skips,
    decorated_forwards,
    read_counts,
    reset_dynamo,
    watch_graph_breaks,
)
from .devices import make_synchronizer, rebuilt, release_memory, to_device
from .logs import quiet_trace_log
from .measure import (
    HOST_REFERENCE,
    REFERENCE,
    CaseChecks,
    Instruments,
    Measurement,
    MeasureSettings,
    measure,
)
from .memory import peak_memory
from .stats import Summary

__all__ = [
    "PHASES",
    "BenchmarkResult",
    "CaseChecks",
    "CaseError",
    "LocalRunner",
    "Phases",
    "Runner",
    "run_case",
]


class CaseError(RuntimeError):
    """The model failed to compile or to run with this backend; the message says why."""


class Runner(Protocol):
    """Where a case's samples are reported, and whether timing is on at all."""

    @property
    def disabled(self) -> bool:
        """True when timing is off: the case then runs exactly once, through `run_once`."""
        ...

    def run_once(self, call: Callable[[], Any]) -> Any: ...

    def record(self, samples: Sequence[float], iterations: int) -> None:
        """Hand the case's samples (seconds per call) to whoever reports them."""
        ...


class LocalRunner:
    """Measure outside pytest-benchmark (used by `tune`): nothing to report to."""

    disabled = False

    def run_once(self, call: Callable[[], Any]) -> Any:
        return call()

    def record(self, samples: Sequence[float], iterations: int) -> None:
        return None


@dataclass(frozen=True)
class Phases:
    """Seconds spent per phase of a case: the compiling first call, calibration and warm-up
    (``warmup_s``), sampling, moving the model and its inputs to the device (``move_s``), and
    the checks' own calls of the model (``check_s``: the accuracy check's eager call and the
    peak-memory calls), which grow with the model."""

    compile_s: float = 0.0
    warmup_s: float = 0.0
    measure_s: float = 0.0
    move_s: float = 0.0
    check_s: float = 0.0

    def as_dict(self) -> dict[str, float]:
        return {
            "compile_s": self.compile_s,
            "warmup_s": self.warmup_s,
            "measure_s": self.measure_s,
            "move_s": self.move_s,
            "check_s": self.check_s,
        }


@dataclass(frozen=True)
class BenchmarkResult:
    """What one case measured.

    Attributes:
        backend: Name of the backend, e.g. ``inductor-default`` or ``eager``.
        device: The device the case ran on.
        median_s: Median latency, seconds per call of back-to-back calls, host work included
            (see `pytest_tweak.measure`); ``None`` when timing was disabled.
        timing: Summary of the case's latency samples (seconds per call); ``None`` when
            disabled.
        normalized: Summary of the round-by-round ratio of the case's latency to the
            reference workloads' (machine-speed normalized time); ``None`` when not measured.
        eager: Summary of the eager model's latency samples; ``None`` when not measured.
        speedup: Summary of the round-by-round eager / compiled latency ratio; ``None`` when
            not measured.
        samples: Latency of the case, seconds per call, one value per sample.
        iterations: Calls per sample.
        stopped: Why sampling ended: ``precise``, ``time budget`` or ``max rounds``.
        host_bound: The device-time timer could not keep the device busy while the host
            queued the calls in some samples (their device time may hold idle gaps).
        warmup_stable: Warm-up ended because the timings settled (not at its time cap).
        phases: Seconds spent per phase: compiling, warming up, sampling, the device move
            and the checks' model calls (`Phases`).
        graph_breaks: Graph breaks: the distinct sites (file, line) where dynamo ended a graph
            or skipped a frame, as ``TORCH_LOGS=graph_breaks`` logs them.
        break_reasons: Those breaks, each with its reason, source line, how often dynamo met
            it, and torch's id, explanation, hint and link where torch gives them.
        recompiles: Frame compiles that were recompiles (a guard failed).
        recompile_reasons: The failed guard of each recompile.
        recompile_limit_hit: Dynamo reached its recompile limit and ran a frame in eager.
        graph_count: FX graphs compiled.
        compile_time_s: Wall time of the first call, which compiles (with several input
            sets: the first pass over all of them, recompiles included).
        output: What the first call returned (with several input sets: a list, one output
            per set), its tensors detached copies: ``requires_grad`` and ``grad_fn`` are not
            kept (a later call's CUDA-graph replay would overwrite the tensors themselves).
        compile_times: Compile time split into dynamo's and inductor's share, as torch
            reports it.
        compile_cache: Whether inductor's FX-graph cache served the compile (``.state``:
            ``hit``, ``miss``, ``partial``, ``none``).
        cold_compile: The case compiled against empty caches (``--tweak-cold-compile``).
        recompile_limit_frames: The frames that hit the recompile limit.
        peak_memory_bytes: Peak bytes one compiled call allocated beyond what was allocated
            before it (see `pytest_tweak.memory`); ``None`` when not measured.
        eager_peak_memory_bytes: The same for the eager model; ``None`` when not measured.
        accuracy: The compiled output against eager's; ``None`` when not compared.
        input_sets: Input sets one call runs through.
        device_time: Summary of the case's device time per call (cuda and xpu: the kernels'
            time, launch gaps left out); ``None`` on cpu or when not measured.
        host_weight: How much of the latency moves with the host's speed (0 to 1), which
            decides the mix of reference workloads ``normalized`` divides by.
        cudagraph_skips: Why inductor ran graphs without CUDA graphs (``reduce-overhead``
            and ``max-autotune`` modes), as it said it.
        load_share: Share of the measurement's wall time that other processes took the
            case's core (a cpu case on one thread, whose samples are the thread's CPU time);
            ``None`` elsewhere.
        unstable: Why the case's samples are not one steady figure (its time stepped
            midway: a recompile-limit fallback to eager, a cache miss); ``None`` when steady.
        step_floor: With ``unstable``, the faster part's figure over the run's median, at
            most 1 (`pytest_tweak.measure.Measurement.step_floor`).
    """

    backend: str
    device: torch.device
    median_s: float | None
    timing: Summary | None
    normalized: Summary | None
    eager: Summary | None
    speedup: Summary | None
    samples: tuple[float, ...] = field(repr=False)  # printed, they would fill a screen
    iterations: int
    stopped: str | None
    host_bound: bool
    warmup_stable: bool | None
    phases: Phases
    graph_breaks: int
    break_reasons: tuple[BreakReason, ...]
    recompiles: int
    recompile_reasons: tuple[Recompile, ...]
    recompile_limit_hit: bool
    graph_count: int
    compile_time_s: float
    output: Any = field(default=None, repr=False)
    compile_times: CompileTimes = field(default_factory=CompileTimes)
    compile_cache: CacheUse = field(default_factory=CacheUse)
    cold_compile: bool = False
    recompile_limit_frames: tuple[str, ...] = ()
    peak_memory_bytes: int | None = None
    eager_peak_memory_bytes: int | None = None
    accuracy: Accuracy | None = None
    input_sets: int = 1
    device_time: Summary | None = None
    host_weight: float = 0.0
    cudagraph_skips: tuple[str, ...] = ()
    load_share: float | None = None
    unstable: str | None = None
    step_floor: float | None = None

    @property
    def host_overhead_s(self) -> float | None:
        """Latency minus device time, seconds per call: how long the device waits for the
        host each call (Python, guards, kernel launches); ``None`` without a device time."""
        if self.median_s is None or self.device_time is None:
            return None
        return max(self.median_s - self.device_time.median, 0.0)

    @property
    def host_share(self) -> float | None:
        """`host_overhead_s` as a share of the latency, 0 to 1; ``None`` without it."""
        overhead = self.host_overhead_s
        if overhead is None or not self.median_s:
            return None
        return overhead / self.median_s


@quiet_trace_log()
def run_case(
    model: Callable[..., Any],
    args: Sequence[Any],
    kwargs: Mapping[str, Any],
    *,
    backend: Backend,
    device: torch.device,
    settings: MeasureSettings,
    runner: Runner,
    instruments: Instruments | None = None,
    checks: CaseChecks | None = None,
    inputs: Sequence[Any] | None = None,
    on_phase: Callable[[str], None] | None = None,
) -> BenchmarkResult:
    """Move to ``device``, compile with ``backend``, check, warm up, time, and count dynamo's
    work.

    ``instruments`` lends the device's timer buffer and reference workload; a run of many
    cases passes one, so they are built once per device (a new one is made otherwise).

    Dynamo is reset first, so the counts and compiled code of an earlier case never leak into
    this one. Graph breaks and recompiles are counted over the whole case: the compiling call,
    the warm-up and the timed samples (the eager and reference companions do not compile).
    torch's structured-trace records stay out of pytest's log capture while the case runs.

    With ``inputs``, ``args`` is ignored and one call runs the model on every input set in
    turn: each element of ``inputs`` is a tuple of positional arguments, or else the one
    argument; ``kwargs`` go to every call. Recompiles between the sets are what dynamic shapes
    are about.

    ``on_phase`` is told each phase as it starts (`PHASES`: ``compiling``, ``checking
    accuracy``, ``warming up``, ``measuring``, ``measuring memory``), e.g. to show progress.

    Raises:
        CaseError: compiling or running the model failed.
    """
    checks = checks if checks is not None else CaseChecks()
    told = on_phase if on_phase is not None else _no_phase
    current = ["moving the model and inputs to the device"]

    def phase(name: str) -> None:
        current[0] = name
        told(name)

    sets = [tuple(args)] if inputs is None else [_as_args(item) for item in inputs]
    if not sets:
        raise CaseError("inputs is empty: give at least one input set")
    disabled = compile_disabled()
    if disabled is not None and not isinstance(backend, EagerBackend):
        raise CaseError(
            f"{backend.name} on {device}: {disabled}, so torch.compile hands the model back "
            f"uncompiled and this case would time eager code as {backend.name}'s: unset it to "
            "measure (nothing of this case is saved)"
        )
    started = time.perf_counter()
    sync = make_synchronizer(device)
    model = to_device(model, device)
    sets = [to_device(s, device) for s in sets]
    kwargs = to_device(dict(kwargs), device)
    sync()
    move_s = time.perf_counter() - started
    single = inputs is None

    # inductor builds the cpu thread count into its kernels: set it before compiling
    threads = settings.cpu_threads if device.type == "cpu" else None
    phase("compiling")  # the compiler's one-time start-up, in the first case, included
    if isinstance(backend, TorchInductorBackend):
        warm_up_compiler(device.type)
    reset_dynamo()
    compiled: Callable[..., Any] = model
    compile_time_s = 0.0

    def run_all(target: Callable[..., Any]) -> Any:
        if single:
            return target(*sets[0], **kwargs)
        return [target(*s, **kwargs) for s in sets]

    def call() -> Any:
        return run_all(compiled)

    def first_call() -> Any:
        # Each output is copied as it comes: under CUDA graphs (``reduce-overhead``) it lives
        # in a pool that the next replay overwrites, and it is read after many more calls.
        nonlocal compile_time_s
        start = time.perf_counter()
        with cold_caches() if checks.cold else contextlib.nullcontext():
            if single:
                out = _copied(compiled(*sets[0], **kwargs))
            else:
                out = [_copied(compiled(*s, **kwargs)) for s in sets]
        sync()
        compile_time_s = time.perf_counter() - start
        return out

    eager_of = getattr(backend, "eager", None)
    eager_model = None if eager_of is None else eager_of(model, device)
    skips: list[str] = []
    measurement: Measurement | None = None
    failure: str | None = None
    failed_compiling = False
    accuracy: Accuracy | None = None
    memory: tuple[int | None, int | None] = (None, None)
    late_nan: str | None = None
    graph_breaks = GraphBreakLog()
    check_s = 0.0
    # CUDA graphs do not apply on cpu, where inductor counts every graph as skipped
    skip_watch: contextlib.AbstractContextManager[list[str]] = (
        cudagraph_skips() if device.type != "cpu" else contextlib.nullcontext([])
    )
    try:
        with (
            _torch_threads(threads),
            skip_watch as skips,
            watch_graph_breaks(graph_breaks),
        ):
            compiled = backend.compile(model, device)
            if not callable(compiled):  # a custom backend's slip, named as such
                raise TypeError(
                    f"{type(backend).__name__}.compile() returned {compiled!r}, which cannot be "
                    "called: it must return the compiled model (a callable)"
                )
            versions = _versions(sets, kwargs)
            output = runner.run_once(first_call) if runner.disabled else first_call()
            if checks.accuracy and eager_model is not None:
                phase("checking accuracy")
                checked = time.perf_counter()
                changed = sorted(w for w, _ in _versions(sets, kwargs).items() - versions.items())
                accuracy = _accuracy(
                    output, lambda: run_all(eager_model), backend, device, checks, changed
                )
                check_s += time.perf_counter() - checked
            if not runner.disabled:
                eager_call = (
                    (lambda: run_all(eager_model))
                    if settings.eager and eager_model is not None
                    else None
                )
                measurement = _measure(call, eager_call, device, settings, instruments, phase)
                if checks.memory:
                    phase("measuring memory")
                    checked = time.perf_counter()
                    memory = (
                        peak_memory(call, device),
                        None if eager_call is None else peak_memory(eager_call, device),
                    )
                    check_s += time.perf_counter() - checked
                late_nan = _nan_problem(call())  # the model as the timed calls left it
    except Exception as exc:
        where = current[0]
        if where == "compiling" and isinstance(backend, EagerBackend):
            where = "running the model uncompiled (the eager backend compiles nothing)"
        failure = _describe_failure(backend, device, exc) + _where_raised(exc, where)
        failed_compiling = where == "compiling"
    if failure is not None:
        if failed_compiling and eager_model is not None:
            failure += _eager_too(lambda: run_all(eager_model))
        # Out of the except block, the exception and the tensors its frames held are gone:
        # drop the failed case's compiled code and hand the device allocator's cached blocks
        # back, so the next cases run, and are timed, as if this one never ran. The message
        # carries all a person needs.
        reset_dynamo()
        release_memory(device)
        raise CaseError(failure)
    nan = _nan_problem(output)
    if nan is not None:
        raise CaseError(f"{backend.name} on {device}: {nan}")
    if late_nan is not None:
        raise CaseError(
            f"{backend.name} on {device}: after the timed calls, {late_nan}. The first call's "
            "output had none, so the model's state changed as it was called (a training "
            "step whose weights diverged, say) and the timing is of NaN arithmetic"
        )
    counts = read_counts(graph_breaks, type(model).__name__, decorated_forwards(model))
    if measurement is None:
        figures = _no_figures(compile_time_s, move_s, check_s)
    else:
        runner.record(measurement.samples["case"], measurement.iterations["case"])
        figures = _figures(measurement, compile_time_s, move_s, check_s)
    return BenchmarkResult(
        backend=backend.name,
        device=device,
        **figures,
        graph_breaks=counts.graph_breaks,
        break_reasons=counts.break_reasons,
        recompiles=counts.recompiles,
        recompile_reasons=counts.recompile_reasons,
        recompile_limit_hit=counts.recompile_limit_hit,
        graph_count=counts.graph_count,
        compile_time_s=compile_time_s,
        output=output,
        compile_times=counts.compile_times,
        compile_cache=counts.cache,
        cold_compile=checks.cold,
        recompile_limit_frames=counts.limit_frames,
        peak_memory_bytes=memory[0],
        eager_peak_memory_bytes=memory[1],
        accuracy=accuracy,
        input_sets=len(sets),
        cudagraph_skips=tuple(skips),
    )


#: The phases `run_case` reports to its ``on_phase`` callback, in order.
PHASES = ("compiling", "checking accuracy", "warming up", "measuring", "measuring memory")


def _no_phase(phase: str) -> None:
    return None


#: Frames of these packages are left out of a failed case's traceback: the model's own are
#: what a person can change.
_LIBRARY_DIRS = tuple(
    str(Path(path).resolve().parent) + os.sep for path in (torch.__file__, __file__) if path
)

_IMPORTLIB_DIR = str(Path(importlib.__file__).resolve().parent) + os.sep


def _importing(filename: str) -> bool:
    """Whether a frame is Python's import machinery (``importlib``, whose frozen modules
    are named ``<frozen importlib._bootstrap>``)."""
    return filename.startswith("<frozen importlib") or str(Path(filename).resolve()).startswith(
        _IMPORTLIB_DIR
    )


#: The most frames of the model's code a failure shows (innermost last).
_MAX_FRAMES = 8


def _eager_too(run_eager: Callable[[], Any]) -> str:
    """After a failure while compiling: whether the model fails uncompiled too, which puts
    the cause in the model or its inputs (a wrong dtype, say), not in the compiler."""
    try:
        run_eager()
    except Exception as exc:
        first = (str(exc).strip().splitlines() or [""])[0]
        return (
            f"\nthe model raises uncompiled too ({type(exc).__name__}: {first}): the cause is "
            "in the model or its inputs, not in the compiler"
        )
    return ""


def _generated_dirs() -> tuple[str, ...]:
    """Where inductor writes the code it generates: its frames are not the model's."""
    try:
        from torch._inductor.runtime.cache_dir_utils import cache_dir
    except ImportError:  # torch < 2.6
        try:
            from torch._inductor.runtime.runtime_utils import (  # type: ignore[attr-defined]
                cache_dir,
            )
        except ImportError:
            return ()
    return (str(Path(cache_dir()).resolve()) + os.sep,)


def _where_raised(exc: BaseException, phase: str) -> str:
    """The phase a case failed in and the model's frames of the traceback (torch's,
    pytest-tweak's and the code inductor generated left out), as text to append to its
    failure: the exception object itself is dropped so the memory its frames hold is freed.
    Raised inside torch (an error in a torch call, a warning turned into an error), the
    innermost frames follow."""
    # Python's import machinery (a package a backend imports is missing) is neither the
    # model's code nor torch's: left out of both lists
    frames = [f for f in traceback.extract_tb(exc.__traceback__) if not _importing(f.filename)]
    library = _LIBRARY_DIRS + _generated_dirs()
    mine = [
        i
        for i, frame in enumerate(frames)
        if not str(Path(frame.filename).resolve()).startswith(library)
    ]
    inner = frames[mine[-1] + 1 :] if mine else frames  # the frames inside torch, innermost
    named = "from user code:" in str(exc)  # dynamo's errors name the user's line themselves
    if mine:
        left_out = "torch's and pytest-tweak's frames left out"
        lines = [f"\nraised while {phase}; the model's code ({left_out}):"]
        lines += _frame_lines([frames[i] for i in mine[-_MAX_FRAMES:]])
        if inner and not named:
            lines += ["innermost frames, inside torch:", *_frame_lines(inner[-3:])]
    elif inner and not named:
        lines = [f"\nraised while {phase}; innermost frames (none is the model's code):"]
        lines += _frame_lines(inner[-3:])
    else:
        lines = [f"\nraised while {phase}"]
    if isinstance(exc, Warning) and inner:
        lines.append(
            f"a warning turned into an error (-W error or filterwarnings = error) inside "
            f"torch: let torch's own through with 'ignore::{type(exc).__name__}:torch.*' in "
            "filterwarnings"
        )
    return "\n".join(lines)


def _frame_lines(frames: list[traceback.FrameSummary]) -> list[str]:
    return [line.rstrip("\n") for line in traceback.format_list(frames)]


@functools.cache
def warm_up_compiler(device_type: str) -> None:
    """Pay the compiler's one-time costs in this process (imports, compile workers, device and
    code-generation start-up, a few seconds) once, on a throw-away model, so that no case's
    compile time depends on whether it happened to run first."""
    model = torch.nn.Sequential(torch.nn.Linear(4, 4), torch.nn.ReLU()).to(device_type)
    # only a warm-up: should it fail, the case's own compile reports what is wrong
    with contextlib.suppress(Exception):
        torch.compile(model)(torch.zeros(2, 4, device=device_type))
    reset_dynamo()


def _as_args(item: Any) -> tuple[Any, ...]:
    return item if isinstance(item, tuple) else (item,)


def _accuracy(
    output: Any,
    eager_call: Callable[[], Any],
    backend: Backend,
    device: torch.device,
    checks: CaseChecks,
    mutated: Sequence[str] = (),
) -> Accuracy:
    """The compiled output against eager's; not compared when eager itself is not repeatable
    (random ops such as dropout in training mode, or state the model changes as it runs:
    ``mutated`` names the inputs the compiled call changed in place)."""
    autocast_of = getattr(backend, "autocast_dtype", None)
    autocast = None if autocast_of is None else autocast_of(device)
    expected = eager_call()
    again = eager_call()
    if not compare_outputs(again, expected, autocast_dtype=autocast).ok:
        if mutated:
            return Accuracy.not_checked(
                f"the model changes its input {', '.join(mutated)} in place, so each call "
                "(the timed ones too) sees other values and eager's output changes from call "
                "to call; clone the input inside the model to time one input"
            )
        return Accuracy.not_checked(
            "the eager model's output changes from call to call (random ops such as dropout "
            "in training mode, or state the model changes as it runs)"
        )
    return compare_outputs(
        output, expected, autocast_dtype=autocast, rtol=checks.rtol, atol=checks.atol
    )


def _figures(
    measurement: Measurement, compile_time_s: float, move_s: float, check_s: float
) -> dict[str, Any]:
    """The `BenchmarkResult` fields that come from a measurement."""
    timing = measurement.summary("case")
    return {
        "median_s": None if timing is None else timing.median,
        "timing": timing,
        "device_time": measurement.summary("device"),
        "host_weight": measurement.host_weight(),
        "normalized": measurement.normalized("case"),
        "eager": measurement.summary("eager"),
        "speedup": measurement.ratio("eager", "case"),
        "samples": measurement.samples["case"],
        "iterations": measurement.iterations["case"],
        "stopped": measurement.stopped,
        "host_bound": measurement.host_bound,
        "warmup_stable": measurement.warmup.stable,
        "load_share": measurement.load_share,
        "unstable": measurement.step("case"),
        "step_floor": measurement.step_floor("case"),
        "phases": Phases(
            compile_time_s, measurement.prepare_s, measurement.seconds, move_s, check_s
        ),
    }


def _no_figures(compile_time_s: float, move_s: float, check_s: float) -> dict[str, Any]:
    """The same fields when timing was off (the case ran once)."""
    return {
        "median_s": None,
        "timing": None,
        "normalized": None,
        "eager": None,
        "speedup": None,
        "samples": (),
        "iterations": 0,
        "stopped": None,
        "host_bound": False,
        "warmup_stable": None,
        "phases": Phases(compile_s=compile_time_s, move_s=move_s, check_s=check_s),
    }


def _measure(
    call: Callable[[], Any],
    eager_call: Callable[[], Any] | None,
    device: torch.device,
    settings: MeasureSettings,
    instruments: Instruments | None,
    on_phase: Callable[[str], None],
) -> Measurement:
    """Latency of the case, and beside it, in turn: its device time (cuda, xpu), the reference
    workloads (device-bound, and on cuda/xpu host-bound) and the eager model."""
    tools = instruments if instruments is not None else Instruments()
    workloads: dict[str, Callable[[], Any]] = {"case": call}
    timers = {}
    device_timer = tools.device_timer(device)
    if device_timer is not None:
        workloads["device"] = call
        timers["device"] = device_timer
    if settings.reference:
        workloads[REFERENCE] = tools.reference(device)
        host_reference = tools.host_reference(device)
        if host_reference is not None:
            workloads[HOST_REFERENCE] = host_reference
    if eager_call is not None:
        workloads["eager"] = eager_call
    primary = ("case", REFERENCE) if settings.reference else ("case", None)
    threads = settings.cpu_threads if device.type == "cpu" else None
    return measure(
        workloads,
        tools.timer(device, threads),
        settings,
        primary=primary,
        on_phase=on_phase,
        timers=timers,
    )


@contextlib.contextmanager
def _torch_threads(threads: int | None) -> Iterator[None]:
    if threads is None:
        yield
        return
    before = torch.get_num_threads()
    torch.set_num_threads(threads)
    try:
        yield
    finally:
        torch.set_num_threads(before)


def _nan_problem(output: Any) -> str | None:
    """Say where the first NaN in the (possibly nested) output is; None when there is none."""
    for where, value in _tensors(output, "output"):
        if value.is_floating_point() or value.is_complex():
            count = int(torch.isnan(value).sum())
            if count:
                return (
                    f"the model's {where} holds {count} NaN value(s) of {value.numel()}: a "
                    "timing of wrong results is not a measurement (check the model and its "
                    "inputs; under autocast, the dtype's range; a model meant to return NaN "
                    "can be timed through a function that returns torch.nan_to_num of it)"
                )
    return None


def _copied(value: Any) -> Any:
    """``value`` with every tensor in it (also inside lists, tuples and dicts) detached and
    cloned (an inference tensor into an inference tensor); anything else as it is."""
    if isinstance(value, torch.Tensor):
        if value.is_inference():  # an inference tensor stays one
            with torch.inference_mode():
                return value.clone()
        return value.detach().clone()
    return rebuilt(value, _copied)


def _versions(sets: Sequence[tuple[Any, ...]], kwargs: Mapping[str, Any]) -> dict[str, int]:
    """The version counter of every input tensor, by where it is: an in-place change (``x.add_``)
    moves it. Inference tensors keep none and are left out."""
    found = {}
    named = (
        [(f"args[{i}]", value) for i, value in enumerate(sets[0])]
        if len(sets) == 1
        else [(f"inputs[{n}][{i}]", value) for n, s in enumerate(sets) for i, value in enumerate(s)]
    )
    for where, value in [*named, *((f"kwargs[{k!r}]", v) for k, v in kwargs.items())]:
        for place, tensor in _tensors(value, where):
            if not tensor.is_inference():
                found[place] = tensor._version
    return found


def _tensors(value: Any, where: str) -> Iterator[tuple[str, torch.Tensor]]:
    if isinstance(value, torch.Tensor):
        yield where, value
    elif isinstance(value, Mapping):
        for key, item in value.items():
            yield from _tensors(item, f"{where}[{key!r}]")
    elif isinstance(value, (list, tuple)):
        for index, item in enumerate(value):
            yield from _tensors(item, f"{where}[{index}]")


def _describe_failure(backend: Backend, device: torch.device, exc: BaseException) -> str:
    lines = str(exc).strip().splitlines() or [""]
    # dynamo's messages are long: keep the reason, its explanation, and the user's code.
    kept = lines[:3]
    if "from user code:" in lines:
        start = lines.index("from user code:")
        kept += ["", *lines[start : start + 7]]
    elif len(lines) > 3:
        kept += lines[3:12]
    return f"{backend.name} on {device}: {type(exc).__name__}: " + "\n".join(kept).rstrip()
