"""Graph breaks and recompiles, counted for exactly one case: the break sites against what
``TORCH_LOGS=graph_breaks`` logs for the same calls, and how they relate to
torch._dynamo.explain."""

from __future__ import annotations

import functools
import logging
import re
import traceback
from collections import Counter

import pytest
import torch
import torch._dynamo
from models import (
    BreakInHelper,
    ChangingAttribute,
    DataDependentIf,
    ItemBreak,
    ItemThenPrint,
    PrintBreak,
    TinyMLP,
    TwoBreaks,
)
from torch.torch_version import TorchVersion

from pytest_tweak import TorchInductorBackend, TorchInductorBackendConfig
from pytest_tweak.case import LocalRunner, run_case
from pytest_tweak.counters import (
    BreakReason,
    decorated_forwards,
    graph_break_loggers,
    logged_break,
    read_counts,
    recompile_limit,
    reset_dynamo,
    watch_graph_breaks,
)
from pytest_tweak.logs import capture_torch_logs
from pytest_tweak.measure import MeasureSettings

QUICK = MeasureSettings(
    warmup_s=0.0, max_time_s=0.0, min_rounds=3, min_round_s=0.0001, eager=False, reference=False
)
CPU = torch.device("cpu")


def _run(
    model: torch.nn.Module,
    config: TorchInductorBackendConfig | None = None,
    settings: MeasureSettings = QUICK,
    inputs: list[torch.Tensor] | None = None,
):
    """One case on cpu; with ``inputs``, one call runs the model on each input set."""
    x = torch.randn(4, 16)
    return run_case(
        model,
        (x,),
        {},
        backend=TorchInductorBackend(config),
        device=CPU,
        settings=settings,
        runner=LocalRunner(),
        inputs=inputs,
    )


def _explain(model: torch.nn.Module):
    reset_dynamo()
    out = torch._dynamo.explain(model)(torch.randn(4, 16))
    reset_dynamo()
    return out


#: A site as TORCH_LOGS=graph_breaks words it, whether with the user stack or without.
LOGGED_SITE = re.compile(r"Graph break(?: \([^)]*\))? in user code at (.+):(\d+)$", re.MULTILINE)


def _logged_sites(text: str) -> Counter[tuple[str, int]]:
    return Counter((file, int(line)) for file, line in LOGGED_SITE.findall(text))


@pytest.mark.parametrize(
    "model_type",
    [
        TinyMLP,
        ItemBreak,
        DataDependentIf,
        PrintBreak,
        TwoBreaks,
        ChangingAttribute,
        BreakInHelper,
        ItemThenPrint,
    ],
)
def test_graph_breaks_are_the_sites_torch_logs(model_type: type[torch.nn.Module]) -> None:
    # the same case, with TORCH_LOGS=graph_breaks's output captured: one break per distinct
    # site it logs, met as often as it logs it
    with capture_torch_logs(["graph_breaks"]) as logs:
        result = _run(model_type())
    logged = _logged_sites(logs.text)
    assert result.graph_breaks == len(logged)
    assert {(r.filename, r.lineno): r.count for r in result.break_reasons} == dict(logged)


def test_the_count_against_explains_graphs_minus_one() -> None:
    # explain counts graphs - 1: a site met from three frames is two of its breaks ...
    nested = _run(BreakInHelper())
    (site,) = nested.break_reasons
    assert (nested.graph_breaks, site.count) == (1, 3)
    assert _explain(BreakInHelper()).graph_break_count == 2
    # ... and a break in a frame that compiled no graph is none
    resumed = _run(ItemThenPrint())
    assert [r.line for r in resumed.break_reasons] == [
        "scale = y.sum().item()",
        'print("", end="")',
    ]
    assert _explain(ItemThenPrint()).graph_break_count == 1
    # on the simple models they agree
    for model_type in (ItemBreak, DataDependentIf, PrintBreak, TwoBreaks):
        assert _run(model_type()).graph_breaks == _explain(model_type()).graph_break_count


