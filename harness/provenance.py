"""Where a number came from: harness version, git commit, libraries, machine."""

from __future__ import annotations

import os
import platform
import subprocess
import sys
from importlib import metadata
from pathlib import Path
from typing import Any

import harness

# Libraries whose versions can move a score; recorded when installed.
TRACKED_LIBRARIES = ("numpy", "scipy", "scikit-learn", "pyppmd", "torch", "transformers", "tokenizers")


def git_commit() -> dict[str, Any]:
    """The commit of the harness source tree and whether it had uncommitted changes."""
    root = Path(harness.__file__).resolve().parent.parent
    try:
        commit = subprocess.run(
            ["git", "rev-parse", "HEAD"], cwd=root, capture_output=True, text=True, timeout=10, check=True
        ).stdout.strip()
        dirty = bool(
            subprocess.run(
                ["git", "status", "--porcelain", "--untracked-files=no"],
                cwd=root,
                capture_output=True,
                text=True,
                timeout=10,
                check=True,
            ).stdout.strip()
        )
    except (OSError, subprocess.SubprocessError):
        return {"commit": None, "dirty": None}  # installed from a wheel, or no git: say so, don't guess
    return {"commit": commit, "dirty": dirty}


def library_versions() -> dict[str, str]:
    versions = {}
    for name in TRACKED_LIBRARIES:
        try:
            versions[name] = metadata.version(name)
        except metadata.PackageNotFoundError:
            continue
    return versions


# the devices systems resolved since the run began (`toolkit.devices.resolve_device` notes each): what a result
# records, not what the machine has (audit 22, F3: a GPU machine's name stood in runs made with device=cpu)
_devices_used: set[str] = set()


def note_device(device: str) -> None:
    """A system computes on `device` ("cpu", "cuda", "cuda:1")."""
    _devices_used.add(device)


def forget_devices() -> None:
    """A new run begins: the devices of the one before are not its own."""
    _devices_used.clear()


def device_description() -> str:
    """The device the run computed on: a CUDA GPU's name where a system resolved one, else the CPU's (a system
    that resolves no device, as scikit-learn's, computes on the CPU)."""
    torch = sys.modules.get("torch")
    gpus = sorted(device for device in _devices_used if device.startswith("cuda"))
    if torch is not None and gpus and torch.cuda.is_available():
        index = int(gpus[0].partition(":")[2] or torch.cuda.current_device())
        return f"cuda:{torch.cuda.get_device_name(index)}"
    return f"cpu:{platform.processor() or platform.machine()}"


# The TIRA image lists every package it installed (pip freeze) in the file this variable names.
IMAGE_PACKAGES_VARIABLE = "HARNESS_IMAGE_PACKAGES"


def image_packages() -> list[str] | None:
    """The packages of the image this runs in (its pip freeze), or None outside such an image."""
    path = os.environ.get(IMAGE_PACKAGES_VARIABLE)
    if not path or not os.path.isfile(path):
        return None
    with open(path, encoding="utf-8") as handle:
        return [line.strip() for line in handle if line.strip() and not line.startswith("#")]


def environment() -> dict[str, Any]:
    record = {
        "harness_version": harness.__version__,
        "git": git_commit(),
        "python": platform.python_version(),
        "platform": platform.platform(),
        "libraries": library_versions(),
        "device": device_description(),
    }
    packages = image_packages()
    if packages is not None:
        record["image_packages"] = packages
    return record
