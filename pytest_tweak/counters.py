"""Graph breaks and recompiles, read from dynamo's bookkeeping.

This is the one module that touches dynamo's private state; ``tests/test_counters.py`` fails
loudly when a torch release moves any of it. What it relies on (see TORCH_NOTES.md):

- ``torch._dynamo.utils.graph_break_reasons``: every graph break, data-dependent branches
  included (``counters["graph_break"]`` misses those). Breaks are recorded again on each
  recompile of a frame, so they are counted once per (reason, location).
- ``torch._dynamo.utils.get_compilation_metrics()``: one entry per frame compile; an entry
  with a ``recompile_reason`` is a recompile (dynamo has no recompile counter).
- ``torch._dynamo.reset()`` does not clear ``counters`` or the compilation metrics:
  `reset_dynamo` clears all three, so each case counts only its own compiles.
- The same compilation metrics split each compile's time: ``entire_frame_compile_time_s``
  (all of it) and ``backend_compile_time_s`` (AOTAutograd and inductor); the rest is dynamo's
  tracing and guard building. ``counters["inductor"]["fxgraph_cache_hit" | "_miss"]`` say
  whether inductor's FX-graph cache served the compiled graphs.
- ``torch._inductor.utils.fresh_cache()``: a temporary, empty cache for a cold compile.
- ``torch._logging._internal.log_registry.artifact_names``: the ``TORCH_LOGS`` artifacts.
"""

from __future__ import annotations

import contextlib
import os
import re
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field, replace
from typing import Any

import torch
import torch._dynamo
import torch._dynamo.utils as _dynamo_utils

__all__ = [
    "BreakReason",
    "CacheUse",
    "CompileCounts",
    "CompileTimes",
    "Recompile",
    "cold_caches",
    "known_log_artifacts",
    "read_counts",
    "recompile_limit",
    "reset_dynamo",
]


@dataclass(frozen=True)
class BreakReason:
    """One graph break: why, and where in the user's code.

    ``count`` is how often dynamo met it: once per compile of its frame (recompiles meet it
    again), so a count above 1 means the frame was compiled that many times.
    """

    reason: str
    filename: str | None = None
    lineno: int | None = None
    line: str | None = None
    count: int = 1

    @property
    def location(self) -> str:
        """``file:line`` of the innermost user frame (relative to the working directory when
        inside it), or ``<unknown>``."""
        if self.filename is None:
            return "<unknown>"
        return f"{_short_path(self.filename)}:{self.lineno}"

    @property
    def summary(self) -> str:
        """The first line of the reason, with dynamo's internal wording for a branch on a
        tensor's value (``generic_jump TensorVariable()``) said in words."""
        if not self.reason.strip():
            return "<no reason>"
        first = self.reason.strip().splitlines()[0]
        if first.startswith("generic_jump"):
            return f"Data-dependent branching: Python control flow on a tensor's value ({first})"
        return first

    def __str__(self) -> str:
        code = f" `{self.line.strip()}`" if self.line else ""
        times = f" (x{self.count})" if self.count > 1 else ""
        return f"{self.location}{code}: {self.summary}{times}"

    def as_dict(self) -> dict[str, Any]:
        return {
            "reason": self.summary,
            "filename": self.filename,
            "lineno": self.lineno,
            "line": self.line,
            "count": self.count,
        }


@dataclass(frozen=True)
class Recompile:
    """One recompile: the guard that failed, and the frame it belongs to."""

    reason: str
    frame: str

    def __str__(self) -> str:
        return f"{self.frame}: {self.reason}"


@dataclass(frozen=True)
class CompileTimes:
    """Seconds of compiling, split as torch reports it (summed over every frame compile).

    Attributes:
        dynamo_s: Dynamo's share: bytecode tracing, guards (the whole frame compile minus the
            backend's part).
        inductor_s: The backend's share: AOTAutograd and inductor, cache look-ups, code
            generation and C++/Triton compiles included.
        frames: Frame compiles (the first compile and each recompile of every frame).
    """

    dynamo_s: float = 0.0
    inductor_s: float = 0.0
    frames: int = 0

    def as_dict(self) -> dict[str, float | int]:
        return {"dynamo_s": self.dynamo_s, "inductor_s": self.inductor_s, "frames": self.frames}


