"""The pytest11 entry point of the example plugin.

- registers the ``inference_mode`` backend (``pytest_tweak_add_backends``), so a suite can
  write ``@pytest.mark.tweak_backends("inference_mode")`` or pass ``InferenceModeConfig``
  objects to ``@pytest.mark.tweak_configs``;
- writes one JSON line per case to ``--tweak-jsonl=PATH`` (``pytest_tweak_case_result``),
  the shape of an uploader to a metrics store.

The hook implementations are ``optionalhook``: with pytest-tweak uninstalled, pytest does not
reject them. torch is imported only when the backend is used.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

import pytest

if TYPE_CHECKING:
    from pytest_tweak import BackendSpec, CaseRecord


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.getgroup("tweak-jsonl", "pytest-tweak-jsonl-example").addoption(
        "--tweak-jsonl",
        metavar="PATH",
        default=None,
        help="append one JSON line per pytest-tweak case to PATH",
    )


@pytest.hookimpl(optionalhook=True)
def pytest_tweak_add_backends(config: pytest.Config) -> Mapping[str, BackendSpec]:
    from pytest_tweak import BackendSpec

    from .backend import InferenceModeBackend, InferenceModeConfig

    return {"inference_mode": BackendSpec(InferenceModeConfig, InferenceModeBackend)}


@pytest.hookimpl(optionalhook=True)
def pytest_tweak_case_result(item: pytest.Item, record: CaseRecord) -> None:
    path = item.config.getoption("tweak_jsonl")
    if not path:
        return
    result = record.result
    line: dict[str, Any] = {
        "test": record.nodeid,
        "device": record.device,
        "backend": record.backend,
        "config": record.config_id,
        "median_s": result.median_s,
        "speedup": None if result.speedup is None else result.speedup.median,
        "graph_breaks": result.graph_breaks,
        "recompiles": result.recompiles,
        "compile_time_s": result.compile_time_s,
        "verdict": str(record.verdict.status),
        "fingerprint": dict(record.fingerprint),
    }
    with open(item.config.invocation_params.dir / path, "a", encoding="utf-8") as out:
        out.write(json.dumps(line, sort_keys=True) + "\n")
