#!/bin/sh
# TIRA entry point of the submission image: answer the problems in $inputDataset and write
# $outputDir/answers.jsonl with the system and checkpoint baked into the image (see tira/README.md).
# Extra arguments go to `harness predict` (e.g. --overwrite).
set -eu
: "${inputDataset:?set inputDataset to the folder holding pairs.jsonl (TIRA sets it)}"
: "${outputDir:?set outputDir to the folder for answers.jsonl (TIRA sets it)}"
exec harness predict --system "${HARNESS_SYSTEM:-cngdist}" --task "${HARNESS_TASK:-pan23}" \
    --input "$inputDataset" --output "$outputDir" --checkpoint "${HARNESS_CHECKPOINT:-/opt/harness/checkpoint}" "$@"
