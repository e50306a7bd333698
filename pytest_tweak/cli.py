"""``python -m pytest_tweak`` (also ``pytest-tweak``): baseline files outside a pytest run.

Commands::

    show FILE [--json]                  the entries as a table
    diff OLD NEW [judging options]      judge NEW's entries against OLD, as the plugin would
    merge OUT IN [IN ...]               merge baseline files (sharded jobs) into OUT
    accept BASELINE NEW [--test PAT]    take NEW's entries (or some) into BASELINE
    remove BASELINE --test PAT          drop entries (of renamed or deleted tests)

Exit codes: 0 done (``diff``: nothing regressed); 1 ``diff`` found a regression (or, with
``--fail-inconclusive``, an inconclusive comparison); 2 a usage error, or a file missing,
unreadable or not a baseline file (nothing is written then); 141 the reader of the output
closed it (``| head``), as for any command SIGPIPE ends.

``diff`` judges with `pytest_tweak.verdict.judge` and the plugin's defaults
(`pytest_tweak.options`), so its verdicts are the ones ``pytest`` would give. ``merge``,
``accept`` and ``remove`` write through `pytest_tweak.baselines.update_baselines`: under the
file's lock, replaced atomically, every other entry kept, a broken file refused and left
untouched.
Unreadable entries are reported by test id and carried as found. Files are read as JSON only.
"""

from __future__ import annotations

import argparse
import dataclasses
import fnmatch
import json
import os
import sys
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

from . import __version__
from .baselines import (
    ON_CONFLICT,
    BaselineEntry,
    BaselineError,
    BaselineFile,
    merge_baselines,
    read_baselines,
    update_baselines,
)
from .devices import DEVICES
from .fingerprint import apply_policy, differences, render_fingerprint
from .formatting import format_bytes, format_seconds, text_table
from .options import (
    DEFAULT_COMPILE_THRESHOLD_PCT,
    DEFAULT_CONFIDENCE,
    DEFAULT_MEMORY_THRESHOLD_PCT,
    DEFAULT_RUN_NOISE_PCT,
    DEFAULT_THRESHOLD_PCT,
    FINGERPRINT_POLICIES,
    METRICS,
    OptionError,
    Raw,
    per_device_text,
    resolve_judging,
)
from .results import BaselineFigures
from .verdict import Judging, Status, Verdict, judge

__all__ = ["EXIT_CLOSED_OUTPUT", "EXIT_OK", "EXIT_REGRESSED", "EXIT_USAGE", "main"]

EXIT_OK = 0
EXIT_REGRESSED = 1
EXIT_USAGE = 2
#: The reader of stdout closed it (``| head``): 128 + SIGPIPE, as a shell reports a command
#: SIGPIPE ended; not 1, which would read as a regression under ``set -o pipefail``.
EXIT_CLOSED_OUTPUT = 141

PROG = "pytest-tweak"


class CliError(Exception):
    """A usage error or an unusable file: the message says which and what is wrong."""


