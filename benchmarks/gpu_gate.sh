#!/bin/bash
# The gate at the defaults on a GPU, one model per call of the device tool (issues 15, 18):
#
#   bash benchmarks/gpu_gate.sh compute WORK [SECONDS]   # 8 x matmul 2048, compute-bound
#   bash benchmarks/gpu_gate.sh launch  WORK [SECONDS]   # 4 x TransformerEncoderLayer(256)
#   python benchmarks/measurement.py --work WORK --stage render   # afterwards, anywhere
#
# Calibrates the injected work (compute: +2 %; launch: +2, +5, +10 and +20 %), records a 3-run baseline
# (as the README recommends for cuda), then adds compare runs until SECONDS (default 585) have
# passed, so that it fits one 10-minute call; run it again on the same WORK to add runs (a run
# cut short by the limit is left out by the render). The device tool copies the working tree
# anew for each call and an ignored folder does not travel: to go on, unpack $OUT/MODEL.tgz
# into the checkout (untracked, not ignored) before the next call. WORK is tarred to $OUT every minute when
# $OUT is set, with its output in $OUT/MODEL.log, so what a call did comes back even if the
# call is cut off; a pytest run that stalls is stopped after 300 s with its stacks kept.
set -u
model=$1 work=$2 limit=${3:-585}
export PYTHONUNBUFFERED=1 PYTHONFAULTHANDLER=1 TORCHINDUCTOR_CACHE_DIR=${TORCHINDUCTOR_CACHE_DIR:-/tmp/tweak-cache}
here=$(dirname "$0")
if [ "$model" = launch ]; then args=(--model launch); shares=(2 5 10 20); else args=(); shares=(2); fi
if [ -n "${OUT:-}" ]; then
  exec > >(tee -a "$OUT/$model.log") 2>&1  # what the call printed comes back even if cut off
  ( while sleep 60; do tar czf "$OUT/$model.tgz" "$work"; done ) &
  saver=$!
fi
if [ ! -f "$work/spec.json" ]; then
  python3 "$here/measurement.py" --device cuda "${args[@]}" --work "$work" --shares "${shares[@]}" --stage setup || exit
  python3 "$here/measurement.py" --device cuda --work "$work" --baseline-runs 3 --stage baseline || exit
fi
timeout $((limit - SECONDS)) python3 "$here/measurement.py" --device cuda --work "$work" --stage compare --runs 100
if [ -n "${OUT:-}" ]; then kill "$saver"; tar czf "$OUT/$model.tgz" "$work"; fi
echo "$model: $(ls "$work"/quiet*.xml 2>/dev/null | wc -l) compare runs in $work after $SECONDS s"
