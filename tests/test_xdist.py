"""pytest-xdist: workers measure under device locks, one case at a time per device, and the
controller prints one summary and saves one baseline file with every worker's entries."""

from __future__ import annotations

import itertools
import json

import pytest

pytest.importorskip("xdist")

# Each model call stamps the wall clock from outside the compiled graph (a dynamo-disabled
# function), so every case's window of model calls is recorded independently of the lock.
XDIST_SUITE = """
import json, os, time
from pathlib import Path
import pytest, torch

STAMPS = []

@torch._dynamo.disable
def stamp():
    STAMPS.append(time.time())


class Net(torch.nn.Module):
    def __init__(self, width):
        super().__init__()
        self.lin = torch.nn.Linear(width, width)

    def forward(self, x):
        stamp()
        return torch.relu(self.lin(x))


@pytest.mark.parametrize("width", [16, 24, 32, 40, 48, 56])
def test_case(tweak, width, request):
    STAMPS.clear()
    tweak.benchmark(Net(width).eval(), torch.randn(8, width))
    out = Path(os.environ["TWEAK_STAMPS"]) / f"{width}.json"
    worker = os.environ.get("PYTEST_XDIST_WORKER", "main")
    out.write_text(json.dumps({"worker": worker, "first": STAMPS[0], "last": STAMPS[-1]}))
"""


def test_two_workers_measure_one_case_at_a_time_and_save_every_entry(
    pytester: pytest.Pytester, run_suite, monkeypatch: pytest.MonkeyPatch
) -> None:
    stamps = pytester.mkdir("stamps")
    monkeypatch.setenv("TWEAK_STAMPS", str(stamps))
    pytester.makepyfile(test_parallel=XDIST_SUITE)
    # pytest-benchmark's warnings as errors: it must not find its fixture unused
    result = run_suite(
        "-n", "2", "--tweak-save", "-W", "error::pytest_benchmark.logger.PytestBenchmarkWarning"
    )
    result.assert_outcomes(passed=6)
    windows = [json.loads(p.read_text()) for p in sorted(stamps.iterdir())]
    assert len(windows) == 6
    assert {w["worker"] for w in windows} == {"gw0", "gw1"}, windows  # both workers ran cases
    for a, b in itertools.combinations(windows, 2):
        overlap = min(a["last"], b["last"]) - max(a["first"], b["first"])
        assert overlap <= 0, f"measurements overlapped by {overlap:.3f} s: {a} {b}"
    # one summary on the controller, with every worker's cases, and one saved file
    result.stdout.fnmatch_lines(
        [
            "*tweak summary*",
            "*pytest-tweak: 2 xdist workers measured one case at a time per device "
            "(device locks; cpu: 6 case(s), waited * s for another worker or another pytest "
            "process of this user)",
            "pytest-tweak: saved 6 case(s) to *tweak-baselines.json (kept 0 other entries)",
        ]
    )
    start = result.stdout.lines.index(next(x for x in result.stdout.lines if "tweak summary" in x))
    summary = result.stdout.lines[start:]
    rows = [line for line in summary if line.startswith("test_parallel.py::test_case[")]
    assert len(rows) == 6, "\n".join(summary)
    cases = json.loads((pytester.path / "tweak-baselines.json").read_text())["cases"]
    assert sorted(cases) == sorted(
        f"test_parallel.py::test_case[cpu-default-{w}]" for w in (16, 24, 32, 40, 48, 56)
    )
    assert all(len(entry["runs"]) == 1 and entry["runs"][0]["timing"] for entry in cases.values())

    # appended under xdist: nothing lost
    appended = run_suite("-n", "2", "--tweak-save", "--tweak-append")
    appended.assert_outcomes(passed=6)
    path = pytester.path / "tweak-baselines.json"
    data = json.loads(path.read_text())
    assert len(data["cases"]) == 6 and all(len(e["runs"]) == 2 for e in data["cases"].values())

    # compared under xdist: a verdict made on a worker fails its test on the controller,
    # exactly the three whose baseline is far faster than anything real (the fourteenth
    # audit: no test judged under xdist)
    slow = [f"test_parallel.py::test_case[cpu-default-{w}]" for w in (16, 32, 48)]
    for key in slow:
        for run in data["cases"][key]["runs"]:
            run["timing"].update(median=1e-9, q1=1e-9, q3=1e-9, min=1e-9, max=1e-9)
    path.write_text(json.dumps(data))
    compared = run_suite("-n", "2", "--tweak-metric=absolute")
    compared.assert_outcomes(passed=3, failed=3)
    failed = {line.split(" ")[1] for line in compared.stdout.lines if line.startswith("FAILED ")}
    assert failed == set(slow), compared.stdout.str()
    compared.stdout.fnmatch_lines(["*regressed against*"])


