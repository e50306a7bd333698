"""pytest-tweak's own hooks and the tweak_backends marker, driven the way users drive them:
a conftest.py implements the hook, a small suite runs in a fresh pytest process.

Most suites use the eager backend (nothing to compile) so that these runs stay quick; the
hooks do not care which backend a case has.
"""

from __future__ import annotations

import importlib.util
import json

import pytest

LINEAR = """
import pytest, torch

def linear():
    torch.manual_seed(0)
    return torch.nn.Linear(16, 4).eval()
"""


# -- pytest_tweak_add_backends -------------------------------------------------------------

SCALE_BACKEND = """
from dataclasses import dataclass
from pytest_tweak import BackendSpec

@dataclass(frozen=True)
class ScaleConfig:
    factor: int = 2

    def __post_init__(self):
        if self.factor < 1:
            raise ValueError(f"factor must be >= 1, got {self.factor}")

    @property
    def id(self):
        return "default" if self.factor == 2 else f"x{self.factor}"

    def describe(self):
        return {"factor": self.factor}

class ScaleBackend:
    def __init__(self, config):
        self.config = config
        self.name = f"scale-{config.id}"

    def compile(self, model, device=None):
        return lambda *args: model(*args) * self.config.factor

def pytest_tweak_add_backends(config):
    return {"scale": BackendSpec(ScaleConfig, ScaleBackend)}
"""


def test_add_backends_registers_a_backend_selected_by_name_and_by_config(
    pytester: pytest.Pytester, run_suite
) -> None:
    pytester.makeconftest(SCALE_BACKEND)
    pytester.makepyfile(
        test_scale=LINEAR
        + """
from conftest import ScaleConfig, ScaleBackend

@pytest.mark.tweak_backends("scale")
def test_by_name(tweak):
    model, x = linear(), torch.randn(8, 16)
    assert isinstance(tweak.backend, ScaleBackend) and tweak.config == ScaleConfig()
    out = tweak.benchmark(model, x).output
    torch.testing.assert_close(out, model(x) * 2)

@pytest.mark.tweak_configs(ScaleConfig(factor=3), ScaleConfig())
def test_by_config(tweak):
    model, x = linear(), torch.randn(8, 16)
    out = tweak.benchmark(model, x).output
    torch.testing.assert_close(out, model(x) * tweak.config.factor)
"""
    )
    result = run_suite("-v")
    result.assert_outcomes(passed=3)
    result.stdout.fnmatch_lines(
        [
            "*test_by_name[[]cpu-scale[]] PASSED*",
            "*test_by_config[[]cpu-scale-x3[]] PASSED*",
            "*test_by_config[[]cpu-scale[]] PASSED*",
            "*- tweak summary -*",
            "test*device*backend*config*",
            "*test_by_name*cpu*scale*default*new",
            "*test_by_config*cpu*scale*x3*new",
        ]
    )


def test_a_backends_slips_are_named_as_the_backends(pytester: pytest.Pytester, run_suite) -> None:
    """A config type without defaults gave a bare TypeError, and compile() returning None
    "'NoneType' object is not callable" (ninth user trial)."""
    pytester.makeconftest(
        SCALE_BACKEND
        + """
@dataclass(frozen=True)
class NeedsConfig:
    level: int

    @property
    def id(self):
        return f"l{self.level}"

    def describe(self):
        return {"level": self.level}

class NoneBackend(ScaleBackend):
    def compile(self, model, device=None):
        return None

def pytest_tweak_add_backends(config):
    return {
        "scale": BackendSpec(ScaleConfig, NoneBackend),
        "needs": BackendSpec(NeedsConfig, ScaleBackend),
    }
"""
    )
    pytester.makepyfile(
        test_slips="""
        import pytest, torch

        @pytest.mark.tweak_backends("scale")
        def test_none(tweak):
            tweak.benchmark(torch.nn.Linear(4, 4), torch.randn(2, 4))
        """,
        test_needs="""
        import pytest

        @pytest.mark.tweak_backends("needs")
        def test_needs(tweak): pass
        """,
    )
    result = run_suite("test_slips.py")
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(
        [
            "*TypeError: NoneBackend.compile() returned None, which cannot be called: it must "
            "return the compiled model (a callable)"
        ]
    )
    result = run_suite("test_needs.py")
    result.stdout.fnmatch_lines(
        [
            "*test_needs.py::test_needs: backend 'needs' has no default config: NeedsConfig() "
            "failed (*); its plugin must give every field of the config type a default*"
        ]
    )


