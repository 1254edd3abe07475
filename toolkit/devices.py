"""Device and mixed-precision selection for torch systems, written once for all of them.

torch is imported inside the functions: this module is safe to import from the CLI.
"""

from __future__ import annotations

import contextlib
import logging
from typing import Any

from core.errors import HarnessError
from harness.provenance import note_device

DEVICE_CHOICES = ("auto", "cpu", "cuda")
logger = logging.getLogger("harness")


def resolve_device(device: str) -> str:
    """ "auto" is "cuda" where torch sees a GPU, else "cpu"; "cuda" without a GPU is an error. The device is noted
    for the run's result (`harness.provenance.device_description`)."""
    import torch

    if device == "auto":
        device = "cuda" if torch.cuda.is_available() else "cpu"
    if device.startswith("cuda") and not torch.cuda.is_available():
        raise HarnessError(f"device {device!r} asked for, but torch sees no CUDA GPU")
    if device != "cpu" and not device.startswith("cuda"):
        raise HarnessError(f"device must be auto, cpu or cuda[:N], not {device!r}")
    note_device(device)
    return device


def autocast(device: str, enabled: bool) -> contextlib.AbstractContextManager[Any]:
    """Mixed precision on CUDA (bfloat16 where supported, else float16); nothing on CPU."""
    import torch

    if not enabled or not device.startswith("cuda"):
        return contextlib.nullcontext()
    dtype = torch.bfloat16 if torch.cuda.is_bf16_supported() else torch.float16
    return torch.autocast("cuda", dtype=dtype)


def grad_scaler(device: str, enabled: bool) -> Any:
    """A loss scaler where float16 autocast needs one (CUDA without bfloat16); a no-op otherwise."""
    import torch

    use = enabled and device.startswith("cuda") and not torch.cuda.is_bf16_supported()
    return torch.amp.GradScaler("cuda", enabled=use)


def warn_if_gpu_sized(what: str, preset: str, device: str) -> None:
    """Say, before training starts, that a preset sized for a GPU is about to train on a CPU: it works, but where the
    "cpu" preset takes minutes it can take many hours (the style encoder's "gpu" preset: about a minute a step on 2
    cores, 13 hours for its 800 steps; benchmarks/README.md)."""
    if device == "cpu" and preset != "cpu":
        logger.warning(
            "%s: preset %r is sized for a GPU and will train on the CPU: expect hours where the 'cpu' preset takes "
            "minutes (no GPU is visible to torch, or the device asked for is the CPU)",
            what,
            preset,
        )
