"""pytest-tweak: the speed of torch.compile'd models as a tested, CI-gated property.

The names below are imported on first use, so loading the pytest plugin (which imports this
package) does not import torch.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from .backends import Backend, EagerBackend, TorchInductorBackend
    from .case import BenchmarkResult, CaseError
    from .config import TorchInductorBackendConfig
    from .counters import BreakReason, Recompile
    from .measure import MeasureSettings, Stats
    from .tune import BestOfStrategy, Module, OneBackendStrategy, TuneResult, tune

__version__ = "0.1.0"

_EXPORTS = {
    "Backend": "backends",
    "EagerBackend": "backends",
    "TorchInductorBackend": "backends",
    "BenchmarkResult": "case",
    "CaseError": "case",
    "TorchInductorBackendConfig": "config",
    "BreakReason": "counters",
    "Recompile": "counters",
    "MeasureSettings": "measure",
    "Stats": "measure",
    "BestOfStrategy": "tune",
    "Module": "tune",
    "OneBackendStrategy": "tune",
    "TuneResult": "tune",
    "tune": "tune",
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
