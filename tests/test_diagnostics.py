"""Why a case failed, in its report: break and recompile reasons at the user's lines, limits,
several input sets, compile time, memory, accuracy against eager, torch's logs and options.

Real user suites in fresh pytest processes, real inductor compiles of tiny models.
"""

from __future__ import annotations

import json

import pytest
import torch
from torch.torch_version import TorchVersion

# Models with known breaks and recompiles; line numbers are asserted below.
BREAKS_SUITE = """\
import pytest, torch

class Branch(torch.nn.Module):
    def forward(self, x):
        if x.sum() > 0:
            return x * 2
        return x - 1

class Item(torch.nn.Module):
    def forward(self, x):
        return x * x.sum().item()

class Printing(torch.nn.Module):
    def forward(self, x):
        x = x + 1
        print("", end="")
        return x * 2

class Builtin(torch.nn.Module):
    def forward(self, x):
        x = x + 1
        dir(x)
        return x * 2

@pytest.mark.tweak_limits(graph_breaks=0)
@pytest.mark.parametrize("model_type", [Branch, Item, Printing, Builtin])
def test_no_breaks(tweak, model_type):
    tweak.benchmark(model_type(), torch.ones(8))

@pytest.mark.parametrize("model_type", [Branch, Item, Printing, Builtin])
def test_one_break_as_explain_counts_it(tweak, model_type):
    x = torch.ones(8)
    result = tweak.benchmark(model_type(), x)
    torch._dynamo.reset()
    explained = torch._dynamo.explain(model_type())(x)
    assert result.graph_breaks == explained.graph_break_count == 1
    assert len(result.break_reasons) == len(explained.break_reasons) == 1
"""


def test_graph_break_reasons_point_at_the_user_lines_and_limits_fail_without_a_baseline(
    pytester: pytest.Pytester, run_suite
) -> None:
    pytester.makepyfile(test_breaks=BREAKS_SUITE)
    result = run_suite("-rf", "--tweak-json=report.json")
    result.assert_outcomes(passed=4, failed=4)
    # the report says which cases are over their test's limit (they do not compete in tuning)
    cases = json.loads((pytester.path / "report.json").read_text())["cases"]
    over = {case["nodeid"].split("::")[1]: case["over_limit"] for case in cases}
    assert len(over) == 8
    for nodeid, problems in over.items():
        expected = (
            ["graph breaks 1 exceed the limit 0 (set by @pytest.mark.tweak_limits)"]
            if nodeid.startswith("test_no_breaks")
            else []
        )
        assert problems == expected, nodeid
    for name, line, code, reason, hint in [
        ("Branch", 5, "if x.sum() > 0:", "Data-dependent branching", "For the common pattern*"),
        (
            "Item",
            11,
            "return x * x.sum().item()",
            "Unsupported Tensor.item() call*",
            "Set `torch._dynamo.config.capture_scalar_outputs = True`*",
        ),
        ("Printing", 16, 'print("", end="")', "Failed to trace builtin operator", "Avoid *print*"),
        ("Builtin", 22, "dir(x)", "Failed to trace builtin operator", "Avoid *dir*"),
    ]:
        result.stdout.fnmatch_lines(
            [
                f"pytest-tweak: test_breaks.py::test_no_breaks[[]cpu-default-{name}[]] failed, "
                "whatever its speed:",
                "  - graph breaks 1 exceed the limit 0 (set by @pytest.mark.tweak_limits)",
                "  graph breaks (1):",
                f"    test_breaks.py:{line} `{code}`: {reason}",
                # torch's explanation (with its registry id on torch >= 2.13) and first hint
                "      *",
                f"      hint: {hint}",
            ]
        )
    if TorchVersion(torch.__version__) >= (2, 13):
        result.stdout.fnmatch_lines(
            [
                "    test_breaks.py:11 `return x * x.sum().item()`: Unsupported Tensor.item() *",
                "      gb0124 *",
                "      hint: *",
                "      see https://meta-pytorch.github.io/compile-graph-break-site/gb/gb0124.html",
            ]
        )
    result.stdout.fnmatch_lines(["test_breaks.py::test_no_breaks[[]Branch[]] *cpu*default*1*fail*"])


