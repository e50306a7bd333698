"""The progress line: each case's phase and elapsed time while it runs, erased after it.

Runs pytest in a pseudo-terminal where ``auto`` is what is tested: a pipe is not a terminal.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys

import pytest
from conftest import FAST_ARGS

TINY = """
    import torch

    def test_tiny(tweak):
        tweak.benchmark(torch.nn.Linear(8, 8), torch.randn(4, 8))
"""
#: The same with the eager backend, which compiles nothing: quick, where only whether the
#: progress is shown matters.
EAGER = """
    import pytest, torch

    @pytest.mark.tweak_backends("eager")
    def test_tiny(tweak):
        tweak.benchmark(torch.nn.Linear(8, 8), torch.randn(4, 8))
"""
PHASES = ("compiling", "checking accuracy", "warming up", "measuring", "measuring memory")
STATUS = re.compile(r" tweak: test_tiny\[cpu-[a-z]+\] ([a-z ]+)\.\.\. \d+\.\d s")


def _phases(output: str) -> list[str]:
    return STATUS.findall(output)


def test_on_shows_every_phase_and_erases_it(
    pytester: pytest.Pytester, run_suite, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("CI", "true")  # 'on' shows progress in CI logs and pipes too
    pytester.makepyfile(test_tiny=TINY)
    result = run_suite("--tweak-progress=on")
    result.assert_outcomes(passed=1)
    output = result.stdout.str()
    assert _phases(output) == list(PHASES)
    # each status is erased before the next one is written and before the test's outcome
    line = next(line for line in result.outlines if "tweak: test_tiny" in line)
    for match in STATUS.finditer(line):
        erase = len(match.group(0))
        after = line[match.end() :]
        assert after.startswith("\b" * erase + " " * erase + "\b" * erase)


def test_the_ini_twin_turns_progress_off(pytester: pytest.Pytester, run_suite) -> None:
    pytester.makeini("[pytest]\ntweak_progress = off\n")
    pytester.makepyfile(test_tiny=EAGER)
    output = _in_terminal(pytester)
    assert "1 passed" in output, output
    assert "tweak: test_tiny" not in output
    bad = run_suite("--tweak-progress=loud")
    assert bad.ret == pytest.ExitCode.USAGE_ERROR
    bad.stderr.fnmatch_lines(
        ["*--tweak-progress: invalid value 'loud'; expected one of: auto, on, off"]
    )


def _in_terminal(pytester: pytest.Pytester, *args: str, ci: bool = False) -> str:
    """Run pytest with a pseudo-terminal as its stdout; returns what it wrote."""
    master, slave = os.openpty()
    env = {key: value for key, value in os.environ.items() if key != "CI"}
    env["COLUMNS"] = "160"
    if ci:
        env["CI"] = "true"
    proc = subprocess.Popen(
        [sys.executable, "-m", "pytest", *FAST_ARGS, "-W", "ignore", *args],
        cwd=pytester.path,
        stdin=subprocess.DEVNULL,
        stdout=slave,
        stderr=slave,
        env=env,
    )
    os.close(slave)
    chunks = []
    while True:
        try:
            chunk = os.read(master, 65536)
        except OSError:  # the child closed the terminal
            break
        if not chunk:
            break
        chunks.append(chunk)
    proc.wait(timeout=300)
    os.close(master)
    return b"".join(chunks).decode("utf-8", "replace")


@pytest.mark.skipif(sys.platform == "win32", reason="needs a pseudo-terminal")
@pytest.mark.parametrize(
    ("args", "ci", "shown"),
    [
        ((), False, True),  # auto, on a terminal
        (("-q",), False, False),  # auto, quiet
        ((), True, False),  # auto, in CI
        (("--tweak-progress=on", "-q"), True, True),  # asked for
    ],
    ids=["auto", "quiet", "ci", "on"],
)
def test_auto_shows_progress_on_a_terminal_only_when_not_quiet_or_in_ci(
    pytester: pytest.Pytester, args: tuple[str, ...], ci: bool, shown: bool
) -> None:
    pytester.makepyfile(test_tiny=EAGER)
    output = _in_terminal(pytester, *args, ci=ci)
    assert "1 passed" in output, output
    assert bool(_phases(output)) is shown