# -- the parser ---------------------------------------------------------------------------


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog=PROG,
        description="Baseline files of pytest-tweak, outside a pytest run.",
        epilog=(
            "exit codes: 0 done (diff: nothing regressed); 1 diff found a regression (with "
            "--fail-inconclusive, also an inconclusive comparison); 2 usage error, or a file "
            "missing, unreadable or not a baseline file (nothing is written then)"
        ),
    )
    parser.add_argument("--version", action="version", version=f"%(prog)s {__version__}")
    commands = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")

    show = commands.add_parser("show", help="the entries of a baseline file, as a table")
    show.add_argument("file", metavar="FILE", type=_file_name, help="the baseline file")
    show.add_argument("--json", action="store_true", help="print JSON instead of a table")

    diff = commands.add_parser(
        "diff",
        help="judge NEW's entries against OLD's, with the plugin's verdict",
        description=(
            "Judge every entry of NEW against OLD's entry for the same test, with the plugin's "
            "rule and defaults (the newest run of each NEW entry). Exit 0: nothing regressed; "
            "1: something regressed, an entry of a test in NEW is unreadable in either file "
            "(or, with --fail-inconclusive, something was inconclusive); "
            "2: usage error or unreadable file."
        ),
    )
    diff.add_argument(
        "old", metavar="OLD", type=_file_name, help="the baseline file to compare with"
    )
    diff.add_argument(
        "new", metavar="NEW", type=_file_name, help="the baseline file with the new measurements"
    )
    diff.add_argument(
        "--threshold",
        metavar="PCT",
        help="smallest slow-down that counts as a regression, in percent; one value or "
        f"DEVICE=PCT pairs (default: {per_device_text(DEFAULT_THRESHOLD_PCT)})",
    )
    diff.add_argument(
        "--run-noise",
        metavar="PCT",
        help="run-to-run noise of a median in percent, assumed when OLD's entry holds one run; "
        f"one value or DEVICE=PCT pairs (default: {per_device_text(DEFAULT_RUN_NOISE_PCT)}, "
        "rising to 2 for a host-bound cuda/xpu entry; a value set here holds for every entry)",
    )
    diff.add_argument(
        "--confidence",
        metavar="X",
        help="one-sided confidence that a reported regression is real, between 0.5 and 1 "
        f"(default: {DEFAULT_CONFIDENCE:g})",
    )
    diff.add_argument(
        "--metric",
        metavar="NAME",
        help=f"what is compared: {' or '.join(METRICS)} (default: {METRICS[0]})",
    )
    diff.add_argument(
        "--compile-threshold",
        metavar="PCT",
        help="smallest compile-time increase that counts, in percent "
        f"(default: {DEFAULT_COMPILE_THRESHOLD_PCT:g})",
    )
    diff.add_argument(
        "--memory-threshold",
        metavar="PCT",
        help="smallest peak-memory increase that counts, in percent "
        f"(default: {DEFAULT_MEMORY_THRESHOLD_PCT:g})",
    )
    diff.add_argument(
        "--fail-inconclusive",
        action="store_true",
        help="exit 1 also when a comparison is too noisy to decide",
    )
    diff.add_argument(
        "--fingerprint-policy",
        metavar="|".join(FINGERPRINT_POLICIES),
        help="entries recorded in different environments: 'warn' compares and says so, 'skip' "
        "does not compare, 'fail' counts as a regression (default: warn)",
    )
    diff.add_argument(
        "--test",
        action="append",
        metavar="PATTERN",
        type=_pattern,
        default=[],
        help="only the test ids containing PATTERN, or matching it as a glob (the whole id or "
        "the test name, e.g. 'test_mlp*'; repeatable)",
    )
    diff.add_argument("--json", action="store_true", help="print JSON instead of a table")

    merge = commands.add_parser(
        "merge",
        help="merge baseline files (from sharded jobs) into OUT, losing no entry",
        description=(
            "Merge IN files into OUT: the union of their entries and OUT's own (a missing OUT "
            "is created). The inputs are never modified; OUT is replaced atomically under its "
            "lock, and left untouched when any file is broken."
        ),
    )
    merge.add_argument("out", metavar="OUT", type=_file_name, help="the baseline file to write")
    merge.add_argument(
        "inputs", metavar="IN", nargs="+", type=_file_name, help="baseline files to merge"
    )
    merge.add_argument(
        "--on-conflict",
        default="append-runs",
        choices=ON_CONFLICT,
        help="a test with different entries in several files: 'append-runs' keeps one entry "
        "with the runs of all (each once; the figures of the last file), as --tweak-save "
        "--tweak-append does; 'last' keeps the last file's entry; 'error' stops "
        "(default: append-runs)",
    )

    accept = commands.add_parser(
        "accept",
        help="take NEW's entries (or some) into BASELINE, e.g. after a deliberate slow-down",
        description=(
            "Replace BASELINE's entries for the selected tests with NEW's; every other entry "
            "is kept. BASELINE is replaced atomically under its lock (a missing one is "
            "created)."
        ),
    )
    accept.add_argument(
        "baseline", metavar="BASELINE", type=_file_name, help="the baseline file to update"
    )
    accept.add_argument(
        "new", metavar="NEW", type=_file_name, help="the baseline file to take entries from"
    )
    accept.add_argument(
        "--test",
        action="append",
        metavar="PATTERN",
        type=_pattern,
        default=[],
        help="take only the test ids containing PATTERN, or matching it as a glob (the whole "
        "id or the test name, e.g. 'test_mlp*'; repeatable; default: all of NEW's entries)",
    )
    remove = commands.add_parser(
        "remove",
        help="drop the selected entries from BASELINE (tests renamed or deleted)",
        description=(
            "Remove BASELINE's entries for the selected tests, readable or not; every other "
            "entry is kept. BASELINE is replaced atomically under its lock. A pattern matches "
            "a whole test id or test name as a glob; one that matches no entry is an error "
            "and nothing is written."
        ),
    )
    remove.add_argument(
        "baseline", metavar="BASELINE", type=_file_name, help="the baseline file to update"
    )
    remove.add_argument(
        "--test",
        action="append",
        metavar="PATTERN",
        type=_pattern,
        required=True,
        help="remove the test ids that PATTERN matches as a glob: the whole id "
        "('tests/perf/test_mlp.py::test_old[*') or the test name after the last '::' "
        "('test_old[*'); unlike accept and diff, an id merely containing PATTERN is not "
        "removed (repeatable; required)",
    )
    remove.add_argument(
        "--dry-run", action="store_true", help="list what would be removed, and write nothing"
    )
    return parser


