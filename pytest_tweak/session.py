"""The state of one pytest-tweak run: settings, baselines and what each case measured."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from .baselines import BaselineEntry, load_baselines, save_baselines
from .measure import MeasureSettings
from .verdict import Status, Verdict, judge

if TYPE_CHECKING:  # torch is imported only once a case runs
    from .case import BenchmarkResult

__all__ = ["CaseRecord", "TweakOptions", "TweakSession"]


@dataclass(frozen=True)
class TweakOptions:
    """The settings in force, resolved from the command line, the ini file and defaults."""

    devices: tuple[str, ...]
    baseline_path: Path
    threshold_pct: float
    save: bool
    settings: MeasureSettings = field(default_factory=MeasureSettings)


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

    def judge(self, nodeid: str, result: BenchmarkResult, *, compare: bool) -> Verdict:
        """The verdict for a case; not compared when saving, timing is off, or told so."""
        if self.options.save or not compare or result.median_s is None:
            return Verdict(Status.NOT_COMPARED)
        return judge(
            self.baselines.get(nodeid),
            median_s=result.median_s,
            graph_breaks=result.graph_breaks,
            recompiles=result.recompiles,
            threshold_pct=self.options.threshold_pct,
        )

    def add(self, record: CaseRecord) -> None:
        self.records[record.nodeid] = record

    def entries_to_save(self) -> dict[str, BaselineEntry]:
        """Entries for the cases whose test passed and that were timed."""
        import torch

        entries = {}
        for record in self.records.values():
            result = record.result
            if not record.test_passed or result.median_s is None or result.stats is None:
                continue
            entries[record.nodeid] = BaselineEntry(
                median_s=result.median_s,
                graph_breaks=result.graph_breaks,
                recompiles=result.recompiles,
                graph_count=result.graph_count,
                compile_time_s=round(result.compile_time_s, 6),
                device=record.device,
                stats=result.stats.as_dict(),
                config=record.config,
                torch=str(torch.__version__),
            )
        return entries

    def save(self) -> dict[str, BaselineEntry]:
        """Merge the passed cases into the baseline file; returns the entries written."""
        entries = self.entries_to_save()
        save_baselines(self.options.baseline_path, entries)
        self.saved = entries
        return entries
