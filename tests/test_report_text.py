"""What the reports say, read as a reviewer reads them: where and why graph breaks and
recompiles happened, the recompile-limit cliff, counts of cases and tests that cannot be
misread, figures whose parts fit their whole, and report files as ordinary files."""

from __future__ import annotations

import dataclasses
import os
import re
import stat
from pathlib import Path

import pytest
from test_reports import ENVIRONMENT, _case, _validate

from pytest_tweak.files import write_atomic
from pytest_tweak.reports.html import html_report
from pytest_tweak.reports.json import json_report
from pytest_tweak.reports.markdown import markdown_report
from pytest_tweak.reports.text import compile_text, recompile_texts
from pytest_tweak.verdict import Change, Status

HINT = (
    "HINT: torch.compile considers integer attributes of the nn.Module to be static. If you "
    "are observing recompilation, you might want to make this integer dynamic using "
    "torch._dynamo.config.allow_unspec_int_on_nn_module = True, or convert this integer into "
    "a tensor."
)


def _troubled(path: Path) -> object:
    """A failed case with a graph break, recompiles (torch's reason text, hint and all) and
    the recompile limit hit."""
    case = _case("test_rec", "default", 2e-5)
    return dataclasses.replace(
        case,
        outcome="failed",
        graph_breaks=1,
        break_reasons=(
            {
                "reason": "Failed to trace builtin operator",
                "filename": str(path / "models" / "net.py"),
                "lineno": 10,
                "line": 'print("", end="")',
                "count": 8,
            },
        ),
        recompiles=3,
        recompile_reasons=tuple(
            f"forward (models/net.py:8): self.count == {n}        # self.count += 1  # "
            f"models/net.py:9 in forward ({HINT})"
            for n in (0, 1, 2)
        ),
        recompile_limit_hit=True,
        recompile_limit_frames=("forward (models/net.py:8)",),
        verdict=dataclasses.replace(
            case.verdict, status=Status.FAILED, failures=("recompiles 3 exceed the limit 0",)
        ),
    )


