"""Graph breaks and recompiles, read from dynamo's bookkeeping.

This is the one module that touches dynamo's private state; ``tests/test_counters.py`` fails
loudly when a torch release moves any of it. What it relies on (see TORCH_NOTES.md):

- The ``graph_breaks`` logging artifact (``TORCH_LOGS=graph_breaks``): dynamo logs each graph
  break it meets, in a frame that compiled a graph or in one that compiled none, as "Graph
  break in user code at FILE:LINE" with its reason (and on recent torch the graph-break type,
  explanation, hints and a ``gbNNNN`` documentation link). `watch_graph_breaks` turns the
  artifact's loggers (found through ``torch._logging._internal.log_registry``) on for a case
  and reads their records; the records go nowhere else unless the user asked for them.
  ``torch._dynamo.utils.graph_break_reasons`` is not used: in torch 2.13 a
  ``GraphCompileReason`` adds itself there when it is built, provisional reasons and a graph's
  own compile reason (``step_unsupported``, ``generic_jump``) included, and a frame that
  compiled no graph adds nothing.
- ``torch._dynamo.utils.get_compilation_metrics()``: one entry per frame compile; an entry
  with a ``recompile_reason`` is a recompile (dynamo has no recompile counter).
- ``torch._dynamo.reset()`` does not clear ``counters`` or the compilation metrics:
  `reset_dynamo` clears all three, so each case counts only its own compiles.
- The same compilation metrics split each compile's time: ``entire_frame_compile_time_s``
  (all of it) and ``backend_compile_time_s`` (AOTAutograd and inductor); the rest is dynamo's
  tracing and guard building. ``counters["inductor"]["fxgraph_cache_hit" | "_miss"]`` say
  whether inductor's FX-graph cache served the compiled graphs.
- ``torch._inductor.utils.fresh_cache()``: a temporary, empty cache for a cold compile.
- ``torch._logging._internal.log_registry``: the ``TORCH_LOGS`` artifact names and the names
  of each artifact's loggers.
"""

from __future__ import annotations

import contextlib
import linecache
import logging
import re
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

import torch
import torch._dynamo
import torch._dynamo.utils as _dynamo_utils

from .formatting import short_path

__all__ = [
    "BreakReason",
    "CacheUse",
    "CompileCounts",
    "CompileTimes",
    "GraphBreakLog",
    "Recompile",
    "cold_caches",
    "decorated_forwards",
    "graph_break_loggers",
    "known_log_artifacts",
    "logged_break",
    "read_counts",
    "recompile_limit",
    "reset_dynamo",
    "watch_graph_breaks",
]


@dataclass(frozen=True)
class BreakReason:
    """One graph break: a site (file, line) where dynamo ended a graph or skipped a frame, as
    ``TORCH_LOGS=graph_breaks`` logs it.

    Attributes:
        reason: What dynamo could not trace: torch's graph-break type (``Unsupported
            Tensor.item() call with capture_scalar_outputs=False``) where the installed torch
            gives one, else the first line of the logged reason.
        filename: The site's file; ``None`` when torch named none.
        lineno: The site's line.
        line: The source text at the site, when the file can be read.
        count: How often dynamo met the break: once per traced frame that reached it. A
            break in a function called from several compiled frames (nested calls, the
            frames resumed after an earlier break, recompiles) is met once by each.
        gb_id: torch's graph-break registry id (``gb0291``); ``None`` where the installed
            torch has no registry entry for it (older torch: always).
        explanation: torch's explanation of the break, on one line.
        hint: torch's first hint on what to do about it.
        link: The documentation page of ``gb_id``.
    """

    reason: str
    filename: str | None = None
    lineno: int | None = None
    line: str | None = None
    count: int = 1
    gb_id: str | None = None
    explanation: str | None = None
    hint: str | None = None
    link: str | None = None

    @property
    def location(self) -> str:
        """``file:line`` of the site (relative to the working directory when inside it), or
        ``<unknown>``."""
        if self.filename is None:
            return "<unknown>"
        return f"{short_path(self.filename)}:{self.lineno}"

    @property
    def summary(self) -> str:
        """The first line of the reason."""
        first = self.reason.strip().splitlines()
        return first[0] if first else "<no reason>"

    def __str__(self) -> str:
        code = f" `{self.line.strip()}`" if self.line else ""
        times = f" (x{self.count})" if self.count > 1 else ""
        return f"{self.location}{code}: {self.summary}{times}"

    def advice(self) -> list[str]:
        """torch's own words on the break, one line each: the id with the explanation, the
        first hint, the documentation link; empty where torch gives none."""
        lines = []
        if self.explanation or self.gb_id:
            lines.append(" ".join(p for p in (self.gb_id, self.explanation) if p))
        if self.hint:
            lines.append(f"hint: {self.hint}")
        if self.link:
            lines.append(f"see {self.link}")
        return lines

    def as_dict(self) -> dict[str, Any]:
        """As the JSON report writes it."""
        return {
            "reason": self.summary,
            "filename": self.filename,
            "lineno": self.lineno,
            "line": self.line,
            "count": self.count,
            "gb_id": self.gb_id,
            "explanation": self.explanation,
            "hint": self.hint,
            "link": self.link,
        }


