"""The run's reports: each case's plain data (`pytest_tweak.results`), the JSON, markdown and
HTML reports, the tuning table and the JUnit properties: rendered directly from made-up cases,
and written by real runs."""

from __future__ import annotations

import dataclasses
import json
import os
import xml.etree.ElementTree as ET
from html.parser import HTMLParser
from importlib import resources
from pathlib import Path
from typing import Any

import jsonschema
import pytest
import torch
from torch.torch_version import TorchVersion

from pytest_tweak.files import write_atomic
from pytest_tweak.options import TweakOptions
from pytest_tweak.reports import write_reports
from pytest_tweak.reports.html import html_report
from pytest_tweak.reports.json import json_report
from pytest_tweak.reports.markdown import markdown_report
from pytest_tweak.results import (
    REPORT_ATTRIBUTE,
    SCHEMA_VERSION,
    BaselineFigures,
    CaseResult,
    baseline_entry,
    junit_properties,
    suite_tuning,
)
from pytest_tweak.runstate import SaveOutcome
from pytest_tweak.stats import Summary
from pytest_tweak.terminal import (
    baseline_file_lines,
    failure_message,
    summary_lines,
    tuning_lines,
)
from pytest_tweak.verdict import Change, Judging, Status, Verdict

ENVIRONMENT = {"python": "3.11.7", "torch": "2.13.0+cpu", "cpu": "Test CPU", "threads": 1}
SETTINGS = {
    "devices": ["cpu"],
    "baseline": "tweak-baselines.json",
    "save": False,
    "metric": "normalized",
    "threshold_pct": {"cpu": 5.0},
    "run_noise_pct": {"cpu": 3.0},
}


#: A --tweak-save run's options, saving to ``b.json``.
SAVE_TO_B = TweakOptions(devices=("cpu",), baseline_path=Path("b.json"), save=True, judging={})


def _schema() -> dict[str, Any]:
    text = resources.files("pytest_tweak").joinpath("report.schema.json").read_text("utf-8")
    schema: dict[str, Any] = json.loads(text)
    return schema


def _validate(document: Any) -> None:
    jsonschema.Draft202012Validator.check_schema(_schema())
    jsonschema.validate(document, _schema(), cls=jsonschema.Draft202012Validator)


def _summary(median: float, spread: float = 0.02) -> Summary:
    return Summary.of([median * (1 + spread * k) for k in (-2, -1, 0, 1, 2, 0.5, -0.5)])


def _case(
    test: str,
    config: str,
    median: float | None,
    *,
    device: str = "cpu",
    status: Status = Status.NEW,
    baseline_s: float | None = None,
    graph_breaks: int = 0,
    accurate: bool = True,
    problems: tuple[str, ...] = (),
) -> CaseResult:
    change = None
    if baseline_s is not None and median is not None:
        pct = (median / baseline_s - 1) * 100
        change = Change("time", median, baseline_s, pct, pct - 3, pct + 3, 3.0, 1, status)
    return CaseResult(
        nodeid=f"test_m.py::{test}[{device}-{config}]",
        device=device,
        device_name="Test CPU" if device == "cpu" else "Test GPU",
        backend="inductor",
        config_id=config,
        config={"mode": None if config == "default" else config},
        outcome="failed" if status is Status.REGRESSED else "passed",
        timing=None if median is None else _summary(median),
        eager=None if median is None else _summary(median * 2),
        speedup=None if median is None else _summary(2.0),
        graph_breaks=graph_breaks,
        compile={
            "time_s": 1.5,
            "dynamo_s": 0.5,
            "inductor_s": 1.0,
            "frames": 1,
            "cache": {"state": "hit", "hits": 1, "misses": 0},
            "cold": False,
        },
        accuracy={
            "checked": True,
            "ok": accurate,
            "max_abs": 0.0 if accurate else 1.0,
            "max_rel": 0.0,
            "rtol": 1e-4,
            "atol": 1e-5,
            "where": None,
            "problem": None if accurate else "too far",
            "tensors": 1,
        },
        baseline=None
        if baseline_s is None
        else BaselineFigures(median_s=baseline_s, runs=1, graph_breaks=0, recompiles=0),
        verdict=Verdict(status, change=change, problems=problems),
        environment=ENVIRONMENT,
    )


def _cases() -> list[CaseResult]:
    """A passing test with two configs on two devices, then a regressed one."""
    return [
        _case("test_fine", "default", 2e-5),
        _case("test_fine", "max-autotune", 1e-5),
        _case("test_fine", "default", 4e-6, device="cuda"),
        _case("test_fine", "max-autotune", 4.1e-6, device="cuda"),
        _case(
            "test_slow",
            "default",
            3e-5,
            status=Status.REGRESSED,
            baseline_s=2e-5,
            graph_breaks=1,
            problems=("graph breaks 1 vs baseline 0 (+1)",),
        ),
    ]


# -- the plain data -----------------------------------------------------------------------


def test_a_case_survives_its_dict_form_and_json() -> None:
    for case in _cases():
        data = json.loads(json.dumps(case.to_dict(), allow_nan=False))
        assert CaseResult.from_dict(data) == case


def test_a_busy_or_unstable_case_says_so_in_its_plain_form_and_the_json_report() -> None:
    """The machine's load and a step in the samples reach the report files and xdist's
    controller, not only the verdict's notes."""
    case = dataclasses.replace(
        _cases()[0], load_share=0.42, unstable="the time stepped from 1.0 ms to 2.0 ms"
    )
    data = json.loads(json.dumps(case.to_dict(), allow_nan=False))
    assert (data["load_share"], data["unstable"]) == (0.42, case.unstable)
    assert CaseResult.from_dict(data) == case
    # the terminal says it too, for a case no verdict's notes speak for (a new one)
    assert case.verdict.status is not Status.INCONCLUSIVE
    assert "  unstable measurement: the time stepped from 1.0 ms to 2.0 ms" in summary_lines([case])
    line = "unstable measurement: the time stepped from 1.0 ms to 2.0 ms"
    assert f"- `cpu-default`: {line}" in markdown_report([case]).splitlines()
    assert html_report([case], ENVIRONMENT).count(line) == 1
    document = json_report([case], ENVIRONMENT, SETTINGS)
    _validate(document)
    bad = json.loads(json.dumps(document))
    bad["cases"][0]["load_share"] = 1.5
    with pytest.raises(jsonschema.ValidationError):
        _validate(bad)


