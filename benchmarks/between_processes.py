"""Where a GPU case's between-process spread comes from (issues 15 and 18).

    python benchmarks/between_processes.py --seconds 420 --out W/between.json  # cuda, one call
    python benchmarks/between_processes.py --render W/between.json
    python benchmarks/between_processes.py --judge W/between.json --noise 0.5 0.3 0.25

The gate's verdict on unchanged code is *inconclusive* when the gated figure (latency over
the reference workloads) spreads between fresh processes by more than the 1 % threshold
allows. This script takes that spread apart. Fresh processes, one after another until
``--seconds`` have passed, each compile the gate's compute-bound model (`measurement.py`'s
``8 x (matmul 1024x2048 @ 2048x2048 + relu)``) and measure it twice, through the plugin's
own path (`case._measure` at its default settings: latency, device time, both references,
eager), with ``triton.testing.do_bench`` between the two. Per process and per measurement
it keeps each figure's median and its own sampling (``log_sd``, the median's standard error
as a log). Two more measurements try variants of the latency timer: ``primed`` (an untimed
call before each sample, as on cpu, so the device is busy up to the sample's start) and
``long`` (samples of 100 ms instead of 20). Printed, per figure:

- the spread between processes (sd of the log of the first measurement's median);
- the spread within a process (sd of the log ratio of the two measurements, over sqrt 2);
- the figure's own sampling, as the verdict counts it (median over processes of log_sd).

A figure whose between-process spread is well above its within-process spread and its own
sampling moves with the process (allocation, clocks, the order things were built in), which
more samples cannot fix; one whose spread is its sampling gets better with more samples.

``--judge`` plays the gate on those processes offline, through the plugin's own `judge` at the
cuda defaults (threshold 1 %, confidence 99 %), at each ``--noise`` prior: every choice of
three processes as the baseline and one other as the compare run (each measurement's median
and sampling as the run would have recorded them), unchanged and with the compare run's
figures 2 % slower. The processes are the population: a resampled estimate of what the gate
would say on this machine, not a gate run.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent

FIGURES = ("latency", "device", "normalized", "reference", "host_reference", "eager", "do_bench")

ONE_PROCESS = r"""
import json, math, os, sys, torch
sys.path.insert(0, os.environ["BENCH_ROOT"])
from pytest_tweak.case import _measure
from pytest_tweak.measure import HOST_REFERENCE, REFERENCE, Instruments, MeasureSettings

device = torch.device(os.environ["BENCH_DEVICE"])
g = torch.Generator().manual_seed(0)
weights = [(torch.randn(2048, 2048, generator=g) / 2048**0.5).to(device) for _ in range(8)]
x = torch.randn(1024, 2048, generator=g).to(device)


def forward(x):
    for w in weights:
        x = torch.relu(x @ w)
    return x


compiled = torch.compile(forward)
with torch.no_grad():
    compiled(x)

def call():
    with torch.no_grad():
        return compiled(x)

def eager_call():
    with torch.no_grad():
        return forward(x)

tools = Instruments()
out = {}
def take(tag):
    m = _measure(call, eager_call, device, MeasureSettings(), tools, lambda phase: None)
    row = {}
    for figure, name in (("latency", "case"), ("device", "device"), ("reference", REFERENCE),
                         ("host_reference", HOST_REFERENCE), ("eager", "eager")):
        s = m.summary(name)
        if s is not None:
            row[figure] = [s.median, s.log_sd]
    n = m.normalized()
    if n is not None:
        row["normalized"] = [n.median, n.log_sd]
    row["stopped"] = m.stopped
    row["rounds"] = len(m.samples["case"])
    out[tag] = row

from pytest_tweak import measure as pm
from pytest_tweak.devices import make_synchronizer