def test_a_backend_of_a_subfolders_conftest_is_known_whatever_is_collected_first(
    pytester: pytest.Pytester, run_suite
) -> None:
    """The backends were gathered once, at the first tweak test collected: a conftest further
    down had not loaded yet, so its backend was unknown, depending on collection order
    (ninth user trial). A conftest's backend is its folder's, as any conftest hook."""
    pytester.mkpydir("a_first").joinpath("test_a.py").write_text(
        "import torch\n\ndef test_a(tweak):\n"
        "    tweak.benchmark(torch.nn.Linear(4, 4), torch.randn(2, 4))\n"
    )
    second = pytester.mkpydir("b_second")
    second.joinpath("conftest.py").write_text(SCALE_BACKEND)
    second.joinpath("test_b.py").write_text(
        "import pytest, torch\n\n@pytest.mark.tweak_backends('scale')\ndef test_b(tweak):\n"
        "    tweak.benchmark(torch.nn.Linear(4, 4), torch.randn(2, 4))\n"
    )
    result = run_suite("-v")
    result.assert_outcomes(passed=2)
    result.stdout.fnmatch_lines(["*a_first/test_a.py::test_a[[]cpu-default[]] PASSED*"])
    result.stdout.fnmatch_lines(["*b_second/test_b.py::test_b[[]cpu-scale[]] PASSED*"])
    # outside its folder the backend is unknown, as the conftest's other hooks are, though
    # collected after the conftest was loaded
    pytester.mkpydir("z_third").joinpath("test_z.py").write_text(
        "import pytest\n\n@pytest.mark.tweak_backends('scale')\ndef test_z(tweak): pass\n"
    )
    elsewhere = run_suite("--co", "-q")
    elsewhere.stdout.fnmatch_lines(
        ["*z_third/test_z.py::test_z: tweak_backends got unknown backend 'scale'*"]
    )
    elsewhere.stdout.fnmatch_lines(["b_second/test_b.py::test_b[[]cpu-scale[]]"])


@pytest.mark.parametrize(
    ("body", "message"),
    [
        (
            'def pytest_tweak_add_backends(config):\n    return ["scale"]\n',
            "*pytest_tweak_add_backends: expected a dict of backend names to BackendSpec, "
            "got [[]'scale'[]] (list) (implemented by: *conftest.py)",
        ),
        (
            'def pytest_tweak_add_backends(config):\n    return {"scale": ScaleBackend}\n',
            "*pytest_tweak_add_backends: backend 'scale': expected a BackendSpec, got "
            "<class 'conftest.ScaleBackend'> (type) (implemented by: *conftest.py)",
        ),
        (
            "def pytest_tweak_add_backends(config):\n"
            '    return {"eager": BackendSpec(ScaleConfig, ScaleBackend)}\n',
            "*pytest_tweak_add_backends: backend 'eager' is registered twice: by "
            "pytest_tweak.backends.EagerBackend and by conftest.ScaleBackend*",
        ),
        (
            "def pytest_tweak_add_backends(config):\n"
            '    return {"My Backend": BackendSpec(ScaleConfig, ScaleBackend)}\n',
            "*backend name 'My Backend' is not a lower-case identifier*",
        ),
    ],
    ids=["not-a-dict", "not-a-spec", "name-taken", "bad-name"],
)
def test_a_bad_add_backends_result_is_a_collection_error_naming_the_plugin(
    pytester: pytest.Pytester, run_suite, body: str, message: str
) -> None:
    pytester.makeconftest(SCALE_BACKEND.split("def pytest_tweak_add_backends")[0] + body)
    pytester.makepyfile(test_x="def test_x(tweak): pass\ndef test_plain(): pass\n")
    result = run_suite("--collect-only")
    assert result.ret == pytest.ExitCode.INTERRUPTED
    result.stdout.fnmatch_lines(["*ERROR collecting test_x.py*", message])
    # reported once, without the exception chain behind it
    assert "During handling" not in result.stdout.str()


