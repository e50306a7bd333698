"""pytest-tweak's own hooks, for plugins and ``conftest.py`` files.

Registered through ``pytest_addhooks``; implement them like any pytest hook, in a
``conftest.py`` or in a plugin. A plugin that may be installed without pytest-tweak marks its
implementations ``@pytest.hookimpl(optionalhook=True)``.

- `pytest_tweak_add_backends`: contribute backends (name -> `BackendSpec`).
- `pytest_tweak_collect_configs`: add, drop or change a test's configs at collection.
- `pytest_tweak_verdict` (first result): replace the regression verdict of a case.
- `pytest_tweak_case_result`: observe each case's outcome (dashboards, uploads).
- `pytest_tweak_fingerprint`: add fields to the environment fingerprint.

pytest-tweak's defaults are implementations of these hooks too (``trylast`` where they
provide a value), so a plugin's implementation runs before them and can override them.
`implementers` names the plugins behind a hook in pytest-tweak's messages;
`fingerprint_problem` calls ``pytest_tweak_fingerprint`` and says what its implementations
did wrong.
"""

from __future__ import annotations

import sys
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

import pytest

from .fingerprint import check_fingerprint

if TYPE_CHECKING:
    from pluggy import HookCaller

    from .baselines import BaselineEntry, RunRecord
    from .case import BenchmarkResult
    from .registry import BackendSpec
    from .results import CaseRecord
    from .verdict import Judging, Verdict

#: The module holding pytest-tweak's own implementations of its hooks.
_OWN_IMPLEMENTATIONS = "pytest_tweak.plugin"


def implementers(hook: HookCaller) -> str:
    """The plugins implementing ``hook`` other than pytest-tweak itself, for messages."""
    own = sys.modules.get(_OWN_IMPLEMENTATIONS)
    names = [impl.plugin_name for impl in hook.get_hookimpls() if impl.plugin is not own]
    return ", ".join(reversed(names)) or "pytest-tweak only"


def fingerprint_problem(hook: HookCaller, config: Any, fingerprint: dict[str, Any]) -> str | None:
    """Let the plugins add their fields to ``fingerprint`` (``hook``, the
    ``pytest_tweak_fingerprint`` caller); what went wrong, naming them, or ``None``."""
    try:
        returned = [r for r in hook(config=config, fingerprint=fingerprint) if r is not None]
        problem = check_fingerprint(fingerprint)
    except Exception as exc:  # a plugin's bug: a usage error naming it, not an INTERNALERROR
        returned, problem = [], f"raised {type(exc).__name__}: {exc}"
    if returned:
        problem = f"returned {returned[0]!r}; change the fingerprint dict in place and return None"
    if problem is None:
        return None
    return f"pytest_tweak_fingerprint: {problem} (implemented by: {implementers(hook)})"


@pytest.hookspec()
def pytest_tweak_add_backends(config: pytest.Config) -> Mapping[str, BackendSpec] | None:
    """Contribute backends: return a dict of backend names to `BackendSpec`.

    Called when the first test that uses ``tweak`` is collected, and again for the first
    such test a further ``conftest.py`` implementing it applies to: a test sees the backends
    of the run's plugins and of the conftest files of its folder and those above (as any
    conftest hook). Every implementation's backends are added; a name or a config type may be
    registered once.
    pytest-tweak registers ``inductor``, ``eager``, ``aot_eager``, ``torchao`` and
    ``openvino`` this way. A registered backend is selected by name with
    ``@pytest.mark.tweak_backends(name, ...)``, and its config objects are accepted by
    ``@pytest.mark.tweak_configs(...)``.

    Example (``conftest.py``)::

        from dataclasses import dataclass
        import torch
        from pytest_tweak import BackendSpec

        @dataclass(frozen=True)
        class CudagraphsConfig:
            @property
            def id(self) -> str:
                return "default"

            def describe(self) -> dict:
                return {}

        class CudagraphsBackend:
            def __init__(self, config: CudagraphsConfig) -> None:
                self.config = config
                self.name = "cudagraphs"

            def compile(self, model, device=None):
                return torch.compile(model, backend="cudagraphs")

            def eager(self, model, device=None):  # speed-up base, accuracy reference
                return model

        def pytest_tweak_add_backends(config):
            return {
                "cudagraphs": BackendSpec(CudagraphsConfig, CudagraphsBackend, devices=("cuda",))
            }

    A result that is not such a dict, a name used twice, or a config type shared by two
    backends is a collection error of each test using ``tweak`` that sees it, naming the
    implementing plugins.
    """
    return None


