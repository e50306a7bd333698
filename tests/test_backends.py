"""Backends compile for real with inductor; autocast runs on the case's device."""

from __future__ import annotations

import pytest
import torch
from models import TinyMLP

from pytest_tweak import (
    Backend,
    EagerBackend,
    TorchInductorBackend,
    TorchInductorBackendConfig,
)


def test_inductor_output_matches_eager() -> None:
    torch.manual_seed(0)
    model, x = TinyMLP().eval(), torch.randn(8, 16)
    compiled = TorchInductorBackend(TorchInductorBackendConfig(dynamic=False)).compile(model)
    torch.testing.assert_close(compiled(x), model(x))


def test_autocast_runs_the_model_in_the_autocast_dtype() -> None:
    config = TorchInductorBackendConfig(autocast_enabled=True, autocast_dtype=torch.bfloat16)
    out = TorchInductorBackend(config).compile(TinyMLP(), torch.device("cpu"))(torch.randn(8, 16))
    assert out.dtype == torch.bfloat16


def test_autocast_default_dtype_is_the_devices_default() -> None:
    config = TorchInductorBackendConfig(autocast_enabled=True)
    out = TorchInductorBackend(config).compile(TinyMLP())(torch.randn(8, 16))
    assert out.dtype == torch.get_autocast_dtype("cpu") == torch.bfloat16


def test_autocast_dtype_the_device_does_not_support_is_an_error() -> None:
    config = TorchInductorBackendConfig(autocast_enabled=True, autocast_dtype=torch.float64)
    with pytest.raises(ValueError, match=r"torch.float64 is not supported by autocast on cpu"):
        TorchInductorBackend(config).compile(TinyMLP(), torch.device("cpu"))


def test_eager_backend_does_not_compile() -> None:
    model = TinyMLP()
    assert EagerBackend().compile(model) is model
    assert EagerBackend().name == "eager"


def test_backends_satisfy_the_protocol_and_have_names() -> None:
    backend = TorchInductorBackend(TorchInductorBackendConfig(dynamic=False))
    assert isinstance(backend, Backend) and isinstance(EagerBackend(), Backend)
    assert backend.name == "inductor-static"
    assert TorchInductorBackend().config == TorchInductorBackendConfig()
    with pytest.raises(TypeError, match="TorchInductorBackendConfig"):
        TorchInductorBackend({"mode": "default"})  # type: ignore[arg-type]
