"""How far the median of unchanged code moves between runs: the basis of the default threshold.

Records a baseline of the example suites once, then compares unchanged code against it in
fresh pytest processes, and prints, per cpu-thread setting, the change of every case in every
run and the largest one. The default ``tweak_threshold`` must sit well above that largest
change, so unchanged code never fails.

    python benchmarks/threshold.py --runs 5 --threads 1 0

(``--threads 0`` keeps torch's own thread count.) Run it on an otherwise idle machine.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def _pytest(*args: str) -> None:
    cmd = [sys.executable, "-m", "pytest", "examples", "-q", "-p", "no:cacheprovider", *args]
    done = subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True, check=False)
    if done.returncode != 0:
        sys.exit(f"{' '.join(cmd)} failed:\n{done.stdout[-3000:]}\n{done.stderr[-3000:]}")


def measure(threads: int, runs: int, workdir: Path) -> dict[str, list[float]]:
    baseline = workdir / f"baseline-{threads}.json"
    common = [f"--tweak-cpu-threads={threads}", f"--tweak-baseline={baseline}"]
    _pytest(*common, "--tweak-save")
    base = json.loads(baseline.read_text())["cases"]
    changes: dict[str, list[float]] = {key: [] for key in base}
    for run in range(runs):
        out = workdir / f"run-{threads}-{run}.json"
        # a threshold nothing reaches: this measures, it does not judge
        _pytest(*common, "--tweak-threshold=100000", f"--benchmark-json={out}")
        for bench in json.loads(out.read_text())["benchmarks"]:
            key = bench["fullname"]
            changes[key].append((bench["stats"]["median"] / base[key]["median_s"] - 1) * 100)
    return changes


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--threads", type=int, nargs="+", default=[1, 0])
    args = parser.parse_args()
    os.environ.setdefault(
        "TORCHINDUCTOR_CACHE_DIR", str(Path(tempfile.gettempdir()) / "pytest-tweak-inductor-cache")
    )
    with tempfile.TemporaryDirectory() as tmp:
        for threads in args.threads:
            changes = measure(threads, args.runs, Path(tmp))
            label = "torch default" if threads == 0 else str(threads)
            print(f"\n### cpu threads: {label} ({args.runs} compare runs against one baseline)\n")
            print("| case | changes of the median, % | largest abs. |")
            print("| --- | --- | --- |")
            worst = []
            for key, values in sorted(changes.items()):
                biggest = max(abs(v) for v in values)
                worst.append(biggest)
                cells = ", ".join(f"{v:+.1f}" for v in values)
                print(f"| `{key.split('::', 1)[1]}` | {cells} | {biggest:.1f} |")
            print(
                f"\nlargest change over all cases and runs: {max(worst):.1f} %; "
                f"median of the per-case largest: {statistics.median(worst):.1f} %"
            )


if __name__ == "__main__":
    main()
