"""The network of `char_lm`: a shared character-level recurrent layer and one softmax head per author.

torch is imported at module level: only `systems.char_lm.system` imports this module, when fitting
or loading, never the CLI.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import torch
from torch import nn

from toolkit.devices import autocast


class MultiHeadCharRnn(nn.Module):
    """Embedding -> recurrent layer(s) shared by all authors -> per-author output heads (H x V each)."""

    def __init__(self, *, vocab: int, embedding: int, hidden: int, layers: int, cell: str, heads: int) -> None:
        super().__init__()
        self.embed = nn.Embedding(vocab, embedding)
        kinds = {"gru": nn.GRU, "lstm": nn.LSTM, "rnn": nn.RNN}
        self.rnn = kinds[cell](embedding, hidden, num_layers=layers, batch_first=True)
        self.head_weight = nn.Parameter(torch.randn(heads, hidden, vocab) * hidden**-0.5)
        self.head_bias = nn.Parameter(torch.zeros(heads, vocab))

    def hidden_states(self, symbols: torch.Tensor) -> torch.Tensor:
        """(B, T) symbol indices -> (B, T, H) recurrent states (state t has read symbols 0..t)."""
        out, _ = self.rnn(self.embed(symbols))
        return out

    def loss(self, symbols: torch.Tensor, heads: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
        """Mean next-symbol cross-entropy of (B, T+1) chunks, chunk b under head `heads[b]` only,
        over the (B, T) targets where `mask` is 1 (a chunk shorter than T is padded)."""
        states = self.hidden_states(symbols[:, :-1])
        logits = torch.bmm(states, self.head_weight[heads]) + self.head_bias[heads][:, None, :]
        nll = nn.functional.cross_entropy(logits.float().transpose(1, 2), symbols[:, 1:], reduction="none")
        return (nll * mask).sum() / mask.sum().clamp(min=1.0)


def text_states(
    network: MultiHeadCharRnn,
    texts: Sequence[np.ndarray],
    *,
    window: int,
    warmup: int,
    batch: int,
    device: str,
    mixed_precision: bool,
) -> list[tuple[np.ndarray, np.ndarray]]:
    """Per text, (states (N, H) float32, targets (N,)): the state before each symbol after the first.

    Texts are cut into windows of `window` scored symbols, each read after the `warmup` symbols before
    it (recurrent state is not carried between windows, so windows batch; the warm-up gives each
    window context). Deterministic: no randomness, evaluation mode.
    """
    pieces: list[tuple[int, int, int]] = []  # (text, start of scored part, end)
    for t, symbols in enumerate(texts):
        for start in range(1, len(symbols), window):
            pieces.append((t, start, min(start + window, len(symbols))))
    states_of: list[list[np.ndarray]] = [[] for _ in texts]
    network.eval()
    with torch.no_grad():
        for first in range(0, len(pieces), batch):
            group = pieces[first : first + batch]
            length = warmup + window
            rows = np.zeros((len(group), length), dtype=np.int64)
            spans = []
            for r, (t, start, end) in enumerate(group):
                begin = max(0, start - 1 - warmup)
                context = texts[t][begin : end - 1]  # the inputs: symbols before each target
                rows[r, : len(context)] = context
                spans.append((start - 1 - begin, len(context)))
            with autocast(device, mixed_precision):
                out = network.hidden_states(torch.from_numpy(rows).to(device)).float().cpu().numpy()
            for r, (t, _, _) in enumerate(group):
                lo, hi = spans[r]
                states_of[t].append(out[r, lo:hi])
    result = []
    for t, symbols in enumerate(texts):
        hidden = network.rnn.hidden_size
        states = np.concatenate(states_of[t]) if states_of[t] else np.zeros((0, hidden), dtype=np.float32)
        result.append((states.astype(np.float32), symbols[1:].astype(np.int64)))
    return result


def fit_heads(
    samples: Sequence[tuple[np.ndarray, np.ndarray]],
    *,
    init_weight: np.ndarray,
    init_bias: np.ndarray,
    steps: int,
    lr: float,
    l2: float,
    group: int,
    device: str,
) -> tuple[np.ndarray, np.ndarray]:
    """One softmax head per sample (states, targets) on frozen states: W = W0 + D, b = b0 + d, with
    Adam on the mean cross-entropy plus `l2` * |D|^2 (full batch, `steps` steps), `group` heads at once.

    Rows are padded to the longest sample of a group and masked out of the loss. Heads are independent
    (each one's loss and Adam state are its own), so samples are grouped in order of length: with short texts
    of very different lengths (forum posts), groups in the given order were mostly padding.
    """
    hidden, vocab = init_weight.shape
    weights = np.zeros((len(samples), hidden, vocab), dtype=np.float32)
    biases = np.zeros((len(samples), vocab), dtype=np.float32)
    w0 = torch.from_numpy(init_weight).to(device)
    b0 = torch.from_numpy(init_bias).to(device)
    by_length = np.argsort([len(t) for _, t in samples], kind="stable")
    for first in range(0, len(samples), group):
        members = by_length[first : first + group]
        chunk = [samples[i] for i in members]
        rows = max(1, max(len(t) for _, t in chunk))
        states = torch.zeros(len(chunk), rows, hidden, device=device)
        targets = torch.zeros(len(chunk), rows, dtype=torch.long, device=device)
        mask = torch.zeros(len(chunk), rows, device=device)
        for i, (s, t) in enumerate(chunk):
            states[i, : len(t)] = torch.from_numpy(s)
            targets[i, : len(t)] = torch.from_numpy(t)
            mask[i, : len(t)] = 1.0
        counts = mask.sum(dim=1).clamp(min=1.0)
        delta_w = torch.zeros(len(chunk), hidden, vocab, device=device, requires_grad=True)
        delta_b = torch.zeros(len(chunk), vocab, device=device, requires_grad=True)
        optimizer = torch.optim.Adam([delta_w, delta_b], lr=lr)
        for _ in range(steps):
            optimizer.zero_grad(set_to_none=True)
            logits = torch.bmm(states, w0 + delta_w) + (b0 + delta_b)[:, None, :]
            nll = nn.functional.cross_entropy(logits.transpose(1, 2), targets, reduction="none")
            loss = ((nll * mask).sum(dim=1) / counts).sum() + l2 * delta_w.pow(2).sum()
            loss.backward()
            optimizer.step()
        with torch.no_grad():
            weights[members] = (w0 + delta_w).cpu().numpy()
            biases[members] = (b0 + delta_b).cpu().numpy()
    return weights, biases


def cross_entropies(
    states: np.ndarray, targets: np.ndarray, weights: np.ndarray, biases: np.ndarray, *, group: int, device: str
) -> np.ndarray:
    """Mean cross-entropy (nats per symbol) of one text's (states, targets) under each head: (heads,)."""
    out = np.zeros(len(weights), dtype=np.float64)
    if len(targets) == 0:
        return out
    s = torch.from_numpy(states).to(device)
    t = torch.from_numpy(targets).to(device)
    with torch.no_grad():
        for first in range(0, len(weights), group):
            w = torch.from_numpy(weights[first : first + group]).to(device)
            b = torch.from_numpy(biases[first : first + group]).to(device)
            logits = torch.einsum("th,ahv->atv", s, w) + b[:, None, :]
            logp = torch.log_softmax(logits, dim=-1)
            nll = -logp.gather(2, t[None, :, None].expand(len(w), -1, 1)).squeeze(2)
            out[first : first + len(w)] = nll.mean(dim=1).double().cpu().numpy()
    return out
