"""The state of one pytest-tweak run: settings, baselines and what each case measured."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from .baselines import BaselineEntry, RunRecord, load_baselines, save_baselines
from .measure import CaseChecks, MeasureSettings
from .verdict import Judging, Limits, Status, Verdict, case_failures, judge

if TYPE_CHECKING:  # torch is imported only once a case runs
    from .case import BenchmarkResult

__all__ = ["CaseRecord", "TweakOptions", "TweakSession", "run_record"]


@dataclass(frozen=True)
class TweakOptions:
    """The settings in force, resolved from the command line, the ini file and defaults."""

    devices: tuple[str, ...]
    baseline_path: Path
    save: bool
    judging: Mapping[str, Judging]  # per device type
    append: bool = False
    settings: MeasureSettings = field(default_factory=MeasureSettings)
    checks: CaseChecks = field(default_factory=CaseChecks)
    limits: Limits = field(default_factory=Limits)  # the defaults; a marker overrides them
    logs: tuple[str, ...] = ()  # TORCH_LOGS artifacts captured per case


@dataclass
class CaseRecord:
    """One case's outcome, for the summary and for saving."""

    nodeid: str
    device: str
    config_id: str
    config: dict[str, object]
    result: BenchmarkResult
    verdict: Verdict
    baseline: BaselineEntry | None
    test_passed: bool | None = None  # set from the test's report


class TweakSession:
    """Baselines in, records and (with ``save``) the updated baseline file out."""

    def __init__(self, options: TweakOptions) -> None:
        self.options = options
        self.baselines: dict[str, BaselineEntry] = {}
        self.records: dict[str, CaseRecord] = {}
        self.saved: dict[str, BaselineEntry] | None = None

    def load(self) -> None:
        """Read the baseline file (`BaselineError` when it is broken)."""
        self.baselines = load_baselines(self.options.baseline_path)

    def judge(
        self,
        nodeid: str,
        result: BenchmarkResult,
        *,
        compare: bool,
        limits: Limits | None = None,
    ) -> Verdict:
        """The verdict for a case; not compared with its baseline when saving, timing is off,
        or told so, but always held to its ``limits`` and to accuracy against eager."""
        accuracy = result.accuracy
        failures = case_failures(
            limits if limits is not None else self.options.limits,
            graph_breaks=result.graph_breaks,
            recompiles=result.recompiles,
            accuracy_problem=None if accuracy is None or accuracy.ok else accuracy.describe(),
        )
        run = run_record(result)
        if self.options.save or not compare or run is None:
            status = Status.FAILED if failures else Status.NOT_COMPARED
            return Verdict(status, failures=failures)
        return judge(
            self.baselines.get(nodeid),
            run,
            graph_breaks=result.graph_breaks,
            recompiles=result.recompiles,
            judging=self.options.judging[result.device.type],
            compile_time_s=result.compile_time_s,
            compile_cache=result.compile_cache.state,
            peak_memory_bytes=result.peak_memory_bytes,
            failures=failures,
        )

    def add(self, record: CaseRecord) -> None:
        self.records[record.nodeid] = record

    def entries_to_save(self) -> dict[str, BaselineEntry]:
        """Entries for the cases whose test passed and that were timed."""
        import torch

        entries = {}
        for record in self.records.values():
            run = run_record(record.result)
            if not record.test_passed or run is None:
                continue
            result = record.result
            entries[record.nodeid] = BaselineEntry(
                runs=(run,),
                graph_breaks=result.graph_breaks,
                recompiles=result.recompiles,
                graph_count=result.graph_count,
                compile_time_s=round(result.compile_time_s, 6),
                device=record.device,
                config=record.config,
                torch=str(torch.__version__),
                compile_cache=result.compile_cache.state,
                peak_memory_bytes=result.peak_memory_bytes,
            )
        return entries

    def save(self) -> dict[str, BaselineEntry]:
        """Merge the passed cases into the baseline file; returns the entries written."""
        entries = self.entries_to_save()
        save_baselines(self.options.baseline_path, entries, append=self.options.append)
        self.saved = entries
        return entries


def run_record(result: BenchmarkResult) -> RunRecord | None:
    """What a timed case contributes to a baseline; ``None`` when timing was off."""
    if result.timing is None:
        return None
    return RunRecord(timing=result.timing, normalized=result.normalized, speedup=result.speedup)
