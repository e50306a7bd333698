"""Every line pytest-tweak prints on the terminal: the settings line of the report header,
a failed case's message, the tweak summary and tuning table, the word on device locks and on
baselines from another environment, ``--tweak-list-options``, and the transient progress line
of a running case. All of it reads plain data (`pytest_tweak.results.CaseResult`)."""

from __future__ import annotations

import collections
import contextlib
import dataclasses
import os
import shlex
import sys
from collections.abc import Collection, Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

from .baselines import resave_command
from .formatting import format_bytes, format_seconds, text_table
from .measure import CaseChecks, MeasureSettings
from .options import (
    DEFAULT_COMPILE_THRESHOLD_PCT,
    DEFAULT_MEMORY_THRESHOLD_PCT,
    DEFAULT_RUN_NOISE_PCT,
    DEFAULT_THRESHOLD_PCT,
    TweakOptions,
)
from .reports.text import (
    change_text,
    compile_text,
    count_text,
    limit_text,
    margin_text,
    recompile_texts,
    speedup_text,
    ungated_text,
    unstable_text,
)
from .results import CaseResult, TuneRow
from .runstate import LockUse, SaveOutcome
from .verdict import Change, Judging, Limits, Status, Verdict

__all__ = [
    "HOST_SHARE_NOTE",
    "ProgressLine",
    "environment_line",
    "failure_message",
    "host_lines",
    "lock_line",
    "options_listing",
    "progress_wanted",
    "settings_line",
    "summary_lines",
    "tuning_lines",
]


# -- the report header --------------------------------------------------------------------


def settings_line(options: TweakOptions, root: Path) -> str:
    """The settings in one line: the devices, the baseline file (relative to ``root``
    when inside it), and every other setting that is not its default."""
    baseline = options.baseline_path
    with contextlib.suppress(ValueError):
        baseline = baseline.relative_to(root)
    devices = [
        ",".join(f"{d}:{i}" for i in options.device_pools[d]) if options.device_pools.get(d) else d
        for d in options.devices
    ]
    parts = [f"devices={','.join(devices)}", f"baseline={baseline}"]
    if options.allow_missing_device:
        parts.append("allow-missing-device")
    if options.save:
        parts.append("save (append)" if options.append else "save")
    for name, values in (
        ("threshold", {d: j.threshold_pct for d, j in options.judging.items()}),
        ("run-noise", {d: j.run_noise_pct for d, j in options.judging.items()}),
    ):
        default = DEFAULT_THRESHOLD_PCT if name == "threshold" else DEFAULT_RUN_NOISE_PCT
        changed = [f"{d}={values[d]:g}%" for d in options.devices if values[d] != default[d]]
        if changed:
            parts.append(f"{name}={','.join(changed)}")
    first = options.judging[options.devices[0]] if options.devices else None
    if first is not None:
        defaults = Judging(threshold_pct=1.0, run_noise_pct=1.0)
        parts += [
            f"{name}={value}"
            for name, value, default in (
                ("metric", first.metric, defaults.metric),
                ("fail-inconclusive", first.fail_inconclusive, defaults.fail_inconclusive),
                (
                    "compile-threshold",
                    f"{first.compile_threshold_pct:g}%",
                    f"{DEFAULT_COMPILE_THRESHOLD_PCT:g}%",
                ),
                (
                    "memory-threshold",
                    f"{first.memory_threshold_pct:g}%",
                    f"{DEFAULT_MEMORY_THRESHOLD_PCT:g}%",
                ),
            )
            if value != default
        ]
    parts += _changed(options.settings, MeasureSettings())
    parts += _changed(options.checks, CaseChecks())
    parts += [f"max-{part}" for part in _changed(options.limits, Limits())]
    if options.logs:
        parts.append(f"logs={','.join(options.logs)}")
    if options.fingerprint_policy != "warn":
        parts.append(f"fingerprint-policy={options.fingerprint_policy}")
    for name in ("json", "markdown", "html"):
        path = getattr(options, f"{name}_path")
        if path is not None:
            parts.append(f"{name}={path}")
    return "tweak: " + ", ".join(parts)


