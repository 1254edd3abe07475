"""Device and mixed-precision selection for torch systems, written once for all of them.

torch is imported inside the functions: this module is safe to import from the CLI.
"""

from __future__ import annotations

import contextlib
from typing import Any

from core.errors import HarnessError

DEVICE_CHOICES = ("auto", "cpu", "cuda")


def resolve_device(device: str) -> str:
    """ "auto" is "cuda" where torch sees a GPU, else "cpu"; "cuda" without a GPU is an error."""
    import torch

    if device == "auto":
        return "cuda" if torch.cuda.is_available() else "cpu"
    if device.startswith("cuda") and not torch.cuda.is_available():
        raise HarnessError(f"device {device!r} asked for, but torch sees no CUDA GPU")
    if device != "cpu" and not device.startswith("cuda"):
        raise HarnessError(f"device must be auto, cpu or cuda[:N], not {device!r}")
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
