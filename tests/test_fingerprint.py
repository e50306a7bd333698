"""The environment fingerprint: its base fields, checks on what plugins add, differences."""

from __future__ import annotations

import json
import platform
from pathlib import Path

import pytest
import torch

from pytest_tweak.fingerprint import (
    base_fingerprint,
    check_fingerprint,
    differences,
    render_fingerprint,
)


def test_base_fingerprint_names_the_environment_and_is_json() -> None:
    fingerprint = base_fingerprint(("cpu",), cpu_threads=3)
    assert fingerprint["torch"] == torch.__version__
    assert fingerprint["python"] == platform.python_version()
    assert fingerprint["threads"] == 3 and fingerprint["cpu"]
    assert set(fingerprint) == {"python", "torch", "platform", "cpu", "cpu_count", "threads"}
    json.dumps(fingerprint)
    assert base_fingerprint(("cpu",), None)["threads"] == torch.get_num_threads()


def test_unavailable_accelerators_add_no_field() -> None:
    if torch.cuda.is_available():
        pytest.skip("cuda is available here")
    assert "cuda" not in base_fingerprint(("cpu", "cuda"), None)


@pytest.mark.parametrize(
    ("fingerprint", "problem"),
    [
        ({"a": 1, "b": [1, "x"], "c": None}, None),
        ([("a", 1)], "the fingerprint must stay a dict, got list"),
        ({1: "a"}, "fingerprint key 1 is not a string"),
        ({"when": {1, 2}}, "fingerprint field 'when' = {1, 2} is not JSON data"),
        ({"x": float("nan")}, "fingerprint field 'x' = nan is not JSON data"),
    ],
)
def test_check_fingerprint(fingerprint: object, problem: str | None) -> None:
    found = check_fingerprint(fingerprint)
    assert found == problem if problem is None else found is not None and problem in found


def test_differences_name_the_changed_shared_fields() -> None:
    old = {"torch": "2.12", "cpu": "A", "gone": 1}
    new = {"torch": "2.13", "cpu": "A", "added": 2}
    assert differences(old, new) == ["torch: '2.12' -> '2.13'"]
    assert render_fingerprint({"torch": "2.13", "threads": 2}) == "torch=2.13, threads=2"


POLICY_SUITE = """
import torch

def test_lin(tweak):
    with torch.no_grad():
        tweak.benchmark(torch.nn.Linear(16, 16).eval(), torch.randn(4, 16))
"""


def _recorded_with_another_torch(pytester: pytest.Pytester, run_suite, runs: int = 1) -> Path:
    """The policy suite's baseline, saved here, then edited to read as ``runs`` runs recorded
    with another torch; returns the file."""
    pytester.makepyfile(test_policy=POLICY_SUITE)
    run_suite("--tweak-save").assert_outcomes(passed=1)
    path = pytester.path / "tweak-baselines.json"
    data = json.loads(path.read_text())
    (entry,) = data["cases"].values()
    assert entry["fingerprint"]["torch"] == str(torch.__version__)
    entry["fingerprint"]["torch"] = "0.0-other"
    entry["runs"] = entry["runs"] * runs
    path.write_text(json.dumps(data))
    return path


@pytest.mark.parametrize(
    ("policy", "outcome", "lines"),
    [
        (
            None,
            {"passed": 1},
            [
                "*test_lin*cpu*inductor*default*",
                "pytest-tweak: 1 case(s) had a baseline recorded in another environment "
                "(differs: torch): compared anyway (--tweak-fingerprint-policy=warn)*",
            ],
        ),
        (
            "skip",
            {"passed": 1},
            [
                "*test_lin*cpu*inductor*default*not compared",
                "pytest-tweak: 1 case(s) had a baseline recorded in another environment "
                "(differs: torch): not compared (--tweak-fingerprint-policy=skip)",
            ],
        ),
        (
            "fail",
            {"failed": 1},
            [
                "*the baseline was recorded in another environment: torch: '0.0-other' -> "
                "'2.*' (--tweak-fingerprint-policy=fail: record a baseline here with "
                "--tweak-save)*",
                "pytest-tweak: 1 case(s) had a baseline recorded in another environment "
                "(differs: torch): failed (--tweak-fingerprint-policy=fail)",
            ],
        ),
    ],
)
def test_a_baseline_from_another_environment_follows_the_policy(
    pytester: pytest.Pytester,
    run_suite,
    policy: str | None,
    outcome: dict[str, int],
    lines: list[str],
) -> None:
    _recorded_with_another_torch(pytester, run_suite)
    args = ["--tweak-threshold=1000"] + ([f"--tweak-fingerprint-policy={policy}"] if policy else [])
    result = run_suite(*args)
    result.assert_outcomes(**outcome)
    result.stdout.fnmatch_lines(lines)


def test_append_records_anew_a_case_whose_runs_are_of_another_environment(
    pytester: pytest.Pytester, run_suite
) -> None:
    path = _recorded_with_another_torch(pytester, run_suite, runs=2)
    result = run_suite("--tweak-save", "--tweak-append")
    result.assert_outcomes(passed=1)
    result.stdout.fnmatch_lines(
        [
            "pytest-tweak: --tweak-append recorded 1 case(s) anew: their runs in the file were "
            "recorded in another environment (torch: '0.0-other' -> '2.*'), and runs of two "
            "environments are not pooled*: test_policy.py::test_lin[[]cpu-default[]]. Append "
            "more runs here to gate them as before"
        ]
    )
    (saved,) = json.loads(path.read_text())["cases"].values()
    assert len(saved["runs"]) == 1 and saved["fingerprint"]["torch"] == str(torch.__version__)
