"""One case's outcome: the live record observers get, its one plain form, and what a whole
run's cases say together.

`CaseRecord` is what the ``pytest_tweak_case_result`` hook gets while the case's objects are
alive (the `BenchmarkResult` itself). `CaseResult` is the one plain form of a finished case:
what the case measured (every figure, with its uncertainty), its baseline's figures and its
verdict, as builtin types only. It is built once, where the case ran
(`CaseResult.from_record`), travels on the test's report (``report.tweak_case``, the dict of
`CaseResult.to_dict`) and is read back where the run is summed up (`CaseResult.from_dict`):
the terminal summary, the report files and the saved baseline entry (`baseline_entry`) all
read it, and a pytest-xdist controller, which never sees the workers' objects, reads the same
data as a single process.

`suite_tuning` is `pytest_tweak.tuning.tune` at suite level: per test and device, the fastest
config and its margin over the next.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from operator import attrgetter
from typing import TYPE_CHECKING, Any

from .baselines import BaselineEntry, RunRecord
from .formatting import geometric_mean
from .stats import Summary, interval, lead
from .verdict import Change, Status, Verdict

if TYPE_CHECKING:  # torch is imported only once a case runs
    from .case import BenchmarkResult

__all__ = [
    "REPORT_ATTRIBUTE",
    "SCHEMA_VERSION",
    "BaselineFigures",
    "CaseRecord",
    "CaseResult",
    "TuneRow",
    "base_nodeid",
    "baseline_entry",
    "junit_properties",
    "run_record",
    "suite_tuning",
]

#: The version of `CaseResult.to_dict`'s layout and of the JSON report around it.
SCHEMA_VERSION = 2
#: The attribute of a test's call report that carries its case (``CaseResult.to_dict()``).
#: pytest serializes every attribute of a report for pytest-xdist
#: (``pytest_report_to_serializable``) and restores it on the controller.
REPORT_ATTRIBUTE = "tweak_case"


def base_nodeid(nodeid: str, case_id: str | None = None) -> str:
    """The test of a case: its node id without the case's own id (``cpu-default``), the
    test's other parameters kept (``test_x[cpu-default-16]`` -> ``test_x[16]``); without
    ``case_id``, without any parameters."""
    name, bracket, params = nodeid.partition("[")
    if not bracket or case_id is None:
        return name
    params = params[:-1] if params.endswith("]") else params
    parts = f"-{params}-".replace(f"-{case_id}-", "-", 1).strip("-")
    return f"{name}[{parts}]" if parts else name


@dataclass
class CaseRecord:
    """One case's outcome while its objects are alive: what the ``pytest_tweak_case_result``
    hook gets. Its plain form, `CaseResult`, is what the run keeps.

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
        over_limit: What exceeds the test's limits (graph breaks, recompiles, CUDA graph
            skips), in words.
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
    over_limit: tuple[str, ...] = ()


@dataclass(frozen=True)
class BaselineFigures:
    """What a case's baseline entry holds, condensed to the figures a report shows.

    Attributes:
        median_s: Seconds per call: the geometric mean of its runs' medians.
        normalized: The same of its normalized times (``None``: not recorded).
        speedup: The same of its speed-ups over eager (``None``: not recorded).
        runs: Runs in the entry.
        graph_breaks, recompiles, graph_count: Its dynamo counts.
        compile_time_s, compile_cache: Its first-call time and inductor cache state.
        peak_memory_bytes: Its peak memory (``None``: not recorded).
        torch: The torch version it was recorded with.
    """

    median_s: float
    runs: int
    graph_breaks: int
    recompiles: int
    graph_count: int = 0
    normalized: float | None = None
    speedup: float | None = None
    compile_time_s: float | None = None
    compile_cache: str | None = None
    peak_memory_bytes: int | None = None
    torch: str | None = None

    @classmethod
    def from_entry(cls, entry: BaselineEntry) -> BaselineFigures:
        def mean(values: Sequence[Summary | None]) -> float | None:
            if not values or any(v is None for v in values):
                return None
            return geometric_mean([v.median for v in values if v])

        return cls(
            median_s=entry.median_s,
            runs=len(entry.runs),
            graph_breaks=entry.graph_breaks,
            recompiles=entry.recompiles,
            graph_count=entry.graph_count,
            normalized=mean([run.normalized for run in entry.runs]),
            speedup=mean([run.speedup for run in entry.runs]),
            compile_time_s=entry.compile_time_s,
            compile_cache=entry.compile_cache,
            peak_memory_bytes=entry.peak_memory_bytes,
            torch=entry.torch,
        )

    def to_dict(self) -> dict[str, Any]:
        return {
            "median_s": self.median_s,
            "runs": self.runs,
            "graph_breaks": self.graph_breaks,
            "recompiles": self.recompiles,
            "graph_count": self.graph_count,
            "normalized": self.normalized,
            "speedup": self.speedup,
            "compile_time_s": self.compile_time_s,
            "compile_cache": self.compile_cache,
            "peak_memory_bytes": self.peak_memory_bytes,
            "torch": self.torch,
        }

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> BaselineFigures:
        return cls(**{name: data[name] for name in cls.__dataclass_fields__})