def _changed(settings: Any, defaults: Any) -> list[str]:
    """``name=value`` for each field of the dataclass ``settings`` that differs from
    ``defaults`` (``reference``, which follows the metric, left out): ``warmup=0.2s``,
    ``precision=3%``, ``eager=off``."""
    parts = []
    for f in dataclasses.fields(settings):
        value = getattr(settings, f.name)
        if f.name == "reference" or f.name.endswith("_source"):
            continue
        if value == getattr(defaults, f.name):
            continue
        name = f.name.removesuffix("_s").removesuffix("_pct").replace("_", "-")
        if isinstance(value, bool):
            text = "on" if value else "off"
        elif f.name.endswith("_s") and isinstance(value, (int, float)):
            text = f"{value:g}s"
        elif f.name.endswith("_pct") and isinstance(value, (int, float)):
            text = f"{value:g}%"
        else:
            text = str(value)
        parts.append(f"{name}={text}")
    return parts


# -- a failed case ------------------------------------------------------------------------


def failure_message(
    case: CaseResult, baseline_path: str, judging: Judging, root: str = "", flags: str = ""
) -> str:
    """Why a case failed its baseline, with every number needed to act on it (``root`` and
    ``flags``: as `resave_command`'s)."""
    nodeid, verdict = case.nodeid, case.verdict
    lines = [_headline(verdict, judging)]  # pytest's short summary shows this line only
    if verdict.status is Status.INCONCLUSIVE:
        lines.append(f"pytest-tweak: {nodeid} is inconclusive against {baseline_path}:")
        if verdict.change is not None:
            lines.append(
                f"  - {verdict.change.describe(judging.threshold_pct, judging.confidence)}"
            )
        lines.append(
            "  (failing because of --tweak-fail-inconclusive); why, and what would decide it:"
        )
    else:
        if verdict.failures:
            lines.append(f"pytest-tweak: {nodeid} failed, whatever its speed:")
            lines += [f"  - {failure}" for failure in verdict.failures]
        if verdict.problems:
            lines.append(f"pytest-tweak: {nodeid} regressed against {baseline_path}:")
            lines += [f"  - {problem}" for problem in verdict.problems]
    lines += [f"  {line}" for line in _context(verdict, judging)]
    lines += _reasons(case)
    lines += _figures(case)
    if verdict.problems or verdict.status is Status.INCONCLUSIVE:
        again = resave_command(nodeid, root=root, flags=flags)
        lines.append(f"If the change is intended, record this case anew: {again}.")
        lines += _after_resave(verdict)
    return "\n".join(lines)


#: The problems (`pytest_tweak.verdict.PROBLEM_KINDS`) that are counts the code changed: the
#: cause of a slow-down beside them, and what a test may assert itself.
_COUNTS = ("graph breaks", "recompiles")


def _after_resave(verdict: Verdict) -> list[str]:
    """What the record-anew command leaves to do (fifteenth user trial: the save replaced a
    five-run entry by one run, so the next runs were inconclusive; and a test asserting its
    own graph breaks failed, so the save refused it)."""
    lines = []
    counted = [k for k in verdict.problem_kinds if k in _COUNTS]
    if counted:
        lines.append(
            f"  A test that asserts its own {' or '.join(counted)} (`assert "
            "result.graph_breaks == 0`) fails, and is not saved, until that assert changes too."
        )
    runs = verdict.change.runs if verdict.change is not None else 1
    if runs > 1:
        lines.append(
            f"  Then run it {runs - 1} more time(s) with --tweak-append added, so that the "
            f"entry has {runs} runs again: one run gates only changes larger than its noise."
        )
    return lines


