"""``TORCH_LOGS`` artifacts (``graph_breaks``, ``recompiles``, ...) captured for one case.

torch writes its logs through the loggers it registers (``torch``, ``torch._dynamo``,
``torch._inductor``, ...), each with its own stderr handler and ``propagate=False``.
`capture_torch_logs` turns the artifacts on with the public ``torch._logging.set_logs``, puts a
handler that writes to memory in place of those stderr handlers for the duration, and resets
torch's log settings afterwards. When the ``TORCH_LOGS`` environment variable is set, torch
ignores ``set_logs``: what ``TORCH_LOGS`` asks for is captured instead.
"""

from __future__ import annotations

import contextlib
import io
import logging
from collections.abc import Callable, Iterator, Sequence

__all__ = ["CapturedLogs", "capture_torch_logs", "quiet_trace_log"]

#: torch's structured-trace logger (``TORCH_TRACE``), always at DEBUG.
TRACE_LOGGER = "torch.__trace"


class CapturedLogs:
    """The text torch logged while capturing."""

    def __init__(self) -> None:
        self._stream = io.StringIO()

    @property
    def text(self) -> str:
        return self._stream.getvalue()


class _ArtifactFilter(logging.Filter):
    """Keep the records of the requested artifacts (loggers named ``<module>.__<artifact>``),
    each once, and prefix them with the artifact's name as ``TORCH_LOGS`` does."""

    def __init__(self, artifacts: Sequence[str]) -> None:
        super().__init__()
        self._suffixes = {f"__{name}" for name in artifacts}

    def requested(self, record: logging.LogRecord) -> bool:
        """Whether ``record`` is of a requested artifact."""
        return record.name.rsplit(".", 1)[-1] in self._suffixes

    def filter(self, record: logging.LogRecord) -> bool:
        # the handler sits on several loggers, so a propagating record comes by more than
        # once: it is marked as this filter's (an object's id would be reused once the
        # record is freed, and drop the next one)
        if not self.requested(record) or getattr(record, "_tweak_filter", None) is self:
            return False
        record._tweak_filter = self
        record.artifact = record.name.rsplit(".", 1)[-1]
        return True


@contextlib.contextmanager
def capture_torch_logs(artifacts: Sequence[str]) -> Iterator[CapturedLogs]:
    """Turn on ``artifacts`` and capture what torch logs for them; nothing happens without
    any."""
    captured = CapturedLogs()
    if not artifacts:
        yield captured
        return
    import torch._logging

    # public API (torch.compiler docs), not listed in torch._logging's __all__
    set_logs: Callable[..., None] = torch._logging.set_logs  # type: ignore[attr-defined]
    set_logs(**dict.fromkeys(artifacts, True))
    handler = logging.StreamHandler(captured._stream)
    keep = _ArtifactFilter(artifacts)
    handler.addFilter(keep)
    handler.setFormatter(logging.Formatter("[%(artifact)s] %(message)s"))
    swapped: list[tuple[logging.Logger, list[logging.Handler]]] = []
    for name, logger in list(logging.Logger.manager.loggerDict.items()):
        if not isinstance(logger, logging.Logger) or not logger.handlers:
            continue
        if name != "torch" and not name.startswith("torch."):
            continue
        swapped.append((logger, list(logger.handlers)))
        # torch's own stderr handlers (plain StreamHandlers) give way to ours for the case;
        # anything else (pytest's log capture) stays
        kept = [h for h in logger.handlers if type(h) is not logging.StreamHandler]
        logger.handlers = [*kept, handler]
    # the other handlers (pytest's log capture) do not show them again: these records exist
    # because the case turned them on, and are shown once, as its captured tweak logs
    others = {h for _, handlers in swapped for h in handlers} | set(logging.getLogger().handlers)

    def drop(record: logging.LogRecord) -> bool:
        return not keep.requested(record)

    for other in others:
        other.addFilter(drop)
    try:
        yield captured
    finally:
        for other in others:
            other.removeFilter(drop)
        set_logs()  # torch's default levels and handlers ...
        for logger, handlers in swapped:  # ... and exactly the handlers there were before
            logger.handlers = handlers


@contextlib.contextmanager
def quiet_trace_log() -> Iterator[None]:
    """Keep torch's structured-trace records out of pytest's log capture while active.

    pytest's log capture attaches its handlers to the root logger and to every logger that
    does not propagate, torch's trace logger included; that logger is at DEBUG, so a failing
    test that compiled shows hundreds of empty ``DEBUG torch.__trace`` lines, and torch builds
    every trace payload for them. For the duration, the trace logger keeps only the handlers
    it does not share with the root logger: torch's own (the ``TORCH_TRACE`` writer) stay.
    """
    trace = logging.getLogger(TRACE_LOGGER)
    shared = set(logging.getLogger().handlers)
    removed = [h for h in trace.handlers if h in shared]
    for handler in removed:
        trace.removeHandler(handler)
    try:
        yield
    finally:
        for handler in removed:  # pytest removes them itself when its capture ends
            trace.addHandler(handler)
