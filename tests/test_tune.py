"""Module, strategies and tune: measure backends for real and keep the fastest."""

from __future__ import annotations

import dataclasses
import importlib.util

import pytest
import torch
from models import PrintBreak, TinyMLP

from pytest_tweak import (
    Backend,
    BestOfStrategy,
    EagerBackend,
    MeasureSettings,
    Module,
    OneBackendStrategy,
    TorchInductorBackend,
    TorchInductorBackendConfig,
    tune,
)

QUICK = MeasureSettings(warmup_s=0.01, max_time_s=0.05, min_rounds=5)


def test_best_of_measures_every_backend_and_keeps_the_fastest() -> None:
    torch.manual_seed(0)
    model, x = TinyMLP().eval(), torch.randn(8, 16)
    expected = model(x)
    strategy = BestOfStrategy([EagerBackend(), TorchInductorBackend()])
    module = Module(model, "tiny", strategy=strategy)
    result = tune(module, x, settings=QUICK)
    assert set(result.measurements) == {"eager", "inductor-default"}
    medians = {name: m.median_s for name, m in result.measurements.items()}
    assert all(m is not None and m > 0 for m in medians.values())
    assert result.winner.name == min(medians, key=lambda n: medians[n])  # type: ignore[arg-type, return-value]
    assert result.best is result.measurements[result.winner.name]
    assert module.tune_result is result
    torch.testing.assert_close(module(x), expected)
    # the lead, and whether it is more than noise (fourteenth user trial: a 0.4 % lead read
    # as a win): with the same medians, wide intervals make it noise, zero-width ones do not
    (other,) = set(medians) - {result.winner.name}
    assert result.runner_up == other
    assert result.margin_pct == pytest.approx(
        (medians[other] / medians[result.winner.name] - 1) * 100
    )
    assert result.margin_pct is not None and result.margin_pct >= 0
    assert f"lead=+{result.margin_pct:.1f}% over {other!r}" in repr(result)
    wide = dataclasses.replace(result.best.timing, log_sd=1.0)
    close = dataclasses.replace(
        result,
        measurements={
            name: dataclasses.replace(m, timing=wide) for name, m in result.measurements.items()
        },
    )
    assert close.clear is False and "(within noise)" in repr(close)
    narrow = dataclasses.replace(result.best.timing, log_sd=0.0)
    apart = {
        name: dataclasses.replace(m, timing=dataclasses.replace(narrow, median=m.median_s))
        for name, m in result.measurements.items()
    }
    assert dataclasses.replace(result, measurements=apart).clear is (
        medians[other] != medians[result.winner.name]
    )


def test_one_backend_strategy_always_picks_its_backend() -> None:
    backend = TorchInductorBackend(TorchInductorBackendConfig(dynamic=False))
    module = Module(TinyMLP(), "tiny", strategy=OneBackendStrategy(backend))
    result = tune(module, torch.randn(4, 16), settings=QUICK)
    assert result.winner is backend
    assert result.best.timing is not None and result.best.timing.n >= 5
    assert result.runner_up is None and result.margin_pct is None and result.clear is None