def _headline(verdict: Verdict, judging: Judging) -> str:
    """A failure's first line, the one pytest's short test summary shows: the verdict and its
    main figure (the test id is on that line already)."""
    change = verdict.change
    shown = 1  # of the failures and problems listed below
    counts = [p for p in verdict.problems if p.startswith(_COUNTS)]
    if verdict.failures:
        word, first = "failed, whatever its speed", verdict.failures[0]
    elif counts:  # the cause leads the time it costs (a short summary shows this line only)
        word, first = "regressed", counts[0]
    elif change is not None and change.status is Status.REGRESSED:
        word, first = "regressed", _change_figure(change, judging)
    elif verdict.problems:  # regressed in its counts, compile time or memory
        word, first = "regressed", verdict.problems[0]
    elif change is not None and change.status is Status.INCONCLUSIVE:  # fail-inconclusive
        word, first, shown = "inconclusive", _change_figure(change, judging), 0
    else:  # a verdict of a pytest_tweak_verdict hook, without a change or a problem
        word, first, shown = str(verdict.status), "see below", 0
    more = len(verdict.failures) + len(verdict.problems) - shown
    tail = f" (and {more} more below)" if more > 0 else ""
    return f"{word}: {first}{tail} [pytest-tweak]"  # the verdict first: the line is cut short


def _change_figure(change: Change, judging: Judging) -> str:
    return (
        f"{change.metric} {change.pct:+.1f}% ±{change.noise_pct:.1f}% "
        f"(threshold {judging.threshold_pct:g}%)"
    )


def _status_cell(verdict: Verdict, outcome: str | None = None) -> str:
    """The verdict; a regression that is not the speed's names what regressed (its time may
    be inconclusive or unchanged beside it): ``regressed (peak memory)``; a test that failed
    on its own (an assert after ``tweak.benchmark``) says so beside a verdict that passed, and
    one skipped or xfailed after it (not saved: a baseline records passing tests) too."""
    change = verdict.change
    speed = change is not None and change.status is Status.REGRESSED
    what = verdict.problem_kinds
    if verdict.status is Status.REGRESSED and what and not speed:
        return f"regressed ({', '.join(what)})"
    if outcome == "failed" and not verdict.failed:
        return f"{verdict.status}, test failed"
    if outcome == "skipped":  # pytest.skip() or an xfail after the case was measured
        return f"{verdict.status}, test skipped/xfailed"
    return str(verdict.status)


#: A host overhead above this share of the latency is worth a word in the summary.
HOST_SHARE_NOTE = 0.5


def host_lines(case: CaseResult) -> list[str]:
    """Latency, device time and host overhead of an accelerator case, and the remedy when the
    device mostly waits for the host; nothing on cpu."""
    overhead, share = case.host_overhead_s, case.host_share
    if overhead is None or share is None or case.median_s is None:
        return []
    assert case.device_time is not None
    lines = [
        f"  latency {format_seconds(case.median_s)} per call: device time "
        f"{format_seconds(case.device_time.median)}, host overhead "
        f"{format_seconds(overhead)} ({share:.0%})"
    ]
    if share >= HOST_SHARE_NOTE:
        remedy = (
            "CUDA graphs did not remove it: see why they were skipped"
            if case.cudagraph_skips
            else 'mode="reduce-overhead" (CUDA graphs) replays the kernels without it'
        )
        lines.append(
            "  the device waits for the host (Python, guards, kernel launches) most of each "
            f"call: {remedy}"
        )
    return lines


def _figures(case: CaseResult) -> list[str]:
    """Latency and device time, compile time, memory, accuracy and speed-up of a case, one
    line each."""
    cold = ", cold (empty caches)" if case.compile.get("cold") else ""
    lines = [
        *host_lines(case),
        f"  compile: {compile_text(float(case.compile['time_s']), case.compile)}; "
        f"inductor cache {_cache_state(case)}{cold}",
    ]
    if case.peak_memory_bytes is not None:
        eager = case.eager_peak_memory_bytes
        versus = "" if eager is None else f" (eager {format_bytes(eager)})"
        lines.append(f"  peak memory: {format_bytes(case.peak_memory_bytes)}{versus}")
    if case.accuracy is not None:
        lines.append(f"  accuracy: {_accuracy_text(case.accuracy)}")
    if case.speedup is not None:
        lines.append(f"  speed-up over eager: {case.speedup.median:.3g}x")
    return lines