def test_the_summary_keeps_the_users_own_parameters_in_the_test_column() -> None:
    """A test parametrized by its suite (``batch``) has one summary row per parameter and
    config: each row names its parameter, as the tuning table and the reports do (found in
    the fifth user trial: the rows of batch 1 and 16 read alike)."""
    one, sixteen = (
        dataclasses.replace(
            _case("test_mlp", "default", 1e-3), nodeid=f"test_m.py::test_mlp[cpu-default-{b}]"
        )
        for b in (1, 16)
    )
    rows = [line.split()[0] for line in summary_lines([one, sixteen])[2:4]]
    assert rows == ["test_m.py::test_mlp[1]", "test_m.py::test_mlp[16]"]
    # a test without parameters of its own reads as before
    assert summary_lines([_case("test_plain", "default", 1e-3)])[2].split()[0] == (
        "test_m.py::test_plain"
    )


def test_an_unstable_compared_case_says_so_once_in_each_report() -> None:
    """Compared with a baseline, an unstable case is inconclusive and its verdict's notes lead
    with the step; the summary, the markdown and the HTML say it once, not twice."""
    line = "unstable measurement: the time stepped from 1.0 ms to 2.0 ms"
    case = dataclasses.replace(
        _cases()[0],
        unstable="the time stepped from 1.0 ms to 2.0 ms",
        verdict=Verdict(Status.INCONCLUSIVE, notes=(line, "measure longer")),
    )
    assert sum(line in text for text in summary_lines([case])) == 1
    markdown = markdown_report([case]).splitlines()
    assert [text for text in markdown if line in text] == [f"- `cpu-default`: {line}"]
    assert "- `cpu-default`: measure longer" in markdown
    assert html_report([case], ENVIRONMENT).count(line) == 1


def test_a_save_names_the_cases_it_saved_from_an_unstable_measurement() -> None:
    """A baseline of a stepped series is suspect: the summary says which saved cases stepped,
    why, and the command that records just them again."""
    steady, stepped = _cases()[:2]
    stepped = dataclasses.replace(stepped, unstable="the time stepped from 1 ms to 2 ms")
    saved = {
        case.nodeid: entry
        for case in (steady, stepped)
        if (entry := baseline_entry(case)) is not None
    }
    assert len(saved) == 2
    lines = baseline_file_lines(SAVE_TO_B, {}, SaveOutcome(saved), None)
    assert lines[0] == ("pytest-tweak: saved 2 case(s) to b.json (kept 0 other entries)", None)
    text, colour = lines[1]
    assert colour == "yellow" and len(lines) == 2
    assert text.startswith(
        f"pytest-tweak: 1 saved case(s) measured unstable, so their speed baseline is suspect: "
        f"{stepped.nodeid} (the time stepped from 1 ms to 2 ms). Record them again"
    )
    assert f"`pytest '{stepped.nodeid}' --tweak-save`" in text and steady.nodeid not in text
    # pytest started below the rootdir: the command names the test from there
    below = dataclasses.replace(SAVE_TO_B, test_root="..")
    text = baseline_file_lines(below, {}, SaveOutcome(saved), None)[1][0]
    assert f"`pytest '../{stepped.nodeid}' --tweak-save`" in text
    # nothing is said where every saved case was steady
    del saved[stepped.nodeid]
    assert len(baseline_file_lines(SAVE_TO_B, {}, SaveOutcome(saved), None)) == 1
    # a measured case whose test failed is named as not saved
    unsaved = baseline_file_lines(SAVE_TO_B, {}, SaveOutcome(saved, 3, ("t.py::test_x",)), None)
    assert unsaved == [
        ("pytest-tweak: saved 1 case(s) to b.json (kept 3 other entries)", None),
        (
            "pytest-tweak: not saved: 1 measured case(s) whose test did not pass (a baseline "
            "records passing tests only): t.py::test_x",
            "yellow",
        ),
    ]
    # a suite of hundreds of cases gets ten names and a count, not a line of all of them
    many = tuple(f"t.py::test_x[{i:03}]" for i in range(250))
    text = baseline_file_lines(SAVE_TO_B, {}, SaveOutcome(saved, 0, many), None)[1][0]
    assert text.endswith(
        "t.py::test_x[008], t.py::test_x[009], and 240 more (--tweak-json lists all)"
    )
    assert "test_x[010]" not in text