@pytest.hookspec()
def pytest_tweak_collect_configs(metafunc: pytest.Metafunc, configs: list[Any]) -> None:
    """Add, remove or change the configs of one test, in place, at collection.

    ``configs`` holds the test's configs after its markers were read: the
    ``tweak_configs``/``tweak_backends`` markers', or the default
    ``TorchInductorBackendConfig()``. Each becomes one case per selected device. Change the
    list in place and return nothing (as with ``pytest_collection_modifyitems``). Afterwards
    every entry must be a config of a registered backend, with ids unique within its backend;
    otherwise the test fails to collect with a message naming the implementing plugins.

    Example (``conftest.py``): every test also runs without inductor's code generation::

        from pytest_tweak import AotEagerBackendConfig

        def pytest_tweak_collect_configs(metafunc, configs):
            if metafunc.definition.get_closest_marker("slow_compile") is None:
                configs.append(AotEagerBackendConfig())
    """


@pytest.hookspec(firstresult=True)
def pytest_tweak_verdict(
    item: pytest.Item,
    baseline: BaselineEntry | None,
    run: RunRecord,
    result: BenchmarkResult,
    judging: Judging,
) -> Verdict | None:
    """Decide a case's `Verdict` against its baseline; the first non-``None`` result wins.

    Called for each timed case when baselines are compared (not with ``--tweak-save`` or
    ``--benchmark-disable``), with ``baseline`` ``None`` when the baseline file has no entry
    for the case. Return ``None`` to leave the case to the next implementation; pytest-tweak's
    own, which runs last, applies its significance-aware rule (`pytest_tweak.verdict.judge`).
    A verdict whose ``failed`` is true fails the test with its ``problems`` listed.

    Args:
        item: The test; ``item.nodeid`` is the baseline key.
        baseline: The recorded entry, or ``None``.
        run: What this run measured (timing, normalized time, speed-up summaries).
        result: Everything the case measured, counts included.
        judging: The threshold, noise and metric in force for the case's device.

    Example (``conftest.py``): a plain median rule, and a hard cap on compile time::

        from pytest_tweak import Status, Verdict

        def pytest_tweak_verdict(item, baseline, run, result, judging):
            if result.compile_time_s > 60:
                return Verdict(Status.REGRESSED, problems=("compile took over a minute",))
            if baseline is None or item.get_closest_marker("strict_median") is None:
                return None  # pytest-tweak's rule decides
            slower = run.timing.median / baseline.median_s - 1
            if slower > judging.threshold_pct / 100:
                return Verdict(Status.REGRESSED, problems=(f"median +{slower:.0%}",))
            return Verdict(Status.UNCHANGED)

    Anything other than a `Verdict` or ``None`` fails the test with a message naming the
    implementing plugins.
    """
    return None


@pytest.hookspec()
def pytest_tweak_case_result(item: pytest.Item, record: CaseRecord) -> None:
    """Observe one case after its verdict: upload metrics, feed a dashboard.

    Called once per ``tweak.benchmark()`` call, after the verdict and before a regression
    fails the test. ``record`` holds the node id, device, backend, config id and description,
    the `BenchmarkResult` (``record.result``), the `Verdict` (``record.verdict``), the
    baseline entry if any, and the environment fingerprint. An exception raised here fails
    the test.

    Example (``conftest.py``): one JSON line per case::

        import json

        def pytest_tweak_case_result(item, record):
            with open("tweak-results.jsonl", "a") as out:
                out.write(json.dumps({
                    "test": record.nodeid,
                    "backend": record.backend,
                    "median_s": record.result.median_s,
                    "verdict": str(record.verdict.status),
                }) + "\\n")
    """


@pytest.hookspec()
def pytest_tweak_fingerprint(config: pytest.Config, fingerprint: dict[str, Any]) -> None:
    """Add fields to the environment fingerprint, in place.

    Called once, after collection, when a collected test uses ``tweak``. ``fingerprint``
    starts with ``python``, ``torch``, ``platform``, ``cpu``, ``cpu_count``, ``threads`` and
    the names of the selected accelerators. It is stored with each saved baseline entry, put
    into pytest-benchmark's JSON and printed under the tweak summary; a failure message names
    the fields that differ from the baseline's. Values must be JSON data; a value that is not,
    or a result returned instead of an in-place change, stops the run with a usage error
    naming the implementing plugins.

    Example (``conftest.py``)::

        import os

        def pytest_tweak_fingerprint(config, fingerprint):
            fingerprint["runner"] = os.environ.get("PERF_RUNNER_KIND", "local")  # a kind, not a job
            fingerprint.pop("platform", None)  # the kernel version churns; don't track it
    """
