"""The plugin as users run it: real user suites in fresh pytest processes, real compiles."""

from __future__ import annotations

import json
import shlex
import sys
from pathlib import Path

import pytest
from conftest import WARNINGS_AS_ERRORS_INI

SPEC_SUITE = """
import pytest, torch
from pytest_tweak import TorchInductorBackendConfig

class TinyNet(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.a = torch.nn.Linear(64, 64)
        self.b = torch.nn.Linear(64, 8)

    def forward(self, x):
        return self.b(torch.relu(self.a(x)))

CONFIGS = [
    TorchInductorBackendConfig(mode="default"),
    TorchInductorBackendConfig(mode="max-autotune-no-cudagraphs", dynamic=False),
    TorchInductorBackendConfig(autocast_enabled=True, autocast_dtype=torch.bfloat16),
]

@pytest.mark.cpu
@pytest.mark.xpu
@pytest.mark.tweak_configs(*CONFIGS)
def test_tinynet_speed(tweak):
    model = TinyNet().eval()
    x = torch.randn(32, 64)
    result = tweak.benchmark(model, x)   # device move, compile, warm-up, timing, counters
    assert result.graph_breaks == 0
"""

SPEC_IDS = [
    "test_tinynet_speed[cpu-default]",
    "test_tinynet_speed[cpu-max-autotune-no-cudagraphs-static]",
    "test_tinynet_speed[cpu-autocast-bf16]",
]

# Each test's model changes when an environment variable is set: the "pull request" run.
CHANGING_SUITE = """
import os, pytest, torch
from pytest_tweak import TorchInductorBackendConfig

def changed(name):
    return os.environ.get("TWEAK_CHANGE", "") == name

class Stack(torch.nn.Module):
    def __init__(self, depth, role):
        super().__init__()
        self.layers = torch.nn.ModuleList(torch.nn.Linear(32, 32) for _ in range(depth))
        self.role = role
        self.count = 0

    def forward(self, x):
        for layer in self.layers:
            x = torch.relu(layer(x))
        if self.role == "break" and changed("break"):
            print("", end="")          # a new graph break
        if self.role == "recompile" and changed("recompile"):
            self.count += 1            # a changing Python attribute: recompiles
            x = x * self.count
        return x

def test_control(tweak):
    tweak.benchmark(Stack(2, "control").eval(), torch.randn(8, 32))

def test_speed(tweak):
    tweak.benchmark(Stack(60 if changed("slow") else 2, "slow").eval(), torch.randn(8, 32))

def test_breaks(tweak):
    tweak.benchmark(Stack(2, "break").eval(), torch.randn(8, 32))

def test_recompiles(tweak):
    tweak.benchmark(Stack(2, "recompile").eval(), torch.randn(8, 32))
"""


def _cuda_available() -> bool:
    import torch

    return torch.cuda.is_available()


def _escape(name: str) -> str:
    """A test id as an fnmatch pattern: brackets matched literally."""
    return "".join({"[": "[[]", "]": "[]]"}.get(c, c) for c in name)


def _baseline(path: Path) -> dict[str, dict[str, object]]:
    data = json.loads(path.read_text())
    assert data["format"] == "pytest-tweak-baselines"
    return data["cases"]


def test_spec_suite_runs_each_device_config_case_with_a_summary(
    pytester: pytest.Pytester, run_suite
) -> None:
    pytester.makepyfile(test_tinynet=SPEC_SUITE)
    result = run_suite("--tweak-device=cpu", "-v")
    result.assert_outcomes(passed=3)
    result.stdout.fnmatch_lines([f"*::{_escape(name)} PASSED*" for name in SPEC_IDS])
    result.stdout.fnmatch_lines(
        [
            "*- tweak summary -*",
            "test*device*config*median*graph breaks*recompiles*vs baseline*verdict",
            "test_tinynet.py::test_tinynet_speed*cpu*default*us*0*0*-*new",
            "test_tinynet.py::test_tinynet_speed*cpu*max-autotune-no-cudagraphs-static*0*0*new",
            "test_tinynet.py::test_tinynet_speed*cpu*autocast-bf16*0*0*new",
        ]
    )
    # every case is in pytest-benchmark's table too
    result.stdout.fnmatch_lines(["*benchmark: 3 tests*"])
    assert not (pytester.path / "tweak-baselines.json").exists()  # nothing saved by default


def test_collect_ids_cover_selected_and_supported_devices(
    pytester: pytest.Pytester, run_suite
) -> None:
    pytester.makepyfile(
        test_ids="""
        import pytest, torch
        from pytest_tweak import TorchInductorBackendConfig as C

        @pytest.mark.tweak_configs(C(), C(dynamic=False))
        def test_all_devices(tweak): pass

        @pytest.mark.cuda
        def test_cuda_only(tweak): pass

        def test_no_tweak(): pass
    """
    )
    result = run_suite("--collect-only", "-q", "--tweak-device=cpu", "--tweak-device=cuda,xpu")
    result.stdout.fnmatch_lines(
        [
            "test_ids.py::test_all_devices[cpu-default]",
            "test_ids.py::test_all_devices[cpu-static]",
            "test_ids.py::test_all_devices[cuda-default]",
            "test_ids.py::test_all_devices[cuda-static]",
            "test_ids.py::test_all_devices[xpu-default]",
            "test_ids.py::test_all_devices[xpu-static]",
            "test_ids.py::test_cuda_only[cuda-default]",
            "test_ids.py::test_no_tweak",
        ]
    )


def test_each_case_carries_its_device_marker_for_m_expressions(
    pytester: pytest.Pytester, run_suite
) -> None:
    """`-m "not cuda"`, the usual way to leave out GPU tests, leaves out the cuda cases of a
    test that names no device too, and then the run does not fail for a missing cuda."""
    pytester.makepyfile(
        test_ids="""
        import pytest

        def test_any(tweak): pass

        @pytest.mark.cuda
        def test_cuda_only(tweak): pass
    """
    )
    result = run_suite("--collect-only", "-q", "--tweak-device=cpu,cuda", "-m", "cuda")
    result.stdout.fnmatch_lines(
        ["test_ids.py::test_any[[]cuda-default[]]", "test_ids.py::test_cuda_only[[]cuda-default[]]"]
    )
    assert "cpu-default" not in result.stdout.str()
    result = run_suite("--collect-only", "-q", "--tweak-device=cpu,cuda", "-m", "not cuda")
    result.stdout.fnmatch_lines(["test_ids.py::test_any[[]cpu-default[]]", "*(2 deselected)*"])
    assert "cuda-default" not in result.stdout.str()
    result = run_suite("--tweak-device=cpu,cuda", "-m", "not cuda", "--strict-markers")
    result.assert_outcomes(passed=1, deselected=2)
    assert result.ret == pytest.ExitCode.OK
    # a test marked for several devices: each case keeps only its own device's marker, so
    # "not xpu" keeps its cpu case and "cpu" leaves out its xpu one (ninth user trial)
    pytester.makepyfile(
        test_ids="""
        import pytest

        @pytest.mark.cpu
        @pytest.mark.xpu
        def test_both(tweak): pass
    """
    )
    for expression, kept in (("not xpu", "cpu"), ("cpu", "cpu"), ("xpu", "xpu")):
        result = run_suite("--co", "-q", "--tweak-device=cpu,xpu", "-m", expression)
        result.stdout.fnmatch_lines([f"test_ids.py::test_both[[]{kept}-default[]]"])
        assert result.stdout.str().count("test_both[") == 1, expression


def test_unavailable_devices_skip_naming_the_device_and_the_check(
    pytester: pytest.Pytester, run_suite
) -> None:
    pytester.makepyfile(test_tinynet=SPEC_SUITE)
    # asked for by name and skipping is intended (a runner that may have no XPU)
    result = run_suite("--tweak-device=xpu", "-rs", "--tweak-allow-missing-device")
    result.assert_outcomes(skipped=3)
    assert result.ret == 0
    result.stdout.fnmatch_lines(
        [
            "SKIPPED [[]3[]] test_tinynet.py:*: device xpu is not available: "
            "torch.xpu.is_available() returned False (torch *)",
        ]
    )
    assert "INTERNALERROR" not in result.stdout.str()


