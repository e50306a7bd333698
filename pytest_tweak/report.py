"""Text for people and files for tools: the failure message of a regressed case, the summary
table, the tuning table, and the markdown and JSON reports of a run (docs/reports.md)."""

from __future__ import annotations

import contextlib
import datetime
import json
import os
import tempfile
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from .results import SCHEMA_VERSION, CaseResult, TuneRow, suite_tuning
from .verdict import Status, format_bytes, format_seconds

if TYPE_CHECKING:
    from .case import BenchmarkResult
    from .session import CaseRecord
    from .verdict import Judging, Verdict

__all__ = [
    "JSON_FORMAT",
    "SummaryItem",
    "append_text",
    "break_text",
    "dump_json",
    "failure_message",
    "json_report",
    "markdown_report",
    "options_listing",
    "ordered_tests",
    "overall_status",
    "summary_item",
    "summary_lines",
    "tuning_lines",
    "write_atomic",
]

#: The ``format`` field of the JSON report.
JSON_FORMAT = "pytest-tweak-report"

_HEADERS = (
    "test",
    "device",
    "backend",
    "config",
    "median",
    "speed-up",
    "graph breaks",
    "recompiles",
    "compile",
    "peak mem",
    "accuracy",
    "vs baseline",
    "verdict",
)


def failure_message(
    nodeid: str, verdict: Verdict, result: BenchmarkResult, baseline_path: str, judging: Judging
) -> str:
    """Why a case failed its baseline, with every number needed to act on it."""
    if verdict.status is Status.INCONCLUSIVE:
        lines = [f"pytest-tweak: {nodeid} is inconclusive against {baseline_path}:"]
        if verdict.change is not None:
            lines.append(
                f"  - {verdict.change.describe(judging.threshold_pct, judging.confidence)}"
            )
        lines.append(
            "  (failing because of --tweak-fail-inconclusive); why, and what would decide it:"
        )
    else:
        lines = []
        if verdict.failures:
            lines.append(f"pytest-tweak: {nodeid} failed, whatever its speed:")
            lines += [f"  - {failure}" for failure in verdict.failures]
        if verdict.problems:
            lines.append(f"pytest-tweak: {nodeid} regressed against {baseline_path}:")
            lines += [f"  - {problem}" for problem in verdict.problems]
    lines += [f"  {line}" for line in _context(verdict, judging)]
    lines += _reasons(result)
    lines += _figures(result)
    if verdict.problems or verdict.status is Status.INCONCLUSIVE:
        lines.append("If the change is intended, record a new baseline with --tweak-save.")
    return "\n".join(lines)


#: A host overhead above this share of the latency is worth a word in the summary.
HOST_SHARE_NOTE = 0.5


def host_lines(result: BenchmarkResult | CaseResult) -> list[str]:
    """Latency, device time and host overhead of an accelerator case, and the remedy when the
    device mostly waits for the host; nothing on cpu."""
    overhead, share = result.host_overhead_s, result.host_share
    if overhead is None or share is None or result.median_s is None:
        return []
    assert result.device_time is not None
    lines = [
        f"  latency {format_seconds(result.median_s)} per call: device time "
        f"{format_seconds(result.device_time.median)}, host overhead "
        f"{format_seconds(overhead)} ({share:.0%})"
    ]
    if share >= HOST_SHARE_NOTE:
        remedy = (
            "CUDA graphs did not remove it: see why they were skipped"
            if result.cudagraph_skips
            else 'mode="reduce-overhead" (CUDA graphs) replays the kernels without it'
        )
        lines.append(
            "  the device waits for the host (Python, guards, kernel launches) most of each "
            f"call: {remedy}"
        )
    return lines


def _figures(result: BenchmarkResult) -> list[str]:
    """Latency and device time, compile time, memory, accuracy and speed-up of a case, one
    line each."""
    times = result.compile_times
    cold = ", cold (empty caches)" if result.cold_compile else ""
    lines = [
        *host_lines(result),
        f"  compile: {compile_text(result.compile_time_s, times.as_dict())}; "
        f"inductor cache {result.compile_cache.state}{cold}",
    ]
    if result.peak_memory_bytes is not None:
        eager = result.eager_peak_memory_bytes
        versus = "" if eager is None else f" (eager {format_bytes(eager)})"
        lines.append(f"  peak memory: {format_bytes(result.peak_memory_bytes)}{versus}")
    if result.accuracy is not None:
        lines.append(f"  accuracy: {result.accuracy.describe()}")
    if result.speedup is not None:
        lines.append(f"  speed-up over eager: {result.speedup.median:.3g}x")
    return lines