RECOMPILE_SUITE = """\
import pytest, torch
from pytest_tweak import TorchInductorBackendConfig as C

class Net(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.a = torch.nn.Linear(16, 16)

    def forward(self, x):
        return torch.relu(self.a(x))

class Counting(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.a = torch.nn.Linear(16, 16)
        self.calls = 0

    def forward(self, x):
        self.calls += 1
        return self.a(x) * self.calls

BATCHES = (2, 8, 32)

@pytest.mark.tweak_configs(C(dynamic=True), C(dynamic=None), C(dynamic=False))
def test_batches(tweak):
    result = tweak.benchmark_inputs(Net().eval(), [torch.randn(b, 16) for b in BATCHES])
    expected = {True: 0, None: 1, False: 2}[tweak.config.dynamic]
    assert result.recompiles == expected
    assert result.input_sets == 3 and [o.shape[0] for o in result.output] == list(BATCHES)
    assert result.accuracy.ok

@pytest.mark.tweak_limits(recompiles=0)
@pytest.mark.tweak_configs(C(dynamic=False))
def test_static_recompiles(tweak):
    tweak.benchmark_inputs(Net().eval(), [(torch.randn(b, 16),) for b in BATCHES])

def test_changing_attribute(tweak):
    torch._dynamo.config.recompile_limit = 3
    tweak.benchmark(Counting().eval(), torch.randn(4, 16))
"""


def test_recompile_reasons_input_sets_and_the_recompile_limit_are_reported(
    pytester: pytest.Pytester, run_suite
) -> None:
    pytester.makepyfile(test_recompiles=RECOMPILE_SUITE)
    result = run_suite("--tweak-max-recompiles=2")
    result.assert_outcomes(passed=3, failed=2)
    result.stdout.fnmatch_lines(
        [
            "pytest-tweak: *test_static_recompiles[[]cpu-static[]] failed, whatever its speed:",
            "  - recompiles 2 exceed the limit 0 (set by @pytest.mark.tweak_limits)",
            "  recompiles (2):",
            "    forward (test_recompiles.py:9): tensor 'x' size mismatch at index 0. "
            "expected 2, actual 8",
            "    forward (test_recompiles.py:9): tensor 'x' size mismatch at index 0. "
            "expected 8, actual 32",
        ]
    )
    result.stdout.fnmatch_lines(
        [
            "pytest-tweak: *test_changing_attribute[[]cpu-default[]] failed, whatever its speed:",
            "  - recompiles 3 exceed the limit 2 (set by --tweak-max-recompiles)",
            "  recompiles (*):",
            "    forward (test_recompiles.py:18): self.calls == 0*",
            "  dynamo hit its recompile limit on forward (test_recompiles.py:18): it now runs "
            "uncompiled (eager), a silent performance cliff*",
        ]
    )


# A compiled model that is wrong: a stand-in backend adds a small error to what inductor
# computes (no real miscompile is at hand on demand).
ACCURACY_SUITE = """\
import torch
from pytest_tweak import TorchInductorBackend

class Miscompiling(TorchInductorBackend):
    def compile(self, model, device=None):
        compiled = super().compile(model, device)
        def run(*args):
            out = compiled(*args)
            return {**out, "logits": out["logits"] + 1e-3}
        return run

class Net(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.a = torch.nn.Linear(16, 16)

    def forward(self, x):
        return {"logits": self.a(x), "extra": (x.sum(),)}

def test_wrong(tweak):
    tweak.backend = Miscompiling(tweak.config)
    tweak.benchmark(Net().eval(), torch.randn(4, 16))

def test_right(tweak):
    result = tweak.benchmark(Net().eval(), torch.randn(4, 16))
    if result.accuracy is not None:  # None with --tweak-accuracy=off
        assert result.accuracy.ok and result.accuracy.tensors == 2
    assert result.speedup is not None and result.peak_memory_bytes > 0
"""


def test_a_wrong_result_fails_whatever_its_speed_with_the_errors(
    pytester: pytest.Pytester, run_suite
) -> None:
    pytester.makepyfile(test_accuracy=ACCURACY_SUITE)
    result = run_suite()
    result.assert_outcomes(passed=1, failed=1)
    result.stdout.fnmatch_lines(
        [
            "pytest-tweak: test_accuracy.py::test_wrong[[]cpu-default[]] failed, whatever its "
            "speed:",
            "  - output differs from eager at output[[]'logits'[]]: 64 of 64 element(s) outside "
            "the tolerance; max abs error 0.001, max rel error * (rtol 0.0001, atol 1e-05)",
        ]
    )
    result.stdout.fnmatch_lines(["*test_wrong*cpu*default*WRONG 0.001*failed"])
    result.stdout.fnmatch_lines(["*test_right*cpu*default*ok *new"])
    # off, or a tolerance that allows the error: passes
    run_suite("--tweak-accuracy=off").assert_outcomes(passed=2)
    run_suite("--tweak-atol=0.01").assert_outcomes(passed=2)


