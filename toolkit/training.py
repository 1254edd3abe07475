"""One training loop for every torch system: epochs of batches, loss scaling for float16, gradient
clipping, the mean loss over processes under torchrun, progress (epoch, step, running loss, batches/s)
and per-epoch records.

What differs between systems stays with them, as two callables: which batches an epoch has (and
this process's share of them under torchrun), and the loss of one batch (the forward pass, under
`toolkit.devices.autocast` where the system wants mixed precision). The loop owns the rest, so
AMP and DDP behave the same in every system.

torch is imported inside the function: this module is safe to import from the CLI.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Iterable
from typing import Any, TypeVar

from core.progress import Progress
from toolkit.devices import grad_scaler
from toolkit.distributed import DistributedContext, all_reduce_mean

logger = logging.getLogger("harness")

Batch = TypeVar("Batch")


def check_metric_batches(
    authors_per_batch: int, samples_per_author: int, epochs: int, steps_per_epoch: int | None
) -> None:
    """The batch and schedule fields a metric-learning Training part shares; ValueError names the bad one."""
    if authors_per_batch < 2:
        raise ValueError(f"authors_per_batch must be at least 2 (metric learning), got {authors_per_batch}")
    if samples_per_author < 2:
        raise ValueError(f"samples_per_author must be at least 2 (metric learning), got {samples_per_author}")
    if epochs < 0:
        raise ValueError(f"epochs must be >= 0, got {epochs}")
    if steps_per_epoch is not None and steps_per_epoch < 1:
        raise ValueError(f"steps_per_epoch must be positive or None, got {steps_per_epoch}")


def train_epochs(
    *,
    network: Any,
    optimizer: Any,
    epochs: int,
    epoch_batches: Callable[[int], Iterable[Batch]],
    batch_loss: Callable[[Batch], Any],
    device: str,
    mixed_precision: bool,
    label: str,
    context: DistributedContext | None = None,
    grad_clip: float | None = None,
    after_step: Callable[[Batch], None] | None = None,
) -> list[dict[str, float]]:
    """Train `network` for `epochs`; one record per epoch: mean loss, seconds, batches; `grad_clip`, where given,
    must be positive (clip_grad_norm_ with a negative norm turns every step uphill).

    `epoch_batches(epoch)` gives the batches this process trains on in that epoch (called once
    per epoch, before its first step, so a system's batch planning consumes its random numbers in
    a fixed order); `batch_loss(batch)` returns the loss tensor of one batch. `after_step(batch)`
    runs after each optimiser step (counters, freeing memory). The mean loss is averaged over
    the processes of a torchrun launch.
    """
    import torch

    if grad_clip is not None and not grad_clip > 0:
        raise ValueError(f"grad_clip must be positive or None, got {grad_clip!r}")
    scaler = grad_scaler(device, mixed_precision)
    history: list[dict[str, float]] = []
    for epoch in range(epochs):
        network.train()
        started = time.perf_counter()
        batches = epoch_batches(epoch)
        total, steps = 0.0, 0
        size = len(batches) if hasattr(batches, "__len__") else None
        # the counts show the step; the epoch's own summary line below replaces the progress's last line
        with Progress(
            size,
            desc=f"{label} epoch {epoch + 1}/{epochs}",
            unit="batches",
            end_line=False,
            disable=context is not None and not context.is_main,
        ) as progress:
            for batch in batches:
                optimizer.zero_grad(set_to_none=True)
                loss = batch_loss(batch)
                scaler.scale(loss).backward()
                if grad_clip is not None:
                    scaler.unscale_(optimizer)  # clip the true gradients, not the scaled ones
                    torch.nn.utils.clip_grad_norm_(network.parameters(), grad_clip)
                scaler.step(optimizer)
                scaler.update()
                total += float(loss.detach())
                steps += 1
                progress.set_postfix(loss=total / steps)  # this process's running mean over the epoch
                progress.update()
                if after_step is not None:
                    after_step(batch)
        mean = total / max(steps, 1)
        if context is not None:
            mean = all_reduce_mean(mean, context)
        seconds = time.perf_counter() - started
        history.append({"loss": round(mean, 6), "seconds": round(seconds, 3), "batches": steps})
        logger.info(
            "%s epoch %d/%d: mean loss %.4f, %d batches, %.1fs (%.2f batches/s)",
            label,
            epoch + 1,
            epochs,
            mean,
            steps,
            seconds,
            steps / max(seconds, 1e-9),
        )
    return history