def test_data_dependent_branch_is_counted_though_counters_graph_break_misses_it() -> None:
    result = _run(DataDependentIf())
    assert result.graph_breaks == 1
    assert torch._dynamo.utils.counters["graph_break"] == {}  # what a naive count would see
    (reason,) = result.break_reasons
    assert reason.filename is not None and reason.filename.endswith("models.py")
    assert reason.line is not None and "if y.sum() > 0" in reason.line
    assert reason.reason == "Data-dependent branching"


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
    with watch_graph_breaks() as breaks:
        for batch in (2, 3, 4):
            compiled(torch.randn(batch, 16))
    counts = read_counts(breaks)
    assert counts.recompiles == 2 and counts.graph_breaks == 0
    assert all("size mismatch" in r.reason for r in counts.recompile_reasons)


def test_a_recompile_of_a_torch_module_names_the_model_not_dynamos_wrapper() -> None:
    # nn.Sequential's forward is torch's own: dynamo compiles its `wrap_inline` frame around
    # the module's call, and the reason used to name "inner (.../external_utils.py:67)"
    # (found in the fifth user trial)
    model = torch.nn.Sequential(torch.nn.Linear(16, 16), torch.nn.ReLU())
    static = TorchInductorBackendConfig(dynamic=False)
    result = _run(model, static, inputs=[torch.randn(4, 16), torch.randn(8, 16)])
    (recompile,) = result.recompile_reasons
    assert recompile.frame == "Sequential.forward (torch's own; compiled through dynamo's wrapper)"
    assert "size mismatch" in recompile.reason
    # a model with its own forward is named by its file and line, as before
    reset_dynamo()
    compiled = TorchInductorBackend(TorchInductorBackendConfig(dynamic=False)).compile(TinyMLP())
    with watch_graph_breaks() as breaks:
        for batch in (2, 3):
            compiled(torch.randn(batch, 16))
    (own,) = read_counts(breaks, "TinyMLP").recompile_reasons
    assert own.frame.startswith("forward (") and "models.py:" in own.frame


def _returns_as_is(forward):  # a decorator, as transformers wraps its models' forwards
    @functools.wraps(forward)
    def wrapper(*args, **kwargs):
        return forward(*args, **kwargs)

    return wrapper


