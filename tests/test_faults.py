"""Faults inside a case: a compile error, an exception in the model, a failing allocation, a
NaN output. Each fails its own test with the reason; the failed case lets go of its model, and
the cases after it run and compare with their baselines as usual."""

from __future__ import annotations

import json
import os

import pytest

FAULTS_SUITE = """
import gc, os, weakref, torch, pytest

REFS = []
FAULT = os.environ.get("TWEAK_FAULTS") == "1"
# no automatic collection: the failed cases' models must be let go of by pytest-tweak itself
gc.disable()


class Net(torch.nn.Module):
    def __init__(self, fault=""):
        super().__init__()
        self.big = torch.nn.Parameter(torch.randn(512, 512))
        self.fault = fault

    def forward(self, x):
        y = torch.relu(x @ self.big)
        if FAULT and self.fault == "oom":
            return y, torch.empty(1 << 40)  # 4 TiB: a failing allocation inside the graph
        if FAULT and self.fault == "raise":
            raise ValueError("the model itself failed")
        if FAULT and self.fault == "nan":
            y = y * float("nan")
        return y


def _run(tweak, fault):
    model = Net(fault).eval()
    REFS.append(weakref.ref(model.big))
    with torch.no_grad():
        tweak.benchmark(model, torch.randn(64, 512))


def test_steady_before(tweak):
    _run(tweak, "")

def test_oom(tweak):
    _run(tweak, "oom")

def test_model_raises(tweak):
    _run(tweak, "raise")

def test_nan(tweak):
    _run(tweak, "nan")

def test_steady_after(tweak):
    alive = [r for r in REFS[1:] if r() is not None]
    assert not alive, f"{len(alive)} failed case(s) still hold their model"
    _run(tweak, "")
"""


def test_faults_fail_their_own_tests_with_the_reason_and_disturb_no_other(
    pytester: pytest.Pytester, run_suite, monkeypatch: pytest.MonkeyPatch
) -> None:
    pytester.makepyfile(test_faults=FAULTS_SUITE)
    run_suite("--tweak-save").assert_outcomes(passed=5)  # the baselines, without faults
    monkeypatch.setenv("TWEAK_FAULTS", "1")
    result = run_suite("--tweak-threshold=200", "--tweak-json=r.json", "--tweak-markdown=r.md")
    # test_steady_after also checks that no failed case still holds its model
    result.assert_outcomes(passed=2, failed=3)
    # the failed cases are counted and named in the summary and the reports
    report = json.loads((pytester.path / "r.json").read_text())
    assert report["summary"]["cases"] == 5 and report["summary"]["failed"] == 3
    failed = {c["nodeid"]: c for c in report["cases"] if c["verdict"]["status"] == "failed"}
    assert sorted(n.split("::")[1].split("[")[0] for n in failed) == [
        "test_model_raises",
        "test_nan",
        "test_oom",
    ]
    for case in failed.values():
        assert case["outcome"] == "failed" and case["timing"] is None
        (why,) = case["verdict"]["failures"]
        assert why.startswith("inductor-default on cpu: ")
    assert "3 failed" in (pytester.path / "r.md").read_text()
    result.stdout.fnmatch_lines(["*test_model_raises*cpu*default*failed*"])
    result.stdout.fnmatch_lines_random(
        [
            "*pytest-tweak: inductor-default on cpu: RuntimeError: *DefaultCPUAllocator: "
            "can't allocate memory: you tried to allocate 4398046511104 bytes*",
            "*pytest-tweak: inductor-default on cpu: ValueError: the model itself failed*",
            "*pytest-tweak: inductor-default on cpu: the model's output holds 32768 NaN "
            "value(s) of 32768*",
        ]
    )
    # the exception's phase and the model's own frames, as a traceback would show them
    result.stdout.fnmatch_lines(
        [
            "raised while compiling; the model's code (torch's and pytest-tweak's frames left "
            "out):",
            '  File "*test_faults.py", line *, in forward',
            '    raise ValueError("the model itself failed")',
        ]
    )
    for name in ("steady_before", "steady_after"):
        line = next(x for x in result.outlines if f"test_{name}" in x and "cpu" in x)
        assert line.split()[-1] in ("unchanged", "inconclusive", "improved"), line


