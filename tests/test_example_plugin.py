"""The example third-party plugin (examples/plugin_example), installed as users install it.

pip installs the package (no dependencies: pytest-tweak and torch are already here) into a
folder of its own; with that folder on PYTHONPATH, pytest finds the plugin through the
``pytest11`` entry point in its dist-info, as it would in a virtual environment, and the
shared environment is left alone.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

EXAMPLE = Path(__file__).parent.parent / "examples" / "plugin_example"


@pytest.fixture(scope="module")
def site_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    # build from a copy: setuptools writes build/ and *.egg-info next to the sources
    source = tmp_path_factory.mktemp("src") / "plugin_example"
    shutil.copytree(EXAMPLE, source)
    target = tmp_path_factory.mktemp("site")
    subprocess.run(
        [
            sys.executable,
            "-m",
            "pip",
            "install",
            "--quiet",
            "--no-deps",
            "--no-build-isolation",
            "--no-index",
            "--disable-pip-version-check",
            "--target",
            str(target),
            str(source),
        ],
        check=True,
    )
    assert list(target.glob("pytest_tweak_jsonl_example-*.dist-info"))
    return target


SUITE = """
import pytest, torch
from tweak_jsonl_example import InferenceModeConfig

@pytest.mark.tweak_backends("inference_mode")
@pytest.mark.tweak_configs(InferenceModeConfig(), InferenceModeConfig(compile_backend="aot_eager"))
def test_linear(tweak):
    assert tweak.backend_name == "inference_mode"
    result = tweak.benchmark(torch.nn.Linear(16, 4).eval(), torch.randn(8, 16))
    assert result.backend == f"inference_mode-{tweak.config.id}"
    assert result.output.is_inference()
"""


def test_installed_example_plugin_adds_a_backend_and_logs_each_case(
    pytester: pytest.Pytester, run_suite, site_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("PYTHONPATH", str(site_dir))
    pytester.makepyfile(test_plugin_suite=SUITE)
    # no -p: the option exists only when the entry point was found
    result = run_suite("-v", "--tweak-jsonl=cases.jsonl")
    result.assert_outcomes(passed=2)
    result.stdout.fnmatch_lines(
        [
            "*test_linear[[]cpu-inference_mode[]] PASSED*",
            "*test_linear[[]cpu-inference_mode-aot_eager[]] PASSED*",
            "*test_linear*cpu*inference_mode*aot_eager*new",
        ]
    )
    lines = [json.loads(line) for line in (pytester.path / "cases.jsonl").read_text().splitlines()]
    assert [(line["backend"], line["config"], line["verdict"]) for line in lines] == [
        ("inference_mode", "default", "new"),
        ("inference_mode", "aot_eager", "new"),
    ]
    assert all(line["median_s"] > 0 and line["fingerprint"]["torch"] for line in lines)
    assert lines[0]["test"] == "test_plugin_suite.py::test_linear[cpu-inference_mode]"


def test_example_plugin_is_absent_without_its_install(pytester: pytest.Pytester) -> None:
    result = pytester.runpytest_subprocess("--tweak-jsonl=x.jsonl")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["*unrecognized arguments: --tweak-jsonl*"])