def _cache_state(case: CaseResult) -> str:
    return str((case.compile.get("cache") or {}).get("state", "none"))


def _accuracy_text(accuracy: Mapping[str, Any]) -> str:
    """`pytest_tweak.accuracy.Accuracy.describe` of the plain form."""
    from .accuracy import Accuracy, Tolerance

    rtol, atol = accuracy.get("rtol"), accuracy.get("atol")
    return Accuracy(
        ok=bool(accuracy["ok"]),
        max_abs=float(accuracy["max_abs"]),
        max_rel=float(accuracy["max_rel"]),
        tolerance=None if rtol is None or atol is None else Tolerance(rtol, atol),
        where=accuracy.get("where"),
        problem=accuracy.get("problem"),
        tensors=int(accuracy.get("tensors", 0)),
        checked=bool(accuracy.get("checked", True)),
        autocast=accuracy.get("autocast"),
    ).describe()


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


def _reasons(case: CaseResult) -> list[str]:
    """Each graph break at its source line with torch's id, explanation, first hint and link
    (where torch gives them), each distinct failed guard with how often it failed, and the
    recompile limit when it was hit."""
    lines = []
    if case.break_reasons:
        from .counters import BreakReason  # torch: only where there are breaks to tell

        lines.append(f"  graph breaks ({case.graph_breaks}):")
        for data in case.break_reasons:
            reason = BreakReason(**data)
            lines.append(f"    {reason}")
            lines += [f"      {advice}" for advice in reason.advice()]
    if case.recompile_reasons:
        lines.append(f"  recompiles ({case.recompiles}):")
        reasons, hints = recompile_texts(case.recompile_reasons)
        lines += _counted(reasons)
        lines += [f"    {hint}" for hint in hints]
    if case.recompile_limit_hit:
        lines.append(f"  {limit_text(case.recompile_limit_frames)}")
    if case.cudagraph_skips:
        lines.append(f"  CUDA graphs skipped ({len(case.cudagraph_skips)}):")
        lines += [f"    {reason}" for reason in case.cudagraph_skips]
    return lines


def _counted(counts: Mapping[str, int]) -> list[str]:
    return [f"    {text}" + (f" (x{n})" if n > 1 else "") for text, n in counts.items()]


# -- the tweak summary --------------------------------------------------------------------


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


def _row(case: CaseResult) -> tuple[str, ...]:
    median = "-" if case.median_s is None else format_seconds(case.median_s)
    if case.device_time is not None:
        median += f" (device {format_seconds(case.device_time.median)})"
    baseline = case.baseline
    breaks = count_text(
        case.graph_breaks, None if baseline is None else baseline.graph_breaks, case
    )
    recompiles = count_text(
        case.recompiles, None if baseline is None else baseline.recompiles, case
    )
    return (
        case.test,  # the user's own parameters kept: test_x[16], not test_x
        case.device,
        case.backend,
        case.config_id,
        median,
        speedup_text(case),
        breaks,
        recompiles,
        _compile_cell(case),
        format_bytes(case.peak_memory_bytes),
        _accuracy_cell(case.accuracy),
        change_text(case),
        _status_cell(case.verdict, case.outcome),
    )


def _compile_cell(case: CaseResult) -> str:
    """Compile time and cache state; ``-`` for a case that failed before it compiled."""
    if "time_s" not in case.compile:
        return "-"
    return f"{float(case.compile['time_s']):.3g} s {_cache_state(case)}"


def _accuracy_cell(accuracy: Mapping[str, Any] | None) -> str:
    if accuracy is None or not accuracy.get("checked", True):
        return "-"
    if accuracy.get("ok", True) and not accuracy.get("tensors", 1):
        # None, numbers, strings: equal, but no tensor shows the model's work was done
        return "no tensor"
    return f"{'ok' if accuracy.get('ok', True) else 'WRONG'} {float(accuracy['max_abs']):.1g}"


