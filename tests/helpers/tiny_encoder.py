"""A tiny randomly initialised BERT and tokenizer, for tests that must not download anything."""

from __future__ import annotations

import string
from pathlib import Path

SPECIAL = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"]
WORDS = ["the", "and", "of", "to", "a", "in", "is", "it", "that", "was", "he", "she", "we", "you", "not"]


def tiny_vocab() -> list[str]:
    """Special tokens, single characters with their `##` continuations, and a few common words."""
    chars = list(string.ascii_lowercase + string.digits + ".,;:!?'\"()-")
    return SPECIAL + chars + [f"##{c}" for c in chars] + WORDS


def make_tiny_encoder(folder: Path, *, layers: int = 3, hidden: int = 16, seed: int = 0) -> Path:
    """Write a random `BertModel` (`layers` layers of width `hidden`) and its tokenizer to `folder`.

    The same seed gives the same files, hence the same encoder identity.
    """
    import torch
    from transformers import BertConfig, BertModel, BertTokenizerFast

    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    vocab = tiny_vocab()
    tokenizer = BertTokenizerFast(vocab={w: i for i, w in enumerate(vocab)}, do_lower_case=True)
    config = BertConfig(
        vocab_size=len(vocab),
        hidden_size=hidden,
        num_hidden_layers=layers,
        num_attention_heads=2,
        intermediate_size=2 * hidden,
        max_position_embeddings=128,
    )
    torch.manual_seed(seed)
    BertModel(config).save_pretrained(folder)
    tokenizer.save_pretrained(folder)
    return folder
