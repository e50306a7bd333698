"""The baseline file: what was measured per case, meant to be committed and diffed.

Format (JSON, keys sorted, two-space indent, one trailing newline)::

    {
      "cases": {
        "tests/perf/test_net.py::test_speed[cpu-default]": {
          "compile_time_s": 3.1, "compile_cache": "hit", "config": {...}, "device": "cpu",
          "graph_breaks": 0, "graph_count": 1, "peak_memory_bytes": 131072,
          "recompiles": 0, "torch": "2.13.0+cpu",
          "backend": "inductor", "fingerprint": {"torch": "2.13.0+cpu", "cpu": ..., ...},
          "runs": [
            {"timing": SUMMARY, "normalized": SUMMARY, "speedup": SUMMARY,
             "device": SUMMARY (cuda/xpu only)}, ...
          ]
        }
      },
      "format": "pytest-tweak-baselines",
      "version": 2
    }

where each SUMMARY is ``{"n", "median", "q1", "q3", "min", "max", "log_sd"}`` of one run's
samples (`pytest_tweak.stats.Summary`): ``timing`` the latency in seconds per call,
``normalized`` the case's latency over the reference workloads', ``speedup`` eager over
compiled, ``device`` (cuda/xpu) the device time per call. An entry holds one
run, or several when runs are appended (``--tweak-save --tweak-append``): their spread is the
between-run noise the verdict accounts for. ``backend`` (the registered backend name),
``fingerprint`` (the environment the entry was recorded in, `pytest_tweak.fingerprint`),
``compile_cache`` (``hit``, ``miss``, ``partial``, ``none``: how inductor's cache served the
compile) and ``peak_memory_bytes`` are optional: an entry without them (written before they
existed) loads as it is and is not gated on them. Version-1 files (one median per case) are
read as one run each and rewritten as version 2 on the next save.

A broken file is never written over: loading raises `BaselineError`, and `save_baselines`
reads the file again right before writing, refuses if it is broken, and replaces it
atomically (a temporary file in the same folder, flushed to disk, then renamed), so a crash
mid-save, even ``SIGKILL``, leaves the old file whole. A broken *entry* in a sound file is
reported by its key and skipped (`BaselineFile.skipped`); a save writes it back unchanged
unless the same case is recorded anew.

Saves are serialized across processes (two pytest runs, xdist workers) by an exclusive lock on
a hidden file beside the baseline (``.NAME.lock``); the file is read, merged and replaced under
the lock, so concurrent savers lose no entry.
"""

from __future__ import annotations

import contextlib
import json
import math
import os
import shlex
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, TypeGuard

from .files import read_only_reason, remove_stale_temps, write_atomic
from .fingerprint import differences
from .formatting import geometric_mean
from .locks import LockTimeout, exclusive
from .stats import Summary

__all__ = [
    "FORMAT",
    "MAX_RUNS",
    "ON_CONFLICT",
    "VERSION",
    "BaselineEntry",
    "BaselineError",
    "BaselineFile",
    "RunRecord",
    "broken_entry_message",
    "load_baselines",
    "merge_baselines",
    "read_baselines",
    "resave_command",
    "save_baselines",
    "update_baselines",
]

FORMAT = "pytest-tweak-baselines"
VERSION = 2
#: Runs kept per entry when runs are appended (``--tweak-save --tweak-append``).
MAX_RUNS = 20
#: Seconds a save waits for another process's save to finish before giving up.
LOCK_TIMEOUT_S = 120.0


class BaselineError(Exception):
    """The baseline file cannot be read or used; the message names the file and the problem."""

    def __init__(self, path: Path, problem: str) -> None:
        super().__init__(f"baseline file {path}: {problem}")
        self.path = path
        self.problem = problem


