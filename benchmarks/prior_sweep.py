"""Re-judge a gate folder's compare runs offline at other run-noise priors (issues 15, 18).

    python benchmarks/prior_sweep.py WORK [--noise 0.5 1 2 3]

WORK is a folder `gpu_gate.sh` or `measurement.py` filled (its baseline and quiet compare
runs). Every run is judged again through the plugin's own `judge`
(`measurement.judge_offline`, as `--stage render` does), with the run noise set as
`--tweak-run-noise` sets it, for the normalized, absolute and device figures; it prints, per
injected share, how many runs were regressed, unchanged, inconclusive and improved.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))

import measurement as m


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("work", type=Path)
    parser.add_argument("--noise", type=float, nargs="+", default=[0.5, 1.0, 2.0, 3.0])
    args = parser.parse_args()
    spec = m._spec(args.work)
    base = [m._cases(p) for p in sorted(args.work.glob("base*.json"), key=m._index)]
    runs = [
        m._cases(p) for p in sorted(args.work.glob("quiet*.json"), key=m._index) if m._complete(p)
    ]
    print(f"{len(base)} baseline runs, {len(runs)} compare runs")
    for metric in ("normalized", "absolute", "device"):
        for noise in args.noise:
            cells = []
            for share in spec["shares"]:
                name = f"slow{share}"
                base_runs = [m._run_record(b[name]["extra_info"]["tweak"]) for b in base]
                statuses = [
                    m.judge_offline(
                        base_runs,
                        m._run_record(r[name]["extra_info"]["tweak"]),
                        metric,
                        spec["device"],
                        run_noise_pct=noise,
                    )
                    for r in runs
                ]
                counts = "/".join(
                    str(statuses.count(s))
                    for s in ("regressed", "unchanged", "inconclusive", "improved")
                )
                cells.append(f"{share}%: {counts}")
            print(f"{metric:10} noise {noise:g}%  (regressed/unchanged/inconclusive/improved)")
            print("   " + " | ".join(cells))


if __name__ == "__main__":
    main()