def _context(verdict: Verdict, judging: Judging) -> list[str]:
    lines = list(verdict.notes)
    change, speedup = verdict.change, verdict.speedup
    if change is not None and change.status is not Status.REGRESSED and verdict.problems:
        lines.append(change.describe(judging.threshold_pct, judging.confidence))
    if speedup is not None:
        lines.append(speedup.describe(judging.threshold_pct, judging.confidence))
        if change is not None and change.status is Status.REGRESSED:
            if speedup.status is Status.REGRESSED:
                lines.append("the speed-up over eager fell too: the compiled code got slower")
            elif speedup.status is Status.UNCHANGED:
                lines.append(
                    "the speed-up over eager held: the model itself (eager too) got slower"
                )
    return lines


def _reasons(result: BenchmarkResult) -> list[str]:
    """Each graph break at its source line with torch's id, explanation, first hint and link
    (where torch gives them), each distinct failed guard with how often it failed, and the
    recompile limit when it was hit."""
    lines = []
    if result.break_reasons:
        lines.append(f"  graph breaks ({result.graph_breaks}):")
        for reason in result.break_reasons:
            lines.append(f"    {reason}")
            lines += [f"      {advice}" for advice in reason.advice()]
    if result.recompile_reasons:
        lines.append(f"  recompiles ({result.recompiles}):")
        reasons, hints = recompile_texts([str(r) for r in result.recompile_reasons])
        lines += _counted(reasons)
        lines += [f"    hint (torch): {hint}" for hint in hints]
    if result.recompile_limit_hit:
        lines.append(f"  {limit_text(result.recompile_limit_frames)}")
    if result.cudagraph_skips:
        lines.append(f"  CUDA graphs skipped ({len(result.cudagraph_skips)}):")
        lines += [f"    {reason}" for reason in result.cudagraph_skips]
    return lines


def compile_text(first_call_s: float, times: Mapping[str, Any]) -> str:
    """The compile figures, each saying what it covers: the first call's wall time, and the
    compile time dynamo and inductor report summed over every frame compile of the case
    (recompiles during warm-up and timing included, so the sum may exceed the first call)."""
    frames = int(times.get("frames", 0))
    return (
        f"first call {first_call_s:.3g} s (wall time, compiling included); all {frames} frame "
        f"compile(s) of the case, recompiles included: dynamo {float(times['dynamo_s']):.3g} s "
        f"+ inductor {float(times['inductor_s']):.3g} s"
    )


def recompile_texts(reasons: Sequence[str]) -> tuple[Counter[str], list[str]]:
    """The distinct recompile reasons with how often each came, without torch's ``HINT:``
    (one hint can be 300 characters, the same on every line), and the distinct hints."""
    counted: Counter[str] = Counter()
    hints: dict[str, None] = {}
    for reason in reasons:
        head, hint = _split_hint(reason)
        counted[head] += 1
        if hint:
            hints[hint] = None
    return counted, list(hints)


def _split_hint(text: str) -> tuple[str, str | None]:
    head, found, hint = text.partition("HINT:")
    if not found:
        return " ".join(text.split()), None
    head = head.rstrip().removesuffix("(").rstrip()
    hint = " ".join(hint.split()).removesuffix(")").strip()
    return " ".join(head.split()), hint or None


def limit_text(frames: Sequence[str]) -> str:
    """The recompile-limit cliff, in words."""
    where = ", ".join(frames) or "a frame"
    return (
        f"dynamo hit its recompile limit on {where}: it now runs uncompiled (eager), "
        "a silent performance cliff (torch._dynamo.config.recompile_limit)"
    )


def short_path(filename: str | None) -> str:
    """``filename`` relative to the current folder when it lies below it."""
    if not filename:
        return "?"
    try:
        relative = os.path.relpath(filename)
    except ValueError:  # another drive on Windows
        return filename
    return filename if relative.startswith("..") else relative


