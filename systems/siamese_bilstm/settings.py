"""The training schedule and the abstain-band calibration of `siamese_bilstm`, as parts.

Each is a frozen dataclass checked when made, so a bad value is refused before any feature is computed.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import ClassVar

from harness.params import coerce
from toolkit.calibration import band_grid, check_objective


@dataclass(frozen=True)
class SiameseTraining:
    """How each head is trained: Adam's learning rate, passes, chunks per batch (paper: 0.002, 5, 32).

    batch_size: chunks per batch, as the paper counts them: two chunks (from two different texts)
        of each of batch_size / 2 distinct authors, so the paper's 32 is 16 authors x 2. Even, >= 4.
    steps_per_epoch: batches per epoch; None draws as many chunks per epoch as the pool holds.
    """

    name: ClassVar[str] = "adam"
    epochs: int = 5
    batch_size: int = 32
    lr: float = 0.002
    steps_per_epoch: int | None = None

    def __post_init__(self) -> None:
        coerce(self, "epochs", int)
        coerce(self, "batch_size", int)
        coerce(self, "lr", float)
        for label, least in (("epochs", 1), ("batch_size", 4)):
            if getattr(self, label) < least:
                raise ValueError(f"{label} must be at least {least}, got {getattr(self, label)!r}")
        if not 0 < self.lr < math.inf:  # audit 22, F4: torch's "Invalid learning rate" traceback after the data
            raise ValueError(f"lr must be positive and finite, got {self.lr!r}")
        if self.batch_size % 2:
            raise ValueError(f"batch_size counts chunks, two per author: it must be even, got {self.batch_size!r}")
        if self.steps_per_epoch is not None:
            coerce(self, "steps_per_epoch", int)
            if self.steps_per_epoch < 1:
                raise ValueError(f"steps_per_epoch must be at least 1 or None, got {self.steps_per_epoch!r}")

    def steps(self, chunks: int, authors: int) -> int:
        """Batches per epoch for a pool of `chunks` chunks by `authors` eligible authors.

        A batch holds two chunks of each of its min(batch_size / 2, authors) authors.
        """
        per_batch = 2 * min(self.batch_size // 2, authors)
        return self.steps_per_epoch or max(1, math.ceil(chunks / per_batch))


@dataclass(frozen=True)
class Calibration:
    """How the abstain bands are fitted.

    validation_share: share of authors held out to fit the bands on (0: fit on training problems).
    objective: the measure the bands maximise ("overall", "auc_x_c_at_1", ...; "task": the one the training
        split's task ranks by).
    grid_step: grid step of the band search (0.01: 4,950 bands per model; at least 0.002).
    balance_classes: weigh same- and different-author problems alike when fitting the bands
        (`toolkit.calibration.class_balanced`). The validation problems are those whose authors are all held out,
        so few are different-author (both authors held out: about share^2 of them against share of the same-author
        ones; CMCC seed 0: 33 same, 8 different); a band fitted on them answered "same" to every test problem.
    """

    name: ClassVar[str] = "abstain_band"
    validation_share: float = 0.15
    objective: str = "overall"
    grid_step: float = 0.01
    balance_classes: bool = True

    def __post_init__(self) -> None:
        coerce(self, "validation_share", float)
        coerce(self, "grid_step", float)
        if not 0.0 <= self.validation_share < 1.0:
            raise ValueError(f"validation_share must be in [0, 1), got {self.validation_share!r}")
        try:
            band_grid(self.grid_step)
        except ValueError as exc:
            raise ValueError(f"grid_step: {exc}") from None
        check_objective(self.objective)  # an unknown objective raises a ValueError that names it
