"""The baseline file: load, validate, merge, atomic save; never lose what is on disk."""

from __future__ import annotations

import json
import os
import re
import types
from dataclasses import replace
from pathlib import Path

import pytest

from pytest_tweak.baselines import (
    FORMAT,
    MAX_RUNS,
    VERSION,
    BaselineEntry,
    BaselineError,
    RunRecord,
    load_baselines,
    read_baselines,
    render,
    save_baselines,
)
from pytest_tweak.collect import CollectedTests
from pytest_tweak.stats import Summary


def summary(median: float) -> Summary:
    return Summary.of([median * 0.99, median, median * 1.02])


def entry(median: float = 0.001, breaks: int = 0, recompiles: int = 0) -> BaselineEntry:
    return BaselineEntry(
        runs=(RunRecord(timing=summary(median), normalized=summary(median * 4)),),
        graph_breaks=breaks,
        recompiles=recompiles,
        device="cpu",
    )


def test_missing_file_holds_no_baselines(tmp_path: Path) -> None:
    assert load_baselines(tmp_path / "none.json") == {}


def test_save_then_load_round_trips(tmp_path: Path) -> None:
    path = tmp_path / "b.json"
    save_baselines(path, {"t.py::a[cpu-default]": entry(0.002, 1, 2)})
    assert load_baselines(path) == {"t.py::a[cpu-default]": entry(0.002, 1, 2)}


def test_file_is_sorted_indented_and_stable(tmp_path: Path) -> None:
    path = tmp_path / "b.json"
    save_baselines(path, {"z": entry(), "a": entry()})
    text = path.read_text()
    assert text.endswith("}\n") and '\n  "cases": {\n' in text
    assert text.index('"a"') < text.index('"z"')
    data = json.loads(text)
    assert (data["format"], data["version"]) == (FORMAT, VERSION)
    before = path.read_bytes()
    save_baselines(path, {"a": entry()})
    assert path.read_bytes() == before  # re-saving the same numbers is an empty diff


def test_save_keeps_entries_of_cases_that_did_not_run(tmp_path: Path) -> None:
    path = tmp_path / "b.json"
    save_baselines(path, {"a": entry(0.001), "b": entry(0.002)})
    save_baselines(path, {"b": entry(0.003), "c": entry(0.004)})
    assert {k: v.median_s for k, v in load_baselines(path).items()} == {
        "a": 0.001,
        "b": 0.003,
        "c": 0.004,
    }


def test_save_merges_with_what_is_on_disk_now(tmp_path: Path) -> None:
    path = tmp_path / "b.json"
    save_baselines(path, {"a": entry()})
    save_baselines(path, {"other": entry()})  # e.g. another job saved meanwhile
    save_baselines(path, {"b": entry()})
    assert sorted(load_baselines(path)) == ["a", "b", "other"]


@pytest.mark.parametrize(
    ("text", "problem"),
    [
        ("{not json", r"is not valid JSON \(line 1, column 2"),
        ("", "is empty"),
        (" \n", "is empty"),
        ("[]", "is not a pytest-tweak baseline file"),
        ('{"format": "other"}', "is not a pytest-tweak baseline file"),
        (f'{{"format": "{FORMAT}", "version": 99, "cases": {{}}}}', '"version": 99;'),
        (f'{{"format": "{FORMAT}", "version": 2, "cases": []}}', "'cases' must be an object"),
        (
            f'{{"format": "{FORMAT}", "version": 3, "cases": {{}}}}',
            '"version": 3;.*written by a newer pytest-tweak',
        ),
        (f'{{"format": "{FORMAT}", "version": true, "cases": {{}}}}', '"version": true;'),
        (f'{{"format": "{FORMAT}", "cases": {{}}}}', 'has no "version"; this pytest-tweak reads'),
        ("[" * 100_000, "is not valid JSON"),
    ],
)
def test_broken_file_names_the_file_and_the_problem(
    tmp_path: Path, text: str, problem: str
) -> None:
    path = tmp_path / "b.json"
    path.write_text(text)
    with pytest.raises(BaselineError, match=problem) as info:
        load_baselines(path)
    assert str(path) in str(info.value)


