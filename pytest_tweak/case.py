"""One case: a model, its inputs, a backend and a device, compiled, counted and timed.

`run_case` is shared by the ``tweak`` fixture (which times through pytest-benchmark) and by
`tune` (which times on its own); a `Runner` says how the timed rounds are taken.
"""

from __future__ import annotations

import contextlib
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Protocol

import torch

from .backends import Backend
from .counters import BreakReason, Recompile, read_counts, reset_dynamo
from .devices import make_synchronizer, to_device
from .measure import MeasureSettings, Plan, Stats, plan_rounds, time_rounds, warm_up

__all__ = ["BenchmarkResult", "CaseError", "LocalRunner", "Runner", "run_case"]


class CaseError(RuntimeError):
    """The model failed to compile or to run with this backend; the message says why."""


class Runner(Protocol):
    """How a case's calls are made and timed."""

    @property
    def disabled(self) -> bool:
        """True when timing is off: the case then runs exactly once, through `run_once`."""
        ...

    def run_once(self, call: Callable[[], Any]) -> Any: ...

    def time(
        self, call: Callable[[], Any], sync: Callable[[], None], plan: Plan
    ) -> Sequence[float]: ...


class LocalRunner:
    """Time with `time_rounds`, outside pytest-benchmark (used by `tune`)."""

    disabled = False

    def run_once(self, call: Callable[[], Any]) -> Any:
        return call()

    def time(
        self, call: Callable[[], Any], sync: Callable[[], None], plan: Plan
    ) -> Sequence[float]:
        return time_rounds(call, sync, plan)


@dataclass(frozen=True)
class BenchmarkResult:
    """What one case measured.

    Attributes:
        backend: Name of the backend, e.g. ``inductor-default`` or ``eager``.
        device: The device the case ran on.
        median_s: Median seconds per call; ``None`` when timing was disabled.
        stats: min/max/mean/median/stddev/rounds/iterations in seconds; ``None`` when disabled.
        samples: Seconds per call, one value per timed round.
        graph_breaks: Distinct graph breaks (reason and location) dynamo met.
        break_reasons: Those breaks, each with its reason and the user's source line.
        recompiles: Frame compiles that were recompiles (a guard failed).
        recompile_reasons: The failed guard of each recompile.
        recompile_limit_hit: Dynamo reached its recompile limit and ran a frame in eager.
        graph_count: FX graphs compiled.
        compile_time_s: Wall time of the first call, which compiles.
        output: What the first call returned.
    """

    backend: str
    device: torch.device
    median_s: float | None
    stats: Stats | None
    samples: tuple[float, ...]
    graph_breaks: int
    break_reasons: tuple[BreakReason, ...]
    recompiles: int
    recompile_reasons: tuple[Recompile, ...]
    recompile_limit_hit: bool
    graph_count: int
    compile_time_s: float
    output: Any = None


def run_case(
    model: Callable[..., Any],
    args: Sequence[Any],
    kwargs: Mapping[str, Any],
    *,
    backend: Backend,
    device: torch.device,
    settings: MeasureSettings,
    runner: Runner,
) -> BenchmarkResult:
    """Move to ``device``, compile with ``backend``, warm up, time, and count dynamo's work.

    Dynamo is reset first, so the counts and compiled code of an earlier case never leak into
    this one. Graph breaks and recompiles are counted over the whole case: the compiling call,
    the warm-up and the timed rounds.

    Raises:
        CaseError: compiling or running the model failed.
    """
    model = to_device(model, device)
    args = to_device(tuple(args), device)
    kwargs = to_device(dict(kwargs), device)
    sync = make_synchronizer(device)

    # inductor builds the cpu thread count into its kernels: set it before compiling
    threads = settings.cpu_threads if device.type == "cpu" else None
    reset_dynamo()
    compiled: Callable[..., Any] = model
    compile_time_s = 0.0

    def call() -> Any:
        return compiled(*args, **kwargs)

    def first_call() -> Any:
        nonlocal compile_time_s
        start = time.perf_counter()
        out = call()
        sync()
        compile_time_s = time.perf_counter() - start
        return out

    samples: Sequence[float] = ()
    plan: Plan | None = None
    try:
        with _torch_threads(threads):
            compiled = backend.compile(model, device)
            if runner.disabled:
                output = runner.run_once(first_call)
            else:
                output = first_call()
                warm_up(call, sync, settings)
                plan = plan_rounds(call, sync, settings)
                samples = runner.time(call, sync, plan)
    except Exception as exc:
        raise CaseError(_describe_failure(backend, device, exc)) from exc
    counts = read_counts()
    stats = Stats.from_samples(samples, plan.iterations) if plan is not None and samples else None
    return BenchmarkResult(
        backend=backend.name,
        device=device,
        median_s=None if stats is None else stats.median,
        stats=stats,
        samples=tuple(samples),
        graph_breaks=counts.graph_breaks,
        break_reasons=counts.break_reasons,
        recompiles=counts.recompiles,
        recompile_reasons=counts.recompile_reasons,
        recompile_limit_hit=counts.recompile_limit_hit,
        graph_count=counts.graph_count,
        compile_time_s=compile_time_s,
        output=output,
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
