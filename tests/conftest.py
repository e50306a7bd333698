"""Shared set-up for pytest-tweak's own tests."""

from __future__ import annotations

import os
import tempfile
from pathlib import Path

import pytest

pytest_plugins = ["pytester"]

# One inductor cache for the whole test run, shared by the pytester subprocesses: a warm cache
# turns a ~20 s compile into ~3 s. An explicit TORCHINDUCTOR_CACHE_DIR (CI sets one) wins.
os.environ.setdefault(
    "TORCHINDUCTOR_CACHE_DIR", str(Path(tempfile.gettempdir()) / "pytest-tweak-inductor-cache")
)

#: Arguments that keep a pytester run quick: short warm-up and few, short rounds.
FAST_ARGS = (
    "--tweak-warmup=0.01",
    "--tweak-max-time=0.05",
    "--tweak-min-rounds=5",
    "-p",
    "no:cacheprovider",
)

#: The suite's own warning settings (pyproject.toml), as an ini file for a user suite: warnings
#: are errors, except torch's own.
WARNINGS_AS_ERRORS_INI = """
[pytest]
filterwarnings =
    error
    ignore::DeprecationWarning:torch.*
    ignore::FutureWarning:torch.*
    ignore::UserWarning:torch.*
"""


@pytest.fixture(autouse=True)
def _no_step_summary(monkeypatch: pytest.MonkeyPatch) -> None:
    """The plugin appends its markdown to $GITHUB_STEP_SUMMARY: keep the user suites this
    test suite runs out of the summary of the CI job running it (a test sets its own)."""
    monkeypatch.delenv("GITHUB_STEP_SUMMARY", raising=False)


@pytest.fixture
def run_suite(pytester: pytest.Pytester):
    """Run pytest on the pytester dir in a fresh process, with FAST_ARGS."""

    def run(*args: str) -> pytest.RunResult:
        return pytester.runpytest_subprocess(*FAST_ARGS, *args)

    return run
