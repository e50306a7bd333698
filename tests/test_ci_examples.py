"""examples/ci: the GitHub Actions and GitLab CI examples parse, have the jobs they promise, and
run only options the plugin and ``python -m pytest_tweak`` define."""

from __future__ import annotations

import re
import shlex
from pathlib import Path
from typing import Any

import pytest
import yaml

from pytest_tweak.cli import main

CI = Path(__file__).resolve().parent.parent / "examples" / "ci"
#: The report options another part of issue 5 adds; allowed before they are registered.
REPORT_OPTIONS = {"--tweak-json", "--tweak-markdown", "--tweak-html"}
COMMANDS = ("show", "diff", "merge", "accept", "remove")


def _load(name: str) -> dict[Any, Any]:
    data = yaml.safe_load((CI / name).read_text(encoding="utf-8"))
    assert isinstance(data, dict)
    return data


def _commands(data: Any) -> list[str]:
    """Every shell command: GitHub steps' ``run``, GitLab jobs' ``script``/``before_script``."""
    found: list[str] = []
    if isinstance(data, dict):
        for key, value in data.items():
            if key == "run" and isinstance(value, str):
                found.append(value)
            elif key in ("script", "before_script") and isinstance(value, list):
                found += [line for line in value if isinstance(line, str)]
            else:
                found += _commands(value)
    elif isinstance(data, list):
        for item in data:
            found += _commands(item)
    return found


@pytest.fixture
def plugin_options(pytester: pytest.Pytester) -> set[str]:
    """The --tweak-* options pytest-tweak registers, as ``pytest --help`` lists them."""
    result = pytester.runpytest("--help")
    assert result.ret == 0
    return set(re.findall(r"--tweak-[a-z][a-z-]*", result.stdout.str()))


def test_github_workflow_records_on_main_and_gates_pull_requests() -> None:
    data = _load("github-actions.yml")
    triggers = data.get("on", data.get(True))  # YAML 1.1 reads a bare `on` as true
    assert triggers["push"]["branches"] == ["main"] and "pull_request" in triggers
    jobs = data["jobs"]
    assert jobs["record"]["if"] == "github.event_name == 'push'"
    assert jobs["gate"]["if"] == "github.event_name == 'pull_request'"
    record = " ".join(_commands(jobs["record"]))
    assert "--tweak-save --tweak-append" in record and "pytest_tweak diff" in record
    gate = " ".join(_commands(jobs["gate"]))
    assert "--tweak-html=tweak-report.html" in gate
    # the markdown reaches the job's summary by itself, once per job: the gate's run, and
    # the last of the record job's five runs (the others empty GITHUB_STEP_SUMMARY)
    assert "--tweak-markdown" not in gate
    runs = re.findall(r"(GITHUB_STEP_SUMMARY= )?python -m pytest \"\$PERF_TESTS\"", record)
    assert len(runs) == 3 and [bool(empty) for empty in runs] == [True, True, False]
    assert "--tweak-save" not in gate
    uploads = [s for s in jobs["gate"]["steps"] if str(s.get("uses", "")).startswith("actions/up")]
    assert uploads and uploads[0]["if"] == "always()"
    assert "tweak-report.html" in uploads[0]["with"]["path"]


def test_gitlab_jobs_record_on_the_default_branch_and_gate_merge_requests() -> None:
    data = _load("gitlab-ci.yml")
    record, gate = data["perf:record"], data["perf:gate"]
    assert record["rules"] == [{"if": "$CI_COMMIT_BRANCH == $CI_DEFAULT_BRANCH"}]
    assert gate["rules"] == [{"if": '$CI_PIPELINE_SOURCE == "merge_request_event"'}]
    assert record["extends"] == gate["extends"] == ".perf"
    assert any("--tweak-save --tweak-append" in line for line in record["script"])
    assert "perf/" in record["artifacts"]["paths"]
    assert gate["artifacts"]["when"] == "always"
    assert "tweak-report.html" in gate["artifacts"]["paths"]
    # the gate fetches the record job's artifact by that job's name
    assert any("job=perf:record" in line for line in data[".perf"]["before_script"])


@pytest.mark.parametrize("name", ["github-actions.yml", "gitlab-ci.yml"])
def test_the_examples_use_only_options_that_exist(
    name: str, plugin_options: set[str], capsys: pytest.CaptureFixture[str]
) -> None:
    commands = _commands(_load(name))
    text = "\n".join(commands)
    used = set(re.findall(r"--tweak-[a-z][a-z-]*", text))
    assert {"--tweak-save", "--tweak-append", "--tweak-baseline", "--tweak-html"} <= used
    assert used - plugin_options - REPORT_OPTIONS == set()
    # python -m pytest_tweak: known commands, with options that command has
    for line in commands:
        for call in re.findall(r"python -m pytest_tweak ([^;|&\n]+)", line):
            words = shlex.split(call)
            assert words[0] in COMMANDS, call
            assert main([words[0], "--help"]) == 0
            help_text = capsys.readouterr().out
            for word in words[1:]:
                if word.startswith("--"):
                    assert word.split("=", 1)[0] in help_text, call
