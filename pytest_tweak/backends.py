"""Backends: how a model becomes the callable that is measured.

`TorchInductorBackend` compiles with ``torch.compile(backend="inductor")`` and the settings of
its `TorchInductorBackendConfig`; `EagerBackend` leaves the model as it is, so speed-ups versus
eager can be measured with the same machinery. `AotEagerBackend` stops before inductor's code
generation; `TorchAOBackend` quantizes with TorchAO, then compiles with inductor;
`OpenVINOBackend` compiles with OpenVINO. The last two import their package when they compile.
"""

from __future__ import annotations

import contextlib
import copy
import difflib
import importlib
import logging
import os
from collections.abc import Callable, Iterator
from typing import Any, Protocol, runtime_checkable

import torch

from .backend_configs import (
    TORCHAO_QUANTIZATIONS,
    AotEagerBackendConfig,
    EagerBackendConfig,
    OpenVINOBackendConfig,
    TorchAOBackendConfig,
    TorchInductorBackendConfig,
)

__all__ = [
    "AotEagerBackend",
    "Backend",
    "EagerBackend",
    "OpenVINOBackend",
    "TorchAOBackend",
    "TorchInductorBackend",
    "compile_disabled",
    "model_device",
]

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


def refuse_compiled(model: Any, where: str) -> None:
    """Raise `TypeError` when ``model`` is already compiled by ``torch.compile`` (or its
    ``.compile()`` was called): compiled again, its eager reference would be compiled too, and
    the speed-up, the counts and the recompiles would be of the wrapping, not of the model."""
    if isinstance(model, torch._dynamo.eval_frame.OptimizedModule):
        what = f"an OptimizedModule around {type(model._orig_mod).__name__}"
        fix = "the model itself (compiled._orig_mod)"
    elif getattr(model, "_torchdynamo_orig_callable", None) is not None:
        what, fix = "a function torch.compile returned", "the model uncompiled"
    elif getattr(model, "_compiled_call_impl", None) is not None:
        what = f"a {type(model).__name__} whose .compile() was called"
        fix = "the model before .compile()"
    else:
        return
    raise TypeError(
        f"{where} was given a model torch.compile compiled already ({what}): pass {fix}; "
        "pytest-tweak compiles it once per backend config and times it against itself "
        "uncompiled"
    )


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
        """``inductor-<config id>``: the case's backend label."""
        return f"inductor-{self.config.id}"

    def __repr__(self) -> str:
        return f"TorchInductorBackend({self.config!r})"

    def compile(
        self, model: Callable[..., Any], device: torch.device | str | None = None
    ) -> Callable[..., Any]:
        """``torch.compile`` the model; with autocast, every call runs under ``torch.autocast``.

        Args:
            model: An ``nn.Module`` or a function.
            device: The device the model runs on (for autocast); by default the device of the
                model's parameters.

        Raises:
            TypeError: ``model`` is not callable.
            ValueError: autocast is enabled with a dtype the device does not support.
        """
        if not callable(model):
            raise TypeError(
                f"TorchInductorBackend.compile takes an nn.Module or a function, got "
                f"{type(model).__name__}"
            )
        compiled = torch.compile(model, **self.config.compile_kwargs())
        if not self.config.autocast_enabled:
            return compiled
        device = torch.device(device) if device is not None else model_device(model)
        dtype = _autocast_dtype(self.config, device)
        return _with_autocast(compiled, device.type, dtype)

    def autocast_dtype(self, device: torch.device) -> torch.dtype | None:
        """The dtype autocast runs in on ``device``; ``None`` without autocast."""
        if not self.config.autocast_enabled:
            return None
        return _autocast_dtype(self.config, device)

    def eager(
        self, model: Callable[..., Any], device: torch.device | str | None = None
    ) -> Callable[..., Any]:
        """The model uncompiled, under the same autocast as `compile`: the speed-up's base."""
        if not self.config.autocast_enabled:
            return model
        device = torch.device(device) if device is not None else model_device(model)
        return _with_autocast(model, device.type, _autocast_dtype(self.config, device))


class EagerBackend:
    """No compilation: the model runs as written. The reference for speed-ups."""

    def __init__(self, config: EagerBackendConfig | None = None) -> None:
        self.config = _config_of(self, config, EagerBackendConfig)

    @property
    def name(self) -> str:
        """``eager``."""
        return "eager"

    def __repr__(self) -> str:
        return "EagerBackend()"

    def compile(
        self, model: Callable[..., Any], device: torch.device | None = None
    ) -> Callable[..., Any]:
        """``model`` itself: nothing is compiled."""
        return model