def test_ini_limits_apply_to_every_test_and_a_marker_lifts_them(
    pytester: pytest.Pytester, run_suite
) -> None:
    pytester.makeini("[pytest]\ntweak_max_graph_breaks = 0\n")
    pytester.makepyfile("""
        import pytest, torch

        def breaking(x):
            x = x + 1
            print("", end="")
            return x * 2

        def test_gated(tweak):
            tweak.benchmark(breaking, torch.ones(4))

        @pytest.mark.tweak_limits(graph_breaks=None)
        def test_lifted(tweak):
            assert tweak.benchmark(breaking, torch.ones(4)).graph_breaks == 1
    """)
    result = run_suite()
    result.assert_outcomes(passed=1, failed=1)
    result.stdout.fnmatch_lines(
        [
            "  - graph breaks 1 exceed the limit 0 "
            "(set by ini option tweak_max_graph_breaks in tox.ini)"
        ]
    )
    result.stdout.fnmatch_lines(["tweak: *, max-graph-breaks=0"])


def test_a_limit_on_a_pytest_param_holds_for_that_parameters_cases(
    pytester: pytest.Pytester, run_suite
) -> None:
    """``pytest.param(..., marks=pytest.mark.tweak_limits(...))`` was silently ignored, so a
    gate the user wrote was off (eighth user trial); tweak_configs there is refused."""
    pytester.makepyfile(
        test_limits="""
        import pytest, torch

        def breaking(x):
            x = x + 1
            print("", end="")
            return x * 2

        @pytest.mark.parametrize(
            "n", [2, pytest.param(3, marks=pytest.mark.tweak_limits(graph_breaks=0))]
        )
        def test_sizes(tweak, n):
            tweak.benchmark(breaking, torch.ones(n))
        """,
        test_configs="""
        import pytest
        from pytest_tweak import TorchInductorBackendConfig as C

        @pytest.mark.parametrize("n", [2, pytest.param(3, marks=pytest.mark.tweak_configs(C()))])
        def test_configs(tweak, n):
            pass
        """,
        test_bad_limit="""
        import pytest

        @pytest.mark.parametrize("n", [pytest.param(3, marks=pytest.mark.tweak_limits(breaks=0))])
        def test_bad(tweak, n):
            pass
        """,
    )
    result = run_suite("test_limits.py")
    result.assert_outcomes(passed=1, failed=1)
    result.stdout.fnmatch_lines(
        ["  - graph breaks 1 exceed the limit 0 (set by @pytest.mark.tweak_limits)"]
    )
    result.stdout.fnmatch_lines(["FAILED test_limits.py::test_sizes[[]cpu-default-3[]]*"])
    refused = run_suite("test_configs.py", "test_bad_limit.py")
    refused.stdout.fnmatch_lines(
        [
            "*test_configs.py::test_configs: tweak_configs on a pytest.param is not supported: "
            "it makes the test's cases for all of its parameters at once*",
            "*test_bad_limit.py::test_bad: tweak_limits(*) got unknown keyword(s) breaks*",
        ],
        consecutive=False,
    )
    refused.assert_outcomes(errors=2)


def test_compile_time_and_memory_are_recorded_and_gated_against_the_baseline(
    pytester: pytest.Pytester, run_suite
) -> None:
    pytester.makepyfile("""
        import torch
        def test_lin(tweak):
            tweak.benchmark(torch.nn.Linear(64, 64), torch.randn(32, 64))
    """)
    run_suite("--tweak-save").assert_outcomes(passed=1)
    path = pytester.path / "tweak-baselines.json"
    data = json.loads(path.read_text())
    (case,) = data["cases"].values()
    assert case["compile_cache"] in ("hit", "miss") and case["compile_time_s"] > 0
    assert case["peak_memory_bytes"] >= 32 * 64 * 4  # the output, float32
    # the baseline needed a quarter of the memory, and compiled with the other cache state
    case["peak_memory_bytes"] //= 4
    case["compile_cache"] = "partial"  # one graph is never partly cached
    path.write_text(json.dumps(data))
    result = run_suite("--tweak-threshold=1000")
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(
        [
            "*regressed against*",
            "  - peak memory * vs baseline *: +300%, threshold 10%",
            "  compile time not compared: the inductor cache was * in this run and partial in the "
            "baseline's",
        ]
    )
    result.stdout.fnmatch_lines(
        [
            "  compile: first call * s (wall time, compiling included); all 1 frame compile(s) "
            "of the case, recompiles included: dynamo * s + inductor * s; inductor cache *"
        ]
    )
    # a looser memory threshold lets it pass
    run_suite("--tweak-threshold=1000", "--tweak-memory-threshold=400").assert_outcomes(passed=1)