@pytest.mark.parametrize(
    ("version", "bad", "problem"),
    [
        (2, {"runs": []}, r"case 't': 'runs' must be a non-empty list"),
        (2, {"runs": [{"timing": {"n": 0}}]}, r"case 't'.runs\[0\].timing: 'n' must be an integer"),
        (2, "not an object", r"case 't': expected an object, got str"),
        (1, {"median_s": -1}, r"case 't': 'median_s' must be a positive number"),
        (1, {"median_s": 1, "graph_breaks": 1.5}, "'graph_breaks' must be an integer"),
    ],
)
def test_a_broken_entry_is_skipped_by_its_key_and_the_others_are_kept(
    tmp_path: Path, version: int, bad: object, problem: str
) -> None:
    good = entry().as_dict() if version == 2 else {"median_s": 0.001}
    path = tmp_path / "b.json"
    path.write_text(
        json.dumps({"format": FORMAT, "version": version, "cases": {"t": bad, "u": good}})
    )
    found = read_baselines(path)
    assert list(found.entries) == ["u"]
    assert list(found.skipped) == ["t"] and re.search(problem, found.skipped["t"])
    assert found.raw == {"t": bad}


def test_save_writes_a_broken_entry_back_unchanged_unless_the_case_is_recorded_anew(
    tmp_path: Path,
) -> None:
    path = tmp_path / "b.json"
    bad = {"runs": "garbled by a bad merge", "note": [1, 2]}
    path.write_text(
        json.dumps({"format": FORMAT, "version": 2, "cases": {"t": bad, "u": entry().as_dict()}})
    )
    save_baselines(path, {"v": entry(0.002)})
    cases = json.loads(path.read_text())["cases"]
    assert cases["t"] == bad and sorted(cases) == ["t", "u", "v"]
    save_baselines(path, {"t": entry(0.003)})  # recorded anew: now readable
    found = read_baselines(path)
    assert not found.skipped and found.entries["t"] == entry(0.003)


def test_broken_file_is_never_overwritten_by_save(tmp_path: Path) -> None:
    path = tmp_path / "b.json"
    path.write_text("{ broken")
    with pytest.raises(BaselineError):
        save_baselines(path, {"a": entry()})
    assert path.read_text() == "{ broken"


def test_undecodable_file_is_an_error(tmp_path: Path) -> None:
    path = tmp_path / "b.json"
    path.write_bytes(b"\xff\xfe\x00garbage")
    with pytest.raises(BaselineError, match="cannot be read"):
        load_baselines(path)


@pytest.mark.parametrize(
    ("edit", "problem"),
    [
        # 1e400 reads as infinity, which no save could write back (every later save crashed)
        (('"graph_breaks": 0', '"graph_breaks": 0, "compile_time_s": 1e400'), "1e400 is out of"),
        # a merge that kept both sides: the last copy alone was read, and a save wrote it alone
        (('"cases": {', '"cases": {"a": {"runs": []}, '), "the key 'a' appears twice"),
    ],
)
def test_a_number_out_of_range_or_a_test_id_given_twice_refuses_the_file(
    tmp_path: Path, edit: tuple[str, str], problem: str
) -> None:
    # both found in the tenth user trial
    path = tmp_path / "b.json"
    save_baselines(path, {"a": entry(), "b": entry()})
    text = path.read_text().replace(*edit, 1)
    assert text != path.read_text()
    path.write_text(text)
    with pytest.raises(BaselineError, match=problem):
        read_baselines(path)
    with pytest.raises(BaselineError, match=problem):
        save_baselines(path, {"c": entry()})
    assert path.read_text() == text  # refused, never rewritten


def test_a_save_removes_the_temporary_files_of_saves_killed_mid_write(tmp_path: Path) -> None:
    # a SIGKILL runs no cleanup: each killed save left a full-size .b.json.XXXX.tmp behind for
    # good (tenth user trial). Under the lock, no such file belongs to a live save.
    path = tmp_path / "b.json"
    save_baselines(path, {"a": entry()})
    for name in (".b.json.k1ll3d00.tmp", ".b.json.abcd_efg.tmp"):
        (tmp_path / name).write_text(path.read_text()[:50])
    (tmp_path / ".other.json.k1ll3d00.tmp").write_text("another file's")
    save_baselines(path, {"b": entry()})
    assert sorted(p.name for p in tmp_path.iterdir()) == [
        ".b.json.lock",
        ".other.json.k1ll3d00.tmp",
        "b.json",
    ]
    assert set(load_baselines(path)) == {"a", "b"}


