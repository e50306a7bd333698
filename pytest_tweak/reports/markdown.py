"""The run as GitHub-flavoured markdown (``--tweak-markdown``, ``$GITHUB_STEP_SUMMARY``)."""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from ..results import CaseResult, TuneRow, suite_tuning
from .text import (
    break_text,
    case_reasons,
    change_text,
    count_text,
    counts_text,
    margin_text,
    median_text,
    ordered_tests,
    overall_status,
    speedup_text,
)

__all__ = ["markdown_report"]


def _code(text: str) -> str:
    """``text`` as an inline code span that holds it whole: a backtick in a test id (a
    parameter's id) ended the span and let the rest render as markdown or HTML."""
    longest = max((len(run) for run in re.findall("`+", text)), default=0)
    fence = "`" * (longest + 1)
    pad = " " if text.startswith("`") or text.endswith("`") else ""
    return f"{fence}{pad}{text}{pad}{fence}"


def _cell(text: str) -> str:
    return text.replace("|", "\\|").replace("\n", " ")


def _md_table(headers: Sequence[str], rows: Iterable[Sequence[str]]) -> list[str]:
    lines = ["| " + " | ".join(headers) + " |", "|" + " --- |" * len(headers)]
    lines += ["| " + " | ".join(_cell(c) for c in row) + " |" for row in rows]
    return lines


_MARKS = {"failed": "❌", "regressed": "❌", "inconclusive": "⚠️", "improved": "🚀"}


def markdown_report(
    cases: Sequence[CaseResult],
    tuning: Sequence[TuneRow] | None = None,
    ungated: str | None = None,
) -> str:
    """The run as GitHub-flavoured markdown: a line of counts, why nothing was gated where
    nothing was (``ungated``: `ungated_text`), then per test (failed and regressed first) a
    table of its configs by device, what went wrong, and the tuning."""
    if tuning is None:
        tuning = suite_tuning(cases)
    statuses = Counter(str(case.verdict.status) for case in cases)
    tests = ordered_tests(cases)
    counts = ", ".join(f"{n} {status}" for status, n in sorted(statuses.items()))
    lines = [
        "## pytest-tweak",
        "",
        f"{counts_text(cases, tests)}; verdicts: {counts}"
        if cases
        else "No pytest-tweak case ran.",
    ]
    if ungated is not None:
        lines += ["", f"> ⚠️ **Nothing was gated**: {_md_text(ungated)}"]
    headers = (
        "config",
        "device",
        "median",
        "vs baseline",
        "speed-up",
        "graph breaks",
        "recompiles",
        "verdict",
    )
    for test, group in tests:
        status = overall_status(group)
        mark = _MARKS.get(status, "✅")
        lines += ["", f"### {mark} {_code(test)}: {status}", ""]
        rows = []
        for case in group:
            baseline = case.baseline
            verdict = str(case.verdict.status)
            if case.verdict.failed:
                verdict = f"**{verdict}** (test failed)"
            elif case.outcome == "failed":  # its own assert, after a verdict that passed
                verdict = f"{verdict}, **test failed**"
            elif case.outcome == "skipped":  # pytest.skip() or an xfail after the case ran
                verdict = f"{verdict}, test skipped/xfailed"
            rows.append(
                (
                    _code(f"{case.backend}:{case.config_id}"),
                    case.device,
                    median_text(case),
                    change_text(case, labelled=True),
                    speedup_text(case),
                    count_text(
                        case.graph_breaks, baseline.graph_breaks if baseline else None, case
                    ),
                    count_text(case.recompiles, baseline.recompiles if baseline else None, case),
                    verdict,
                )
            )
        lines += _md_table(headers, rows)
        details = [
            f"- {_code(f'{case.device}-{case.config_id}')}: {_md_text(text)}"
            for case in group
            for text in (
                *case.verdict.failures,
                *case.verdict.problems,
                *case.verdict.notes,
                *case_reasons(case),
            )
        ]
        details += [
            f"- {_code(f'{case.device}-{case.config_id}')}: {_md_break(reason)}"
            for case in group
            for reason in case.break_reasons
        ]
        if details:
            lines += ["", *details]
    if any(row.runner_up is not None for row in tuning):
        lines += ["", "### Tuning: the fastest config per test and device", ""]
        lines += _md_table(
            ("test", "device", "fastest config", "median", "next", "margin"),
            (
                (
                    _code(row.test),
                    row.device,
                    _code(f"{row.best.backend}:{row.best.config_id}"),
                    median_text(row.best),
                    "-"
                    if row.runner_up is None
                    else _code(f"{row.runner_up.backend}:{row.runner_up.config_id}"),
                    margin_text(row),
                )
                for row in tuning
            ),
        )
    return "\n".join(lines) + "\n"


def _md_break(reason: Mapping[str, Any]) -> str:
    text = break_text(reason)
    gb_id, link = reason.get("gb_id"), reason.get("link")
    if gb_id and link:  # the id links to torch's page on the break
        text = text.replace(f" — {gb_id} ", f" — [{gb_id}]({link}) ", 1)
    return text


def _md_text(text: str) -> str:
    """Text for a markdown list item: a ``|`` or a newline would break the layout."""
    return " ".join(text.split()).replace("|", "\\|")
