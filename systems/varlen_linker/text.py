"""Post text -> subword ids: a SentencePiece unigram model trained on the training texts (Kudo 2018).

Each post becomes exactly `length` ids: truncated, or padded with PAD_ID (0). Only a post's
beginning is ever used, so texts are cut to MAX_CHARS characters before encoding (far more than
`length` subwords need), which keeps training and encoding fast on long posts.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from harness.seeding import legacy_seed

PAD_ID = 0
UNK_ID = 1
MAX_CHARS = 1024


def clean(text: str) -> str:
    """Whitespace runs (newlines included) become single spaces; the text is cut to MAX_CHARS."""
    return " ".join(text[:MAX_CHARS].split())


class SubwordTokenizer:
    """A trained SentencePiece model, held as its serialized bytes (saved in checkpoints as such)."""

    def __init__(self, model_proto: bytes) -> None:
        import sentencepiece as spm

        self.model_proto = bytes(model_proto)
        self._processor = spm.SentencePieceProcessor(model_proto=self.model_proto)

    @classmethod
    def train(cls, texts: Sequence[str], *, vocab_size: int, seed: int) -> SubwordTokenizer:
        """Train a unigram model on the (non-empty) texts.

        The vocabulary size is an upper bound: a small corpus gets as many pieces as it supports.
        """
        import io

        import sentencepiece as spm

        if vocab_size < 8:
            raise ValueError(f"vocab_size must be at least 8, got {vocab_size}")
        sentences = [t for t in (clean(text) for text in texts) if t]
        if not sentences:
            raise ValueError("no non-empty training text to learn subwords from")
        spm.set_random_generator_seed(legacy_seed(seed))  # it takes 32 bits; `harness run --seed` takes 64
        buffer = io.BytesIO()
        spm.SentencePieceTrainer.train(
            sentence_iterator=iter(sentences),
            model_writer=buffer,
            model_type="unigram",
            vocab_size=vocab_size,
            hard_vocab_limit=False,  # a small corpus gets fewer pieces instead of an error
            character_coverage=0.9995,
            pad_id=PAD_ID,
            unk_id=UNK_ID,
            bos_id=-1,
            eos_id=-1,
            max_sentence_length=4 * MAX_CHARS + 16,  # bytes; UTF-8 takes up to 4 per character
            num_threads=1,  # one thread: the same texts and seed give the same model
            minloglevel=2,
        )
        return cls(buffer.getvalue())

    @property
    def vocab_size(self) -> int:
        return int(self._processor.get_piece_size())

    def encode(self, texts: Sequence[str], length: int) -> np.ndarray:
        """An (n, length) int64 array of ids, padded with PAD_ID; an empty text is all padding."""
        ids = self._processor.encode([clean(t) for t in texts], out_type=int)
        out = np.full((len(texts), length), PAD_ID, dtype=np.int64)
        for row, piece_ids in enumerate(ids):
            piece_ids = piece_ids[:length]
            out[row, : len(piece_ids)] = piece_ids
        return out
