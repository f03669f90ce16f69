#!/usr/bin/env bash
# The whole GPU run of issue 15, in one command: encode and train-step benchmarks, the GPU tests.
#
#   here (a checkout with ../shared/data):  bash ../shared/gpu/pack.sh     # builds .gpu/ (offline bundle)
#   on the GPU machine, in the project root: bash benchmarks/gpu_run.sh
#
# It sources .gpu/setup.sh when the bundle is there (wheels, model, data, offline settings) and
# runs these stages, in order (name some to run only those, e.g. to stay under a time limit per
# command: `bash benchmarks/gpu_run.sh encode-stsb`, then `... encode-mixed`, `... train`, `... tests`):
#
#   encode-stsb   benchmarks/encode.py --preset gpu on 10,000 STSb sentences, with the bucketing
#                 x cuDNN sweep (fp32/fp16/bf16, batch 64 and 256, first pass in a fresh process,
#                 warm median, forward-only bound, sentence-transformers at the same dtype)
#   encode-mixed  the same on STSb + MS MARCO passages (merged into the same file)
#                 -> sbert_tutor/book/results/encode_gpu_<gpu>.json   ("criteria": issue 15's checks)
#   train         benchmarks/train_step.py: one STSb epoch (cosine loss) in fp32/bf16/fp16/auto,
#                 all-MiniLM-L6-v2 and a random-weight BERT-base, batch 16 and 64, STSb test score
#                 -> sbert_tutor/book/results/train_step_gpu_cosine_<gpu>.json
#   tests         the GPU tests (tests/test_cuda.py) and the tests of the paths they exercise
#   chapters      every chapter as a script (.gpu/run_chapters.sh), quick profile
#   chapters-t4   every chapter in the t4 profile, one at a time, timed, with its peak GPU memory
#                 (benchmarks/chapter_times.py run; nreimers/MiniLM-L6-H384-uncased served by the
#                 bundle's all-MiniLM-L6-v2, the same architecture: time and memory only)
#                 -> sbert_tutor/book/results/chapter_times_gpu_<gpu>.json (the appendix's time table)
#
# About 3-4 minutes per encode stage, 5-8 for train, 2-3 for tests on an H100. Results land in
# sbert_tutor/book/results/ (commit them) and logs in ${OUT:-/tmp/gpu_run}; with $OUT set (a machine
# that sends a folder back), the results are copied there too.
set -uo pipefail
cd "$(dirname "$0")/.."
if [ -f .gpu/setup.sh ] && [ -z "${SBERT_TUTOR_DATA:-}" ]; then
  # shellcheck disable=SC1091
  source .gpu/setup.sh
fi
export HF_HUB_OFFLINE=1 PYTHONUNBUFFERED=1
PY=${PYTHON:-python3}
LOGS=${OUT:-/tmp/gpu_run}
mkdir -p "$LOGS" sbert_tutor/book/results
stages=("$@")
[ ${#stages[@]} -eq 0 ] && stages=(encode-stsb encode-mixed train tests)
status=0
run() {  # name, command...
  local name=$1; shift
  echo "== $name: $*" >&2
  local start=$SECONDS
  "$@" > >(tee "$LOGS/$name.log") 2> >(tee "$LOGS/$name.err" >&2)
  local rc=$?
  echo "== $name: rc=$rc in $((SECONDS - start)) s" >&2
  [ $rc -eq 0 ] || status=1
}
for stage in "${stages[@]}"; do
  case $stage in
    encode-stsb) run "$stage" env SETS=stsb PYTHON="$PY" bash benchmarks/gpu_encode.sh ;;
    encode-mixed) run "$stage" env SETS=mixed MERGE=1 PYTHON="$PY" bash benchmarks/gpu_encode.sh ;;
    train)
      run "$stage" "$PY" benchmarks/train_step.py --device cuda --loss cosine \
        --amp none,bf16,fp16,auto --batch-size 16,64 --model minilm,bert-base-random \
        --no-st --eval --json auto ;;
    tests)
      run "$stage" "$PY" -m pytest -q -p no:cacheprovider tests/test_cuda.py \
        tests/test_encode_gpu_paths.py tests/test_training_precision.py \
        tests/test_device_safety.py tests/test_distributed.py ;;
    chapters) run "$stage" bash .gpu/run_chapters.sh ;;
    chapters-t4)
      run "$stage" "$PY" benchmarks/chapter_times.py run --profile t4 --out auto --allow-incomplete \
        --stand-in "nreimers/MiniLM-L6-H384-uncased=${SBERT_TUTOR_MODELS:-/tmp/models}/sentence-transformers/all-MiniLM-L6-v2" ;;
    *) echo "unknown stage $stage (encode-stsb, encode-mixed, train, tests, chapters, chapters-t4)" >&2; exit 2 ;;
  esac
done
if [ -n "${OUT:-}" ]; then cp sbert_tutor/book/results/*gpu*.json "$OUT"/ 2>/dev/null || true; fi
ls -l sbert_tutor/book/results/ >&2
exit $status
