"""A backend that runs the model under ``torch.inference_mode()``, compiled or not.

``InferenceModeConfig`` follows the pattern of pytest-tweak's own configs: a frozen dataclass,
validated when it is constructed, with a short ``id`` for test ids and a ``describe()`` for
reports and baseline files.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import torch


@dataclass(frozen=True)
class InferenceModeConfig:
    """Run under ``torch.inference_mode()``.

    Args:
        compile_backend: A dynamo backend to compile with first (``"inductor"``,
            ``"aot_eager"``, ...); ``None`` runs the model uncompiled.
    """

    compile_backend: str | None = None

    def __post_init__(self) -> None:
        if self.compile_backend is None:
            return
        known = torch.compiler.list_backends(exclude_tags=())
        if self.compile_backend not in known:
            raise ValueError(
                f"unknown dynamo backend {self.compile_backend!r}; known: {', '.join(known)}"
            )

    @property
    def id(self) -> str:
        return self.compile_backend or "default"

    def describe(self) -> dict[str, Any]:
        return {"compile_backend": self.compile_backend}


class InferenceModeBackend:
    """What pytest-tweak needs of a backend: a ``name`` and ``compile(model, device)``; and
    ``eager(model, device)``, the model that its speed-up is measured against."""

    def __init__(self, config: InferenceModeConfig) -> None:
        self.config = config

    @property
    def name(self) -> str:
        return f"inference_mode-{self.config.id}"

    def compile(
        self, model: Callable[..., Any], device: torch.device | None = None
    ) -> Callable[..., Any]:
        backend = self.config.compile_backend
        target = model if backend is None else torch.compile(model, backend=backend)

        def run(*args: Any, **kwargs: Any) -> Any:
            with torch.inference_mode():
                return target(*args, **kwargs)

        return run

    def eager(
        self, model: Callable[..., Any], device: torch.device | None = None
    ) -> Callable[..., Any]:
        return model
