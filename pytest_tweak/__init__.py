"""pytest-tweak: the speed of torch.compile'd models as a tested, CI-gated property.

The names below are imported on first use, so loading the pytest plugin (which imports this
package) does not import torch.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # explicit re-exports, for type checkers
    from .accuracy import Accuracy as Accuracy
    from .accuracy import Tolerance as Tolerance
    from .backend_configs import AotEagerBackendConfig as AotEagerBackendConfig
    from .backend_configs import EagerBackendConfig as EagerBackendConfig
    from .backend_configs import OpenVINOBackendConfig as OpenVINOBackendConfig
    from .backend_configs import TorchAOBackendConfig as TorchAOBackendConfig
    from .backend_configs import TorchInductorBackendConfig as TorchInductorBackendConfig
    from .backends import AotEagerBackend as AotEagerBackend
    from .backends import Backend as Backend
    from .backends import EagerBackend as EagerBackend
    from .backends import OpenVINOBackend as OpenVINOBackend
    from .backends import TorchAOBackend as TorchAOBackend
    from .backends import TorchInductorBackend as TorchInductorBackend
    from .baselines import BaselineEntry as BaselineEntry
    from .baselines import RunRecord as RunRecord
    from .case import BenchmarkResult as BenchmarkResult
    from .case import CaseError as CaseError
    from .counters import BreakReason as BreakReason
    from .counters import CacheUse as CacheUse
    from .counters import CompileTimes as CompileTimes
    from .counters import Recompile as Recompile
    from .fixture import TweakFixture as TweakFixture
    from .measure import MeasureSettings as MeasureSettings
    from .plugin import TweakWarning as TweakWarning
    from .registry import BackendSpec as BackendSpec
    from .results import CaseRecord as CaseRecord
    from .stats import Summary as Summary
    from .tuning import BestOfStrategy as BestOfStrategy
    from .tuning import Module as Module
    from .tuning import OneBackendStrategy as OneBackendStrategy
    from .tuning import TuneResult as TuneResult
    from .tuning import tune as tune
    from .verdict import Judging as Judging
    from .verdict import Status as Status
    from .verdict import Verdict as Verdict

__version__ = "0.1.0"

_EXPORTS = {
    "AotEagerBackend": "backends",
    "Accuracy": "accuracy",
    "Tolerance": "accuracy",
    "Backend": "backends",
    "EagerBackend": "backends",
    "OpenVINOBackend": "backends",
    "TorchAOBackend": "backends",
    "TorchInductorBackend": "backends",
    "BaselineEntry": "baselines",
    "RunRecord": "baselines",
    "BenchmarkResult": "case",
    "CaseError": "case",
    "AotEagerBackendConfig": "backend_configs",
    "EagerBackendConfig": "backend_configs",
    "OpenVINOBackendConfig": "backend_configs",
    "TorchAOBackendConfig": "backend_configs",
    "TorchInductorBackendConfig": "backend_configs",
    "BreakReason": "counters",
    "CacheUse": "counters",
    "CompileTimes": "counters",
    "Recompile": "counters",
    "MeasureSettings": "measure",
    "BackendSpec": "registry",
    "CaseRecord": "results",
    "Summary": "stats",
    "TweakFixture": "fixture",
    "TweakWarning": "plugin",
    "BestOfStrategy": "tuning",
    "Module": "tuning",
    "OneBackendStrategy": "tuning",
    "TuneResult": "tuning",
    "tune": "tuning",
    "Judging": "verdict",
    "Status": "verdict",
    "Verdict": "verdict",
}

__all__ = sorted(_EXPORTS)


def __getattr__(name: str) -> Any:
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module 'pytest_tweak' has no attribute {name!r}")
    value = getattr(importlib.import_module(f".{module}", __name__), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted({*globals(), *_EXPORTS})  # a name imported once is in both