def test_an_update_refuses_a_read_only_file_as_the_plugin_does(tmp_path: Path) -> None:
    # the CLI's remove, accept and merge rewrote a file that --tweak-save refused to
    path = tmp_path / "b.json"
    save_baselines(path, {"a": entry()})
    path.chmod(0o444)
    before = path.read_bytes()
    with pytest.raises(BaselineError, match=r"read-only \(mode 0444\); make it writable"):
        save_baselines(path, {"b": entry()})
    assert path.read_bytes() == before and path.stat().st_mode & 0o777 == 0o444


def test_a_file_on_a_read_only_mount_is_named_as_such_not_its_mode(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A read-only mount told to chmod a file of mode 0644 (tenth user trial). Mounting needs
    privileges tests do not have: ``os.statvfs`` answers as it does on such a mount."""
    from pytest_tweak.files import read_only_reason

    path = tmp_path / "b.json"
    save_baselines(path, {"a": entry()})
    assert read_only_reason(path) is None
    real = os.statvfs(path)
    mounted_ro = os.statvfs_result((*real[:8], real.f_flag | os.ST_RDONLY, real.f_namemax))
    monkeypatch.setattr(os, "statvfs", lambda p: mounted_ro)
    with pytest.raises(BaselineError, match="file system is mounted read-only"):
        save_baselines(path, {"b": entry()})


def test_a_save_through_a_link_updates_the_file_it_names_and_keeps_the_link(
    tmp_path: Path,
) -> None:
    # the rename replaced the link with a plain file, and the file it named kept its old
    # entries; two links to one file did not share a lock (eleventh trial)
    store = tmp_path / "store"
    store.mkdir()
    real = store / "real.json"
    save_baselines(real, {"a": entry()})
    link = tmp_path / "link.json"
    link.symlink_to(real)
    save_baselines(link, {"b": entry()})
    assert link.is_symlink() and os.readlink(link) == str(real)
    assert set(load_baselines(real)) == {"a", "b"}
    assert (store / ".real.json.lock").exists() and not (tmp_path / ".link.json.lock").exists()


def test_failed_replace_leaves_the_old_file_whole_and_no_temp_behind(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / "b.json"
    save_baselines(path, {"a": entry()})
    before = path.read_bytes()

    def crash(src: str, dst: str) -> None:
        raise OSError("disk full")

    monkeypatch.setattr(os, "replace", crash)
    with pytest.raises(BaselineError, match="could not be written: disk full"):
        save_baselines(path, {"b": entry()})
    assert path.read_bytes() == before
    assert sorted(p.name for p in tmp_path.iterdir()) == [".b.json.lock", "b.json"]


def test_interrupted_write_leaves_the_old_file_whole(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / "b.json"
    save_baselines(path, {"a": entry()})
    before = path.read_bytes()

    def interrupt(fd: int) -> None:
        raise KeyboardInterrupt

    monkeypatch.setattr(os, "fsync", interrupt)
    with pytest.raises(KeyboardInterrupt):
        save_baselines(path, {"b": entry()})
    assert path.read_bytes() == before
    assert sorted(p.name for p in tmp_path.iterdir()) == [".b.json.lock", "b.json"]


def test_save_keeps_the_file_mode(tmp_path: Path) -> None:
    path = tmp_path / "b.json"
    save_baselines(path, {"a": entry()})
    path.chmod(0o640)
    save_baselines(path, {"b": entry()})
    assert path.stat().st_mode & 0o777 == 0o640


def test_nan_is_refused_rather_than_written() -> None:
    bad = Summary(1, float("nan"), 1.0, 1.0, 1.0, 1.0, 0.0)
    with pytest.raises(ValueError):
        render({"a": BaselineEntry(runs=(RunRecord(bad),), graph_breaks=0, recompiles=0)})


def test_append_adds_runs_and_keeps_the_newest(tmp_path: Path) -> None:
    path = tmp_path / "b.json"
    save_baselines(path, {"a": entry(0.001), "b": entry(0.5)})
    for i in range(MAX_RUNS + 3):
        save_baselines(path, {"a": entry(0.001 * (1 + i / 100))}, append=True)
    loaded = load_baselines(path)
    medians = [run.timing.median for run in loaded["a"].runs]
    assert len(medians) == MAX_RUNS
    assert medians[-1] == pytest.approx(0.001 * (1 + (MAX_RUNS + 2) / 100))
    assert loaded["b"] == entry(0.5)  # untouched
    save_baselines(path, {"a": entry(0.002)})  # without append: replaced
    assert len(load_baselines(path)["a"].runs) == 1


def test_append_records_anew_an_entry_recorded_in_another_environment(tmp_path: Path) -> None:
    """Runs of two environments are not one baseline's noise, and the entry's fingerprint
    would name the newer only (thirteenth trial): append starts such an entry anew and says
    which, while an entry of the same environment, or one without a fingerprint, pools."""
    path = tmp_path / "b.json"
    here = {"torch": "2.13.0+cpu", "cpu": "Intel Xeon", "threads": 1}
    there = {**here, "torch": "2.12.0+cu126"}
    old = replace(entry(0.001), fingerprint=there)
    save_baselines(path, {"a": old, "b": replace(old, fingerprint=here), "c": entry(0.001)})
    restarted: dict[str, list[str]] = {}
    new = replace(entry(0.002), fingerprint=here)
    updates = {"a": new, "b": new, "c": new}
    save_baselines(path, updates, append=True, restarted=restarted)
    loaded = load_baselines(path)
    assert restarted == {"a": ["torch: '2.12.0+cu126' -> '2.13.0+cpu'"]}
    assert loaded["a"] == new  # its one run, of this environment
    assert len(loaded["b"].runs) == 2 and len(loaded["c"].runs) == 2
    # without append, every entry is replaced anyway: nothing to report
    restarted.clear()
    save_baselines(path, {"a": replace(old, fingerprint=there)}, restarted=restarted)
    assert restarted == {}


def test_a_version_1_file_is_read_as_one_run_per_case_and_rewritten_as_version_2(
    tmp_path: Path,
) -> None:
    path = tmp_path / "b.json"
    path.write_text(
        json.dumps(
            {
                "format": FORMAT,
                "version": 1,
                "cases": {
                    "t": {
                        "median_s": 0.002,
                        "graph_breaks": 1,
                        "recompiles": 0,
                        "stats": {"min": 0.0019, "max": 0.003, "stddev": 0.0001, "rounds": 25},
                    }
                },
            }
        )
    )
    (old,) = load_baselines(path).values()
    (run,) = old.runs
    assert run.timing.median == 0.002 and run.timing.n == 25 and run.normalized is None
    assert run.timing.log_sd == pytest.approx(1.2533 * 0.0001 / 0.002 / 5)
    assert old.median_s == 0.002 and old.graph_breaks == 1
    save_baselines(path, {"u": entry()})
    data = json.loads(path.read_text())
    assert data["version"] == VERSION == 2
    assert data["cases"]["t"]["runs"][0]["timing"]["median"] == 0.002


def test_backend_and_fingerprint_round_trip_and_older_entries_load(tmp_path: Path) -> None:
    path = tmp_path / "b.json"
    fingerprint = {"torch": "2.13.0+cpu", "cpu": "AMD EPYC", "threads": 1, "runner": "ci-7"}
    tagged = BaselineEntry(
        runs=entry().runs,
        graph_breaks=0,
        recompiles=0,
        backend="aot_eager",
        fingerprint=fingerprint,
    )
    save_baselines(path, {"new": tagged})
    data = json.loads(path.read_text())
    # an entry written before backends and fingerprints existed
    old = dict(data["cases"]["new"])
    del old["backend"], old["fingerprint"]
    data["cases"]["old"] = old
    path.write_text(json.dumps(data))
    loaded = load_baselines(path)
    assert loaded["new"] == tagged and loaded["new"].fingerprint["runner"] == "ci-7"
    assert (loaded["old"].backend, dict(loaded["old"].fingerprint)) == (None, {})


def test_a_fingerprint_that_is_not_an_object_makes_its_entry_skipped(tmp_path: Path) -> None:
    path = tmp_path / "b.json"
    save_baselines(path, {"a": entry(), "b": entry()})
    data = json.loads(path.read_text())
    data["cases"]["a"]["fingerprint"] = ["cpu"]
    path.write_text(json.dumps(data))
    found = read_baselines(path)
    assert list(found.entries) == ["b"]
    assert found.skipped == {"a": "case 'a': 'fingerprint' must be an object"}


def test_compile_cache_and_peak_memory_are_optional_fields(tmp_path: Path) -> None:
    path = tmp_path / "b.json"
    with_fields = BaselineEntry(
        runs=(RunRecord(timing=Summary(5, 1e-3, 1e-3, 1e-3, 1e-3, 1e-3, 0.01)),),
        graph_breaks=0,
        recompiles=0,
        compile_time_s=3.0,
        compile_cache="hit",
        peak_memory_bytes=4096,
    )
    save_baselines(path, {"a": with_fields})
    assert load_baselines(path)["a"] == with_fields
    # an entry written before these fields existed is read with them unset
    data = json.loads(path.read_text())
    del data["cases"]["a"]["compile_cache"], data["cases"]["a"]["peak_memory_bytes"]
    path.write_text(json.dumps(data))
    old = load_baselines(path)["a"]
    assert (old.compile_cache, old.peak_memory_bytes) == (None, None)
    data["cases"]["a"]["peak_memory_bytes"] = -1
    path.write_text(json.dumps(data))
    assert "'peak_memory_bytes' must be an integer >= 0" in read_baselines(path).skipped["a"]


def test_a_version_written_as_a_string_says_to_write_a_number(tmp_path: Path) -> None:
    path = tmp_path / "tweak-baselines.json"
    path.write_text('{"format": "pytest-tweak-baselines", "version": "2", "cases": {}}')
    with pytest.raises(BaselineError) as raised:
        read_baselines(path)
    assert raised.value.problem == (
        'has "version": "2", a string; the version is a number: write "version": 2 '
        "(this pytest-tweak reads versions 1, 2)"
    )


# -- entries of tests that are gone --------------------------------------------------------


def test_collected_tests_tell_entries_whose_test_is_gone_from_its_module_or_its_file(
    tmp_path: Path,
) -> None:
    module = types.ModuleType("test_a")
    module.test_kept = lambda: None  # type: ignore[attr-defined]
    module.TestK = type("TestK", (), {"test_m": lambda self: None})  # type: ignore[attr-defined]
    (tmp_path / "test_b.py").write_text("")
    collected = CollectedTests()
    collected.note("test_a.py::test_kept[cpu-default]", module)
    collected.note("doc.txt::doc.txt", None)  # a file that is not a Python module
    keys = [
        "test_a.py::test_kept[cpu-default]",
        "test_a.py::test_renamed[cpu-default]",
        "test_a.py::TestK::test_m[cpu-default]",
        "test_a.py::TestK::test_gone[cpu-default]",
        "test_b.py::test_y[cpu-default]",  # not collected this run, still on disk
        "test_deleted.py::test_z[cpu-default]",
        "doc.txt::doc.txt",
    ]
    assert collected.gone(keys, tmp_path) == [
        "test_a.py::TestK::test_gone[cpu-default]",
        "test_a.py::test_renamed[cpu-default]",
        "test_deleted.py::test_z[cpu-default]",
    ]
    # ids from another --rootdir: none of their files was collected, so nothing is told
    assert collected.gone(["other/test_a.py::test_kept[cpu-default]"], tmp_path) == []
    # a file mixing ids of two rootdirs (ninth user trial): the other rootdir's
    # files are in folders this run collected nothing from, so they are not called deleted
    mixed = ["test_a.py::test_kept[cpu-default]", "tests/test_a.py::test_kept[cpu-default]"]
    assert collected.gone(mixed, tmp_path) == []


def test_collected_tests_tell_ids_a_whole_collection_of_their_test_no_longer_has(
    tmp_path: Path,
) -> None:
    module = types.ModuleType("test_a")
    module.test_x = lambda: None  # type: ignore[attr-defined]
    collected = CollectedTests()
    collected.note("test_a.py::test_x[cpu-default-4]", module, "cpu")
    keys = ["test_a.py::test_x[cpu-default-4]", "test_a.py::test_x[cpu-default-8]"]
    keys += ["test_a.py::test_x[cuda-default-8]", "test_a.py::test_x[cpu-broken]"]
    devices = dict.fromkeys(keys[:2], "cpu") | {keys[2]: "cuda:0", keys[3]: None}
    # unless told the collection was whole (no ids named, no --lf), nothing is dropped
    assert collected.gone(keys, tmp_path, devices) == []
    collected.whole = True
    # not a device the run collected, nor an entry of no known device (unreadable)
    assert collected.gone(keys, tmp_path, devices) == ["test_a.py::test_x[cpu-default-8]"]
