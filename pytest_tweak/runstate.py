"""The state of one pytest-tweak run: its options, the baseline file as read, the finished
cases, and what was saved."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from .baselines import BaselineEntry, RunRecord, read_baselines, save_baselines
from .collect import CollectedTests
from .measure import Instruments
from .options import TweakOptions, step_summary_problem
from .results import CaseRecord, CaseResult, baseline_entry, run_record
from .verdict import Limits, baseline_too_noisy, case_failures

if TYPE_CHECKING:  # torch is imported only once a case runs
    from .case import BenchmarkResult
    from .registry import BackendRegistry, RegistryError

__all__ = ["LockUse", "RunState", "SaveOutcome"]


@dataclass(frozen=True)
class LockUse:
    """One case's hold of its device lock: the case, the lock, and the seconds it waited for
    another process."""

    nodeid: str
    lock: str
    waited_s: float


@dataclass(frozen=True)
class SaveOutcome:
    """What a ``--tweak-save`` did: the entries written, the other entries the file kept, and
    the measured cases left out because their test did not pass (its own assert, a limit, a
    failed accuracy check) or, when ``interrupted``, because the run was cut short (Ctrl-C,
    ``pytest.exit``) and nothing was written."""

    saved: dict[str, BaselineEntry]
    kept: int = 0
    unsaved: tuple[str, ...] = ()
    #: Saved cases whose baseline is too noisy to gate at their threshold: test id -> what a
    #: run like its last one would be judged with (see `RunState.save`).
    too_noisy: dict[str, str] = field(default_factory=dict)
    interrupted: bool = False
    #: Entries ``--tweak-append`` recorded anew, since their runs on disk were recorded in
    #: another environment: test id -> what changed (``torch: '2.12.0' -> '2.13.0'``).
    restarted: dict[str, list[str]] = field(default_factory=dict)


class RunState:
    """Baselines in; finished cases and (with ``save``) the updated baseline file out."""

    def __init__(self, options: TweakOptions) -> None:
        self.options = options
        self.baselines: dict[str, BaselineEntry] = {}
        #: Entries of the baseline file that could not be read: test id -> the problem.
        self.skipped: dict[str, str] = {}
        #: Whether the baseline file was read (`load`).
        self.loaded = False
        #: Devices asked for by name that torch cannot use: device -> (why, cases skipped).
        self.missing_devices: dict[str, tuple[str, int]] = {}
        #: The cases this process ran, as built where each ran (test id -> case), before
        #: their test's outcome is known; each goes onto its test's report.
        self.finished: dict[str, CaseResult] = {}
        #: Every case of the run as read from its test's report, outcome included: under
        #: pytest-xdist the controller's only view of the cases. The summary, the report
        #: files and the saved baseline entries are made from these.
        self.cases: dict[str, CaseResult] = {}
        #: What a save did (set by `save`).
        self.saved: SaveOutcome | None = None
        #: Per-device timer buffers and reference workloads, shared by the run's cases.
        self.instruments = Instruments()
        #: The backends, per set of ``pytest_tweak_add_backends`` implementations a test sees
        #: (plugins, and the conftest.py files that apply to it); a bad set's error instead.
        self.registries: dict[tuple[str, ...], BackendRegistry | RegistryError] = {}
        #: The environment fingerprint, once a collected test uses ``tweak``.
        self.fingerprint: dict[str, Any] = {}
        #: Cases whose baseline was recorded in another environment: test id -> differences.
        self.environment_changed: dict[str, list[str]] = {}
        #: Every case's hold of its device lock, in the order the cases ran.
        self.lock_uses: list[LockUse] = []
        #: The pytest-xdist workers that reported (on the controller).
        self.workers: list[str] = []
        #: The files this process collected tests from, to tell entries of tests now gone.
        self.collected = CollectedTests()
        #: Under pytest-xdist, on the controller: the entries the workers found gone.
        self.gone_on_workers: set[str] = set()
        #: Why the run stopped after collection (a broken baseline file, say): the usage
        #: error a pytest-xdist worker sends, for the controller to raise.
        self.usage_error: str | None = None

    def load(self) -> None:
        """Read the baseline file, once: when a case of the run needs it, so that a suite that
        never uses ``tweak`` never reads a file of that name (`BaselineError` when it is
        broken, every time; a broken entry is skipped and named in `skipped`)."""
        if self.loaded:
            return
        found = read_baselines(self.options.baseline_path)
        self.baselines = found.entries
        self.skipped = found.skipped
        self.loaded = True

    def gone_entries(self, rootdir: Path) -> list[str]:
        """The baseline file's entries (read or not) whose test no longer exists
        (`CollectedTests.gone`); nothing when the file was not read."""
        keys = [*self.baselines, *self.skipped] if self.loaded else []
        devices = {key: entry.device for key, entry in self.baselines.items()}
        return sorted({*self.collected.gone(keys, rootdir, devices), *self.gone_on_workers})

    def note_missing_devices(self, cases: Sequence[Any]) -> None:
        """Count the collected cases (`pytest_tweak.collect.TweakCase`, or None for other tests)
        skipped because torch cannot use a device the run asked for by name."""
        if self.options.devices_source == "default":
            return
        for case in cases:
            reason = getattr(case, "unavailable", None)
            if reason is not None:
                _, count = self.missing_devices.get(case.device, (reason, 0))
                self.missing_devices[case.device] = (reason, count + 1)

    def summary_problem(self, cases: Sequence[Any], summary: str) -> str | None:
        """Why the markdown report could not be appended to ``summary`` (the value of
        ``$GITHUB_STEP_SUMMARY``) at the end of a run of these collected ``cases``, or
        ``None``; ``None`` too when none of them can run here (nothing is appended then)."""
        if not any(case is not None and case.unavailable is None for case in cases):
            return None
        return step_summary_problem(summary, self.options.markdown_path)

    def missing_device_failure(self) -> str | None:
        """Why the run fails for a device asked for by name that no case could use; ``None``
        when there is none, or ``allow_missing_device`` lets such cases just skip."""
        if not self.missing_devices or self.options.allow_missing_device:
            return None
        parts = [
            f"{device} ({reason}; {count} case(s) skipped)"
            for device, (reason, count) in sorted(self.missing_devices.items())
        ]
        return (
            f"{self.options.devices_source} asked for a device torch cannot use: "
            f"{'; '.join(parts)}. Nothing was measured there, so the run fails; add "
            "--tweak-allow-missing-device (ini tweak_allow_missing_device = true) where "
            "skipping those cases is intended"
        )

    def failures(self, result: BenchmarkResult, limits: Limits | None = None) -> tuple[str, ...]:
        """What fails a case whatever its speed, with or without a baseline: a graph-break or
        recompile limit (``limits``, else the run's defaults) passed, or a result that does
        not match eager's."""
        accuracy = result.accuracy
        return case_failures(
            limits if limits is not None else self.options.limits,
            graph_breaks=result.graph_breaks,
            recompiles=result.recompiles,
            accuracy_problem=None if accuracy is None or accuracy.ok else accuracy.describe(),
            cudagraph_skips=result.cudagraph_skips,
        )

    def run_to_compare(self, result: BenchmarkResult, *, compare: bool) -> RunRecord | None:
        """The run to judge against the baseline; ``None`` when there is nothing to judge:
        when saving, when timing is off, or when told so. The verdict itself comes from the
        ``pytest_tweak_verdict`` hook (pytest-tweak's own rule runs last)."""
        run = run_record(result)
        if self.options.save or not compare:
            return None
        return run

    def add(self, record: CaseRecord) -> CaseResult:
        """Take in a case that just finished: its plain form, built once, goes onto its
        test's report."""
        case = CaseResult.from_record(record)
        self.finished[record.nodeid] = case
        return case

    def add_error(
        self,
        nodeid: str,
        *,
        device: str,
        backend: str,
        config_id: str,
        config: dict[str, object],
        error: str,
    ) -> CaseResult:
        """Take in a case that failed before it had figures (it did not compile or run, or
        its output held NaN): failed, with the error's first line, so that the summary and
        the reports count it and say why."""
        case = CaseResult.of_error(
            nodeid,
            device=device,
            backend=backend,
            config_id=config_id,
            config=config,
            error=error,
            fingerprint=self.fingerprint,
        )
        self.finished[nodeid] = case
        return case

    def reports_due(self, *, collect_only: bool, interrupted: bool) -> bool:
        """Whether the report files are written: when a case ran, or when the run selected
        one (all of them skipped, say); so a ``--collect-only``, a run of other tests only,
        or one stopped by a collection error leaves an earlier report as it was. A case
        selected here or by an xdist worker sets `fingerprint`."""
        return bool(self.cases) or (bool(self.fingerprint) and not collect_only and not interrupted)

    def ordered_cases(self) -> list[CaseResult]:
        """The run's cases in the order they ran; under pytest-xdist, by test id."""
        cases = list(self.cases.values())
        return sorted(cases, key=lambda case: case.nodeid) if self.workers else cases

    def test_failed_after_call(self, nodeid: str) -> None:
        """The test's teardown failed (pytest reports an error) after its call passed: its
        case counts as failed, so it is not saved."""
        case = self.cases.get(nodeid)
        if case is not None and case.outcome == "passed":
            self.cases[nodeid] = replace(case, outcome="failed")

    def entries_to_save(self) -> dict[str, BaselineEntry]:
        """Entries for the cases whose test passed and that were timed."""
        entries = {}
        for nodeid, case in self.cases.items():
            entry = baseline_entry(case) if case.outcome == "passed" else None
            if entry is not None:
                entries[nodeid] = entry
        return entries

    def save(self, *, interrupted: bool = False) -> dict[str, BaselineEntry]:
        """Merge the passed cases (this process's, or every worker's) into the baseline file;
        returns the entries written. An ``interrupted`` run writes nothing: a save cut short
        by Ctrl-C would replace (or, appending, add to) the entries of the cases that happened
        to finish, and the user who stopped it meant to keep the file as it was."""
        if interrupted:
            self.saved = SaveOutcome({}, unsaved=tuple(sorted(self.cases)), interrupted=True)
            return {}
        if not self.cases:  # nothing measured: the file stays as it is
            self.saved = SaveOutcome({})
            return {}
        entries = self.entries_to_save()
        restarted: dict[str, list[str]] = {}
        written = save_baselines(
            self.options.baseline_path, entries, append=self.options.append, restarted=restarted
        )
        unsaved = sorted(n for n, case in self.cases.items() if case.outcome != "passed")
        noisy = {n: why for n in entries if (why := self._too_noisy(n, written[n])) is not None}
        kept = len(set(written) - set(entries))
        self.saved = SaveOutcome(entries, kept, tuple(unsaved), noisy, restarted=restarted)
        return entries

    def _too_noisy(self, nodeid: str, entry: BaselineEntry) -> str | None:
        """`baseline_too_noisy` at the case's device's judging."""
        judging = self.options.judging.get(self.cases[nodeid].device.split(":")[0])
        return None if judging is None else baseline_too_noisy(entry, judging)
