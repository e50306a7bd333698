#!/bin/bash
# The project's own suite with two busy loops beside it, one per core of a 2-core machine
# (issue 18: "the suite holds under load"), as the README runs it (-n 2):
#
#   bash benchmarks/suite_under_load.sh TAG     # output in /tmp/loaded_TAG.log
#
# `python` is the environment the README's install made (activate it first).
tag=${1:-1}
cd "$(dirname "$0")/.."
export TORCHINDUCTOR_CACHE_DIR=${TORCHINDUCTOR_CACHE_DIR:-/tmp/pytest-tweak-inductor-cache}
python3 -c "while True: pass" & b1=$!
python3 -c "while True: pass" & b2=$!
trap 'kill $b1 $b2' EXIT
start=$(date +%s)
git log --oneline | head -1 > /tmp/loaded_$tag.log
python -m pytest -n 2 -p no:cacheprovider --durations=20 -q >> /tmp/loaded_$tag.log 2>&1
echo "rc=$? elapsed=$(( $(date +%s)-start )) load: two busy loops" >> /tmp/loaded_$tag.log
