"""Backend configs: one way of compiling a model, validated early.

`TorchInductorBackendConfig` for inductor; `AotEagerBackendConfig`, `EagerBackendConfig`,
`TorchAOBackendConfig` and `OpenVINOBackendConfig` for the other built-in backends. Each is a
frozen, hashable dataclass with a stable, readable ``id`` and a ``describe()`` for reports.

`torch.compile` only rejects a bad mode, a mode together with options, or an unknown option
when the compiled function is first *called*. A config is checked when it is constructed, so a
typo fails at collection time with a message that names the field and what is allowed.
"""

from __future__ import annotations

import difflib
import hashlib
import json
import types
from collections.abc import Mapping
from dataclasses import dataclass, field
from functools import cache
from typing import Any

import torch

__all__ = [
    "OPENVINO_DEVICES",
    "TORCHAO_QUANTIZATIONS",
    "AotEagerBackendConfig",
    "EagerBackendConfig",
    "OpenVINOBackendConfig",
    "TorchAOBackendConfig",
    "TorchInductorBackendConfig",
]

# Longest rendering of the options inside a config id before it is replaced by a digest.
_MAX_OPTIONS_ID_CHARS = 48


@cache
def _known_modes() -> tuple[str, ...]:
    """The compile modes this torch knows, read at run time (they differ between releases)."""
    import torch._inductor

    return tuple(torch._inductor.list_mode_options())


@cache
def _known_options() -> frozenset[str]:
    """The inductor option keys this torch knows."""
    import torch._inductor

    return frozenset(torch._inductor.list_options())


def public_options() -> list[str]:
    """The inductor option keys meant for users: without ``TYPE_CHECKING`` (an import flag of
    the config module) and private keys (a part starting with ``_``)."""
    return sorted(
        key
        for key in _known_options()
        if key != "TYPE_CHECKING" and not any(part.startswith("_") for part in key.split("."))
    )


def option_type(key: str) -> type | None:
    """The type inductor checks a value of option ``key`` against, or ``None`` where it
    checks none: the rule of ``torch.compile`` itself (``_TorchCompileInductorWrapper
    .apply_options``), which only checks plain classes, not ``list[int]`` or unions."""
    import typing

    from torch._inductor import config

    get_type = getattr(config, "get_type", None)
    if get_type is None:  # pragma: no cover - older torch: no types to check against
        return None
    try:
        expected = get_type(key)
    except (AttributeError, KeyError):  # pragma: no cover
        return None
    if typing.get_origin(expected) is not None or not isinstance(expected, type):
        return None
    return expected


def _dtype_name(dtype: torch.dtype) -> str:
    return str(dtype).removeprefix("torch.")


