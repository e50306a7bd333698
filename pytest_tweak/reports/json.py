"""The run as JSON (``--tweak-json``; schema: ``pytest_tweak/report.schema.json``)."""

from __future__ import annotations

import datetime
import json
from collections import Counter
from collections.abc import Mapping, Sequence
from typing import Any

from ..results import SCHEMA_VERSION, CaseResult, TuneRow, suite_tuning

__all__ = ["JSON_FORMAT", "dump_json", "json_report"]

#: The ``format`` field of the JSON report.
JSON_FORMAT = "pytest-tweak-report"


def json_report(
    cases: Sequence[CaseResult],
    environment: Mapping[str, Any],
    settings: Mapping[str, Any],
    tuning: Sequence[TuneRow] | None = None,
    ungated: str | None = None,
) -> dict[str, Any]:
    """The JSON report (``pytest_tweak/report.schema.json``; docs/reports.md); ``ungated``:
    why nothing was gated, where nothing was (`ungated_text`)."""
    from .. import __version__

    if tuning is None:
        tuning = suite_tuning(cases)
    statuses = Counter(str(case.verdict.status) for case in cases)
    return {
        "format": JSON_FORMAT,
        "schema_version": SCHEMA_VERSION,
        "pytest_tweak": __version__,
        "created": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
        "environment": dict(environment),
        "settings": dict(settings),
        "summary": {
            "cases": len(cases),
            "failed": sum(1 for c in cases if c.verdict.failed or c.outcome == "failed"),
            "statuses": dict(sorted(statuses.items())),
            "gated": sum(1 for c in cases if c.baseline is not None),
            "ungated": ungated,
        },
        "cases": [case.to_dict() for case in cases],
        "tuning": [row.to_dict() for row in tuning],
    }


def dump_json(document: Mapping[str, Any]) -> str:
    return json.dumps(document, indent=2, sort_keys=False, allow_nan=False) + "\n"