@dataclass(frozen=True)
class RunRecord:
    """One recorded run of a case: summaries of its samples.

    Attributes:
        timing: Latency, seconds per call.
        normalized: The case's latency over the reference workloads', round by round.
        speedup: The eager model's latency over the compiled one's, round by round.
        device: Device time, seconds per call (cuda and xpu; ``None`` on cpu, in files
            written before it was recorded, or where it was not measured).
        unstable: Of a new run only, never written to a file: why its samples are not one
            steady figure (a step midway), see `pytest_tweak.measure.step_in`.
        load_share: Of a new run only, never written: the share of its measurement's wall
            time other processes took its core (cpu on one thread).
        step_floor: Of a new unstable run only, never written: its faster part's figure
            over its median, at most 1 (`pytest_tweak.measure.Measurement.step_floor`).
    """

    timing: Summary
    normalized: Summary | None = None
    speedup: Summary | None = None
    device: Summary | None = None
    unstable: str | None = field(default=None, compare=False)
    load_share: float | None = field(default=None, compare=False)
    step_floor: float | None = field(default=None, compare=False)

    def as_dict(self) -> dict[str, Any]:
        """The run as the baseline file stores it."""
        record = {
            "timing": self.timing.as_dict(),
            "normalized": None if self.normalized is None else self.normalized.as_dict(),
            "speedup": None if self.speedup is None else self.speedup.as_dict(),
        }
        if self.device is not None:  # cpu runs keep the shape they always had
            record["device"] = self.device.as_dict()
        return record

    @classmethod
    def from_dict(cls, data: Any, where: str) -> RunRecord:
        """A run read back from the file; ``ValueError`` naming ``where`` if malformed."""
        if not isinstance(data, dict):
            raise ValueError(f"{where}: expected an object, got {type(data).__name__}")
        optional: dict[str, Summary | None] = {}
        for name in ("normalized", "speedup", "device"):
            value = data.get(name)
            optional[name] = None if value is None else Summary.from_dict(value, f"{where}.{name}")
        return cls(
            timing=Summary.from_dict(data.get("timing"), f"{where}.timing"),
            normalized=optional["normalized"],
            speedup=optional["speedup"],
            device=optional["device"],
        )