@dataclass(frozen=True)
class CacheUse:
    """How inductor's FX-graph cache served the compiled graphs of a case.

    ``state`` is ``hit`` (every graph came from the cache), ``miss`` (every graph was
    compiled), ``partial`` (some of each) or ``none`` (no look-up: nothing compiled, or the
    caches are off).
    """

    hits: int = 0
    misses: int = 0

    @property
    def state(self) -> str:
        if self.hits and self.misses:
            return "partial"
        if self.hits:
            return "hit"
        if self.misses:
            return "miss"
        return "none"

    def as_dict(self) -> dict[str, int | str]:
        return {"state": self.state, "hits": self.hits, "misses": self.misses}


@dataclass(frozen=True)
class CompileCounts:
    """What dynamo did since the last `reset_dynamo`."""

    graph_breaks: int
    break_reasons: tuple[BreakReason, ...]
    recompiles: int
    recompile_reasons: tuple[Recompile, ...]
    graph_count: int
    recompile_limit_hit: bool
    limit_frames: tuple[str, ...] = ()
    compile_times: CompileTimes = field(default_factory=CompileTimes)
    cache: CacheUse = field(default_factory=CacheUse)


def reset_dynamo() -> None:
    """Forget every compiled frame and every count, so the next compile starts from zero.

    The on-disk inductor caches are kept: a warm cache only makes compiling faster.
    """
    torch._dynamo.reset()
    _dynamo_utils.counters.clear()
    _dynamo_utils.clear_compilation_metrics()


def recompile_limit() -> int:
    """Dynamo's per-frame recompile limit (``cache_size_limit`` before torch 2.6)."""
    config = torch._dynamo.config
    value = getattr(config, "recompile_limit", None)
    if value is None:
        value = config.cache_size_limit
    return int(value)


def read_counts() -> CompileCounts:
    """Count graph breaks, recompiles and graphs since the last `reset_dynamo`."""
    breaks = _distinct_breaks(_dynamo_utils.graph_break_reasons)
    metrics = list(_dynamo_utils.get_compilation_metrics())
    names = _frame_names(metrics)
    recompiles = tuple(
        Recompile(_first_line(m.recompile_reason), names.get(_frame_id(m), _frame_name(m)))
        for m in metrics
        if m.recompile_reason is not None
    )
    limit_frames = _limit_frames(metrics)
    graphs = int(_dynamo_utils.counters["stats"].get("unique_graphs", 0))
    inductor = _dynamo_utils.counters["inductor"]
    return CompileCounts(
        graph_breaks=len(breaks),
        break_reasons=breaks,
        recompiles=len(recompiles),
        recompile_reasons=recompiles,
        graph_count=graphs,
        recompile_limit_hit=bool(limit_frames),
        limit_frames=limit_frames,
        compile_times=_compile_times(metrics),
        cache=CacheUse(
            hits=int(inductor.get("fxgraph_cache_hit", 0)),
            misses=int(inductor.get("fxgraph_cache_miss", 0)),
        ),
    )


def _limit_frames(metrics: list[Any]) -> tuple[str, ...]:
    """The frames whose recompile limit was hit. The failing entry names no code object; its
    ``compile_id`` (``frame/attempt``) ties it to the frame's earlier compiles, which do."""

    names = _frame_names(metrics)
    found = []
    for metric in metrics:
        if _is_limit_failure(metric.fail_reason):
            found.append(names.get(_frame_id(metric), _frame_name(metric)))
    return tuple(dict.fromkeys(found))


def _frame_id(metric: Any) -> str:
    return str(getattr(metric, "compile_id", "") or "").strip("[]").split("/")[0]


def _frame_names(metrics: list[Any]) -> dict[str, str]:
    """Each frame's name (``function (file:line)``) by its id: an entry that names no code
    object (the compile the recompile limit refused) takes the name of its frame's others."""
    return {_frame_id(m): _frame_name(m) for m in metrics if getattr(m, "co_name", None)}


def _compile_times(metrics: list[Any]) -> CompileTimes:
    dynamo = inductor = 0.0
    frames = 0
    for metric in metrics:
        whole = getattr(metric, "entire_frame_compile_time_s", None)
        backend = getattr(metric, "backend_compile_time_s", None) or 0.0
        if whole is None:  # a frame that failed before its compile was timed
            continue
        frames += 1
        inductor += float(backend)
        dynamo += max(float(whole) - float(backend), 0.0)
    return CompileTimes(dynamo_s=dynamo, inductor_s=inductor, frames=frames)


