#!/usr/bin/env bash
# The forum style encoder's GPU benchmark in one call of a device machine (issue 27): unpack what
# benchmarks/gpu_bundle.py packed here into .gpu-bundle, run benchmarks/forum_style_encoder.py on it (--preset gpu,
# 1,200 steps; more arguments are passed on and override these) one seed at a time (SEEDS, default "0 1 2"), and
# leave in $OUT the eight files that come back: the log, summary.md, and each seed's pre-training manifest and run
# result (with --band-folds K, each fold encoder's manifest too). Each seed's files reach $OUT as soon as it is done,
# so a call stopped at its limit keeps the seeds before.
#   run tool: command "bash benchmarks/gpu_forum_run.sh", carry [".gpu-bundle"], timeout_s 600
#   a bundle packed with `--also cmcc` also takes `--transfer cmcc` (its table goes into summary.md)
#   band folds (an out-of-sample band, four pre-trainings a seed: one seed fits a call): command
#   "SEEDS=0 bash benchmarks/gpu_forum_run.sh --band-folds 3 --transfer cmcc"
set -euo pipefail
out=${OUT:?set OUT to the folder whose files come back}
work=${GPU_WORK:-/tmp/gpu-work}
bundle=${GPU_BUNDLE:-.gpu-bundle}
python=${PYTHON:-python3}  # the device's python3 holds PyTorch
read -r -a seeds <<<"${SEEDS:-0 1 2}"
export HF_HUB_OFFLINE=1 PYTHONUNBUFFERED=1
"$python" benchmarks/gpu_bundle.py unpack --bundle "$bundle" --out "$work" 2>&1 | tee "$out/log.txt"
benchmark() {  # forum_style_encoder.py keeps what exists, so the last call, over every seed, only writes the table
  "$python" benchmarks/forum_style_encoder.py --posts "$work/posts" --sets "$work/sets" --out "$work/out" \
    --model "$work/model" --preset gpu --steps 1200 "$@" 2>&1 | tee -a "$out/log.txt"
  cp "$work/out/summary.md" "$out/summary.md"
}
for seed in "${seeds[@]}"; do
  benchmark "$@" --seeds "$seed"
  cp "$work/out/encoder-seed$seed/style_pretraining.json" "$out/pretraining-seed$seed.json"
  for fold in "$work/out/encoder-seed$seed"/band-fold-*; do  # --band-folds K: each fold encoder's manifest too
    if [ -f "$fold/style_pretraining.json" ]; then cp "$fold/style_pretraining.json" "$out/pretraining-seed$seed-${fold##*/}.json"; fi
  done
  runs=("$work"/out/runs/pan23/forum-seed"$seed"/encoder_wccn*/seed-"$seed"/result.json)
  cp "${runs[-1]}" "$out/result-seed$seed.json"
done
benchmark "$@" --seeds "${seeds[@]}"
