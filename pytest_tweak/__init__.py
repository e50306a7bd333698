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
    from .backends import Backend as Backend
    from .backends import EagerBackend as EagerBackend
    from .backends import TorchInductorBackend as TorchInductorBackend
    from .case import BenchmarkResult as BenchmarkResult
    from .case import CaseError as CaseError
    from .config import TorchInductorBackendConfig as TorchInductorBackendConfig
    from .counters import BreakReason as BreakReason
    from .counters import CacheUse as CacheUse
    from .counters import CompileTimes as CompileTimes
    from .counters import Recompile as Recompile
    from .fixture import TweakFixture as TweakFixture
    from .measure import MeasureSettings as MeasureSettings
    from .stats import Summary as Summary
    from .tuning import BestOfStrategy as BestOfStrategy
    from .tuning import Module as Module
    from .tuning import OneBackendStrategy as OneBackendStrategy
    from .tuning import TuneResult as TuneResult
    from .tuning import tune as tune

__version__ = "0.1.0"

_EXPORTS = {
    "Accuracy": "accuracy",
    "Tolerance": "accuracy",
    "Backend": "backends",
    "EagerBackend": "backends",
    "TorchInductorBackend": "backends",
    "BenchmarkResult": "case",
    "CaseError": "case",
    "TorchInductorBackendConfig": "config",
    "BreakReason": "counters",
    "CacheUse": "counters",
    "CompileTimes": "counters",
    "Recompile": "counters",
    "MeasureSettings": "measure",
    "Summary": "stats",
    "TweakFixture": "fixture",
    "BestOfStrategy": "tuning",
    "Module": "tuning",
    "OneBackendStrategy": "tuning",
    "TuneResult": "tuning",
    "tune": "tuning",
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
    return sorted([*globals(), *_EXPORTS])
