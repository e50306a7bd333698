"""The state of one pytest-tweak run: settings, baselines and what each case measured."""

from __future__ import annotations

import contextlib
import dataclasses
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from .baselines import BaselineEntry, RunRecord, read_baselines, save_baselines
from .measure import CaseChecks, Instruments, MeasureSettings
from .options import (
    DEFAULT_COMPILE_THRESHOLD_PCT,
    DEFAULT_MEMORY_THRESHOLD_PCT,
    DEFAULT_RUN_NOISE_PCT,
    DEFAULT_THRESHOLD_PCT,
)
from .report import SummaryItem, summary_item
from .verdict import Judging, Limits, Verdict, case_failures

if TYPE_CHECKING:  # torch is imported only once a case runs
    from .case import BenchmarkResult
    from .registry import BackendRegistry

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
    #: A baseline recorded in another environment: "warn", "skip" or "fail".
    fingerprint_policy: str = "warn"
    #: Device indices listed per accelerator type (``cuda:0,cuda:1``), taken by xdist workers.
    device_pools: Mapping[str, tuple[int, ...]] = field(default_factory=dict)
    #: Show each case's phase on the terminal while it runs: "auto", "on" or "off".
    progress: str = "auto"
    #: The report files to write (``--tweak-json``, ``--tweak-markdown``, ``--tweak-html``).
    json_path: Path | None = None
    markdown_path: Path | None = None
    html_path: Path | None = None
    #: Where ``devices`` came from: ``--tweak-device``, its ini twin, or ``default``.
    devices_source: str = "default"
    #: A device asked for by name that torch cannot use skips its cases without failing.
    allow_missing_device: bool = False

    def describe(self, root: Path) -> str:
        """The settings in one line: the devices, the baseline file (relative to ``root``
        when inside it), and every other setting that is not its default."""
        baseline = self.baseline_path
        with contextlib.suppress(ValueError):
            baseline = baseline.relative_to(root)
        parts = [f"devices={','.join(self.devices)}", f"baseline={baseline}"]
        if self.save:
            parts.append("save (append)" if self.append else "save")
        for name, values in (
            ("threshold", {d: j.threshold_pct for d, j in self.judging.items()}),
            ("run-noise", {d: j.run_noise_pct for d, j in self.judging.items()}),
        ):
            default = DEFAULT_THRESHOLD_PCT if name == "threshold" else DEFAULT_RUN_NOISE_PCT
            changed = [f"{d}={values[d]:g}%" for d in self.devices if values[d] != default[d]]
            if changed:
                parts.append(f"{name}={','.join(changed)}")
        first = self.judging[self.devices[0]] if self.devices else None
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
        parts += _changed(self.settings, MeasureSettings())
        parts += _changed(self.checks, CaseChecks())
        parts += [f"max-{part}" for part in _changed(self.limits, Limits())]
        if self.logs:
            parts.append(f"logs={','.join(self.logs)}")
        if self.fingerprint_policy != "warn":
            parts.append(f"fingerprint-policy={self.fingerprint_policy}")
        for name in ("json", "markdown", "html"):
            path = getattr(self, f"{name}_path")
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


@dataclass
class CaseRecord:
    """One case's outcome, for the summary, for saving and for observers.

    Attributes:
        nodeid: The test's node id, the baseline key.
        device: The device type.
        config_id: The config's id.
        config: The config's description (``config.describe()``).
        result: What the case measured.
        verdict: The verdict against the baseline.
        baseline: The baseline entry, if the file has one.
        backend: The registered name of the case's backend.
        fingerprint: The environment fingerprint of the run.
        test_passed: Whether the test passed; set from the test's report.
    """

    nodeid: str
    device: str
    config_id: str
    config: dict[str, object]
    result: BenchmarkResult
    verdict: Verdict
    baseline: BaselineEntry | None
    backend: str = "inductor"
    fingerprint: Mapping[str, Any] = field(default_factory=dict)
    test_passed: bool | None = None  # set from the test's report


@dataclass(frozen=True)
class LockUse:
    """One case's hold of its device lock: the case, the lock, and the seconds it waited for
    another process."""

    nodeid: str
    lock: str
    waited_s: float