class GraphBreakLog(logging.Handler):
    """The graph breaks dynamo logs while `watch_graph_breaks` is active, one per site."""

    def __init__(self) -> None:
        super().__init__(logging.DEBUG)
        self._sites: dict[tuple[str | None, int | None], BreakReason] = {}
        self._last: logging.LogRecord | None = None

    def emit(self, record: logging.LogRecord) -> None:
        if record is self._last:  # one record handled twice (a watched logger's ancestor)
            return
        self._last = record
        try:
            found = logged_break(record.getMessage(), record.exc_info)
        except Exception:  # never fail a case over a record this torch words differently
            return
        if found is None:
            return
        key = (found.filename, found.lineno)
        known = self._sites.get(key)
        self._sites[key] = found if known is None else replace(known, count=known.count + 1)

    def breaks(self) -> tuple[BreakReason, ...]:
        """The distinct sites, in the order dynamo first met them."""
        return tuple(self._sites.values())


@contextlib.contextmanager
def watch_graph_breaks(into: GraphBreakLog | None = None) -> Iterator[GraphBreakLog]:
    """Read the graph breaks dynamo logs to the ``graph_breaks`` artifact while active, into
    ``into`` (a new `GraphBreakLog` by default).

    The artifact's loggers are turned on for the duration when they are off, and then send
    their records nowhere else; when the user turned them on (``TORCH_LOGS``,
    ``--tweak-logs``), their output is left as it is. Levels and handlers are restored
    afterwards.
    """
    watch = GraphBreakLog() if into is None else into
    saved = []
    for logger in graph_break_loggers():
        saved.append((logger, logger.level, logger.propagate))
        if not logger.isEnabledFor(logging.DEBUG):
            logger.setLevel(logging.DEBUG)
            logger.propagate = False
        logger.addHandler(watch)
    try:
        yield watch
    finally:
        for logger, level, propagate in saved:
            logger.removeHandler(watch)
            logger.setLevel(level)
            logger.propagate = propagate


def graph_break_loggers() -> list[logging.Logger]:
    """The loggers of the ``graph_breaks`` artifact (dynamo's ``symbolic_convert``,
    ``convert_frame``, ...), as torch registered them."""
    # importing them registers the artifact's loggers
    import torch._dynamo.convert_frame
    import torch._dynamo.symbolic_convert  # noqa: F401
    from torch._logging._internal import log_registry

    known: set[str] = log_registry.get_artifact_log_qnames()  # type: ignore[no-untyped-call]
    names = sorted(n for n in known if n.endswith(_ARTIFACT))
    return [logging.getLogger(name) for name in names]


_ARTIFACT = ".__graph_breaks"
# "Graph break in user code at F:L", "Graph break (user stack suppressed due to duplicate
# graph break) in user code at F:L" (2.13), "Graph break (details suppressed) ..." (older)
_SITE = re.compile(r"Graph break(?: \([^)\n]*\))? in user code at (?P<file>.+):(?P<line>\d+)\n")
_REASON = re.compile(r"^(?:Graph Break )?Reason: ", re.MULTILINE)
_REASON_END = re.compile(
    r"\n\s*\n(?:Stack variable source attribution|User code traceback)|\nUser code"
)
_SKIP = "Graph break: torch.compile cannot properly resume"
_LINK = re.compile(r"https?://\S+?/(?P<id>gb\d+)\.html")