def test_a_failures_first_line_leads_with_the_verdict_and_its_figure() -> None:
    """pytest's short test summary shows a failure's first line only, after the test id: it
    carries the verdict, the change with its noise and threshold (or the first failure), and
    how many more problems follow."""
    judging = Judging(threshold_pct=5.0, run_noise_pct=2.0)
    slow = _case(
        "test_slow",
        "default",
        3e-5,
        status=Status.REGRESSED,
        baseline_s=2e-5,
        problems=("time: ...", "graph breaks 1 vs baseline 0 (+1)"),
    )
    lines = failure_message(slow, "b.json", judging).splitlines()
    # a graph break leads the time it costs (fifteenth user trial: the headline read "slower")
    assert lines[0] == (
        "regressed: graph breaks 1 vs baseline 0 (+1) (and 1 more below) [pytest-tweak]"
    )
    assert lines[1] == f"pytest-tweak: {slow.nodeid} regressed against b.json:"
    assert lines[-1].startswith("  A test that asserts its own graph breaks (`assert result.")
    only_time = dataclasses.replace(
        slow, verdict=dataclasses.replace(slow.verdict, problems=("time: ...",))
    )
    first = failure_message(only_time, "b.json", judging).splitlines()[0]
    assert first == "regressed: time +50.0% ±3.0% (threshold 5%) [pytest-tweak]"
    # the record-anew command replaces a five-run entry by one run: say to add the others
    assert slow.verdict.change is not None
    five = dataclasses.replace(
        only_time,
        verdict=dataclasses.replace(
            only_time.verdict, change=dataclasses.replace(slow.verdict.change, runs=5)
        ),
    )
    last = failure_message(five, "b.json", judging).splitlines()[-1]
    assert last == (
        "  Then run it 4 more time(s) with --tweak-append added, so that the entry has 5 runs "
        "again: one run gates only changes larger than its noise."
    )
    limited = dataclasses.replace(
        slow, verdict=Verdict(Status.NEW, failures=("graph breaks 1 exceed the limit 0",))
    )
    first = failure_message(limited, "b.json", judging).splitlines()[0]
    assert first == "failed, whatever its speed: graph breaks 1 exceed the limit 0 [pytest-tweak]"
    assert slow.verdict.change is not None
    undecided = dataclasses.replace(
        slow,
        verdict=Verdict(
            Status.INCONCLUSIVE,
            change=dataclasses.replace(slow.verdict.change, status=Status.INCONCLUSIVE),
            fail_inconclusive=True,
        ),
    )
    first = failure_message(undecided, "b.json", judging).splitlines()[0]
    assert first == "inconclusive: time +50.0% ±3.0% (threshold 5%) [pytest-tweak]"
    # a verdict of a pytest_tweak_verdict hook without a change or a problem keeps its word
    ruled = dataclasses.replace(slow, verdict=Verdict(Status.INCONCLUSIVE, fail_inconclusive=True))
    first = failure_message(ruled, "b.json", judging).splitlines()[0]
    assert first == "inconclusive: see below [pytest-tweak]"
    # regressed in memory while its time is inconclusive: the memory leads, and the summary's
    # verdict names it (a user read "+71.9% ±139.0%  regressed" as a slower model)
    memory = "peak memory 24.6 KiB vs baseline 14 KiB: +75%, threshold 20%"
    grew = dataclasses.replace(
        undecided,
        verdict=Verdict(
            Status.REGRESSED,
            change=undecided.verdict.change,
            problems=(memory,),
        ),
    )
    first = failure_message(grew, "b.json", judging).splitlines()[0]
    assert first == f"regressed: {memory} [pytest-tweak]"
    (row,) = [line for line in summary_lines([grew]) if "test_slow" in line]
    assert row.endswith("regressed (peak memory)")
    (row,) = [line for line in summary_lines([slow]) if "test_slow" in line]
    assert row.endswith(" regressed")  # a slower time needs no word


def test_a_case_dict_without_a_field_names_it() -> None:
    data = _cases()[0].to_dict()
    del data["verdict"]
    with pytest.raises(ValueError, match="missing field 'verdict'"):
        CaseResult.from_dict(data)


def test_the_case_attribute_survives_the_serialization_xdist_uses(
    pytester: pytest.Pytester,
) -> None:
    """pytest-xdist sends a worker's reports through pytest_report_to_serializable and
    rebuilds them with pytest_report_from_serializable: every report attribute travels."""
    config = pytester.parseconfigure()
    report = pytest.TestReport("t.py::test_x", ("t.py", 0, "test_x"), {}, "passed", None, "call")
    case = _cases()[-1].to_dict()
    setattr(report, REPORT_ATTRIBUTE, case)
    data = config.hook.pytest_report_to_serializable(config=config, report=report)
    back = config.hook.pytest_report_from_serializable(
        config=config, data=json.loads(json.dumps(data))
    )
    assert getattr(back, REPORT_ATTRIBUTE) == case
    assert CaseResult.from_dict(getattr(back, REPORT_ATTRIBUTE)) == _cases()[-1]


def test_junit_properties_are_scalars_named_tweak() -> None:
    properties = dict(junit_properties(_cases()[-1]))
    assert properties["tweak_verdict"] == "regressed"
    assert properties["tweak_graph_breaks"] == 1
    assert properties["tweak_change_pct"] == pytest.approx(50.0)
    assert properties["tweak_median_s"] == pytest.approx(3e-5)
    assert properties["tweak_speedup"] == pytest.approx(2.0)
    assert all(name.startswith("tweak_") for name in properties)
    assert all(isinstance(v, (str, int, float)) for v in properties.values())


# -- tuning -------------------------------------------------------------------------------


def test_tuning_picks_the_fastest_config_per_test_and_device_with_its_margin() -> None:
    rows = {(row.test, row.device): row for row in suite_tuning(_cases())}
    cpu = rows[("test_m.py::test_fine", "cpu")]
    assert cpu.best.config_id == "max-autotune"
    assert cpu.runner_up is not None and cpu.runner_up.config_id == "default"
    assert cpu.margin_pct == pytest.approx(100.0)
    assert cpu.clear  # 2x apart, 2 % spread: no overlap
    cuda = rows[("test_m.py::test_fine", "cuda")]
    assert cuda.best.config_id == "default"
    assert cuda.margin_pct == pytest.approx(2.5)
    assert not cuda.clear  # 2.5 % apart within a few percent of noise
    alone = rows[("test_m.py::test_slow", "cpu")]
    assert alone.runner_up is None and alone.margin_pct is None
    lines = tuning_lines(list(rows.values()))
    assert lines[0].split() == ["test", "device", "fastest", "config", "median", "next", "margin"]
    assert any("inductor:max-autotune" in line and "+100.0%" in line for line in lines)
    assert any("+2.5% (within noise)" in line for line in lines)