def test_tune_passes_keyword_inputs_to_every_call() -> None:
    """A Hugging Face model takes ``input_ids=..., attention_mask=...``: keyword inputs reach
    every backend's calls, and the winner answers the same call."""

    class Masked(torch.nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.lin = torch.nn.Linear(16, 16)

        def forward(self, x: torch.Tensor, *, mask: torch.Tensor) -> torch.Tensor:
            return self.lin(x) * mask

    model, x, mask = Masked().eval(), torch.randn(4, 16), torch.zeros(4, 16)
    module = Module(model, "masked", strategy=BestOfStrategy([EagerBackend()]))
    result = tune(module, x, settings=QUICK, kwargs={"mask": mask})
    assert result.best.timing is not None and result.errors == {}
    assert torch.count_nonzero(module(x, mask=mask)) == 0
    with pytest.raises(RuntimeError, match=r"every backend failed(.|\n)*TypeError.*'mask'"):
        tune(module, x, settings=QUICK)  # without it, each call fails as the model says


def test_a_backend_that_fails_is_reported_and_the_rest_still_run() -> None:
    failing = TorchInductorBackend(TorchInductorBackendConfig(fullgraph=True))
    strategy = BestOfStrategy([failing, EagerBackend()])
    result = tune(Module(PrintBreak(), "print", strategy), torch.randn(4, 16), settings=QUICK)
    assert result.winner.name == "eager"
    assert set(result.measurements) == {"eager"}
    error = result.errors["inductor-fullgraph"]
    assert error.startswith("inductor-fullgraph on cpu: Unsupported: ")
    assert 'print("", end="")' in error  # the user's source line


def test_strategies_check_their_input() -> None:
    with pytest.raises(ValueError, match="at least one backend"):
        BestOfStrategy([])
    with pytest.raises(ValueError, match="same backend twice: eager"):
        BestOfStrategy([EagerBackend(), EagerBackend()])
    with pytest.raises(TypeError):
        OneBackendStrategy("inductor")  # type: ignore[arg-type]
    wrap = r"tune takes a pytest_tweak.Module \(Module\(model, name, strategy\)\), got .*wrap"
    with pytest.raises(TypeError, match=wrap):
        tune(TinyMLP(), torch.randn(1, 16))  # type: ignore[arg-type]
    with pytest.raises(TypeError, match=r"a list of backends, got one .*OneBackendStrategy"):
        BestOfStrategy(EagerBackend())  # type: ignore[arg-type]
    with pytest.raises(TypeError, match=r"a list of backends, got None"):
        BestOfStrategy(None)  # type: ignore[arg-type]
    assert len(BestOfStrategy(b for b in [EagerBackend()]).backends) == 1  # any iterable


def test_module_and_tune_name_a_wrong_argument_before_measuring() -> None:
    """Each used to be accepted and fail later: an AttributeError inside tune, or "every
    backend failed" for a model that was a string."""
    with pytest.raises(TypeError, match="callable model, got str"):
        Module("model", "x")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match=r"non-empty name .*got 123"):
        Module(TinyMLP(), 123)  # type: ignore[arg-type]
    with pytest.raises(TypeError, match=r"strategy=OneBackendStrategy\(EagerBackend"):
        Module(TinyMLP(), "x", strategy=EagerBackend())  # type: ignore[arg-type]
    module = Module(TinyMLP(), "x", strategy=OneBackendStrategy(EagerBackend()))
    with pytest.raises(TypeError, match=r"MeasureSettings\(max_time_s=0.1\)\), got dict"):
        tune(module, torch.randn(1, 16), settings={"max_time": 0.1})  # type: ignore[arg-type]
    with pytest.raises(TypeError, match=r"kwargs are a mapping of keyword inputs .*got list"):
        tune(module, torch.randn(1, 16), kwargs=[1])  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="max_time_s must be a number >= 0, got True"):
        MeasureSettings(max_time_s=True)
    with pytest.raises(ValueError, match="eager must be True or False, got 'no'"):
        MeasureSettings(eager="no")  # type: ignore[arg-type]


class _Wrong:
    """A custom backend that is fast and wrong: its output is zeros."""

    name = "wrong-fast"

    def compile(self, model: object, device: object = None) -> object:
        return lambda x: torch.zeros(x.shape[0], 8)

    def eager(self, model: object, device: object = None) -> object:
        return model


def test_a_backend_whose_output_is_wrong_is_not_a_candidate_however_fast() -> None:
    # found in the tenth user trial: tune picked it, and the module then returned zeros
    torch.manual_seed(0)
    model, x = torch.nn.Linear(16, 8).eval(), torch.randn(4, 16)
    module = Module(model, "lin", BestOfStrategy([EagerBackend(), _Wrong()]))
    with torch.no_grad():
        result = tune(module, x, settings=QUICK)
        assert result.winner.name == "eager" and set(result.measurements) == {"eager"}
        assert result.errors["wrong-fast"].startswith("wrong-fast on cpu: output differs from")
        torch.testing.assert_close(module(x), model(x))
    with pytest.raises(RuntimeError, match=r"every backend failed(.|\n)*output differs"):
        tune(Module(model, "lin", OneBackendStrategy(_Wrong())), x, settings=QUICK)