@dataclass(frozen=True)
class BaselineEntry:
    """What was recorded for one case: its runs (oldest first) and its dynamo counts."""

    runs: tuple[RunRecord, ...]
    graph_breaks: int
    recompiles: int
    graph_count: int = 0
    compile_time_s: float | None = None
    device: str | None = None
    config: Mapping[str, Any] = field(default_factory=dict)
    torch: str | None = None
    backend: str | None = None
    fingerprint: Mapping[str, Any] = field(default_factory=dict)
    compile_cache: str | None = None
    peak_memory_bytes: int | None = None

    def __post_init__(self) -> None:
        if not self.runs:
            raise ValueError("a baseline entry needs at least one run")

    @property
    def median_s(self) -> float:
        """The baseline's seconds per call: the geometric mean of its runs' medians."""
        return geometric_mean([run.timing.median for run in self.runs])

    def appended(self, newer: BaselineEntry) -> BaselineEntry:
        """``newer``, carrying this entry's runs before its own (at most `MAX_RUNS`).

        A run of ``newer`` that this entry holds already is not added twice, and a ``newer``
        that brings no run this entry lacks leaves it unchanged: so appending is idempotent,
        and shard files recorded from one baseline merge without copying its runs.
        """
        fresh = tuple(run for run in newer.runs if run not in self.runs)
        if not fresh:
            return self
        return replace(newer, runs=(*self.runs, *fresh)[-MAX_RUNS:])

    def as_dict(self) -> dict[str, Any]:
        """The entry as the baseline file stores it."""
        return {
            "runs": [run.as_dict() for run in self.runs],
            "graph_breaks": self.graph_breaks,
            "recompiles": self.recompiles,
            "graph_count": self.graph_count,
            "compile_time_s": self.compile_time_s,
            "device": self.device,
            "config": dict(self.config),
            "torch": self.torch,
            "backend": self.backend,
            "fingerprint": dict(self.fingerprint),
            "compile_cache": self.compile_cache,
            "peak_memory_bytes": self.peak_memory_bytes,
        }

    @classmethod
    def from_dict(cls, data: Any, where: str, version: int = VERSION) -> BaselineEntry:
        """Build from parsed JSON of file ``version``; `ValueError` names what is wrong."""
        if not isinstance(data, dict):
            raise ValueError(f"{where}: expected an object, got {type(data).__name__}")
        counts = {}
        for name in ("graph_breaks", "recompiles", "graph_count"):
            value = data.get(name, 0)
            if not isinstance(value, int) or isinstance(value, bool) or value < 0:
                raise ValueError(f"{where}: {name!r} must be an integer >= 0, got {value!r}")
            counts[name] = value
        compile_time = data.get("compile_time_s")
        if compile_time is not None and not _is_number(compile_time):
            raise ValueError(f"{where}: 'compile_time_s' must be a number, got {compile_time!r}")
        peak = data.get("peak_memory_bytes")
        if peak is not None and (not isinstance(peak, int) or isinstance(peak, bool) or peak < 0):
            raise ValueError(f"{where}: 'peak_memory_bytes' must be an integer >= 0, got {peak!r}")
        if not isinstance(data.get("config", {}), dict):
            raise ValueError(f"{where}: 'config' must be an object")
        if not isinstance(data.get("fingerprint") or {}, dict):
            raise ValueError(f"{where}: 'fingerprint' must be an object")
        if version == 1:
            runs: tuple[RunRecord, ...] = (_run_from_v1(data, where),)
        else:
            raw_runs = data.get("runs")
            if not isinstance(raw_runs, list) or not raw_runs:
                raise ValueError(f"{where}: 'runs' must be a non-empty list of runs")
            runs = tuple(
                RunRecord.from_dict(run, f"{where}.runs[{i}]") for i, run in enumerate(raw_runs)
            )
        return cls(
            runs=runs,
            compile_time_s=None if compile_time is None else float(compile_time),
            device=_optional_str(data.get("device")),
            config=dict(data.get("config", {})),
            torch=_optional_str(data.get("torch")),
            backend=_optional_str(data.get("backend")),
            fingerprint=dict(data.get("fingerprint") or {}),
            compile_cache=_optional_str(data.get("compile_cache")),
            peak_memory_bytes=peak,
            **counts,
        )


def _run_from_v1(data: dict[str, Any], where: str) -> RunRecord:
    """A version-1 entry held one median (and mean/stddev/rounds): one run, no companions."""
    median = data.get("median_s")
    if not _is_number(median) or not math.isfinite(median) or median <= 0:
        raise ValueError(f"{where}: 'median_s' must be a positive number, got {median!r}")
    stats = data.get("stats", {})
    if not isinstance(stats, dict):
        raise ValueError(f"{where}: 'stats' must be an object")
    rounds = stats.get("rounds", 1)
    stddev = stats.get("stddev", 0.0)
    n = rounds if isinstance(rounds, int) and not isinstance(rounds, bool) and rounds > 0 else 1
    spread = float(stddev) if _is_number(stddev) and math.isfinite(stddev) else 0.0
    low = stats.get("min", median)
    high = stats.get("max", median)
    low = float(low) if _is_number(low) and 0 < low <= median else float(median)
    high = float(high) if _is_number(high) and high >= median else float(median)
    # the median's standard error of a normal sample, 1.2533 sd / sqrt(n), on the log scale
    log_sd = 1.2533 * max(spread, 0.0) / float(median) / math.sqrt(n)
    timing = Summary(
        n=n,
        median=float(median),
        q1=float(median),
        q3=float(median),
        min=low,
        max=high,
        log_sd=log_sd,
    )
    return RunRecord(timing=timing)


def _is_number(value: Any) -> TypeGuard[float]:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def _optional_str(value: Any) -> str | None:
    return None if value is None else str(value)


_READABLE_VERSIONS = (1, 2)