def test_backend_with_a_missing_package_skips_its_cases_with_the_reason(
    pytester: pytest.Pytester, run_suite
) -> None:
    pytester.makeconftest(
        SCALE_BACKEND.split("def pytest_tweak_add_backends")[0]
        + "def pytest_tweak_add_backends(config):\n"
        '    return {"ghost": BackendSpec(ScaleConfig, ScaleBackend,\n'
        '            requires=("no_such_module_tweak",), install="ghost-runtime"),\n'
        '            "gpu_only": BackendSpec(type("GpuConfig", (ScaleConfig,), {}),\n'
        '            ScaleBackend, devices=("cuda",))}\n'
    )
    pytester.makepyfile(
        test_x="""
        import pytest
        @pytest.mark.tweak_backends("ghost", "gpu_only", "eager")
        def test_x(tweak): pass
        """
    )
    result = run_suite("-rs")
    result.assert_outcomes(passed=1, skipped=2)
    result.stdout.fnmatch_lines(
        [
            "*backend ghost: no_such_module_tweak is not installed (pip install ghost-runtime)",
            "*backend gpu_only runs on cuda, not cpu",
        ]
    )


def test_a_factory_that_returns_no_backend_fails_the_test(
    pytester: pytest.Pytester, run_suite
) -> None:
    pytester.makeconftest(
        SCALE_BACKEND.split("def pytest_tweak_add_backends")[0]
        + "def pytest_tweak_add_backends(config):\n"
        '    return {"broken": BackendSpec(ScaleConfig, lambda config: "nope")}\n'
    )
    pytester.makepyfile(
        test_x='import pytest\n@pytest.mark.tweak_backends("broken")\ndef test_x(tweak): pass\n'
    )
    result = run_suite()
    result.assert_outcomes(errors=1)
    result.stdout.fnmatch_lines(
        ["*the factory of backend 'broken' (<function*>) returned 'nope', which has no `name`*"]
    )


# -- the tweak_backends marker -------------------------------------------------------------


def test_tweak_backends_parametrizes_over_backends_with_their_configs(
    pytester: pytest.Pytester, run_suite
) -> None:
    pytester.makepyfile(
        test_ids="""
        import pytest
        from pytest_tweak import AotEagerBackendConfig, TorchInductorBackendConfig as C

        @pytest.mark.tweak_backends("inductor", "eager", "aot_eager")
        def test_defaults(tweak): pass

        @pytest.mark.tweak_backends("inductor", "aot_eager")
        @pytest.mark.tweak_configs(C(dynamic=False), C(), AotEagerBackendConfig(fullgraph=True))
        def test_with_configs(tweak): pass

        @pytest.mark.tweak_configs(C(mode="default"), AotEagerBackendConfig())
        def test_mixed_configs(tweak): pass
        """
    )
    result = run_suite("--collect-only", "-q")
    result.stdout.fnmatch_lines(
        [
            "test_ids.py::test_defaults[[]cpu-default[]]",
            "test_ids.py::test_defaults[[]cpu-eager[]]",
            "test_ids.py::test_defaults[[]cpu-aot_eager[]]",
            "test_ids.py::test_with_configs[[]cpu-static[]]",
            "test_ids.py::test_with_configs[[]cpu-default[]]",
            "test_ids.py::test_with_configs[[]cpu-aot_eager-fullgraph[]]",
            "test_ids.py::test_mixed_configs[[]cpu-default[]]",
            "test_ids.py::test_mixed_configs[[]cpu-aot_eager[]]",
            "8 tests collected*",
        ]
    )


