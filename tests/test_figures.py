"""benchmarks/diagnostics_figures.py: the figures of a --benchmark-json run as a table."""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path
from typing import Any

import pytest

_PATH = Path(__file__).resolve().parent.parent / "benchmarks" / "diagnostics_figures.py"


def _module() -> Any:
    spec = importlib.util.spec_from_file_location("diagnostics_figures", _PATH)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _summary(median: float) -> dict[str, float]:
    return {"median": median}


INFO = {
    "timing": _summary(2e-4),
    "eager": _summary(3e-4),
    "speedup": _summary(1.5),
    "peak_memory_bytes": 5 * 1024**2,
    "eager_peak_memory_bytes": 8 * 1024**2,
    "accuracy": {
        "checked": True,
        "ok": True,
        "max_abs": 0.0078,
        "max_rel": 0.01,
        "rtol": 0.032,
        "atol": 0.01,
    },
    "compile_time_s": 3.2,
    "compile_times": {"dynamo_s": 0.5, "inductor_s": 2.5},
    "compile_cache": {"state": "hit"},
    "graph_breaks": 0,
    "recompiles": 1,
}


def test_a_row_holds_every_figure() -> None:
    assert _module().row("t[cuda-autocast-bf16]", INFO) == (
        "t[cuda-autocast-bf16]",
        "200 us",
        "300 us",
        "1.50x",
        "5 MiB",
        "8 MiB",
        "0.0078",
        "0.01",
        "0.032, 0.01",
        "3.2 s (0.5 + 2.5)",
        "hit",
        "0",
        "1",
    )


def test_main_prints_the_cases_that_match(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    data = {
        "benchmarks": [
            {"fullname": "a.py::t[cuda-default]", "extra_info": {"tweak": INFO}},
            {"fullname": "a.py::t[cuda-autocast-bf16]", "extra_info": {"tweak": INFO}},
            {"fullname": "a.py::plain", "extra_info": {}},
        ],
        "machine_info": {"node": "h200", "cpu": {"brand_raw": "x"}},
    }
    path = tmp_path / "run.json"
    path.write_text(json.dumps(data))
    assert _module().main([str(path), "-k", "autocast"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[0].startswith("| case | median | eager | speed-up | peak mem compiled |")
    assert [line.split(" | ")[0] for line in lines[2:-2]] == ["| a.py::t[cuda-autocast-bf16]"]
    assert lines[-1] == "machine: h200, x"
