"""Accuracy against eager: the compiled model's output compared with the uncompiled model's.

Outputs may be tensors, numbers, strings, ``None``, or tuples, lists, dicts, named tuples
and dataclasses of those, nested; an object of another class without an equality of its own
(a Hugging Face ``DynamicCache``) is compared by its attributes. Tensors are compared
elementwise: an element is close when ``|compiled - eager| <= atol + rtol * |eager|`` (the
rule of ``torch.testing.assert_close``).
NaN where eager has NaN is equal; NaN where eager has a number is wrong; infinities must match.
A Python float (a loss returned as ``loss.item()``) is held to the tolerance of torch's
default dtype (float32 unless ``torch.set_default_dtype`` says otherwise), where it most often
comes from.

The default tolerances depend on the dtype and are looser than ``assert_close``'s: inductor
fuses, reorders reductions and keeps low-precision intermediates in float32, so the compiled
result is *a* correct rounding, not eager's rounding. float32 uses the 1e-4 relative tolerance
PyTorch's own dynamo benchmark harness uses for inference; half precisions allow a few units
in the last place. Under autocast, an output is held to the autocast dtype's tolerance even
when it comes back as float32 (its values went through that dtype on the way). A float32
output on cuda while TF32 is allowed (``torch.backends.cudnn.allow_tf32``, on by default, or
``torch.backends.cuda.matmul.allow_tf32``) is held to TF32's tolerance, the one PyTorch's own
tests use for TF32 (``tf32_on_and_off(0.005)``): its convolutions and matrix products round
inputs to a 10-bit mantissa, and eager and inductor may pick different kernels.
"""

from __future__ import annotations

import math
import warnings
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from typing import Any

import torch

__all__ = ["Accuracy", "Tolerance", "compare_outputs", "default_tolerance"]


@dataclass(frozen=True)
class Tolerance:
    """``|compiled - eager| <= atol + rtol * |eager|``."""

    rtol: float
    atol: float

    def __str__(self) -> str:
        return f"rtol {self.rtol:.3g}, atol {self.atol:.3g}"


#: (rtol, atol) of compiled against eager, by dtype; see the module docstring.
_TOLERANCES: dict[torch.dtype, Tolerance] = {
    torch.float64: Tolerance(1e-7, 1e-7),
    torch.float32: Tolerance(1e-4, 1e-5),
    torch.complex128: Tolerance(1e-7, 1e-7),
    torch.complex64: Tolerance(1e-4, 1e-5),
    torch.float16: Tolerance(1e-2, 1e-3),
    torch.bfloat16: Tolerance(3.2e-2, 1e-2),
}
_FLOAT8 = Tolerance(0.25, 0.1)
#: float32 (and complex64) computed with TF32 convolutions or matrix products on cuda.
_TF32 = Tolerance(1e-3, 5e-3)


def default_tolerance(
    dtype: torch.dtype, autocast_dtype: torch.dtype | None = None, *, tf32: bool = False
) -> Tolerance:
    """The tolerance for an output of ``dtype``; under autocast, no tighter than the autocast
    dtype's; with ``tf32`` (TF32 allowed on cuda), a float32 output gets TF32's tolerance.
    Integer and boolean outputs must be equal."""
    own = _TOLERANCES.get(dtype)
    if own is not None and tf32 and dtype in (torch.float32, torch.complex64):
        own = _TF32
    if own is None:
        own = _FLOAT8 if dtype.is_floating_point else Tolerance(0.0, 0.0)
    if autocast_dtype is None:
        return own
    cast = _TOLERANCES.get(autocast_dtype, own)
    return Tolerance(max(own.rtol, cast.rtol), max(own.atol, cast.atol))


@dataclass(frozen=True)
class Accuracy:
    """The compiled output against eager's.

    Attributes:
        ok: Every part of the output matched within its tolerance.
        max_abs: Largest absolute difference over all tensor elements.
        max_rel: Largest relative difference (to eager's value) over the elements where eager
            is not zero.
        tolerance: The tolerance of the tensor with the worst element (the first tensor's
            when all matched exactly).
        where: The part of the output of the worst mismatch, e.g. ``output[1]['logits']``;
            ``None`` when everything matched.
        problem: What is wrong, in words; ``None`` when ``ok``.
        tensors: Tensors compared.
        checked: False when the comparison was not made; ``problem`` then says why.
        autocast: The autocast dtype both ran under (``"bfloat16"``), or ``None``: the check
            is then of the compiler under autocast, not of autocast's precision against the
            model as given.
    """

    ok: bool
    max_abs: float = 0.0
    max_rel: float = 0.0
    tolerance: Tolerance | None = None
    where: str | None = None
    problem: str | None = None
    tensors: int = 0
    checked: bool = True
    autocast: str | None = None

    @classmethod
    def not_checked(cls, why: str) -> Accuracy:
        """An accuracy that was not compared, and why (``ok`` stays true)."""
        return cls(ok=True, problem=why, checked=False)

    def describe(self) -> str:
        """The comparison in one line, for messages and reports."""
        if not self.checked:
            return f"accuracy not checked: {self.problem}"
        figures = f"max abs error {self.max_abs:.3g}, max rel error {self.max_rel:.3g}"
        tolerance = f" ({self.tolerance})" if self.tolerance is not None else ""
        eager = "eager" if self.autocast is None else f"eager under {self.autocast} autocast"
        if self.ok:
            return f"matches {eager}: {figures}{tolerance}, {self.tensors} tensor(s)"
        return f"output differs from {eager} at {self.where}: {self.problem}; {figures}{tolerance}"

    def as_dict(self) -> dict[str, Any]:
        """As the JSON report and the baseline's tooling write it."""
        return {
            "checked": self.checked,
            "ok": self.ok,
            "max_abs": self.max_abs,
            "max_rel": self.max_rel,
            "rtol": None if self.tolerance is None else self.tolerance.rtol,
            "atol": None if self.tolerance is None else self.tolerance.atol,
            "where": self.where,
            "problem": self.problem,
            "tensors": self.tensors,
            "autocast": self.autocast,
        }