def test_torch_logs_are_attached_to_the_failing_test(pytester: pytest.Pytester, run_suite) -> None:
    pytester.makepyfile("""
        import torch
        def breaking(x):
            x = x + 1
            print("", end="")
            return x * 2

        def test_logged(tweak):
            tweak.benchmark(breaking, torch.ones(4))
            assert False, "look at the logs"
    """)
    result = run_suite("--tweak-logs=graph_breaks,recompiles")
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(
        [
            "*- Captured tweak logs call -*",
            "[[]__graph_breaks[]] Graph break in user code at *test_torch_logs*.py:4",
        ]
    )
    result.stdout.fnmatch_lines(["tweak: *logs=graph_breaks,recompiles"])


def test_unknown_log_artifact_is_a_usage_error_with_a_suggestion(
    pytester: pytest.Pytester,
) -> None:
    pytester.makepyfile("def test_x(): pass")
    result = pytester.runpytest_subprocess("--tweak-logs=graph_break")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(
        ["*--tweak-logs: unknown TORCH_LOGS artifact 'graph_break'; did you mean graph_breaks*"]
    )


def test_list_options_prints_modes_and_options_and_exits(pytester: pytest.Pytester) -> None:
    import torch._inductor

    result = pytester.runpytest_subprocess("--tweak-list-options")
    assert result.ret == 0
    modes = list(torch._inductor.list_mode_options())
    result.stdout.fnmatch_lines(
        [
            "inductor modes (TorchInductorBackendConfig(mode=...)):",
            *[f"  {mode}: *" for mode in modes],
            "inductor options (TorchInductorBackendConfig(options={...})), *:",
        ]
    )
    result.stdout.fnmatch_lines(["  max_autotune (bool)", "  max_autotune_gemm_backends (str)"])
    # the config module's import flag and private keys are not options for users
    assert not [line for line in result.stdout.lines if line.startswith(("  TYPE_CHECKING", "  _"))]
    assert not [line for line in result.stdout.lines if "._" in line]
    assert "collected" not in result.stdout.str()


def test_bad_tweak_limits_markers_are_collection_errors(
    pytester: pytest.Pytester, run_suite
) -> None:
    header = "import pytest\n"
    pytester.makepyfile(
        test_unknown=header + "@pytest.mark.tweak_limits(breaks=0)\ndef test_u(tweak): pass\n",
        test_negative=header
        + "@pytest.mark.tweak_limits(graph_breaks=-1)\ndef test_n(tweak): pass\n",
        test_positional=header + "@pytest.mark.tweak_limits(0)\ndef test_p(tweak): pass\n",
        test_bool=header + "@pytest.mark.tweak_limits(recompiles=True)\ndef test_b(tweak): pass\n",
    )
    result = run_suite("--collect-only")
    assert result.ret == pytest.ExitCode.INTERRUPTED
    result.stdout.fnmatch_lines(["*4 errors*"])
    result.stdout.fnmatch_lines(
        [
            "*test_b: tweak_limits recompiles must be an integer >= 0 or None, got True",
            "*test_n: tweak_limits graph_breaks must be an integer >= 0 or None, got -1",
            "*test_p: tweak_limits(graph_breaks=None, recompiles=None, cudagraph_skips=None) "
            "takes keyword arguments only, got (0,)",
            "*test_u: tweak_limits(graph_breaks=None, recompiles=None, cudagraph_skips=None) "
            "got unknown keyword(s) breaks; allowed: graph_breaks, recompiles, cudagraph_skips",
        ]
    )


