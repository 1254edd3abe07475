"""Checkpoints: a folder with `config.json` (names, parameters, small state) and
`weights.safetensors` (arrays). No pickle anywhere, so a checkpoint from a stranger is safe to load."""

from __future__ import annotations

import json
import os
import shutil
import tempfile
from pathlib import Path
from typing import Any

import numpy as np

from harness.errors import HarnessError

CONFIG_NAME = "config.json"
WEIGHTS_NAME = "weights.safetensors"
CHECKPOINT_FORMAT = 1


def save_checkpoint(
    directory: Path,
    *,
    system: str,
    params: dict[str, Any],
    state: dict[str, Any],
    arrays: dict[str, np.ndarray] | None = None,
) -> None:
    """Write a checkpoint folder atomically: built beside the target, then renamed into place."""
    from safetensors.numpy import save_file

    directory = Path(directory)
    directory.parent.mkdir(parents=True, exist_ok=True)
    staging = Path(tempfile.mkdtemp(prefix=f".{directory.name}.", dir=directory.parent))
    # mkdtemp makes the folder private (0700); give it the permissions a plain mkdir would
    umask = os.umask(0)
    os.umask(umask)
    os.chmod(staging, 0o777 & ~umask)
    try:
        config = {"format": CHECKPOINT_FORMAT, "system": system, "params": params, "state": state}
        (staging / CONFIG_NAME).write_text(json.dumps(config, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")
        if arrays:
            save_file({k: np.ascontiguousarray(v) for k, v in arrays.items()}, str(staging / WEIGHTS_NAME))
        for written in staging.iterdir():  # safetensors writes its file private (0600) too
            os.chmod(written, 0o666 & ~umask)
        if directory.exists():
            shutil.rmtree(directory)
        os.replace(staging, directory)
    except BaseException:
        shutil.rmtree(staging, ignore_errors=True)
        raise


def load_checkpoint(directory: Path, *, system: str) -> tuple[dict[str, Any], dict[str, Any], dict[str, np.ndarray]]:
    """Read (params, state, arrays) from a checkpoint folder written for `system`."""
    from safetensors.numpy import load_file

    directory = Path(directory)
    config_path = directory / CONFIG_NAME
    if not config_path.is_file():
        raise HarnessError(f"{directory}: not a checkpoint folder (no {CONFIG_NAME})")
    config = json.loads(config_path.read_text(encoding="utf-8"))
    if config.get("system") != system:
        raise HarnessError(f"{config_path}: checkpoint is for system {config.get('system')!r}, not {system!r}")
    if config.get("format") != CHECKPOINT_FORMAT:
        raise HarnessError(f"{config_path}: unsupported checkpoint format {config.get('format')!r}")
    weights_path = directory / WEIGHTS_NAME
    arrays = load_file(str(weights_path)) if weights_path.is_file() else {}
    return config["params"], config["state"], arrays