def logged_break(message: str, exc_info: Any = None) -> BreakReason | None:
    """The graph break one record of the ``graph_breaks`` artifact reports, or ``None`` for
    a record that names no site.

    Two wordings name a site: "Graph break ... in user code at FILE:LINE" followed by the
    reason (a frame traced up to the break), and "Graph break: torch.compile cannot properly
    resume ..." with the exception, whose stack ends at the site (a frame skipped).
    """
    site = _SITE.match(message + "\n")
    if site is not None:
        reason = _REASON.search(message, site.end() - 1)
        text = "" if reason is None else message[reason.end() :]
        end = _REASON_END.search(text)
        text = text if end is None else text[: end.start()]
        return _described(text, site["file"], int(site["line"]))
    if message.startswith(_SKIP) and exc_info and len(exc_info) > 1:
        exc = exc_info[1]
        stack = list(getattr(exc, "real_stack", None) or [])
        if not stack:
            return None
        frame = stack[-1]
        text = str(getattr(exc, "msg", None) or exc)
        return _described(text, getattr(frame, "filename", None), getattr(frame, "lineno", None))
    return None


def _described(text: str, filename: str | None, lineno: int | None) -> BreakReason:
    """Split a logged reason into torch's graph-break type, explanation, first hint and
    documentation link (recent torch), or keep its first line (older torch)."""
    lines = text.splitlines()
    source = linecache.getline(filename, lineno).strip() if filename and lineno else ""
    at = next((i for i, line in enumerate(lines) if line.startswith(_EXPLANATION)), None)
    if at is None:
        first = next((line.strip() for line in lines if line.strip()), "")
        return BreakReason(first or "<no reason>", filename, lineno, source or None)
    # the type is the last unindented line above the explanation ("  Higher Order
    # Operator: ..." may sit between them)
    kind = next((line.strip() for line in reversed(lines[:at]) if not line.startswith(" ")), "")
    hint_at = next((i for i in range(at + 1, len(lines)) if lines[i].startswith(_HINT)), None)
    link = _LINK.search(text)
    return BreakReason(
        reason=kind or lines[at].strip(),
        filename=filename,
        lineno=lineno,
        line=source or None,
        gb_id=None if link is None else link["id"],
        explanation=_paragraph(lines, at, _EXPLANATION),
        hint=None if hint_at is None else _paragraph(lines, hint_at, _HINT),
        link=None if link is None else link.group(0),
    )


_EXPLANATION = "  Explanation: "
_HINT = "  Hint: "


def _paragraph(lines: list[str], start: int, prefix: str) -> str:
    """The text after ``prefix`` on ``lines[start]`` and its continuation lines (indented
    deeper), on one line."""
    parts = [lines[start][len(prefix) :]]
    for line in lines[start + 1 :]:
        if not line.startswith("    "):
            break
        parts.append(line)
    return " ".join(" ".join(parts).split())


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
        """As the JSON report and the baseline file write it."""
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
        """``hit``, ``miss``, ``partial`` (some of each) or ``none`` (no lookups)."""
        if self.hits and self.misses:
            return "partial"
        if self.hits:
            return "hit"
        if self.misses:
            return "miss"
        return "none"

    def as_dict(self) -> dict[str, int | str]:
        """As the JSON report and the baseline file write it."""
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


def read_counts(
    graph_breaks: GraphBreakLog,
    model: str | None = None,
    decorated: Mapping[tuple[str, str, int], str] | None = None,
) -> CompileCounts:
    """Count graph breaks (those ``graph_breaks`` watched), and recompiles and graphs since
    the last `reset_dynamo`. ``model``: the compiled model's class name, which names the frame
    dynamo compiles for a model whose ``forward`` is torch's own (`_frame_name`);
    ``decorated``: `decorated_forwards` of the model, which name a decorator's frame."""
    breaks = graph_breaks.breaks()
    metrics = list(_dynamo_utils.get_compilation_metrics())
    names = _frame_names(metrics, model, decorated or {})
    recompiles = tuple(
        Recompile(_first_line(m.recompile_reason), _frame_of(m, names))
        for m in metrics
        if m.recompile_reason is not None
    )
    limit_frames = _limit_frames(metrics, names)
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


def _limit_frames(metrics: list[Any], names: dict[str, str]) -> tuple[str, ...]:
    """The frames whose recompile limit was hit (``names``: `_frame_names`)."""
    found = [_frame_of(m, names) for m in metrics if _is_limit_failure(m.fail_reason)]
    return tuple(dict.fromkeys(found))