def _undecided(verdict: Verdict) -> list[str]:
    """The summary's word on an inconclusive case: why, and what would decide it."""
    if verdict.status is not Status.INCONCLUSIVE:
        return []
    return ["  inconclusive; why, and what would decide it:"] + [
        f"    {note}" for note in verdict.notes
    ]


def _unstable(case: CaseResult) -> list[str]:
    """The summary's word on a case whose samples stepped, where its verdict's notes (an
    inconclusive case's, shown by `_undecided`) do not already say so: a new case's, say."""
    return [f"  {line}" for line in unstable_text(case)]


def _host_note(case: CaseResult) -> list[str]:
    """The summary's word on a case whose device mostly waits for the host."""
    share = case.host_share
    return host_lines(case) if share is not None and share >= HOST_SHARE_NOTE else []


def summary_lines(cases: Iterable[CaseResult]) -> list[str]:
    """The tweak summary: one row per case, then the graph-break reasons worth reading."""
    cases = list(cases)
    if not cases:
        return []
    lines = text_table(_HEADERS, (_row(case) for case in cases))
    improved = [case for case in cases if case.verdict.status is Status.IMPROVED]
    inconclusive = [case for case in cases if case.verdict.status is Status.INCONCLUSIVE]
    details = [
        (case, reasons)
        for case in cases
        if (
            reasons := _reasons(case)
            + _unstable(case)
            + _host_note(case)
            + _undecided(case.verdict)
        )
    ]
    if details:
        lines.append("")
        short = collections.Counter(case.nodeid.split("::", 1)[-1] for case in cases)
        for case, reasons in details:
            name = case.nodeid.split("::", 1)[-1]
            # the same test name in two files: the whole node id says which
            lines.append(f"{case.nodeid if short[name] > 1 else name}:")
            lines += reasons
    # after the cases' details, which hold the regressed cases' reasons too
    if improved:
        lines.append(
            f"{len(improved)} case(s) faster than their baseline beyond the noise: if a change "
            "made them faster, refresh their baselines with --tweak-save to gate on the new "
            "speed; a run on a busy machine can read faster by chance, so see it again in a "
            "second run first"
        )
    if inconclusive:
        lines.append(
            f"{len(inconclusive)} case(s) inconclusive: the noise is larger than the threshold "
            "(each says above why, and what would decide it)"
        )
    return lines


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
            margin_text(row),
        )
        for row in rows
    ]
    return text_table(("test", "device", "fastest config", "median", "next", "margin"), table)


def environment_line(changed: Mapping[str, Sequence[str]], policy: str) -> str:
    """The summary's word on cases whose baseline was recorded in another environment."""
    fields = sorted(
        {difference.split(":", 1)[0] for found in changed.values() for difference in found}
    )
    what = (
        f"{len(changed)} case(s) had a baseline recorded in another environment "
        f"(differs: {', '.join(fields)})"
    )
    outcome = {
        "warn": "compared anyway (--tweak-fingerprint-policy=warn); record baselines here with "
        "--tweak-save, or choose skip or fail",
        "skip": "not compared (--tweak-fingerprint-policy=skip)",
        "fail": "failed (--tweak-fingerprint-policy=fail)",
    }[policy]
    return f"pytest-tweak: {what}: {outcome}"