@dataclass(frozen=True)
class BaselineFile:
    """What a baseline file holds.

    Attributes:
        entries: The readable entries, by test id.
        skipped: The entries that could not be read, by test id: what is wrong with each.
        raw: Those entries' JSON as found, so that a save writes them back unchanged.
        version: The file's format version (`VERSION` for a file that does not exist).
    """

    entries: dict[str, BaselineEntry] = field(default_factory=dict)
    skipped: dict[str, str] = field(default_factory=dict)
    raw: dict[str, Any] = field(default_factory=dict)
    version: int = VERSION


def read_baselines(path: Path) -> BaselineFile:
    """Read the baseline file; a missing file holds no baselines.

    An entry that cannot be read is skipped and named in `BaselineFile.skipped`; the others
    are kept.

    Raises:
        BaselineError: the file exists but cannot be read, is not valid JSON, is not a
            pytest-tweak baseline file, or has a version this pytest-tweak cannot read.
    """
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        return BaselineFile()
    except (OSError, UnicodeDecodeError) as exc:
        raise BaselineError(path, f"cannot be read: {exc}") from exc
    if not text.strip():
        raise BaselineError(
            path,
            "is empty (a baseline file pytest-tweak writes never is: was it truncated outside "
            "pytest-tweak?)",
        )
    try:
        data = json.loads(
            text,
            parse_constant=_refuse_constant,
            parse_float=_finite_float,
            object_pairs_hook=_refuse_duplicates,
        )
    except json.JSONDecodeError as exc:
        raise BaselineError(
            path, f"is not valid JSON (line {exc.lineno}, column {exc.colno}: {exc.msg})"
        ) from exc
    except (ValueError, RecursionError) as exc:
        raise BaselineError(path, f"is not valid JSON ({exc})") from exc
    if not isinstance(data, dict) or data.get("format") != FORMAT:
        raise BaselineError(path, f'is not a pytest-tweak baseline file (no "format": "{FORMAT}")')
    version = data.get("version")
    if isinstance(version, str) and version.strip().isdigit():
        raise BaselineError(
            path,
            f'has "version": {json.dumps(version)}, a string; the version is a number: write '
            f'"version": {version.strip()} (this pytest-tweak reads versions '
            f"{', '.join(map(str, _READABLE_VERSIONS))})",
        )
    if isinstance(version, bool) or version not in _READABLE_VERSIONS:
        newer = isinstance(version, int) and not isinstance(version, bool) and version > VERSION
        raise BaselineError(
            path,
            ('has no "version"' if version is None else f'has "version": {json.dumps(version)}')
            + "; this pytest-tweak reads versions "
            f"{', '.join(map(str, _READABLE_VERSIONS))}"
            + (" (the file was written by a newer pytest-tweak: upgrade it)" if newer else ""),
        )
    cases = data.get("cases")
    if not isinstance(cases, dict):
        raise BaselineError(path, "'cases' must be an object mapping test ids to entries")
    found = BaselineFile(version=version)
    for key, value in cases.items():
        try:
            found.entries[key] = BaselineEntry.from_dict(value, f"case {key!r}", version)
        except (ValueError, TypeError, OverflowError) as exc:
            found.skipped[key] = str(exc)
            found.raw[key] = value
    return found


def broken_entry_message(
    path: Path, key: str, problem: str, root: str = "", flags: str = ""
) -> str:
    """Why a case whose baseline entry cannot be read fails, and how to repair the entry."""
    return (
        f"its entry in baseline file {path} cannot be read, so the case has no gate: "
        f"{problem}. The file is left as it is. Repair the entry by hand "
        f"(`python -m pytest_tweak show {path}` lists every unreadable entry), take it from "
        "a good copy of the file (`python -m pytest_tweak merge`), or record this case anew: "
        f"{resave_command(key, root=root, flags=flags)}"
    )


