"""Graph breaks and recompiles, counted for exactly one case, against torch._dynamo.explain."""

from __future__ import annotations

import pytest
import torch
import torch._dynamo
from models import (
    ChangingAttribute,
    DataDependentIf,
    ItemBreak,
    PrintBreak,
    TinyMLP,
    TwoBreaks,
)

from pytest_tweak import TorchInductorBackend, TorchInductorBackendConfig
from pytest_tweak.case import LocalRunner, run_case
from pytest_tweak.counters import read_counts, recompile_limit, reset_dynamo
from pytest_tweak.measure import MeasureSettings

QUICK = MeasureSettings(
    warmup_s=0.0, max_time_s=0.0, min_rounds=3, min_round_s=0.0001, eager=False, reference=False
)
CPU = torch.device("cpu")


def _run(
    model: torch.nn.Module,
    config: TorchInductorBackendConfig | None = None,
    settings: MeasureSettings = QUICK,
):
    x = torch.randn(4, 16)
    return run_case(
        model,
        (x,),
        {},
        backend=TorchInductorBackend(config),
        device=CPU,
        settings=settings,
        runner=LocalRunner(),
    )


def _explain(model: torch.nn.Module):
    reset_dynamo()
    out = torch._dynamo.explain(model)(torch.randn(4, 16))
    reset_dynamo()
    return out


@pytest.mark.parametrize(
    "model_type", [TinyMLP, ItemBreak, DataDependentIf, PrintBreak, TwoBreaks, ChangingAttribute]
)
def test_graph_breaks_equal_explain(model_type: type[torch.nn.Module]) -> None:
    expected = _explain(model_type())
    result = _run(model_type())
    assert result.graph_breaks == expected.graph_break_count
    assert len(result.break_reasons) == len(expected.break_reasons)


def test_data_dependent_branch_is_counted_though_counters_graph_break_misses_it() -> None:
    result = _run(DataDependentIf())
    assert result.graph_breaks == 1
    assert torch._dynamo.utils.counters["graph_break"] == {}  # what a naive count would see
    (reason,) = result.break_reasons
    assert reason.filename is not None and reason.filename.endswith("models.py")
    assert reason.line is not None and "if y.sum() > 0" in reason.line


def test_break_reasons_point_at_user_source_lines() -> None:
    result = _run(TwoBreaks())
    lines = sorted((r.line or "").strip() for r in result.break_reasons)
    assert lines == ['print("", end="")', "scale = y.mean().item()"]
    assert all("models.py:" in str(r) for r in result.break_reasons)


def test_breaks_are_not_counted_again_on_every_call() -> None:
    # warm-up and timing call the model many times; each break still counts once
    result = _run(ItemBreak())
    assert result.graph_breaks == 1
    assert result.recompiles == 0
    assert result.graph_count == 2  # explain's graph_count for this model
    assert _explain(ItemBreak()).graph_count == 2


def test_changing_attribute_recompiles_and_reaches_the_limit() -> None:
    model = ChangingAttribute()
    limit = recompile_limit()
    result = _run(
        model,
        settings=MeasureSettings(
            warmup_s=0.0, max_time_s=0.0, min_rounds=limit + 2, eager=False, reference=False
        ),
    )
    # every call changes `calls`: dynamo recompiles until its limit, then runs eager
    assert model.calls > limit
    assert result.recompiles == limit
    assert result.recompile_limit_hit
    assert all("calls ==" in r.reason for r in result.recompile_reasons)
    assert result.graph_breaks == _explain(ChangingAttribute()).graph_break_count == 0


def test_static_shapes_recompile_once_per_new_shape() -> None:
    config = TorchInductorBackendConfig(dynamic=False)
    reset_dynamo()
    compiled = TorchInductorBackend(config).compile(TinyMLP())
    for batch in (2, 3, 4):
        compiled(torch.randn(batch, 16))
    counts = read_counts()
    assert counts.recompiles == 2
    assert all("size mismatch" in r.reason for r in counts.recompile_reasons)


def test_counts_do_not_leak_between_cases() -> None:
    first = _run(ChangingAttribute())
    assert first.recompiles > 0
    second = _run(TinyMLP())
    assert (second.graph_breaks, second.recompiles) == (0, 0)
    # the same forward compiled under two configs in a row: no cache entries carried over
    model = TinyMLP()
    a = _run(model, TorchInductorBackendConfig(dynamic=False))
    b = _run(model, TorchInductorBackendConfig(dynamic=True))
    assert (a.recompiles, b.recompiles) == (0, 0)