def test_bad_tweak_backends_arguments_are_collection_errors(
    pytester: pytest.Pytester, run_suite
) -> None:
    header = "import pytest\nfrom pytest_tweak import AotEagerBackendConfig as A\n"
    pytester.makepyfile(
        test_unknown=header + '@pytest.mark.tweak_backends("inductor", "tensorrt")\n'
        "def test_unknown(tweak): pass\n",
        test_stray=header + '@pytest.mark.tweak_backends("eager")\n'
        "@pytest.mark.tweak_configs(A())\ndef test_stray(tweak): pass\n",
        test_string=header + '@pytest.mark.tweak_configs("aot_eager")\n'
        "def test_string(tweak): pass\n",
        test_empty=header + "@pytest.mark.tweak_backends()\ndef test_empty(tweak): pass\n",
        test_kwargs=header + '@pytest.mark.tweak_backends(names=["eager"])\n'
        "def test_kwargs(tweak): pass\n",
    )
    result = run_suite("--collect-only")
    assert result.ret == pytest.ExitCode.INTERRUPTED
    result.stdout.fnmatch_lines(["*5 errors*"])
    result.stdout.fnmatch_lines(
        [
            "*test_empty: tweak_backends() needs at least one backend name",
            "*test_kwargs: tweak_backends takes backend names as positional arguments, "
            "got keyword(s) names",
            "*test_stray: tweak_configs has AotEagerBackendConfig(fullgraph=False, "
            "dynamic=None) (backend aot_eager), but tweak_backends does not name 'aot_eager' "
            "(it names eager)",
            "*test_string: tweak_configs takes TorchInductorBackendConfig objects or configs of "
            "other registered backends, got 'aot_eager' (str); known backends and their config "
            "types: inductor (TorchInductorBackendConfig), eager (EagerBackendConfig), "
            "aot_eager (AotEagerBackendConfig), torchao (TorchAOBackendConfig), openvino "
            "(OpenVINOBackendConfig); to select backends by name, use "
            "@pytest.mark.tweak_backends",
            "*test_unknown: tweak_backends got unknown backend 'tensorrt'; known: inductor, "
            "eager, aot_eager, torchao, openvino",
        ]
    )


def test_marker_typos_are_collection_errors_that_name_what_was_meant(
    pytester: pytest.Pytester, run_suite
) -> None:
    header = "import pytest\nfrom pytest_tweak import TorchInductorBackendConfig as C\n"
    pytester.makepyfile(
        test_name=header + "@pytest.mark.tweak_config(C())\ndef test_name(tweak): pass\n",
        test_list=header + "@pytest.mark.tweak_configs([C(), C(mode='max-autotune')])\n"
        "def test_list(tweak): pass\n",
        test_backend=header + '@pytest.mark.tweak_backends("indcutor")\n'
        "def test_backend(tweak): pass\n",
        test_own=header + "@pytest.mark.tweak_config_of_mine\ndef test_own(): pass\n",
    )
    # a marker of the suite's own, registered, is the suite's whatever its name
    pytester.makeini("[pytest]\nmarkers =\n    tweak_config_of_mine: the suite's own\n")
    result = run_suite("--collect-only")
    assert result.ret == pytest.ExitCode.INTERRUPTED
    result.stdout.fnmatch_lines(["*3 errors*"])
    result.stdout.fnmatch_lines(
        [
            "*test_backend: tweak_backends got unknown backend 'indcutor'; did you mean "
            "'inductor'? known: inductor, *",
            "*test_list: tweak_configs takes * got [[]TorchInductorBackendConfig(*)[]] (list); "
            "*; pass the configs themselves, not a list of them: "
            "@pytest.mark.tweak_configs(*CONFIGS)",
            "*test_name: unknown marker tweak_config: did you mean tweak_configs? "
            "pytest-tweak's markers are tweak_configs, tweak_backends, tweak_limits",
        ]
    )
    assert "test_own" not in result.stdout.str().split("short test summary")[-1]


def test_tweak_backends_marker_is_documented(pytester: pytest.Pytester) -> None:
    result = pytester.runpytest_subprocess("--markers")
    result.stdout.fnmatch_lines(["@pytest.mark.tweak_backends(*names): run the test's*"])


