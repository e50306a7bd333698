"""Accuracy against eager: nested outputs, dtype-aware tolerances, NaN and structure checks."""

from __future__ import annotations

import collections

import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from pytest_tweak.accuracy import Tolerance, compare_outputs, default_tolerance


def test_equal_outputs_match_with_zero_error() -> None:
    x = torch.randn(4, 8)
    accuracy = compare_outputs(x.clone(), x)
    assert accuracy.ok and accuracy.checked
    assert (accuracy.max_abs, accuracy.max_rel, accuracy.tensors) == (0.0, 0.0, 1)
    assert accuracy.tolerance == Tolerance(1e-4, 1e-5)
    assert accuracy.describe().startswith("matches eager: max abs error 0, max rel error 0")


def test_a_wrong_element_names_where_and_the_errors() -> None:
    expected = {"logits": torch.ones(3, 4), "aux": (torch.zeros(2), 7)}
    actual = {"logits": torch.ones(3, 4), "aux": (torch.tensor([0.0, 0.5]), 7)}
    accuracy = compare_outputs(actual, expected)
    assert not accuracy.ok
    assert accuracy.where == "output['aux'][0]"
    assert accuracy.max_abs == pytest.approx(0.5)
    assert accuracy.problem == "1 of 2 element(s) outside the tolerance"
    text = accuracy.describe()
    assert "output differs from eager at output['aux'][0]" in text
    assert "max abs error 0.5" in text and "rtol 0.0001, atol 1e-05" in text


def test_nan_where_eager_has_numbers_is_wrong_and_shared_nans_are_fine() -> None:
    expected = torch.tensor([1.0, float("nan"), 3.0])
    assert compare_outputs(expected.clone(), expected).ok
    actual = torch.tensor([float("nan"), float("nan"), 3.0])
    accuracy = compare_outputs(actual, expected)
    assert not accuracy.ok
    assert accuracy.problem == "1 NaN value(s) where eager has numbers"


def test_infinities_must_match() -> None:
    expected = torch.tensor([float("inf"), 1.0])
    assert compare_outputs(expected.clone(), expected).ok
    assert not compare_outputs(torch.tensor([float("-inf"), 1.0]), expected).ok


@pytest.mark.parametrize(
    ("actual", "expected", "problem"),
    [
        (torch.ones(2, 3), torch.ones(3, 2), "shape (2, 3) where eager has (3, 2)"),
        (torch.ones(2), torch.ones(2, dtype=torch.float64), "dtype torch.float32 where eager*"),
        ((torch.ones(2),), (torch.ones(2), torch.ones(2)), "a tuple of 1 where eager has*"),
        ({"a": torch.ones(1)}, {"b": torch.ones(1)}, "keys differ: missing 'b'; extra 'a'"),
        (torch.ones(1), 1.0, "a tensor of shape (1,) where eager has a float"),
        ("x", "y", "'x' != eager's 'y'"),
    ],
)
def test_structural_differences_are_wrong(actual: object, expected: object, problem: str) -> None:
    import fnmatch

    accuracy = compare_outputs(actual, expected)
    assert not accuracy.ok
    assert accuracy.problem is not None and fnmatch.fnmatch(accuracy.problem, problem)


def test_named_tuples_lists_numbers_and_none_are_walked() -> None:
    Out = collections.namedtuple("Out", "a b")
    expected = [Out(torch.ones(2), None), 3, 2.5]
    assert compare_outputs([Out(torch.ones(2), None), 3, 2.5], expected).ok
    bad = compare_outputs([Out(torch.ones(2), None), 3, 2.6], expected)
    assert not bad.ok and bad.where == "output[2]"


class _Layer:
    def __init__(self, keys: torch.Tensor) -> None:
        self.keys = keys


class _Cache:
    """A stand-in for a Hugging Face DynamicCache: no equality of its own, tensors inside."""

    def __init__(self, *keys: torch.Tensor) -> None:
        self.layers = [_Layer(k) for k in keys]
        self.owner = self  # a cycle: the walk goes round it once


def test_objects_without_an_equality_are_compared_by_what_they_hold() -> None:
    # two such objects are never ==: compared as they were, every model returning a cache
    # was "wrong", and the eager determinism check blamed random ops
    expected = {"last_hidden_state": torch.ones(2), "past_key_values": _Cache(torch.ones(3))}
    same = {"last_hidden_state": torch.ones(2), "past_key_values": _Cache(torch.ones(3))}
    assert compare_outputs(same, expected).ok
    off = {"last_hidden_state": torch.ones(2), "past_key_values": _Cache(torch.full((3,), 2.0))}
    bad = compare_outputs(off, expected)
    assert not bad.ok and bad.where == "output['past_key_values'].layers[0].keys"
    fewer = _Cache(torch.ones(3))
    del fewer.owner
    assert compare_outputs(fewer, _Cache(torch.ones(3))).problem == (
        "attributes differ: missing 'owner'; extra -"
    )