def counts_text(cases: Sequence[CaseResult], tests: Sequence[tuple[str, Sequence[Any]]]) -> str:
    """``6 case(s) in 3 test(s); failed: 4 case(s) in 2 test(s)``: cases and tests counted
    apart, so a count of failed cases does not read as failed tests."""

    def failed(case: CaseResult) -> bool:
        return case.verdict.failed or case.outcome == "failed"

    failed_cases = sum(1 for case in cases if failed(case))
    failed_tests = sum(1 for _, group in tests if any(failed(case) for case in group))
    text = f"{len(cases)} case(s) in {len(tests)} test(s)"
    if failed_cases:
        return f"{text}; failed: {failed_cases} case(s) in {failed_tests} test(s)"
    return f"{text}; none failed"


#: Distinct recompile reasons a report lists per case; a changing attribute makes dozens.
_MAX_RECOMPILE_LINES = 5


def case_reasons(case: CaseResult) -> list[str]:
    """Where and why a case's graph breaks and recompiles happened, and the recompile-limit
    cliff: what a reviewer of a pull request needs beside the counts."""
    lines: list[str] = []  # the graph breaks themselves: `break_text`, with torch's link
    reasons, hints = recompile_texts(case.recompile_reasons)
    shown = list(reasons.items())[:_MAX_RECOMPILE_LINES]
    lines += [f"recompile: {reason}" + (f" (x{n})" if n > 1 else "") for reason, n in shown]
    if len(reasons) > len(shown):
        lines.append(
            f"... and {len(reasons) - len(shown)} more distinct recompile reason(s) (the JSON "
            "report has every one)"
        )
    lines += [f"hint (torch): {hint}" for hint in hints]
    if case.recompile_limit_hit:
        lines.append(limit_text(case.recompile_limit_frames))
    lines += [f"CUDA graphs skipped: {reason}" for reason in case.cudagraph_skips]
    return lines


def _counted(counts: Mapping[str, int]) -> list[str]:
    return [f"    {text}" + (f" (x{n})" if n > 1 else "") for text, n in counts.items()]


def _change(verdict: Verdict) -> str:
    change = verdict.change
    if change is None:
        return "-"
    return f"{change.pct:+.1f}% ±{change.noise_pct:.1f}%"


def _speedup(result: BenchmarkResult) -> str:
    return "-" if result.speedup is None else f"{result.speedup.median:.2f}x"


def _row(record: CaseRecord) -> tuple[str, ...]:
    result = record.result
    median = "-" if result.median_s is None else format_seconds(result.median_s)
    if result.device_time is not None:
        median += f" (device {format_seconds(result.device_time.median)})"
    baseline = record.baseline
    breaks = str(result.graph_breaks)
    recompiles = str(result.recompiles)
    if baseline is not None and record.verdict.status is not Status.NOT_COMPARED:
        if baseline.graph_breaks != result.graph_breaks:
            breaks += f" (was {baseline.graph_breaks})"
        if baseline.recompiles != result.recompiles:
            recompiles += f" (was {baseline.recompiles})"
    name = record.nodeid.split("[", 1)[0]
    return (
        name,
        record.device,
        record.backend,
        record.config_id,
        median,
        _speedup(result),
        breaks,
        recompiles,
        f"{result.compile_time_s:.3g} s {result.compile_cache.state}",
        format_bytes(result.peak_memory_bytes),
        _accuracy(result),
        _change(record.verdict),
        str(record.verdict.status),
    )


def _accuracy(result: BenchmarkResult) -> str:
    accuracy = result.accuracy
    if accuracy is None or not accuracy.checked:
        return "-"
    return f"{'ok' if accuracy.ok else 'WRONG'} {accuracy.max_abs:.1g}"


def _table(headers: Sequence[str], rows: Iterable[Sequence[str]]) -> list[str]:
    rows = [tuple(r) for r in rows]
    widths = [max(len(h), *(len(r[i]) for r in rows)) for i, h in enumerate(headers)]

    def fmt(cells: Sequence[str]) -> str:
        return "  ".join(c.ljust(w) for c, w in zip(cells, widths, strict=True)).rstrip()

    return [fmt(headers), fmt(["-" * w for w in widths]), *(fmt(r) for r in rows)]