def test_without_xdist_nothing_about_locks_is_said(pytester: pytest.Pytester, run_suite) -> None:
    pytester.makepyfile("""
        import torch
        def test_lin(tweak):
            tweak.benchmark(torch.nn.Linear(8, 8), torch.randn(2, 8))
    """)
    result = run_suite()
    result.assert_outcomes(passed=1)
    assert not [line for line in result.stdout.lines if "device lock" in line]


def test_a_held_device_lock_makes_the_case_wait_and_the_summary_says_so(
    pytester: pytest.Pytester, run_suite, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Another process measuring on the device (here: this test, holding the cpu lock from a
    thread until the case is about to start, and 1.5 s more) delays the case; the summary
    names the wait."""
    import threading
    import time

    from pytest_tweak.locks import device_lock

    ready = pytester.path / "about-to-benchmark"
    monkeypatch.setenv("TWEAK_READY", str(ready))
    pytester.makepyfile("""
        import os, pathlib, torch
        def test_lin(tweak):
            pathlib.Path(os.environ["TWEAK_READY"]).write_text("now")
            tweak.benchmark(torch.nn.Linear(8, 8), torch.randn(2, 8))
    """)
    held = threading.Event()

    def hold() -> None:
        with device_lock("cpu"):
            held.set()
            deadline = time.monotonic() + 120
            while not ready.exists() and time.monotonic() < deadline:
                time.sleep(0.05)
            time.sleep(1.5)

    thread = threading.Thread(target=hold)
    thread.start()
    held.wait()
    try:
        result = run_suite()
    finally:
        thread.join()
    result.assert_outcomes(passed=1)
    result.stdout.fnmatch_lines(
        [
            "pytest-tweak: waited for another process measuring on the same device "
            "(cpu: 1 case(s), waited * s)"
        ]
    )


def test_a_replaced_worker_is_counted_once() -> None:
    """xdist replaces a crashed worker under the same id; each sent its output, and the
    summary counted 4 workers for ``-n 2`` (eighth user trial)."""
    from pathlib import Path

    from pytest_tweak.options import TweakOptions
    from pytest_tweak.runstate import RunState
    from pytest_tweak.xdist import absorb, worker_output

    options = TweakOptions(devices=("cpu",), baseline_path=Path("b.json"), save=False, judging={})
    state = RunState(options)
    for worker in ("gw0", "gw1", "gw1"):
        absorb(state, worker_output(RunState(options), worker, Path(".")))
    assert state.workers == ["gw0", "gw1"]


def test_a_broken_baseline_file_stops_an_xdist_run_with_the_same_usage_error(
    pytester: pytest.Pytester, run_suite
) -> None:
    # found in the fourteenth session: each worker raised the usage error while collecting and
    # the controller printed only an INTERNALERROR (xdist's "crashitem" assertion)
    pytester.makepyfile(XDIST_SUITE)
    baseline = pytester.path / "tweak-baselines.json"
    baseline.write_text('{"version": 1, "cases": ')
    result = run_suite("-n", "2")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(
        [f"ERROR: pytest-tweak: baseline file {baseline}: is not valid JSON (*). Fix or remove*"]
    )
    assert "INTERNALERROR" not in result.stdout.str() + result.stderr.str()
    assert baseline.read_text() == '{"version": 1, "cases": '