def test_new_options_markers_and_bad_values(pytester: pytest.Pytester) -> None:
    result = pytester.runpytest_subprocess("--help")
    result.stdout.fnmatch_lines(
        [
            "*--tweak-max-graph-breaks=N*",
            "*--tweak-max-recompiles=N*",
            "*--tweak-compile-threshold=PCT*",
            "*--tweak-memory-threshold=PCT*",
            "*--tweak-cold-compile*",
            "*--tweak-accuracy=on|off*",
            "*--tweak-rtol=X*",
            "*--tweak-atol=X*",
            "*--tweak-logs=ARTIFACTS*",
            "*--tweak-list-options*",
            "*tweak_max_graph_breaks (string):*",
        ]
    )
    markers = pytester.runpytest_subprocess("--markers")
    markers.stdout.fnmatch_lines(
        [
            "@pytest.mark.tweak_limits(graph_breaks=None, recompiles=None, "
            "cudagraph_skips=None): fail the test's*"
        ]
    )
    pytester.makepyfile("def test_x(): pass")
    for args, message in [
        (
            "--tweak-max-graph-breaks=-1",
            "*--tweak-max-graph-breaks: invalid value '-1'; expected an integer >= 0",
        ),
        ("--tweak-compile-threshold=0", "*--tweak-compile-threshold: invalid value '0'*"),
        ("--tweak-memory-threshold=x", "*--tweak-memory-threshold: invalid value 'x'*"),
        ("--tweak-accuracy=maybe", "*--tweak-accuracy: invalid value 'maybe'; expected one of*"),
        ("--tweak-rtol=-1", "*--tweak-rtol: invalid value '-1'; expected a number >= 0"),
    ]:
        bad = pytester.runpytest_subprocess(args)
        assert bad.ret == pytest.ExitCode.USAGE_ERROR, args
        bad.stderr.fnmatch_lines([message])


def test_the_first_case_of_a_process_does_not_pay_the_compilers_start_up(
    pytester: pytest.Pytester, run_suite
) -> None:
    pytester.makepyfile("""
        import torch

        def test_first(tweak):
            tweak.benchmark(torch.nn.Linear(24, 24), torch.randn(4, 24))

        def test_second(tweak):
            tweak.benchmark(torch.nn.Linear(24, 24), torch.randn(4, 24))
    """)
    run_suite().assert_outcomes(passed=2)  # both cases' graphs are in the cache now
    run_suite("--benchmark-json=bench.json").assert_outcomes(passed=2)
    data = json.loads((pytester.path / "bench.json").read_text())
    times = {b["name"]: b["extra_info"]["tweak"] for b in data["benchmarks"]}
    first, second = times["test_first[cpu-default]"], times["test_second[cpu-default]"]
    assert first["compile_cache"]["state"] == second["compile_cache"]["state"] == "hit"
    # without the warm-up, the first compile of a process took 1.0 s against the second's
    # 0.14 s here (and ~3 s under load); with it, 0.16 s and 0.15 s. The bound is on the
    # difference, below the 0.86 s it guards against, so a busy neighbour slowing one of two
    # cache hits (0.13 -> 0.30 s in the fourteenth audit's loaded run) cannot flip it
    assert first["compile_time_s"] - second["compile_time_s"] < 0.6


QUIET_SUITE = """\
import pytest, torch

class Item(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.a = torch.nn.Linear(16, 16)

    def forward(self, x):
        y = self.a(x)
        return y * y.sum().item()

@pytest.mark.tweak_limits(graph_breaks=0)
def test_gated(tweak):
    tweak.benchmark(Item().eval(), torch.randn(4, 16))
"""


def test_a_failing_case_shows_the_verdict_first_and_no_torch_trace_records(
    pytester: pytest.Pytester, run_suite
) -> None:
    pytester.makepyfile(test_quiet=QUIET_SUITE)
    result = run_suite()
    result.assert_outcomes(failed=1)
    lines = result.stdout.lines
    start = lines.index(
        next(line for line in lines if line.startswith("____") and "test_gated" in line)
    )
    assert lines[start + 1 : start + 6] == [
        "failed, whatever its speed: graph breaks 1 exceed the limit 0 (set by "
        "@pytest.mark.tweak_limits) [pytest-tweak]",
        "pytest-tweak: test_quiet.py::test_gated[cpu-default] failed, whatever its speed:",
        "  - graph breaks 1 exceed the limit 0 (set by @pytest.mark.tweak_limits)",
        "  graph breaks (1):",
        "    test_quiet.py:10 `return y * y.sum().item()`: Unsupported Tensor.item() call with "
        "capture_scalar_outputs=False",
    ]
    # torch's structured-trace logger (always at DEBUG) no longer reaches pytest's log capture
    assert "torch.__trace" not in result.stdout.str()


def test_torch_trace_still_writes_its_files_for_users_who_set_it(
    pytester: pytest.Pytester, run_suite, monkeypatch: pytest.MonkeyPatch
) -> None:
    pytester.makepyfile(test_quiet=QUIET_SUITE)
    trace_dir = pytester.path / "trace"
    monkeypatch.setenv("TORCH_TRACE", str(trace_dir))
    run_suite().assert_outcomes(failed=1)
    written = "".join(path.read_text() for path in trace_dir.glob("*.log"))
    assert '"dynamo_graph_break_reason"' in written and "test_quiet.py" in written
