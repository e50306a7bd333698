"""The memory, accuracy, speed-up and compile figures of a run, as a markdown table.

Reads the ``--benchmark-json`` file of a pytest-tweak run (the figures are in each
benchmark's ``extra_info["tweak"]``) and prints one row per case:

    python -m pytest examples --tweak-device=cuda --benchmark-json=run.json
    python benchmarks/diagnostics_figures.py run.json [-k autocast]
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from pytest_tweak.formatting import format_bytes, format_seconds

_HEADERS = (
    "case",
    "median",
    "eager",
    "speed-up",
    "peak mem compiled",
    "peak mem eager",
    "max abs err",
    "max rel err",
    "tolerance (rtol, atol)",
    "compile (dynamo + inductor)",
    "cache",
    "breaks",
    "recompiles",
)


def _seconds(value: float | None) -> str:
    return "-" if value is None else format_seconds(value)


def _median(summary: dict[str, Any] | None) -> float | None:
    return None if summary is None else float(summary["median"])


def row(name: str, info: dict[str, Any]) -> tuple[str, ...]:
    """One case's figures, as table cells."""
    accuracy = info.get("accuracy") or {}
    checked = accuracy.get("checked", False)
    times = info.get("compile_times") or {}
    speedup = _median(info.get("speedup"))
    return (
        name,
        _seconds(_median(info.get("timing"))),
        _seconds(_median(info.get("eager"))),
        "-" if speedup is None else f"{speedup:.2f}x",
        format_bytes(info.get("peak_memory_bytes")),
        format_bytes(info.get("eager_peak_memory_bytes")),
        f"{accuracy['max_abs']:.3g}" if checked else "-",
        f"{accuracy['max_rel']:.3g}" if checked else "-",
        f"{accuracy['rtol']:.3g}, {accuracy['atol']:.3g}" if checked else "-",
        f"{info['compile_time_s']:.3g} s ({times.get('dynamo_s', 0):.3g} + "
        f"{times.get('inductor_s', 0):.3g})",
        str((info.get("compile_cache") or {}).get("state", "-")),
        str(info.get("graph_breaks", "-")),
        str(info.get("recompiles", "-")),
    )


def table(data: dict[str, Any], keyword: str | None = None) -> list[str]:
    """The markdown table of every benchmark with pytest-tweak figures."""
    rows = []
    for bench in data.get("benchmarks", []):
        info = (bench.get("extra_info") or {}).get("tweak")
        name = str(bench.get("fullname") or bench.get("name"))
        if info is None or (keyword is not None and keyword not in name):
            continue
        rows.append(row(name, info))
    lines = ["| " + " | ".join(_HEADERS) + " |", "|" + " --- |" * len(_HEADERS)]
    lines += ["| " + " | ".join(cells) + " |" for cells in rows]
    machine = data.get("machine_info") or {}
    lines.append("")
    lines.append(
        f"machine: {machine.get('node', '?')}, {machine.get('cpu', {}).get('brand_raw', '')}"
    )
    return lines


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("json_file", type=Path, help="a --benchmark-json file")
    parser.add_argument("-k", dest="keyword", help="only cases whose name contains this")
    args = parser.parse_args(argv)
    data = json.loads(args.json_file.read_text(encoding="utf-8"))
    print("\n".join(table(data, args.keyword)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
