#!/usr/bin/env bash
# The GPU run of the "Training a retriever" chapter, in one command (about 5 minutes on an H200):
#   memory    benchmarks/cached_mnrl_memory.py --device cuda: one step's GPU memory, mnrl vs
#             cached_mnrl, batch 32..512  -> sbert_tutor/book/results/cached_mnrl_memory_gpu_<gpu>.json
#   baselines benchmarks/bm25_baselines.py with the dense and hybrid rows (dense on the GPU)
#             -> sbert_tutor/book/results/bm25_baselines_gpu_<gpu>.json
#   study     benchmarks/retriever_study.py --profile t4 (teacher, mining, 4 variants x 3 seeds)
#             -> sbert_tutor/book/results/retriever_study_t4_<gpu>.json
# Here: bash ../shared/gpu/pack.sh with PACK_WHEELS="bm25s PyStemmer" (builds .gpu/). There, in
# the project root: bash benchmarks/gpu_retriever.sh [stage ...]. Results are copied to $OUT.
set -uo pipefail
cd "$(dirname "$0")/.."
[ -f .gpu/setup.sh ] && [ -z "${SBERT_TUTOR_DATA:-}" ] && source .gpu/setup.sh
export HF_HUB_OFFLINE=1 PYTHONUNBUFFERED=1
PY=${PYTHON:-python3}
OUTDIR=${OUT:-/tmp/gpu_retriever}; mkdir -p "$OUTDIR"
gpu=$($PY -c 'import re,torch; n=torch.cuda.get_device_name().lower(); m=re.search(r"\b(h200|h100|a100|l4|t4)\b", n); print(m.group(1) if m else re.sub(r"[^a-z0-9]+","_",n))')
stages=("$@"); [ ${#stages[@]} -eq 0 ] && stages=(memory baselines study)
status=0
for stage in "${stages[@]}"; do
  echo "== $stage" >&2; t=$SECONDS
  case $stage in
    memory) $PY benchmarks/cached_mnrl_memory.py --device cuda --batch-size 32,64,128,256,512 \
              --mini-batch-size 32 --json "sbert_tutor/book/results/cached_mnrl_memory_gpu_$gpu.json" ;;
    baselines) $PY benchmarks/bm25_baselines.py --device cuda --threads 16 \
              --json "sbert_tutor/book/results/bm25_baselines_gpu_$gpu.json" ;;
    study) $PY benchmarks/retriever_study.py --profile t4 --device cuda --json auto ;;
    *) echo "unknown stage $stage" >&2; false ;;
  esac
  rc=$?; echo "== $stage: rc=$rc in $((SECONDS - t)) s" >&2; [ $rc -eq 0 ] || status=1
  cp sbert_tutor/book/results/*gpu*.json sbert_tutor/book/results/retriever_study_*.json "$OUTDIR/" 2>/dev/null
done
exit $status