def _file_name(value: str) -> str:
    """A baseline file argument: not empty (an unset shell variable), not a folder."""
    if not value.strip():
        raise argparse.ArgumentTypeError("empty value; name a baseline file")
    if Path(value).is_dir() or value.endswith(("/", os.sep)):
        raise argparse.ArgumentTypeError(f"{value} is a folder; name a baseline file in it")
    return value


def _pattern(value: str) -> str:
    """A ``--test`` pattern: an empty one (an unset shell variable) would match every id."""
    if not value:
        raise argparse.ArgumentTypeError("empty value; give a pattern, or leave --test out")
    return value


def main(argv: Sequence[str] | None = None) -> int:
    """Run one command; returns the exit code (see the module's documentation)."""
    parser = _parser()
    try:
        args = parser.parse_args(argv)
    except SystemExit as exc:  # --help, or a usage error argparse already printed
        return exc.code if isinstance(exc.code, int) else EXIT_USAGE
    commands: dict[str, Callable[[argparse.Namespace], int]] = {
        "show": _show,
        "diff": _diff,
        "merge": _merge,
        "accept": _accept,
        "remove": _remove,
    }
    try:
        code = commands[args.command](args)
        sys.stdout.flush()  # a reader gone shows here, not in the interpreter's last flush
        return code
    except (CliError, BaselineError) as exc:
        _error(str(exc))
        return EXIT_USAGE
    except BrokenPipeError:
        # what is left to print goes nowhere, so the interpreter's last flush cannot fail too
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return EXIT_CLOSED_OUTPUT


def _out(line: str = "") -> None:
    print(line)


def _error(message: str) -> None:
    print(f"{PROG}: error: {message}", file=sys.stderr)


def _warn(message: str) -> None:
    print(f"{PROG}: warning: {message}", file=sys.stderr)


def _read(name: str, role: str) -> BaselineFile:
    """An existing baseline file (a missing one is an error here, unlike in a pytest run);
    unreadable entries are reported on stderr."""
    path = Path(name)
    if not path.exists():
        raise CliError(f"{role} {path}: no such file")
    found = read_baselines(path)
    _report_skipped(path, found)
    return found


