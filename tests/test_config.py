"""TorchInductorBackendConfig: validation at construction, ids, hashing."""

from __future__ import annotations

import dataclasses
import re

import pytest
import torch
import torch._inductor
from hypothesis import given, settings
from hypothesis import strategies as st

from pytest_tweak import TorchInductorBackendConfig as Config


def test_defaults_match_the_contract() -> None:
    config = Config()
    assert (config.fullgraph, config.dynamic, config.mode, config.options) == (
        False,
        None,
        None,
        None,
    )
    assert (config.autocast_enabled, config.autocast_dtype) == (False, None)
    assert config.id == "default"


@pytest.mark.parametrize("mode", list(torch._inductor.list_mode_options()))
def test_every_mode_torch_knows_is_accepted(mode: str) -> None:
    assert Config(mode=mode).mode == mode


def test_unknown_mode_lists_the_known_ones() -> None:
    with pytest.raises(ValueError, match=r"unknown mode 'fastest'.*max-autotune"):
        Config(mode="fastest")


def test_mode_and_options_are_refused_together() -> None:
    with pytest.raises(ValueError, match="cannot use both mode and options"):
        Config(mode="default", options={"max_autotune": False})


def test_unknown_option_suggests_the_close_match() -> None:
    with pytest.raises(
        ValueError,
        match=r"'coordinate_descent_tunning'.*did you mean "
        r"'coordinate_descent_tuning'",
    ):
        Config(options={"coordinate_descent_tunning": True})


def test_unknown_option_without_close_match_has_no_suggestion() -> None:
    with pytest.raises(ValueError, match="unknown inductor option 'zzzz'") as info:
        Config(options={"zzzz": 1})
    assert "did you mean" not in str(info.value)


def test_dotted_options_from_the_guide_are_known() -> None:
    config = Config(
        options={
            "triton.cudagraphs": False,
            "max_autotune": False,
            "coordinate_descent_tuning": True,
        }
    )
    assert config.compile_kwargs()["options"] == {
        "triton.cudagraphs": False,
        "max_autotune": False,
        "coordinate_descent_tuning": True,
    }


@pytest.mark.parametrize("dtype", [torch.int8, torch.int32, torch.bool, "bfloat16"])
def test_autocast_dtype_must_be_floating(dtype: object) -> None:
    with pytest.raises(ValueError, match="autocast_dtype must be a floating torch dtype"):
        Config(autocast_enabled=True, autocast_dtype=dtype)  # type: ignore[arg-type]


def test_autocast_dtype_without_autocast_enabled_is_refused() -> None:
    with pytest.raises(ValueError, match="autocast_enabled is False"):
        Config(autocast_dtype=torch.bfloat16)


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"fullgraph": 1}, "fullgraph"),
        ({"dynamic": "yes"}, "dynamic"),
        ({"autocast_enabled": None}, "autocast_enabled"),
        ({"options": [1]}, "options must be"),
    ],
)
def test_field_types_are_checked(kwargs: dict[str, object], message: str) -> None:
    with pytest.raises(ValueError, match=message):
        Config(**kwargs)  # type: ignore[arg-type]


def test_frozen_and_options_are_copied() -> None:
    options = {"coordinate_descent_tuning": True}
    config = Config(options=options)
    options["coordinate_descent_tuning"] = False
    assert config.options == {"coordinate_descent_tuning": True}
    with pytest.raises(dataclasses.FrozenInstanceError):
        config.mode = "default"  # type: ignore[misc]
    with pytest.raises(TypeError):
        config.options["x"] = 1  # type: ignore[index]


def test_empty_options_are_no_options() -> None:
    # options={} compiles as no options do; it used to be another config with the same id
    assert Config(options={}) == Config() and Config(options={}).options is None
    assert Config(mode="max-autotune", options={}) == Config(mode="max-autotune")


def test_hashable_and_equal_by_value() -> None:
    a = Config(options={"coordinate_descent_tuning": True, "max_autotune": False})
    b = Config(options={"max_autotune": False, "coordinate_descent_tuning": True})
    assert a == b and hash(a) == hash(b)
    assert len({a, b, Config(), Config(dynamic=False)}) == 3


