"""The object behind the ``tweak`` fixture: one (device, config) case of one test."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import pytest
import torch

from .backends import TorchInductorBackend
from .case import BenchmarkResult, CaseError, run_case
from .config import TorchInductorBackendConfig
from .devices import to_device
from .measure import Plan, SyncEvery, gc_paused
from .report import failure_message
from .session import CaseRecord, TweakSession

__all__ = ["TweakFixture"]


class _PedanticRunner:
    """Time through pytest-benchmark, so its table and ``--benchmark-json`` show each case.

    ``benchmark.pedantic`` runs ``iterations`` calls per round between two timer reads; the
    `SyncEvery` wrapper makes the last call of each round wait for the device.
    """

    def __init__(self, benchmark: Any) -> None:
        self._benchmark = benchmark

    @property
    def disabled(self) -> bool:
        return bool(self._benchmark.disabled)

    def run_once(self, call: Callable[[], Any]) -> Any:
        return self._benchmark.pedantic(call, rounds=1, iterations=1)

    def time(
        self, call: Callable[[], Any], sync: Callable[[], None], plan: Plan
    ) -> Sequence[float]:
        timed = SyncEvery(call, sync, plan.iterations)
        with gc_paused():
            sync()
            self._benchmark.pedantic(
                timed, rounds=plan.rounds, iterations=plan.iterations, warmup_rounds=0
            )
        sync()
        return list(self._benchmark.stats.stats.data)


class TweakFixture:
    """What a test gets as ``tweak``.

    Attributes:
        device: The ``torch.device`` of this case.
        config: The `TorchInductorBackendConfig` of this case.
        backend: The `TorchInductorBackend` built from ``config``.
    """

    def __init__(
        self,
        request: pytest.FixtureRequest,
        session: TweakSession,
        device: str,
        config: TorchInductorBackendConfig,
    ) -> None:
        self._request = request
        self._session = session
        self.device = torch.device(device)
        self.config = config
        self.backend = TorchInductorBackend(config)
        self.result: BenchmarkResult | None = None

    def __repr__(self) -> str:
        return f"<tweak device={self.device} config={self.config.id}>"

    def compile(self, model: Callable[..., Any]) -> Callable[..., Any]:
        """Move ``model`` to this case's device and compile it with this case's config."""
        return self.backend.compile(to_device(model, self.device), self.device)

    def benchmark(self, model: Callable[..., Any], *args: Any, **kwargs: Any) -> BenchmarkResult:
        """Compile, warm up and time ``model(*args, **kwargs)`` on this case's device.

        Tensors in the arguments are moved to the device. Graph breaks and recompiles are
        counted from dynamo. When the case has a baseline, a regression fails the test here.
        Can be called once per test (pytest-benchmark records one benchmark per test).
        """
        if self.result is not None:
            raise RuntimeError(
                "tweak.benchmark() can be called once per test; write one test per model"
            )
        benchmark = self._request.getfixturevalue("benchmark")
        runner = _PedanticRunner(benchmark)
        nodeid = self._request.node.nodeid
        try:
            result = run_case(
                model,
                args,
                kwargs,
                backend=self.backend,
                device=self.device,
                settings=self._session.options.settings,
                runner=runner,
            )
        except CaseError as exc:
            pytest.fail(f"pytest-tweak: {exc}", pytrace=False)
        self.result = result
        benchmark.extra_info["tweak"] = _extra_info(self, result)
        session = self._session
        verdict = session.judge(nodeid, result, compare=not runner.disabled)
        session.add(
            CaseRecord(
                nodeid=nodeid,
                device=self.device.type,
                config_id=self.config.id,
                config=self.config.describe(),
                result=result,
                verdict=verdict,
                baseline=session.baselines.get(nodeid),
            )
        )
        benchmark.extra_info["tweak"]["verdict"] = str(verdict.status)
        if verdict.failed:
            pytest.fail(
                failure_message(nodeid, verdict, result, str(session.options.baseline_path)),
                pytrace=False,
            )
        return result


def _extra_info(fixture: TweakFixture, result: BenchmarkResult) -> dict[str, Any]:
    return {
        "device": fixture.device.type,
        "config": fixture.config.id,
        "graph_breaks": result.graph_breaks,
        "break_reasons": [reason.as_dict() for reason in result.break_reasons],
        "recompiles": result.recompiles,
        "recompile_reasons": [str(r) for r in result.recompile_reasons],
        "graph_count": result.graph_count,
        "compile_time_s": result.compile_time_s,
    }