def _report_skipped(path: Path, found: BaselineFile) -> None:
    for key, problem in sorted(found.skipped.items()):
        _warn(f"baseline file {path}: entry {key!r} is unreadable and skipped ({problem})")


def _check_patterns(
    patterns: Sequence[str], keys: set[str], where: str, then: str, *, contains: bool = True
) -> None:
    """A ``--test`` pattern that matches none of ``keys`` is a usage error, so that a typo
    cannot silently judge (or accept) nothing."""
    for pattern in patterns:
        if not any(_matches(key, [pattern], contains=contains) for key in keys):
            raise CliError(f"--test {pattern!r} matches no entry of {where}; {then}")


def _matches(key: str, patterns: Sequence[str], *, contains: bool = True) -> bool:
    """A test id contains a pattern (unless not ``contains``: ``remove`` matches whole ids
    only), or it or its test name (after the last ``::``) matches the pattern as a glob
    (``*`` and ``?``; a ``[`` is the test id's own, not a character class:
    ``test_x[cpu-*]``); no patterns: every id."""
    if not patterns:
        return True
    name = key.rpartition("::")[2]
    globs = [(p, p.replace("[", "[[]")) for p in patterns]
    return any(
        (contains and p in key) or fnmatch.fnmatchcase(key, glob) or fnmatch.fnmatchcase(name, glob)
        for p, glob in globs
    )


def _entries(n: int) -> str:
    return f"{n} entr{'y' if n == 1 else 'ies'}"


def _print_json(data: Any) -> None:
    _out(json.dumps(data, indent=2, sort_keys=True, allow_nan=False))


# -- show ---------------------------------------------------------------------------------


def _entry_json(entry: BaselineEntry) -> dict[str, Any]:
    """An entry as ``show --json`` prints it: as stored, with its combined figures."""
    figures = BaselineFigures.from_entry(entry)
    return {
        **entry.as_dict(),
        "median_s": entry.median_s,
        "normalized": figures.normalized,
        "speedup": figures.speedup,
    }


def _config_text(config: Mapping[str, Any]) -> str:
    """The settings a config sets, ``k=v`` each; ``defaults`` if none. Unset (None, empty)
    and off (False) settings are left out, except ``dynamic=False``: for ``dynamic`` the
    default is None, and False is a choice."""
    parts = [
        f"{key}={json.dumps(value) if isinstance(value, (dict, list)) else value}"
        for key, value in config.items()
        if value not in (None, {}, []) and (value is not False or key == "dynamic")
    ]
    return ", ".join(parts) or "defaults"


def _compile_text(entry: BaselineEntry) -> str:
    if entry.compile_time_s is None:
        return "-"
    cache = f" {entry.compile_cache}" if entry.compile_cache else ""
    return f"{entry.compile_time_s:.3g} s{cache}"


def _show(args: argparse.Namespace) -> int:
    found = _read(args.file, "baseline file")
    path = Path(args.file)
    if args.json:
        _print_json(
            {
                "file": str(path),
                "version": found.version,
                "cases": {key: _entry_json(entry) for key, entry in sorted(found.entries.items())},
                "skipped": dict(sorted(found.skipped.items())),
            }
        )
        return EXIT_OK
    environments: dict[str, str] = {}  # rendered fingerprint -> its label
    rows = []
    for key, entry in sorted(found.entries.items()):
        fingerprint = render_fingerprint(entry.fingerprint) if entry.fingerprint else ""
        label = "-"
        if fingerprint:
            label = environments.setdefault(fingerprint, _label(len(environments)))
        figures = BaselineFigures.from_entry(entry)
        normalized, speedup = figures.normalized, figures.speedup
        rows.append(
            (
                key,
                entry.device or "-",
                entry.backend or "-",
                _config_text(entry.config),
                str(len(entry.runs)),
                format_seconds(entry.median_s),
                "-" if normalized is None else f"{normalized:.4g}",
                "-" if speedup is None else f"{speedup:.2f}x",
                str(entry.graph_breaks),
                str(entry.recompiles),
                _compile_text(entry),
                format_bytes(entry.peak_memory_bytes),
                label,
            )
        )
    _out(f"{path}: {len(found.entries)} entr{'y' if len(found.entries) == 1 else 'ies'}")
    if rows:
        headers = (
            "test",
            "device",
            "backend",
            "settings",
            "runs",
            "median",
            "normalized",
            "speed-up",
            "graph breaks",
            "recompiles",
            "compile",
            "peak mem",
            "env",
        )
        for line in text_table(headers, rows):
            _out(line)
    if environments:
        _out("")
        _out("environments (the fingerprint each entry was recorded in):")
        for fingerprint, label in environments.items():
            _out(f"  {label}: {fingerprint}")
    if found.skipped:
        _out("")
        _out("unreadable entries (kept as they are by saves):")
        for key, problem in sorted(found.skipped.items()):
            _out(f"  {key}: {problem}")
    return EXIT_OK


