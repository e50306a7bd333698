"""Backends compile for real with inductor; autocast runs on the case's device."""

from __future__ import annotations

import pytest
import torch
from models import TinyMLP

from pytest_tweak import (
    AotEagerBackend,
    AotEagerBackendConfig,
    Backend,
    EagerBackend,
    OpenVINOBackend,
    OpenVINOBackendConfig,
    TorchAOBackend,
    TorchAOBackendConfig,
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


def test_compile_takes_a_device_name_and_refuses_what_is_not_callable() -> None:
    config = TorchInductorBackendConfig(autocast_enabled=True, autocast_dtype=torch.bfloat16)
    out = TorchInductorBackend(config).compile(TinyMLP(), "cpu")(torch.randn(8, 16))
    assert out.dtype == torch.bfloat16  # "cpu" used to raise AttributeError under autocast
    with pytest.raises(TypeError, match=r"takes an nn\.Module or a function, got int"):
        TorchInductorBackend().compile(3)  # type: ignore[arg-type]


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


def test_aot_eager_compiles_with_dynamo_and_matches_eager() -> None:
    torch.manual_seed(0)
    model, x = TinyMLP().eval(), torch.randn(8, 16)
    backend = AotEagerBackend(AotEagerBackendConfig(dynamic=False))
    assert backend.name == "aot_eager-static" and AotEagerBackend().name == "aot_eager"
    compiled = backend.compile(model)
    assert compiled is not model
    with torch.no_grad():
        torch.testing.assert_close(compiled(x), model(x))
    assert backend.eager(model) is model


def test_backends_refuse_another_backends_config() -> None:
    with pytest.raises(
        TypeError, match="AotEagerBackend takes a config of type AotEagerBackendConfig"
    ):
        AotEagerBackend(TorchInductorBackendConfig())  # type: ignore[arg-type]
    with pytest.raises(
        TypeError, match="OpenVINOBackend takes a config of type OpenVINOBackendConfig"
    ):
        OpenVINOBackend(AotEagerBackendConfig())  # type: ignore[arg-type]


def test_torchao_quantizes_a_copy_and_compiles_it() -> None:
    pytest.importorskip("torchao")
    torch.manual_seed(0)
    model, x = TinyMLP().eval(), torch.randn(8, 16)
    weight = model.a.weight
    backend = TorchAOBackend(TorchAOBackendConfig("int8_weight_only"))
    assert backend.name == "torchao-int8wo"
    with torch.no_grad():
        out = backend.compile(model)(x)
        expected = model(x)
    # int8 weights: close to the float model, not equal
    torch.testing.assert_close(out, expected, atol=0.05, rtol=0.05)
    assert model.a.weight is weight and type(weight) is torch.nn.Parameter
    assert backend.eager(model) is model
    with pytest.raises(TypeError, match=r"quantizes torch\.nn\.Module objects"):
        backend.compile(lambda t: t)
    with pytest.raises(ValueError, match="int8_weight_only quantized no weight of Conv2d"):
        backend.compile(torch.nn.Conv2d(3, 3, 3))


def test_openvino_compiles_and_matches_eager() -> None:
    pytest.importorskip("openvino")
    torch.manual_seed(0)
    model, x = TinyMLP().eval(), torch.randn(8, 16)
    # f32: openvino may infer in bf16 on cpus that have it
    backend = OpenVINOBackend(OpenVINOBackendConfig(config={"INFERENCE_PRECISION_HINT": "f32"}))
    assert backend.name == "openvino-INFERENCE_PRECISION_HINT=f32"
    with torch.no_grad():
        torch.testing.assert_close(backend.compile(model)(x), model(x))


@pytest.mark.parametrize(
    ("config", "message"),
    [
        (
            OpenVINOBackendConfig(config={"PERFORMANCE_HINTS": "LATENCY"}),
            r"OpenVINO device CPU does not support the property 'PERFORMANCE_HINTS'; "
            r"did you mean 'PERFORMANCE_HINT'\?",
        ),
        (OpenVINOBackendConfig(device="NPU"), r"OpenVINO device 'NPU' is not available here"),
    ],
)
def test_openvino_refuses_what_it_would_silently_ignore(
    config: OpenVINOBackendConfig, message: str
) -> None:
    pytest.importorskip("openvino")
    with pytest.raises(ValueError, match=message):
        OpenVINOBackend(config).compile(TinyMLP())


class _FailsInOpenVINO(torch.nn.Module):
    """Logs what OpenVINO's backend logs when it gives up on a graph and falls back."""

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        import logging

        logging.getLogger("openvino.frontend.pytorch.torchdynamo.backend").debug(
            "Failed in OpenVINO execution: simulated"
        )
        return x + 1


def test_openvino_fallback_to_another_compiler_is_an_error() -> None:
    pytest.importorskip("openvino")
    compiled = OpenVINOBackend().compile(_FailsInOpenVINO())
    with pytest.raises(RuntimeError, match=r"OpenVINO failed .* fell back .*: Failed in OpenVINO"):
        compiled(torch.randn(4))


class _Raises(torch.nn.Module):
    def forward(self, x: torch.Tensor) -> torch.Tensor:
        raise ValueError("the model itself failed")


class _ImportsMissing(torch.nn.Module):
    def forward(self, x: torch.Tensor) -> torch.Tensor:
        import importlib

        return importlib.import_module("no_such_package_for_tweak").f(x)


def _eager_failure(model: torch.nn.Module) -> str:
    """The message of the case that runs ``model`` with the eager backend on cpu."""
    from pytest_tweak import MeasureSettings
    from pytest_tweak.case import CaseError, LocalRunner, run_case

    with pytest.raises(CaseError) as failed:
        run_case(
            model,
            (torch.ones(2),),
            {},
            backend=EagerBackend(),
            device=torch.device("cpu"),
            settings=MeasureSettings(),
            runner=LocalRunner(),
        )
    return str(failed.value)


def test_an_eager_case_that_raises_says_it_ran_uncompiled_not_that_it_compiled() -> None:
    message = _eager_failure(_Raises())
    assert message.startswith("eager on cpu: ValueError: the model itself failed")
    assert "raised while running the model uncompiled (the eager backend compiles" in message
    assert "compiling" not in message.replace("compiles nothing", "")
    assert "raises uncompiled too" not in message  # the eager run is the one that failed


def test_a_failed_import_shows_the_models_line_not_pythons_import_machinery() -> None:
    message = _eager_failure(_ImportsMissing())
    assert "ModuleNotFoundError: No module named 'no_such_package_for_tweak'" in message
    assert 'return importlib.import_module("no_such_package_for_tweak").f(x)' in message
    assert "importlib" not in message.split("the model's code")[1].replace(
        'importlib.import_module("no_such', ""
    ), message