@pytest.mark.parametrize(
    ("config", "expected"),
    [
        (Config(), "default"),
        (Config(mode="default"), "default"),
        (
            Config(mode="max-autotune-no-cudagraphs", dynamic=False),
            "max-autotune-no-cudagraphs-static",
        ),
        (Config(fullgraph=True, dynamic=True), "fullgraph-dynamic"),
        (Config(autocast_enabled=True), "autocast"),
        (Config(autocast_enabled=True, autocast_dtype=torch.bfloat16), "autocast-bf16"),
        (Config(autocast_enabled=True, autocast_dtype=torch.float16), "autocast-fp16"),
        (Config(options={"coordinate_descent_tuning": True}), "coordinate_descent_tuning=True"),
    ],
)
def test_ids_are_readable(config: Config, expected: str) -> None:
    assert config.id == expected


def test_long_options_get_a_stable_digest_id() -> None:
    options = {
        "coordinate_descent_tuning": True,
        "coordinate_descent_check_all_directions": True,
        "max_autotune": False,
    }
    config = Config(options=options)
    assert config.id.startswith("options-") and len(config.id) == len("options-") + 8
    assert Config(options=dict(reversed(list(options.items())))).id == config.id


_OPTION_KEYS = [
    "coordinate_descent_tuning",
    "max_autotune",
    "epilogue_fusion",
    "shape_padding",
    "triton.cudagraphs",
    "freezing",
]


@settings(max_examples=200, deadline=None)
@given(
    st.dictionaries(st.sampled_from(_OPTION_KEYS), st.booleans(), max_size=4),
    st.dictionaries(st.sampled_from(_OPTION_KEYS), st.booleans(), max_size=4),
    st.sampled_from([None, True, False]),
    st.booleans(),
)
def test_ids_differ_exactly_when_configs_differ(
    first: dict[str, bool], second: dict[str, bool], dynamic: bool | None, fullgraph: bool
) -> None:
    a = Config(options=first or None, dynamic=dynamic, fullgraph=fullgraph)
    b = Config(options=second or None, dynamic=dynamic, fullgraph=fullgraph)
    assert (a.id == b.id) == (a == b)
    assert a.id == Config(options=dict(first) or None, dynamic=dynamic, fullgraph=fullgraph).id


def test_describe_is_json_ready() -> None:
    import json

    config = Config(autocast_enabled=True, autocast_dtype=torch.bfloat16, dynamic=False)
    assert json.loads(json.dumps(config.describe()))["autocast_dtype"] == "bfloat16"


_ANYTHING = (
    st.none()
    | st.booleans()
    | st.integers()
    | st.floats(allow_nan=True)
    | st.text(max_size=12)
    | st.lists(st.integers(), max_size=3)
    | st.dictionaries(st.text(max_size=4), st.integers(), max_size=2)
    | st.sampled_from([torch.bfloat16, torch.float16, torch.int8, torch.float32, object()])
)


@settings(max_examples=400, deadline=None)
@given(
    fullgraph=_ANYTHING,
    dynamic=_ANYTHING,
    mode=st.sampled_from([None, "default", "max-autotune-no-cudagraphs", "fast"]) | _ANYTHING,
    options=st.none()
    | st.dictionaries(
        st.sampled_from([*_OPTION_KEYS, "freezeing", "x.y", None, 3]) | st.text(max_size=6),
        _ANYTHING,
    )
    | _ANYTHING,
    autocast_enabled=st.booleans() | _ANYTHING,
    autocast_dtype=_ANYTHING,
)
def test_fuzzed_configs_are_built_or_refused_with_a_value_error(**kwargs: object) -> None:
    """Whatever is passed: a usable config, or a ValueError, never another exception."""
    try:
        config = Config(**kwargs)  # type: ignore[arg-type]
    except ValueError as exc:
        assert str(exc)
        return
    assert isinstance(config.id, str) and config.id and " " not in config.id
    assert hash(config) == hash(Config(**kwargs))  # type: ignore[arg-type]
    import json

    json.dumps(config.describe())
    assert config.compile_kwargs()["backend"] == "inductor"


@pytest.mark.parametrize(
    ("options", "message"),
    [
        ({"freezing": "yes"}, "inductor option 'freezing' takes a bool, got 'yes' (str)"),
        ({"max_autotune_gemm_backends": 1}, "'max_autotune_gemm_backends' takes a str, got 1"),
    ],
)
def test_option_values_are_checked_against_inductors_types(
    options: dict[str, object], message: str
) -> None:
    with pytest.raises(ValueError, match=re.escape(message)):
        Config(options=options)


def test_option_values_inductor_accepts_are_accepted() -> None:
    # what torch.compile itself accepts: a bool, an int where an int is asked, any value for
    # a key whose type is generic (list[int], a union), which torch does not check either
    config = Config(
        options={"freezing": True, "epilogue_fusion": False, "realize_opcount_threshold": 30}
    )
    assert config.options["realize_opcount_threshold"] == 30