def baseline_file_lines(
    options: TweakOptions,
    skipped: Mapping[str, str],
    outcome: SaveOutcome | None,
    save_error: str | None,
    cases: Sequence[CaseResult] = (),
    gone: Sequence[str] = (),
    keys: Collection[str] = (),
) -> list[tuple[str, str | None]]:
    """The summary's word on ``options``' baseline file: its unreadable entries, that it
    gated none of the run's ``cases`` (missing, or naming other tests), its entries whose
    test is ``gone`` (renamed or deleted), what a save did (the cases it left out because
    their test failed included), and the saved cases whose measurement was unstable (a
    baseline of a stepped series is suspect); each line with its colour (``None``: plain)."""
    path = options.baseline_path
    lines: list[tuple[str, str | None]] = []
    ungated = None if options.save else ungated_text(path, cases, keys)
    if ungated is not None:
        lines.append((f"pytest-tweak: {ungated}", "yellow"))
    if gone:
        lines.append((_gone(path, gone), "yellow"))
    if skipped:
        lines.append(
            (
                f"pytest-tweak: {len(skipped)} unreadable entr"
                f"{'y' if len(skipped) == 1 else 'ies'} in {path} skipped: "
                + ", ".join(sorted(skipped)),
                "yellow",
            )
        )
    if save_error is not None:
        lines.append((f"pytest-tweak: ERROR: nothing saved: {save_error}", "red"))
    elif outcome is not None and outcome.interrupted:
        lines.append(
            (
                f"pytest-tweak: nothing saved: the run was interrupted, so {path} is as it "
                f"was ({len(outcome.unsaved)} measured case(s) left out); run the save again "
                "to record them",
                "yellow",
            )
        )
    elif outcome is not None and not outcome.saved and not outcome.unsaved:
        lines.append(
            (
                f"pytest-tweak: nothing saved to {path}: no case was measured (no selected "
                "test uses tweak, its tests never called tweak.benchmark(), or --benchmark-skip "
                "skipped them)",
                "yellow",
            )
        )
    elif outcome is not None:
        saved, kept = outcome.saved, outcome.kept
        lines.append(
            (
                f"pytest-tweak: saved {len(saved)} case(s) to {path}"
                f" (kept {kept} other entr{'y' if kept == 1 else 'ies'})",
                None,
            )
        )
        if outcome.restarted:
            changes = sorted({c for changed in outcome.restarted.values() for c in changed})
            lines.append(
                (
                    f"pytest-tweak: --tweak-append recorded {len(outcome.restarted)} case(s) "
                    f"anew: their runs in the file were recorded in another environment "
                    f"({'; '.join(changes)}), and runs of two environments are not pooled "
                    f"(their spread is not the noise between runs): "
                    + _capped(list(outcome.restarted))
                    + ". Append more runs here to gate them as before",
                    "yellow",
                )
            )
        if outcome.too_noisy:
            lines.append(
                (
                    f"pytest-tweak: {len(outcome.too_noisy)} saved case(s) have a baseline too "
                    "noisy to gate at their threshold (an unchanged run would read inconclusive, "
                    "and only a change past the interval would show): "
                    + _capped(
                        [
                            f"{n} (a run like the last: {why})"
                            for n, why in outcome.too_noisy.items()
                        ],
                        "; ",
                    )
                    + ". Or raise the threshold (--tweak-threshold)",
                    "yellow",
                )
            )
        if outcome.unsaved:
            lines.append(
                (
                    f"pytest-tweak: not saved: {len(outcome.unsaved)} measured case(s) whose "
                    f"test did not pass (a baseline records passing tests only): "
                    + _capped(list(outcome.unsaved)),
                    "yellow",
                )
            )
        unstable = {
            nodeid: entry.runs[-1].unstable  # the run this save made
            for nodeid, entry in saved.items()
            if entry.runs[-1].unstable is not None
        }
        if unstable:
            again = resave_command(
                *sorted(unstable), root=options.test_root, flags=options.resave_flags
            )
            lines.append(
                (
                    f"pytest-tweak: {len(unstable)} saved case(s) measured unstable, so their "
                    "speed baseline is suspect: "
                    + "; ".join(f"{nodeid} ({why})" for nodeid, why in sorted(unstable.items()))
                    + f". Record them again on a quiet machine: {again}",
                    "yellow",
                )
            )
    return lines


#: The most items a summary line lists; a suite of hundreds of cases gets a count instead.
_LISTED = 10


def _capped(items: list[str], separator: str = ", ") -> str:
    """``items`` sorted and joined, the first `_LISTED` of them and a count of the rest (the
    JSON report, ``--tweak-json``, lists every case)."""
    items = sorted(items)
    shown = separator.join(items[:_LISTED])
    rest = len(items) - _LISTED
    return shown if rest <= 0 else f"{shown}{separator}and {rest} more (--tweak-json lists all)"


