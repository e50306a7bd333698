"""The baseline store under faults: concurrent savers, killed savers, a held lock, and fuzzed
file contents. Real processes, real signals, real files; nothing here is mocked."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from pytest_tweak import baselines
from pytest_tweak.baselines import (
    FORMAT,
    BaselineEntry,
    BaselineError,
    RunRecord,
    read_baselines,
    save_baselines,
)
from pytest_tweak.stats import Summary

ROOT = Path(__file__).resolve().parent.parent

#: A saver process: saves ``count`` entries named ``<prefix><i>``, one save each, once the
#: start file exists (so that all savers start together).
SAVER = textwrap.dedent("""
    import itertools, os, signal, sys, time
    from pathlib import Path
    from pytest_tweak.baselines import BaselineEntry, RunRecord, save_baselines
    from pytest_tweak.stats import Summary

    path, prefix, count, start = Path(sys.argv[1]), sys.argv[2], int(sys.argv[3]), sys.argv[4]
    # Ctrl-C and SIGTERM as a pytest run in a terminal has them: a suite started in the
    # background (bash's `cmd &`) hands its children SIGINT ignored, and Python then installs
    # no KeyboardInterrupt handler, so a SIGINT would never stop this saver
    signal.signal(signal.SIGINT, signal.default_int_handler)
    signal.signal(signal.SIGTERM, signal.SIG_DFL)
    while not os.path.exists(start):
        time.sleep(0.001)
    # count < 0: save until killed (a kill then always lands mid-run, however slow the
    # machine is to deliver it)
    for i in itertools.count() if count < 0 else range(count):
        median = 0.001 * (1 + i)
        run = RunRecord(timing=Summary.of([median * 0.99, median, median * 1.01]))
        entry = BaselineEntry(runs=(run,), graph_breaks=0, recompiles=0, device="cpu")
        save_baselines(path, {f"{prefix}{i}": entry}, append=True)
        print(i, flush=True)