def test_integer_outputs_must_be_equal() -> None:
    assert default_tolerance(torch.int64) == Tolerance(0.0, 0.0)
    assert not compare_outputs(torch.tensor([1, 2]), torch.tensor([1, 3])).ok


def test_tolerances_by_dtype_and_looser_under_autocast() -> None:
    fp32 = default_tolerance(torch.float32)
    bf16 = default_tolerance(torch.bfloat16)
    assert bf16.rtol > default_tolerance(torch.float16).rtol > fp32.rtol
    # a float32 output under bf16 autocast went through bf16: held to bf16's tolerance
    assert default_tolerance(torch.float32, torch.bfloat16) == bf16
    # a bf16 rounding error fails at float32's tolerance and passes under autocast
    x = torch.randn(64)
    rounded = x.to(torch.bfloat16).to(torch.float32)
    assert not compare_outputs(rounded, x).ok
    under = compare_outputs(rounded, x, autocast_dtype=torch.bfloat16)
    assert under.ok
    # said so: the check is of the compiler under autocast, not of autocast's precision
    # (fourteenth user trial: tune's "matches eager" read as "matches the float32 model")
    assert under.describe().startswith("matches eager under bfloat16 autocast: max abs error")
    assert under.as_dict()["autocast"] == "bfloat16"
    assert compare_outputs(x, x).as_dict()["autocast"] is None


def test_explicit_tolerances_replace_the_defaults() -> None:
    expected = torch.tensor([1.0, 2.0])
    actual = torch.tensor([1.05, 2.0])
    assert not compare_outputs(actual, expected).ok
    loose = compare_outputs(actual, expected, rtol=0.1)
    assert loose.ok and loose.tolerance == Tolerance(0.1, 1e-5)


@settings(max_examples=60, deadline=None)
@given(
    values=st.lists(st.floats(-1e6, 1e6, allow_nan=False, width=32), min_size=1, max_size=20),
    scale=st.floats(0.0, 0.5),
)
def test_the_rule_is_assert_closes_rule(values: list[float], scale: float) -> None:
    expected = torch.tensor(values, dtype=torch.float32)
    actual = expected + scale * expected.abs().clamp_min(1e-3) * 1e-4 * 2
    accuracy = compare_outputs(actual, expected)
    tolerance = default_tolerance(torch.float32)
    close = torch.isclose(actual.double(), expected.double(), tolerance.rtol, tolerance.atol)
    assert accuracy.ok == bool(close.all())
    assert accuracy.max_abs == pytest.approx(float((actual - expected).abs().max()), abs=1e-9)


def test_float32_under_tf32_gets_tf32_tolerance_and_other_dtypes_keep_theirs() -> None:
    assert default_tolerance(torch.float32) == Tolerance(1e-4, 1e-5)
    assert default_tolerance(torch.float32, tf32=True) == Tolerance(1e-3, 5e-3)
    assert default_tolerance(torch.bfloat16, tf32=True) == default_tolerance(torch.bfloat16)
    assert default_tolerance(torch.float64, tf32=True) == default_tolerance(torch.float64)
    # autocast is never tighter than TF32's
    assert default_tolerance(torch.float32, torch.bfloat16, tf32=True).atol == 1e-2


def test_a_python_float_is_held_to_the_default_dtypes_tolerance() -> None:
    """A loss returned as ``loss.item()`` comes from a float32 tensor: a reduction inductor
    reorders differs by a few float32 roundings, which float64's tolerance would call wrong."""
    x = torch.randn(97, 333)
    eager = float((x * 3.1).var())
    compiled = eager * (1 + 4e-7)  # a reordered float32 reduction, as the trial measured
    assert compare_outputs(compiled, eager).ok
    assert compare_outputs(compiled, eager).tolerance == default_tolerance(torch.float32)
    assert not compare_outputs(eager * (1 + 1e-3), eager).ok  # a real difference still fails
    previous = torch.get_default_dtype()
    torch.set_default_dtype(torch.float64)
    try:  # a suite computing in float64 gets float64's tolerance
        assert not compare_outputs(compiled, eager).ok
    finally:
        torch.set_default_dtype(previous)
