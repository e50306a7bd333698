"""Text for people: the failure message of a regressed case and the summary table."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import TYPE_CHECKING

from .verdict import Status, format_seconds

if TYPE_CHECKING:
    from .case import BenchmarkResult
    from .session import CaseRecord
    from .verdict import Verdict

__all__ = ["failure_message", "summary_lines"]

_HEADERS = (
    "test",
    "device",
    "config",
    "median",
    "graph breaks",
    "recompiles",
    "vs baseline",
    "verdict",
)


def failure_message(
    nodeid: str, verdict: Verdict, result: BenchmarkResult, baseline_path: str
) -> str:
    """Why a case failed its baseline, with every number needed to act on it."""
    lines = [f"pytest-tweak: {nodeid} regressed against {baseline_path}:"]
    lines += [f"  - {problem}" for problem in verdict.problems]
    lines += _reasons(result)
    lines.append("If the change is intended, record a new baseline with --tweak-save.")
    return "\n".join(lines)


def _reasons(result: BenchmarkResult) -> list[str]:
    lines = []
    if result.break_reasons:
        lines.append("  graph breaks:")
        lines += [f"    {reason}" for reason in result.break_reasons]
    if result.recompile_reasons:
        lines.append("  recompiles:")
        lines += [f"    {recompile}" for recompile in result.recompile_reasons]
    if result.recompile_limit_hit:
        lines.append("  dynamo hit its recompile limit: a frame now runs in eager")
    return lines


def _change(verdict: Verdict) -> str:
    if verdict.change_pct is None:
        return "-"
    return f"{verdict.change_pct:+.1f}%"


def _row(record: CaseRecord) -> tuple[str, ...]:
    result = record.result
    median = "-" if result.median_s is None else format_seconds(result.median_s)
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
        record.config_id,
        median,
        breaks,
        recompiles,
        _change(record.verdict),
        str(record.verdict.status),
    )


def _table(headers: Sequence[str], rows: Iterable[Sequence[str]]) -> list[str]:
    rows = [tuple(r) for r in rows]
    widths = [max(len(h), *(len(r[i]) for r in rows)) for i, h in enumerate(headers)]

    def fmt(cells: Sequence[str]) -> str:
        return "  ".join(c.ljust(w) for c, w in zip(cells, widths, strict=True)).rstrip()

    return [fmt(headers), fmt(["-" * w for w in widths]), *(fmt(r) for r in rows)]


def summary_lines(records: Iterable[CaseRecord]) -> list[str]:
    """The tweak summary: one row per case, then the graph-break reasons worth reading."""
    records = list(records)
    if not records:
        return []
    lines = _table(_HEADERS, (_row(r) for r in records))
    details = [(r, _reasons(r.result)) for r in records]
    details = [(r, d) for r, d in details if d]
    if details:
        lines.append("")
        for record, reason_lines in details:
            lines.append(f"{record.nodeid.split('::', 1)[-1]}:")
            lines += reason_lines
    return lines