@dataclass(frozen=True)
class CaseResult:
    """One case of one test, as plain data (see the module's doc and docs/reports.md).

    Attributes:
        nodeid: The case's node id (the baseline key).
        device: The device type; ``device_name`` names the device (the cpu model for cpu).
        backend: The registered backend name; ``config_id`` and ``config`` its config.
        outcome: The test's outcome: ``passed``, ``failed`` or ``skipped``.
        timing: Latency, seconds per call; ``normalized``: latency over the reference
            workloads'; ``eager``: the uncompiled model's seconds per call; ``speedup``: eager
            over compiled, round by round; ``device_time``: the kernels' time per call (cuda,
            xpu). ``None`` where not measured.
        host_overhead_s: Latency minus device time (`host_overhead_s`); ``host_weight``: how
            much of the latency moves with the host (see `pytest_tweak.measure.host_weight`).
        cudagraph_skips: Why inductor ran graphs without CUDA graphs, as it said it.
        load_share: The share of the measurement's wall time other processes took the case's
            core (cpu, one thread); ``None`` where not seen.
        unstable: Why the case's samples are not one steady figure (its time stepped
            midway); ``None`` when they are.
        over_limit: What exceeds the test's limits (`tweak_limits`, ``--tweak-max-*``), in
            words; such a case does not compete in the tuning table.
        compile: ``time_s`` (the first call), ``dynamo_s``, ``inductor_s``, ``frames``,
            ``cache`` (``state``, ``hits``, ``misses``) and ``cold``.
        baseline: The baseline entry's figures; ``None`` without one.
        verdict: The verdict against the baseline.
        environment: The fingerprint of the environment the case ran in.
    """

    nodeid: str
    device: str
    backend: str
    config_id: str
    config: Mapping[str, Any]
    verdict: Verdict
    device_name: str | None = None
    outcome: str | None = None
    timing: Summary | None = None
    normalized: Summary | None = None
    eager: Summary | None = None
    speedup: Summary | None = None
    iterations: int = 1
    stopped: str | None = None
    host_bound: bool = False
    graph_breaks: int = 0
    break_reasons: tuple[Mapping[str, Any], ...] = ()
    recompiles: int = 0
    recompile_reasons: tuple[str, ...] = ()
    recompile_limit_hit: bool = False
    #: The frames that hit the recompile limit (``function (file:line)``).
    recompile_limit_frames: tuple[str, ...] = ()
    graph_count: int = 0
    compile: Mapping[str, Any] = field(default_factory=dict)
    peak_memory_bytes: int | None = None
    eager_peak_memory_bytes: int | None = None
    accuracy: Mapping[str, Any] | None = None
    input_sets: int = 1
    baseline: BaselineFigures | None = None
    environment: Mapping[str, Any] = field(default_factory=dict)
    device_time: Summary | None = None
    host_weight: float = 0.0
    cudagraph_skips: tuple[str, ...] = ()
    load_share: float | None = None
    unstable: str | None = None
    over_limit: tuple[str, ...] = ()

    @property
    def counted(self) -> bool:
        """Whether dynamo's counts and the compile figures exist: ``False`` for a case that
        failed before it had figures (`of_error`), whose counts are not zero but unknown."""
        return bool(self.compile)

    @property
    def test(self) -> str:
        # the plugin's test id of a case: the device, then the config id for inductor, else
        # the backend name and the config id unless it is "default" (registry.case_id)
        if self.backend == "inductor":
            case = self.config_id
        elif self.config_id == "default":
            case = self.backend
        else:
            case = f"{self.backend}-{self.config_id}"
        return base_nodeid(self.nodeid, f"{self.device}-{case}")

    @property
    def median_s(self) -> float | None:
        return None if self.timing is None else self.timing.median

    @property
    def host_overhead_s(self) -> float | None:
        """Latency minus device time, seconds per call; ``None`` without a device time."""
        if self.timing is None or self.device_time is None:
            return None
        return max(self.timing.median - self.device_time.median, 0.0)

    @property
    def host_share(self) -> float | None:
        """`host_overhead_s` over the latency, 0 to 1; ``None`` without it."""
        overhead = self.host_overhead_s
        if overhead is None or self.timing is None or not self.timing.median:
            return None
        return overhead / self.timing.median

    @property
    def accurate(self) -> bool:
        """False only when the output was compared with eager's and differed."""
        return self.accuracy is None or bool(self.accuracy.get("ok", True))

    @classmethod
    def from_record(cls, record: CaseRecord, outcome: str | None = None) -> CaseResult:
        result = record.result
        fingerprint = dict(record.fingerprint)
        device_name = fingerprint.get("cpu" if record.device == "cpu" else record.device)
        times = result.compile_times
        return cls(
            nodeid=record.nodeid,
            device=record.device,
            device_name=None if device_name is None else str(device_name),
            backend=record.backend,
            config_id=record.config_id,
            config=dict(record.config),
            outcome=outcome,
            timing=result.timing,
            normalized=result.normalized,
            eager=result.eager,
            speedup=result.speedup,
            iterations=result.iterations,
            stopped=result.stopped,
            host_bound=result.host_bound,
            graph_breaks=result.graph_breaks,
            break_reasons=tuple(reason.as_dict() for reason in result.break_reasons),
            recompiles=result.recompiles,
            recompile_reasons=tuple(str(reason) for reason in result.recompile_reasons),
            recompile_limit_hit=result.recompile_limit_hit,
            recompile_limit_frames=tuple(result.recompile_limit_frames),
            graph_count=result.graph_count,
            compile={
                "time_s": result.compile_time_s,
                "dynamo_s": times.dynamo_s,
                "inductor_s": times.inductor_s,
                "frames": times.frames,
                "cache": result.compile_cache.as_dict(),
                "cold": result.cold_compile,
            },
            peak_memory_bytes=result.peak_memory_bytes,
            eager_peak_memory_bytes=result.eager_peak_memory_bytes,
            accuracy=None if result.accuracy is None else result.accuracy.as_dict(),
            input_sets=result.input_sets,
            device_time=result.device_time,
            host_weight=result.host_weight,
            cudagraph_skips=result.cudagraph_skips,
            load_share=result.load_share,
            unstable=result.unstable,
            baseline=None
            if record.baseline is None
            else BaselineFigures.from_entry(record.baseline),
            verdict=record.verdict,
            environment=fingerprint,
            over_limit=tuple(record.over_limit),
        )

    @classmethod
    def of_error(
        cls,
        nodeid: str,
        *,
        device: str,
        backend: str,
        config_id: str,
        config: Mapping[str, Any],
        error: str,
        fingerprint: Mapping[str, Any],
    ) -> CaseResult:
        """A case that failed before it had figures: failed, the error's first line its
        failure (the whole error is the test's failure message)."""
        lines = error.strip().splitlines() or ["the case failed"]
        device_name = fingerprint.get("cpu" if device == "cpu" else device)
        return cls(
            nodeid=nodeid,
            device=device,
            device_name=None if device_name is None else str(device_name),
            backend=backend,
            config_id=config_id,
            config=dict(config),
            verdict=Verdict(Status.FAILED, failures=(lines[0],)),
            environment=dict(fingerprint),
        )

    def to_dict(self) -> dict[str, Any]:
        """Builtin types only: what travels on the report and goes into the JSON report."""
        return {
            "nodeid": self.nodeid,
            "test": self.test,
            "device": self.device,
            "device_name": self.device_name,
            "backend": self.backend,
            "config_id": self.config_id,
            "config": _plain(self.config),
            "outcome": self.outcome,
            "timing": _summary_dict(self.timing),
            "normalized": _summary_dict(self.normalized),
            "eager": _summary_dict(self.eager),
            "speedup": _summary_dict(self.speedup),
            "iterations": self.iterations if self.timing is not None else None,
            "stopped": self.stopped,
            "host_bound": self.host_bound,
            "graph_breaks": self.graph_breaks if self.counted else None,
            "break_reasons": [dict(reason) for reason in self.break_reasons],
            "recompiles": self.recompiles if self.counted else None,
            "recompile_reasons": list(self.recompile_reasons),
            "recompile_limit_hit": self.recompile_limit_hit,
            "recompile_limit_frames": list(self.recompile_limit_frames),
            "graph_count": self.graph_count if self.counted else None,
            "compile": _plain(self.compile) if self.counted else None,
            "peak_memory_bytes": self.peak_memory_bytes,
            "eager_peak_memory_bytes": self.eager_peak_memory_bytes,
            "accuracy": None if self.accuracy is None else _plain(self.accuracy),
            "input_sets": self.input_sets,
            "device_time": _summary_dict(self.device_time),
            "host_overhead_s": self.host_overhead_s,
            "host_weight": self.host_weight,
            "cudagraph_skips": list(self.cudagraph_skips),
            "load_share": self.load_share,
            "unstable": self.unstable,
            "over_limit": list(self.over_limit),
            "baseline": None if self.baseline is None else self.baseline.to_dict(),
            "verdict": _verdict_dict(self.verdict),
            "environment": _plain(self.environment),
        }

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> CaseResult:
        """Read `to_dict`'s form back; `ValueError` names what is missing or wrong."""
        try:
            baseline = data["baseline"]
            return cls(
                nodeid=str(data["nodeid"]),
                device=str(data["device"]),
                device_name=data["device_name"],
                backend=str(data["backend"]),
                config_id=str(data["config_id"]),
                config=dict(data["config"]),
                outcome=data["outcome"],
                timing=_summary(data["timing"], "timing"),
                normalized=_summary(data["normalized"], "normalized"),
                eager=_summary(data["eager"], "eager"),
                speedup=_summary(data["speedup"], "speedup"),
                iterations=int(data["iterations"] or 0),
                stopped=data["stopped"],
                host_bound=bool(data["host_bound"]),
                graph_breaks=int(data["graph_breaks"] or 0),
                break_reasons=tuple(dict(r) for r in data["break_reasons"]),
                recompiles=int(data["recompiles"] or 0),
                recompile_reasons=tuple(str(r) for r in data["recompile_reasons"]),
                recompile_limit_hit=bool(data["recompile_limit_hit"]),
                recompile_limit_frames=tuple(
                    str(f) for f in data.get("recompile_limit_frames") or ()
                ),
                graph_count=int(data["graph_count"] or 0),
                compile=dict(data["compile"] or {}),
                peak_memory_bytes=data["peak_memory_bytes"],
                eager_peak_memory_bytes=data["eager_peak_memory_bytes"],
                accuracy=None if data["accuracy"] is None else dict(data["accuracy"]),
                input_sets=int(data["input_sets"]),
                device_time=_summary(data.get("device_time"), "device_time"),
                host_weight=float(data.get("host_weight", 0.0)),
                cudagraph_skips=tuple(str(r) for r in data.get("cudagraph_skips", ())),
                load_share=_optional_float(data.get("load_share")),
                unstable=None if data.get("unstable") is None else str(data["unstable"]),
                over_limit=tuple(str(p) for p in data.get("over_limit", ())),
                baseline=None if baseline is None else BaselineFigures.from_dict(baseline),
                verdict=_verdict(data["verdict"]),
                environment=dict(data["environment"]),
            )
        except KeyError as exc:
            raise ValueError(f"tweak case: missing field {exc.args[0]!r}") from exc
        except (TypeError, AttributeError) as exc:
            raise ValueError(f"tweak case {data.get('nodeid')!r}: {exc}") from exc


