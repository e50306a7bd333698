"""The HTML report: one self-contained page (inline CSS, inline SVG drawn here; no script, no
fonts or images to fetch), from the cases' plain data (`pytest_tweak.results`).

Per test, a chart per device: one horizontal bar per config with the median's 95 % interval
as an error bar, the baseline's median as a marker and the eager model's median as another;
then a table of every figure, what went wrong, and the fastest config per device.
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Mapping, Sequence
from html import escape
from typing import Any

from ..formatting import format_bytes, format_seconds
from ..results import CaseResult, TuneRow, suite_tuning
from ..stats import interval
from .text import (
    break_text,
    case_reasons,
    change_text,
    count_text,
    counts_text,
    device_text,
    ordered_tests,
    overall_status,
)

__all__ = ["html_report"]

_CSS = """
:root { --fg: #1f2328; --muted: #656d76; --line: #d0d7de; --bg: #ffffff; --panel: #f6f8fa;
  --ok: #2f6fdd; --good: #1a7f37; --bad: #cf222e; --warn: #bf8700; --base: #8250df; }
* { box-sizing: border-box; }
body { font: 14px/1.45 system-ui, -apple-system, "Segoe UI", Helvetica, Arial, sans-serif;
  color: var(--fg); background: var(--bg); margin: 0 auto; padding: 24px; max-width: 1280px; }
h1 { font-size: 24px; margin: 0 0 4px; }
h2 { font-size: 18px; margin: 0 0 12px; word-break: break-all; }
h3 { font-size: 14px; margin: 16px 0 4px; color: var(--muted); font-weight: 600; }
code, .mono { font-family: ui-monospace, SFMono-Regular, Menlo, Consolas, monospace;
  font-size: 12px; }
.counts { color: var(--muted); margin: 0 0 12px; }
.env { display: grid; grid-template-columns: max-content 1fr; gap: 2px 16px; margin: 0 0 16px;
  font-size: 12px; color: var(--muted); }
.env dt { font-weight: 600; }
.env dd { margin: 0; }
nav ul { margin: 0 0 20px; padding-left: 18px; }
section.test { border: 1px solid var(--line); border-radius: 8px; padding: 16px 20px;
  margin: 0 0 20px; }
section.test.bad { border-left: 6px solid var(--bad); }
section.test.warn { border-left: 6px solid var(--warn); }
.badge { display: inline-block; padding: 1px 8px; border-radius: 10px; font-size: 12px;
  font-weight: 600; color: #fff; background: var(--ok); vertical-align: middle; }
.badge.failed, .badge.regressed { background: var(--bad); }
.badge.inconclusive { background: var(--warn); }
.badge.improved { background: var(--good); }
.badge.new, .badge.not-compared, .badge.unchanged { background: var(--muted); }
svg.chart { display: block; max-width: 100%; height: auto; }
svg text { font: 12px system-ui, -apple-system, "Segoe UI", Helvetica, Arial, sans-serif;
  fill: var(--fg); }
svg .axis text { fill: var(--muted); font-size: 11px; }
svg .grid { stroke: var(--line); stroke-width: 1; }
svg .bar rect { fill: var(--ok); }
svg .bar.regressed rect, svg .bar.failed rect { fill: var(--bad); }
svg .bar.improved rect { fill: var(--good); }
svg .bar.inconclusive rect { fill: var(--warn); }
svg .err { stroke: var(--fg); stroke-width: 1.5; }
svg .baseline, svg .baseline-key { stroke: var(--base); stroke-width: 2.5; }
svg .eager { fill: #fff; stroke: var(--muted); stroke-width: 1.5; }
svg .legend text { fill: var(--muted); font-size: 11px; }
.scroll { overflow-x: auto; }
table { border-collapse: collapse; width: 100%; margin: 12px 0 4px; font-size: 12px; }
th, td { border-bottom: 1px solid var(--line); padding: 4px 6px; text-align: left; }
th { vertical-align: bottom; }
td.num { white-space: nowrap; }
th { background: var(--panel); font-weight: 600; }
td.num { text-align: right; font-variant-numeric: tabular-nums; }
tr.failed td, tr.regressed td { background: #ffebe9; }
tr.improved td { background: #dafbe1; }
ul.problems { color: var(--bad); margin: 8px 0 0; padding-left: 18px; }
ul.notes { color: var(--muted); margin: 4px 0 0; padding-left: 18px; font-size: 12px; }
p.tune { margin: 8px 0 0; }
.muted { color: var(--muted); }
"""

# chart geometry, in SVG user units (px at 100 %)
_WIDTH = 1100
_LABEL_W = 260  # config names
_RIGHT_W = 230  # the value and speed-up text
_ROW_H = 30
_BAR_H = 16
_TOP = 24  # the legend
_AXIS_H = 26


def _classes(status: str) -> str:
    return status.replace(" ", "-")


def html_report(
    cases: Sequence[CaseResult],
    environment: Mapping[str, Any],
    tuning: Sequence[TuneRow] | None = None,
    title: str = "pytest-tweak report",
) -> str:
    """The report page for ``cases`` (in the order they ran; failed tests come first)."""
    if tuning is None:
        tuning = suite_tuning(cases)
    tests = ordered_tests(cases)
    statuses = Counter(str(case.verdict.status) for case in cases)
    counts = ", ".join(f"{n} {status}" for status, n in sorted(statuses.items()))
    parts = [
        "<!DOCTYPE html>",
        '<html lang="en"><head><meta charset="utf-8">',
        '<meta name="viewport" content="width=device-width, initial-scale=1">',
        f"<title>{escape(title)}</title><style>{_CSS}</style></head><body>",
        f"<header><h1>{escape(title)}</h1>",
        f'<p class="counts">{escape(counts_text(cases, tests))}; verdicts: {escape(counts)}</p>',
        _environment(environment),
        "</header>",
        _nav(tests),
    ]
    by_test: dict[str, list[TuneRow]] = {}
    for row in tuning:
        by_test.setdefault(row.test, []).append(row)
    for index, (test, group) in enumerate(tests):
        parts.append(_section(index, test, group, by_test.get(test, [])))
    parts.append(_tuning_section(tuning))
    parts.append(
        '<footer class="muted"><p>Bars: median seconds per call, with its 95 % confidence '
        "interval; a purple tick marks the baseline (the geometric mean of its runs' medians), "
        "a white diamond the eager (uncompiled) model's. Generated by pytest-tweak.</p></footer>"
    )
    parts.append("</body></html>")
    return "\n".join(parts) + "\n"


def _environment(environment: Mapping[str, Any]) -> str:
    if not environment:
        return ""
    rows = "".join(
        f"<dt>{escape(str(k))}</dt><dd>{escape(str(v))}</dd>" for k, v in environment.items()
    )
    return f'<dl class="env">{rows}</dl>'


def _anchor(index: int) -> str:
    return f"test-{index}"


def _nav(tests: Sequence[tuple[str, Sequence[CaseResult]]]) -> str:
    items = "".join(
        f'<li><a href="#{_anchor(i)}"><code>{escape(test)}</code></a> '
        f'<span class="badge {_classes(overall_status(group))}">'
        f"{escape(overall_status(group))}</span></li>"
        for i, (test, group) in enumerate(tests)
    )
    return f"<nav><ul>{items}</ul></nav>"


def _section(index: int, test: str, group: Sequence[CaseResult], tuning: Sequence[TuneRow]) -> str:
    status = overall_status(group)
    tone = (
        " bad" if status in ("failed", "regressed") else " warn" if status == "inconclusive" else ""
    )
    parts = [
        f'<section class="test{tone}" id="{_anchor(index)}" data-test="{escape(test)}">',
        f'<h2><code>{escape(test)}</code> <span class="badge {_classes(status)}">'
        f"{escape(status)}</span></h2>",
    ]
    devices: dict[str, list[CaseResult]] = {}
    for case in group:
        devices.setdefault(case.device, []).append(case)
    for device, device_cases in devices.items():
        name = next((c.device_name for c in device_cases if c.device_name), None)
        label = device if not name else f"{device}: {name}"
        parts.append(f'<div class="device" data-device="{escape(device)}">')
        parts.append(f"<h3>{escape(label)}</h3>")
        parts.append(chart(device_cases))
        parts.append("</div>")
    parts.append(_table(group))
    parts.append(_problems(group))
    for row in tuning:
        parts.append(f'<p class="tune">{_tune_sentence(row)}</p>')
    parts.append("</section>")
    return "\n".join(parts)


def _nice_step(span: float) -> float:
    """A round tick step (1, 2, 2.5 or 5 times a power of ten) giving four to six ticks."""
    raw = span / 5.0
    power = 10.0 ** math.floor(math.log10(raw))
    for factor in (1.0, 2.0, 2.5, 5.0, 10.0):
        if raw <= factor * power:
            return factor * power
    return 10.0 * power


def chart(cases: Sequence[CaseResult]) -> str:
    """One device's chart: a bar per config (``<g class="bar">``), error bar, baseline and
    eager markers, an axis in seconds."""
    timed = [c for c in cases if c.timing is not None]
    if not timed:
        return '<p class="muted">No timing (timing disabled, or the case failed before it).</p>'
    top = 0.0
    for case in timed:
        assert case.timing is not None
        top = max(top, interval(case.timing)[1], case.timing.q3)
        if case.baseline is not None:
            top = max(top, case.baseline.median_s)
        if case.eager is not None:
            top = max(top, case.eager.median)
    top *= 1.04  # room for the interval's cap
    step = _nice_step(top)
    plot_w = _WIDTH - _LABEL_W - _RIGHT_W
    height = _TOP + _ROW_H * len(timed) + _AXIS_H

    def x(seconds: float) -> float:
        return _LABEL_W + plot_w * seconds / top

    out = [
        f'<svg class="chart" width="{_WIDTH}" '
        f'height="{height}" viewBox="0 0 {_WIDTH} {height}" role="img" '
        f'aria-label="median time per config">',
        _legend(
            list(dict.fromkeys(_bar_status(c) for c in timed)),
            any(c.baseline for c in timed),
            any(c.eager for c in timed),
        ),
        '<g class="axis">',
    ]
    bottom = _TOP + _ROW_H * len(timed)
    for index in range(int(top / step * 1.0001) + 1):
        tick = index * step
        out.append(
            f'<line class="grid" x1="{x(tick):.1f}" y1="{_TOP}" x2="{x(tick):.1f}" '
            f'y2="{bottom}"/>'
            f'<text x="{x(tick):.1f}" y="{bottom + 16}" text-anchor="middle">'
            f"{escape(format_seconds(tick) if tick else '0')}</text>"
        )
    out.append("</g>")
    for row, case in enumerate(timed):
        timing = case.timing
        assert timing is not None
        y = _TOP + row * _ROW_H + (_ROW_H - _BAR_H) / 2
        mid = y + _BAR_H / 2
        low, high = interval(timing)
        status = _bar_status(case)
        title = (
            f"{case.backend}:{case.config_id}: median {format_seconds(timing.median)}, "
            f"95% interval {format_seconds(low)} .. {format_seconds(high)}, "
            f"{timing.n} samples"
        )
        out.append(
            f'<g class="bar {status}" data-config="{escape(case.config_id)}" '
            f'data-backend="{escape(case.backend)}" data-median="{timing.median:.6g}">'
            f"<title>{escape(title)}</title>"
            f'<text x="{_LABEL_W - 8}" y="{mid + 4:.1f}" text-anchor="end">'
            f"{escape(_short(f'{case.backend}:{case.config_id}', 36))}</text>"
            f'<rect x="{_LABEL_W}" y="{y:.1f}" width="{max(x(timing.median) - _LABEL_W, 1):.1f}" '
            f'height="{_BAR_H}" rx="2"/>'
            f'<line class="err" x1="{x(low):.1f}" y1="{mid:.1f}" x2="{x(high):.1f}" '
            f'y2="{mid:.1f}"/>'
            f'<line class="err" x1="{x(low):.1f}" y1="{mid - 5:.1f}" x2="{x(low):.1f}" '
            f'y2="{mid + 5:.1f}"/>'
            f'<line class="err" x1="{x(high):.1f}" y1="{mid - 5:.1f}" x2="{x(high):.1f}" '
            f'y2="{mid + 5:.1f}"/>'
        )
        if case.eager is not None:
            ex = x(case.eager.median)
            out.append(
                f'<path class="eager" d="M{ex:.1f} {mid - 6:.1f} L{ex + 6:.1f} {mid:.1f} '
                f'L{ex:.1f} {mid + 6:.1f} L{ex - 6:.1f} {mid:.1f} Z">'
                f"<title>eager median {escape(format_seconds(case.eager.median))}</title></path>"
            )
        if case.baseline is not None:
            bx = x(case.baseline.median_s)
            out.append(
                f'<line class="baseline" x1="{bx:.1f}" y1="{y - 3:.1f}" x2="{bx:.1f}" '
                f'y2="{y + _BAR_H + 3:.1f}" data-median="{case.baseline.median_s:.6g}">'
                f"<title>baseline {escape(format_seconds(case.baseline.median_s))} "
                f"({_baseline_kind(case.baseline.runs)})"
                "</title></line>"
            )
        text = f"{format_seconds(timing.median)} ±{timing.rel_ci_pct:.1f}%"
        if case.speedup is not None:
            text += f"  {case.speedup.median:.2f}x vs eager"
        out.append(
            f'<text x="{_WIDTH - _RIGHT_W + 10}" y="{mid + 4:.1f}">{escape(text)}</text></g>'
        )
    out.append("</svg>")
    return "".join(out)


def _bar_status(case: CaseResult) -> str:
    """The class, and so the colour, of a case's bar."""
    status = _classes(str(case.verdict.status))
    if case.verdict.failed and status not in ("regressed", "failed"):
        return "failed"
    return status


#: What a bar's colour says, per class (the CSS colours the bars by these classes).
_BAR_KEYS = {
    "failed": ("bad", "failed"),
    "regressed": ("bad", "regressed"),
    "improved": ("good", "improved"),
    "inconclusive": ("warn", "inconclusive"),
}


def _legend(statuses: Sequence[str], baseline: bool, eager: bool) -> str:
    """The key to the chart: a swatch of each bar colour in it, in that colour, then the
    baseline and eager markers."""
    items = [f'<text x="{_LABEL_W}" y="13">median, 95% interval:</text>']
    at = _LABEL_W + 140
    swatches: dict[str, list[str]] = {}
    for status in statuses:
        colour, word = _BAR_KEYS.get(status, ("ok", status.replace("-", " ")))
        swatches.setdefault(colour, []).append(word)
    for colour, words in swatches.items():
        label = " / ".join(words)
        items.append(
            f'<rect x="{at}" y="4" width="14" height="10" style="fill:var(--{colour})"/>'
            f'<text x="{at + 20}" y="13">{escape(label)}</text>'
        )
        at += 30 + 7 * len(label)
    if baseline:
        items.append(
            f'<line class="baseline-key" x1="{at}" y1="2" x2="{at}" y2="16"/>'
            f'<text x="{at + 8}" y="13">baseline</text>'
        )
        at += 80
    if eager:
        items.append(
            f'<path class="eager" d="M{at} 3 L{at + 6} 9 L{at} 15 L{at - 6} 9 Z"/>'
            f'<text x="{at + 10}" y="13">eager median</text>'
        )
    return f'<g class="legend">{"".join(items)}</g>'


def _short(text: str, size: int) -> str:
    return text if len(text) <= size else text[: size - 1] + "…"


def _table(group: Sequence[CaseResult]) -> str:
    headers = (
        "config",
        "device",
        "median",
        "samples",
        "baseline",
        "vs baseline",
        "speed-up",
        "eager",
        "graph breaks",
        "recompiles",
        "compile",
        "peak mem",
        "accuracy",
        "verdict",
    )
    rows = []
    for case in group:
        timing, baseline = case.timing, case.baseline
        compile_ = case.compile
        cache = compile_.get("cache", {}).get("state", "-") if compile_ else "-"
        accuracy = case.accuracy
        if accuracy is None or not accuracy.get("checked", True):
            accuracy_text = "-"
        else:
            accuracy_text = f"{'ok' if accuracy.get('ok') else 'WRONG'}"
        cells = [
            (f"<code>{escape(case.backend)}:{escape(case.config_id)}</code>", ""),
            (escape(case.device), ""),
            (_median_cell(case), "num"),
            ("-" if timing is None else f"{timing.n} × {case.iterations}", "num"),
            ("-" if baseline is None else format_seconds(baseline.median_s), "num"),
            (change_text(case, labelled=True), "num"),
            ("-" if case.speedup is None else f"{case.speedup.median:.2f}x", "num"),
            ("-" if case.eager is None else format_seconds(case.eager.median), "num"),
            (
                count_text(
                    case.graph_breaks, None if baseline is None else baseline.graph_breaks, case
                ),
                "num",
            ),
            (
                count_text(
                    case.recompiles, None if baseline is None else baseline.recompiles, case
                ),
                "num",
            ),
            (
                "-"
                if "time_s" not in compile_
                else f"{float(compile_['time_s']):.3g} s {escape(str(cache))}",
                "num",
            ),
            (format_bytes(case.peak_memory_bytes), "num"),
            (accuracy_text, ""),
            (escape(str(case.verdict.status)), ""),
        ]
        status = _classes(str(case.verdict.status))
        if case.verdict.failed and status != "regressed":
            status = "failed"
        tds = "".join(f'<td class="{cls}">{text}</td>' for text, cls in cells)
        rows.append(f'<tr class="{status}">{tds}</tr>')
    head = "".join(f"<th>{escape(h)}</th>" for h in headers)
    return (
        f'<div class="scroll"><table><thead><tr>{head}</tr></thead>'
        f"<tbody>{''.join(rows)}</tbody></table></div>"
    )


def _median_cell(case: CaseResult) -> str:
    timing = case.timing
    if timing is None:
        return "-"
    spread = (
        f"interquartile range {format_seconds(timing.q1)} .. {format_seconds(timing.q3)}, "
        f"min {format_seconds(timing.min)}, max {format_seconds(timing.max)}"
    )
    return (
        f'<span title="{escape(spread)}">{format_seconds(timing.median)} '
        f"±{timing.rel_ci_pct:.1f}%{escape(device_text(case))}</span>"
    )


def _problems(group: Sequence[CaseResult]) -> str:
    problems = [
        (case, text) for case in group for text in (*case.verdict.failures, *case.verdict.problems)
    ]
    notes = [(case, text) for case in group for text in case.verdict.notes]
    reasons = [(case, break_text(r), r.get("link")) for case in group for r in case.break_reasons]
    reasons += [(case, text, None) for case in group for text in case_reasons(case)]
    out = []
    if problems:
        items = "".join(
            f"<li><code>{escape(c.device)}-{escape(c.config_id)}</code>: {escape(t)}</li>"
            for c, t in problems
        )
        out.append(f'<ul class="problems">{items}</ul>')
    if notes or reasons:
        items = "".join(
            f"<li><code>{escape(c.device)}-{escape(c.config_id)}</code>: "
            f"{escape(t)}{_more(link)}</li>"
            for c, t, link in (*((c, t, None) for c, t in notes), *reasons)
        )
        out.append(f'<ul class="notes">{items}</ul>')
    return "".join(out)


def _more(link: object) -> str:
    """A link to torch's page on a graph break (only an https address is linked)."""
    if not isinstance(link, str) or not link.startswith("https://"):
        return ""
    return f' (<a href="{escape(link)}">more</a>)'


def _tune_sentence(row: TuneRow) -> str:
    best = f"<code>{escape(row.best.backend)}:{escape(row.best.config_id)}</code>"
    if row.runner_up is None or row.margin_pct is None:
        return f"Tuning on {escape(row.device)}: {best} is the only timed config."
    other = f"<code>{escape(row.runner_up.backend)}:{escape(row.runner_up.config_id)}</code>"
    noise = "" if row.clear else " (within the noise: the intervals overlap)"
    return (
        f"Tuning on {escape(row.device)}: fastest is {best}, "
        f"{row.margin_pct:.1f}% ahead of {other}{noise}."
    )


def _tuning_section(tuning: Sequence[TuneRow]) -> str:
    if not tuning:
        return ""
    rows = []
    for row in tuning:
        best = row.best
        median = "-" if best.timing is None else format_seconds(best.timing.median)
        other = (
            "-"
            if row.runner_up is None
            else f"<code>{escape(row.runner_up.backend)}:{escape(row.runner_up.config_id)}</code>"
        )
        margin = (
            "-"
            if row.margin_pct is None
            else f"{row.margin_pct:+.1f}%" + ("" if row.clear else " (within noise)")
        )
        rows.append(
            f"<tr><td><code>{escape(row.test)}</code></td><td>{escape(row.device)}</td>"
            f"<td><code>{escape(best.backend)}:{escape(best.config_id)}</code></td>"
            f'<td class="num">{median}</td><td>{other}</td><td class="num">{margin}</td></tr>'
        )
    head = "".join(
        f"<th>{h}</th>" for h in ("test", "device", "fastest config", "median", "next", "margin")
    )
    return (
        '<section id="tuning"><h2>Tuning: the fastest config per test and device</h2>'
        f"<table><thead><tr>{head}</tr></thead><tbody>{''.join(rows)}</tbody></table></section>"
    )


def _baseline_kind(runs: int) -> str:
    """What a baseline's time is: one run's median, or the geometric mean of several."""
    return "its run's median" if runs == 1 else f"geometric mean of its {runs} runs' medians"