def _label(index: int) -> str:
    letters = "ABCDEFGHIJKLMNOPQRSTUVWXYZ"
    return letters[index] if index < len(letters) else f"E{index}"


# -- diff ---------------------------------------------------------------------------------


def _judging(args: argparse.Namespace) -> dict[str, Judging]:
    """The judging flags, resolved as the plugin resolves its own (`resolve_judging`)."""
    flags = {
        "threshold": args.threshold,
        "run_noise": args.run_noise,
        "metric": args.metric,
        "fail_inconclusive": args.fail_inconclusive or None,
        "compile_threshold": args.compile_threshold,
        "memory_threshold": args.memory_threshold,
        "confidence": args.confidence,
    }
    raw = Raw({name: (value, "--" + name.replace("_", "-")) for name, value in flags.items()})
    try:
        return resolve_judging(raw)
    except OptionError as exc:
        raise CliError(str(exc)) from None


def _device(key: str, *entries: BaselineEntry | None) -> str:
    """The entry's device type; for entries written without one, the test id's first
    parameter (``[cpu-default]``), else cpu."""
    for entry in entries:
        if entry is not None and entry.device in DEVICES:
            return str(entry.device)
    param = key.rpartition("[")[2].split("-", 1)[0]
    return param if param in DEVICES else "cpu"


@dataclasses.dataclass(frozen=True)
class _Row:
    key: str
    status: str
    failed: bool
    verdict: Verdict | None
    old: BaselineEntry | None
    new: BaselineEntry | None
    device: str
    notes: tuple[str, ...] = ()
    judging: Judging | None = None  # with a verdict: how it was judged


def _judge_entry(
    key: str, old: BaselineEntry, new: BaselineEntry, judging: Judging, policy: str
) -> _Row:
    """What the plugin would have said of NEW's newest run against OLD's entry."""
    run = new.runs[-1]
    notes: list[str] = []
    if len(new.runs) > 1:
        notes.append(f"judged NEW's newest run of {len(new.runs)}")
    failures: tuple[str, ...] = ()
    changed = differences(old.fingerprint, new.fingerprint)
    if changed:
        outcome = apply_policy(
            policy,
            "recorded in another environment than OLD's entry: " + "; ".join(changed),
            "--fingerprint-policy",
        )
        if not outcome.compare:
            verdict = Verdict(Status.NOT_COMPARED, notes=(outcome.note or "",))
            device = _device(key, new, old)
            return _Row(key, str(verdict.status), False, verdict, old, new, device, (), judging)
        if outcome.failure is not None:
            failures = (outcome.failure,)
        elif outcome.note is not None:
            notes.append(outcome.note)
    verdict = judge(
        old,
        run,
        graph_breaks=new.graph_breaks,
        recompiles=new.recompiles,
        judging=judging,
        compile_time_s=new.compile_time_s,
        compile_cache=new.compile_cache,
        peak_memory_bytes=new.peak_memory_bytes,
        failures=failures,
    )
    verdict = dataclasses.replace(verdict, notes=(*verdict.notes, *notes))
    device = _device(key, new, old)
    return _Row(key, str(verdict.status), verdict.failed, verdict, old, new, device, (), judging)


