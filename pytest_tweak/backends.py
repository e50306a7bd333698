"""Backends: how a model becomes the callable that is measured.

`TorchInductorBackend` compiles with ``torch.compile(backend="inductor")`` and the settings of
its `TorchInductorBackendConfig`; `EagerBackend` leaves the model as it is, so speed-ups versus
eager can be measured with the same machinery.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Protocol, runtime_checkable

import torch

from .config import TorchInductorBackendConfig

__all__ = ["Backend", "EagerBackend", "TorchInductorBackend", "model_device"]

# Autocast dtypes torch supports per device type (others only warn and disable autocast).
_AUTOCAST_DTYPES: dict[str, tuple[torch.dtype, ...]] = {
    "cpu": (torch.bfloat16, torch.float16),
    "cuda": (torch.float16, torch.bfloat16),
    "xpu": (torch.bfloat16, torch.float16),
}


@runtime_checkable
class Backend(Protocol):
    """What `tune` and the ``tweak`` fixture need of a backend."""

    @property
    def name(self) -> str:
        """A short name, used in reports."""
        ...

    def compile(
        self, model: Callable[..., Any], device: torch.device | None = None
    ) -> Callable[..., Any]:
        """Return the callable to run in place of ``model`` on ``device``."""
        ...


def model_device(model: Any) -> torch.device:
    """The device of a module's first parameter or buffer; cpu for anything else."""
    if isinstance(model, torch.nn.Module):
        first: torch.Tensor | None = next(iter(model.parameters()), None)
        if first is None:
            first = next(iter(model.buffers()), None)
        if first is not None:
            return first.device
    return torch.device("cpu")


class TorchInductorBackend:
    """Compile with inductor, following a `TorchInductorBackendConfig`."""

    def __init__(self, config: TorchInductorBackendConfig | None = None) -> None:
        self.config = config if config is not None else TorchInductorBackendConfig()
        if not isinstance(self.config, TorchInductorBackendConfig):
            raise TypeError(
                f"TorchInductorBackend takes a TorchInductorBackendConfig, "
                f"got {type(self.config).__name__}"
            )

    @property
    def name(self) -> str:
        return f"inductor-{self.config.id}"

    def __repr__(self) -> str:
        return f"TorchInductorBackend({self.config!r})"

    def compile(
        self, model: Callable[..., Any], device: torch.device | None = None
    ) -> Callable[..., Any]:
        """``torch.compile`` the model; with autocast, every call runs under ``torch.autocast``.

        Args:
            model: An ``nn.Module`` or a function.
            device: The device the model runs on (for autocast); by default the device of the
                model's parameters.

        Raises:
            ValueError: autocast is enabled with a dtype the device does not support.
        """
        compiled = torch.compile(model, **self.config.compile_kwargs())
        if not self.config.autocast_enabled:
            return compiled
        device = device if device is not None else model_device(model)
        dtype = _autocast_dtype(self.config, device)
        return _with_autocast(compiled, device.type, dtype)

    def autocast_dtype(self, device: torch.device) -> torch.dtype | None:
        """The dtype autocast runs in on ``device``; ``None`` without autocast."""
        if not self.config.autocast_enabled:
            return None
        return _autocast_dtype(self.config, device)

    def eager(
        self, model: Callable[..., Any], device: torch.device | None = None
    ) -> Callable[..., Any]:
        """The model uncompiled, under the same autocast as `compile`: the speed-up's base."""
        if not self.config.autocast_enabled:
            return model
        device = device if device is not None else model_device(model)
        return _with_autocast(model, device.type, _autocast_dtype(self.config, device))


class EagerBackend:
    """No compilation: the model runs as written. The reference for speed-ups."""

    @property
    def name(self) -> str:
        return "eager"

    def __repr__(self) -> str:
        return "EagerBackend()"

    def compile(
        self, model: Callable[..., Any], device: torch.device | None = None
    ) -> Callable[..., Any]:
        return model


def _autocast_dtype(config: TorchInductorBackendConfig, device: torch.device) -> torch.dtype:
    supported = _AUTOCAST_DTYPES.get(device.type)
    if supported is None or not torch.amp.is_autocast_available(device.type):
        raise ValueError(f"autocast is not available on device {device.type!r}")
    dtype = config.autocast_dtype
    if dtype is None:
        return torch.get_autocast_dtype(device.type)
    if dtype not in supported:
        names = ", ".join(str(d) for d in supported)
        raise ValueError(
            f"autocast_dtype={dtype} is not supported by autocast on {device.type}; "
            f"use one of: {names} (config {config.id})"
        )
    return dtype


def _with_autocast(
    compiled: Callable[..., Any], device_type: str, dtype: torch.dtype
) -> Callable[..., Any]:
    def run(*args: Any, **kwargs: Any) -> Any:
        with torch.autocast(device_type=device_type, dtype=dtype):
            return compiled(*args, **kwargs)

    run.__wrapped__ = compiled  # type: ignore[attr-defined]
    return run