def test_tuning_skips_wrong_untimed_and_over_limit_cases() -> None:
    breaking = _case("test_t", "fast-but-breaks", 1e-7, graph_breaks=2)
    over = "graph breaks 2 exceed the limit 0 (set by @pytest.mark.tweak_limits)"
    cases = [
        _case("test_t", "fast-but-wrong", 1e-6, accurate=False),
        _case("test_t", "untimed", None),
        dataclasses.replace(breaking, over_limit=(over,)),
        _case("test_t", "default", 2e-5),
    ]
    (row,) = suite_tuning(cases)
    assert row.best.config_id == "default" and row.configs == 1
    # without the limit the breaking config is a fair pick: it is the fastest
    (free,) = suite_tuning([breaking, cases[-1]])
    assert free.best.config_id == "fast-but-breaks" and free.configs == 2
    assert tuning_lines([row]) == []  # nothing to choose between: no table


def test_tuning_ranks_on_the_normalized_figure_the_gate_compares() -> None:
    """Cases are timed at different moments: a machine's drift between them decided a
    ranking of plain latencies, which flipped between unchanged runs and was called clear
    (eleventh trial: 13.2 % apart in latency, 4.8 % normalized)."""
    # measured while the machine slowed down: the later case's latency is worse, its
    # normalized figure (latency over the reference timed beside it) better
    early = dataclasses.replace(_case("test_d", "default", 4.0e-4), normalized=_summary(1.46))
    late = dataclasses.replace(_case("test_d", "max-autotune", 4.5e-4), normalized=_summary(1.40))
    (row,) = suite_tuning([early, late])
    assert row.basis == "normalized" and row.best is late
    assert row.margin_pct == pytest.approx((1.46 / 1.40 - 1) * 100)
    assert row.to_dict()["basis"] == "normalized"
    # a case without a normalized figure: the group is ranked by latency
    (plain,) = suite_tuning([early, _case("test_d", "max-autotune", 4.5e-4)])
    assert plain.basis == "latency" and plain.best is early


# -- the markdown and JSON reports --------------------------------------------------------


def test_markdown_puts_the_regressed_test_first_with_its_table_and_problems() -> None:
    text = markdown_report(_cases())
    lines = text.splitlines()
    assert lines[0] == "## pytest-tweak"
    assert (
        "5 case(s) in 2 test(s); failed: 1 case(s) in 1 test(s); verdicts: 4 new, 1 regressed"
        in text
    )
    slow = lines.index("### ❌ `test_m.py::test_slow`: regressed")
    fine = lines.index("### ✅ `test_m.py::test_fine`: new")
    assert slow < fine
    header = lines[slow + 2]
    assert header == (
        "| config | device | median | vs baseline | speed-up | graph breaks | recompiles "
        "| verdict |"
    )
    row = lines[slow + 4]
    assert row.startswith("| `inductor:default` | cpu | 30 us ±")
    assert "| +50.0% ±3.0% | 2.00x | 1 (was 0) | 0 | **regressed** (test failed) |" in row
    assert "- `cpu-default`: graph breaks 1 vs baseline 0 (+1)" in lines
    assert "### Tuning: the fastest config per test and device" in lines


def test_markdown_escapes_pipes_in_cells() -> None:
    case = _case("test_p", "a|b", 1e-5)
    assert "`inductor:a\\|b`" in markdown_report([case])


def test_markdown_says_a_test_failed_on_its_own_beside_a_verdict_that_passed() -> None:
    """The terminal said "new, test failed" for a test whose own assert failed after
    tweak.benchmark(); the markdown row said only "new" (ninth user trial)."""
    case = dataclasses.replace(_case("test_own", "default", 1e-5), outcome="failed")
    row = next(line for line in markdown_report([case]).splitlines() if "inductor:default" in line)
    assert row.rstrip().endswith("| new, **test failed** |")


def test_reports_say_a_test_was_skipped_or_xfailed_after_its_case_was_measured() -> None:
    """A test skipped (or xfailed) after tweak.benchmark() read plain "new", while a failed
    one read "new, test failed" (thirteenth trial)."""
    case = dataclasses.replace(_case("test_own", "default", 1e-5), outcome="skipped")
    row = next(line for line in markdown_report([case]).splitlines() if "inductor:default" in line)
    assert row.rstrip().endswith("| new, test skipped/xfailed |")
    assert "new, test skipped/xfailed" in "\n".join(summary_lines([case]))


def test_markdown_code_spans_hold_test_ids_with_backticks_and_html_whole() -> None:
    case = _case("test_p[a`b<i>x</i>]", "default", 1e-5)
    text = markdown_report([case])
    heading = next(line for line in text.splitlines() if line.startswith("### "))
    assert heading.startswith("### ✅ ``test_m.py::test_p[a`b<i>x</i>]")
    assert heading.endswith("``: new") and heading.count("``") == 2


def test_the_json_report_matches_its_schema() -> None:
    document = json_report(_cases(), ENVIRONMENT, SETTINGS)
    _validate(document)
    assert document["schema_version"] == SCHEMA_VERSION
    assert document["summary"] == {
        "cases": 5,
        "failed": 1,
        "statuses": {"new": 4, "regressed": 1},
        "gated": 1,
        "ungated": None,
    }
    assert [c["config_id"] for c in document["cases"]][:2] == ["default", "max-autotune"]
    assert len(document["tuning"]) == 3
    bad = json.loads(json.dumps(document))
    bad["cases"][0]["verdict"]["status"] = "slower"
    with pytest.raises(jsonschema.ValidationError):
        _validate(bad)