def test_a_nan_anywhere_in_a_nested_output_is_named(pytester: pytest.Pytester, run_suite) -> None:
    pytester.makepyfile("""
        import torch

        class Nested(torch.nn.Module):
            def forward(self, x):
                return {"ok": x + 1, "parts": [x * 2, torch.log(x - 10)]}

        def test_nested(tweak):
            tweak.benchmark(Nested(), torch.ones(4))
    """)
    # eager makes the same NaN (log of -9): the case fails anyway, also with the accuracy
    # check off, and says how to time a model meant to return NaN
    for accuracy in ("on", "off"):
        result = run_suite(f"--tweak-accuracy={accuracy}")
        result.assert_outcomes(failed=1)
        result.stdout.fnmatch_lines(
            ["*the model's output[[]'parts'[]][[]1[]] holds 4 NaN value(s) of 4*"]
        )
        result.stdout.fnmatch_lines(["*torch.nan_to_num*"])


def test_a_warning_made_an_error_names_where_and_inside_torch_the_filter(
    pytester: pytest.Pytester, run_suite
) -> None:
    """Under ``-W error`` a warning fails the case like any exception: raised by the model,
    the failure shows the model's frames; raised inside torch while it compiles (as torch's
    own deprecation warnings are; here a function compiled under torch's folder stands in for
    torch), the innermost frames and the filter that lets torch's warnings through."""
    pytester.makepyfile("""
        import os, warnings, torch

        TORCH_SIDE = {}
        exec(compile(
            "import warnings\\ndef warn():\\n    warnings.warn('inside torch', ResourceWarning)",
            os.path.join(os.path.dirname(torch.__file__), "_stand_in.py"), "exec"), TORCH_SIDE)

        class Warns(torch.nn.Module):
            def __init__(self, torch_side):
                super().__init__()
                self.torch_side = torch_side

            def forward(self, x):
                if self.torch_side:
                    TORCH_SIDE["warn"]()
                else:
                    warnings.warn("the model's own", ResourceWarning)
                return x + 1

        def test_model_warns(tweak):
            tweak.benchmark(Warns(False), torch.ones(4))

        def test_torch_warns(tweak):
            tweak.benchmark(Warns(True), torch.ones(4))
    """)
    result = run_suite("-W", "error::ResourceWarning")
    result.assert_outcomes(failed=2)
    result.stdout.fnmatch_lines(
        [
            "*pytest-tweak: inductor-default on cpu: ResourceWarning: the model's own",
            "raised while compiling; the model's code (torch's and pytest-tweak's frames left "
            "out):",
            "*in forward",
            '*warnings.warn("the model\'s own", ResourceWarning)',
        ]
    )
    result.stdout.fnmatch_lines(
        [
            "*pytest-tweak: inductor-default on cpu: ResourceWarning: inside torch",
            "raised while compiling; the model's code (torch's and pytest-tweak's frames left "
            "out):",
            "*in forward",
            '    TORCH_SIDE["warn"]()',
            "innermost frames, inside torch:",
            '  File "*_stand_in.py", line 3, in warn',
            "a warning turned into an error (-W error or filterwarnings = error) inside torch: "
            "let torch's own through with 'ignore::ResourceWarning:torch.*' in filterwarnings",
        ]
    )
    model_own = result.stdout.str().split("test_torch_warns")[0]
    assert "inside torch" not in model_own and "filterwarnings" not in model_own


def test_inputs_the_model_cannot_take_are_blamed_on_the_inputs_not_the_compiler(
    pytester: pytest.Pytester, run_suite
) -> None:
    # float64 inputs to a float32 model fail inside the code inductor generated: that code
    # once showed as "the model's code", with no word that eager fails the same way
    pytester.makepyfile("""
        import torch

        def test_wrong_dtype(tweak):
            model = torch.nn.Sequential(torch.nn.Linear(8, 8), torch.nn.ReLU()).eval()
            with torch.no_grad():
                tweak.benchmark(model, torch.randn(4, 8, dtype=torch.float64))
    """)
    result = run_suite()
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(
        [
            "*raised while compiling*",
            "the model raises uncompiled too (RuntimeError: mat1 and mat2 must have the same "
            "dtype*): the cause is in the model or its inputs, not in the compiler",
        ]
    )
    cache = os.environ.get("TORCHINDUCTOR_CACHE_DIR", "torchinductor_")
    frames = [line for line in result.outlines if line.strip().startswith("File ")]
    assert not [line for line in frames if cache in line], frames