# variants of the latency timer on an accelerator: an untimed call before each sample (as on
# cpu), so the device is busy up to the sample's start; and samples of 100 ms, not 20 ms
shipped = tools.timer
variants = {
    "first": shipped,
    "second": shipped,
    "primed": lambda d, threads=None: pm.HostTimer(
        make_synchronizer(d), min_round_s=pm.ACCELERATOR_MIN_ROUND_S, prime=True),
    "long": lambda d, threads=None: pm.HostTimer(make_synchronizer(d), min_round_s=0.1),
}
for i, tag in enumerate(os.environ.get("BENCH_ORDER", "first,second,primed,long").split(",")):
    if device.type == "cpu" and tag in ("primed", "long"):
        continue
    tools.timer = variants[tag]
    take(tag)
    if i == 0 and device.type == "cuda":
        from triton.testing import do_bench
        out["do_bench"] = do_bench(call, return_mode="median") / 1e3
print("RESULT " + json.dumps(out))
"""


def run(seconds: float, device: str, out: Path | None, order: str) -> list[dict[str, Any]]:
    rows: list[dict[str, Any]] = []
    env = dict(os.environ, BENCH_ROOT=str(ROOT), BENCH_DEVICE=device, BENCH_ORDER=order)
    start = time.monotonic()
    while time.monotonic() - start < seconds:
        began = time.monotonic()
        done = subprocess.run(
            [sys.executable, "-c", ONE_PROCESS],
            env=env,
            capture_output=True,
            text=True,
            timeout=240,
        )
        lines = [ln for ln in done.stdout.splitlines() if ln.startswith("RESULT ")]
        if done.returncode != 0 or not lines:
            sys.exit(f"a process failed:\n{done.stderr[-4000:]}")
        rows.append(json.loads(lines[-1][len("RESULT ") :]))
        print(f"process {len(rows)}: {time.monotonic() - began:.0f} s", flush=True)
        if out is not None:
            out.write_text(json.dumps(rows, indent=1))
    return rows


def _sd(values: list[float]) -> float | None:
    return statistics.stdev(values) if len(values) > 1 else None


def render(rows: list[dict[str, Any]]) -> str:
    lines = [
        f"{len(rows)} fresh processes, each measuring four times through the plugin's path "
        "(twice with the shipped timer, the first and second rows of the table's 'within'; "
        "once with each variant)",
        "",
        "| figure | median | between processes: sd | max/min - 1 | within a process: sd "
        "| own sampling (median log_sd) |",
        "|---|---|---|---|---|---|",
    ]
    for figure in FIGURES:
        if figure == "do_bench":
            values = [r["do_bench"] for r in rows if "do_bench" in r]
            if len(values) < 2:
                continue
            logs = [math.log(v) for v in values]
            lines.append(
                f"| do_bench | {statistics.median(values) * 1e3:.4f} ms | "
                f"{_sd(logs) * 100:.2f}% | {(max(values) / min(values) - 1) * 100:.2f}% | - | - |"
            )
            continue
        pairs = [(r["first"][figure], r["second"][figure]) for r in rows if figure in r["first"]]
        if len(pairs) < 2:
            continue
        firsts = [p[0][0] for p in pairs]
        between = _sd([math.log(v) for v in firsts])
        within = _sd([math.log(b[0] / a[0]) for a, b in pairs])
        sampling = statistics.median(p[0][1] for p in pairs)
        unit = "" if figure == "normalized" else " ms"
        scale = 1.0 if figure == "normalized" else 1e3
        lines.append(
            f"| {figure} | {statistics.median(firsts) * scale:.4f}{unit} | {between * 100:.2f}% | "
            f"{(max(firsts) / min(firsts) - 1) * 100:.2f}% | "
            f"{within / math.sqrt(2) * 100:.2f}% | {sampling * 100:.2f}% |"
        )
    for tag in ("primed", "long"):
        for figure in ("latency", "normalized", "device"):
            values = [r[tag][figure][0] for r in rows if tag in r and figure in r[tag]]
            if len(values) < 2:
                continue
            sampling = statistics.median(r[tag][figure][1] for r in rows if tag in r)
            scale, unit = (1.0, "") if figure == "normalized" else (1e3, " ms")
            lines.append(
                f"| {figure} ({tag}) | {statistics.median(values) * scale:.4f}{unit} | "
                f"{_sd([math.log(v) for v in values]) * 100:.2f}% | "
                f"{(max(values) / min(values) - 1) * 100:.2f}% | - | {sampling * 100:.2f}% |"
            )
    stops = [r["first"]["stopped"] for r in rows]
    rounds = [r["first"]["rounds"] for r in rows]
    lines += [
        "",
        f"Sampling stopped: {', '.join(f'{s} {stops.count(s)}' for s in sorted(set(stops)))}; "
        f"rounds per measurement: median {statistics.median(rounds):g} "
        f"({min(rounds)}-{max(rounds)}).",
    ]
    return "\n".join(lines)


def judge_resampled(rows: list[dict[str, Any]], priors: list[float]) -> str:
    """Every 3-process baseline against every other process, per timer variant and prior."""
    import itertools

    sys.path.insert(0, str(ROOT))
    sys.path.insert(0, str(Path(__file__).parent))
    from measurement import judge_offline

    from pytest_tweak.baselines import RunRecord
    from pytest_tweak.stats import Summary

    def summary(figure: list[float], factor: float = 1.0) -> Summary:
        median, log_sd = figure[0] * factor, figure[1]
        return Summary(10, median, median, median, median, median, log_sd)

    def record(row: dict[str, Any], factor: float = 1.0) -> RunRecord:
        return RunRecord(
            timing=summary(row["latency"], factor),
            normalized=summary(row["normalized"], factor),
            device=summary(row["device"]),
        )

    lines = [
        f"{len(rows)} processes; every 3-process baseline against every other process "
        "(the plugin's `judge`, cuda defaults but the prior)",
        "",
        "| timer | prior | unchanged code: unchanged / inconclusive / regressed / improved "
        "| +2 %: regressed |",
        "|---|---|---|---|",
    ]
    for tag in ("first", "primed", "long"):
        if not all(tag in r for r in rows):
            continue
        for prior in priors:
            counts: dict[str, int] = {}
            caught = total = 0
            for base in itertools.combinations(range(len(rows)), 3):
                base_runs = [record(rows[i][tag]) for i in base]
                for j in set(range(len(rows))) - set(base):
                    for factor in (1.0, 1.02):
                        # the plugin's verdict, cuda defaults, the prior as --tweak-run-noise
                        status = judge_offline(
                            base_runs,
                            record(rows[j][tag], factor),
                            "normalized",
                            "cuda",
                            run_noise_pct=prior,
                        )
                        if factor == 1.0:
                            counts[status] = counts.get(status, 0) + 1
                            total += 1
                        else:
                            caught += status == "regressed"
            shares = " / ".join(
                f"{counts.get(s, 0) / total * 100:.1f}%"
                for s in ("unchanged", "inconclusive", "regressed", "improved")
            )
            lines.append(f"| {tag} | {prior:g}% | {shares} | {caught / total * 100:.1f}% |")
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--seconds", type=float, default=420.0)
    parser.add_argument("--device", default="cuda")
    parser.add_argument("--out", type=Path, default=None)
    parser.add_argument(
        "--order",
        default="first,second,primed,long",
        help="the measurements of a process, in order (the timer variants' position matters: "
        "a GPU settles over a process's first seconds)",
    )
    parser.add_argument("--render", type=Path, default=None, help="print the table of a run")
    parser.add_argument("--judge", type=Path, default=None, help="play the gate on a run")
    parser.add_argument("--noise", type=float, nargs="+", default=[0.5, 0.3, 0.25])
    args = parser.parse_args()
    if args.judge is not None:
        print(judge_resampled(json.loads(args.judge.read_text()), args.noise))
        return
    if args.render is not None:
        print(render(json.loads(args.render.read_text())))
        return
    rows = run(args.seconds, args.device, args.out, args.order)
    print(render(rows))


if __name__ == "__main__":
    main()