def test_aot_eager_and_eager_cases_run_with_inductor_in_one_summary(
    pytester: pytest.Pytester, run_suite
) -> None:
    pytester.makepyfile(
        test_three=LINEAR
        + """
@pytest.mark.tweak_backends("inductor", "aot_eager", "eager")
def test_three(tweak):
    model, x = linear(), torch.randn(8, 16)
    with torch.no_grad():
        result = tweak.benchmark(model, x)
    assert result.graph_count == (0 if tweak.backend_name == "eager" else 1)
    torch.testing.assert_close(result.output, model(x))
"""
    )
    result = run_suite("-v")
    result.assert_outcomes(passed=3)
    result.stdout.fnmatch_lines(
        [
            "*test_three*cpu*inductor*default*x*new",
            "*test_three*cpu*aot_eager*default*x*new",
            "*test_three*cpu*eager*default*-*new",
        ]
    )


@pytest.mark.parametrize(
    ("package", "config", "case_id"),
    [
        ("torchao", "TorchAOBackendConfig()", "torchao-int8wo"),
        (
            "torchao",
            'TorchAOBackendConfig("int8_dynamic_activation_int8_weight")',
            "torchao-int8dq",
        ),
        ("openvino", "OpenVINOBackendConfig()", "openvino"),
    ],
)
def test_optional_backends_run_where_their_package_is_installed(
    pytester: pytest.Pytester, run_suite, package: str, config: str, case_id: str
) -> None:
    # find_spec, not importorskip: pytester drops modules imported during a test, and
    # compiled extensions cannot be imported twice
    if importlib.util.find_spec(package) is None:
        pytest.skip(f"{package} is not installed")
    pytester.makepyfile(
        test_optional=LINEAR
        + f"""
from pytest_tweak import OpenVINOBackendConfig, TorchAOBackendConfig

@pytest.mark.tweak_configs({config})
def test_optional(tweak):
    model, x = linear(), torch.randn(8, 16)
    with torch.no_grad():
        result = tweak.benchmark(model, x)
        torch.testing.assert_close(result.output, model(x), atol=0.05, rtol=0.05)
    assert result.graph_breaks == 0 and result.speedup is not None
"""
    )
    result = run_suite("-v")
    result.assert_outcomes(passed=1)
    result.stdout.fnmatch_lines(
        [f"*test_optional[[]cpu-{case_id}[]] PASSED*", f"*test_optional*cpu*{package}*new"]
    )


# -- pytest_tweak_collect_configs ----------------------------------------------------------


def test_collect_configs_adds_a_config_to_every_test(pytester: pytest.Pytester, run_suite) -> None:
    pytester.makeconftest(
        """
        from pytest_tweak import EagerBackendConfig, TorchInductorBackendConfig

        def pytest_tweak_collect_configs(metafunc, configs):
            if metafunc.function.__name__ == "test_plain":
                assert configs == [TorchInductorBackendConfig()]
            if metafunc.definition.get_closest_marker("no_eager") is None:
                configs.append(EagerBackendConfig())
            configs[:] = [c for c in configs if getattr(c, "dynamic", None) is not False]

        def pytest_configure(config):
            config.addinivalue_line("markers", "no_eager: only compiled")
        """
    )
    pytester.makepyfile(
        test_x="""
        import pytest
        from pytest_tweak import TorchInductorBackendConfig as C

        def test_plain(tweak): pass

        @pytest.mark.no_eager
        @pytest.mark.tweak_configs(C(mode="max-autotune-no-cudagraphs"), C(dynamic=False))
        def test_marked(tweak): pass
        """
    )
    result = run_suite("--collect-only", "-q")
    result.stdout.fnmatch_lines(
        [
            "test_x.py::test_plain[[]cpu-default[]]",
            "test_x.py::test_plain[[]cpu-eager[]]",
            "test_x.py::test_marked[[]cpu-max-autotune-no-cudagraphs[]]",
            "3 tests collected*",
        ]
    )