@dataclass(frozen=True)
class TorchInductorBackendConfig:
    """How to compile a model with ``torch.compile(backend="inductor")``.

    Args:
        fullgraph: Require one graph for the whole model; a graph break is an error.
        dynamic: ``True`` always compiles dynamic kernels, ``False`` always specializes on
            shapes, ``None`` lets dynamo decide (recompile once, then mark dynamic).
        mode: An inductor mode (see ``torch._inductor.list_mode_options()``).
        options: Inductor options (see ``torch._inductor.list_options()``); not with ``mode``.
        autocast_enabled: Run the compiled model under ``torch.autocast`` on its device.
        autocast_dtype: The autocast dtype; ``None`` takes the device's default
            (bfloat16 on cpu, float16 on cuda and xpu).

    Raises:
        ValueError: at construction, for an unknown mode, mode together with options, an
            option key inductor does not know, or an autocast dtype that is not floating.
    """

    fullgraph: bool = False
    dynamic: bool | None = None
    mode: str | None = None
    options: Mapping[str, Any] | None = None
    autocast_enabled: bool = False
    autocast_dtype: torch.dtype | None = None
    # Cached id; not part of equality, hashing or repr.
    _id: str = field(default="", init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        if not isinstance(self.fullgraph, bool):
            raise ValueError(f"fullgraph must be True or False, got {self.fullgraph!r}")
        if self.dynamic is not None and not isinstance(self.dynamic, bool):
            raise ValueError(f"dynamic must be True, False or None, got {self.dynamic!r}")
        if not isinstance(self.autocast_enabled, bool):
            raise ValueError(
                f"autocast_enabled must be True or False, got {self.autocast_enabled!r}"
            )
        self._check_mode()
        self._check_options()
        self._check_autocast()
        object.__setattr__(self, "_id", self._make_id())

    def _check_mode(self) -> None:
        if self.mode is None:
            return
        modes = _known_modes()
        if not isinstance(self.mode, str) or self.mode not in modes:
            close = difflib.get_close_matches(str(self.mode), modes, n=1)
            hint = f"did you mean {close[0]!r}? " if close else ""
            raise ValueError(
                f"unknown mode {self.mode!r}; {hint}torch {torch.__version__} knows: "
                + ", ".join(modes)
            )

    def _check_options(self) -> None:
        if self.options is None:
            return
        if not isinstance(self.options, Mapping):
            raise ValueError(
                f"options must be a dict of inductor option names to values, "
                f"got {type(self.options).__name__}"
            )
        if not self.options:  # compiles as no options do: the same config, and the same id
            object.__setattr__(self, "options", None)
            return
        if self.mode is not None:
            raise ValueError(
                f"cannot use both mode and options (mode={self.mode!r}, "
                f"options={dict(self.options)!r}): torch.compile accepts one or the other; "
                "put the mode's settings into options instead"
            )
        known = _known_options()
        for key in self.options:
            if not isinstance(key, str):
                raise ValueError(f"option names must be strings, got {key!r}")
            if key not in known:
                close = difflib.get_close_matches(key, known, n=1)
                hint = f"; did you mean {close[0]!r}?" if close else ""
                raise ValueError(
                    f"unknown inductor option {key!r}{hint} "
                    "(torch._inductor.list_options() lists the known ones)"
                )
            expected = option_type(key)
            value = self.options[key]
            if expected is not None and not isinstance(value, expected):
                raise ValueError(
                    f"inductor option {key!r} takes a {expected.__name__}, got {value!r} "
                    f"({type(value).__name__}); torch.compile would refuse it at the first call"
                )
        # A read-only copy: the caller's dict may change later, this config must not.
        object.__setattr__(self, "options", types.MappingProxyType(dict(self.options)))

    def _check_autocast(self) -> None:
        dtype = self.autocast_dtype
        if dtype is None:
            return
        if not isinstance(dtype, torch.dtype) or not dtype.is_floating_point:
            raise ValueError(
                f"autocast_dtype must be a floating torch dtype such as torch.bfloat16 or "
                f"torch.float16, got {dtype!r}"
            )
        if not self.autocast_enabled:
            raise ValueError(
                f"autocast_dtype={dtype} is set but autocast_enabled is False; "
                "pass autocast_enabled=True to use it"
            )

    def __hash__(self) -> int:
        options = None if self.options is None else _options_key(self.options)
        return hash(
            (
                self.fullgraph,
                self.dynamic,
                self.mode,
                options,
                self.autocast_enabled,
                self.autocast_dtype,
            )
        )

    @property
    def id(self) -> str:
        """A short, stable, readable id, used as the pytest parameter id and baseline key.

        ``default`` for the default config; otherwise the non-default settings joined by
        ``-``: the mode, ``fullgraph``, ``dynamic``/``static``, the options
        (``key=value,...``, or ``options-<digest>`` when long) and ``autocast-<dtype>``.
        """
        return self._id

    def _make_id(self) -> str:
        parts: list[str] = []
        if self.mode is not None and self.mode != "default":
            parts.append(self.mode)
        if self.fullgraph:
            parts.append("fullgraph")
        if self.dynamic is True:
            parts.append("dynamic")
        elif self.dynamic is False:
            parts.append("static")
        if self.options:
            rendered = ",".join(f"{k}={_render_value(v)}" for k, v in sorted(self.options.items()))
            if len(rendered) > _MAX_OPTIONS_ID_CHARS:
                digest = hashlib.sha1(_options_key(self.options).encode()).hexdigest()[:8]
                rendered = f"options-{digest}"
            parts.append(rendered)
        if self.autocast_enabled:
            dtype = self.autocast_dtype
            parts.append("autocast" if dtype is None else f"autocast-{_dtype_short(dtype)}")
        return "-".join(parts) or "default"

    def compile_kwargs(self) -> dict[str, Any]:
        """The keyword arguments this config passes to ``torch.compile``."""
        kwargs: dict[str, Any] = {
            "backend": "inductor",
            "fullgraph": self.fullgraph,
            "dynamic": self.dynamic,
        }
        if self.mode is not None:
            kwargs["mode"] = self.mode
        if self.options is not None:
            kwargs["options"] = dict(self.options)
        return kwargs

    def describe(self) -> dict[str, Any]:
        """A JSON-ready description of the config (for reports and baseline files)."""
        return {
            "fullgraph": self.fullgraph,
            "dynamic": self.dynamic,
            "mode": self.mode,
            "options": None if self.options is None else json.loads(_options_key(self.options)),
            "autocast_enabled": self.autocast_enabled,
            "autocast_dtype": None
            if self.autocast_dtype is None
            else _dtype_name(self.autocast_dtype),
        }


def _render_value(value: Any) -> str:
    return str(value) if isinstance(value, (bool, int, float, str)) else repr(value)


def _options_key(options: Mapping[str, Any]) -> str:
    """A canonical text for options: equal options give equal text."""
    return json.dumps(dict(options), sort_keys=True, default=repr)


def _dtype_short(dtype: torch.dtype) -> str:
    return {"bfloat16": "bf16", "float16": "fp16", "float32": "fp32", "float64": "fp64"}.get(
        _dtype_name(dtype), _dtype_name(dtype)
    )


def _check_bool(name: str, value: object) -> None:
    if not isinstance(value, bool):
        raise ValueError(f"{name} must be True or False, got {value!r}")


def _check_dynamic(value: object) -> None:
    if value is not None and not isinstance(value, bool):
        raise ValueError(f"dynamic must be True, False or None, got {value!r}")


def _graph_id(fullgraph: bool, dynamic: bool | None) -> list[str]:
    parts = ["fullgraph"] if fullgraph else []
    if dynamic is True:
        parts.append("dynamic")
    elif dynamic is False:
        parts.append("static")
    return parts


@dataclass(frozen=True)
class EagerBackendConfig:
    """The eager backend's config: nothing to set; the model runs as written.

    Exists so that ``eager`` is a backend like the others (``tweak_backends("eager")``,
    ``tweak_configs(EagerBackendConfig())``).
    """

    @property
    def id(self) -> str:
        """Always ``default``."""
        return "default"

    def describe(self) -> dict[str, Any]:
        """The config's settings for reports and fingerprints (none)."""
        return {}


@dataclass(frozen=True)
class AotEagerBackendConfig:
    """How to compile with ``torch.compile(backend="aot_eager")``: dynamo traces and AOT
    autograd functionalizes the graph, which then runs op by op in eager, without inductor's
    code generation. Its time against inductor's isolates what code generation buys; its
    compile time isolates what dynamo and AOT autograd cost.

    Args:
        fullgraph: Require one graph for the whole model; a graph break is an error.
        dynamic: As for `TorchInductorBackendConfig`.

    Raises:
        ValueError: at construction, for a value of the wrong type.
    """

    fullgraph: bool = False
    dynamic: bool | None = None

    def __post_init__(self) -> None:
        _check_bool("fullgraph", self.fullgraph)
        _check_dynamic(self.dynamic)

    @property
    def id(self) -> str:
        """``default``, or the non-default settings: ``fullgraph``, ``dynamic``/``static``."""
        return "-".join(_graph_id(self.fullgraph, self.dynamic)) or "default"

    def compile_kwargs(self) -> dict[str, Any]:
        """The keyword arguments this config passes to ``torch.compile``."""
        return {"backend": "aot_eager", "fullgraph": self.fullgraph, "dynamic": self.dynamic}

    def describe(self) -> dict[str, Any]:
        """The config's settings for reports and fingerprints."""
        return {"fullgraph": self.fullgraph, "dynamic": self.dynamic}


#: TorchAO quantizations by name: the torchao config class each one applies.
TORCHAO_QUANTIZATIONS: dict[str, str] = {
    "int8_weight_only": "Int8WeightOnlyConfig",
    "int8_dynamic_activation_int8_weight": "Int8DynamicActivationInt8WeightConfig",
}
_TORCHAO_SHORT = {
    "int8_weight_only": "int8wo",
    "int8_dynamic_activation_int8_weight": "int8dq",
}


@dataclass(frozen=True)
class TorchAOBackendConfig:
    """Quantize a copy of the model with TorchAO (``torchao.quantization.quantize_``), then
    compile it with inductor. Needs the ``torchao`` package.

    The model under test is left as it is: the backend quantizes a deep copy, and the eager
    companion (the speed-up's base) is the unquantized model.

    Args:
        quantization: One of `TORCHAO_QUANTIZATIONS`: ``int8_weight_only`` (int8 weights,
            activations in their dtype) or ``int8_dynamic_activation_int8_weight``.
        inductor: How to compile the quantized model; by default
            ``TorchInductorBackendConfig()``. torchao's own global inductor settings are not
            applied (they would leak into every later case); put the ones you want here.

    Raises:
        ValueError: at construction, for an unknown quantization or an ``inductor`` that is
            not a `TorchInductorBackendConfig`.
    """

    quantization: str = "int8_weight_only"
    inductor: TorchInductorBackendConfig = field(default_factory=TorchInductorBackendConfig)

    def __post_init__(self) -> None:
        if self.quantization not in TORCHAO_QUANTIZATIONS:
            close = difflib.get_close_matches(str(self.quantization), TORCHAO_QUANTIZATIONS, n=1)
            hint = f"did you mean {close[0]!r}? " if close else ""
            raise ValueError(
                f"unknown torchao quantization {self.quantization!r}; {hint}known: "
                + ", ".join(TORCHAO_QUANTIZATIONS)
            )
        if not isinstance(self.inductor, TorchInductorBackendConfig):
            raise ValueError(
                f"inductor must be a TorchInductorBackendConfig, got {self.inductor!r}"
            )

    @property
    def id(self) -> str:
        """The quantization's short name (``int8wo``, ``int8dq``), then the inductor config's
        id when it is not ``default``."""
        short = _TORCHAO_SHORT[self.quantization]
        return short if self.inductor.id == "default" else f"{short}-{self.inductor.id}"

    def describe(self) -> dict[str, Any]:
        """The config's settings for reports and fingerprints."""
        return {"quantization": self.quantization, "inductor": self.inductor.describe()}


#: OpenVINO device names (``GPU.1`` and the like name one of several).
OPENVINO_DEVICES = ("CPU", "GPU", "NPU", "AUTO")


@dataclass(frozen=True)
class OpenVINOBackendConfig:
    """How to compile with ``torch.compile(backend="openvino")``. Needs the ``openvino``
    package (``import openvino.torch`` registers the backend).

    Args:
        device: The OpenVINO device that runs the model: ``CPU``, ``GPU``, ``NPU``, ``AUTO``,
            or one of several, such as ``GPU.1``.
        config: OpenVINO properties, names to string values, e.g.
            ``{"PERFORMANCE_HINT": "LATENCY"}``.
        fullgraph: Require one graph for the whole model.
        dynamic: As for `TorchInductorBackendConfig`.

    Raises:
        ValueError: at construction, for an unknown device or a config that does not map
            strings to strings.
    """

    device: str = "CPU"
    config: Mapping[str, str] | None = None
    fullgraph: bool = False
    dynamic: bool | None = None

    def __post_init__(self) -> None:
        device = self.device
        if not isinstance(device, str) or device.partition(".")[0] not in OPENVINO_DEVICES:
            raise ValueError(
                f"unknown OpenVINO device {device!r}; use one of {', '.join(OPENVINO_DEVICES)} "
                "(or one of several, such as 'GPU.1')"
            )
        if self.config is not None:
            if not isinstance(self.config, Mapping) or not all(
                isinstance(k, str) and isinstance(v, str) for k, v in self.config.items()
            ):
                raise ValueError(
                    f"config must map OpenVINO property names to string values, got {self.config!r}"
                )
            object.__setattr__(self, "config", types.MappingProxyType(dict(self.config)))
        _check_bool("fullgraph", self.fullgraph)
        _check_dynamic(self.dynamic)

    def __hash__(self) -> int:
        config = None if self.config is None else tuple(sorted(self.config.items()))
        return hash((self.device, config, self.fullgraph, self.dynamic))

    @property
    def id(self) -> str:
        """``default``, or the non-default settings: the device in lower case, the properties
        (``KEY=value,...``, or ``config-<digest>`` when long), ``fullgraph``,
        ``dynamic``/``static``."""
        parts = [] if self.device == "CPU" else [self.device.lower()]
        if self.config:
            rendered = ",".join(f"{k}={v}" for k, v in sorted(self.config.items()))
            if len(rendered) > _MAX_OPTIONS_ID_CHARS:
                digest = hashlib.sha1(_options_key(self.config).encode()).hexdigest()[:8]
                rendered = f"config-{digest}"
            parts.append(rendered)
        parts += _graph_id(self.fullgraph, self.dynamic)
        return "-".join(parts) or "default"

    def compile_kwargs(self) -> dict[str, Any]:
        """The keyword arguments this config passes to ``torch.compile``."""
        options: dict[str, Any] = {"device": self.device}
        if self.config:
            options["config"] = dict(self.config)
        return {
            "backend": "openvino",
            "fullgraph": self.fullgraph,
            "dynamic": self.dynamic,
            "options": options,
        }

    def describe(self) -> dict[str, Any]:
        """The config's settings for reports and fingerprints."""
        return {
            "device": self.device,
            "config": None if self.config is None else dict(self.config),
            "fullgraph": self.fullgraph,
            "dynamic": self.dynamic,
        }
