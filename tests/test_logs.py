"""TORCH_LOGS artifacts captured for one case, and torch's logging left as it was."""

from __future__ import annotations

import logging

import torch

from pytest_tweak.counters import reset_dynamo
from pytest_tweak.logs import capture_torch_logs


def _breaking(x: torch.Tensor) -> torch.Tensor:
    x = x + 1
    print("", end="")
    return x * 2


def _torch_handlers() -> dict[str, list[logging.Handler]]:
    return {
        name: list(logger.handlers)
        for name, logger in logging.Logger.manager.loggerDict.items()
        if isinstance(logger, logging.Logger) and name.startswith("torch") and logger.handlers
    }


def test_the_asked_artifacts_are_captured_and_nothing_else(capfd) -> None:
    reset_dynamo()
    with capture_torch_logs(["graph_breaks"]) as logs:
        torch.compile(_breaking, backend="eager")(torch.ones(3))
    text = logs.text
    assert text.startswith("[__graph_breaks] Graph break in user code at ")
    assert "test_logs.py" in text and "Failed to trace builtin operator" in text
    assert "__trace" not in text and "[__recompiles]" not in text
    # torch's own stderr handler gave way for the case: nothing printed twice
    assert "Graph break in user code" not in capfd.readouterr().err


def test_torch_logging_is_reset_afterwards_and_nothing_is_captured_without_artifacts() -> None:
    with capture_torch_logs([]) as logs:
        reset_dynamo()
        torch.compile(_breaking, backend="eager")(torch.ones(3))
    assert logs.text == ""
    before = _torch_handlers()  # after a compile: torch sets up its trace logger lazily
    with capture_torch_logs(["recompiles"]):
        pass
    reset_dynamo()
    with capture_torch_logs([]) as logs:
        torch.compile(_breaking, backend="eager")(torch.ones(3))
    assert logs.text == ""
    assert {name: len(h) for name, h in _torch_handlers().items()} == {
        name: len(h) for name, h in before.items()
    }


def test_the_filter_keeps_every_record_once_though_freed_records_ids_come_back() -> None:
    """Records were remembered by ``id()``: a freed record's id is reused by the next, which
    was then dropped as seen (100 records in turn: 2 kept; eleventh trial)."""
    import logging

    from pytest_tweak.logs import _ArtifactFilter

    keep = _ArtifactFilter(["graph_breaks"])
    kept = 0
    for n in range(100):
        record = logging.LogRecord(
            "torch._dynamo.__graph_breaks", logging.DEBUG, __file__, n, f"break {n}", None, None
        )
        kept += keep.filter(record)
        assert not keep.filter(record)  # the same record, again (propagated): once
        del record
    assert kept == 100


def test_the_captured_artifacts_are_not_shown_again_by_pytests_log_capture(caplog) -> None:
    """``-rA`` showed each record twice: as the case's tweak logs and, at DEBUG, in pytest's
    "Captured log call" (twelfth trial's list)."""
    caplog.set_level(logging.DEBUG)
    reset_dynamo()
    with capture_torch_logs(["graph_breaks"]) as logs:
        torch.compile(_breaking, backend="eager")(torch.ones(3))
    assert "Graph break in user code" in logs.text
    assert not [r for r in caplog.records if r.name.endswith("__graph_breaks")]
    # pytest's handler gets every record again afterwards
    logging.getLogger().warning("after the case")
    assert caplog.records[-1].getMessage() == "after the case"
    assert not caplog.handler.filters