def _frame_id(metric: Any) -> str:
    return str(getattr(metric, "compile_id", "") or "").strip("[]").split("/")[0]


def _frame_names(
    metrics: list[Any], model: str | None, decorated: Mapping[tuple[str, str, int], str]
) -> dict[str, str]:
    """Each frame's name (``function (file:line)``) by its id, from the entries that name a
    code object (`_frame_of` lends it to those that do not)."""
    names = {}
    for metric in metrics:
        if getattr(metric, "co_name", None):
            around = decorated.get(_code_key(metric))
            name = _frame_name(metric, model)
            names[_frame_id(metric)] = name if around is None else f"{name}, {around}"
    return names


def _code_key(metric: Any) -> tuple[str, str, int]:
    return (
        str(getattr(metric, "co_name", "")),
        str(getattr(metric, "co_filename", "")),
        int(getattr(metric, "co_firstlineno", 0) or 0),
    )


def decorated_forwards(model: Any) -> dict[tuple[str, str, int], str]:
    """What the frames of the decorators around the ``forward`` of ``model`` and its
    submodules wrap (``the decorator around Model.forward (file:line)``), by code location
    (name, file, first line), for `read_counts` to add to the frame's name. A decorated
    forward (a Hugging Face model's ``can_return_tuple``) is compiled as its decorator's
    wrapper frame, whose own name (``wrapper (transformers/utils/generic.py:1075)``) says
    nothing of the model; one wrapper's code serves every forward it decorates, so a location
    can stand for several."""
    around: dict[tuple[str, str, int], list[str]] = {}
    modules = model.modules() if isinstance(model, torch.nn.Module) else ()
    for cls in dict.fromkeys(type(module) for module in modules):
        forward: Any = getattr(cls, "forward", None)
        wrappers: list[Any] = []
        # a bound: a __wrapped__ that leads back to itself would loop forever
        while callable(getattr(forward, "__wrapped__", None)) and len(wrappers) < 16:
            if hasattr(forward, "__code__"):
                wrappers.append(forward.__code__)
            forward = forward.__wrapped__
        code = getattr(forward, "__code__", None)
        if code is None:
            continue
        own = f"{cls.__name__}.forward ({short_path(code.co_filename)}:{code.co_firstlineno})"
        for wrapper in wrappers:
            key = (wrapper.co_name, wrapper.co_filename, wrapper.co_firstlineno)
            forwards = around.setdefault(key, [])
            if own not in forwards:  # one class's chain may hold one wrapper twice
                forwards.append(own)
    return {
        key: "the decorator around "
        + (forwards[0] if len(forwards) == 1 else f"one of {', '.join(forwards)}")
        for key, forwards in around.items()
    }


def _frame_of(metric: Any, names: dict[str, str]) -> str:
    """The name of ``metric``'s frame. An entry that names no code object (the compile the
    recompile limit refused) takes it from its frame's others: its ``compile_id``
    (``frame/attempt``) ties them together."""
    return names.get(_frame_id(metric), _frame_name(metric))


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


def _first_line(text: str) -> str:
    """The first line, without dynamo's ``frame/compile:`` id (``0/1: tensor 'x' ...``)."""
    lines = text.strip().splitlines()
    first = lines[0] if lines else text
    return re.sub(r"^\d+/\d+: ", "", first)


def _frame_name(metric: Any, model: str | None = None) -> str:
    name = getattr(metric, "co_name", None) or "<frame>"
    filename = getattr(metric, "co_filename", None)
    lineno = getattr(metric, "co_firstlineno", None)
    if name == "inner" and filename and Path(filename).parts[-2:] == _DYNAMO_WRAPPER:
        # `torch.compile` of a module whose forward is torch's own (`nn.Sequential`, ...)
        # compiles dynamo's `wrap_inline` around the module's call: name the model, not it
        return f"{model or 'the model'}.forward (torch's own; compiled through dynamo's wrapper)"
    return f"{name} ({short_path(filename)}:{lineno})" if filename else name


#: The file of dynamo's ``wrap_inline``, whose ``inner`` frame stands for a module's call.
_DYNAMO_WRAPPER = ("_dynamo", "external_utils.py")


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