def _gone(path: Path, gone: Sequence[str]) -> str:
    """The entries of tests that no longer exist, and the command that removes them: one
    ``--test`` per entry, its whole id (``remove`` reads a ``[`` as the id's own), so that a
    test that lost one parameter value keeps the entries of the others."""
    command = " ".join(f"--test {shlex.quote(key)}" for key in gone)
    one = len(gone) == 1
    its = "its" if one else "their"
    what = (
        f"{'1 entry' if one else f'{len(gone)} entries'} in {path} "
        f"{'belongs to a test' if one else 'belong to tests'} that no longer exist"
        f"{'s' if one else ''} (renamed, {its} file deleted, or the parameter value or config "
        f"{its} id names dropped), so {'it gates' if one else 'they gate'} nothing: "
        f"{', '.join(gone)}. If so, remove {'it' if one else 'them'}: "
    )
    removal = f"python -m pytest_tweak remove {shlex.quote(str(path))} {command}"
    return "pytest-tweak: " + what + removal


#: Waiting this long in all for another process's device lock is worth a line in the summary.
_WAIT_WORTH_SAYING_S = 0.5


def lock_line(uses: Sequence[LockUse], workers: Sequence[str]) -> str | None:
    """The summary's word on device locks: under xdist, that the workers measured one case
    at a time per device; otherwise, only when this run waited for another process."""
    if not uses:
        return None
    per_lock: dict[str, list[LockUse]] = {}
    for use in uses:
        per_lock.setdefault(use.lock, []).append(use)
    parts = [
        f"{lock}: {len(held)} case(s), waited {sum(u.waited_s for u in held):.1f} s"
        for lock, held in sorted(per_lock.items())
    ]
    if len(workers) > 1:
        return (
            f"pytest-tweak: {len(workers)} xdist workers measured one case at a time per device "
            f"(device locks; {'; '.join(parts)} for another worker or another pytest process "
            "of this user)"
        )
    if sum(use.waited_s for use in uses) >= _WAIT_WORTH_SAYING_S:
        return (
            "pytest-tweak: waited for another process measuring on the same device "
            f"({'; '.join(parts)})"
        )
    return None


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


# -- the progress line --------------------------------------------------------------------


def progress_wanted(config: Any, mode: str) -> bool:
    """Whether the run shows a progress line at ``--tweak-progress`` ``mode``: ``on``, or
    ``auto`` on a terminal that is not quiet (``-q``) nor a CI job's; never on an xdist worker,
    whose output is not a terminal, nor without pytest's terminal reporter."""
    reporter = config.pluginmanager.get_plugin("terminalreporter")
    quiet_here = (
        not bool(getattr(reporter, "isatty", False))
        or config.get_verbosity() < 0
        or bool(os.environ.get("CI"))
    )
    worker = hasattr(config, "workerinput")
    return (
        reporter is not None
        and not worker
        and (mode == "on" or (mode == "auto" and not quiet_here))
    )


class ProgressLine:
    """A transient status written after pytest's own output on the current terminal line,
    and erased (backspaces, blanks, backspaces) before the next one or when the case ends.

    It is written around pytest's output capture, and past pytest's terminal writer, so the
    writer's idea of the line (its progress column) is what it was.
    """

    def __init__(self, config: Any) -> None:
        self._config = config
        self._shown = 0

    def show(self, text: str | None) -> None:
        """Show ``text`` in place of the last one; ``None`` erases it."""
        capture = self._config.pluginmanager.get_plugin("capturemanager")
        with capture.global_and_fixture_disabled() if capture else contextlib.nullcontext():
            out = sys.stdout
            if self._shown:
                out.write("\b" * self._shown + " " * self._shown + "\b" * self._shown)
                self._shown = 0
            if text is not None:
                writer = self._config.get_terminal_writer()
                room = writer.fullwidth - writer.width_of_current_line - 2
                if room >= 20:
                    shown = " " + (text if len(text) <= room else text[: room - 3] + "...")
                    out.write(shown)
                    self._shown = len(shown)
            out.flush()