@pytest.fixture
def in_project(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.chdir(tmp_path)
    return tmp_path


def test_recompile_reasons_keep_torchs_hint_once() -> None:
    reasons = [f"forward: self.count == {n}  # x ({HINT})" for n in (0, 1)]
    counted, hints = recompile_texts([*reasons, reasons[0]])
    assert counted == {"forward: self.count == 0 # x": 2, "forward: self.count == 1 # x": 1}
    assert hints == ["hint (torch): " + HINT.removeprefix("HINT: ")]


def test_a_size_torch_specializes_gets_a_hint_of_pytest_tweaks() -> None:
    """torch gives no hint when a first size of 1 (or 0) recompiles under dynamic=True
    (eighth user trial)."""
    reason = "tensor 'args[0]' size mismatch at index 0. expected 1, actual 8"
    counted, hints = recompile_texts([reason])
    assert counted == {reason: 1}
    assert hints == [
        "hint (pytest-tweak): torch specializes sizes 0 and 1, even with dynamic=True: the "
        "first call's size of 0 or 1 compiled a graph for that size alone. Start the sizes "
        "at 2, or mark the dimension with torch._dynamo.mark_unbacked, where that is not what "
        "is being tested"
    ]
    assert recompile_texts(["tensor 'x' size mismatch at index 0. expected 8, actual 32"])[1] == []


def test_the_markdown_says_where_and_why_and_shows_the_cliff(in_project: Path) -> None:
    text = markdown_report([_troubled(in_project)])  # type: ignore[list-item]
    lines = text.splitlines()
    assert (
        '- `cpu-default`: graph break at models/net.py:10 `print("", end="")`: Failed to '
        "trace builtin operator (x8)" in lines
    )
    recompiles = [line for line in lines if "recompile: " in line]
    assert len(recompiles) == 3
    assert not [line for line in recompiles if "HINT" in line or "  " in line]
    assert sum("torch.compile considers integer attributes" in line for line in lines) == 1
    assert (
        "- `cpu-default`: dynamo hit its recompile limit on forward (models/net.py:8): it now "
        "runs uncompiled (eager), a silent performance cliff "
        "(torch._dynamo.config.recompile_limit)" in lines
    )


def test_the_counts_tell_cases_from_tests() -> None:
    # 4 cases in 2 tests fail; 6 cases in 4 tests in all
    cases = [
        _case(f"test_{name}", config, 1e-5, status=status)
        for name, status in (
            ("a", Status.REGRESSED),
            ("b", Status.REGRESSED),
            ("c", Status.NEW),
            ("d", Status.NEW),
        )
        for config in (("default", "static") if name in "ab" else ("default",))
    ]
    cases = [
        dataclasses.replace(c, verdict=dataclasses.replace(c.verdict, status=Status.FAILED))
        if c.outcome == "failed"
        else c
        for c in cases
    ]
    expected = "6 case(s) in 4 test(s); failed: 4 case(s) in 2 test(s)"
    assert expected in markdown_report(cases)
    assert expected in html_report(cases, ENVIRONMENT)


def test_the_html_shows_relative_paths_source_text_and_a_legend_in_the_bars_colours(
    in_project: Path,
) -> None:
    page = html_report([_troubled(in_project)], ENVIRONMENT)  # type: ignore[list-item]
    assert str(in_project) not in page
    assert "graph break at models/net.py:10 `print(&quot;&quot;, end=&quot;&quot;)`" in page
    assert "dynamo hit its recompile limit on forward (models/net.py:8)" in page
    legend = re.search(r'<g class="legend">(.*?)</g>', page)
    assert legend is not None
    # the one bar is a failed case's, drawn in --bad: the key shows that colour, no other
    assert re.findall(r"fill:var\(--(\w+)\)", legend.group(1)) == ["bad"]
    assert ">failed</text>" in legend.group(1)


def test_the_json_names_the_frames_that_hit_the_recompile_limit(in_project: Path) -> None:
    document = json_report([_troubled(in_project)], ENVIRONMENT, {})  # type: ignore[list-item]
    case = document["cases"][0]
    assert case["recompile_limit_hit"] is True
    assert case["recompile_limit_frames"] == ["forward (models/net.py:8)"]
    _validate({**document, "settings": {**_settings()}})


def _settings() -> dict[str, object]:
    from test_reports import SETTINGS

    return dict(SETTINGS)


def test_report_files_get_the_mode_any_new_file_gets(tmp_path: Path) -> None:
    old = os.umask(0o022)
    try:
        write_atomic(tmp_path / "report.md", "text")
        assert stat.S_IMODE((tmp_path / "report.md").stat().st_mode) == 0o644
        (tmp_path / "report.md").chmod(0o600)  # as an older version wrote it
        write_atomic(tmp_path / "report.md", "text")
    finally:
        os.umask(old)
    assert stat.S_IMODE((tmp_path / "report.md").stat().st_mode) == 0o644


def test_many_recompile_reasons_are_cut_short_in_the_reports() -> None:
    case = dataclasses.replace(
        _case("test_rec", "default", 2e-5),
        recompiles=12,
        recompile_reasons=tuple(f"forward: self.count == {n}" for n in range(12)),
    )
    lines = [line for line in markdown_report([case]).splitlines() if "`: recompile" in line]
    assert len(lines) == 5
    assert (
        "- `cpu-default`: ... and 7 more distinct recompile reason(s) (the JSON report has "
        "every one)" in markdown_report([case])
    )


def test_compile_figures_say_what_each_covers() -> None:
    text = compile_text(0.0714, {"dynamo_s": 0.422, "inductor_s": 2.66, "frames": 9})
    assert text == (
        "first call 0.0714 s (wall time, compiling included); all 9 frame compile(s) of the "
        "case, recompiles included: dynamo 0.422 s + inductor 2.66 s"
    )


@pytest.mark.parametrize(
    ("pct", "low", "high", "expected"),
    [
        (-7.5, -11.9, -2.8, "8.1% more speed-up (99% interval 2.9% .. 13.5% more speed-up)"),
        (4.0, 1.0, 7.0, "+3.8% less speed-up (99% interval +1.0% .. +6.5%)"),
    ],
)
def test_a_changes_interval_reads_in_the_sense_of_its_estimate(
    pct: float, low: float, high: float, expected: str
) -> None:
    change = Change("speed-up", 1.04, 0.962, pct, low, high, 4.5, 5, Status.IMPROVED)
    assert expected in change.describe(5.0, 0.99)


def test_a_speed_up_change_reads_as_the_ratio_of_the_speed_ups() -> None:
    # the verdict's pct is in time's sense (base / new - 1 for a speed-up); what is printed
    # is the speed-up's own change, new / base - 1, as a reader works it out from the figures
    gained = Change(
        "speed-up", 0.743, 0.19, 0.19 / 0.743 * 100 - 100, -80, -60, 9, 5, Status.IMPROVED
    )
    assert "0.743x vs baseline 0.19x: 291.1% more speed-up" in gained.describe(5.0, 0.99)
    lost = Change(
        "speed-up", 0.917, 0.998, 0.998 / 0.917 * 100 - 100, 3, 13, 5, 5, Status.REGRESSED
    )
    assert "0.917x vs baseline 0.998x: +8.1% less speed-up" in lost.describe(5.0, 0.99)
