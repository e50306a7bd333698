"""Latency on an accelerator: pytest-tweak's figure against do_bench and Timer, per mode.

    python benchmarks/latency.py --processes 3            # on a cuda machine; ~6 min on an H200
    python benchmarks/latency.py --render W/latency.json  # the markdown tables from a run

Two models, as in the GPU latency issue:

- ``launch``: four ``nn.TransformerEncoderLayer(256, 4, 512)``, batch 8 x 64 tokens: the host's
  launch work is longer than the kernels (launch-bound);
- ``compute``: 50 x (``Linear(1024, 1024)`` + relu), batch 1024: the kernels are (compute-bound).

Each fresh process compiles each model under each config (``default``, ``reduce-overhead``,
``max-autotune-no-cudagraphs``, autocast bf16) and times the one compiled model with every
method in an order rotated from process to process (drifts and order effects hit them
alike): pytest-tweak's `run_case` at its defaults (the plugin's own path: latency, device time,
references), ``triton.testing.do_bench(return_mode="median")`` and
``torch.utils.benchmark.Timer.adaptive_autorange``. The eager model is timed by
pytest-tweak as the speed-up's numerator. Results go to ``--out`` as JSON; ``--render``
prints the tables that docs/measurement.md holds.
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
from typing import Any

ROOT = Path(__file__).resolve().parent.parent

CONFIGS = ("default", "reduce-overhead", "max-autotune-no-cudagraphs", "autocast-bf16")
MODELS = ("launch", "compute")

ONE_PROCESS = r"""
import json, os, sys, torch
sys.path.insert(0, os.environ["BENCH_ROOT"])
from pytest_tweak.backends import TorchInductorBackend
from pytest_tweak.case import LocalRunner, run_case
from pytest_tweak.backend_configs import TorchInductorBackendConfig
from pytest_tweak.measure import Instruments, MeasureSettings

device = torch.device("cuda")
order = json.loads(os.environ["BENCH_ORDER"])
torch.manual_seed(0)


def model_and_input(kind):
    if kind == "launch":
        layers = [torch.nn.TransformerEncoderLayer(256, 4, 512, batch_first=True)
                  for _ in range(4)]
        return torch.nn.Sequential(*layers).eval(), torch.randn(8, 64, 256)
    layers = []
    for _ in range(50):
        layers += [torch.nn.Linear(1024, 1024), torch.nn.ReLU()]
    return torch.nn.Sequential(*layers).eval(), torch.randn(1024, 1024)


def config(name):
    if name == "autocast-bf16":
        return TorchInductorBackendConfig(autocast_enabled=True, autocast_dtype=torch.bfloat16)
    return TorchInductorBackendConfig(mode=name)


instruments = Instruments()
out = []
for kind in json.loads(os.environ["BENCH_MODELS"]):
    model, x = model_and_input(kind)
    for name in json.loads(os.environ["BENCH_CONFIGS"]):
        backend = TorchInductorBackend(config(name))
        row = {"model": kind, "config": name}
        with torch.no_grad():
            result = run_case(model, (x,), {}, backend=backend, device=device,
                              settings=MeasureSettings(), runner=LocalRunner(),
                              instruments=instruments)
            row["tweak"] = result.median_s
            row["device"] = result.device_time.median
            row["normalized"] = result.normalized.median
            row["host_weight"] = result.host_weight
            row["speedup"] = result.speedup.median
            row["cudagraph_skips"] = list(result.cudagraph_skips)
            # the same compiled code again (dynamo's cache), timed by each method in turn
            compiled = backend.compile(model.to(device), device)
            xd = x.to(device)
            for _ in range(3):
                compiled(xd)
            torch.cuda.synchronize()
            for method in order:
                if method == "tweak_again":
                    from pytest_tweak.measure import measure, make_timer
                    m = measure({"case": lambda: compiled(xd)}, make_timer(device),
                                MeasureSettings())
                    row[method] = m.summary("case").median
                elif method == "timer":
                    from torch.utils.benchmark import Timer
                    t = Timer("f(x)", globals={"f": compiled, "x": xd})
                    row[method] = t.adaptive_autorange(threshold=0.01, max_run_time=5).median
                else:
                    from triton.testing import do_bench
                    row[method] = do_bench(lambda: compiled(xd), return_mode="median") / 1e3
        out.append(row)
        torch._dynamo.reset()
