"""Shared set-up for pytest-tweak's own tests."""

from __future__ import annotations

import os
import tempfile
from pathlib import Path

import pytest

# torch is imported here, before any in-process pytester run: pytester drops the modules an
# inner run imported when it ends, and torch's C extension cannot be imported twice in one
# process (`pytest tests/test_bad_input.py` alone ended in "SystemError: bad call flags" and
# a segfault).
import torch  # noqa: F401
from hypothesis import settings

pytest_plugins = ["pytester"]

# No per-example deadline: an example that takes 2 ms stalls past hypothesis's 200 ms default
# when the shared 2-core machine is busy, and "DeadlineExceeded" is then timing, not a bug.
settings.register_profile("pytest-tweak", deadline=None)
settings.load_profile("pytest-tweak")

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


#: Variables of the process running this suite that must not leak into the user suites it runs:
#: the plugin appends its markdown to $GITHUB_STEP_SUMMARY (a test sets its own), and
#: pytest-benchmark turns itself off in a process that looks like an xdist worker, which every
#: user suite would when this suite runs under ``-n``.
_OUTER_RUN_VARIABLES = (
    "GITHUB_STEP_SUMMARY",
    "PYTEST_XDIST_WORKER",
    "PYTEST_XDIST_WORKER_COUNT",
    "PYTEST_XDIST_TESTRUNUID",
)


@pytest.fixture(autouse=True)
def _user_suites_do_not_inherit_this_run(monkeypatch: pytest.MonkeyPatch) -> None:
    """Keep the user suites this suite runs out of the CI job and the xdist worker running it."""
    for name in _OUTER_RUN_VARIABLES:
        monkeypatch.delenv(name, raising=False)


@pytest.fixture
def run_suite(pytester: pytest.Pytester):
    """Run pytest on the pytester dir in a fresh process, with FAST_ARGS."""

    def run(*args: str) -> pytest.RunResult:
        return pytester.runpytest_subprocess(*FAST_ARGS, *args)

    return run
