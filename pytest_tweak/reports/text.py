"""The words for a case, shared by the terminal and the report files: its compile figures,
graph breaks, recompiles and the recompile-limit cliff, its timing cells, and the order and
status of a run's tests. Everything here reads `pytest_tweak.results.CaseResult`."""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Collection, Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

from ..formatting import format_seconds, short_path
from ..results import CaseResult, TuneRow
from ..verdict import Status

__all__ = [
    "break_text",
    "case_reasons",
    "change_text",
    "compile_text",
    "count_text",
    "counts_text",
    "device_text",
    "limit_text",
    "margin_text",
    "median_text",
    "ordered_tests",
    "overall_status",
    "recompile_texts",
    "speedup_text",
    "ungated_text",
    "unstable_text",
]


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
    (one hint can be 300 characters, the same on every line), and the distinct hints, each
    labelled with whose it is (``hint (torch): ...``)."""
    counted: Counter[str] = Counter()
    hints: dict[str, None] = {}
    for reason in reasons:
        head, hint = _split_hint(reason)
        counted[head] += 1
        if hint:
            hints[f"hint (torch): {hint}"] = None
        elif _SPECIALIZED_SIZE.search(head):
            hints[f"hint (pytest-tweak): {_SPECIALIZED_SIZE_HINT}"] = None
    return counted, list(hints)


#: A guard on a size dynamo specialized: 0 and 1 are never dynamic, even with dynamic=True.
_SPECIALIZED_SIZE = re.compile(r"size mismatch at index \d+\. expected [01], actual \d+")
_SPECIALIZED_SIZE_HINT = (
    "torch specializes sizes 0 and 1, even with dynamic=True: the first call's size of 0 or "
    "1 compiled a graph for that size alone. Start the sizes at 2, or mark the dimension with "
    "torch._dynamo.mark_unbacked, where that is not what is being tested"
)


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
    lines = unstable_text(case)  # the graph breaks themselves: `break_text`, with torch's link
    reasons, hints = recompile_texts(case.recompile_reasons)
    shown = list(reasons.items())[:_MAX_RECOMPILE_LINES]
    lines += [f"recompile: {reason}" + (f" (x{n})" if n > 1 else "") for reason, n in shown]
    if len(reasons) > len(shown):
        lines.append(
            f"... and {len(reasons) - len(shown)} more distinct recompile reason(s) (the JSON "
            "report has every one)"
        )
    lines += hints
    if case.recompile_limit_hit:
        lines.append(limit_text(case.recompile_limit_frames))
    lines += [f"CUDA graphs skipped: {reason}" for reason in case.cudagraph_skips]
    return lines


def unstable_text(case: CaseResult) -> list[str]:
    """Why a case's samples are not one steady figure (a new case's, say), where its verdict's
    notes do not already say so (an unstable case compared with a baseline is inconclusive, and
    its notes lead with this line)."""
    if case.unstable is None:
        return []
    line = f"unstable measurement: {case.unstable}"
    return [] if line in case.verdict.notes else [line]


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


def median_text(case: CaseResult) -> str:
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


def change_text(case: CaseResult, *, labelled: bool = False) -> str:
    """The change against the baseline and its noise; ``labelled``: with the figure judged
    where it is not the latency shown beside it (``(normalized)``, ``(device)``), since the
    change is then not the ratio of the two medians a report shows."""
    change = case.verdict.change
    if change is None:
        return "-"
    text = f"{change.pct:+.1f}% ±{change.noise_pct:.1f}%"
    if labelled and change.metric != "time":
        text += f" ({change.metric.split()[0]})"
    return text


def speedup_text(case: CaseResult) -> str:
    return "-" if case.speedup is None else f"{case.speedup.median:.2f}x"


def count_text(now: int, was: int | None, case: CaseResult) -> str:
    """A graph-break or recompile count, with the baseline's where it differs; ``-`` for a
    case that failed before dynamo counted anything."""
    if not case.counted:
        return "-"
    if was is None or was == now or case.verdict.status is Status.NOT_COMPARED:
        return str(now)
    return f"{now} (was {was})"


def margin_text(row: TuneRow) -> str:
    if row.margin_pct is None:
        return "only timed config"
    return f"{row.margin_pct:+.1f}%" + ("" if row.clear else " (within noise)")


def ungated_text(path: Path, cases: Sequence[CaseResult], keys: Collection[str] = ()) -> str | None:
    """Why a gating run compared nothing, when none of its ``cases`` had a baseline entry and
    some were new: a CI job whose baseline was not restored, or whose node ids changed
    (another ``--rootdir``, renamed tests), would otherwise pass green, gating nothing.
    ``keys``, the file's entries, tell tests that are only new (the file holds other tests
    of their folders) from ids of another rootdir."""
    new = [case for case in cases if case.verdict.status is Status.NEW]
    if not new or any(case.baseline is not None for case in cases):
        return None
    if not path.exists():
        return (
            f"no baseline file at {path}, so all {len(new)} case(s) are new and nothing was "
            "gated: record one with --tweak-save (in CI: check that the file was restored to "
            "this path, or --tweak-baseline / ini tweak_baseline)"
        )
    folders = {key.split("::", 1)[0].rpartition("/")[0] for key in keys}
    if any(case.nodeid.split("::", 1)[0].rpartition("/")[0] in folders for case in new):
        return (
            f"none of the {len(new)} case(s) has an entry in {path} yet, so nothing was gated: "
            "new tests, or renamed ones (the file holds tests of their folders, so it is this "
            "rootdir's); record them with --tweak-save, which keeps the other entries"
        )
    return (
        f"none of the {len(new)} new case(s) has an entry in {path}, so nothing was gated: if "
        "the file holds these tests, their node ids differ (pytest run from another "
        f"--rootdir, or tests renamed): compare `python -m pytest_tweak show {path}` with the "
        "ids above"
    )