class AotEagerBackend:
    """``torch.compile(backend="aot_eager")``: dynamo and AOT autograd without inductor."""

    def __init__(self, config: AotEagerBackendConfig | None = None) -> None:
        self.config = _config_of(self, config, AotEagerBackendConfig)

    @property
    def name(self) -> str:
        """``aot_eager``, or ``aot_eager-<config id>``."""
        return _named("aot_eager", self.config.id)

    def __repr__(self) -> str:
        return f"AotEagerBackend({self.config!r})"

    def compile(
        self, model: Callable[..., Any], device: torch.device | None = None
    ) -> Callable[..., Any]:
        """``torch.compile(model, backend="aot_eager", ...)`` with this config's options."""
        return torch.compile(model, **self.config.compile_kwargs())

    def eager(
        self, model: Callable[..., Any], device: torch.device | None = None
    ) -> Callable[..., Any]:
        """``model`` itself, the speed-up base and accuracy reference."""
        return model


class TorchAOBackend:
    """Quantize a deep copy of the model with TorchAO, then compile it with inductor."""

    def __init__(self, config: TorchAOBackendConfig | None = None) -> None:
        self.config = _config_of(self, config, TorchAOBackendConfig)

    @property
    def name(self) -> str:
        """``torchao``, or ``torchao-<config id>``."""
        return _named("torchao", self.config.id)

    def __repr__(self) -> str:
        return f"TorchAOBackend({self.config!r})"

    def compile(
        self, model: Callable[..., Any], device: torch.device | None = None
    ) -> Callable[..., Any]:
        """Quantize a copy of ``model`` (an ``nn.Module``), then ``torch.compile`` it.

        Raises:
            ImportError: torchao is not installed.
            TypeError: ``model`` is not an ``nn.Module`` (torchao quantizes modules).
            ValueError: the quantization left every weight as it was (no ``nn.Linear``).
        """
        if not isinstance(model, torch.nn.Module):
            raise TypeError(
                f"the torchao backend quantizes torch.nn.Module objects, got {type(model).__name__}"
            )
        quantization = importlib.import_module("torchao.quantization")
        config_class = getattr(quantization, TORCHAO_QUANTIZATIONS[self.config.quantization])
        quantized = copy.deepcopy(model)
        # set_inductor_config=False: torchao would otherwise change inductor's global config
        quantization.quantize_(quantized, config_class(set_inductor_config=False))
        if not any(type(p).__module__.startswith("torchao") for p in quantized.parameters()):
            # nothing to quantize: the case would time plain inductor under torchao's name
            raise ValueError(
                f"torchao {self.config.quantization} quantized no weight of "
                f"{type(model).__name__} (it quantizes the weights of nn.Linear layers)"
            )
        return TorchInductorBackend(self.config.inductor).compile(quantized, device)

    def eager(
        self, model: Callable[..., Any], device: torch.device | None = None
    ) -> Callable[..., Any]:
        """The unquantized model, uncompiled, under the inductor config's autocast."""
        return TorchInductorBackend(self.config.inductor).eager(model, device)


class OpenVINOBackend:
    """``torch.compile(backend="openvino")`` with the settings of an `OpenVINOBackendConfig`."""

    def __init__(self, config: OpenVINOBackendConfig | None = None) -> None:
        self.config = _config_of(self, config, OpenVINOBackendConfig)

    @property
    def name(self) -> str:
        """``openvino``, or ``openvino-<config id>``."""
        return _named("openvino", self.config.id)

    def __repr__(self) -> str:
        return f"OpenVINOBackend({self.config!r})"

    def compile(
        self, model: Callable[..., Any], device: torch.device | None = None
    ) -> Callable[..., Any]:
        """Register OpenVINO's backend with dynamo (``import openvino.torch``) and compile.

        OpenVINO's backend quietly falls back to inductor, or to eager, when OpenVINO fails to
        compile or run a graph: the case would time something else under OpenVINO's name. The
        first call (which compiles) is watched, and such a fallback raises instead.

        Raises:
            ImportError: openvino is not installed.
            ValueError: the OpenVINO device is not available, or a property in ``config`` is
                not one the device supports.
            RuntimeError: at the first call, OpenVINO failed and its backend fell back.
        """
        _check_openvino(self.config)
        compiled = torch.compile(model, **self.config.compile_kwargs())
        watched = False

        def run(*args: Any, **kwargs: Any) -> Any:
            nonlocal watched
            if watched:
                return compiled(*args, **kwargs)
            watched = True
            with _openvino_fallbacks() as fallbacks:
                out = compiled(*args, **kwargs)
            if fallbacks:
                raise RuntimeError(
                    "OpenVINO failed and its torch.compile backend fell back to another "
                    "compiler: " + "; ".join(fallbacks)
                )
            return out

        run.__wrapped__ = compiled  # type: ignore[attr-defined]
        return run

    def eager(
        self, model: Callable[..., Any], device: torch.device | None = None
    ) -> Callable[..., Any]:
        """``model`` itself, the speed-up base and accuracy reference."""
        return model