def test_an_output_that_goes_nan_while_timed_fails_its_case(
    pytester: pytest.Pytester, run_suite
) -> None:
    """Only the first call's output was checked, so a training step that diverged while it
    was timed passed, timed on NaN weights, and was saved as a baseline (eighth user trial)."""
    pytester.makepyfile(
        test_grows="""
        import torch

        scale = torch.ones(4)

        def grows(x):
            scale.mul_(1e10)  # state the calls change: inf after a few dozen calls
            return x * scale / scale

        def test_grows(tweak):
            tweak.benchmark(grows, torch.ones(4))

        def test_steady(tweak):
            tweak.benchmark(torch.nn.Linear(4, 4), torch.ones(2, 4))
        """
    )
    result = run_suite("--tweak-save")
    result.assert_outcomes(passed=1, failed=1)
    result.stdout.fnmatch_lines(
        [
            "*pytest-tweak: inductor-default on cpu: after the timed calls, the model's output "
            "holds 4 NaN value(s) of 4*The first call's output had none, so the model's state "
            "changed as it was called*"
        ]
    )
    saved = json.loads((pytester.path / "tweak-baselines.json").read_text())["cases"]
    assert list(saved) == ["test_grows.py::test_steady[cpu-default]"]


@pytest.mark.parametrize(
    ("variable", "named"),
    [
        ("TORCHDYNAMO_DISABLE", "TORCHDYNAMO_DISABLE=1 is set in the environment"),
        ("TORCH_COMPILE_DISABLE", "TORCH_COMPILE_DISABLE=1 is set in the environment"),
    ],
)
def test_compile_turned_off_by_the_environment_fails_the_cases_and_saves_nothing(
    pytester: pytest.Pytester, run_suite, monkeypatch: pytest.MonkeyPatch, variable, named
) -> None:
    """torch.compile hands the model back uncompiled: the cases timed eager code as
    "inductor", passed every graph-break limit and were saved as the baseline (tenth user
    trial). The eager backend compiles nothing and still runs."""
    pytester.makepyfile(
        test_off="""
        import pytest, torch

        @pytest.mark.tweak_backends("inductor", "eager")
        def test_lin(tweak):
            with torch.no_grad():
                tweak.benchmark(torch.nn.Linear(4, 4), torch.ones(2, 4))
        """
    )
    monkeypatch.setenv(variable, "1")
    result = run_suite("--tweak-save", "--tweak-max-graph-breaks=0")
    result.assert_outcomes(passed=1, failed=1)
    result.stdout.fnmatch_lines(
        [
            f"*pytest-tweak: inductor-default on cpu: {named}, so torch.compile hands the "
            "model back uncompiled and this case would time eager code as inductor-default's: "
            "unset it to measure*"
        ]
    )
    saved = json.loads((pytester.path / "tweak-baselines.json").read_text())["cases"]
    assert list(saved) == ["test_off.py::test_lin[cpu-eager]"]


def test_a_test_whose_teardown_fails_is_not_saved(pytester: pytest.Pytester, run_suite) -> None:
    """pytest reports an error for it, yet its case was saved: the case's outcome was taken
    from the call alone (eleventh trial)."""
    pytester.makepyfile(
        test_td="""
        import pytest, torch

        @pytest.fixture
        def breaks_after():
            yield
            raise RuntimeError("teardown broke")

        @pytest.mark.tweak_backends("eager")
        def test_td(tweak, breaks_after):
            tweak.benchmark(torch.nn.Linear(4, 4), torch.ones(2, 4))

        @pytest.mark.tweak_backends("eager")
        def test_ok(tweak):
            tweak.benchmark(torch.nn.Linear(4, 4), torch.ones(2, 4))
        """
    )
    result = run_suite("--tweak-save")
    result.assert_outcomes(passed=2, errors=1)
    saved = json.loads((pytester.path / "tweak-baselines.json").read_text())["cases"]
    assert list(saved) == ["test_td.py::test_ok[cpu-eager]"]
