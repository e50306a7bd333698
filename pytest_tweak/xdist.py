"""What crosses from a pytest-xdist worker to the controller, and taking it in.

Each finished case crosses once, on its test's report (`pytest_tweak.results.CaseResult`,
``report.tweak_case``); pytest serializes it with the report. What is not a case crosses in
the worker's ``workeroutput`` when it finishes: its device-lock holds, the cases whose baseline
came from another environment, the fingerprint, the devices it could not use, and the usage
error that stopped it after collection.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import pytest

from .runstate import LockUse, RunState

__all__ = ["WORKER_OUTPUT_KEY", "ControllerHooks", "absorb", "worker_output"]

#: The key of pytest-tweak's part of a worker's ``workeroutput``.
WORKER_OUTPUT_KEY = "pytest_tweak"


def worker_output(state: RunState, worker: str, rootdir: Path) -> dict[str, Any]:
    """What a worker sends the controller when it finishes, in plain JSON values."""
    return {
        "worker": worker,
        "gone": state.gone_entries(rootdir),  # the worker collected; the controller did not
        "lock_uses": [dataclasses.asdict(use) for use in state.lock_uses],
        "environment_changed": state.environment_changed,
        "fingerprint": state.fingerprint,
        "missing_devices": {d: list(found) for d, found in state.missing_devices.items()},
        "usage_error": state.usage_error,
    }


def absorb(state: RunState, output: Mapping[str, Any]) -> None:
    """Take in what a worker sent (`worker_output`); on the controller."""
    worker = str(output.get("worker", "?"))
    if worker not in state.workers:  # a crashed worker's replacement reuses its id
        state.workers.append(worker)
    state.lock_uses += [LockUse(**use) for use in output.get("lock_uses", ())]
    state.gone_on_workers.update(str(key) for key in output.get("gone", ()))
    state.environment_changed.update(output.get("environment_changed", {}))
    if not state.fingerprint:
        state.fingerprint = dict(output.get("fingerprint", {}))
    for device, (reason, count) in output.get("missing_devices", {}).items():
        state.missing_devices[device] = (str(reason), int(count))  # each worker collects all


class ControllerHooks:
    """On the pytest-xdist controller: takes in what each worker sent when it finished."""

    def __init__(self, state: RunState) -> None:
        self.state = state

    @pytest.hookimpl(optionalhook=True)
    def pytest_testnodedown(self, node: Any, error: Any) -> None:
        output = getattr(node, "workeroutput", {}).get(WORKER_OUTPUT_KEY)
        if output is None:
            return
        if output.get("usage_error"):  # the worker stopped after collection: the run stops
            raise pytest.UsageError(str(output["usage_error"]))  # as it does without xdist
        absorb(self.state, output)
