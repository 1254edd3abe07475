"""The training schedule part and the presets of the SYSML family (`--param preset=paper`).

A preset is the base the system's parts start from: `--param preset=paper --param encoder.output_dim=64`
is the paper's setting with a larger z. What a run used is recorded part by part (the parts' fields
in `params`), the preset's name beside them.

- "cpu" (the default): SYSML's architecture shrunk to train on a shared 2-core CPU in minutes (the
  darkweb benchmark's budget, benchmarks/README.md): BPE 8,000, 48 tokens a post, 32 filters, text
  64 + time 16 + sub-forum 32, 2 transformer layers, z 32; 5 epochs of 64 at lr 0.002;
  metapath2vec with 1 walk per user and meta-path; no validation split.
- "paper": SYSML's single-market run as its scripts give it (`scripts/single_market.sh`, `run.py`,
  `custom_models.py`) and as NBC-Softmax reuses it ("the same network and hyperparameter
  settings", tau 0.2 single-task): BPE 30k, 256 tokens, 5 filters a window, text 128 + time 64 +
  sub-forum 128, 4 layers of 4 heads (ff 128, dropout 0.1), z 32; Adam lr 0.001, batches of 256,
  30 epochs; 10% validation, the epoch of lowest validation loss kept, ReduceLROnPlateau (factor
  0.5, patience 5, floor lr/32); metapath2vec with 200 walks of 80 steps, window 7 (SYSML's
  graph_embedding_code README), its sub-forum vectors frozen (SYSML's `from_pretrained`). Sized for
  a GPU.
- "paper_multitask": the same for SYSML's multitask run (`scripts/multi_market.sh`): z 128, and
  NBC-Softmax's tau 0.3 ("tau = 0.2 for singletask and tau = 0.3 for the multi-task").
- "full": the parts' own defaults, the system's defaults before presets: SYSML's sizes and schedule
  (30 epochs of 256 at lr 0.001) without its validation split, metapath2vec at 3 walks of twice a
  meta-path's length. Checkpoints and result files written before presets were built on it.

A paper preset names the task kind it is for; fitting it on the other kind is refused (the paper's
z and tau differ between the two).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import ClassVar

from systems.nbcsauthor.graph import Metapath2Vec
from systems.nbcsauthor.model import EpisodeEncoderConfig


@dataclass(frozen=True)
class SysmlTraining:
    """Adam over batches of episodes (SYSML: 30 epochs, batches of 256, lr 1e-3); `cross_sampling`:
    multitask CROSS episodes per epoch, as a share of all episodes (SYSML: 0.2).

    validation_share: share of the training episodes held out by author-episodes
        (systems.nbcsauthor.validation; SYSML: 0.1); 0 trains on all of them, with no validation.
    restore_best: with validation, keep the epoch of the lowest validation loss (SYSML) instead of
        the last.
    lr_patience: with validation, ReduceLROnPlateau on the validation loss: the learning rate is
        multiplied by `lr_factor` after `lr_patience` epochs without improvement, down to
        lr * lr_factor^5 (SYSML: 5, 0.5); None keeps the rate fixed.
    """

    name: ClassVar[str] = "training"
    epochs: int = 30
    batch_size: int = 256
    lr: float = 0.001
    cross_sampling: float = 0.2
    validation_share: float = 0.0
    restore_best: bool = True
    lr_patience: int | None = None
    lr_factor: float = 0.5

    def __post_init__(self) -> None:
        if self.epochs < 0:
            raise ValueError(f"epochs must be at least 0, got {self.epochs!r}")
        if self.batch_size < 2:
            raise ValueError(f"batch_size must be at least 2, got {self.batch_size!r}")
        if not 0 < self.lr < math.inf:  # 0 learnt nothing, a negative one failed in torch after fitting began
            raise ValueError(f"lr must be positive and finite, got {self.lr!r}")
        if not 0.0 <= self.validation_share < 0.5:
            raise ValueError(f"validation_share must lie in [0, 0.5), got {self.validation_share!r}")
        if self.lr_patience is not None:
            if self.lr_patience < 0:
                raise ValueError(f"lr_patience must be at least 0 or None, got {self.lr_patience!r}")
            if self.validation_share == 0:
                raise ValueError("lr_patience needs a validation loss: set validation_share above 0")
        if not 0.0 < self.lr_factor < 1.0:
            raise ValueError(f"lr_factor must lie in (0, 1), got {self.lr_factor!r}")

    @property
    def min_lr(self) -> float:
        """ReduceLROnPlateau's floor: five reductions (SYSML: lr * 0.5^5)."""
        return self.lr * self.lr_factor**5


@dataclass(frozen=True)
class SysmlPreset:
    """The base parts of one preset; `tau` is NBC-Softmax's temperature; `multitask` the task kind
    it is for (None: either)."""

    name: str
    encoder: EpisodeEncoderConfig
    training: SysmlTraining
    graph_init: Metapath2Vec
    tau: float
    multitask: bool | None


_PAPER_TRAINING = SysmlTraining(
    epochs=30, batch_size=256, lr=0.001, validation_share=0.1, restore_best=True, lr_patience=5
)
_PAPER_GRAPH = Metapath2Vec(epochs=1, walks_per_node=200, walk_length=80, context_size=7, freeze=True)

PRESETS = {
    "cpu": SysmlPreset(
        "cpu",
        EpisodeEncoderConfig(
            vocab_size=8000,
            max_tokens=48,
            filters=32,
            text_dim=64,
            time_dim=16,
            context_dim=32,
            output_dim=32,
            layers=2,
            heads=4,
            ff_dim=128,
        ),
        SysmlTraining(epochs=5, batch_size=64, lr=0.002),
        Metapath2Vec(walks_per_node=1),
        tau=0.2,
        multitask=None,
    ),
    "full": SysmlPreset("full", EpisodeEncoderConfig(), SysmlTraining(), Metapath2Vec(), tau=0.2, multitask=None),
    "paper": SysmlPreset("paper", EpisodeEncoderConfig(), _PAPER_TRAINING, _PAPER_GRAPH, tau=0.2, multitask=False),
    "paper_multitask": SysmlPreset(
        "paper_multitask", EpisodeEncoderConfig(output_dim=128), _PAPER_TRAINING, _PAPER_GRAPH, tau=0.3, multitask=True
    ),
}