print("RESULT " + json.dumps(out))
"""


def run(processes: int, models: list[str], configs: list[str], out: Path) -> list[dict[str, Any]]:
    """Run the processes; ``out`` holds the rows so far after each one."""
    methods = ["tweak_again", "do_bench", "timer"]
    rows: list[dict[str, Any]] = []
    for i in range(processes):
        order = methods[i % 3 :] + methods[: i % 3]
        env = dict(os.environ)
        env.update(
            BENCH_ROOT=str(ROOT),
            BENCH_ORDER=json.dumps(order),
            BENCH_MODELS=json.dumps(models),
            BENCH_CONFIGS=json.dumps(configs),
        )
        done = subprocess.run(
            [sys.executable, "-c", ONE_PROCESS], env=env, capture_output=True, text=True
        )
        lines = [line for line in done.stdout.splitlines() if line.startswith("RESULT ")]
        if done.returncode or not lines:
            sys.exit(f"process {i} failed:\n{done.stdout[-3000:]}\n{done.stderr[-6000:]}")
        for row in json.loads(lines[-1][len("RESULT ") :]):
            rows.append({"process": i, **row})
        out.write_text(json.dumps(rows, indent=1))
        print(f"process {i + 1}/{processes} done", flush=True)
    return rows


def _spread(values: list[float]) -> float:
    return (max(values) / min(values) - 1.0) * 100.0 if values else math.nan


def render(rows: list[dict[str, Any]]) -> str:
    def ms(value: float) -> str:
        return f"{value * 1e3:.3f} ms"

    lines = [
        "**Agreement** (one compiled model per process, every method in turn, rotated order; "
        "medians over processes):",
        "",
        "| model | config | pytest-tweak latency | device time | host weight | do_bench | "
        "Timer | tweak / do_bench | tweak / Timer | speed-up over eager |",
        "|---|---|---|---|---|---|---|---|---|---|",
    ]
    groups: dict[tuple[str, str], list[dict[str, Any]]] = {}
    for row in rows:
        groups.setdefault((row["model"], row["config"]), []).append(row)
    for (model, config), group in groups.items():

        def med(key: str, g: list[dict[str, Any]] = group) -> float:
            return statistics.median(r[key] for r in g)

        ratio_bench = statistics.median(r["tweak"] / r["do_bench"] for r in group)
        ratio_timer = statistics.median(r["tweak"] / r["timer"] for r in group)
        skips = " (CUDA graphs skipped)" if any(r["cudagraph_skips"] for r in group) else ""
        lines.append(
            f"| {model} | {config}{skips} | {ms(med('tweak'))} | {ms(med('device'))} | "
            f"{med('host_weight'):.2f} | {ms(med('do_bench'))} | {ms(med('timer'))} | "
            f"{ratio_bench:.3f} | {ratio_timer:.3f} | {med('speedup'):.2f}x |"
        )
    lines += [
        "",
        "**Between-process spread** (max/min - 1 over processes) of each figure:",
        "",
        "| model | config | processes | latency (absolute) | normalized latency (gated) | "
        "device time | do_bench | Timer |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for (model, config), group in groups.items():
        cells = [
            f"{_spread([r[key] for r in group]):.2f}%"
            for key in ("tweak", "normalized", "device", "do_bench", "timer")
        ]
        lines.append(f"| {model} | {config} | {len(group)} | " + " | ".join(cells) + " |")
    return "\n".join(lines) + "\n"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--processes", type=int, default=3)
    parser.add_argument("--models", nargs="+", default=list(MODELS), choices=MODELS)
    parser.add_argument("--configs", nargs="+", default=list(CONFIGS), choices=CONFIGS)
    parser.add_argument("--out", type=Path, default=Path("latency.json"))
    parser.add_argument("--render", type=Path, default=None, help="print tables from a run")
    args = parser.parse_args()
    if args.render is not None:
        print(render(json.loads(args.render.read_text())))
        return
    rows = run(args.processes, args.models, args.configs, args.out)
    print(render(rows))


if __name__ == "__main__":
    main()
