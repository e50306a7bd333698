"""The backend registry: backend names, their config types and how to build them.

Plugins contribute backends through the ``pytest_tweak_add_backends`` hook, as a mapping of
names to `BackendSpec`; pytest-tweak's own backends come through the same hook. The registry
maps a name to its spec, a config object to its backend (by the config's type), and a case to
its test-id part.

This module imports neither pytest nor torch: `builtin_backends` imports the backends when it
is called.
"""

from __future__ import annotations

import importlib.util
import re
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from .backends import Backend

__all__ = ["DEFAULT_BACKEND", "BackendRegistry", "BackendSpec", "RegistryError", "builtin_backends"]

#: The backend of tests without markers; its test ids carry the config id alone.
DEFAULT_BACKEND = "inductor"

_NAME = re.compile(r"^[a-z][a-z0-9_]*$")


class RegistryError(ValueError):
    """A contributed backend is unusable; the message says which and why."""


@dataclass(frozen=True)
class BackendSpec:
    """How pytest-tweak builds one backend.

    Args:
        config_type: The backend's config class: a frozen dataclass, validated at
            construction, with an ``id`` property (a short, stable, readable string used in
            test ids and reports), a ``describe()`` method returning a JSON-ready dict, and
            defaults for every field (``config_type()`` is the backend's default config).
            A config type belongs to one backend.
        factory: Builds the backend from a config: ``factory(config)`` returns an object with
            ``name`` and ``compile(model, device)`` (`pytest_tweak.Backend`), and optionally
            ``eager(model, device)``, the uncompiled model that the speed-up is measured
            against.
        requires: Top-level modules the backend needs (e.g. ``("openvino",)``). When one is
            not importable, the backend's cases are skipped with the reason instead of failing.
        devices: The device types it runs on (e.g. ``("cpu",)``); cases on other devices are
            skipped. ``None``: every device.
        install: What to install when a required module is missing, shown in the skip reason.
    """

    config_type: type[Any]
    factory: Callable[[Any], Backend]
    requires: tuple[str, ...] = ()
    devices: tuple[str, ...] | None = None
    install: str = ""

    def __post_init__(self) -> None:
        if not isinstance(self.config_type, type):
            raise RegistryError(f"config_type must be a class, got {self.config_type!r}")
        lacking = [a for a in ("id", "describe") if not hasattr(self.config_type, a)]
        if lacking:
            raise RegistryError(
                f"config type {self.config_type.__qualname__} has no {' and no '.join(lacking)}: "
                "a config needs an `id` property and a `describe()` method"
            )
        if not callable(self.factory):
            raise RegistryError(f"factory must be callable, got {self.factory!r}")
        if isinstance(self.requires, str) or not all(isinstance(r, str) for r in self.requires):
            raise RegistryError(f"requires must be a tuple of module names, got {self.requires!r}")

    def missing(self) -> str | None:
        """Why the backend cannot run here (a required module is missing), or ``None``."""
        absent = [name for name in self.requires if importlib.util.find_spec(name) is None]
        if not absent:
            return None
        hint = f" (pip install {self.install})" if self.install else ""
        return f"{', '.join(absent)} {'is' if len(absent) == 1 else 'are'} not installed{hint}"

    def skip_reason(self, name: str, device: str) -> str | None:
        """Why a case of backend ``name`` on ``device`` is skipped, or ``None``."""
        missing = self.missing()
        if missing is not None:
            return f"backend {name}: {missing}"
        if self.devices is not None and device not in self.devices:
            return f"backend {name} runs on {', '.join(self.devices)}, not {device}"
        return None


