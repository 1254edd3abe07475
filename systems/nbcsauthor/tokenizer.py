"""Byte-level BPE over post texts (SYSML's text tokens), trained with Hugging Face `tokenizers`.

Byte-level: every string is representable (no unknown token), whatever the forum's languages. The
pre-processing placeholders ([QUOTE], [LINK], ...) are whole tokens of their own.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

import numpy as np

from tasks.forum.records import SPECIAL_TOKENS

PAD = "<pad>"
PAD_ID = 0


class PostTokenizer:
    """A trained byte-level BPE; `encode` gives one id array per text, cut to `max_tokens`."""

    def __init__(self, tokenizer: object) -> None:
        self._tokenizer = tokenizer

    @classmethod
    def train(cls, texts: Iterable[str], vocab_size: int) -> PostTokenizer:
        """Learn merges from the texts (deterministic for the same texts and vocabulary size)."""
        from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers

        tokenizer = Tokenizer(models.BPE())
        tokenizer.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
        tokenizer.decoder = decoders.ByteLevel()
        trainer = trainers.BpeTrainer(
            vocab_size=vocab_size,
            special_tokens=[PAD, *SPECIAL_TOKENS],
            initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
            show_progress=False,
        )
        tokenizer.train_from_iterator(texts, trainer=trainer)
        if tokenizer.token_to_id(PAD) != PAD_ID:
            raise RuntimeError("the padding token did not get id 0")
        return cls(tokenizer)

    @classmethod
    def from_json(cls, text: str) -> PostTokenizer:
        from tokenizers import Tokenizer

        return cls(Tokenizer.from_str(text))

    def to_json(self) -> str:
        return self._tokenizer.to_str()

    @property
    def vocab_size(self) -> int:
        return self._tokenizer.get_vocab_size()

    def encode(self, texts: Sequence[str], max_tokens: int) -> list[np.ndarray]:
        """Token ids of each text (int32), at most `max_tokens` of them; an empty text has none."""
        encodings = self._tokenizer.encode_batch(list(texts), add_special_tokens=False)
        return [np.asarray(e.ids[:max_tokens], dtype=np.int32) for e in encodings]

    def tokens(self, text: str) -> list[str]:
        """The token strings of one text (for inspection and tests)."""
        return self._tokenizer.encode(text, add_special_tokens=False).tokens