def _diff_rows(
    old: BaselineFile, new: BaselineFile, judging: Mapping[str, Judging], args: argparse.Namespace
) -> list[_Row]:
    raw = Raw({"fingerprint_policy": (args.fingerprint_policy, "--fingerprint-policy")})
    try:
        policy = raw.choice("fingerprint_policy", FINGERPRINT_POLICIES, FINGERPRINT_POLICIES[0])
    except OptionError as exc:
        raise CliError(str(exc)) from None
    keys = {*old.entries, *old.skipped, *new.entries, *new.skipped}
    _check_patterns(args.test, keys, f"{args.old} or {args.new}", "nothing was judged")
    rows = []
    for key in sorted(k for k in keys if _matches(k, args.test)):
        before, after = old.entries.get(key), new.entries.get(key)
        device = _device(key, after, before)
        # an unreadable entry on either side fails the gate, as the plugin fails its case:
        # a test whose entry a bad merge garbled must not pass as "new"
        if key in new.skipped:
            rows.append(
                _Row(key, "unreadable", True, None, before, None, device, (new.skipped[key],))
            )
        elif after is None:
            note = (old.skipped[key],) if key in old.skipped else ()
            rows.append(_Row(key, "missing", False, None, before, None, device, note))
        elif key in old.skipped:
            problem = f"OLD's entry is unreadable: {old.skipped[key]}"
            rows.append(_Row(key, "unreadable", True, None, None, after, device, (problem,)))
        elif before is None:
            rows.append(_Row(key, str(Status.NEW), False, None, None, after, device, ()))
        else:
            rows.append(_judge_entry(key, before, after, judging[device], policy))
    return rows


def _pair(old: str | None, new: str | None) -> str:
    if old == new or old is None:
        return new or "-"
    if new is None:
        return old
    return f"{old} -> {new}"


def _diff_cells(row: _Row) -> tuple[str, ...]:
    old, new = row.old, row.new
    change = row.verdict.change if row.verdict is not None else None
    return (
        row.key,
        row.device,
        format_seconds(old.median_s) if old else "-",
        format_seconds(new.runs[-1].timing.median) if new else "-",
        "-" if change is None else f"{change.pct:+.1f}% ±{change.noise_pct:.1f}%",
        _pair(
            None if old is None else str(old.graph_breaks),
            None if new is None else str(new.graph_breaks),
        ),
        _pair(
            None if old is None else str(old.recompiles),
            None if new is None else str(new.recompiles),
        ),
        _pair(
            None if old is None or old.compile_time_s is None else _compile_text(old),
            None if new is None or new.compile_time_s is None else _compile_text(new),
        ),
        _pair(
            None if old is None else format_bytes(old.peak_memory_bytes),
            None if new is None else format_bytes(new.peak_memory_bytes),
        ),
        row.status.upper() if row.failed else row.status,
    )