@dataclass(frozen=True)
class SummaryItem:
    """One case's part of the tweak summary, in plain values: what a pytest-xdist worker sends
    the controller, which prints one summary for all workers.

    Attributes:
        nodeid: The test's node id.
        row: The summary table's cells for the case.
        status: The verdict's status (``regressed``, ``unchanged``, ...).
        reasons: Lines on the case's graph breaks and recompiles worth reading.
    """

    nodeid: str
    row: tuple[str, ...]
    status: str
    reasons: tuple[str, ...] = ()

    def to_dict(self) -> dict[str, Any]:
        return {
            "nodeid": self.nodeid,
            "row": list(self.row),
            "status": self.status,
            "reasons": list(self.reasons),
        }

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> SummaryItem:
        return cls(
            nodeid=str(data["nodeid"]),
            row=tuple(str(cell) for cell in data["row"]),
            status=str(data["status"]),
            reasons=tuple(str(line) for line in data.get("reasons", ())),
        )


def summary_item(record: CaseRecord) -> SummaryItem:
    """The summary's view of one case."""
    return SummaryItem(
        nodeid=record.nodeid,
        row=_row(record),
        status=str(record.verdict.status),
        reasons=tuple(
            _reasons(record.result) + _host_note(record.result) + _undecided(record.verdict)
        ),
    )


def _undecided(verdict: Verdict) -> list[str]:
    """The summary's word on an inconclusive case: why, and what would decide it."""
    if verdict.status is not Status.INCONCLUSIVE:
        return []
    return ["  inconclusive; why, and what would decide it:"] + [
        f"    {note}" for note in verdict.notes
    ]


def _host_note(result: BenchmarkResult) -> list[str]:
    """The summary's word on a case whose device mostly waits for the host."""
    share = result.host_share
    return host_lines(result) if share is not None and share >= HOST_SHARE_NOTE else []


def summary_lines(items: Iterable[SummaryItem]) -> list[str]:
    """The tweak summary: one row per case, then the graph-break reasons worth reading."""
    items = list(items)
    if not items:
        return []
    lines = _table(_HEADERS, (item.row for item in items))
    improved = [item for item in items if item.status == str(Status.IMPROVED)]
    inconclusive = [item for item in items if item.status == str(Status.INCONCLUSIVE)]
    if improved:
        lines.append(
            f"{len(improved)} case(s) improved beyond the noise: "
            "refresh their baselines with --tweak-save to gate on the new speed"
        )
    if inconclusive:
        lines.append(
            f"{len(inconclusive)} case(s) inconclusive: the noise is larger than the threshold "
            "(each says below why, and what would decide it)"
        )
    details = [item for item in items if item.reasons]
    if details:
        lines.append("")
        for item in details:
            lines.append(f"{item.nodeid.split('::', 1)[-1]}:")
            lines += item.reasons
    return lines


def options_listing(modes: Mapping[str, Mapping[str, object]], options: Mapping[str, str]) -> str:
    """What ``--tweak-list-options`` prints: inductor's modes with the options each sets,
    then the option keys meant for users, each with the type its value must have (where
    inductor checks one)."""
    lines = ["inductor modes (TorchInductorBackendConfig(mode=...)):"]
    for mode, settings in modes.items():
        set_text = ", ".join(f"{k}={v!r}" for k, v in settings.items()) or "(inductor defaults)"
        lines.append(f"  {mode}: {set_text}")
    lines.append("")
    lines.append(f"inductor options (TorchInductorBackendConfig(options={{...}})), {len(options)}:")
    lines += [
        f"  {name} ({kind})" if kind else f"  {name}" for name, kind in sorted(options.items())
    ]
    return "\n".join(lines)


# -- the run's reports, from the cases' plain data (`pytest_tweak.results`) ---------------

#: How bad a status is, worst first: the order of tests in the reports.
_SEVERITY = (
    Status.FAILED,
    Status.REGRESSED,
    Status.INCONCLUSIVE,
    Status.IMPROVED,
    Status.UNCHANGED,
    Status.NEW,
    Status.NOT_COMPARED,
)


def _case_rank(case: CaseResult) -> int:
    """0 for a case whose test failed, then by how bad its verdict is."""
    if case.verdict.failed or case.outcome == "failed":
        return 0
    return 1 + _SEVERITY.index(case.verdict.status)


def ordered_tests(cases: Iterable[CaseResult]) -> list[tuple[str, list[CaseResult]]]:
    """The cases grouped by test: tests with a failed or regressed case first, then by their
    worst verdict; ties keep the order the tests ran in."""
    groups: dict[str, list[CaseResult]] = {}
    for case in cases:
        groups.setdefault(case.test, []).append(case)
    ranked = sorted(groups.items(), key=lambda item: min(_case_rank(c) for c in item[1]))
    return ranked


