#!/usr/bin/env bash
# A paper report over five real corpora (issue 29): cngdist, tfidf, pair_features (seeds 0-2) and wccn (seed 0) on
# PAN13, PAN14 essays and novels (PAN's own splits), fold 1 of the PAN15 5-fold CV (verification_pan.py's folds)
# and a CMCC cross-genre set (`harness pairs --from folders`, seed 0); then `harness report` over all of them.
#
#   bash benchmarks/paper_report.sh WORK_DIR      # about 27 minutes on 2 busy cores; the report is WORK_DIR/report
set -eu
WORK=$(realpath -m "${1:?usage: paper_report.sh WORK_DIR}")
DATA=${HARNESS_SHARED_DATA:-$(cd "$(dirname "$0")/../.." && pwd)/shared/data}
cd "$(dirname "$0")/.."
export HF_HUB_OFFLINE=1 PYTHONPATH=$PWD
H="python -m harness.cli"
RAW=$WORK/raw OUT=$WORK/runs
if [ ! -d "$RAW" ]; then
  mkdir -p "$RAW/cmcc"
  for name in pan13-15-av-en pan13-av-en; do mkdir -p "$RAW/$name" && tar -xzf "$DATA/$name.tar.gz" -C "$RAW/$name"; done
  tar -xzf "$DATA/cmcc-cross-genre.tar.gz" -C "$RAW/cmcc"
fi
find_one() { find "$RAW" -type d -path "$1" -print -quit; }
ES_TR=$(find_one "*train/pan14-*training-corpus-english-essays*"); ES_TE=$(find_one "*test/pan14-*test-corpus2-english-essays*")
NO_TR=$(find_one "*train/pan14-*training-corpus-english-novels*"); NO_TE=$(find_one "*test/pan14-*test-corpus2-english-novels*")
[ -d "$WORK/sets/cmcc-seed0" ] || $H pairs --from folders "$RAW/cmcc/cmcc" "$WORK/sets/cmcc-seed0" --pairs 400 --text-uses 4 \
  --encoding cp1252 --pattern '(?P<discourse_type>[^/]+)/S(?P<author>\d+)[A-Z]\d(?P<topic>[A-Z])\d\.txt' --seed 0
[ -d "$WORK/sets/pan15-fold1" ] || python - "$RAW" "$WORK" <<'PY'
import shutil, sys
from pathlib import Path
from benchmarks.verification_pan import prepare
raw, work = Path(sys.argv[1]), Path(sys.argv[2])
shutil.move(str(prepare("pan15", raw, work / "folds", 5, 0)[0]), work / "sets" / "pan15-fold1")
shutil.move(str(prepare("pan13", raw, work / "folds", 5, 0)[0]), work / "sets" / "pan13")
PY
one() {  # task dataset system seed, then the run's data options; a run already there is kept
  local task=$1 dataset=$2 system=$3 seed=$4; shift 4
  [ -f "$OUT/$task/$dataset/$system/seed-$seed/result.json" ] && return 0
  $H run --system "$system" --task "$task" "$@" --seed "$seed" --out "$OUT" >/dev/null
  echo "$system on $dataset, seed $seed: done $(date +%T)"
}
for seed in 0 1 2; do for system in cngdist tfidf pair_features wccn; do
  [ "$system" = wccn ] && [ "$seed" != 0 ] && continue  # one seed: its only randomness is the SVD's (CPU time)
  one pan-classic pan14-english-essays $system $seed --train "$ES_TR" --test "$ES_TE"
  one pan-classic pan14-english-novels $system $seed --train "$NO_TR" --test "$NO_TE"
  one pan-classic pan15-fold1 $system $seed --data "$WORK/sets/pan15-fold1"
  one pan-classic pan13 $system $seed --data "$WORK/sets/pan13"
  one pan23 cmcc-seed0 $system $seed --data "$WORK/sets/cmcc-seed0"
done; done
$H report --results "$OUT" --out "$WORK/report"