class BackendRegistry:
    """The backends known to a run, by name and by config type."""

    def __init__(self) -> None:
        self._specs: dict[str, BackendSpec] = {}
        self._by_type: dict[type[Any], str] = {}

    @classmethod
    def from_contributions(cls, contributions: Iterable[object]) -> BackendRegistry:
        """Build from what the ``pytest_tweak_add_backends`` implementations returned.

        Raises:
            RegistryError: a contribution is not a mapping of names to `BackendSpec`, a name is
                not a lower-case identifier, or a name or config type is taken twice.
        """
        registry = cls()
        for contribution in contributions:
            if not isinstance(contribution, Mapping):
                raise RegistryError(
                    f"expected a dict of backend names to BackendSpec, got {contribution!r} "
                    f"({type(contribution).__name__})"
                )
            for name, spec in contribution.items():
                registry.add(name, spec)
        return registry

    def add(self, name: object, spec: object) -> None:
        """Register ``spec`` under ``name`` (`RegistryError` when unusable or taken)."""
        if not isinstance(name, str) or not _NAME.match(name):
            raise RegistryError(
                f"backend name {name!r} is not a lower-case identifier such as 'my_backend'"
            )
        if not isinstance(spec, BackendSpec):
            raise RegistryError(
                f"backend {name!r}: expected a BackendSpec, got {spec!r} ({type(spec).__name__})"
            )
        if name in self._specs:
            raise RegistryError(
                f"backend {name!r} is registered twice: by {_origin(self._specs[name])} "
                f"and by {_origin(spec)}"
            )
        other = self._by_type.get(spec.config_type)
        if other is not None:
            raise RegistryError(
                f"config type {spec.config_type.__qualname__} belongs to backend {other!r} "
                f"and cannot belong to {name!r} too: give each backend its own config class"
            )
        self._specs[name] = spec
        self._by_type[spec.config_type] = name

    @property
    def names(self) -> tuple[str, ...]:
        return tuple(self._specs)

    def __contains__(self, name: object) -> bool:
        return name in self._specs

    def spec(self, name: str) -> BackendSpec:
        return self._specs[name]

    def name_of(self, config: object) -> str | None:
        """The backend whose config type ``config`` is (subclasses too), or ``None``."""
        for config_type in type(config).__mro__:
            name = self._by_type.get(config_type)
            if name is not None:
                return name
        return None

    def config_types(self) -> str:
        """``name (ConfigType), ...`` for messages."""
        return ", ".join(
            f"{name} ({spec.config_type.__name__})" for name, spec in self._specs.items()
        )

    def case_id(self, name: str, config: Any) -> str:
        """The test-id part of a case: the config id for the default backend (so ids stay
        ``test[cpu-<config id>]``), else the backend name, then the config id when it is not
        ``default``: ``aot_eager``, ``torchao-int8wo``."""
        config_id = str(config.id)
        if name == DEFAULT_BACKEND:
            return config_id
        return name if config_id == "default" else f"{name}-{config_id}"


def _origin(spec: BackendSpec) -> str:
    factory = spec.factory
    module = getattr(factory, "__module__", None) or "?"
    return f"{module}.{getattr(factory, '__qualname__', repr(factory))}"


def builtin_backends() -> dict[str, BackendSpec]:
    """pytest-tweak's own backends: ``inductor``, ``eager``, ``aot_eager``, and ``torchao``
    and ``openvino``, which skip their cases when their package is not installed."""
    from . import backend_configs as config
    from . import backends

    return {
        "inductor": BackendSpec(config.TorchInductorBackendConfig, backends.TorchInductorBackend),
        "eager": BackendSpec(config.EagerBackendConfig, backends.EagerBackend),
        "aot_eager": BackendSpec(config.AotEagerBackendConfig, backends.AotEagerBackend),
        "torchao": BackendSpec(
            config.TorchAOBackendConfig,
            backends.TorchAOBackend,
            requires=("torchao",),
            install="torchao",
        ),
        "openvino": BackendSpec(
            config.OpenVINOBackendConfig,
            backends.OpenVINOBackend,
            requires=("openvino",),
            devices=("cpu",),
            install="openvino",
        ),
    }
