"""Why do_bench reads less than the per-call latency on a launch-bound model: its L2 flush.

    python benchmarks/do_bench_flush.py --rounds 5          # on a cuda machine, ~2 min

``triton.testing.do_bench`` zero-fills a 256 MB buffer before every call it times and starts
its event after the fill is queued. The fill keeps the device busy (~0.1 ms on an H100/H200)
while the host already launches the timed call's kernels, so on a model whose host launch
work outlasts its kernels part of that work is hidden from do_bench's events. Back-to-back
calls (pytest-tweak's latency, ``torch.utils.benchmark.Timer``, what a user's loop sees) have
no such head start.

One process compiles each model once (default mode) and then, round after round, times the
same compiled model with each method in an order rotated per round:

- ``tweak``: `pytest_tweak.measure.measure` with the accelerator latency timer (the gated
  figure before normalization);
- ``do_bench``: ``triton.testing.do_bench(return_mode="median")`` as shipped;
- ``do_bench_no_flush``: the same with its flush buffer replaced by a 4-byte one, so the fill
  before each call costs one tiny kernel and gives the host no head start;
- ``timer``: ``torch.utils.benchmark.Timer.blocked_autorange(min_run_time=0.5)``.

Printed: each method's median over rounds, and the median over rounds of tweak / method,
where both come from the same round (interleaved, so a host that changes speed between rounds
moves both). Models as in ``benchmarks/latency.py``.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

METHODS = ("tweak", "do_bench", "do_bench_no_flush", "timer")


def _model(kind: str):
    import torch

    torch.manual_seed(0)
    if kind == "launch":
        layers = [torch.nn.TransformerEncoderLayer(256, 4, 512, batch_first=True) for _ in range(4)]
        return torch.nn.Sequential(*layers).eval(), torch.randn(8, 64, 256)
    linears: list[torch.nn.Module] = []
    for _ in range(50):
        linears += [torch.nn.Linear(1024, 1024), torch.nn.ReLU()]
    return torch.nn.Sequential(*linears).eval(), torch.randn(1024, 1024)


def _no_flush():
    """Make do_bench's flush buffer 4 bytes, check that it took; returns the undo."""
    import torch
    import triton

    driver = triton.runtime.driver.active
    original = driver.get_empty_cache_for_benchmark

    def tiny(*_: object) -> torch.Tensor:
        return torch.empty(1, dtype=torch.int, device="cuda")

    driver.get_empty_cache_for_benchmark = tiny
    assert triton.runtime.driver.active.get_empty_cache_for_benchmark().numel() == 1
    return lambda: setattr(driver, "get_empty_cache_for_benchmark", original)


def time_once(method: str, call) -> float:
    import torch

    if method == "tweak":
        from pytest_tweak.measure import MeasureSettings, make_timer, measure

        device = torch.device("cuda")
        return measure({"case": call}, make_timer(device), MeasureSettings()).summary("case").median
    if method == "timer":
        from torch.utils.benchmark import Timer

        return Timer("f()", globals={"f": call}).blocked_autorange(min_run_time=0.5).median
    from triton.testing import do_bench

    if method == "do_bench_no_flush":
        undo = _no_flush()
        try:
            return do_bench(call, return_mode="median") / 1e3
        finally:
            undo()
    return do_bench(call, return_mode="median") / 1e3


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--models", nargs="+", default=["launch", "compute"])
    parser.add_argument("--out", type=Path, default=None, help="write the rounds as JSON")
    args = parser.parse_args()

    import torch

    rows = []
    for kind in args.models:
        model, x = _model(kind)
        model, x = model.cuda(), x.cuda()
        compiled = torch.compile(model)
        with torch.no_grad():
            for _ in range(5):
                compiled(x)
            torch.cuda.synchronize()

            def call(f=compiled, x=x):
                return f(x)

            for r in range(args.rounds):
                order = METHODS[r % len(METHODS) :] + METHODS[: r % len(METHODS)]
                row = {"model": kind, "round": r}
                for method in order:
                    row[method] = time_once(method, call)
                rows.append(row)
                print(json.dumps(row), flush=True)
        torch._dynamo.reset()
    if args.out is not None:
        args.out.write_text(json.dumps(rows, indent=1))
    print(render(rows))


def render(rows: list[dict]) -> str:
    lines = [
        "| model | rounds | "
        + " | ".join(f"{m} median" for m in METHODS)
        + " | "
        + " | ".join(f"tweak / {m}" for m in METHODS[1:])
        + " |",
        "|---|---|" + "---|" * (2 * len(METHODS) - 1),
    ]
    for kind in dict.fromkeys(r["model"] for r in rows):
        group = [r for r in rows if r["model"] == kind]
        medians = [f"{statistics.median(r[m] for r in group) * 1e3:.3f} ms" for m in METHODS]
        ratios = [f"{statistics.median(r['tweak'] / r[m] for r in group):.3f}" for m in METHODS[1:]]
        lines.append(f"| {kind} | {len(group)} | " + " | ".join(medians + ratios) + " |")
    return "\n".join(lines)


if __name__ == "__main__":
    main()
