"""`Module`, tuning strategies and `tune`: measure backends on real input, keep the fastest.

strategy = BestOfStrategy([EagerBackend(), TorchInductorBackend(config_a), ...])
module = Module(model, "my-model", strategy=strategy)
result = tune(module, x)        # measures every backend on x
result.winner                   # the fastest backend
module(x)                       # runs the winner's compiled model
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import Any

import torch

from .backends import Backend, TorchInductorBackend, model_device, refuse_compiled
from .case import BenchmarkResult, CaseError, LocalRunner, run_case
from .counters import reset_dynamo
from .devices import DEVICES, availability, refuse_meta
from .measure import CaseChecks, Instruments, MeasureSettings
from .registry import builtin_backends
from .stats import lead

__all__ = ["BestOfStrategy", "Module", "OneBackendStrategy", "TuneResult", "tune"]


class OneBackendStrategy:
    """Use one backend: tuning measures it and always picks it."""

    def __init__(self, backend: Backend) -> None:
        if not isinstance(backend, Backend):
            raise TypeError(f"OneBackendStrategy takes a backend, got {type(backend).__name__}")
        self.backend = backend

    @property
    def backends(self) -> tuple[Backend, ...]:
        """The one backend, as a tuple."""
        return (self.backend,)

    def __repr__(self) -> str:
        return f"OneBackendStrategy({self.backend!r})"


class BestOfStrategy:
    """Measure several backends and keep the one with the lowest median time."""

    def __init__(self, backends: Iterable[Backend]) -> None:
        if isinstance(backends, Backend):
            raise TypeError(
                f"BestOfStrategy takes a list of backends, got one ({backends!r}): "
                "BestOfStrategy([...]), or OneBackendStrategy(backend) for one"
            )
        if not isinstance(backends, Iterable) or isinstance(backends, str):
            raise TypeError(
                f"BestOfStrategy takes a list of backends, got {backends!r}: "
                "BestOfStrategy([EagerBackend(), TorchInductorBackend()]), say"
            )
        backends = tuple(backends)
        if not backends:
            raise ValueError("BestOfStrategy needs at least one backend")
        for backend in backends:
            if not isinstance(backend, Backend):
                raise TypeError(f"BestOfStrategy takes backends, got {type(backend).__name__}")
        names = [b.name for b in backends]
        duplicates = sorted({n for n in names if names.count(n) > 1})
        if duplicates:
            raise ValueError(f"BestOfStrategy got the same backend twice: {', '.join(duplicates)}")
        self._backends = backends

    @property
    def backends(self) -> tuple[Backend, ...]:
        """The backends to measure, in the order given."""
        return self._backends

    def __repr__(self) -> str:
        return f"BestOfStrategy({list(self._backends)!r})"


Strategy = OneBackendStrategy | BestOfStrategy


class Module:
    """A model with a name and a tuning strategy; after `tune`, calls run the winner.

    A wrapper for calling, not a ``torch.nn.Module``: its model's parameters, ``.to()``,
    ``.eval()`` and ``state_dict()`` are ``module.model``'s. Keep it out of an
    ``nn.Module``'s attributes (the parent would not see the parameters); wrap the whole
    model instead, or assign ``module.model`` there.
    """

    def __init__(
        self, model: Callable[..., Any], name: str, strategy: Strategy | None = None
    ) -> None:
        if not callable(model):
            raise TypeError(f"Module takes a callable model, got {type(model).__name__}")
        refuse_compiled(model, "Module")
        if not isinstance(name, str) or not name:
            raise ValueError(f"Module needs a non-empty name (a str), got {name!r}")
        if strategy is None:
            strategy = OneBackendStrategy(TorchInductorBackend())
        elif not isinstance(strategy, (OneBackendStrategy, BestOfStrategy)):
            got = type(strategy).__name__
            if isinstance(strategy, Backend):
                got = f"the backend {strategy!r}: pass strategy=OneBackendStrategy({strategy!r})"
            raise TypeError(
                f"Module's strategy is a OneBackendStrategy or BestOfStrategy, got {got}"
            )
        self.model = model
        self.name = name
        self.strategy = strategy
        self._tuned: Callable[..., Any] | None = None
        self.tune_result: TuneResult | None = None

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        target = self._tuned if self._tuned is not None else self.model
        return target(*args, **kwargs)

    def __repr__(self) -> str:
        return f"Module({self.name!r}, strategy={self.strategy!r})"


@dataclass(frozen=True)
class TuneResult:
    """What `tune` measured, per backend name, and which backend won.

    Backends that failed to compile or run, whose output did not match the eager model's, or
    that cannot run here (``torchao`` or ``openvino`` not installed, OpenVINO off the cpu) are
    in `errors` with the reason, not in `measurements`.

    Attributes:
        module: The `Module`'s name.
        measurements: Backend name -> its `BenchmarkResult` (``median_s``, ``accuracy``, ...).
        errors: Backend name -> why it was left out.
        winner: The backend with the lowest median, which ``module`` now calls.

    Two backends whose medians are within their noise can swap places between runs: `clear`
    says whether the winner's lead over the `runner_up` is more than that.
    """

    module: str
    measurements: dict[str, BenchmarkResult]
    errors: dict[str, str]
    winner: Backend

    @property
    def best(self) -> BenchmarkResult:
        """The winner's measurement."""
        return self.measurements[self.winner.name]

    @property
    def runner_up(self) -> str | None:
        """The next fastest backend's name; ``None`` when no other backend was timed."""
        others = [
            (result.median_s, name)
            for name, result in self.measurements.items()
            if name != self.winner.name and result.median_s is not None
        ]
        return min(others)[1] if others else None

    @property
    def margin_pct(self) -> float | None:
        """How much slower the `runner_up` is, in percent of the winner's median."""
        found = self._lead()
        return None if found is None else found[0]

    @property
    def clear(self) -> bool | None:
        """Whether the winner's lead is more than noise: the two medians' 95 % confidence
        intervals do not overlap (the plugin's tuning table's rule); ``None`` without a
        `runner_up`."""
        found = self._lead()
        return None if found is None else found[1]

    def _lead(self) -> tuple[float, bool] | None:
        second = self.runner_up
        first = self.best.timing
        other = None if second is None else self.measurements[second].timing
        return None if first is None or other is None else lead(first, other)

    def __repr__(self) -> str:  # the measurements' outputs and samples would fill a screen
        medians = {
            name: None if result.median_s is None else f"{result.median_s * 1e6:.1f} us"
            for name, result in self.measurements.items()
        }
        margin = self.margin_pct
        lead = (
            ""
            if margin is None
            else f", lead=+{margin:.1f}% over {self.runner_up!r}"
            + ("" if self.clear else " (within noise)")
        )
        return (
            f"TuneResult({self.module!r}, winner={self.winner.name!r}{lead}, "
            f"medians={medians}, errors={sorted(self.errors)})"
        )


