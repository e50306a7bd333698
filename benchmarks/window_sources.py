"""What makes two measurement windows of one cpu case differ (issue 18, "noise at its source").

    python benchmarks/window_sources.py --processes 3 --windows 8     # ~4 min on 2 cores

`benchmarks/windows.py` found the gated figure's run-to-run noise in the *window*: two
`run_case` calls of one process differ about as much as two processes. A window changes
several things at once; this script changes one at a time. In each fresh process the
benchmark's cpu model (10 x (matmul 128x256 @ 256x256 + relu), one thread) is compiled once,
then measured in windows (the plugin's `measure` at its defaults: calibration, warm-up, then
case, reference and eager sampled in turn), each window under one condition, in shuffled order:

- ``same``: nothing changed, the same compiled code, inputs and reference workload;
- ``inputs``: the model's input copied to a fresh tensor (new addresses);
- ``reference``: a fresh reference workload (its weights and input newly allocated);
- ``recompile``: dynamo reset and the model compiled again (from the warm cache), as
  `run_case` does each window.

Printed per condition: the sd, between windows of one process (pooled over processes), of the
log median of the case, of the reference, and of their ratio (the normalized, gated figure).
A condition whose sd stands above ``same`` is a source of the window noise; if ``same``
already has it, the noise is in the machine's state over time, not in the layout.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import statistics
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent

ONE = r"""
import json, os, random, sys
from dataclasses import replace
sys.path.insert(0, os.environ["BENCH_ROOT"])
import torch
from pytest_tweak.backends import TorchInductorBackend
from pytest_tweak.case import reset_dynamo
from pytest_tweak.measure import MeasureSettings, make_timer, measure, reference_workload

torch.set_num_threads(1)
g = torch.Generator().manual_seed(0)
weights = [torch.randn(256, 256, generator=g) / 16 for _ in range(10)]


class Model(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.w = torch.nn.ParameterList(torch.nn.Parameter(w.clone()) for w in weights)

    def forward(self, x):
        for w in self.w:
            x = torch.relu(x @ w)
        return x


device = torch.device("cpu")
model = Model().eval()
backend = TorchInductorBackend()
state = {"x": torch.randn(128, 256, generator=g), "ref": reference_workload(device)}


def compile_():
    reset_dynamo()
    state["compiled"] = backend.compile(model, device)
    state["compiled"](state["x"])


timer = make_timer(device, 1)
settings = MeasureSettings()
conditions = os.environ["BENCH_CONDITIONS"].split(",")
order = conditions * int(os.environ["BENCH_WINDOWS"])
random.Random(int(os.environ["BENCH_SEED"])).shuffle(order)
out = {c: [] for c in conditions}
with torch.no_grad():
    compile_()
    for condition in order:
        if condition == "inputs":
            state["x"] = state["x"].clone()
        elif condition == "reference":
            state["ref"] = reference_workload(device)
        elif condition == "recompile":
            compile_()
        compiled, x = state["compiled"], state["x"]
        window = settings
        if condition.startswith("time="):
            seconds = float(condition[5:])
            window = replace(settings, max_time_s=seconds, precision_pct=0.0, max_rounds=10**6)
        m = measure(
            {"case": lambda: compiled(x), "reference": state["ref"], "eager": lambda: model(x)},
            timer, window, primary=("case", "reference"),
        )
        out[condition].append(
            [m.summary("case").median, m.summary("reference").median, m.normalized().median,
             m.seconds, m.iterations["case"], m.iterations["reference"], m.iterations["eager"]]
        )
print(json.dumps(out))
"""

CONDITIONS = ("same", "inputs", "reference", "recompile")
FIGURES = ("case", "reference", "normalized")


def run(processes: int, windows: int, conditions: list[str]) -> list[dict[str, list[list[float]]]]:
    rows = []
    for i in range(processes):
        env = dict(
            os.environ,
            BENCH_ROOT=str(ROOT),
            BENCH_CONDITIONS=",".join(conditions),
            BENCH_WINDOWS=str(windows),
            BENCH_SEED=str(i),
        )
        done = subprocess.run(
            [sys.executable, "-c", ONE], env=env, capture_output=True, text=True, check=False
        )
        if done.returncode:
            sys.exit(f"process {i} failed:\n{done.stderr[-4000:]}")
        rows.append(json.loads(done.stdout.strip().splitlines()[-1]))
        print(f"process {i + 1}/{processes}", flush=True)
    return rows


def _pooled_sd(groups: list[list[float]]) -> float:
    """The sd within groups, pooled (each group's own mean taken out)."""
    squares = sum(sum((v - statistics.fmean(g)) ** 2 for v in g) for g in groups)
    freedom = sum(len(g) - 1 for g in groups)
    return math.sqrt(squares / freedom)


def render(rows: list[dict[str, list[list[float]]]]) -> str:
    lines = [
        "| condition | windows | sampling, median | case, sd | reference, sd | normalized, sd |",
        "|---|---|---|---|---|---|",
    ]
    for condition in rows[0]:
        cells = []
        for index, _ in enumerate(FIGURES):
            groups = [[math.log(w[index]) for w in row[condition]] for row in rows]
            cells.append(f"{_pooled_sd(groups) * 100:.2f}%")
        count = sum(len(row[condition]) for row in rows)
        seconds = statistics.median(w[3] for row in rows for w in row[condition])
        lines.append(f"| {condition} | {count} | {seconds:.2f} s | " + " | ".join(cells) + " |")
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--processes", type=int, default=3)
    parser.add_argument("--windows", type=int, default=8, help="per condition and process")
    parser.add_argument(
        "--conditions",
        nargs="+",
        default=list(CONDITIONS),
        help=f"of {', '.join(CONDITIONS)}, or time=S: as same, sampled for exactly S seconds",
    )
    parser.add_argument("--out", type=Path, default=None, help="write the rows as JSON")
    args = parser.parse_args()
    rows = run(args.processes, args.windows, args.conditions)
    if args.out is not None:
        args.out.write_text(json.dumps(rows, indent=1))
    print(render(rows))


if __name__ == "__main__":
    main()
