"""Re-judge the runs of a `measurement.py` folder under other decision rules, offline.

    python benchmarks/verdict_rules.py WORK [WORK ...]

For each folder (its ``base*.json`` baseline runs and ``quiet*``/``loaded*`` compare runs),
the normalized figure of every test is judged against its baseline the way
`pytest_tweak.verdict.compare` does, with these variants of the noise model:

- ``pooled, z`` (today's rule): the baseline runs' spread shrunk towards the configured run
  noise (``_PRIOR_RUNS`` pseudo-runs), the normal quantile;
- ``pooled, t``: the same, with Student's t quantile for the degrees of freedom of that
  estimate (a spread from five runs is itself uncertain);
- ``floor, z``: the configured run noise as a floor: a baseline's runs can look tighter than
  the machine is, never looser;
- ``floor 3.5%, z``: the floor at 3.5 %, the spread this machine showed between processes.

It prints, per folder and kind of run, the share of runs each rule calls regressed /
inconclusive / unchanged for each injected slow-down.
"""

from __future__ import annotations

import json
import math
import sys
from collections import Counter
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "benchmarks"))

from measurement import _run_record  # noqa: E402

from pytest_tweak import verdict as V  # noqa: E402
from pytest_tweak.stats import normal_quantile  # noqa: E402

#: One-sided 99 % quantiles of Student's t, by degrees of freedom.
_T99 = {1: 31.821, 2: 6.965, 3: 4.541, 4: 3.747, 5: 3.365, 6: 3.143, 7: 2.998, 8: 2.896}
_T99 |= {9: 2.821, 10: 2.764, 12: 2.681, 15: 2.602, 20: 2.528, 25: 2.485, 30: 2.457}


def _t99(df: int) -> float:
    known = max(d for d in _T99 if d <= df)
    return _T99[known]


def _status(new: Any, base: list[Any], rule: str, threshold_pct: float, noise_pct: float) -> str:
    k = len(base)
    logs = [math.log(run.median) for run in base]
    mean = sum(logs) / k
    estimate = math.log(new.median) - mean
    within = sum(run.log_sd**2 for run in base) / k
    prior = math.log1p((3.5 if rule == "floor 3.5%, z" else noise_pct) / 100.0) ** 2
    spread = sum((x - mean) ** 2 for x in logs) / (k - 1) if k > 1 else 0.0
    measured = max(spread - within, 0.0)
    pooled = (V._PRIOR_RUNS * prior + (k - 1) * measured) / (V._PRIOR_RUNS + k - 1)
    between = max(prior, measured) if rule.startswith("floor") else pooled
    half_sd = math.sqrt(between + new.log_sd**2 + (between + within) / k)
    quantile = _t99(V._PRIOR_RUNS + k - 1) if rule == "pooled, t" else normal_quantile(0.99)
    half = quantile * half_sd
    threshold = math.log1p(threshold_pct / 100.0)
    if estimate > threshold and estimate - half > 0:
        return "regressed"
    if estimate < math.log1p(-threshold_pct / 100.0) and estimate + half < 0:
        return "improved"
    return "inconclusive" if half > threshold else "unchanged"


RULES = ("pooled, z", "pooled, t", "floor, z", "floor 3.5%, z")


def _cases(path: Path) -> dict[str, dict[str, Any]]:
    data = json.loads(path.read_text())
    return {
        b["name"].rsplit("-", 1)[-1].rstrip("]"): b["extra_info"]["tweak"]
        for b in data["benchmarks"]
    }


def main() -> None:
    from pytest_tweak.options import DEFAULT_RUN_NOISE_PCT, DEFAULT_THRESHOLD_PCT

    for folder in map(Path, sys.argv[1:]):
        base = [_cases(p) for p in sorted(folder.glob("base*.json"))]
        print(f"## {folder} ({len(base)} baseline runs)")
        for kind in ("quiet", "loaded"):
            runs = []
            for path in sorted(folder.glob(f"{kind}*.json")):
                try:
                    runs.append(_cases(path))
                except ValueError:
                    continue
            if not runs:
                continue
            print(f"\n{kind}: {len(runs)} runs\n")
            print("| test | " + " | ".join(RULES) + " |")
            print("|---|" + "---|" * len(RULES))
            for name in sorted(runs[0], key=lambda n: int(n.removeprefix("slow"))):
                cells = []
                for rule in RULES:
                    counts = Counter(
                        _status(
                            _run_record(run[name]).normalized,
                            [_run_record(b[name]).normalized for b in base],
                            rule,
                            DEFAULT_THRESHOLD_PCT["cpu"],
                            DEFAULT_RUN_NOISE_PCT["cpu"],
                        )
                        for run in runs
                    )
                    n = len(runs)
                    cells.append(
                        f"{counts['regressed'] / n:.0%} reg / {counts['inconclusive'] / n:.0%} inc"
                        f" / {counts['unchanged'] / n:.0%} unch"
                    )
                print(f"| {name} | " + " | ".join(cells) + " |")
        print()


if __name__ == "__main__":
    main()