def overall_status(cases: Sequence[CaseResult]) -> str:
    """A test's word: ``failed`` when a case failed, else its worst verdict."""
    worst = min(cases, key=_case_rank)
    if worst.verdict.failed or worst.outcome == "failed":
        return "failed" if worst.verdict.status is not Status.REGRESSED else "regressed"
    return str(worst.verdict.status)


def _median_text(case: CaseResult) -> str:
    if case.timing is None:
        return "-"
    return f"{format_seconds(case.timing.median)} ±{case.timing.rel_ci_pct:.1f}%" + device_text(
        case
    )


def device_text(case: CaseResult) -> str:
    """`` (device 269 us, host 66%)`` for an accelerator case; empty on cpu."""
    share = case.host_share
    if case.device_time is None or share is None:
        return ""
    return f" (device {format_seconds(case.device_time.median)}, host {share:.0%})"


def _change_text(case: CaseResult) -> str:
    change = case.verdict.change
    if change is None:
        return "-"
    return f"{change.pct:+.1f}% ±{change.noise_pct:.1f}%"


def _speedup_text(case: CaseResult) -> str:
    return "-" if case.speedup is None else f"{case.speedup.median:.2f}x"


def _count_text(now: int, was: int | None, case: CaseResult) -> str:
    if was is None or was == now or case.verdict.status is Status.NOT_COMPARED:
        return str(now)
    return f"{now} (was {was})"


def _margin_text(row: TuneRow) -> str:
    if row.margin_pct is None:
        return "only timed config"
    return f"{row.margin_pct:+.1f}%" + ("" if row.clear else " (within noise)")


def tuning_lines(rows: Sequence[TuneRow]) -> list[str]:
    """The terminal's tuning table: per test and device, the fastest config and its margin
    over the next; empty when no test has two timed configs on a device."""
    if not any(row.runner_up is not None for row in rows):
        return []
    table = [
        (
            row.test,
            row.device,
            f"{row.best.backend}:{row.best.config_id}",
            format_seconds(row.best.timing.median) if row.best.timing else "-",
            "-" if row.runner_up is None else f"{row.runner_up.backend}:{row.runner_up.config_id}",
            _margin_text(row),
        )
        for row in rows
    ]
    return _table(("test", "device", "fastest config", "median", "next", "margin"), table)


def _cell(text: str) -> str:
    return text.replace("|", "\\|").replace("\n", " ")


def _md_table(headers: Sequence[str], rows: Iterable[Sequence[str]]) -> list[str]:
    lines = ["| " + " | ".join(headers) + " |", "|" + " --- |" * len(headers)]
    lines += ["| " + " | ".join(_cell(c) for c in row) + " |" for row in rows]
    return lines


_MARKS = {"failed": "❌", "regressed": "❌", "inconclusive": "⚠️", "improved": "🚀"}


def markdown_report(cases: Sequence[CaseResult], tuning: Sequence[TuneRow] | None = None) -> str:
    """The run as GitHub-flavoured markdown: a line of counts, then per test (failed and
    regressed first) a table of its configs by device, what went wrong, and the tuning."""
    if tuning is None:
        tuning = suite_tuning(cases)
    statuses = Counter(str(case.verdict.status) for case in cases)
    tests = ordered_tests(cases)
    counts = ", ".join(f"{n} {status}" for status, n in sorted(statuses.items()))
    lines = [
        "## pytest-tweak",
        "",
        f"{counts_text(cases, tests)}; verdicts: {counts}"
        if cases
        else "No pytest-tweak case ran.",
    ]
    headers = (
        "config",
        "device",
        "median",
        "vs baseline",
        "speed-up",
        "graph breaks",
        "recompiles",
        "verdict",
    )
    for test, group in tests:
        status = overall_status(group)
        mark = _MARKS.get(status, "✅")
        lines += ["", f"### {mark} `{test}`: {status}", ""]
        rows = []
        for case in group:
            baseline = case.baseline
            verdict = str(case.verdict.status)
            if case.verdict.failed:
                verdict = f"**{verdict}** (test failed)"
            rows.append(
                (
                    f"`{case.backend}:{case.config_id}`",
                    case.device,
                    _median_text(case),
                    _change_text(case),
                    _speedup_text(case),
                    _count_text(
                        case.graph_breaks, baseline.graph_breaks if baseline else None, case
                    ),
                    _count_text(case.recompiles, baseline.recompiles if baseline else None, case),
                    verdict,
                )
            )
        lines += _md_table(headers, rows)
        details = [
            f"- `{case.device}-{case.config_id}`: {_md_text(text)}"
            for case in group
            for text in (*case.verdict.failures, *case.verdict.problems, *case_reasons(case))
        ]
        details += [
            f"- `{case.device}-{case.config_id}`: {_md_break(reason)}"
            for case in group
            for reason in case.break_reasons
        ]
        if details:
            lines += ["", *details]
    if any(row.runner_up is not None for row in tuning):
        lines += ["", "### Tuning: the fastest config per test and device", ""]
        lines += _md_table(
            ("test", "device", "fastest config", "median", "next", "margin"),
            (
                (
                    f"`{row.test}`",
                    row.device,
                    f"`{row.best.backend}:{row.best.config_id}`",
                    _median_text(row.best),
                    "-"
                    if row.runner_up is None
                    else f"`{row.runner_up.backend}:{row.runner_up.config_id}`",
                    _margin_text(row),
                )
                for row in tuning
            ),
        )
    return "\n".join(lines) + "\n"


