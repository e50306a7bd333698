"""Where a cpu case's run-to-run noise lives: between processes, or between windows of one.

    python benchmarks/windows.py --processes 12      # ~4 min on 2 cores

Fresh processes, alternately pinned to one core (``os.sched_setaffinity``, before torch is
imported) and not; each times the benchmark's cpu model (10 x (matmul 128x256 @ 256x256 +
relu), one thread) twice with the plugin's own `run_case` at its defaults. Each `run_case` is
a window: dynamo is reset, the model compiled again (from the cache) and warmed up, and the
case, the reference workload and the eager model sampled in turn. Printed per group: the sd
between processes of the log normalized median (the gated figure) of the first window, of
the mean of both windows, and the sd of one window within a process (from the difference of
the two windows); the same for the absolute median.

If the windows of one process differ about as much as processes do, the noise is in the
window (layout of the compiled code and buffers, the machine's state while it is measured)
and a second window is as good as a second process; if they agree, only more processes help.
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
import json, os, sys
pin = os.environ.get("BENCH_PIN")
if pin:
    os.sched_setaffinity(0, {int(pin)})
sys.path.insert(0, os.environ["BENCH_ROOT"])
import torch
from pytest_tweak.backends import TorchInductorBackend
from pytest_tweak.case import LocalRunner, run_case
from pytest_tweak.measure import MeasureSettings

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


x = torch.randn(128, 256, generator=g)
out = {"normalized": [], "absolute": []}
with torch.no_grad():
    for _ in range(2):
        r = run_case(Model().eval(), (x,), {}, backend=TorchInductorBackend(),
                     device=torch.device("cpu"), settings=MeasureSettings(),
                     runner=LocalRunner())
        out["normalized"].append(r.normalized.median)
        out["absolute"].append(r.median_s)
print(json.dumps(out))
"""


def run(processes: int) -> list[dict]:
    rows = []
    for i in range(2 * processes):
        pinned = i % 2 == 1
        env = dict(os.environ, BENCH_ROOT=str(ROOT), BENCH_PIN="1" if pinned else "")
        done = subprocess.run(
            [sys.executable, "-c", ONE], env=env, capture_output=True, text=True, check=False
        )
        if done.returncode:
            sys.exit(f"process {i} failed:\n{done.stderr[-4000:]}")
        rows.append({"pinned": pinned, **json.loads(done.stdout.strip().splitlines()[-1])})
        print(f"process {i + 1}/{2 * processes}", flush=True)
    return rows


def render(rows: list[dict]) -> str:
    lines = [
        "| group | figure | processes | sd between processes, one window | "
        "sd between processes, mean of two windows | sd of one window within a process |",
        "|---|---|---|---|---|---|",
    ]
    for pinned in (False, True):
        group = [r for r in rows if r["pinned"] is pinned]
        for figure in ("normalized", "absolute"):
            logs = [[math.log(v) for v in r[figure]] for r in group]
            first = statistics.stdev(w[0] for w in logs)
            mean = statistics.stdev(sum(w) / 2 for w in logs)
            within = statistics.stdev(w[1] - w[0] for w in logs) / math.sqrt(2)
            lines.append(
                f"| {'pinned to one core' if pinned else 'not pinned'} | {figure} | "
                f"{len(group)} | {first * 100:.2f}% | {mean * 100:.2f}% | {within * 100:.2f}% |"
            )
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--processes", type=int, default=12, help="per group")
    parser.add_argument("--out", type=Path, default=None, help="write the rows as JSON")
    args = parser.parse_args()
    rows = run(args.processes)
    if args.out is not None:
        args.out.write_text(json.dumps(rows, indent=1))
    print(render(rows))


if __name__ == "__main__":
    main()
