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
"""

from __future__ import annotations

import os
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

import torch
import torch._dynamo
import torch._dynamo.utils as _dynamo_utils

__all__ = [
    "BreakReason",
    "CompileCounts",
    "Recompile",
    "read_counts",
    "recompile_limit",
    "reset_dynamo",
]


@dataclass(frozen=True)
class BreakReason:
    """One graph break: why, and where in the user's code."""

    reason: str
    filename: str | None = None
    lineno: int | None = None
    line: str | None = None

    @property
    def location(self) -> str:
        """``file:line`` of the innermost user frame (relative to the working directory when
        inside it), or ``<unknown>``."""
        if self.filename is None:
            return "<unknown>"
        return f"{_short_path(self.filename)}:{self.lineno}"

    @property
    def summary(self) -> str:
        """The first line of the reason."""
        return self.reason.strip().splitlines()[0] if self.reason.strip() else "<no reason>"

    def __str__(self) -> str:
        code = f" `{self.line.strip()}`" if self.line else ""
        return f"{self.location}{code}: {self.summary}"

    def as_dict(self) -> dict[str, Any]:
        return {
            "reason": self.summary,
            "filename": self.filename,
            "lineno": self.lineno,
            "line": self.line,
        }


@dataclass(frozen=True)
class Recompile:
    """One recompile: the guard that failed, and the frame it belongs to."""

    reason: str
    frame: str

    def __str__(self) -> str:
        return f"{self.frame}: {self.reason}"


@dataclass(frozen=True)
class CompileCounts:
    """What dynamo did since the last `reset_dynamo`."""

    graph_breaks: int
    break_reasons: tuple[BreakReason, ...]
    recompiles: int
    recompile_reasons: tuple[Recompile, ...]
    graph_count: int
    recompile_limit_hit: bool


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
    recompiles = tuple(
        Recompile(_first_line(m.recompile_reason), _frame_name(m))
        for m in metrics
        if m.recompile_reason is not None
    )
    limit_hit = any(_is_limit_failure(m.fail_reason) for m in metrics)
    graphs = int(_dynamo_utils.counters["stats"].get("unique_graphs", 0))
    return CompileCounts(
        graph_breaks=len(breaks),
        break_reasons=breaks,
        recompiles=len(recompiles),
        recompile_reasons=recompiles,
        graph_count=graphs,
        recompile_limit_hit=limit_hit,
    )


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
        seen.setdefault(key, found)
    return tuple(seen.values())


def _short_path(filename: str) -> str:
    try:
        relative = os.path.relpath(filename)
    except ValueError:  # another drive on Windows
        return filename
    return filename if relative.startswith("..") else relative


def _first_line(text: str) -> str:
    lines = text.strip().splitlines()
    return lines[0] if lines else text


def _frame_name(metric: Any) -> str:
    name = getattr(metric, "co_name", None) or "<frame>"
    filename = getattr(metric, "co_filename", None)
    lineno = getattr(metric, "co_firstlineno", None)
    return f"{name} ({filename}:{lineno})" if filename else name


def _is_limit_failure(fail_reason: str | None) -> bool:
    if not fail_reason:
        return False
    text = fail_reason.lower()
    return "recompile limit" in text or "recompile_limit" in text or "cache_size_limit" in text