def _optional_float(value: Any) -> float | None:
    return None if value is None else float(value)


def _plain(value: Any) -> Any:
    """``value`` with tuples as lists, mappings as dicts and anything else as a string,
    recursively: JSON's types."""
    if isinstance(value, Mapping):
        return {str(k): _plain(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_plain(v) for v in value]
    if isinstance(value, float) and not math.isfinite(value):
        return None  # JSON has no NaN or infinity
    if value is None or isinstance(value, (bool, int, float, str)):
        return value
    return str(value)


def _summary_dict(summary: Summary | None) -> dict[str, Any] | None:
    if summary is None:
        return None
    low, high = interval(summary)
    return {**summary.as_dict(), "ci_low": low, "ci_high": high, "rel_ci_pct": summary.rel_ci_pct}


def _summary(data: Any, where: str) -> Summary | None:
    return None if data is None else Summary.from_dict(data, where)


_CHANGE_FIELDS = ("metric", "new", "base", "pct", "low_pct", "high_pct", "noise_pct", "runs")


def _change_dict(change: Change | None) -> dict[str, Any] | None:
    if change is None:
        return None
    return {
        **{name: getattr(change, name) for name in _CHANGE_FIELDS},
        "status": str(change.status),
    }


def _change(data: Any) -> Change | None:
    if data is None:
        return None
    return Change(**{name: data[name] for name in _CHANGE_FIELDS}, status=Status(data["status"]))


def _verdict_dict(verdict: Verdict) -> dict[str, Any]:
    return {
        "status": str(verdict.status),
        "failed": verdict.failed,
        "change": _change_dict(verdict.change),
        "speedup": _change_dict(verdict.speedup),
        "problems": list(verdict.problems),
        "failures": list(verdict.failures),
        "notes": list(verdict.notes),
        "fail_inconclusive": verdict.fail_inconclusive,
    }


def _verdict(data: Mapping[str, Any]) -> Verdict:
    return Verdict(
        status=Status(data["status"]),
        change=_change(data["change"]),
        speedup=_change(data["speedup"]),
        problems=tuple(data["problems"]),
        notes=tuple(data["notes"]),
        fail_inconclusive=bool(data["fail_inconclusive"]),
        failures=tuple(data["failures"]),
    )


@dataclass(frozen=True)
class TuneRow:
    """The fastest config of one test on one device.

    Attributes:
        test: The test (node id without parameters).
        device: The device type.
        best: The fastest case.
        runner_up: The next fastest; ``None`` when the test has one timed config there.
        margin_pct: How much slower the runner-up is, in percent of the best's figure.
        clear: The two medians' 95 % intervals do not overlap: the margin is not noise.
        configs: Timed configs compared.
        basis: The figure ranked: ``normalized`` (latency over the reference workload timed
            beside each case, as the gate compares it: the cases run at different moments,
            and a machine's drift between them would decide a ranking of plain latencies),
            or ``latency`` where a case has no normalized figure.
    """

    test: str
    device: str
    best: CaseResult
    runner_up: CaseResult | None
    margin_pct: float | None
    clear: bool
    configs: int
    basis: str = "latency"

    def to_dict(self) -> dict[str, Any]:
        return {
            "test": self.test,
            "device": self.device,
            "best": _case_ref(self.best),
            "runner_up": None if self.runner_up is None else _case_ref(self.runner_up),
            "margin_pct": self.margin_pct,
            "clear": self.clear,
            "configs": self.configs,
            "basis": self.basis,
        }


def _case_ref(case: CaseResult) -> dict[str, Any]:
    return {
        "nodeid": case.nodeid,
        "backend": case.backend,
        "config_id": case.config_id,
        "median_s": case.median_s,
    }


def suite_tuning(cases: Iterable[CaseResult]) -> list[TuneRow]:
    """Per test and device (in the cases' order), the fastest timed config and its margin.

    Cases without timing, whose output differed from eager's, or over one of the test's
    limits do not compete: a wrong result is not a faster one, and a config the test forbids
    (more graph breaks than it allows, say) is no pick. They are ranked by their normalized
    figure where every one has it (`TuneRow.basis`).
    """
    groups: dict[tuple[str, str], list[CaseResult]] = {}
    for case in cases:
        if case.timing is not None and case.accurate and not case.over_limit:
            groups.setdefault((case.test, case.device), []).append(case)
    rows = []
    for (test, device), group in groups.items():
        normalized = all(case.normalized is not None for case in group)
        figure = attrgetter("normalized" if normalized else "timing")
        ranked = sorted(group, key=lambda c: f.median if (f := figure(c)) else math.inf)
        best = ranked[0]
        runner_up = ranked[1] if len(ranked) > 1 else None
        margin = clear = None
        first, second = figure(best), None if runner_up is None else figure(runner_up)
        if first is not None and second is not None:
            margin, clear = lead(first, second)
        basis = "normalized" if normalized else "latency"
        rows.append(TuneRow(test, device, best, runner_up, margin, bool(clear), len(ranked), basis))
    return rows


def junit_properties(case: CaseResult) -> list[tuple[str, object]]:
    """The case's figures as test properties (``--junitxml`` writes them), ``tweak_*`` keys
    with scalar values; figures not measured are left out."""
    verdict = case.verdict
    values: list[tuple[str, object]] = [
        ("tweak_device", case.device),
        ("tweak_backend", case.backend),
        ("tweak_config", case.config_id),
        ("tweak_median_s", case.median_s),
        ("tweak_rel_ci_pct", None if case.timing is None else round(case.timing.rel_ci_pct, 3)),
        ("tweak_samples", None if case.timing is None else case.timing.n),
        ("tweak_eager_median_s", None if case.eager is None else case.eager.median),
        ("tweak_speedup", None if case.speedup is None else case.speedup.median),
        ("tweak_graph_breaks", case.graph_breaks if case.counted else None),
        ("tweak_recompiles", case.recompiles if case.counted else None),
        ("tweak_compile_time_s", case.compile.get("time_s")),
        ("tweak_peak_memory_bytes", case.peak_memory_bytes),
        ("tweak_baseline_median_s", None if case.baseline is None else case.baseline.median_s),
        ("tweak_change_pct", None if verdict.change is None else round(verdict.change.pct, 3)),
        (
            "tweak_noise_pct",
            None if verdict.change is None else round(verdict.change.noise_pct, 3),
        ),
        ("tweak_verdict", str(verdict.status)),
    ]
    return [(name, value) for name, value in values if value is not None]


def run_record(figures: BenchmarkResult | CaseResult) -> RunRecord | None:
    """The run a timed case makes, from its live result (to judge it) or its plain form (to
    save it); ``None`` when timing was off. ``unstable`` and ``load_share`` are never
    written to a file."""
    if figures.timing is None:
        return None
    return RunRecord(
        timing=figures.timing,
        normalized=figures.normalized,
        speedup=figures.speedup,
        device=figures.device_time,
        unstable=figures.unstable,
        load_share=figures.load_share,
        # judging reads it from the live result; a saved run never keeps it
        step_floor=None if isinstance(figures, CaseResult) else figures.step_floor,
    )


def baseline_entry(case: CaseResult) -> BaselineEntry | None:
    """What a finished case saves into the baseline file; ``None`` when it was not timed."""
    run = run_record(case)
    if run is None:
        return None
    cache = case.compile.get("cache") or {}
    return BaselineEntry(
        runs=(run,),
        graph_breaks=case.graph_breaks,
        recompiles=case.recompiles,
        graph_count=case.graph_count,
        compile_time_s=round(float(case.compile.get("time_s", 0.0)), 6),
        device=case.device,
        config=dict(case.config),
        torch=str(case.environment.get("torch") or _torch_version()),
        backend=case.backend,
        fingerprint=dict(case.environment),
        compile_cache=cache.get("state"),
        peak_memory_bytes=case.peak_memory_bytes,
    )


def _torch_version() -> str:
    import torch

    return str(torch.__version__)
