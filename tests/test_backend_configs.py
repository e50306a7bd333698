"""The configs of the other built-in backends: validation at construction, ids, hashing."""

from __future__ import annotations

import dataclasses
import json

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from pytest_tweak import (
    AotEagerBackendConfig,
    EagerBackendConfig,
    OpenVINOBackendConfig,
    TorchAOBackendConfig,
    TorchInductorBackendConfig,
)

ALL_DEFAULTS = [
    EagerBackendConfig(),
    AotEagerBackendConfig(),
    TorchAOBackendConfig(),
    OpenVINOBackendConfig(),
]


@pytest.mark.parametrize("config", ALL_DEFAULTS, ids=lambda c: type(c).__name__)
def test_configs_are_frozen_hashable_and_json_describable(config: object) -> None:
    assert hash(config) == hash(dataclasses.replace(config))  # type: ignore[type-var]
    assert config == dataclasses.replace(config)  # type: ignore[type-var]
    json.dumps(config.describe())  # type: ignore[attr-defined]
    field = next(iter(dataclasses.fields(config)), None)  # type: ignore[arg-type]
    if field is not None:
        with pytest.raises(dataclasses.FrozenInstanceError):
            setattr(config, field.name, None)


@pytest.mark.parametrize(
    ("config", "expected"),
    [
        (EagerBackendConfig(), "default"),
        (AotEagerBackendConfig(), "default"),
        (AotEagerBackendConfig(fullgraph=True, dynamic=False), "fullgraph-static"),
        (TorchAOBackendConfig(), "int8wo"),
        (TorchAOBackendConfig("int8_dynamic_activation_int8_weight"), "int8dq"),
        (
            TorchAOBackendConfig(inductor=TorchInductorBackendConfig(dynamic=False)),
            "int8wo-static",
        ),
        (OpenVINOBackendConfig(), "default"),
        (OpenVINOBackendConfig(device="GPU.1", dynamic=True), "gpu.1-dynamic"),
        (
            OpenVINOBackendConfig(config={"PERFORMANCE_HINT": "LATENCY"}),
            "PERFORMANCE_HINT=LATENCY",
        ),
    ],
)
def test_ids_are_readable(config: object, expected: str) -> None:
    assert config.id == expected  # type: ignore[attr-defined]


@pytest.mark.parametrize(
    ("make", "message"),
    [
        (lambda: AotEagerBackendConfig(fullgraph="yes"), "fullgraph must be True or False"),
        (lambda: AotEagerBackendConfig(dynamic=1), "dynamic must be True, False or None"),
        (
            lambda: TorchAOBackendConfig("int8_weight"),
            "unknown torchao quantization 'int8_weight'; did you mean 'int8_weight_only'\\? "
            "known: int8_weight_only, int8_dynamic_activation_int8_weight",
        ),
        (
            lambda: TorchAOBackendConfig(inductor={"mode": "default"}),
            "inductor must be a TorchInductorBackendConfig",
        ),
        (lambda: OpenVINOBackendConfig(device="TPU"), "unknown OpenVINO device 'TPU'"),
        (lambda: OpenVINOBackendConfig(device="cpu"), "unknown OpenVINO device 'cpu'"),
        (
            lambda: OpenVINOBackendConfig(config={"NUM_STREAMS": 2}),
            "config must map OpenVINO property names to string values",
        ),
    ],
)
def test_bad_values_are_refused_at_construction(make: object, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        make()  # type: ignore[operator]


def test_openvino_config_is_copied_and_read_only() -> None:
    properties = {"PERFORMANCE_HINT": "LATENCY"}
    config = OpenVINOBackendConfig(config=properties)
    properties["PERFORMANCE_HINT"] = "THROUGHPUT"
    assert config.config == {"PERFORMANCE_HINT": "LATENCY"}
    assert config.compile_kwargs() == {
        "backend": "openvino",
        "fullgraph": False,
        "dynamic": None,
        "options": {"device": "CPU", "config": {"PERFORMANCE_HINT": "LATENCY"}},
    }
    with pytest.raises(TypeError):
        config.config["X"] = "1"  # type: ignore[index]


def test_aot_eager_compile_kwargs() -> None:
    assert AotEagerBackendConfig(dynamic=False).compile_kwargs() == {
        "backend": "aot_eager",
        "fullgraph": False,
        "dynamic": False,
    }


_PROPERTIES = st.dictionaries(
    st.sampled_from(["PERFORMANCE_HINT", "NUM_STREAMS", "INFERENCE_PRECISION_HINT"]),
    st.sampled_from(["LATENCY", "THROUGHPUT", "1", "f32", "bf16"]),
    max_size=3,
)


@settings(max_examples=200, deadline=None)
@given(
    st.sampled_from(["CPU", "GPU", "AUTO", "GPU.1"]),
    _PROPERTIES,
    _PROPERTIES,
    st.sampled_from([None, True, False]),
    st.booleans(),
)
def test_openvino_ids_differ_exactly_when_configs_differ(
    device: str, first: dict[str, str], second: dict[str, str], dynamic: bool | None, full: bool
) -> None:
    a = OpenVINOBackendConfig(device, first or None, full, dynamic)
    b = OpenVINOBackendConfig(device, second or None, full, dynamic)
    assert (a.id == b.id) == (a == b)
    if a == b:
        assert hash(a) == hash(b)


@settings(max_examples=50, deadline=None)
@given(
    st.sampled_from(["int8_weight_only", "int8_dynamic_activation_int8_weight"]),
    st.sampled_from([None, True, False]),
    st.booleans(),
)
def test_torchao_ids_are_unique_per_config(
    quantization: str, dynamic: bool | None, fullgraph: bool
) -> None:
    inductor = TorchInductorBackendConfig(dynamic=dynamic, fullgraph=fullgraph)
    config = TorchAOBackendConfig(quantization, inductor)
    others = [
        TorchAOBackendConfig(q, TorchInductorBackendConfig(dynamic=d, fullgraph=f))
        for q in ("int8_weight_only", "int8_dynamic_activation_int8_weight")
        for d in (None, True, False)
        for f in (True, False)
    ]
    assert [o for o in others if o.id == config.id] == [config]
