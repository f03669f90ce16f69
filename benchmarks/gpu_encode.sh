#!/usr/bin/env bash
# The encode figures of issue 15 on a GPU, in one command.
#
#   here (a checkout with ../shared/data):   bash ../shared/gpu/pack.sh
#   on the GPU machine, in the project root: source .gpu/setup.sh && bash benchmarks/gpu_encode.sh
#
# Runs benchmarks/encode.py --preset gpu (all-MiniLM-L6-v2; fp32, fp16, bf16; batch 64 and 256;
# first pass in a fresh process, warm median, forward-only bound, sentence-transformers at the
# same dtype) on the STSb set, with the bucketing x cuDNN-attention sweep, then on the STSb + MS
# MARCO set, and writes sbert_tutor/book/results/encode_gpu_<gpu>.json; its "criteria" list says which
# of the issue's checks pass. One set takes about 3-4 minutes on an H100; to stay under a 10-minute
# limit per command, run them apart: SETS=stsb bash ...; SETS=mixed MERGE=1 bash ...
# Settings: SETS (default "stsb mixed"), MERGE=1 (keep the sets already in the file), PYTHON,
# DEVICE (default cuda); further arguments go to encode.py (e.g. --n 200 --device cpu to try it).
set -euo pipefail
cd "$(dirname "$0")/.."
PY=${PYTHON:-python3}
DEVICE=${DEVICE:-cuda}
merge=${MERGE:-0}
first=1
for set in ${SETS:-stsb mixed}; do
  args=(--preset gpu --device "$DEVICE" --sets "$set" --json auto)
  if [ "$first" = 1 ]; then args+=(--diagnose); fi
  if [ "$first" = 0 ] || [ "$merge" = 1 ]; then args+=(--merge); fi
  echo "== $set: $PY benchmarks/encode.py ${args[*]} $*" >&2
  "$PY" benchmarks/encode.py "${args[@]}" "$@"
  first=0
done