@pytest.mark.parametrize(
    ("body", "message"),
    [
        (
            '    configs.append("fast")\n',
            "*test_x.py::test_x: pytest_tweak_collect_configs (implemented by: *conftest.py) "
            "takes TorchInductorBackendConfig objects or configs of other registered backends, "
            "got 'fast' (str)*",
        ),
        (
            "    return configs + [EagerBackendConfig()]\n",
            "*test_x.py::test_x: pytest_tweak_collect_configs returned [[]*]; change the "
            "configs list in place and return None (implemented by: *conftest.py)",
        ),
        (
            "    configs.clear()\n",
            "*test_x.py::test_x: pytest_tweak_collect_configs (implemented by: *conftest.py) "
            "left no config to run",
        ),
        (
            "    configs.append(TorchInductorBackendConfig(mode='default'))\n",
            "*pytest_tweak_collect_configs (implemented by: *conftest.py) has two configs "
            "with the id 'default' (backend inductor)*",
        ),
    ],
    ids=["not-a-config", "returned", "emptied", "duplicate"],
)
def test_a_bad_collect_configs_result_is_a_collection_error_naming_the_plugin(
    pytester: pytest.Pytester, run_suite, body: str, message: str
) -> None:
    pytester.makeconftest(
        "from pytest_tweak import EagerBackendConfig, TorchInductorBackendConfig\n"
        "def pytest_tweak_collect_configs(metafunc, configs):\n" + body
    )
    pytester.makepyfile(test_x="def test_x(tweak): pass\n")
    result = run_suite("--collect-only")
    assert result.ret == pytest.ExitCode.INTERRUPTED
    result.stdout.fnmatch_lines(["*1 error*", message])


# -- pytest_tweak_verdict ------------------------------------------------------------------

VERDICT_SUITE = (
    LINEAR
    + """
@pytest.mark.tweak_backends("eager")
def test_ruled(tweak):
    tweak.benchmark(linear(), torch.randn(8, 16))

@pytest.mark.tweak_backends("eager")
def test_left_to_pytest_tweak(tweak):
    tweak.benchmark(linear(), torch.randn(8, 16))
"""
)


def test_verdict_hook_replaces_the_verdict_and_none_falls_back(
    pytester: pytest.Pytester, run_suite
) -> None:
    pytester.makeconftest(
        """
        from pytest_tweak import BenchmarkResult, Judging, RunRecord, Status, Verdict

        def pytest_tweak_verdict(item, baseline, run, result, judging):
            assert isinstance(run, RunRecord) and isinstance(result, BenchmarkResult)
            assert isinstance(judging, Judging) and baseline is None
            if item.name.startswith("test_ruled"):
                return Verdict(Status.REGRESSED, problems=(f"team rule: {run.timing.n} samples",))
            return None
        """
    )
    pytester.makepyfile(test_v=VERDICT_SUITE)
    result = run_suite("-v")
    result.assert_outcomes(passed=1, failed=1)
    result.stdout.fnmatch_lines(
        [
            "*test_ruled[[]cpu-eager[]] FAILED*",
            "*test_left_to_pytest_tweak[[]cpu-eager[]] PASSED*",
            "*pytest-tweak: test_v.py::test_ruled[[]cpu-eager[]] regressed against *:",
            "*  - team rule: * samples",
            "*test_ruled*cpu*eager*default*regressed",
            "*test_left_to_pytest_tweak*cpu*eager*default*new",
        ]
    )


def test_verdict_hook_is_not_asked_when_saving(pytester: pytest.Pytester, run_suite) -> None:
    pytester.makeconftest(
        "def pytest_tweak_verdict(item, baseline, run, result, judging):\n"
        "    raise AssertionError('asked')\n"
    )
    pytester.makepyfile(test_v=VERDICT_SUITE)
    run_suite("--tweak-save").assert_outcomes(passed=2)