def _check_openvino(config: OpenVINOBackendConfig) -> None:
    """The device must be available here, and each property one it supports (OpenVINO's
    backend would drop an unknown one silently)."""
    core = importlib.import_module("openvino").Core()
    available = list(core.available_devices)
    base = config.device.partition(".")[0]
    if base != "AUTO" and not any(
        found == config.device or found.partition(".")[0] == config.device for found in available
    ):
        raise ValueError(
            f"OpenVINO device {config.device!r} is not available here; available: "
            + ", ".join(available)
        )
    if not config.config:
        return
    supported = [str(name) for name in core.get_property(config.device, "SUPPORTED_PROPERTIES")]
    for key in config.config:
        if key not in supported:
            close = difflib.get_close_matches(key, supported, n=1)
            hint = f"; did you mean {close[0]!r}?" if close else ""
            raise ValueError(
                f"OpenVINO device {config.device} does not support the property {key!r}{hint}"
            )


#: OpenVINO's torch.compile backend logs its fallbacks at debug level, here.
_OPENVINO_LOGGERS = (
    "openvino.frontend.pytorch.torchdynamo.backend",
    "openvino.frontend.pytorch.torchdynamo.execute",
)


class _FallbackRecorder(logging.Handler):
    def __init__(self) -> None:
        super().__init__(logging.DEBUG)
        self.fallbacks: list[str] = []

    def emit(self, record: logging.LogRecord) -> None:
        message = record.getMessage()
        if message.startswith(("Failed in OpenVINO execution", "OpenVINO execution failed")):
            self.fallbacks.append(message.splitlines()[0])


@contextlib.contextmanager
def _openvino_fallbacks() -> Iterator[list[str]]:
    """The fallbacks OpenVINO's backend logs inside the block."""
    recorder = _FallbackRecorder()
    loggers = [logging.getLogger(name) for name in _OPENVINO_LOGGERS]
    saved = [(logger.level, logger.propagate) for logger in loggers]
    for logger in loggers:
        logger.addHandler(recorder)
        logger.setLevel(logging.DEBUG)
        logger.propagate = False  # its debug chatter is for the recorder only
    try:
        yield recorder.fallbacks
    finally:
        for logger, (level, propagate) in zip(loggers, saved, strict=True):
            logger.removeHandler(recorder)
            logger.setLevel(level)
            logger.propagate = propagate


def compile_disabled() -> str | None:
    """Why ``torch.compile`` hands models back uncompiled in this process, or ``None``."""
    if os.environ.get("TORCHDYNAMO_DISABLE", "") == "1":
        return "TORCHDYNAMO_DISABLE=1 is set in the environment"
    if getattr(torch._dynamo.config, "disable", False):
        if os.environ.get("TORCH_COMPILE_DISABLE", "") == "1":
            return "TORCH_COMPILE_DISABLE=1 is set in the environment"
        return "torch._dynamo.config.disable is set"
    return None


def _named(backend: str, config_id: str) -> str:
    return backend if config_id == "default" else f"{backend}-{config_id}"


def _config_of(backend: object, config: Any, config_type: type[Any]) -> Any:
    """``config``, or the default ``config_type()``; `TypeError` for another type."""
    if config is None:
        return config_type()
    if not isinstance(config, config_type):
        raise TypeError(
            f"{type(backend).__name__} takes a config of type {config_type.__name__}, got "
            f"{type(config).__name__}"
        )
    return config


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
