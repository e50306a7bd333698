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

__all__ = ["CapturedLogs", "capture_torch_logs"]


class CapturedLogs:
    """The text torch logged while capturing."""

    def __init__(self) -> None:
        self._stream = io.StringIO()

    @property
    def text(self) -> str:
        return self._stream.getvalue()


@contextlib.contextmanager
def capture_torch_logs(artifacts: Sequence[str]) -> Iterator[CapturedLogs]:
    """Turn on ``artifacts`` and capture what torch logs; nothing happens without any."""
    captured = CapturedLogs()
    if not artifacts:
        yield captured
        return
    import torch._logging

    # public API (torch.compiler docs), not listed in torch._logging's __all__
    set_logs: Callable[..., None] = torch._logging.set_logs  # type: ignore[attr-defined]
    set_logs(**dict.fromkeys(artifacts, True))
    handler = logging.StreamHandler(captured._stream)
    swapped: list[tuple[logging.Logger, list[logging.Handler]]] = []
    for name, logger in list(logging.Logger.manager.loggerDict.items()):
        if not isinstance(logger, logging.Logger) or not logger.handlers:
            continue
        if name != "torch" and not name.startswith("torch."):
            continue
        formatter = logger.handlers[0].formatter
        if formatter is not None and handler.formatter is None:
            handler.setFormatter(formatter)
        swapped.append((logger, list(logger.handlers)))
        logger.handlers = [handler]
    try:
        yield captured
    finally:
        for logger, handlers in swapped:
            logger.handlers = handlers
        set_logs()