@dataclass
class _Worst:
    max_abs: float = 0.0
    max_rel: float = 0.0
    tolerance: Tolerance | None = None
    excess: float = -math.inf  # how far past its tolerance the worst element is
    where: str | None = None
    problem: str | None = None
    tensors: int = 0


def compare_outputs(
    compiled: Any,
    eager: Any,
    *,
    autocast_dtype: torch.dtype | None = None,
    rtol: float | None = None,
    atol: float | None = None,
) -> Accuracy:
    """Compare ``compiled`` with ``eager`` (see the module docstring).

    ``rtol`` and ``atol``, when given, replace the dtype's defaults (each on its own).
    """
    worst = _Worst()
    for where, actual, expected in _walk(compiled, eager, "output"):
        if isinstance(expected, _Mismatch):
            _fail(worst, where, expected.text)
            continue
        if isinstance(expected, torch.Tensor):
            _compare_tensors(worst, where, actual, expected, autocast_dtype, rtol, atol)
        elif isinstance(expected, float) and isinstance(actual, float):
            if not (actual == expected or (math.isnan(actual) and math.isnan(expected))):
                # a Python float is most often ``.item()`` of a tensor of the default dtype
                # (a loss): held to that dtype's tolerance, not float64's
                dtype = torch.get_default_dtype()
                _compare_tensors(
                    worst,
                    where,
                    torch.tensor(actual, dtype=dtype),
                    torch.tensor(expected, dtype=dtype),
                    None,
                    rtol,
                    atol,
                )
        elif actual != expected:
            _fail(worst, where, f"{actual!r} != eager's {expected!r}")
    return Accuracy(
        ok=worst.problem is None,
        max_abs=worst.max_abs,
        max_rel=worst.max_rel,
        tolerance=worst.tolerance,
        where=worst.where,
        problem=worst.problem,
        tensors=worst.tensors,
        autocast=None if autocast_dtype is None else str(autocast_dtype).removeprefix("torch."),
    )


@dataclass(frozen=True)
class _Mismatch:
    text: str


def _walk(
    actual: Any, expected: Any, where: str, seen: frozenset[int] = frozenset()
) -> Iterator[tuple[str, Any, Any]]:
    """Pairs of leaves of two nested outputs; a structural difference is a `_Mismatch`.
    ``seen``: the objects walked into on the way here (`_plain_object`)."""
    if isinstance(expected, torch.Tensor) or isinstance(actual, torch.Tensor):
        if not (isinstance(expected, torch.Tensor) and isinstance(actual, torch.Tensor)):
            yield where, actual, _Mismatch(f"{_kind(actual)} where eager has {_kind(expected)}")
        else:
            yield where, actual, expected
        return
    if isinstance(expected, Mapping):
        if not isinstance(actual, Mapping) or set(actual) != set(expected):
            yield where, actual, _Mismatch(_keys_text(actual, expected))
            return
        for key in expected:
            yield from _walk(actual[key], expected[key], f"{where}[{key!r}]", seen)
        return
    if isinstance(expected, (list, tuple)):
        if not isinstance(actual, (list, tuple)) or len(actual) != len(expected):
            yield where, actual, _Mismatch(f"{_kind(actual)} where eager has {_kind(expected)}")
            return
        for i, (a, e) in enumerate(zip(actual, expected, strict=True)):
            yield from _walk(a, e, f"{where}[{i}]", seen)
        return
    if hasattr(expected, "__dataclass_fields__") and type(actual) is type(expected):
        for name in expected.__dataclass_fields__:
            yield from _walk(
                getattr(actual, name), getattr(expected, name), f"{where}.{name}", seen
            )
        return
    if _plain_object(expected) and type(actual) is type(expected):
        # an object without its own equality (a Hugging Face DynamicCache): two of them are
        # never ==, so compare what they hold, once per object (a cycle ends the walk)
        if id(expected) in seen:
            return
        mine, theirs = vars(actual), vars(expected)
        if set(mine) != set(theirs):
            yield where, actual, _Mismatch(_keys_text(mine, theirs).replace("keys", "attributes"))
            return
        for name, value in theirs.items():
            yield from _walk(mine[name], value, f"{where}.{name}", seen | {id(expected)})
        return
    yield where, actual, expected