""")


def _entry(median: float = 0.001) -> BaselineEntry:
    run = RunRecord(timing=Summary.of([median * 0.99, median, median * 1.01]))
    return BaselineEntry(runs=(run,), graph_breaks=0, recompiles=0, device="cpu")


def _saver(path: Path, prefix: str, count: int, start: Path) -> subprocess.Popen[str]:
    env = {
        **os.environ,
        "PYTHONPATH": os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")]),
    }
    return subprocess.Popen(
        [sys.executable, "-c", SAVER, str(path), prefix, str(count), str(start)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=env,
    )


def test_twenty_concurrent_savers_lose_no_entry(tmp_path: Path) -> None:
    path = tmp_path / "tweak-baselines.json"
    save_baselines(path, {"existing": _entry(0.5)})
    start = tmp_path / "go"
    savers = [_saver(path, f"p{n}-", 5, start) for n in range(20)]
    time.sleep(0.5)  # let every process get to its start line
    start.touch()
    for proc in savers:
        _, err = proc.communicate(timeout=240)
        assert proc.returncode == 0, err
    found = read_baselines(path)
    expected = {"existing"} | {f"p{n}-{i}" for n in range(20) for i in range(5)}
    assert set(found.entries) == expected and not found.skipped
    assert found.entries["existing"] == _entry(0.5)
    assert [p.name for p in tmp_path.glob("*.tmp")] == []


@pytest.mark.parametrize("sig", [signal.SIGKILL, signal.SIGTERM, signal.SIGINT])
def test_a_saver_killed_mid_save_leaves_a_whole_file(tmp_path: Path, sig: signal.Signals) -> None:
    """Kill savers at many points of their saves: the file always loads, holds the entry
    that existed before, and only ever gains entries."""
    path = tmp_path / "tweak-baselines.json"
    save_baselines(path, {"existing": _entry(0.5)})
    start = tmp_path / "go"
    start.touch()
    seen = 1
    for attempt in range(8):
        proc = _saver(path, f"k{attempt}-", -1, start)
        try:
            assert proc.stdout is not None
            proc.stdout.readline()  # it has saved at least once: now it is saving in a loop
            time.sleep(0.003 * attempt)
            proc.send_signal(sig)
            proc.communicate(timeout=60)
        finally:  # a saver the signal did not stop must not outlive the test
            if proc.poll() is None:
                proc.kill()
                proc.communicate()
        assert proc.returncode != 0  # it really was stopped mid-run
        found = read_baselines(path)  # never a BaselineError
        assert not found.skipped and found.entries["existing"] == _entry(0.5)
        assert len(found.entries) >= seen
        seen = len(found.entries)
    assert seen > 8  # every killed saver had saved something


def test_a_held_lock_makes_a_save_fail_clearly_and_write_nothing(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / "b.json"
    save_baselines(path, {"a": _entry()})
    before = path.read_bytes()
    monkeypatch.setattr(baselines, "LOCK_TIMEOUT_S", 0.2)
    with baselines._locked(path):  # another process would hold it the same way
        started = time.monotonic()
        with pytest.raises(BaselineError, match=r"another process has held its save lock"):
            save_baselines(path, {"b": _entry()})
        assert time.monotonic() - started < 5
    assert path.read_bytes() == before
    save_baselines(path, {"b": _entry()})  # released: the next save goes through
    assert sorted(read_baselines(path).entries) == ["a", "b"]


def test_every_truncation_of_a_file_reads_or_fails_clearly_and_is_never_rewritten(
    tmp_path: Path,
) -> None:
    path = tmp_path / "b.json"
    save_baselines(path, {"a": _entry(0.001), "b": _entry(0.002)})
    whole = path.read_bytes()
    outcomes = {"read": 0, "refused": 0}
    for cut in range(len(whole)):
        path.write_bytes(whole[:cut])
        try:
            read_baselines(path)
            outcomes["read"] += 1
        except BaselineError:
            outcomes["refused"] += 1
            with pytest.raises(BaselineError):
                save_baselines(path, {"c": _entry()})
        assert path.read_bytes() == whole[:cut]
    # only the whole document reads: the one cut that keeps it is before the final newline
    assert outcomes == {"read": 1, "refused": len(whole) - 1}


_json = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=8),
    lambda inner: (
        st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=8), inner, max_size=4)
    ),
    max_leaves=20,
)
_summary_like = st.fixed_dictionaries(
    {},
    optional={
        "n": _json | st.integers(0, 50),
        "median": _json | st.floats(0, 1),
        "q1": _json,
        "q3": _json,
        "min": _json,
        "max": _json,
        "log_sd": _json,
    },
)
_entry_like = st.fixed_dictionaries(
    {},
    optional={
        "runs": st.lists(st.fixed_dictionaries({"timing": _summary_like}), max_size=2) | _json,
        "graph_breaks": _json,
        "recompiles": _json,
        "median_s": _json,
        "config": _json,
        "stats": _json,
    },
)
_file_like = st.fixed_dictionaries(
    {
        "format": st.sampled_from([FORMAT, "other"]) | _json,
        "version": st.sampled_from([1, 2, 3]) | _json,
        "cases": st.dictionaries(st.text(max_size=10), _entry_like | _json, max_size=4) | _json,
    }
)


@settings(
    max_examples=300, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(data=_file_like | _json)
def test_fuzzed_files_read_or_fail_clearly_and_a_save_loses_nothing(
    tmp_path: Path, data: object
) -> None:
    path = tmp_path / "fuzz.json"
    text = json.dumps(data)
    path.write_text(text)
    try:
        found = read_baselines(path)
    except BaselineError:
        with pytest.raises(BaselineError):
            save_baselines(path, {"new": _entry()})
        assert path.read_text() == text  # refused, and left as it was
        return
    assert path.read_text() == text  # reading never writes
    assert not set(found.entries) & set(found.skipped)
    save_baselines(path, {"new": _entry()})
    after = read_baselines(path)
    assert set(after.entries) == set(found.entries) | {"new"}
    assert after.raw == {k: v for k, v in found.raw.items() if k != "new"}
