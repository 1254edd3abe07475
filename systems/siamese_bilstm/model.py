"""The Bi-LSTM head: a text chunk's sequence of per-layer [CLS] vectors in, one embedding out.

The paper's model runs a Bi-LSTM over the [CLS] embeddings of encoder layers 2..12 and takes as the
chunk's embedding the concatenation of the last hidden states of both directions. Both sides of
a pair go through this one module: the Siamese towers share every weight by construction.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

import torch
from torch import nn

from harness.params import coerce


@dataclass(frozen=True)
class BiLSTMHeadConfig:
    """The head as a part of `SiameseBiLSTM`: the Bi-LSTM's hidden size per direction (embeddings: twice that)."""

    name: ClassVar[str] = "bilstm"
    hidden_size: int = 256

    def __post_init__(self) -> None:
        coerce(self, "hidden_size", int)
        if self.hidden_size < 1:
            raise ValueError(f"hidden_size must be at least 1, got {self.hidden_size!r}")

    def build(self, input_size: int) -> BiLSTMHead:
        """A new head over `input_size`-wide per-layer vectors (its weights drawn from torch's generator)."""
        return BiLSTMHead(input_size, self.hidden_size)


class BiLSTMHead(nn.Module):
    """`(batch, layers, input_size)` -> `(batch, 2 * hidden_size)`."""

    def __init__(self, input_size: int, hidden_size: int) -> None:
        super().__init__()
        self.input_size = input_size
        self.hidden_size = hidden_size
        self.lstm = nn.LSTM(input_size, hidden_size, num_layers=1, batch_first=True, bidirectional=True)

    def forward(self, layers: torch.Tensor) -> torch.Tensor:
        _, (last, _) = self.lstm(layers)
        # last: (directions, batch, hidden); [0] read the layers upwards, [1] downwards
        return torch.cat([last[0], last[1]], dim=-1)


def cosine_matrix(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    """Cosine similarity of every row of `a` with every row of `b`: `(len(a), len(b))`."""
    a = nn.functional.normalize(a.float(), dim=-1)
    b = nn.functional.normalize(b.float(), dim=-1)
    return a @ b.T