def test_a_verdict_hook_returning_no_verdict_fails_the_test_naming_the_plugin(
    pytester: pytest.Pytester, run_suite
) -> None:
    pytester.makeconftest(
        "def pytest_tweak_verdict(item, baseline, run, result, judging):\n    return 'regressed'\n"
    )
    pytester.makepyfile(test_v=VERDICT_SUITE)
    result = run_suite("--tweak-json=r.json")
    result.assert_outcomes(failed=2)
    result.stdout.fnmatch_lines(
        [
            "*pytest_tweak_verdict returned 'regressed' (str); it must return a "
            "pytest_tweak.Verdict or None (implemented by: *conftest.py)"
        ]
    )
    # the failed cases stay in the reports, with their figures (ninth user trial: they
    # were left out of every report, so a dashboard saw no failure in a red run)
    report = json.loads((pytester.path / "r.json").read_text())
    assert report["summary"]["cases"] == 2 and report["summary"]["failed"] == 2
    assert all(case["timing"] is not None for case in report["cases"])
    pytester.makeconftest(
        "def pytest_tweak_verdict(item, baseline, run, result, judging):\n    return 1 / 0\n"
    )
    result = run_suite()
    result.assert_outcomes(failed=2)
    result.stdout.fnmatch_lines(
        [
            "*pytest_tweak_verdict raised ZeroDivisionError: division by zero "
            "(*conftest.py:2) (implemented by: *conftest.py)"
        ]
    )


# -- pytest_tweak_case_result --------------------------------------------------------------


def test_case_result_observes_each_case_once_after_its_verdict(
    pytester: pytest.Pytester, run_suite
) -> None:
    pytester.makeconftest(
        """
        import json
        from pytest_tweak import CaseRecord, Status, Verdict

        def pytest_tweak_verdict(item, baseline, run, result, judging):
            if item.name.startswith("test_ruled"):
                return Verdict(Status.REGRESSED, problems=("ruled",))

        def pytest_tweak_case_result(item, record):
            assert isinstance(record, CaseRecord) and record.nodeid == item.nodeid
            with open("observed.jsonl", "a") as out:
                out.write(json.dumps({
                    "test": item.name, "backend": record.backend, "config": record.config_id,
                    "status": str(record.verdict.status), "median_s": record.result.median_s,
                    "torch": record.fingerprint["torch"],
                }) + "\\n")
        """
    )
    pytester.makepyfile(test_v=VERDICT_SUITE)
    result = run_suite()
    result.assert_outcomes(passed=1, failed=1)
    lines = (pytester.path / "observed.jsonl").read_text().splitlines()
    observed = sorted((json.loads(line) for line in lines), key=lambda o: o["test"])
    assert [(o["test"], o["backend"], o["config"], o["status"]) for o in observed] == [
        ("test_left_to_pytest_tweak[cpu-eager]", "eager", "default", "new"),
        ("test_ruled[cpu-eager]", "eager", "default", "regressed"),
    ]
    assert all(o["median_s"] > 0 and o["torch"] for o in observed)


def test_an_observer_that_raises_fails_the_test_with_its_error(
    pytester: pytest.Pytester, run_suite
) -> None:
    pytester.makeconftest(
        "def pytest_tweak_case_result(item, record):\n"
        "    raise ConnectionError('metrics store unreachable')\n"
    )
    pytester.makepyfile(test_v=VERDICT_SUITE)
    result = run_suite()
    result.assert_outcomes(failed=2)
    result.stdout.fnmatch_lines(["*conftest.py:2: ConnectionError*"])


# -- pytest_tweak_fingerprint --------------------------------------------------------------

FINGERPRINT_CONFTEST = """
import os

def pytest_tweak_fingerprint(config, fingerprint):
    fingerprint["runner"] = os.environ["RUNNER"]
    del fingerprint["platform"]
"""