@contextlib.contextmanager
def cold_caches() -> Iterator[None]:
    """Compile against empty, temporary on-disk caches and cleared in-memory ones, so the
    compile time measured is that of a first compile on a fresh machine."""
    import torch._inductor.utils as inductor_utils

    # ``fresh_inductor_cache`` before torch 2.8
    fresh = getattr(inductor_utils, "fresh_cache", None) or inductor_utils.fresh_inductor_cache
    with fresh():
        yield


def known_log_artifacts() -> tuple[str, ...]:
    """The ``TORCH_LOGS`` artifact names this torch knows (``graph_breaks``, ...)."""
    from torch._logging._internal import log_registry

    return tuple(sorted(log_registry.artifact_names))


def _distinct_breaks(reasons: Iterable[Any]) -> tuple[BreakReason, ...]:
    seen: dict[tuple[str, str | None, int | None], BreakReason] = {}
    for compile_reason in reasons:
        stack = list(getattr(compile_reason, "user_stack", None) or [])
        frame = stack[-1] if stack else None
        found = BreakReason(
            reason=str(compile_reason.reason),
            filename=getattr(frame, "filename", None),
            lineno=getattr(frame, "lineno", None),
            line=getattr(frame, "line", None),
        )
        # The same break recorded again by a recompile has the same location; a different
        # break on the same line (rare) has another reason.
        key = (found.summary, found.filename, found.lineno)
        known = seen.get(key)
        seen[key] = found if known is None else replace(known, count=known.count + 1)
    return tuple(seen.values())


def _short_path(filename: str) -> str:
    try:
        relative = os.path.relpath(filename)
    except ValueError:  # another drive on Windows
        return filename
    return filename if relative.startswith("..") else relative


def _first_line(text: str) -> str:
    """The first line, without dynamo's ``frame/compile:`` id (``0/1: tensor 'x' ...``)."""
    lines = text.strip().splitlines()
    first = lines[0] if lines else text
    return re.sub(r"^\d+/\d+: ", "", first)


def _frame_name(metric: Any) -> str:
    name = getattr(metric, "co_name", None) or "<frame>"
    filename = getattr(metric, "co_filename", None)
    lineno = getattr(metric, "co_firstlineno", None)
    return f"{name} ({_short_path(filename)}:{lineno})" if filename else name


def _is_limit_failure(fail_reason: str | None) -> bool:
    if not fail_reason:
        return False
    text = fail_reason.lower()
    return "recompile limit" in text or "recompile_limit" in text or "cache_size_limit" in text


#: Where inductor says it will not use CUDA graphs for a graph ("skipping cudagraphs due to
#: ..."): the ``cudagraphs`` artifact logger (torch >= 2.6) and, before it, ``perf_hints``.
#: Off by default, they do not propagate, but a handler on them sees every warning.
_CUDAGRAPH_LOGGERS = (
    "torch._inductor.cudagraph_utils.__cudagraphs",
    "torch._inductor.cudagraph_utils.__perf_hints",
)


@contextlib.contextmanager
def cudagraph_skips() -> Iterator[list[str]]:
    """Collect, while the block runs, the reasons inductor gives for running a graph without
    CUDA graphs (``mode="reduce-overhead"`` or ``"max-autotune"``), distinct and in order.

    The yielded list fills as the block runs. When inductor counted a skip
    (``counters["inductor"]["cudagraph_skips"]``) whose message no logger carried, the list
    ends with a placeholder reason, so the count is never lower than torch's.
    """
    import logging

    found: list[str] = []

    class _Collect(logging.Handler):
        def emit(self, record: logging.LogRecord) -> None:
            message = record.getMessage().strip()
            if "cudagraph" in message and message not in found:
                found.append(message)

    handler = _Collect(logging.WARNING)
    loggers = [logging.getLogger(name) for name in _CUDAGRAPH_LOGGERS]
    before = int(_dynamo_utils.counters["inductor"].get("cudagraph_skips", 0))
    for log in loggers:
        log.addHandler(handler)
    try:
        yield found
    finally:
        for log in loggers:
            log.removeHandler(handler)
        counted = int(_dynamo_utils.counters["inductor"].get("cudagraph_skips", 0)) - before
        if counted > 0 and not found:
            found.append(f"skipping cudagraphs ({counted} skip(s) counted; torch gave no reason)")