def _diff(args: argparse.Namespace) -> int:
    judging = _judging(args)
    old = _read(args.old, "OLD baseline file")
    new = _read(args.new, "NEW baseline file")
    rows = _diff_rows(old, new, judging, args)
    failed = [row for row in rows if row.failed]
    code = EXIT_REGRESSED if failed else EXIT_OK
    if rows and all(row.status in ("new", "missing") for row in rows):
        _warn(  # a job gating on diff would pass green, having compared nothing
            f"no test id is in both {args.old} and {args.new}, so nothing was compared: "
            "if they hold the same tests, their ids differ (recorded from another --rootdir, "
            "or tests renamed)"
        )
    if args.json:
        _print_json(
            {
                "old": args.old,
                "new": args.new,
                "exit_code": code,
                "cases": {row.key: _row_json(row) for row in rows},
            }
        )
        return code
    _out(f"{args.new} against {args.old}:")
    if rows:
        headers = (
            "test",
            "device",
            "old",
            "new",
            "change" if (args.metric or METRICS[0]) == "absolute" else "change (normalized)",
            "graph breaks",
            "recompiles",
            "compile",
            "peak mem",
            "verdict",
        )
        for line in text_table(headers, (_diff_cells(row) for row in rows)):
            _out(line)
    details = [(row, _details(row)) for row in rows]
    details = [(row, lines) for row, lines in details if lines]
    if details:
        _out("")
        for row, lines in details:
            _out(f"{row.key}: {row.status}")
            for line in lines:
                _out(f"  {line}")
    counts: dict[str, int] = {}
    for row in rows:
        counts[row.status] = counts.get(row.status, 0) + 1
    _out("")
    summary = ", ".join(f"{n} {status}" for status, n in sorted(counts.items())) or "no entries"
    outcome = (
        f"{len(failed)} fail the gate: exit {EXIT_REGRESSED}"
        if failed
        else f"nothing regressed: exit {EXIT_OK}"
    )
    _out(f"{summary}; {outcome}")
    return code


def _details(row: _Row) -> list[str]:
    verdict = row.verdict
    if verdict is None:
        return list(row.notes)
    lines = [f"- {text}" for text in (*verdict.failures, *verdict.problems)]
    change = verdict.change
    judging = row.judging
    if (
        judging is not None
        and change is not None
        and not verdict.problems
        and change.status is not Status.UNCHANGED
    ):
        lines.append(f"- {change.describe(judging.threshold_pct, judging.confidence)}")
    if verdict.status is Status.INCONCLUSIVE and not verdict.notes:
        runs = "" if row.old is None or len(row.old.runs) > 1 else "record OLD from several "
        lines.append(
            "the noise is larger than the threshold: "
            + (f"{runs}runs (--tweak-save --tweak-append), " if runs else "")
            + "measure longer (--tweak-max-time), or raise --threshold"
        )
    return [*lines, *(_as_diff_options(note) for note in verdict.notes)]


#: The judging options of pytest that ``diff`` has under a name of its own.
_DIFF_OPTIONS = {f"--tweak-{name}": f"--{name}" for name in ("threshold", "run-noise")}


def _as_diff_options(note: str) -> str:
    """A verdict's note (written for pytest) with the judging options ``diff`` takes named as
    ``diff`` takes them; how to record the files (``--tweak-save``, ...) stays pytest's."""
    for option, own in _DIFF_OPTIONS.items():
        note = note.replace(option, own)
    return note


def _row_json(row: _Row) -> dict[str, Any]:
    verdict = row.verdict

    def change(value: Any) -> dict[str, Any] | None:
        if value is None:
            return None
        return {**dataclasses.asdict(value), "status": str(value.status)}

    return {
        "status": row.status,
        "failed": row.failed,
        "device": row.device,
        "old_median_s": None if row.old is None else row.old.median_s,
        "new_median_s": None if row.new is None else row.new.runs[-1].timing.median,
        "change": None if verdict is None else change(verdict.change),
        "speedup": None if verdict is None else change(verdict.speedup),
        "problems": [] if verdict is None else list(verdict.problems),
        "failures": [] if verdict is None else list(verdict.failures),
        "notes": list(row.notes) if verdict is None else list(verdict.notes),
    }


# -- merge and accept ---------------------------------------------------------------------