class TweakSession:
    """Baselines in, records and (with ``save``) the updated baseline file out."""

    def __init__(self, options: TweakOptions) -> None:
        self.options = options
        self.baselines: dict[str, BaselineEntry] = {}
        #: Entries of the baseline file that could not be read: test id -> the problem.
        self.skipped: dict[str, str] = {}
        #: Whether the baseline file was read (`load`).
        self.loaded = False
        #: Entries a save kept as they were on disk (set by `save`).
        self.kept = 0
        #: Devices asked for by name that torch cannot use: device -> (why, cases skipped).
        self.missing_devices: dict[str, tuple[str, int]] = {}
        self.records: dict[str, CaseRecord] = {}
        self.saved: dict[str, BaselineEntry] | None = None
        #: Per-device timer buffers and reference workloads, shared by the run's cases.
        self.instruments = Instruments()
        #: The backends of this run; built from the plugins' contributions on first use.
        self.registry: BackendRegistry | None = None
        #: The environment fingerprint, once a collected test uses ``tweak``.
        self.fingerprint: dict[str, Any] = {}
        #: Cases whose baseline was recorded in another environment: test id -> differences.
        self.environment_changed: dict[str, list[str]] = {}
        #: Every case's hold of its device lock, in the order the cases ran.
        self.lock_uses: list[LockUse] = []
        #: What pytest-xdist workers sent (on the controller): summary items, entries to
        #: save, lock holds and the workers' ids.
        self.remote_items: list[SummaryItem] = []
        self.remote_entries: dict[str, BaselineEntry] = {}
        self.workers: list[str] = []
        #: Every case's plain data (`pytest_tweak.results.CaseResult.to_dict`), test id ->
        #: dict, as read from the test reports: under pytest-xdist the controller's only
        #: view of the cases, and what the report files are written from.
        self.cases: dict[str, dict[str, Any]] = {}

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

    def note_missing_devices(self, cases: Sequence[Any]) -> None:
        """Count the collected cases (``pytest_tweak.plugin._Case``, or None for other tests)
        skipped because torch cannot use a device the run asked for by name."""
        if self.options.devices_source == "default":
            return
        for case in cases:
            reason = getattr(case, "unavailable", None)
            if reason is not None:
                _, count = self.missing_devices.get(case.device, (reason, 0))
                self.missing_devices[case.device] = (reason, count + 1)

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
                backend=record.backend,
                fingerprint=dict(record.fingerprint),
                compile_cache=result.compile_cache.state,
                peak_memory_bytes=result.peak_memory_bytes,
            )
        return entries

    def summary_items(self) -> list[SummaryItem]:
        """The summary's rows: this process's cases, then the workers' (by test id)."""
        local = [summary_item(record) for record in self.records.values()]
        return local + sorted(self.remote_items, key=lambda item: item.nodeid)

    def worker_output(self, worker: str) -> dict[str, Any]:
        """What a pytest-xdist worker sends the controller, in plain JSON values."""
        return {
            "worker": worker,
            "summary": [summary_item(record).to_dict() for record in self.records.values()],
            "entries": {
                key: entry.as_dict()
                for key, entry in (self.entries_to_save() if self.options.save else {}).items()
            },
            "lock_uses": [dataclasses.asdict(use) for use in self.lock_uses],
            "environment_changed": self.environment_changed,
            "fingerprint": self.fingerprint,
            "missing_devices": {d: list(found) for d, found in self.missing_devices.items()},
        }

    def absorb(self, output: Mapping[str, Any]) -> None:
        """Take in what a worker sent (`worker_output`); on the controller."""
        worker = str(output.get("worker", "?"))
        self.workers.append(worker)
        self.remote_items += [SummaryItem.from_dict(item) for item in output.get("summary", ())]
        for key, data in output.get("entries", {}).items():
            self.remote_entries[key] = BaselineEntry.from_dict(data, f"case {key!r} from {worker}")
        self.lock_uses += [LockUse(**use) for use in output.get("lock_uses", ())]
        self.environment_changed.update(output.get("environment_changed", {}))
        if not self.fingerprint:
            self.fingerprint = dict(output.get("fingerprint", {}))
        for device, (reason, count) in output.get("missing_devices", {}).items():
            self.missing_devices[device] = (str(reason), int(count))  # each worker collects all

    def save(self) -> dict[str, BaselineEntry]:
        """Merge the passed cases (this process's and the workers') into the baseline file;
        returns the entries written."""
        entries = {**self.remote_entries, **self.entries_to_save()}
        written = save_baselines(self.options.baseline_path, entries, append=self.options.append)
        self.saved = entries
        self.kept = len(set(written) - set(entries))
        return entries


def run_record(result: BenchmarkResult) -> RunRecord | None:
    """What a timed case contributes to a baseline; ``None`` when timing was off."""
    if result.timing is None:
        return None
    return RunRecord(
        timing=result.timing,
        normalized=result.normalized,
        speedup=result.speedup,
        device=result.device_time,
        unstable=result.unstable,
        load_share=result.load_share,
    )