def test_a_named_tuple_batch_is_one_input_and_default_settings_keep_torchs_threads() -> None:
    from typing import NamedTuple

    class Batch(NamedTuple):
        x: torch.Tensor
        y: torch.Tensor

    class Head(torch.nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.lin = torch.nn.Linear(4, 4)
            self.threads: set[int] = set()

        def forward(self, batch: Batch) -> torch.Tensor:
            self.threads.add(torch.get_num_threads())
            return self.lin(batch.x) + batch.y

    head, batch = Head().eval(), Batch(torch.randn(2, 4), torch.randn(2, 4))
    threads = torch.get_num_threads()
    tune(Module(head, "head", OneBackendStrategy(EagerBackend())), batch)
    assert head.threads == {threads}  # measured as the winner then runs
    head.threads.clear()
    tune(Module(head, "head", OneBackendStrategy(EagerBackend())), batch, settings=QUICK)
    assert head.threads == {1}  # given settings are used as they are: one thread


@pytest.mark.skipif(torch.cuda.is_available(), reason="needs a machine without cuda")
def test_tune_on_a_device_torch_cannot_use_says_why() -> None:
    module = Module(TinyMLP(), "x", strategy=OneBackendStrategy(EagerBackend()))
    with pytest.raises(RuntimeError, match=r"device cuda is not usable: torch.cuda.is_available"):
        tune(module, torch.randn(1, 16), device="cuda")


def test_tune_on_a_device_type_pytest_tweak_does_not_measure_says_so_first() -> None:
    # device="mps" used to fail deep in Module.to with torch's own traceback (found in the
    # sixth user trial); the model is not moved at all
    model = TinyMLP()
    module = Module(model, "m", strategy=OneBackendStrategy(EagerBackend()))
    with pytest.raises(
        ValueError,
        match=r"^tune\('m'\): device mps is not one pytest-tweak "
        r"measures on: pass one of cpu, cuda, xpu$",
    ):
        tune(module, torch.randn(1, 16), device="mps")
    assert all(p.device.type == "cpu" for p in model.parameters())


def test_tune_on_a_device_name_torch_does_not_know_says_so_first() -> None:
    # device="gpu" got torch's own RuntimeError listing every device type it knows
    module = Module(TinyMLP(), "m", strategy=OneBackendStrategy(EagerBackend()))
    with pytest.raises(ValueError, match=r"^tune\('m'\): device gpu is not one pytest-tweak"):
        tune(module, torch.randn(1, 16), device="gpu")


def test_a_model_on_the_meta_device_is_told_how_to_materialize_it_with_or_without_device() -> None:
    # without device= it read "device meta is not one pytest-tweak measures on" (fourteenth
    # user trial); with device="cpu" it already said what to do
    model = TinyMLP().to("meta")
    module = Module(model, "m", strategy=OneBackendStrategy(EagerBackend()))
    for device in (None, "cpu"):
        with pytest.raises(ValueError, match=r"model's '\w+.weight' is on the meta .*to_empty"):
            tune(module, torch.randn(1, 16), device=device)


def test_a_model_torch_compile_compiled_already_is_refused_with_what_to_pass() -> None:
    """Compiled again, its eager reference was compiled too: a speed-up of 1.58x where the
    model's own was 0.48x, and a recompile that only the wrapping made (seventh user trial)."""
    model = TinyMLP()
    with pytest.raises(
        TypeError,
        match=r"OptimizedModule around TinyMLP\): pass the model itself \(compiled._orig_mod\)",
    ):
        Module(torch.compile(model), "m")
    with pytest.raises(TypeError, match=r"a function torch\.compile returned"):
        Module(torch.compile(lambda x: x + 1), "f")
    in_place = TinyMLP()
    in_place.compile()
    with pytest.raises(TypeError, match=r"a TinyMLP whose .compile\(\) was called"):
        Module(in_place, "m")
    Module(model, "m")  # the model itself is fine


def test_a_model_that_changes_its_input_in_place_is_named_as_the_reason() -> None:
    class AddsToInput(torch.nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.lin = torch.nn.Linear(16, 16)

        def forward(self, x: torch.Tensor) -> torch.Tensor:
            x.add_(1.0)
            return self.lin(x)

    with torch.no_grad():
        result = tune(Module(AddsToInput(), "m"), torch.randn(4, 16), settings=QUICK)
    accuracy = result.best.accuracy
    assert accuracy is not None and not accuracy.checked
    assert accuracy.problem is not None
    assert accuracy.problem.startswith("the model changes its input args[0] in place")


def test_results_print_briefly() -> None:
    """A TuneResult printed used to dump every output tensor and sample (30 KB for a BERT)."""
    result = tune(Module(TinyMLP(), "tiny"), torch.randn(4, 16), settings=QUICK)
    text = repr(result)
    assert text.startswith("TuneResult('tiny', winner='inductor-default', medians={")
    assert "tensor(" not in text and len(text) < 300
    assert "samples=" not in repr(result.best) and "output=" not in repr(result.best)


def test_best_of_compares_the_seeds_other_backends() -> None:
    """The seed's comparison: inductor against the backends that install here."""
    from pytest_tweak import AotEagerBackend, OpenVINOBackend, TorchAOBackend

    torch.manual_seed(0)
    model, x = TinyMLP().eval(), torch.randn(8, 16)
    backends: list[Backend] = [TorchInductorBackend(), AotEagerBackend()]
    backends += [TorchAOBackend()] if importlib.util.find_spec("torchao") else []
    backends += [OpenVINOBackend()] if importlib.util.find_spec("openvino") else []
    with torch.no_grad():
        result = tune(Module(model, "tiny", BestOfStrategy(backends)), x, settings=QUICK)
    assert set(result.measurements) == {b.name for b in backends}, result.errors
    assert result.winner in backends


def test_a_backend_whose_package_is_missing_is_left_out_with_the_pip_hint(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from pytest_tweak import TorchAOBackend

    real = importlib.util.find_spec
    monkeypatch.setattr(
        importlib.util, "find_spec", lambda name, *a: None if name == "torchao" else real(name, *a)
    )
    strategy = BestOfStrategy([TorchAOBackend(), EagerBackend()])
    result = tune(Module(TinyMLP(), "tiny", strategy), torch.randn(4, 16), settings=QUICK)
    assert result.winner.name == "eager"
    assert result.errors == {
        "torchao-int8wo": "backend torchao-int8wo: torchao is not installed (pip install torchao)"
    }