def _merge(args: argparse.Namespace) -> int:
    out = Path(args.out)
    sources = [(name, _read(name, "input")) for name in args.inputs]
    before: dict[str, BaselineEntry] = {}

    existed = out.exists()

    def update(on_disk: BaselineFile) -> BaselineFile:
        _report_skipped(out, on_disk)
        before.update(on_disk.entries)
        try:
            return merge_baselines([(str(out), on_disk), *sources], args.on_conflict)
        except ValueError as exc:
            state = "left as it was" if existed else "not created"
            raise CliError(f"{exc}; {out} is {state}") from None

    written = update_baselines(out, update)
    added = [k for k in written.entries if k not in before]
    changed = [k for k in written.entries if k in before and written.entries[k] != before[k]]
    _out(
        f"merged {len(sources)} file(s) into {out}: {len(written.entries)} entries "
        f"({len(added)} added, {len(changed)} updated, "
        f"{len(written.entries) - len(added) - len(changed)} unchanged)"
    )
    if written.raw:
        _out(
            f"{len(written.raw)} unreadable entr{'y' if len(written.raw) == 1 else 'ies'} "
            "carried as found: " + ", ".join(sorted(written.raw))
        )
    return EXIT_OK


def _accept(args: argparse.Namespace) -> int:
    baseline = Path(args.baseline)
    new = _read(args.new, "NEW baseline file")
    patterns: list[str] = args.test
    _check_patterns(patterns, {*new.entries, *new.skipped}, args.new, "nothing was accepted")
    selected = {k: e for k, e in new.entries.items() if _matches(k, patterns)}
    for key in sorted(k for k in new.skipped if _matches(k, patterns)):
        _warn(f"{args.new}: entry {key!r} is unreadable: not accepted")
    if not selected:
        which = " that --test selects" if patterns else ""
        raise CliError(f"{args.new} holds no readable entry{which} to accept; nothing was accepted")
    before: dict[str, BaselineEntry] = {}

    def update(on_disk: BaselineFile) -> BaselineFile:
        _report_skipped(baseline, on_disk)
        before.update(on_disk.entries)
        entries = {**on_disk.entries, **selected}
        raw = {k: v for k, v in on_disk.raw.items() if k not in selected}
        return BaselineFile(entries=entries, raw=raw)

    written = update_baselines(baseline, update)
    kept = len(written.entries) - len(selected)
    _out(
        f"accepted {_entries(len(selected))} of {args.new} into {baseline} "
        f"(kept {kept} other entr{'y' if kept == 1 else 'ies'}):"
    )
    for key, entry in sorted(selected.items()):
        old = before.get(key)
        was = "new" if old is None else f"was {format_seconds(old.median_s)}"
        _out(f"  {key}: {format_seconds(entry.median_s)} ({was})")
    return EXIT_OK


def _remove(args: argparse.Namespace) -> int:
    baseline = Path(args.baseline)
    patterns: list[str] = args.test
    found = _read(args.baseline, "baseline file")

    def selected(file: BaselineFile) -> list[str]:
        return sorted(
            k for k in {*file.entries, *file.raw} if _matches(k, patterns, contains=False)
        )

    _check_patterns(
        patterns, {*found.entries, *found.raw}, args.baseline, "nothing was removed", contains=False
    )
    if args.dry_run:
        chosen = selected(found)
        _out(f"would remove {_entries(len(chosen))} from {baseline} (--dry-run: nothing written):")
        for key in chosen:
            _out(f"  {key}")
        return EXIT_OK
    removed: list[str] = []

    def update(on_disk: BaselineFile) -> BaselineFile:  # the file as it is under the lock
        removed[:] = selected(on_disk)
        if not removed:  # another process changed the file since it was read
            raise CliError(f"{baseline} holds no entry --test selects now; nothing was removed")
        gone = set(removed)
        entries = {k: e for k, e in on_disk.entries.items() if k not in gone}
        raw = {k: v for k, v in on_disk.raw.items() if k not in gone}
        return BaselineFile(entries=entries, raw=raw)

    written = update_baselines(baseline, update)
    kept = len(written.entries) + len(written.raw)
    _out(
        f"removed {_entries(len(removed))} from {baseline} "
        f"(kept {kept} other entr{'y' if kept == 1 else 'ies'}):"
    )
    for key in removed:
        _out(f"  {key}")
    return EXIT_OK
