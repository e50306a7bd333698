"""Wall clock against the thread's CPU clock for a cpu case on one thread, on a busy machine.

    python benchmarks/cpu_clock.py 3      # seconds of sampling; run it a few times, with load

A 10-layer compiled MLP (one torch thread) and pytest-tweak's cpu reference workload, sampled in
turn as `pytest_tweak.measure.measure` does (2 and 8 calls per sample), each sample read on both
clocks around the same calls. Prints, per clock, the median and the interquartile range (as a
share of the median) of the case's samples and of the case/reference ratio.
"""

from __future__ import annotations

import json
import statistics
import sys
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import torch

from pytest_tweak.measure import reference_workload


def _iqr_pct(values: list[float]) -> float:
    ordered = sorted(values)
    n = len(ordered)
    return (ordered[(3 * (n - 1)) // 4] - ordered[(n - 1) // 4]) / ordered[(n - 1) // 2] * 100


def main() -> None:
    seconds = float(sys.argv[1]) if len(sys.argv) > 1 else 3.0
    torch.set_num_threads(1)
    torch.manual_seed(0)
    layers: list[torch.nn.Module] = []
    for _ in range(10):
        layers += [torch.nn.Linear(256, 256), torch.nn.ReLU()]
    model = torch.compile(torch.nn.Sequential(*layers).eval())
    x = torch.randn(128, 256)
    reference = reference_workload(torch.device("cpu"))
    wall: dict[str, list[float]] = {"case": [], "reference": []}
    cpu: dict[str, list[float]] = {"case": [], "reference": []}
    with torch.no_grad():
        for _ in range(20):
            model(x)
            reference()
        workloads: list[tuple[str, Any, int]] = [
            ("case", lambda: model(x), 2),
            ("reference", reference, 8),
        ]
        start = time.perf_counter()
        while time.perf_counter() - start < seconds:
            for name, call, calls in workloads:
                w0, c0 = time.perf_counter_ns(), time.thread_time_ns()
                for _ in range(calls):
                    call()
                c1, w1 = time.thread_time_ns(), time.perf_counter_ns()
                wall[name].append((w1 - w0) / calls)
                cpu[name].append((c1 - c0) / calls)
    out = {}
    for label, samples in (("wall", wall), ("thread cpu", cpu)):
        ratio = [a / b for a, b in zip(samples["case"], samples["reference"], strict=True)]
        out[label] = {
            "case median us": round(statistics.median(samples["case"]) / 1e3, 1),
            "case IQR %": round(_iqr_pct(samples["case"]), 1),
            "ratio median": round(statistics.median(ratio), 4),
            "ratio IQR %": round(_iqr_pct(ratio), 1),
            "samples": len(ratio),
        }
    print(json.dumps(out))


if __name__ == "__main__":
    main()