def test_fingerprint_fields_are_saved_shown_and_compared(
    pytester: pytest.Pytester, run_suite, monkeypatch: pytest.MonkeyPatch
) -> None:
    pytester.makeconftest(FINGERPRINT_CONFTEST)
    pytester.makepyfile(test_v=VERDICT_SUITE)
    monkeypatch.setenv("RUNNER", "ci-old")
    saved = run_suite("--tweak-save", "--benchmark-json=bench.json")
    saved.assert_outcomes(passed=2)
    saved.stdout.fnmatch_lines(["fingerprint: python=*, torch=*, cpu=*, runner=ci-old"])
    path = pytester.path / "tweak-baselines.json"
    data = json.loads(path.read_text())
    for entry in data["cases"].values():
        assert entry["fingerprint"]["runner"] == "ci-old"
        assert "platform" not in entry["fingerprint"] and entry["backend"] == "eager"
        # a baseline far faster than anything real: the next run regresses
        for run in entry["runs"]:
            run["timing"].update(median=1e-9, q1=1e-9, q3=1e-9, min=1e-9, max=1e-9)
    path.write_text(json.dumps(data))
    bench = json.loads((pytester.path / "bench.json").read_text())
    assert {b["extra_info"]["tweak"]["fingerprint"]["runner"] for b in bench["benchmarks"]} == {
        "ci-old"
    }

    monkeypatch.setenv("RUNNER", "ci-new")
    result = run_suite("--tweak-metric=absolute")
    result.assert_outcomes(failed=2)
    result.stdout.fnmatch_lines(
        [
            "*regressed against*",
            "*the baseline was recorded in another environment: runner: 'ci-old' -> 'ci-new'",
        ]
    )


@pytest.mark.parametrize(
    ("body", "message"),
    [
        (
            "    fingerprint['when'] = object()\n",
            "ERROR: pytest-tweak: pytest_tweak_fingerprint: fingerprint field 'when' = <object "
            "object at *> is not JSON data (*) (implemented by: *conftest.py)",
        ),
        (
            "    return {'runner': 'x'}\n",
            "ERROR: pytest-tweak: pytest_tweak_fingerprint: returned {'runner': 'x'}; change the "
            "fingerprint dict in place and return None (implemented by: *conftest.py)",
        ),
        (
            "    raise RuntimeError('boom')\n",
            "ERROR: pytest-tweak: pytest_tweak_fingerprint: raised RuntimeError: boom "
            "(implemented by: *conftest.py)",
        ),
    ],
    ids=["not-json", "returned", "raises"],
)
def test_a_bad_fingerprint_is_a_usage_error_naming_the_plugin(
    pytester: pytest.Pytester, run_suite, body: str, message: str
) -> None:
    pytester.makeconftest("def pytest_tweak_fingerprint(config, fingerprint):\n" + body)
    pytester.makepyfile(test_v=VERDICT_SUITE)
    result = run_suite()
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines([message])


def test_a_tuple_in_the_fingerprint_matches_the_list_its_baseline_stored(
    pytester: pytest.Pytester, run_suite
) -> None:
    """A tuple is JSON data, stored as a list, so it never equalled its own baseline's and
    every case read "recorded in another environment" (ninth user trial)."""
    pytester.makeconftest(
        "def pytest_tweak_fingerprint(config, fingerprint):\n    fingerprint['tags'] = ('a', 'b')\n"
    )
    pytester.makepyfile(test_v=VERDICT_SUITE)
    run_suite("--tweak-save").assert_outcomes(passed=2)
    result = run_suite("--tweak-fingerprint-policy=fail", "--tweak-threshold=200")
    result.assert_outcomes(passed=2)
    assert "another environment" not in result.stdout.str()


def test_fingerprint_hook_is_not_called_without_tweak_tests(
    pytester: pytest.Pytester, run_suite
) -> None:
    pytester.makeconftest(
        "def pytest_tweak_fingerprint(config, fingerprint):\n    raise AssertionError\n"
    )
    pytester.makepyfile(test_plain="def test_plain(): pass\n")
    run_suite().assert_outcomes(passed=1)


def test_every_hookspec_is_documented_with_an_example() -> None:
    from pytest_tweak import hookspec

    specs = [name for name in vars(hookspec) if name.startswith("pytest_tweak_")]
    assert sorted(specs) == [
        "pytest_tweak_add_backends",
        "pytest_tweak_case_result",
        "pytest_tweak_collect_configs",
        "pytest_tweak_fingerprint",
        "pytest_tweak_verdict",
    ]
    for name in specs:
        assert "Example" in (getattr(hookspec, name).__doc__ or ""), name
