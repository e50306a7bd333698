"""The report files of a run, each rendered from the cases' plain data
(`pytest_tweak.results.CaseResult`): `json` (``--tweak-json``), `markdown` (``--tweak-markdown``,
also appended to ``$GITHUB_STEP_SUMMARY``) and `html` (``--tweak-html``); `text` holds the
words they share with the terminal. `write_reports` writes the ones asked for."""

from __future__ import annotations

import os
from collections.abc import Callable, Collection, Mapping, Sequence
from pathlib import Path
from typing import Any

from ..files import append_text, same_file, write_atomic
from ..options import TweakOptions
from ..results import CaseResult, suite_tuning
from .html import html_report
from .json import dump_json, json_report
from .markdown import markdown_report
from .text import ungated_text

__all__ = ["report_settings", "write_reports"]


def report_settings(options: TweakOptions) -> dict[str, Any]:
    """The settings a JSON report records."""
    return {
        "devices": list(options.devices),
        "baseline": str(options.baseline_path),
        "save": options.save,
        "metric": options.judging[options.devices[0]].metric if options.devices else None,
        "threshold_pct": {d: options.judging[d].threshold_pct for d in options.devices},
        "run_noise_pct": {d: options.judging[d].run_noise_pct for d in options.devices},
    }


def write_reports(
    cases: Sequence[CaseResult],
    environment: Mapping[str, Any],
    options: TweakOptions,
    step_summary: str | None = None,
    *,
    keys: Collection[str] = (),
) -> list[tuple[bool, str]]:
    """Write the report files ``options`` asks for, and append the markdown to
    ``step_summary`` (``$GITHUB_STEP_SUMMARY``; default: the environment's) when a case ran.
    ``keys``: the baseline file's entries, to say why nothing was gated (`ungated_text`).
    Returns what happened, ``(ok, message)`` per file; a file that cannot be written is a
    message, never an exception, so the others are still written."""
    tuning = suite_tuning(cases)
    ungated = None if options.save else ungated_text(options.baseline_path, cases, keys)
    renderers: dict[str, Callable[[], str]] = {
        "JSON report": lambda: dump_json(
            json_report(cases, environment, report_settings(options), tuning, ungated)
        ),
        "markdown report": lambda: markdown_report(cases, tuning, ungated),
        "HTML report": lambda: html_report(cases, environment, tuning),
    }
    paths = (options.json_path, options.markdown_path, options.html_path)
    done: list[tuple[bool, str]] = []
    for (what, render), path in zip(renderers.items(), paths, strict=True):
        if path is None:
            continue
        try:
            write_atomic(path, render())
        except OSError as exc:
            done.append((False, f"{what} not written to {path}: {exc}"))
        else:
            done.append((True, f"{what} written to {path}"))
    summary_file = (
        os.environ.get("GITHUB_STEP_SUMMARY", "") if step_summary is None else step_summary
    )
    # a --tweak-markdown naming the summary file itself has put the report there already
    markdown_there = options.markdown_path is not None and same_file(
        options.markdown_path, summary_file
    )
    if summary_file and cases and not markdown_there:
        try:
            append_text(Path(summary_file), markdown_report(cases, tuning, ungated))
        except OSError as exc:
            done.append(
                (False, f"markdown not appended to $GITHUB_STEP_SUMMARY {summary_file}: {exc}")
            )
    return done