@pytest.mark.parametrize("device", ["xpu", "xpu:7"])
def test_a_device_asked_for_by_name_that_no_case_could_use_fails_the_run(
    pytester: pytest.Pytester, run_suite, device: str
) -> None:
    """A GPU runner whose driver is gone must not pass the gate green: its cases skip (with
    the reason), and the run fails saying why, unless the opt-out is given."""
    pytester.makepyfile(test_tinynet=SPEC_SUITE)
    result = run_suite(f"--tweak-device=cpu,{device}", "-k", "default")
    result.assert_outcomes(passed=1, skipped=1, deselected=4)
    assert result.ret == pytest.ExitCode.TESTS_FAILED
    result.stdout.fnmatch_lines(
        [
            "pytest-tweak: ERROR: --tweak-device asked for a device torch cannot use: xpu "
            "(torch.xpu.is_available() returned False (torch *); 1 case(s) skipped). Nothing "
            "was measured there, so the run fails; add --tweak-allow-missing-device (ini "
            "tweak_allow_missing_device = true) where skipping those cases is intended",
        ]
    )
    # the ini twin, and a test the markers keep off the device, skip without failing
    pytester.makeini("[pytest]\ntweak_device = cpu,xpu\ntweak_allow_missing_device = true\n")
    assert run_suite("-k", "default").ret == pytest.ExitCode.OK
    pytester.makeini("[pytest]\n")
    pytester.makepyfile(
        test_tinynet="import pytest\n@pytest.mark.cpu\ndef test_cpu_only(tweak): pass\n"
    )
    result = run_suite("--tweak-device=xpu")
    result.assert_outcomes(skipped=1)
    assert result.ret == pytest.ExitCode.OK


@pytest.mark.skipif(_cuda_available(), reason="checks the skip on a machine without cuda")
def test_cuda_cases_skip_without_cuda(pytester: pytest.Pytester, run_suite) -> None:
    pytester.makepyfile(
        test_cuda="""
        import pytest
        @pytest.mark.cuda
        def test_cuda_only(tweak): raise AssertionError("must not run")
    """
    )
    result = run_suite("--tweak-device=cuda,xpu", "-rs", "--tweak-allow-missing-device")
    result.assert_outcomes(skipped=1)
    result.stdout.fnmatch_lines(
        [
            "SKIPPED [[]1[]] test_cuda.py:*: device cuda is not available: "
            "torch.cuda.is_available() returned False (torch *)",
        ]
    )


def test_test_for_a_device_not_selected_is_skipped_with_the_reason(
    pytester: pytest.Pytester, run_suite
) -> None:
    pytester.makepyfile(
        test_cuda="""
        import pytest
        @pytest.mark.cuda
        @pytest.mark.xpu
        def test_gpu_only(tweak): raise AssertionError("must not run")
    """
    )
    result = run_suite("--tweak-device=cpu", "-rs")
    result.assert_outcomes(skipped=1)
    result.stdout.fnmatch_lines(["*supports cuda, xpu; selected by --tweak-device: cpu"])


def test_markers_are_registered_and_documented(pytester: pytest.Pytester) -> None:
    result = pytester.runpytest_subprocess("--markers")
    result.stdout.fnmatch_lines(
        [
            "@pytest.mark.cpu: the test supports the cpu device*",
            "@pytest.mark.cuda: the test supports the cuda device*",
            "@pytest.mark.xpu: the test supports the xpu device*",
            "@pytest.mark.tweak_configs(*configs): run the test's `tweak` cases once per*",
        ]
    )


def test_options_are_documented_in_help(pytester: pytest.Pytester) -> None:
    result = pytester.runpytest_subprocess("--help")
    result.stdout.fnmatch_lines(
        [
            "pytest-tweak*",
            "*--tweak-device=DEV*",
            "*--tweak-save*",
            "*--tweak-append*",
            "*--tweak-baseline=PATH*",
            "*--tweak-threshold=PCT*",
            "*--tweak-run-noise=PCT*",
            "*--tweak-metric=NAME*",
            "*--tweak-fail-inconclusive*",
            "*--tweak-fast*",
            "*--tweak-precision=PCT*",
            "*--tweak-eager=on|off*",
            "*tweak_threshold (string):*",
        ]
    )


@pytest.mark.parametrize(
    ("args", "ini", "message"),
    [
        (
            ["--tweak-device=gpu"],
            "",
            "*--tweak-device: unknown device 'gpu'; allowed: cpu, cuda, xpu",
        ),
        (
            ["--tweak-threshold=abc"],
            "",
            "*--tweak-threshold: invalid value 'abc'; expected a percentage > 0",
        ),
        (["--tweak-threshold=0"], "", "*--tweak-threshold: invalid value '0'*"),
        ([], "tweak_threshold = -5", "*ini option tweak_threshold in tox.ini: invalid value '-5'*"),
        (
            [],
            "tweak_device = cpu,tpu",
            "*ini option tweak_device in tox.ini: unknown device 'tpu'*",
        ),
        (
            ["--tweak-min-rounds=2.5"],
            "",
            "*--tweak-min-rounds: invalid value '2.5'; expected an integer from 1 to 1000*",
        ),
        (["--tweak-max-time=-1"], "", "*--tweak-max-time: invalid value '-1'*"),
        (
            ["--tweak-metric=mean"],
            "",
            "*--tweak-metric: invalid value 'mean'; expected one of: normalized, absolute, device",
        ),
        (["--tweak-eager=maybe"], "", "*--tweak-eager: invalid value 'maybe'; expected one of*"),
        (
            ["--tweak-threshold=tpu=5"],
            "",
            "*--tweak-threshold: invalid value 'tpu=5'; expected a percentage > 0, or "
            "DEVICE=PCT pairs*",
        ),
        ([], "tweak_run_noise = cpu=-1", "*ini option tweak_run_noise in tox.ini: invalid value*"),
    ],
)
def test_bad_option_values_are_usage_errors(
    pytester: pytest.Pytester, args: list[str], ini: str, message: str
) -> None:
    if ini:
        pytester.makeini(f"[pytest]\n{ini}\n")
    pytester.makepyfile("def test_x(): pass")
    result = pytester.runpytest_subprocess(*args)
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines([message])