def _plain_object(value: Any) -> bool:
    """An instance with attributes and the identity equality of `object`."""
    eq: object = type(value).__eq__
    return hasattr(value, "__dict__") and eq is object.__eq__


def _kind(value: Any) -> str:
    if isinstance(value, torch.Tensor):
        return f"a tensor of shape {tuple(value.shape)}"
    if isinstance(value, (list, tuple)):
        return f"a {type(value).__name__} of {len(value)}"
    return f"a {type(value).__name__}"


def _keys_text(actual: Any, expected: Mapping[Any, Any]) -> str:
    if not isinstance(actual, Mapping):
        return f"{_kind(actual)} where eager has a {type(expected).__name__}"
    missing = sorted(map(repr, set(expected) - set(actual)))
    extra = sorted(map(repr, set(actual) - set(expected)))
    return f"keys differ: missing {', '.join(missing) or '-'}; extra {', '.join(extra) or '-'}"


def _fail(worst: _Worst, where: str, problem: str) -> None:
    if worst.problem is None or worst.excess < math.inf:
        worst.where, worst.problem, worst.excess = where, problem, math.inf


def _compare_tensors(
    worst: _Worst,
    where: str,
    actual: torch.Tensor,
    expected: torch.Tensor,
    autocast_dtype: torch.dtype | None,
    rtol: float | None,
    atol: float | None,
) -> None:
    worst.tensors += 1
    if actual.shape != expected.shape:
        _fail(worst, where, f"shape {tuple(actual.shape)} where eager has {tuple(expected.shape)}")
        return
    if actual.dtype != expected.dtype:
        _fail(worst, where, f"dtype {actual.dtype} where eager has {expected.dtype}")
        return
    default = default_tolerance(expected.dtype, autocast_dtype, tf32=_tf32_allowed(expected))
    tolerance = Tolerance(
        default.rtol if rtol is None else rtol, default.atol if atol is None else atol
    )
    if worst.tolerance is None:
        worst.tolerance = tolerance
    if actual.numel() == 0:
        return
    a = actual.detach().to("cpu", torch.complex128 if actual.is_complex() else torch.float64)
    e = expected.detach().to("cpu", a.dtype)
    a_nan, e_nan = torch.isnan(a), torch.isnan(e)
    if bool((a_nan & ~e_nan).any()):
        count = int((a_nan & ~e_nan).sum())
        _fail(worst, where, f"{count} NaN value(s) where eager has numbers")
    if bool((~a_nan & e_nan).any()):
        count = int((~a_nan & e_nan).sum())
        _fail(worst, where, f"{count} number(s) where eager has NaN")
    both = ~(a_nan | e_nan)
    a, e = a[both], e[both]
    a_inf, e_inf = torch.isinf(a), torch.isinf(e)
    if bool((a_inf | e_inf).any()) and not torch.equal(a[a_inf | e_inf], e[a_inf | e_inf]):
        _fail(worst, where, "infinite values differ from eager's")
    finite = ~(a_inf | e_inf)
    a, e = a[finite], e[finite]
    if a.numel() == 0:
        return
    diff = (a - e).abs()
    scale = e.abs()
    max_abs = float(diff.max())
    nonzero = scale > 0
    max_rel = float((diff[nonzero] / scale[nonzero]).max()) if bool(nonzero.any()) else 0.0
    allowed = tolerance.atol + tolerance.rtol * scale
    excess = float((diff - allowed).max())
    worst.max_abs = max(worst.max_abs, max_abs)
    worst.max_rel = max(worst.max_rel, max_rel)
    if excess > 0:
        bad = int((diff > allowed).sum())
        problem = f"{bad} of {diff.numel()} element(s) outside the tolerance"
        if worst.problem is None or excess > worst.excess:
            worst.where, worst.problem, worst.excess = where, problem, excess
            worst.tolerance = tolerance
    elif worst.problem is None and excess > worst.excess:
        worst.excess = excess
        worst.tolerance = tolerance


def _tf32_allowed(tensor: torch.Tensor) -> bool:
    """Whether cuda may have computed ``tensor`` with TF32 (convolutions or matrix products)."""
    if tensor.device.type != "cuda":
        return False
    with warnings.catch_warnings():  # newer torch may call these flags legacy
        warnings.simplefilter("ignore")
        return bool(torch.backends.cudnn.allow_tf32 or torch.backends.cuda.matmul.allow_tf32)