def test_a_case_without_figures_has_them_null_in_every_report() -> None:
    """A case that failed before it compiled (its model raised) had ``compile: {}``, which the
    schema refuses, and 0 graph breaks and recompiles, which it never had; an untimed case
    (--benchmark-disable) had ``iterations: 0``, under the schema's minimum (seventh trial)."""
    broken = CaseResult.of_error(
        "test_m.py::test_boom[cpu-default]",
        device="cpu",
        backend="inductor",
        config_id="default",
        config={"mode": None},
        error="inductor-default on cpu: ValueError: the model itself failed",
        fingerprint=ENVIRONMENT,
    )
    untimed = dataclasses.replace(
        _case("test_off", "default", None, status=Status.NOT_COMPARED), iterations=0
    )
    document = json_report([broken, untimed], ENVIRONMENT, SETTINGS)
    _validate(document)
    failed, off = document["cases"]
    assert failed["compile"] is None and failed["iterations"] is None
    assert (failed["graph_breaks"], failed["recompiles"], failed["graph_count"]) == (None,) * 3
    assert off["iterations"] is None and off["graph_breaks"] == 0
    assert CaseResult.from_dict(failed).to_dict() == failed  # the xdist round trip keeps it
    names = dict(junit_properties(broken))
    assert "tweak_graph_breaks" not in names and "tweak_recompiles" not in names
    row = next(line for line in summary_lines([broken]) if "test_boom" in line).split()
    assert row[4:8] == ["-"] * 4  # median, speed-up, graph breaks, recompiles (were 0 0)


def test_a_case_note_names_the_file_where_two_files_share_the_test_name() -> None:
    """Two files' ``test_alpha`` got two notes headed ``test_alpha[cpu-default]:`` alike."""
    unstable = "the time stepped from 1.0 ms to 2.0 ms"
    one = dataclasses.replace(_case("test_alpha", "default", 1e-3), unstable=unstable)
    two = dataclasses.replace(one, nodeid="test_other.py::test_alpha[cpu-default]")
    lone = dataclasses.replace(_case("test_beta", "default", 1e-3), unstable=unstable)
    lines = summary_lines([one, two, lone])
    assert "test_m.py::test_alpha[cpu-default]:" in lines
    assert "test_other.py::test_alpha[cpu-default]:" in lines
    assert "test_beta[cpu-default]:" in lines  # a name of its own stays short


def test_write_atomic_replaces_the_file_and_leaves_no_temporary(tmp_path: Path) -> None:
    target = tmp_path / "deep" / "report.json"
    write_atomic(target, "old")
    write_atomic(target, "new")
    assert target.read_text() == "new"
    assert os.listdir(target.parent) == ["report.json"]


# -- the HTML report ----------------------------------------------------------------------


class _Page(HTMLParser):
    """The structure of a report page: sections, charts, bars, markers, links and rows."""

    def __init__(self) -> None:
        super().__init__()
        self.sections: list[dict[str, Any]] = []
        self.urls: list[str] = []
        self.scripts = 0
        self.rows: list[list[str]] = []  # tags of each table row's cells
        self._in_section = False

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        attributes = dict(attrs)
        classes = (attributes.get("class") or "").split()
        for name in ("href", "src", "xlink:href", "action"):
            value = attributes.get(name)
            if value is not None:
                self.urls.append(value)
        if tag == "script":
            self.scripts += 1
        if tag == "tr":
            self.rows.append([])
        if tag in ("td", "th") and self.rows:
            self.rows[-1].append(tag)
        if tag == "section" and "test" in classes:
            self.sections.append(
                {"test": attributes.get("data-test"), "devices": [], "bars": {}, "baselines": 0}
            )
        if not self.sections:
            return
        section = self.sections[-1]
        if tag == "div" and "device" in classes:
            section["devices"].append(attributes.get("data-device"))
        if tag == "svg":
            section["bars"][section["devices"][-1]] = []
        if tag == "g" and "bar" in classes:
            section["bars"][section["devices"][-1]].append(attributes.get("data-config"))
        if tag == "line" and "baseline" in classes:
            section["baselines"] += 1


def _page(text: str) -> _Page:
    page = _Page()
    page.feed(text)
    page.close()
    return page


def test_the_html_page_has_a_section_per_test_and_a_chart_per_device() -> None:
    text = html_report(_cases(), ENVIRONMENT)
    page = _page(text)
    assert [s["test"] for s in page.sections] == ["test_m.py::test_slow", "test_m.py::test_fine"]
    slow, fine = page.sections
    assert slow["devices"] == ["cpu"] and slow["bars"] == {"cpu": ["default"]}
    assert slow["baselines"] == 1
    assert fine["devices"] == ["cpu", "cuda"]
    assert fine["bars"] == {"cpu": ["default", "max-autotune"], "cuda": ["default", "max-autotune"]}
    assert fine["baselines"] == 0
    # self-contained: no script, no fetched resource, only links within the page
    assert page.scripts == 0
    assert all(url.startswith("#") for url in page.urls)
    assert "http://" not in text and "https://" not in text
    assert "<style>" in text and "<svg" in text
    assert "Tuning on cpu: fastest is <code>inductor:max-autotune</code>, 100.0% ahead" in text


def test_the_html_chart_names_the_baseline_tick_as_what_it_is() -> None:
    """The tick is the geometric mean of the baseline's run medians, not a median (found in
    the fifth user trial: one noisy run of five moved it 5 % from their median)."""
    (slow,) = [case for case in _cases() if case.baseline is not None]
    assert slow.baseline is not None
    five = dataclasses.replace(slow, baseline=dataclasses.replace(slow.baseline, runs=5))
    text = html_report([five], ENVIRONMENT)
    assert "(geometric mean of its 5 runs' medians)</title>" in text
    assert "baseline median" not in text
    assert "(its run's median)</title>" in html_report([slow], ENVIRONMENT)


def test_the_html_table_rows_are_as_wide_as_their_headers() -> None:
    text = html_report(_cases(), ENVIRONMENT)
    for table in text.split("<table>")[1:]:
        rows = _page("<table>" + table.split("</table>")[0] + "</table>").rows
        assert len({len(row) for row in rows}) == 1, rows