def tune(
    module: Module,
    input_data: Any,
    *,
    device: torch.device | str | None = None,
    settings: MeasureSettings | None = None,
    kwargs: Mapping[str, Any] | None = None,
) -> TuneResult:
    """Measure every backend of ``module.strategy`` on ``input_data`` and keep the fastest.

    Args:
        module: The model to tune, wrapped with its strategy: ``Module(model, name, strategy)``.
        input_data: One input, or a tuple of positional inputs (a named tuple, a batch, is
            one input).
        kwargs: Keyword inputs of every call (``attention_mask=...`` of a Hugging Face
            model, say), moved to the device like the positional ones.
        device: Where to run; by default the device of the model's parameters.
        settings: Warm-up and timing settings; by default those of the plugin without the
            eager and reference companions (every backend is timed in the same process), and
            with torch's own cpu thread count, which the winner then runs with
            (``cpu_threads=None``). Settings given are used as they are:
            ``MeasureSettings(max_time_s=0.2, eager=False, reference=False)`` keeps the
            companions out (and times cpu backends on one thread, the default).

    Each backend is compiled from a clean slate: dynamo is reset (``torch._dynamo.reset()``)
    before each, and once more before the winner is compiled, so other ``torch.compile``d
    models of the process compile again on their next call. Tune at start-up, before
    compiling the rest. The winner compiles on ``module``'s first call.

    Each backend's output is checked against the eager model's (`BenchmarkResult.accuracy`);
    a backend whose output does not match is not a candidate, however fast. Tuning calls the
    model hundreds of times: whatever a call changes (a ``BatchNorm``'s running statistics in
    train mode, the weights of a training step) changes in ``module.model``. Tune in eval
    mode, or tune a copy (``copy.deepcopy(model)``) and keep the original.

    Returns:
        The measurements and the winner; ``module`` then calls the winner's compiled model.

    Raises:
        RuntimeError: every backend failed (the reasons are in the message), or the device
            is not usable.
        ValueError: the device is not cpu, cuda or xpu.
    """
    if not isinstance(module, Module):
        raise TypeError(
            f"tune takes a pytest_tweak.Module (Module(model, name, strategy)), got "
            f"{type(module).__name__}: wrap the model first"
        )
    if settings is not None and not isinstance(settings, MeasureSettings):
        raise TypeError(
            f"tune's settings are a pytest_tweak.MeasureSettings (for example "
            f"MeasureSettings(max_time_s=0.1)), got {type(settings).__name__}"
        )
    if kwargs is not None and not isinstance(kwargs, Mapping):
        raise TypeError(
            f"tune's kwargs are a mapping of keyword inputs (kwargs={{'attention_mask': "
            f"mask}}), got {type(kwargs).__name__}"
        )
    one = not isinstance(input_data, tuple) or hasattr(input_data, "_fields")
    args = (input_data,) if one else input_data
    # checked before torch reads it: torch's own error lists every device type it knows
    given = model_device(module.model) if device is None else device
    if str(given) == "meta" and isinstance(module.model, torch.nn.Module):
        refuse_meta(module.model)  # what to do about it, not "meta is no device of ours"
    if str(given).split(":")[0] not in DEVICES:
        raise ValueError(
            f"tune({module.name!r}): device {given} is not one pytest-tweak measures on: "
            f"pass one of {', '.join(DEVICES)}"
        )
    where = torch.device(given)
    found = availability(where.type)
    if not found.available:
        raise RuntimeError(f"tune({module.name!r}): device {where} is not usable: {found.reason}")
    if settings is None:
        settings = MeasureSettings(eager=False, reference=False, cpu_threads=None)
    measurements: dict[str, BenchmarkResult] = {}
    errors: dict[str, str] = {}
    instruments = Instruments()  # one timer buffer and reference for every backend
    for backend in module.strategy.backends:
        skipped = _skip_reason(backend, where)
        if skipped is not None:
            errors[backend.name] = skipped
            continue
        try:
            measurements[backend.name] = run_case(
                module.model,
                args,
                dict(kwargs or {}),
                backend=backend,
                device=where,
                settings=settings,
                runner=LocalRunner(),
                instruments=instruments,
                checks=CaseChecks(memory=False),
            )
        except CaseError as exc:
            errors[backend.name] = str(exc)
            continue
        accuracy = measurements[backend.name].accuracy
        if accuracy is not None and not accuracy.ok:
            del measurements[backend.name]
            errors[backend.name] = f"{backend.name} on {where}: {accuracy.describe()}"
    if not measurements:
        raise RuntimeError(
            f"tune({module.name!r}): every backend failed:\n" + "\n".join(errors.values())
        )
    by_name = {b.name: b for b in module.strategy.backends}
    best = min(measurements, key=lambda name: measurements[name].median_s or float("inf"))
    winner = by_name[best]
    # Compile the winner afresh: each case's compiled code was dropped by the next reset.
    reset_dynamo()
    module._tuned = winner.compile(module.model, where)
    result = TuneResult(module.name, measurements, errors, winner)
    module.tune_result = result
    return result


def _skip_reason(backend: Backend, device: torch.device) -> str | None:
    """Why one of pytest-tweak's own backends cannot run here (its package is not installed,
    or it does not run on ``device``), as a test of it would be skipped; ``None`` otherwise."""
    spec = next((s for s in builtin_backends().values() if type(backend) is s.factory), None)
    return None if spec is None else spec.skip_reason(backend.name, device.type)