class Decorated(torch.nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.lin = torch.nn.Linear(16, 16)

    @_returns_as_is
    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.lin(x)


def test_a_recompile_in_a_decorated_forward_names_the_model_beside_the_decorator() -> None:
    # a Hugging Face model's recompile named "wrapped_func (.../deprecation.py:126)" alone
    # (found in the seventh user trial): dynamo compiles the decorator's frame
    static = TorchInductorBackendConfig(dynamic=False)
    result = _run(Decorated(), static, inputs=[torch.randn(4, 16), torch.randn(8, 16)])
    (recompile,) = result.recompile_reasons
    assert re.fullmatch(
        r"wrapper \(.*test_counters\.py:\d+\), the decorator around "
        r"Decorated\.forward \(.*test_counters\.py:\d+\)",
        recompile.frame,
    ), recompile.frame
    assert "size mismatch" in recompile.reason


def test_a_wrapped_chain_that_leads_back_to_itself_ends() -> None:
    class Looped(torch.nn.Module):
        def forward(self, x: torch.Tensor) -> torch.Tensor:
            return x

    Looped.forward.__wrapped__ = Looped.forward  # type: ignore[attr-defined]
    ((key, around),) = decorated_forwards(Looped()).items()  # it ends, naming the class once
    assert key[0] == "forward"
    assert re.fullmatch(r"the decorator around Looped\.forward \(.*\)", around)


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
    assert callable(utils.get_compilation_metrics)
    assert callable(utils.clear_compilation_metrics)
    assert isinstance(recompile_limit(), int)
    reset_dynamo()
    utils.counters.clear()
    _run(ItemBreak())
    metrics = list(utils.get_compilation_metrics())
    assert metrics and all(hasattr(m, "recompile_reason") for m in metrics)
    # the counters counters.py reads (a defaultdict: a moved key reads 0, not an error)
    assert utils.counters["stats"]["unique_graphs"] >= 2  # ItemBreak compiles two graphs
    inductor = utils.counters["inductor"]
    assert inductor["fxgraph_cache_hit"] + inductor["fxgraph_cache_miss"] >= 2


def test_the_graph_breaks_artifact_loggers_are_where_dynamo_logs_breaks() -> None:
    """Fails loudly when torch moves or rewords the graph_breaks logging the count reads."""
    names = [logger.name for logger in graph_break_loggers()]
    assert "torch._dynamo.symbolic_convert.__graph_breaks" in names
    assert "torch._dynamo.convert_frame.__graph_breaks" in names
    reset_dynamo()
    with watch_graph_breaks() as breaks:
        torch.compile(ItemBreak(), backend="eager")(torch.randn(4, 16))
    (found,) = breaks.breaks()
    assert found.line == "scale = y.sum().item()" and found.filename.endswith("models.py")
    assert found.reason == "Unsupported Tensor.item() call with capture_scalar_outputs=False"
    if TorchVersion(torch.__version__) >= (2, 13):  # the registry id and torch's advice
        assert found.gb_id == "gb0124"
        assert found.link is not None and found.link.endswith("/gb0124.html")
        assert found.hint is not None and "capture_scalar_outputs = True" in found.hint
        assert found.explanation


def test_watching_leaves_torchs_loggers_as_they_were(capfd: pytest.CaptureFixture[str]) -> None:
    loggers = graph_break_loggers()
    before = [(lg.level, lg.propagate, list(lg.handlers)) for lg in loggers]
    reset_dynamo()
    with watch_graph_breaks() as breaks:
        torch.compile(PrintBreak(), backend="eager")(torch.randn(4, 16))
    assert len(breaks.breaks()) == 1
    assert [(lg.level, lg.propagate, list(lg.handlers)) for lg in loggers] == before
    # off unless asked for: the records went nowhere else
    assert "Graph break" not in capfd.readouterr().err


#: How torch 2.13 logs one break, with the user stack and without (a duplicate).
LOGGED_2_13 = """\
Graph break in user code at /src/modeling_utils.py:4824
Graph Break Reason: Encountered graph break when attempting to trace CALL_FUNCTION_EX: a \
variadic function call, e.g. f(*args):

logging.Logger method not supported for non-export cases
  Explanation: logging.Logger methods are not supported for non-export cases.
  Hint: Add the logging method to `torch._dynamo.config.ignore_logging_functions`.
  Hint: A second hint.

  Developer debug context: method: <Logger x (WARNING)>.warning_once, args: [], kwargs: {}

 For more details about this graph break, please visit: \
https://meta-pytorch.github.io/compile-graph-break-site/gb/gb0291.html

User code traceback:
  File "/src/modeling_gpt2.py", line 703, in forward
    loss = self.loss_function(
"""


def test_a_logged_break_gives_torchs_type_id_explanation_first_hint_and_link() -> None:
    found = logged_break(LOGGED_2_13)
    assert found == BreakReason(
        reason="logging.Logger method not supported for non-export cases",
        filename="/src/modeling_utils.py",
        lineno=4824,
        gb_id="gb0291",
        explanation="logging.Logger methods are not supported for non-export cases.",
        hint="Add the logging method to `torch._dynamo.config.ignore_logging_functions`.",
        link="https://meta-pytorch.github.io/compile-graph-break-site/gb/gb0291.html",
    )
    duplicate = LOGGED_2_13.replace(
        "Graph break in", "Graph break (user stack suppressed due to duplicate graph break) in"
    ).split("\n\nUser code traceback:")[0]
    assert logged_break(duplicate) == found
    assert found.advice() == [
        "gb0291 logging.Logger methods are not supported for non-export cases.",
        "hint: Add the logging method to `torch._dynamo.config.ignore_logging_functions`.",
        "see https://meta-pytorch.github.io/compile-graph-break-site/gb/gb0291.html",
    ]


def test_a_break_logged_by_an_older_torch_keeps_its_first_line_and_no_advice() -> None:
    # torch before the graph-break registry: no type, explanation, hints or link
    found = logged_break(
        "Graph break (details suppressed) in user code at /src/m.py:7\n"
        "Reason: generic_jump TensorVariable()\nUser code traceback:\n  File ..."
    )
    assert found == BreakReason(
        reason="generic_jump TensorVariable()", filename="/src/m.py", lineno=7
    )
    assert found.advice() == [] and found.gb_id is None


def test_a_skipped_frame_is_a_site_and_other_records_are_not() -> None:
    class Skipped(Exception):
        msg = "Some break\n  Explanation: Cannot resume.\n  Hint: Move it out."
        real_stack = (traceback.FrameSummary("/src/w.py", 12, "wrapper"),)

    record = "Graph break: torch.compile cannot properly resume from this graph break, ..."
    found = logged_break(record, (Skipped, Skipped(), None))
    assert found is not None and (found.filename, found.lineno) == ("/src/w.py", 12)
    assert (found.reason, found.hint) == ("Some break", "Move it out.")
    assert logged_break("WON'T CONVERT forward /src/w.py line 3") is None
    assert logged_break(record) is None  # no exception: no site


def test_records_passing_two_watched_loggers_count_once() -> None:
    with watch_graph_breaks() as breaks:
        record = logging.LogRecord("x", logging.DEBUG, "f", 1, LOGGED_2_13, (), None)
        breaks.handle(record)
        breaks.handle(record)
    (found,) = breaks.breaks()
    assert found.count == 1


def test_a_break_met_again_by_a_recompile_is_one_reason_with_a_count() -> None:
    # dynamic=False and three batch sizes: the frame compiles three times, the print break is
    # recorded by each compile
    config = TorchInductorBackendConfig(dynamic=False)
    reset_dynamo()
    compiled = TorchInductorBackend(config).compile(PrintBreak())
    with watch_graph_breaks() as breaks:
        for batch in (2, 3, 4):
            compiled(torch.randn(batch, 16))
    counts = read_counts(breaks)
    (reason,) = counts.break_reasons
    assert counts.graph_breaks == 1 == _explain(PrintBreak()).graph_break_count
    assert reason.count == 3
    assert str(reason).endswith("(x3)") and 'print("", end="")' in str(reason)


def test_several_input_sets_count_recompiles_by_dynamic_setting() -> None:
    recompiles = {}
    for dynamic in (True, None, False):
        # fresh tensors per case: dynamo marks the tensors it compiled dynamic
        inputs = [torch.randn(batch, 16) for batch in (2, 8, 32)]
        result = _run(TinyMLP(), TorchInductorBackendConfig(dynamic=dynamic), inputs=inputs)
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


def test_cuda_graph_modes_on_cpu_count_no_skip() -> None:
    # CUDA graphs do not apply on cpu: inductor counts a "skip" for every graph there
    # (reduce-overhead on cpu once read "CUDA graphs skipped (1): ... torch gave no reason"),
    # and a tweak_limits(cudagraph_skips=0) meant for cuda failed the cpu case
    import torch._dynamo.utils as dynamo_utils

    before = int(dynamo_utils.counters["inductor"].get("cudagraph_skips", 0))
    result = _run(
        torch.nn.Linear(16, 16).eval(), TorchInductorBackendConfig(mode="reduce-overhead")
    )
    counted = int(dynamo_utils.counters["inductor"].get("cudagraph_skips", 0)) - before
    assert counted >= 1  # torch's own counter did count it
    assert result.cudagraph_skips == ()