def test_the_html_page_escapes_what_the_user_named() -> None:
    case = _case("test_x", "<b>bold</b>", 1e-5)
    text = html_report([case], {"cpu": "<script>alert(1)</script>"})
    assert "<b>bold</b>" not in text and "&lt;b&gt;bold&lt;/b&gt;" in text
    assert _page(text).scripts == 0


def test_a_case_without_timing_gets_no_chart() -> None:
    text = html_report([_case("test_x", "default", None)], ENVIRONMENT)
    page = _page(text)
    assert page.sections[0]["bars"] == {}
    assert "No timing" in text


# -- real runs ----------------------------------------------------------------------------

SUITE = """
import os, pytest, torch
from pytest_tweak import TorchInductorBackendConfig

class Net(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.a = torch.nn.Linear(16, 16)

    def forward(self, x):
        x = torch.relu(self.a(x))
        if os.environ.get("TWEAK_BREAK"):
            torch._dynamo.graph_break()   # the "pull request": one more graph break
        return self.a(x)

def test_steady(tweak):
    tweak.benchmark(torch.nn.Linear(16, 16).eval(), torch.randn(4, 16))

@pytest.mark.tweak_configs(
    TorchInductorBackendConfig(), TorchInductorBackendConfig(dynamic=False)
)
def test_net(tweak):
    tweak.benchmark(Net().eval(), torch.randn(4, 16))
"""


def _junit_properties(path: Path) -> dict[str, dict[str, str]]:
    found = {}
    for case in ET.parse(path).getroot().iter("testcase"):
        name = case.get("name", "")
        found[name] = {p.get("name", ""): p.get("value", "") for p in case.iter("property")}
    return found


def _outputs(pytester: pytest.Pytester) -> list[str]:
    out = pytester.path / "out"
    return [
        f"--tweak-json={out / 'report.json'}",
        f"--tweak-markdown={out / 'report.md'}",
        f"--tweak-html={out / 'report.html'}",
        f"--junitxml={out / 'junit.xml'}",
    ]


def test_an_output_without_tensors_reads_no_tensor_not_ok() -> None:
    """A model returning None compared equal with eager and read "ok", though nothing showed
    the compiled code did the model's work (eighth user trial)."""
    case = _case("test_none", "default", 0.001)
    case = dataclasses.replace(case, accuracy={**(case.accuracy or {}), "tensors": 0})
    (row,) = [line for line in summary_lines([case]) if "test_none" in line]
    assert " no tensor " in row and " ok " not in row


def test_a_markdown_report_to_the_step_summary_itself_lands_there_once(tmp_path: Path) -> None:
    """``--tweak-markdown="$GITHUB_STEP_SUMMARY"`` (the CI example did it) wrote the report and
    then appended it again: the job's page showed it twice (eighth user trial)."""
    summary = tmp_path / "step_summary.md"
    options = dataclasses.replace(SAVE_TO_B, save=False, markdown_path=summary)
    done = write_reports(_cases(), {}, options, step_summary=str(summary))
    assert done == [(True, f"markdown report written to {summary}")]
    assert summary.read_text() == markdown_report(_cases(), suite_tuning(_cases()))
    elsewhere = tmp_path / "report.md"  # another file: both get it
    options = dataclasses.replace(options, markdown_path=elsewhere)
    write_reports(_cases(), {}, options, step_summary=str(summary))
    assert summary.read_text().count("## pytest-tweak") == 2
    assert elsewhere.read_text().count("## pytest-tweak") == 1


def test_an_unwritable_step_summary_stops_a_tweak_run_before_its_first_case(
    pytester: pytest.Pytester, run_suite, monkeypatch: pytest.MonkeyPatch
) -> None:
    pytester.makepyfile(test_suite=SUITE, test_plain="def test_plain():\n    assert True\n")
    summary = pytester.path / "no-such-folder" / "summary.md"
    monkeypatch.setenv("GITHUB_STEP_SUMMARY", str(summary))
    result = run_suite("test_suite.py")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(
        [
            f"ERROR: pytest-tweak: $GITHUB_STEP_SUMMARY={summary}: the markdown report cannot be "
            f"appended there: its folder {summary.parent} does not exist; point it at a "
            "writable file, or unset it"
        ]
    )
    assert "passed" not in result.stdout.str()  # stopped before a case ran
    run_suite("test_plain.py").assert_outcomes(passed=1)  # a suite without tweak: not its business
    # no case can run here, so nothing would be appended: no reason to stop
    skipped = run_suite("test_suite.py", "--tweak-device=xpu", "--tweak-allow-missing-device")
    skipped.assert_outcomes(skipped=3)