def break_text(reason: Mapping[str, Any]) -> str:
    """A graph break of a report (`BreakReason.as_dict`'s form) on one line: where, why, how
    often, and torch's id, explanation and first hint where the report has them."""
    where = f"{short_path(reason.get('filename'))}:{reason.get('lineno') or '?'}"
    line = reason.get("line")
    source = f" `{line}`" if line else ""
    count = int(reason.get("count") or 1)
    times = f" (x{count})" if count > 1 else ""
    text = f"graph break at {where}{source}: {reason.get('reason')}{times}"
    advice = "; ".join(
        str(part)
        for part in (
            " ".join(str(p) for p in (reason.get("gb_id"), reason.get("explanation")) if p),
            reason.get("hint") and f"hint: {reason.get('hint')}",
        )
        if part
    )
    return f"{text} — {advice}" if advice else text


def _md_break(reason: Mapping[str, Any]) -> str:
    text = break_text(reason)
    gb_id, link = reason.get("gb_id"), reason.get("link")
    if gb_id and link:  # the id links to torch's page on the break
        text = text.replace(f" — {gb_id} ", f" — [{gb_id}]({link}) ", 1)
    return text


def json_report(
    cases: Sequence[CaseResult],
    environment: Mapping[str, Any],
    settings: Mapping[str, Any],
    tuning: Sequence[TuneRow] | None = None,
) -> dict[str, Any]:
    """The JSON report (``pytest_tweak/report.schema.json``; docs/reports.md)."""
    from . import __version__

    if tuning is None:
        tuning = suite_tuning(cases)
    statuses = Counter(str(case.verdict.status) for case in cases)
    return {
        "format": JSON_FORMAT,
        "schema_version": SCHEMA_VERSION,
        "pytest_tweak": __version__,
        "created": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
        "environment": dict(environment),
        "settings": dict(settings),
        "summary": {
            "cases": len(cases),
            "failed": sum(1 for c in cases if c.verdict.failed or c.outcome == "failed"),
            "statuses": dict(sorted(statuses.items())),
        },
        "cases": [case.to_dict() for case in cases],
        "tuning": [row.to_dict() for row in tuning],
    }


def _md_text(text: str) -> str:
    """Text for a markdown list item: a ``|`` or a newline would break the layout."""
    return " ".join(text.split()).replace("|", "\\|")


def write_atomic(path: Path, text: str) -> None:
    """Write ``text`` to ``path`` through a temporary file in the same folder, renamed over
    it: a reader never sees half a report. Missing folders are created."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, temp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as handle:
            handle.write(text)
            handle.flush()
            os.fsync(handle.fileno())
        # mkstemp makes the file private (0600); a report is an ordinary file: the mode any
        # new file gets under the umask (also over a report an older version left 0600)
        os.chmod(temp, 0o666 & ~_umask())
        os.replace(temp, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(temp)
        raise


def _umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask


def append_text(path: Path, text: str) -> None:
    """Append ``text`` to ``path`` (``$GITHUB_STEP_SUMMARY`` collects every step's)."""
    with path.open("a", encoding="utf-8") as handle:
        handle.write(text)


def dump_json(document: Mapping[str, Any]) -> str:
    return json.dumps(document, indent=2, sort_keys=False, allow_nan=False) + "\n"
