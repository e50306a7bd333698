"""The backend registry: names, config types, ids, missing packages."""

from __future__ import annotations

from dataclasses import dataclass

import pytest

from pytest_tweak import (
    AotEagerBackendConfig,
    BackendSpec,
    EagerBackend,
    TorchInductorBackend,
    TorchInductorBackendConfig,
)
from pytest_tweak.registry import BackendRegistry, RegistryError, builtin_backends


@dataclass(frozen=True)
class _Config:
    @property
    def id(self) -> str:
        return "default"

    def describe(self) -> dict[str, object]:
        return {}


def test_builtins_map_config_types_to_names_and_ids() -> None:
    registry = BackendRegistry.from_contributions([builtin_backends()])
    assert registry.names == ("inductor", "eager", "aot_eager", "torchao", "openvino")
    assert registry.name_of(TorchInductorBackendConfig()) == "inductor"
    assert registry.name_of(AotEagerBackendConfig()) == "aot_eager"
    assert registry.name_of("inductor") is None
    # the default backend keeps the plain config id: test ids of existing suites stay
    assert registry.case_id("inductor", TorchInductorBackendConfig(dynamic=False)) == "static"
    assert registry.case_id("aot_eager", AotEagerBackendConfig()) == "aot_eager"
    assert registry.case_id("aot_eager", AotEagerBackendConfig(dynamic=True)) == "aot_eager-dynamic"
    assert isinstance(
        registry.spec("inductor").factory(TorchInductorBackendConfig()), TorchInductorBackend
    )


def test_a_subclass_of_a_config_type_belongs_to_its_backend() -> None:
    class Mine(_Config):
        pass

    registry = BackendRegistry()
    registry.add("mine", BackendSpec(_Config, lambda config: EagerBackend()))
    assert registry.name_of(Mine()) == "mine"


@pytest.mark.parametrize(
    ("name", "spec", "message"),
    [
        ("Mine", BackendSpec(_Config, EagerBackend), "not a lower-case identifier"),
        ("mine", EagerBackend, "backend 'mine': expected a BackendSpec"),
        ("inductor", BackendSpec(_Config, EagerBackend), "'inductor' is registered twice"),
        (
            "mine",
            BackendSpec(TorchInductorBackendConfig, EagerBackend),
            "config type TorchInductorBackendConfig belongs to backend 'inductor'",
        ),
    ],
)
def test_unusable_contributions_are_refused(name: str, spec: object, message: str) -> None:
    registry = BackendRegistry.from_contributions([builtin_backends()])
    with pytest.raises(RegistryError, match=message):
        registry.add(name, spec)


def test_a_contribution_must_be_a_mapping() -> None:
    with pytest.raises(RegistryError, match="expected a dict of backend names to BackendSpec"):
        BackendRegistry.from_contributions([[("x", BackendSpec(_Config, EagerBackend))]])


def test_spec_fields_are_checked() -> None:
    with pytest.raises(RegistryError, match="config_type must be a class"):
        BackendSpec(_Config(), EagerBackend)  # type: ignore[arg-type]
    with pytest.raises(RegistryError, match="config type int has no id and no describe"):
        BackendSpec(int, EagerBackend)
    with pytest.raises(RegistryError, match="factory must be callable"):
        BackendSpec(_Config, "EagerBackend")  # type: ignore[arg-type]
    with pytest.raises(RegistryError, match="requires must be a tuple of module names"):
        BackendSpec(_Config, EagerBackend, requires="openvino")  # type: ignore[arg-type]


def test_missing_packages_and_devices_are_skip_reasons() -> None:
    spec = BackendSpec(
        _Config, EagerBackend, requires=("pytest", "no_such_module_tweak"), install="tweak-x"
    )
    assert spec.missing() == "no_such_module_tweak is not installed (pip install tweak-x)"
    assert spec.skip_reason("x", "cpu") == (
        "backend x: no_such_module_tweak is not installed (pip install tweak-x)"
    )
    gpu = BackendSpec(_Config, EagerBackend, devices=("cuda", "xpu"))
    assert gpu.skip_reason("g", "cuda") is None
    assert gpu.skip_reason("g", "cpu") == "backend g runs on cuda, xpu, not cpu"