def test_loading_the_plugin_does_not_import_torch(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    pytester.makepyfile("""
        import sys
        def test_plain():
            assert "torch" not in sys.modules
    """)
    # only this plugin: another installed plugin may import torch itself
    monkeypatch.setenv("PYTEST_DISABLE_PLUGIN_AUTOLOAD", "1")
    result = pytester.runpytest_subprocess(
        "-p", "pytest_tweak.plugin", "--tweak-device=cpu", "-p", "no:cacheprovider"
    )
    result.assert_outcomes(passed=1)
    result.stdout.fnmatch_lines(["tweak: devices=cpu, *"])


def test_installing_is_enabling_through_the_pytest11_entry_point(pytester: pytest.Pytester) -> None:
    from importlib.metadata import entry_points

    (found,) = [e for e in entry_points(group="pytest11") if e.name == "tweak"]
    assert found.value == "pytest_tweak.plugin"
    pytester.makepyfile("""
        def test_enabled(pytestconfig):
            assert pytestconfig.pluginmanager.has_plugin("tweak")
    """)
    pytester.runpytest_subprocess("-p", "no:cacheprovider").assert_outcomes(passed=1)


def test_save_then_compare_fails_exactly_the_regressed_tests(
    pytester: pytest.Pytester, run_suite, monkeypatch: pytest.MonkeyPatch
) -> None:
    pytester.makepyfile(test_changing=CHANGING_SUITE)
    saved = run_suite("--tweak-save")
    saved.assert_outcomes(passed=4)
    saved.stdout.fnmatch_lines(["pytest-tweak: saved 4 case(s) to *tweak-baselines.json*"])
    baseline_file = pytester.path / "tweak-baselines.json"
    cases = _baseline(baseline_file)
    assert sorted(cases) == [
        f"test_changing.py::test_{n}[cpu-default]"
        for n in ("breaks", "control", "recompiles", "speed")
    ]
    assert all(c["graph_breaks"] == 0 and c["recompiles"] == 0 for c in cases.values())

    unchanged = run_suite("--tweak-threshold=200")
    unchanged.assert_outcomes(passed=4)
    unchanged.stdout.fnmatch_lines(["*test_control*cpu*default*unchanged"])

    for change, problem, headline in [
        (
            "slow",
            "*normalized time: * vs baseline * (time / reference): +*% slower (99% interval *"
            " .. *), threshold 200%, noise ±*% (1 baseline run)",
            "regressed: normalized time +*% ±*% (threshold 200%)* [[]pytest-tweak[]]",
        ),
        (
            "break",
            "*graph breaks 1 vs baseline 0 (+1)",
            "regressed: graph breaks 1 vs baseline 0 (+1)* [[]pytest-tweak[]]",
        ),
        (
            "recompile",
            "*recompiles * vs baseline 0 (+*)",
            "regressed: recompiles * vs baseline 0 (+*)* [[]pytest-tweak[]]",
        ),
    ]:
        monkeypatch.setenv("TWEAK_CHANGE", change)
        name = {"slow": "speed", "break": "breaks", "recompile": "recompiles"}[change]
        result = run_suite("--tweak-threshold=200")
        result.assert_outcomes(passed=3, failed=1)
        result.stdout.fnmatch_lines([f"FAILED test_changing.py::test_{name}[[]cpu-default[]]*"])
        # the first line, which pytest's short summary shows, leads with the verdict
        result.stdout.fnmatch_lines([headline])
        result.stdout.fnmatch_lines(
            [
                f"pytest-tweak: test_changing.py::test_{name}[[]cpu-default[]] regressed against "
                f"{pytester.path / 'tweak-baselines.json'}:",
            ]
        )
        result.stdout.fnmatch_lines([problem])
        # an eager fallback after the recompile limit may also grow the peak memory
        why = {"slow": "", "break": " (graph breaks)", "recompile": " (recompiles*"}[change]
        result.stdout.fnmatch_lines([f"*test_{name}*cpu*default*regressed{why}"])
    # the graph-break failure says where the break is
    monkeypatch.setenv("TWEAK_CHANGE", "break")
    result = run_suite("--tweak-threshold=200")
    result.stdout.fnmatch_lines(
        [
            "  graph breaks (1):",
            '    test_changing.py:18 `print("", end="")          # a new graph break`: '
            "Failed to trace builtin operator",
        ]
    )
    assert _baseline(baseline_file) == cases  # comparing never writes the file


def test_a_measured_case_whose_test_fails_is_marked_in_the_summary_and_not_saved(
    pytester: pytest.Pytester, run_suite
) -> None:
    pytester.makepyfile("""
        import torch

        def test_ok(tweak):
            tweak.benchmark(torch.nn.Linear(4, 4), torch.randn(2, 4))

        def test_own_assert(tweak):
            tweak.benchmark(torch.nn.Linear(4, 4), torch.randn(2, 4))
            assert False, "the test's own check"
    """)
    result = run_suite("--tweak-save")
    result.assert_outcomes(passed=1, failed=1)
    result.stdout.fnmatch_lines(
        [
            "*test_own_assert*cpu*inductor*default*not compared, test failed",
            "pytest-tweak: saved 1 case(s) to *tweak-baselines.json (kept 0 other entries)",
            "pytest-tweak: not saved: 1 measured case(s) whose test did not pass (a baseline "
            "records passing tests only): test_a_measured_case_whose_test_fails_is_marked_in_"
            "the_summary_and_not_saved.py::test_own_assert[[]cpu-default[]]",
        ]
    )
    result.stdout.no_fnmatch_line("*test_ok*cpu*inductor*default*test failed")
    assert list(_baseline(pytester.path / "tweak-baselines.json")) == [
        "test_a_measured_case_whose_test_fails_is_marked_in_the_summary_and_not_saved.py::"
        "test_ok[cpu-default]"
    ]


def test_an_interrupted_save_writes_nothing_and_says_so(
    pytester: pytest.Pytester, run_suite, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Ctrl-C during --tweak-save used to save the cases that had finished: their entries lost
    # the earlier runs (or, with --tweak-append, gained one the others did not). A
    # KeyboardInterrupt raised by the second test is that Ctrl-C, landing at a known point.
    pytester.makepyfile("""
        import os, torch

        def test_first(tweak):
            tweak.benchmark(torch.nn.Linear(4, 4), torch.randn(2, 4))

        def test_second(tweak):
            if os.environ.get("STOP_HERE"):
                raise KeyboardInterrupt
            tweak.benchmark(torch.nn.Linear(4, 4), torch.randn(2, 4))
    """)
    run_suite("--tweak-save").assert_outcomes(passed=2)
    path = pytester.path / "tweak-baselines.json"
    before = path.read_bytes()
    monkeypatch.setenv("STOP_HERE", "1")
    result = run_suite("--tweak-save", "--tweak-append")
    assert result.ret == pytest.ExitCode.INTERRUPTED
    result.stdout.fnmatch_lines(
        [
            f"pytest-tweak: nothing saved: the run was interrupted, so {path} is as it was "
            "(1 measured case(s) left out); run the save again to record them",
            "*! KeyboardInterrupt !*",
        ]
    )
    result.stdout.no_fnmatch_line("*saved 1 case(s)*")
    assert path.read_bytes() == before
    assert all(len(entry["runs"]) == 1 for entry in _baseline(path).values())


@pytest.mark.parametrize("returncode", [0, 3])
def test_a_save_cut_short_by_pytest_exit_writes_nothing_whatever_its_returncode(
    pytester: pytest.Pytester, run_suite, monkeypatch: pytest.MonkeyPatch, returncode: int
) -> None:
    """``pytest.exit(..., returncode=N)`` cuts a run short as Ctrl-C does, but pytest then
    exits N, not "interrupted": the save went ahead, and with 3 silently (pytest prints no
    summary for it) (eighth user trial)."""
    pytester.makepyfile(f"""
        import os, pytest, torch

        def test_first(tweak):
            tweak.benchmark(torch.nn.Linear(4, 4), torch.randn(2, 4))

        def test_second():
            if os.environ.get("STOP_HERE"):
                pytest.exit("stop here", returncode={returncode})
    """)
    run_suite("--tweak-save").assert_outcomes(passed=2)
    path = pytester.path / "tweak-baselines.json"
    before = path.read_bytes()
    monkeypatch.setenv("STOP_HERE", "1")
    result = run_suite("--tweak-save", "--tweak-append")
    assert result.ret == returncode
    assert path.read_bytes() == before
    if returncode == 0:  # pytest prints the summary for this one
        result.stdout.fnmatch_lines(["pytest-tweak: nothing saved: the run was interrupted*"])


def test_a_stepwise_stop_saves_the_passed_cases_as_a_failure_does(
    pytester: pytest.Pytester, run_suite, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``--sw`` stops the run at a failure with pytest's "Interrupted" exit status; that stop
    ends whole tests, so the cases that passed are saved as under ``-x`` (they used to be
    dropped as after Ctrl-C, and stepwise then deselected them on every later run)."""
    pytester.makepyfile("""
        import os, torch

        def test_a(tweak):
            tweak.benchmark(torch.nn.Linear(4, 4), torch.randn(2, 4))

        def test_flaky(tweak):
            assert not os.environ.get("FAILIT")
            tweak.benchmark(torch.nn.Linear(4, 4), torch.randn(2, 4))

        def test_b(tweak):
            tweak.benchmark(torch.nn.Linear(4, 4), torch.randn(2, 4))
    """)
    monkeypatch.setenv("FAILIT", "1")
    result = run_suite("-p", "cacheprovider", "-p", "stepwise", "--sw", "--tweak-save")
    assert result.ret == pytest.ExitCode.INTERRUPTED
    result.assert_outcomes(passed=1, failed=1)
    result.stdout.fnmatch_lines(["pytest-tweak: saved 1 case(s) to *tweak-baselines.json*"])
    result.stdout.no_fnmatch_line("*nothing saved*")
    names = [n.split("::")[1] for n in _baseline(pytester.path / "tweak-baselines.json")]
    assert names == ["test_a[cpu-default]"]


def test_a_gating_run_that_meets_no_baseline_entry_says_so(
    pytester: pytest.Pytester, run_suite
) -> None:
    """A baseline path with a typo (or a CI job whose baseline was not restored) and a file
    whose entries name other node ids (another --rootdir, renamed tests) left every case
    `new` and the run green without a word: the gate was off and nothing said so."""
    pytester.makepyfile(
        test_gate="""
        import torch

        def test_one(tweak):
            tweak.benchmark(torch.nn.Linear(4, 4), torch.randn(2, 4))
    """
    )
    saved = run_suite("--tweak-save")
    saved.assert_outcomes(passed=1)
    saved.stdout.no_fnmatch_line("*nothing was gated*")
    typo = run_suite(
        "--tweak-baseline=perf/typo.json", "--tweak-json=r.json", "--tweak-markdown=r.md"
    )
    typo.assert_outcomes(passed=1)
    why = (
        f"no baseline file at {pytester.path / 'perf' / 'typo.json'}, so all 1 case(s) are new "
        "and nothing was gated: record one with --tweak-save"
    )
    typo.stdout.fnmatch_lines([f"pytest-tweak: {why}*"])
    # the reports a pull request shows say it too (thirteenth trial: they read all green)
    summary = json.loads((pytester.path / "r.json").read_text())["summary"]
    assert summary["gated"] == 0 and summary["ungated"].startswith(why)
    assert f"> ⚠️ **Nothing was gated**: {why}" in (pytester.path / "r.md").read_text()
    gated = run_suite("--tweak-json=r.json")  # the file matches: no word
    gated.stdout.no_fnmatch_line("*nothing was gated*")
    summary = json.loads((pytester.path / "r.json").read_text())["summary"]
    assert summary["gated"] == 1 and summary["ungated"] is None
    source = pytester.path / "test_gate.py"
    source.write_text(source.read_text().replace("test_one", "test_renamed"))
    renamed = run_suite()
    renamed.assert_outcomes(passed=1)
    renamed.stdout.fnmatch_lines(
        [
            "pytest-tweak: none of the 1 case(s) has an entry in *tweak-baselines.json yet, so "
            "nothing was gated: new tests, or renamed ones (the file holds tests of their "
            "folders, so it is this rootdir's); record them with --tweak-save*"
        ]
    )
    # ids of another rootdir: the file holds no test of their folders
    moved = pytester.mkdir("sub")
    source.rename(moved / "test_gate.py")
    elsewhere = run_suite()
    elsewhere.assert_outcomes(passed=1)
    elsewhere.stdout.fnmatch_lines(
        [
            "pytest-tweak: none of the 1 new case(s) has an entry in *tweak-baselines.json, so "
            "nothing was gated: if the file holds these tests, their node ids differ*"
        ]
    )


def test_entries_of_renamed_or_deleted_tests_are_named_with_the_command_that_removes_them(
    pytester: pytest.Pytester, run_suite
) -> None:
    """A renamed test left its old entries in the file for good, gating nothing, and no run
    said so (seventh user trial). Whether a test exists is looked up in its module, so a run
    narrowed by -k still tells."""
    case = "tweak.benchmark(torch.nn.Linear(4, 4), torch.randn(2, 4))"
    pytester.makepyfile(
        test_gate=f"import torch\n\ndef test_keep(tweak):\n    {case}\n\n"
        f"def test_old(tweak):\n    {case}\n",
        test_other=f"import torch\n\ndef test_x(tweak):\n    {case}\n",
    )
    run_suite("--tweak-save").assert_outcomes(passed=3)
    source = pytester.path / "test_gate.py"
    source.write_text(source.read_text().replace("test_old", "test_new"))
    (pytester.path / "test_other.py").unlink()
    # no speed verdict may decide these runs (a loaded machine read test_keep +26 % against
    # its one-run baseline once): the entries are what is tested
    lax = "--tweak-threshold=1000"
    gated = run_suite("-k", "test_keep", lax)
    gated.assert_outcomes(passed=1)
    baseline = pytester.path / "tweak-baselines.json"
    gated.stdout.fnmatch_lines(
        [
            f"pytest-tweak: 2 entries in {baseline} belong to tests that no longer exist "
            "(renamed, their file deleted, or the parameter value or config their id names "
            "dropped), so they gate nothing: "
            "test_gate.py::test_old[[]cpu-default[]], test_other.py::test_x[[]cpu-default[]]. "
            f"If so, remove them: python -m pytest_tweak remove {baseline} "
            "--test 'test_gate.py::test_old[[]cpu-default[]]' "
            "--test 'test_other.py::test_x[[]cpu-default[]]'"
        ]
    )
    # under pytest-xdist the workers collect, and tell the controller (ninth user trial)
    spread = run_suite("-n", "2", "-k", "test_keep", lax)
    spread.assert_outcomes(passed=1)
    spread.stdout.fnmatch_lines([f"pytest-tweak: 2 entries in {baseline} belong to tests *"])
    command = gated.stdout.str().split("If so, remove them: python ")[1].splitlines()[0]
    removed = pytester.run(sys.executable, *shlex.split(command))
    assert removed.ret == 0, removed.stderr.str()
    assert sorted(_baseline(baseline)) == ["test_gate.py::test_keep[cpu-default]"]
    again = run_suite(lax)
    again.assert_outcomes(passed=2)
    again.stdout.no_fnmatch_line("*no longer exist*")


def test_entries_of_a_dropped_parameter_value_or_config_are_named_and_removed_alone(
    pytester: pytest.Pytester, run_suite
) -> None:
    """Dropping a config or a parameter value renames the test's ids, which is far more
    common than deleting a test; their entries stayed unnamed for good (thirteenth trial).
    Entries of a device the run did not select, or ids -k left out, are not gone."""
    pytester.makepyfile(
        test_sizes="""
        import pytest
        import torch
        from pytest_tweak import TorchInductorBackendConfig as C

        @pytest.mark.tweak_configs(C(), C(dynamic=False))
        @pytest.mark.parametrize("d", [4, 8])
        def test_speed(tweak, d):
            tweak.benchmark(torch.nn.Linear(d, d), torch.randn(2, d))
        """
    )
    run_suite("--tweak-save", "--tweak-fast").assert_outcomes(passed=4)
    path = pytester.path / "tweak-baselines.json"
    data = json.loads(path.read_text())
    cuda = json.loads(json.dumps(data["cases"]["test_sizes.py::test_speed[cpu-default-4]"]))
    cuda["device"] = "cuda"
    data["cases"]["test_sizes.py::test_speed[cuda-default-4]"] = cuda  # another device's
    path.write_text(json.dumps(data))
    source = pytester.path / "test_sizes.py"
    source.write_text(
        source.read_text().replace("C(), C(dynamic=False)", "C()").replace("[4, 8]", "[4]")
    )
    lax = ("--tweak-threshold=1000", "--tweak-fast")
    result = run_suite("-k", "speed", *lax)
    result.assert_outcomes(passed=1)
    dropped = [
        "test_sizes.py::test_speed[cpu-default-8]",
        "test_sizes.py::test_speed[cpu-static-4]",
        "test_sizes.py::test_speed[cpu-static-8]",
    ]
    text = result.stdout.str()
    assert f"3 entries in {path} belong to tests that no longer exist" in text
    assert ", ".join(dropped) in text and "cuda-default-4" not in text
    # a run that selected some ids by name cannot tell what its test still has
    named = run_suite("test_sizes.py::test_speed[cpu-default-4]", *lax)
    named.assert_outcomes(passed=1)
    assert "no longer exist" not in named.stdout.str()
    command = text.split("If so, remove them: python ")[1].splitlines()[0]
    removed = pytester.run(sys.executable, *shlex.split(command))
    assert removed.ret == 0, removed.stderr.str()
    assert sorted(_baseline(path)) == [
        "test_sizes.py::test_speed[cpu-default-4]",
        "test_sizes.py::test_speed[cuda-default-4]",
    ]


def test_a_save_names_a_baseline_too_noisy_to_gate(pytester: pytest.Pytester, run_suite) -> None:
    pytester.makepyfile("""
        import torch

        def test_mlp(tweak):
            tweak.benchmark(torch.nn.Linear(4, 4), torch.randn(2, 4))
    """)
    # a threshold no measurement's noise comes near: the warning needs a noisy baseline
    first = run_suite("--tweak-save", "--tweak-threshold=200")
    first.assert_outcomes(passed=1)
    assert "too noisy" not in first.stdout.str()
    path = pytester.path / "tweak-baselines.json"
    data = json.loads(path.read_text())
    (entry,) = data["cases"].values()
    (run,) = entry["runs"]
    entry["runs"] = []
    for scale in (1.0, 1.6, 0.6):  # three runs as far apart as on a busy 2-core machine
        copy = json.loads(json.dumps(run))
        for figure in ("timing", "normalized"):
            for key in ("min", "q1", "median", "q3", "max"):
                copy[figure][key] *= scale
        entry["runs"].append(copy)
    path.write_text(json.dumps(data))
    appended = run_suite("--tweak-save", "--tweak-append", "--tweak-threshold=200")
    appended.assert_outcomes(passed=1)
    appended.stdout.fnmatch_lines(
        [
            "pytest-tweak: 1 saved case(s) have a baseline too noisy to gate at their threshold "
            "(an unchanged run would read inconclusive, and only a change past the interval "
            "would show): test_a_save_names_a_baseline_too_noisy_to_gate.py::"
            "test_mlp[[]cpu-default[]] (a run like the last: ±*% against 200%; its 4 runs "
            "spread *%, sampling ±*% a run: append runs recorded on a quiet machine "
            "(--tweak-save --tweak-append)). Or raise the threshold (--tweak-threshold)"
        ]
    )


def test_save_keeps_entries_of_cases_that_did_not_run(pytester: pytest.Pytester, run_suite) -> None:
    pytester.makepyfile(test_changing=CHANGING_SUITE)
    other = {"median_s": 0.5, "graph_breaks": 2, "recompiles": 1, "device": "cuda"}
    pytester.path.joinpath("tweak-baselines.json").write_text(
        json.dumps(
            {
                "format": "pytest-tweak-baselines",
                "version": 1,
                "cases": {"other.py::test_gpu[cuda-default]": other},
            }
        )
    )
    result = run_suite("--tweak-save", "-k", "control or speed")
    result.assert_outcomes(passed=2)
    result.stdout.fnmatch_lines(["*saved 2 case(s) to *(kept 1 other entry)"])
    cases = _baseline(pytester.path / "tweak-baselines.json")
    assert sorted(cases) == [
        "other.py::test_gpu[cuda-default]",
        "test_changing.py::test_control[cpu-default]",
        "test_changing.py::test_speed[cpu-default]",
    ]
    # the version-1 entry was carried over into the version-2 file
    assert cases["other.py::test_gpu[cuda-default]"]["runs"][0]["timing"]["median"] == 0.5
    assert cases["other.py::test_gpu[cuda-default]"]["graph_breaks"] == 2


def test_failing_test_is_not_saved_as_a_baseline(pytester: pytest.Pytester, run_suite) -> None:
    pytester.makepyfile("""
        import torch
        def test_fails_after_measuring(tweak):
            tweak.benchmark(torch.nn.Linear(8, 8), torch.randn(2, 8))
            assert False, "user assertion"
    """)
    result = run_suite("--tweak-save")
    result.assert_outcomes(failed=1)
    assert _baseline(pytester.path / "tweak-baselines.json") == {}


def test_a_broken_baseline_entry_fails_its_case_naming_the_repair_and_is_kept(
    pytester: pytest.Pytester, run_suite
) -> None:
    pytester.makepyfile(test_changing=CHANGING_SUITE)
    run_suite("--tweak-save", "-k", "control or speed").assert_outcomes(passed=2)
    path = pytester.path / "tweak-baselines.json"
    data = json.loads(path.read_text())
    broken = {"runs": "lost in a bad merge"}
    data["cases"]["test_changing.py::test_speed[cpu-default]"] = broken
    data["cases"]["test_changing.py::test_control[cpu-default]"]["graph_breaks"] = "0"
    data["cases"]["gone.py::test_old[cpu-default]"] = [1, 2]
    path.write_text(json.dumps(data))
    before = path.read_bytes()

    # -W error: the project's own setting; a broken entry is a failure, never INTERNALERROR
    pytester.makeini(WARNINGS_AS_ERRORS_INI)
    result = run_suite(
        "-k", "control or speed", "--tweak-threshold=200", "--tweak-json=report.json"
    )
    result.assert_outcomes(failed=2)
    assert result.ret == pytest.ExitCode.TESTS_FAILED
    result.stdout.fnmatch_lines(
        [
            "*pytest-tweak: test_changing.py::test_control[[]cpu-default[]] failed, whatever "
            "its speed:",
            f"  - its entry in baseline file {path} cannot be read, so the case has no gate: "
            "case *: 'graph_breaks' must be an integer >= 0, got '0'. The file is left as it "
            f"is. Repair the entry by hand (`python -m pytest_tweak show {path}` lists every "
            "unreadable entry)*record this case anew: `pytest "
            "'test_changing.py::test_control[[]cpu-default[]]' --tweak-save` (a --tweak-save "
            "run replaces the entry of every case it measures, so name the case)",
        ]
    )
    # the cases were measured all the same: their figures are in the summary and the report
    report = json.loads((pytester.path / "report.json").read_text())
    measured = {case["nodeid"]: case for case in report["cases"]}
    for name in ("test_control", "test_speed"):
        case = measured[f"test_changing.py::{name}[cpu-default]"]
        assert case["verdict"]["status"] == "failed"
        assert case["timing"]["median"] > 0
    result.stdout.fnmatch_lines(
        [
            "pytest-tweak: 3 unreadable entries in *tweak-baselines.json skipped: "
            "gone.py::test_old[[]cpu-default[]], test_changing.py::test_control[[]cpu-default[]], "
            "test_changing.py::test_speed[[]cpu-default[]]",
        ]
    )
    result.stdout.no_fnmatch_line("*not used at all*")
    assert "INTERNALERROR" not in result.stdout.str()
    assert path.read_bytes() == before
    # a save keeps the unreadable entries it does not record anew, and replaces the one it does
    run_suite("--tweak-save", "-k", "control").assert_outcomes(passed=1)
    cases = _baseline(path)
    assert cases["test_changing.py::test_speed[cpu-default]"] == broken
    assert cases["gone.py::test_old[cpu-default]"] == [1, 2]
    assert cases["test_changing.py::test_control[cpu-default]"]["graph_breaks"] == 0


def test_the_record_anew_command_runs_as_pasted_where_pytest_was_started(
    pytester: pytest.Pytester, run_suite, monkeypatch: pytest.MonkeyPatch
) -> None:
    # test ids are relative to the rootdir, pytest's arguments to where it runs: started in
    # tests/, the printed command used to say 'tests/test_x.py::...', which pytest did not
    # find there (found in the fifth user trial)
    pytester.makeini("[pytest]\n")
    tests = pytester.mkdir("tests")
    (tests / "test_x.py").write_text(
        "import torch\n\n"
        "def test_x(tweak):\n"
        "    tweak.benchmark(torch.nn.Linear(4, 4), torch.randn(2, 4))\n"
    )
    key = "tests/test_x.py::test_x[cpu-default]"
    path = pytester.path / "tweak-baselines.json"
    path.write_text(
        json.dumps(
            {"format": "pytest-tweak-baselines", "version": 2, "cases": {key: {"runs": "bad"}}}
        )
    )
    monkeypatch.chdir(tests)
    result = run_suite()
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(
        [
            "*record this case anew: `pytest '../tests/test_x.py::test_x[[]cpu-default[]]' "
            "--tweak-save`*"
        ]
    )
    # pasted as printed, from the same folder, it records the case
    run_suite("../tests/test_x.py::test_x[cpu-default]", "--tweak-save").assert_outcomes(passed=1)
    assert _baseline(path)[key]["runs"] != "bad"


def test_the_record_anew_command_names_the_baseline_file_given_on_the_command_line(
    pytester: pytest.Pytester, run_suite
) -> None:
    # without it, the pasted command wrote tweak-baselines.json in the rootdir and the gate,
    # reading perf/b.json, stayed red (thirteenth trial)
    pytester.makepyfile(
        test_x="import torch\n\n"
        "def test_x(tweak):\n"
        "    tweak.benchmark(torch.nn.Linear(4, 4), torch.randn(2, 4))\n"
    )
    key = "test_x.py::test_x[cpu-default]"
    path = pytester.mkdir("perf") / "b.json"
    path.write_text(
        json.dumps(
            {"format": "pytest-tweak-baselines", "version": 2, "cases": {key: {"runs": "bad"}}}
        )
    )
    result = run_suite("--tweak-baseline=perf/b.json")
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(
        [
            "*record this case anew: `pytest 'test_x.py::test_x[[]cpu-default[]]' "
            "--tweak-save --tweak-baseline=perf/b.json`*"
        ]
    )
    pasted = ("test_x.py::test_x[cpu-default]", "--tweak-save", "--tweak-baseline=perf/b.json")
    run_suite(*pasted).assert_outcomes(passed=1)
    assert _baseline(path)[key]["runs"] != "bad"
    assert not (pytester.path / "tweak-baselines.json").exists()


@pytest.mark.parametrize("save", [False, True])
def test_broken_baseline_stops_the_run_and_is_never_overwritten(
    pytester: pytest.Pytester, run_suite, save: bool
) -> None:
    pytester.makepyfile(test_tinynet=SPEC_SUITE)
    path = pytester.path / "perf" / "base.json"
    path.parent.mkdir()
    path.write_text('{"format": "pytest-tweak-baselines", "version": 1, "cases": {')
    result = run_suite("--tweak-baseline=perf/base.json", *(["--tweak-save"] if save else []))
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(
        [
            f"ERROR: pytest-tweak: baseline file {path}: is not valid JSON (line 1, column *"
            "Fix or remove the file (it is left as it is)."
        ]
    )
    assert path.read_text() == '{"format": "pytest-tweak-baselines", "version": 1, "cases": {'


def test_config_that_fails_to_compile_fails_only_its_test(
    pytester: pytest.Pytester, run_suite
) -> None:
    pytester.makepyfile("""
        import pytest, torch
        from pytest_tweak import TorchInductorBackendConfig as C

        class Printing(torch.nn.Module):
            def forward(self, x):
                print("", end="")
                return x + 1

        @pytest.mark.tweak_configs(C(), C(fullgraph=True))
        def test_model(tweak):
            tweak.benchmark(Printing(), torch.randn(4))

        def test_other(tweak):
            tweak.benchmark(torch.nn.Linear(4, 4), torch.randn(2, 4))
    """)
    # warnings as errors: the failed case must not add pytest-benchmark's "fixture was not
    # used at all" (an error at teardown); pytest_tweak.TweakWarning is importable by name
    pytester.makeini(WARNINGS_AS_ERRORS_INI)
    result = run_suite("-rf", "-W", "error::pytest_tweak.TweakWarning")
    result.assert_outcomes(passed=2, failed=1)
    result.stdout.no_fnmatch_line("*not used at all*")
    result.stdout.fnmatch_lines(["FAILED *test_model[[]cpu-fullgraph[]]*"])
    result.stdout.fnmatch_lines(["pytest-tweak: inductor-fullgraph on cpu: Unsupported: *"])
    result.stdout.fnmatch_lines(['*print("", end="")*'])
    assert "INTERNALERROR" not in result.stdout.str() + result.stderr.str()


def test_bad_marker_arguments_are_collection_errors(pytester: pytest.Pytester, run_suite) -> None:
    header = "import pytest\nfrom pytest_tweak import TorchInductorBackendConfig as C\n"
    pytester.makepyfile(
        test_dict=header + '@pytest.mark.tweak_configs({"mode": "default"})\n'
        "def test_dict(tweak): pass\n",
        test_kwargs=header + "@pytest.mark.tweak_configs(C(), configs=[C()])\n"
        "def test_kwargs(tweak): pass\n",
        test_duplicate=header + '@pytest.mark.tweak_configs(C(), C(mode="default"))\n'
        "def test_duplicate(tweak): pass\n",
        test_empty=header + "@pytest.mark.tweak_configs()\ndef test_empty(tweak): pass\n",
    )
    result = run_suite("--collect-only")
    assert result.ret == pytest.ExitCode.INTERRUPTED
    result.stdout.fnmatch_lines(["*4 errors*"])
    result.stdout.fnmatch_lines(
        [
            "*test_dict: tweak_configs takes TorchInductorBackendConfig objects or configs of "
            "other registered backends, got {'mode': 'default'} (dict); known backends and "
            "their config types: inductor (TorchInductorBackendConfig), eager*",
            "*test_duplicate: tweak_configs has two configs with the id 'default'*",
            "*test_empty: tweak_configs() needs at least one config",
            "*test_kwargs: tweak_configs takes configs as positional arguments, got keyword(s) "
            "configs",
        ]
    )


def test_stacked_markers_merge_limits_key_by_key_and_refuse_two_config_lists(
    pytester: pytest.Pytester, run_suite
) -> None:
    # only the closest tweak_limits was read, so a test adding a recompile limit dropped its
    # module's graph-break limit without a word; two tweak_configs (or tweak_backends) on one
    # test silently lost one (found in the sixth user trial)
    pytester.makepyfile(
        test_limits="""
        import pytest, torch

        pytestmark = pytest.mark.tweak_limits(graph_breaks=0)

        class Breaky(torch.nn.Module):
            def forward(self, x):
                x = x + 1
                torch._dynamo.graph_break()
                return x * 2

        @pytest.mark.tweak_limits(recompiles=0)
        def test_own_limit_keeps_the_modules(tweak):
            tweak.benchmark(Breaky(), torch.randn(4))

        @pytest.mark.tweak_limits(graph_breaks=1)
        def test_own_limit_overrides_the_same_key(tweak):
            tweak.benchmark(Breaky(), torch.randn(4))
        """
    )
    result = run_suite("test_limits.py")
    result.assert_outcomes(passed=1, failed=1)
    result.stdout.fnmatch_lines(
        [
            "pytest-tweak: test_limits.py::test_own_limit_keeps_the_modules[[]cpu-default[]] "
            "failed, whatever its speed:",
            "  - graph breaks 1 exceed the limit 0 (set by @pytest.mark.tweak_limits)",
        ]
    )
    result.stdout.fnmatch_lines(["FAILED test_limits.py::test_own_limit_keeps_the_modules*"])
    header = "import pytest\nfrom pytest_tweak import TorchInductorBackendConfig as C\n"
    pytester.makepyfile(
        test_configs=header + "@pytest.mark.tweak_configs(C(dynamic=False))\n"
        "@pytest.mark.tweak_configs(C(fullgraph=True))\ndef test_two(tweak): pass\n",
        test_backends=header + '@pytest.mark.tweak_backends("eager")\n'
        '@pytest.mark.tweak_backends("inductor")\ndef test_two(tweak): pass\n',
        test_module_and_own=header
        + "pytestmark = pytest.mark.tweak_configs(C(), C(dynamic=False))\n"
        "@pytest.mark.tweak_configs(C(fullgraph=True))\ndef test_own(tweak): pass\n",
    )
    result = run_suite(
        "--collect-only", "-q", "test_configs.py", "test_backends.py", "test_module_and_own.py"
    )
    result.stdout.fnmatch_lines(
        [
            "*test_configs.py::test_two: tweak_configs is given 2 times on "
            "test_configs.py::test_two; only one would be used*",
            "*test_backends.py::test_two: tweak_backends is given 2 times on "
            "test_backends.py::test_two; only one would be used: list them all in one, "
            "tweak_backends(a, b)",
        ]
    )
    # a test's own marker over its module's is the documented override, not an error
    result.stdout.fnmatch_lines(["test_module_and_own.py::test_own[[]cpu-fullgraph[]]"])
    result.stdout.no_fnmatch_line("*test_module_and_own.py::test_own*given*")


def test_invalid_config_in_a_suite_fails_collection_with_the_reason(
    pytester: pytest.Pytester, run_suite
) -> None:
    pytester.makepyfile(
        test_mode="""
        import pytest
        from pytest_tweak import TorchInductorBackendConfig as C

        @pytest.mark.tweak_configs(C(mode="max_autotune"))
        def test_x(tweak): pass
    """
    )
    result = run_suite("--collect-only")
    assert result.ret == pytest.ExitCode.INTERRUPTED
    result.stdout.fnmatch_lines(
        ["*ValueError: unknown mode 'max_autotune'; did you mean 'max-autotune'? torch * knows: *"]
    )


def test_counts_in_a_run_equal_explain(pytester: pytest.Pytester, run_suite) -> None:
    pytester.makepyfile("""
        import pytest, torch

        class Item(torch.nn.Module):
            def forward(self, x):
                return x * x.sum().item()

        class Branch(torch.nn.Module):
            def forward(self, x):
                if x.sum() > 0:
                    return x * 2
                return x - 1

        class Printing(torch.nn.Module):
            def forward(self, x):
                x = x + 1
                print("", end="")
                return x * 2

        @pytest.mark.parametrize("model_type", [Item, Branch, Printing])
        def test_counts(tweak, model_type):
            x = torch.ones(8)
            result = tweak.benchmark(model_type(), x)
            explained = torch._dynamo.explain(model_type())(x)
            assert result.graph_breaks == explained.graph_break_count == 1
            assert result.recompiles == 0
            assert len(result.break_reasons) == 1
    """)
    run_suite().assert_outcomes(passed=3)


def test_benchmark_json_holds_every_case_with_tweak_metrics(
    pytester: pytest.Pytester, run_suite
) -> None:
    pytester.makepyfile(test_tinynet=SPEC_SUITE)
    result = run_suite("--benchmark-json=bench.json")
    result.assert_outcomes(passed=3)
    data = json.loads((pytester.path / "bench.json").read_text())
    benchmarks = {b["name"]: b for b in data["benchmarks"]}
    assert sorted(benchmarks) == sorted(SPEC_IDS)
    info = benchmarks["test_tinynet_speed[cpu-default]"]["extra_info"]["tweak"]
    assert info["device"] == "cpu" and info["config"] == "default"
    assert (info["graph_breaks"], info["recompiles"], info["verdict"]["status"]) == (0, 0, "new")
    assert info["timing"]["n"] >= 5 and info["normalized"]["median"] > 0
    assert info["speedup"]["median"] > 0 and info["phases"]["measure_s"] > 0
    # the plugin's own time in tweak.benchmark(), outside compile, measurement and the move;
    # the first case of a run also pays for first-use imports
    assert info["phases"]["own_s"] >= 0 and info["phases"]["move_s"] >= 0
    # the accuracy check and the peak-memory calls run the model: timed apart from own_s
    assert info["phases"]["check_s"] > 0
    # how small it is, is measured in benchmarks/measurement.py (docs/measurement.md, "Cost"):
    # a bound here let a busy machine decide the test (3.8 s once, beside two test suites)
    later = benchmarks["test_tinynet_speed[cpu-autocast-bf16]"]["extra_info"]["tweak"]
    assert later["phases"]["own_s"] >= 0
    assert info["graph_count"] == 1 and info["compile_time_s"] > 0
    # the figures of the summary and the JSON report are here too; a cpu case has no device
    # time, so no host overhead, and its samples were steady or say why not
    assert info["device_time"] is None and info["host_overhead_s"] is None
    assert info["cudagraph_skips"] == [] and 0 <= info["host_weight"] <= 1
    assert info["unstable"] is None or isinstance(info["unstable"], str)
    stats = benchmarks["test_tinynet_speed[cpu-default]"]["stats"]
    assert stats["rounds"] >= 5 and stats["median"] > 0


def test_pytest_benchmarks_own_options_count_tweak_cases_as_benchmarks(
    pytester: pytest.Pytester, run_suite
) -> None:
    """``--benchmark-only`` runs the tweak cases beside the ``benchmark`` tests, and
    ``--benchmark-skip`` skips them before their body runs; pytest-benchmark records a case's
    id as its parameter, does not warn about a tweak test that only compiles, and a test that
    used ``benchmark`` itself is told so before anything compiles."""
    pytester.makepyfile(
        test_mix="""
        import pathlib, torch

        def test_micro(benchmark):
            benchmark(sum, range(10))

        def test_model(tweak):
            pathlib.Path("body-ran").touch()
            tweak.benchmark(torch.nn.Linear(4, 4), torch.randn(2, 4))

        def test_compiles_only(tweak):
            assert tweak.compile(torch.nn.Linear(4, 4))(torch.randn(2, 4)).shape == (2, 4)

        def test_plain():
            pass
    """
    )
    result = run_suite("--benchmark-only", "-k", "not compiles", "--benchmark-json=b.json")
    result.assert_outcomes(passed=2, skipped=1, deselected=1)
    params = {
        b["name"]: b["params"]
        for b in json.loads((pytester.path / "b.json").read_text())["benchmarks"]
    }
    assert params == {"test_micro": None, "test_model[cpu-default]": {"tweak": "cpu-default"}}
    (pytester.path / "body-ran").unlink()
    result = run_suite("--benchmark-skip", "-rs")
    result.assert_outcomes(passed=1, skipped=3)
    assert not (pytester.path / "body-ran").exists()
    result = run_suite("-k", "compiles")
    result.assert_outcomes(passed=1)
    assert "not used at all" not in result.stdout.str()
    # a save that measured nothing says so, and writes no file (eighth user trial)
    for args in (("--benchmark-skip",), ("-k", "compiles")):
        result = run_suite("--tweak-save", *args)
        result.stdout.fnmatch_lines(
            ["pytest-tweak: nothing saved to *tweak-baselines.json: no case was measured*"]
        )
        assert not (pytester.path / "tweak-baselines.json").exists()
    collect_only = run_suite("--tweak-save", "--co")  # nothing to say: --co measures nothing
    assert "nothing saved" not in collect_only.stdout.str()
    # a record job whose selection holds no tweak test at all (a wrong path, --lf) says so
    # too, instead of passing without a word (thirteenth trial)
    pytester.makepyfile(test_plain_only="def test_p():\n    pass\n")
    plain = run_suite("--tweak-save", "test_plain_only.py")
    plain.assert_outcomes(passed=1)
    plain.stdout.fnmatch_lines(["pytest-tweak: nothing saved to *: no case was measured*"])
    assert not (pytester.path / "tweak-baselines.json").exists()
    (pytester.path / "test_plain_only.py").unlink()
    pytester.makepyfile(
        test_mix="""
        import torch

        def test_both(benchmark, tweak):
            benchmark(sum, range(10))
            tweak.benchmark(torch.nn.Linear(4, 4), torch.randn(2, 4))
    """
    )
    result = run_suite()
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(
        [
            "pytest-tweak: this test already timed something with pytest-benchmark's "
            "`benchmark` fixture (benchmark(...)), and tweak.benchmark() times through that "
            "same fixture, which times once per test: time the model and the other code in "
            "separate tests"
        ]
    )
    pytester.makepyfile(
        test_mix="""
        import torch

        def test_both(benchmark, tweak):
            tweak.benchmark(torch.nn.Linear(4, 4), torch.randn(2, 4))
            benchmark(sum, range(10))
    """
    )
    result = run_suite()  # the other order: pytest-benchmark's error names tweak, not pedantic
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(["*Previously it was used in tweak.benchmark(...) mode*"])


def test_benchmark_disable_runs_each_case_once_and_skips_the_comparison(
    pytester: pytest.Pytester, run_suite
) -> None:
    pytester.makepyfile("""
        import torch

        class Counting(torch.nn.Module):
            def __init__(self):
                super().__init__()
                self.lin = torch.nn.Linear(4, 4)
                self.calls = 0

            def forward(self, x):
                return self.lin(x)

        def test_once(tweak):
            model = Counting()
            model.register_forward_pre_hook(lambda m, a: setattr(m, "calls", m.calls + 1))
            result = tweak.benchmark(model, torch.randn(2, 4))
            # the compiled call, then two eager calls for the accuracy check; no timing
            assert model.calls == 3
            assert result.accuracy.ok
            assert result.median_s is None and result.timing is None
            assert result.graph_breaks == 0 and result.compile_time_s > 0
    """)
    # a baseline this case could never meet: 1 ns
    pytester.path.joinpath("tweak-baselines.json").write_text(
        json.dumps(
            {
                "format": "pytest-tweak-baselines",
                "version": 1,
                "cases": {
                    "test_benchmark_disable_runs_each_case_once_and_skips_the_comparison.py::"
                    "test_once[cpu-default]": {"median_s": 1e-9, "graph_breaks": 0, "recompiles": 0}
                },
            }
        )
    )
    result = run_suite("--benchmark-disable")
    result.assert_outcomes(passed=1)
    result.stdout.fnmatch_lines(["*test_once*cpu*default*-*-*not compared"])


def test_ini_twins_set_device_threshold_baseline_and_save(
    pytester: pytest.Pytester, run_suite
) -> None:
    pytester.makeini("""
        [pytest]
        tweak_device = cpu
        tweak_threshold = 40%
        tweak_baseline = perf/baselines.json
        tweak_save = true
    """)
    pytester.makepyfile("""
        import torch
        def test_lin(tweak):
            tweak.benchmark(torch.nn.Linear(4, 4), torch.randn(2, 4))
    """)
    result = run_suite()
    result.assert_outcomes(passed=1)
    result.stdout.fnmatch_lines(
        ["tweak: devices=cpu, baseline=perf/baselines.json, save, threshold=cpu=40%, *"]
    )
    assert list(_baseline(pytester.path / "perf" / "baselines.json")) == [
        "test_ini_twins_set_device_threshold_baseline_and_save.py::test_lin[cpu-default]"
    ]


def test_fixture_attributes_and_compile(pytester: pytest.Pytester, run_suite) -> None:
    pytester.makepyfile("""
        import pytest, torch
        from pytest_tweak import TorchInductorBackend, TorchInductorBackendConfig as C

        @pytest.mark.tweak_configs(C(dynamic=False))
        def test_attrs(tweak):
            assert tweak.device == torch.device("cpu")
            assert tweak.config == C(dynamic=False)
            assert isinstance(tweak.backend, TorchInductorBackend)
            assert tweak.backend.config is tweak.config
            model = torch.nn.Linear(4, 4)
            x = torch.randn(2, 4)
            torch.testing.assert_close(tweak.compile(model)(x), model(x))
            result = tweak.benchmark(model, x)
            assert result.device == torch.device("cpu")
            assert result.timing.min <= result.median_s <= result.timing.max
            # a second call names the way to time one model on several inputs
            with pytest.raises(RuntimeError, match="once per test.*benchmark_inputs[(]model, "):
                tweak.benchmark(model, x)
    """)
    run_suite().assert_outcomes(passed=1)


def test_benchmark_save_stores_the_cases_in_pytest_benchmarks_storage(
    pytester: pytest.Pytester, run_suite
) -> None:
    pytester.makepyfile("""
        import torch
        def test_lin(tweak):
            tweak.benchmark(torch.nn.Linear(4, 4), torch.randn(2, 4))
    """)
    run_suite("--benchmark-save=first").assert_outcomes(passed=1)
    (saved,) = pytester.path.joinpath(".benchmarks").rglob("*_first.json")
    (bench,) = json.loads(saved.read_text())["benchmarks"]
    assert bench["name"] == "test_lin[cpu-default]"
    assert bench["extra_info"]["tweak"]["config"] == "default"


# One test gets a real slow-down (more layers) in the "pull request" run; the others do not.
SLOWING_SUITE = """
import os, torch

# one thread: on a 2-core runner a two-thread kernel slows unevenly whenever anything else runs
torch.set_num_threads(1)

def stack(depth):
    layers = []
    for _ in range(depth):
        layers += [torch.nn.Linear(64, 64), torch.nn.ReLU()]
    return torch.nn.Sequential(*layers).eval()

def test_steady_a(tweak):
    tweak.benchmark(stack(4), torch.randn(32, 64))

def test_steady_b(tweak):
    tweak.benchmark(stack(6), torch.randn(32, 64))

def test_slowed(tweak):
    slow = os.environ.get("TWEAK_SLOW") == "1"
    tweak.benchmark(stack(16 if slow else 4), torch.randn(32, 64))
"""


def test_a_real_injected_regression_fails_exactly_its_test_with_the_numbers(
    pytester: pytest.Pytester, run_suite, monkeypatch: pytest.MonkeyPatch
) -> None:
    pytester.makepyfile(test_slowing=SLOWING_SUITE)
    # measured six times longer than FAST_ARGS: this verdict must hold on a busy runner
    longer = ("--tweak-warmup=0.05", "--tweak-max-time=0.3")
    # a baseline from two runs, so the verdict sees the spread between runs
    run_suite(*longer, "--tweak-save").assert_outcomes(passed=3)
    appended = run_suite(*longer, "--tweak-save", "--tweak-append")
    appended.assert_outcomes(passed=3)
    cases = _baseline(pytester.path / "tweak-baselines.json")
    assert all(len(case["runs"]) == 2 for case in cases.values())
    monkeypatch.setenv("TWEAK_SLOW", "1")
    # generous noise and threshold (the pytester runs are short and the machine is shared)
    # against a fourfold stack of layers; compile time is not what this test is about
    result = run_suite(
        *longer, "--tweak-threshold=50", "--tweak-run-noise=5", "--tweak-compile-threshold=1000"
    )
    result.assert_outcomes(passed=2, failed=1)
    result.stdout.fnmatch_lines(["FAILED test_slowing.py::test_slowed[[]cpu-default[]]*"])
    result.stdout.fnmatch_lines(
        [
            "*normalized time: * vs baseline *: +*% slower (99% interval +*% .. +*%), "
            "threshold 50%, noise ±*% (2 baseline runs)",
            "*speed-up: *x vs baseline *x*",
        ]
    )
    result.stdout.fnmatch_lines(["*test_slowed*cpu*default*regressed"])
    for name in ("test_steady_a", "test_steady_b"):
        line = next(x for x in result.stdout.lines if x.startswith(f"test_slowing.py::{name} "))
        assert line.split()[-1] in ("unchanged", "inconclusive", "improved"), line


def test_inconclusive_is_reported_and_fails_only_with_the_option(
    pytester: pytest.Pytester, run_suite
) -> None:
    pytester.makepyfile("""
        import torch
        def test_lin(tweak):
            tweak.benchmark(torch.nn.Linear(16, 16), torch.randn(4, 16))
    """)
    run_suite("--tweak-save", "--tweak-eager=off").assert_outcomes(passed=1)
    # 40 % run-to-run noise cannot decide about a 5 % threshold
    noisy = ("--tweak-run-noise=40", "--tweak-threshold=5", "--tweak-eager=off")
    result = run_suite(*noisy)
    result.assert_outcomes(passed=1)
    result.stdout.fnmatch_lines(
        ["*test_lin*cpu*default*±*inconclusive", "1 case(s) inconclusive: the noise is larger*"]
    )
    strict = run_suite(*noisy, "--tweak-fail-inconclusive")
    strict.assert_outcomes(failed=1)
    strict.stdout.fnmatch_lines(
        [
            "pytest-tweak: *test_lin[[]cpu-default[]] is inconclusive against *:",
            "*normalized time: *noise ±*",
            "*the noise is larger than the threshold*",
        ]
    )


def test_fast_and_absolute_and_eager_off_are_honoured(pytester: pytest.Pytester) -> None:
    pytester.makepyfile("""
        import torch
        def test_lin(tweak):
            result = tweak.benchmark(torch.nn.Linear(16, 16), torch.randn(4, 16))
            assert result.eager is None and result.speedup is None
            assert result.normalized is None
            assert result.timing.n >= 5
    """)
    result = pytester.runpytest_subprocess(
        "--tweak-fast", "--tweak-metric=absolute", "-p", "no:cacheprovider"
    )
    result.assert_outcomes(passed=1)
    result.stdout.fnmatch_lines(
        ["tweak: *metric=absolute*max-time=0.3s, min-rounds=5, precision=3%, eager=off*"]
    )


def test_the_readme_quick_start_runs_as_written(pytester: pytest.Pytester, run_suite) -> None:
    readme = (Path(__file__).parent.parent / "README.md").read_text(encoding="utf-8")
    quick_start = readme.split("## Quick start", 1)[1]
    code = quick_start.split("```python\n", 1)[1].split("```", 1)[0]
    pytester.makepyfile(test_tinynet=code)
    result = run_suite("--tweak-device=cpu", "-k", "default")
    result.assert_outcomes(passed=1, deselected=2)