def resave_command(*nodeids: str, root: str = "", flags: str = "") -> str:
    """The command that records these cases' entries anew, and why it names them: a
    ``--tweak-save`` run replaces the entry of every case it measures. ``root``: the rootdir
    as seen from where pytest was started (`TweakOptions.test_root`), since test ids are
    relative to the rootdir and pytest reads its arguments relative to where it runs;
    ``flags``: what the command must repeat to write the same file
    (`TweakOptions.resave_flags`)."""
    named = " ".join(shlex.quote(f"{root}/{nodeid}" if root else nodeid) for nodeid in nodeids)
    save = f"--tweak-save {flags}".rstrip()
    return (
        f"`pytest {named} {save}` (a --tweak-save run replaces the entry of every case "
        f"it measures, so name the case{'s' if len(nodeids) > 1 else ''})"
    )


def _refuse_constant(name: str) -> Any:
    raise ValueError(f"{name} is not a JSON value")


def _finite_float(text: str) -> float:
    """A JSON number as a float; one too large for a float (``1e400``) would read as
    infinity, which no save could write back."""
    value = float(text)
    if not math.isfinite(value):
        raise ValueError(f"the number {text} is out of a float's range")
    return value


def _refuse_duplicates(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    """A JSON object; a key given twice (a merge that kept both sides) is refused rather than
    read as its last copy, which a save would then write alone, losing the other."""
    found: dict[str, Any] = {}
    for key, value in pairs:
        if key in found:
            raise ValueError(
                f"the key {key!r} appears twice in one object (a merge that kept both "
                "sides?): keep one of them"
            )
        found[key] = value
    return found


def load_baselines(path: Path) -> dict[str, BaselineEntry]:
    """The readable entries of the baseline file (see `read_baselines`)."""
    return read_baselines(path).entries


def render(entries: Mapping[str, BaselineEntry], raw: Mapping[str, Any] | None = None) -> str:
    """The file's text: stable key order, so a re-save of unchanged data is a no-op diff.

    ``raw`` holds entries that could not be read, written back as they were found.
    """
    cases: dict[str, Any] = dict(raw or {})
    cases.update({key: entry.as_dict() for key, entry in entries.items()})
    data = {"format": FORMAT, "version": VERSION, "cases": cases}
    return json.dumps(data, indent=2, sort_keys=True, allow_nan=False) + "\n"


def save_baselines(
    path: Path,
    updates: Mapping[str, BaselineEntry],
    *,
    append: bool = False,
    restarted: dict[str, list[str]] | None = None,
) -> dict[str, BaselineEntry]:
    """Merge ``updates`` into the file at ``path`` and replace it atomically.

    Entries of cases not in ``updates`` are kept as they are on disk now. With ``append``, an
    update adds its runs to the entry on disk (keeping the newest `MAX_RUNS`) instead of
    replacing them, when both were recorded in one environment: an entry on disk recorded in
    another (its fingerprint `differences`) is replaced, since runs of two environments are
    not one baseline's noise, and the entry's fingerprint would name only the newer; ``restarted``,
    when given, receives each such test id with what changed. A version-1 file is rewritten
    as version 2. Returns what was written.

    Raises:
        BaselineError: the existing file is broken (it is left untouched), or writing failed
            (the old file is left untouched).
    """

    def update(on_disk: BaselineFile) -> BaselineFile:
        merged = dict(on_disk.entries)
        for key, entry in updates.items():
            old = merged.get(key)
            if not append or old is None:
                merged[key] = entry
                continue
            changed = differences(old.fingerprint, entry.fingerprint)
            if changed and restarted is not None:
                restarted[key] = changed
            merged[key] = entry if changed else old.appended(entry)
        # unreadable entries stay as they were, unless this save records the case anew
        kept_raw = {k: v for k, v in on_disk.raw.items() if k not in updates}
        return BaselineFile(entries=merged, raw=kept_raw)

    return update_baselines(path, update).entries


def update_baselines(path: Path, update: Callable[[BaselineFile], BaselineFile]) -> BaselineFile:
    """Read the file at ``path``, pass it to ``update`` and replace the file atomically with
    what that returns (its ``entries``, and its ``raw`` entries written back as found), all
    under the file's lock. Returns what was written.

    Raises:
        BaselineError: the existing file is broken, ``update`` raised it, or writing failed;
            in each case the file is left untouched.
    """
    # a link is followed: the file it names is updated (and locked), the link kept
    path = Path(os.path.realpath(path)) if path.is_symlink() else path
    read_only = read_only_reason(path)
    if read_only is not None:
        raise BaselineError(path, f"cannot be written: {read_only}; nothing was written")
    with _locked(path):
        remove_stale_temps(path)  # of a save killed mid-write; under the lock none is live
        written = update(read_baselines(path))
        _replace(path, render(written.entries, written.raw))
    return written


#: How `merge_baselines` settles a test id found in several files.
ON_CONFLICT = ("append-runs", "last", "error")


def merge_baselines(
    sources: Sequence[tuple[str, BaselineFile]], on_conflict: str = "append-runs"
) -> BaselineFile:
    """The union of ``sources`` (``(name, file)`` pairs, oldest first): no entry is lost.

    A test id in several sources with different entries is settled by ``on_conflict``:
    ``append-runs`` gives one entry with the runs of all (in order, each run once, the newest
    `MAX_RUNS`) and the figures of the last that brought a new run, as ``--tweak-save
    --tweak-append`` would; ``last`` keeps the last source's entry; ``error`` raises
    `ValueError` naming the test id and the sources. Equal entries never conflict. An
    unreadable entry is carried as found, unless a source has a readable entry for it.
    """
    if on_conflict not in ON_CONFLICT:
        raise ValueError(f"on_conflict must be one of {', '.join(ON_CONFLICT)}: {on_conflict!r}")
    entries: dict[str, BaselineEntry] = {}
    origin: dict[str, str] = {}
    raw: dict[str, Any] = {}
    for name, found in sources:
        for key, entry in found.entries.items():
            old = entries.get(key)
            if old is None or old == entry:
                entries[key] = entry
            elif on_conflict == "error":
                raise ValueError(
                    f"test id {key!r} has different entries in {origin[key]} and {name} "
                    "(choose --on-conflict=append-runs or last)"
                )
            elif on_conflict == "last":
                entries[key] = entry
            elif changed := differences(old.fingerprint, entry.fingerprint):
                raise ValueError(
                    f"test id {key!r} was recorded in other environments in {origin[key]} and "
                    f"{name} ({'; '.join(changed)}): their runs are not one baseline's noise, "
                    "so they are not pooled; merge the files of one runner kind, or choose "
                    "--on-conflict=last to keep the last file's entry"
                )
            else:
                entries[key] = old.appended(entry)
            origin.setdefault(key, name)
        for key, value in found.raw.items():
            raw[key] = value
    return BaselineFile(
        entries=entries,
        skipped={},
        raw={key: value for key, value in raw.items() if key not in entries},
    )


def _replace(path: Path, text: str) -> None:
    """Write ``text`` to ``path`` atomically (`pytest_tweak.files.write_atomic`), keeping the
    file's mode; a failure is a `BaselineError`."""
    try:
        write_atomic(path, text, keep_mode=True)
    except OSError as exc:
        raise BaselineError(path, f"could not be written: {exc}") from exc


@contextlib.contextmanager
def _locked(path: Path, timeout_s: float | None = None) -> Iterator[None]:
    """Hold an exclusive lock on ``.NAME.lock`` beside ``path`` (across processes)."""
    wait_s = LOCK_TIMEOUT_S if timeout_s is None else timeout_s
    lock_path = path.with_name(f".{path.name}.lock")
    held = contextlib.ExitStack()
    try:
        held.enter_context(exclusive(lock_path, wait_s))
    except LockTimeout:
        raise BaselineError(
            path,
            f"another process has held its save lock ({lock_path}) for over "
            f"{wait_s:g} s; nothing was saved",
        ) from None
    except OSError as exc:
        raise BaselineError(path, f"could not be locked for saving ({lock_path}): {exc}") from exc
    with held:
        yield