def test_a_run_writes_every_report(
    pytester: pytest.Pytester, run_suite, monkeypatch: pytest.MonkeyPatch
) -> None:
    pytester.makepyfile(test_suite=SUITE)
    step_summary = pytester.path / "step_summary.md"
    step_summary.write_text("earlier step\n")
    monkeypatch.setenv("GITHUB_STEP_SUMMARY", str(step_summary))
    result = run_suite(*_outputs(pytester))
    result.assert_outcomes(passed=3)
    out = pytester.path / "out"
    result.stdout.fnmatch_lines(
        [
            "*- tweak tuning -*",
            "test*device*fastest config*median*next*margin",
            "test_suite.py::test_steady*cpu*inductor:default*only timed config",
            "test_suite.py::test_net*cpu*inductor:*inductor:*%*",
            f"pytest-tweak: JSON report written to {out / 'report.json'}",
            f"pytest-tweak: markdown report written to {out / 'report.md'}",
            f"pytest-tweak: HTML report written to {out / 'report.html'}",
        ]
    )

    document = json.loads((out / "report.json").read_text())
    _validate(document)
    cases = {c["nodeid"]: c for c in document["cases"]}
    assert sorted(cases) == [
        "test_suite.py::test_net[cpu-default]",
        "test_suite.py::test_net[cpu-static]",
        "test_suite.py::test_steady[cpu-default]",
    ]
    case = cases["test_suite.py::test_net[cpu-static]"]
    assert case["device"] == "cpu" and case["device_name"] == document["environment"]["cpu"]
    assert case["config"]["dynamic"] is False
    assert case["verdict"]["status"] == "new" and case["baseline"] is None
    assert case["outcome"] == "passed"
    assert case["timing"]["n"] >= 5 and case["speedup"]["median"] > 0
    assert case["compile"]["cache"]["state"] in ("hit", "miss", "partial")
    assert document["environment"]["torch"].startswith("2.")
    assert {row["test"] for row in document["tuning"]} == {
        "test_suite.py::test_steady",
        "test_suite.py::test_net",
    }

    markdown = (out / "report.md").read_text()
    assert "3 case(s) in 2 test(s); none failed; verdicts: 3 new" in markdown
    assert "| `inductor:static` | cpu | " in markdown
    assert step_summary.read_text() == "earlier step\n" + markdown

    page = _page((out / "report.html").read_text())
    assert [s["test"] for s in page.sections] == [
        "test_suite.py::test_steady",
        "test_suite.py::test_net",
    ]
    assert page.sections[1]["bars"] == {"cpu": ["default", "static"]}
    assert page.scripts == 0 and all(url.startswith("#") for url in page.urls)

    properties = _junit_properties(out / "junit.xml")
    net = properties["test_net[cpu-static]"]
    assert net["tweak_config"] == "static" and net["tweak_verdict"] == "new"
    assert float(net["tweak_median_s"]) > 0 and float(net["tweak_speedup"]) > 0
    assert net["tweak_graph_breaks"] == "0" and net["tweak_recompiles"] == "0"
    assert "tweak_change_pct" not in net  # no baseline: no change
    assert not any(REPORT_ATTRIBUTE in names for names in properties.values())


def test_a_regressed_test_leads_every_report(
    pytester: pytest.Pytester, run_suite, monkeypatch: pytest.MonkeyPatch
) -> None:
    pytester.makepyfile(test_suite=SUITE)
    # only the graph break may fail: speed, compile time and memory are out of scope here
    lenient = (
        "--tweak-threshold=1000",
        "--tweak-compile-threshold=100000",
        "--tweak-memory-threshold=1000",
    )
    run_suite(*lenient, "--tweak-save").assert_outcomes(passed=3)
    monkeypatch.setenv("TWEAK_BREAK", "1")
    result = run_suite(*lenient, *_outputs(pytester))
    result.assert_outcomes(passed=1, failed=2)
    out = pytester.path / "out"

    document = json.loads((out / "report.json").read_text())
    _validate(document)
    cases = {c["nodeid"]: c for c in document["cases"]}
    broken = cases["test_suite.py::test_net[cpu-default]"]
    assert broken["verdict"]["status"] == "regressed" and broken["verdict"]["failed"]
    assert broken["outcome"] == "failed"
    assert broken["graph_breaks"] == 1 and broken["baseline"]["graph_breaks"] == 0
    assert any("graph breaks 1 vs baseline 0" in p for p in broken["verdict"]["problems"])
    (site,) = broken["break_reasons"]
    assert site["filename"].endswith("test_suite.py") and site["line"].startswith("torch._dynamo")
    # torch's own words on the break, where the installed torch has them
    has_registry = site["gb_id"] is not None
    if TorchVersion(torch.__version__) >= (2, 13):
        assert has_registry
    if has_registry:
        assert site["hint"] == "Remove the `torch._dynamo.graph_break()` call."
        assert site["link"].endswith(f"/{site['gb_id']}.html") and site["explanation"]
    assert broken["baseline"]["median_s"] > 0 and broken["verdict"]["change"] is not None
    assert document["summary"]["failed"] == 2

    markdown = (out / "report.md").read_text().splitlines()
    net = markdown.index("### ❌ `test_suite.py::test_net`: regressed")
    steady = next(i for i, line in enumerate(markdown) if "`test_suite.py::test_steady`" in line)
    assert net < steady  # ran second, reported first
    row = next(line for line in markdown[net:] if line.startswith("| `inductor:default`"))
    assert "| 1 (was 0) |" in row and "**regressed** (test failed)" in row
    details = [line for line in markdown[net:steady] if "graph break at" in line]
    assert len(details) == 2  # one per config
    detail = details[0]
    assert detail.startswith("- `cpu-default`: graph break at ") and "test_suite.py:" in detail
    if has_registry:
        assert f"— [{site['gb_id']}]({site['link']}) " in detail
        assert detail.endswith("hint: Remove the `torch._dynamo.graph_break()` call.")

    page = _page((out / "report.html").read_text())
    assert page.sections[0]["test"] == "test_suite.py::test_net"
    assert page.sections[0]["baselines"] == 2  # one marker per config's bar
    if has_registry:  # torch's page on the break, the one address outside the report
        assert [url for url in page.urls if not url.startswith("#")] == [site["link"]] * 2

    properties = _junit_properties(out / "junit.xml")["test_net[cpu-default]"]
    assert properties["tweak_verdict"] == "regressed"
    assert properties["tweak_graph_breaks"] == "1"
    assert "tweak_change_pct" in properties and "tweak_noise_pct" in properties


# -- bad values ---------------------------------------------------------------------------


@pytest.mark.parametrize("name", ["json", "markdown", "html"])
def test_a_folder_as_a_report_file_is_refused_before_any_test_runs(
    pytester: pytest.Pytester, name: str
) -> None:
    pytester.makepyfile("def test_x(): raise AssertionError('must not run')")
    pytester.mkdir("reports")
    result = pytester.runpytest(f"--tweak-{name}=reports")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(
        [
            f"ERROR: --tweak-{name}: cannot write the * report to *reports: "
            "it is a folder; name a file*"
        ]
    )