def test_dynamo_private_state_this_plugin_reads_still_exists() -> None:
    """Fails loudly when a torch release moves what counters.py relies on."""
    utils = torch._dynamo.utils
    assert isinstance(utils.graph_break_reasons, list)
    assert callable(utils.get_compilation_metrics)
    assert callable(utils.clear_compilation_metrics)
    assert "stats" in utils.counters or hasattr(utils.counters, "__getitem__")
    assert isinstance(recompile_limit(), int)
    reset_dynamo()
    _run(ItemBreak())
    metrics = list(utils.get_compilation_metrics())
    assert metrics and all(hasattr(m, "recompile_reason") for m in metrics)
    assert all(hasattr(r, "user_stack") and hasattr(r, "reason") for r in utils.graph_break_reasons)


def test_a_break_met_again_by_a_recompile_is_one_reason_with_a_count() -> None:
    # dynamic=False and three batch sizes: the frame compiles three times, the print break is
    # recorded by each compile
    config = TorchInductorBackendConfig(dynamic=False)
    reset_dynamo()
    compiled = TorchInductorBackend(config).compile(PrintBreak())
    for batch in (2, 3, 4):
        compiled(torch.randn(batch, 16))
    counts = read_counts()
    (reason,) = counts.break_reasons
    assert counts.graph_breaks == 1 == _explain(PrintBreak()).graph_break_count
    assert reason.count == 3
    assert str(reason).endswith("(x3)") and 'print("", end="")' in str(reason)


def test_several_input_sets_count_recompiles_by_dynamic_setting() -> None:
    recompiles = {}
    for dynamic in (True, None, False):
        # fresh tensors per case: dynamo marks the tensors it compiled dynamic
        inputs = [torch.randn(batch, 16) for batch in (2, 8, 32)]
        result = run_case(
            TinyMLP(),
            (),
            {},
            backend=TorchInductorBackend(TorchInductorBackendConfig(dynamic=dynamic)),
            device=CPU,
            settings=QUICK,
            runner=LocalRunner(),
            inputs=inputs,
        )
        assert result.input_sets == 3 and len(result.output) == 3
        recompiles[dynamic] = result.recompiles
        assert result.accuracy is not None and result.accuracy.ok
    # static shapes recompile for each new batch; automatic dynamic once; dynamic never
    assert recompiles == {True: 0, None: 1, False: 2}


def test_compile_time_split_and_cache_state_are_read() -> None:
    result = _run(TinyMLP())
    times = result.compile_times
    assert times.frames == 1
    assert times.dynamo_s > 0 and times.inductor_s > 0
    assert times.dynamo_s + times.inductor_s <= result.compile_time_s
    # the FX-graph cache was looked up: hit (warm cache) or miss (first run on this machine)
    assert result.compile_cache.state in ("hit", "miss")
    assert result.compile_cache.hits + result.compile_cache.misses == 1


def test_cold_compile_misses_the_cache() -> None:
    from pytest_tweak.measure import CaseChecks

    def model(x: torch.Tensor) -> torch.Tensor:
        return x * 3 + 1

    warm = _run(model)  # type: ignore[arg-type]
    cold = run_case(
        model,
        (torch.randn(4, 16),),
        {},
        backend=TorchInductorBackend(),
        device=CPU,
        settings=QUICK,
        runner=LocalRunner(),
        checks=CaseChecks(cold=True),
    )
    assert cold.cold_compile and not warm.cold_compile
    assert cold.compile_cache.state == "miss"


def test_case_reads_accuracy_and_peak_memory() -> None:
    result = _run(TinyMLP())
    assert result.accuracy is not None and result.accuracy.ok and result.accuracy.checked
    # the intermediate 4x16 and the 4x4 output, float32, at least
    assert result.peak_memory_bytes is not None and result.peak_memory_bytes >= 4 * 16 * 4
    assert result.eager_peak_memory_bytes is None  # QUICK has no eager companion


def test_accuracy_is_not_checked_when_eager_is_not_repeatable() -> None:
    result = _run(ChangingAttribute(), settings=QUICK)
    assert result.accuracy is not None and not result.accuracy.checked
    assert "changes from call to call" in result.accuracy.describe()


def test_log_artifact_names_are_read_from_torch() -> None:
    from pytest_tweak.counters import known_log_artifacts

    known = known_log_artifacts()
    assert {"graph_breaks", "recompiles"} <= set(known)


def test_recompile_limit_names_the_frame() -> None:
    model = ChangingAttribute()
    limit = recompile_limit()
    result = _run(
        model,
        settings=MeasureSettings(
            warmup_s=0.0, max_time_s=0.0, min_rounds=limit + 2, eager=False, reference=False
        ),
    )
    assert result.recompile_limit_hit
    (frame,) = result.recompile_limit_frames
    assert frame.startswith("forward (") and "models.py:" in frame
    # the compile the limit refused names no code object: it takes its frame's name
    assert [r.frame for r in result.recompile_reasons if not r.frame.startswith("forward (")] == []