@pytest.mark.parametrize("name", ["json", "baseline"])
def test_a_path_ending_in_a_slash_is_refused_not_written_as_a_file(
    pytester: pytest.Pytester, name: str
) -> None:
    """``--tweak-json=out/`` wrote a file named ``out`` (thirteenth trial)."""
    pytester.makepyfile("def test_x(): raise AssertionError('must not run')")
    result = pytester.runpytest(f"--tweak-{name}=out/", "--tweak-save")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(
        [f"ERROR: --tweak-{name}: out/ ends with a slash, which names a folder; name a file in it"]
    )
    assert not (pytester.path / "out").exists()


def test_a_report_under_a_file_is_refused_naming_the_ini_option(
    pytester: pytest.Pytester,
) -> None:
    pytester.makepyfile("def test_x(): raise AssertionError('must not run')")
    pytester.path.joinpath("notes.txt").write_text("a file, not a folder")
    pytester.makeini("[pytest]\ntweak_html = notes.txt/report.html\n")
    result = pytester.runpytest()
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(
        [
            "ERROR: ini option tweak_html in tox.ini: cannot write the HTML report to "
            "*notes.txt/report.html: *notes.txt is not a writable folder"
        ]
    )


def test_report_paths_in_the_ini_file_are_relative_to_it(pytester: pytest.Pytester) -> None:
    pytester.mkdir("sub")
    pytester.makeini("[pytest]\ntweak_json = out/r.json\n")
    pytester.makepyfile("def test_x(): pass")
    config = pytester.parseconfigure(pytester.path / "sub")
    from pytest_tweak.plugin import _STATE_KEY

    assert config.stash[_STATE_KEY].options.json_path == pytester.path / "out" / "r.json"


def test_a_run_that_selected_cases_writes_the_reports_even_if_none_ran(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A run whose tweak cases all skipped writes the files asked for (a CI job's artifacts
    are there), with no cases; a run that selects no tweak case (other tests, ``-k``), a
    ``--collect-only`` and a run stopped by a collection error leave an earlier report as it
    was, as pytest-benchmark does ("Not saving anything")."""
    pytester.makepyfile(
        test_gpu="import pytest\n@pytest.mark.cuda\ndef test_gpu(tweak): pass\n",
        test_unit="def test_x(): pass",
    )
    step_summary = pytester.path / "step_summary.md"
    monkeypatch.setenv("GITHUB_STEP_SUMMARY", str(step_summary))
    args = ("--tweak-json=r.json", "--tweak-markdown=r.md")
    result = pytester.runpytest(*args)
    result.assert_outcomes(passed=1, skipped=1)
    result.stdout.fnmatch_lines(["tweak: *, json=*r.json, markdown=*r.md"])
    document = json.loads((pytester.path / "r.json").read_text())
    _validate(document)
    assert document["cases"] == [] and document["summary"]["cases"] == 0
    assert "No pytest-tweak case ran." in (pytester.path / "r.md").read_text()
    assert not step_summary.exists()  # a suite without cases leaves the job summary alone
    for path in ("r.json", "r.md"):
        (pytester.path / path).write_text("an earlier report")
    for extra in (("test_unit.py",), ("-k", "test_x"), ("--collect-only",)):
        result = pytester.runpytest(*args, *extra)
        assert result.ret == pytest.ExitCode.OK, extra
        assert "report written" not in result.stdout.str(), extra
    pytester.makepyfile(test_broken="this is not python")
    result = pytester.runpytest(*args)
    assert result.ret == pytest.ExitCode.INTERRUPTED
    for path in ("r.json", "r.md"):
        assert (pytester.path / path).read_text() == "an earlier report"


def test_the_chart_axis_has_round_ticks_up_to_the_slowest_figure() -> None:
    page = html_report([_case("test_x", "default", 8e-6)], ENVIRONMENT)  # eager 16 us
    svg = page.split("<svg", 1)[1].split("</svg>", 1)[0]
    labels = [part.split("</text>")[0] for part in svg.split('text-anchor="middle">')[1:]]
    assert labels == ["0", "5 us", "10 us", "15 us"]


def test_a_report_that_cannot_be_written_at_the_end_is_named_and_fails_the_run(
    pytester: pytest.Pytester,
) -> None:
    # the path is fine when the run starts; the test then puts a folder in its place (a
    # pytest-tweak test, skipped here, makes the run one that writes its reports)
    pytester.makepyfile(
        "import pytest\n@pytest.mark.cuda\ndef test_gpu(tweak): pass\n"
        "def test_x(tmp_path):\n    __import__('os').mkdir('r.json')\n"
    )
    result = pytester.runpytest("--tweak-json=r.json", "--tweak-device=cpu")
    result.assert_outcomes(passed=1, skipped=1)
    assert result.ret == pytest.ExitCode.TESTS_FAILED
    result.stdout.fnmatch_lines(["pytest-tweak: ERROR: JSON report not written to *r.json: *"])
    assert [p.name for p in pytester.path.iterdir() if p.name.startswith(".r.json")] == []


def test_a_test_parametrized_by_its_user_keeps_its_parameters_in_the_tuning_key() -> None:
    """``test_x[cpu-default-16]`` and ``test_x[cpu-default-24]`` are two tests, not two
    configs of one: only the case's own id (device and config) is dropped."""
    from pytest_tweak.results import base_nodeid

    assert base_nodeid("t.py::test_x[cpu-default-16]", "cpu-default") == "t.py::test_x[16]"
    assert base_nodeid("t.py::test_x[16-cuda-max]", "cuda-max") == "t.py::test_x[16]"
    assert base_nodeid("t.py::test_x[cpu-default]", "cpu-default") == "t.py::test_x"
    assert base_nodeid("t.py::test_x[cpu-aot_eager]", "cpu-aot_eager") == "t.py::test_x"
