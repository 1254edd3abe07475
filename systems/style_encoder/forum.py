"""`forum_ngram_style`: the n-gram style encoder (`systems.style_encoder.ngram`) on the forum tasks (darkweb,
reddit): a sample is the mean of its posts' unit embeddings, ranked by cosine.

The encoder learns from single posts, two of one author in different threads against other authors', so a sample is
read post by post and averaged (as LUAR reads a Reddit account), not joined into one text. Two ways to get it:

- `model=FOLDER`: an encoder pre-trained by `harness pretrain-style POSTS FOLDER --encoder ngram --train-split-of
  TASK` on that task's training split of the same posts (pass the same `--task-param`s to both commands);
- no model: the encoder is learnt from the training split itself, each author's posts from all their sequences (a
  darkweb person's episodes, a reddit author's stream); threads and communities are not in a split, so every post
  is its own thread and all share one community.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any, ClassVar

import numpy as np

from core.errors import HarnessError
from harness.system import constructor_params
from systems.style_encoder.corpus import PretrainingCorpus
from systems.style_encoder.ngram import (
    NgramStyleModel,
    learn_from_task,
    load_ngram_style,
    manifest_summary,
    model_checksums,
    ngram_settings,
)
from tasks.forum.records import ForumSample, ForumSplit, sample_texts, split_posts_file
from toolkit.checkpoint import CONFIG_NAME, load_checkpoint, save_checkpoint
from toolkit.read_texts import TextsRead, read_in_split, refuse_read_texts, text_keys
from toolkit.text_prep import prepare_text


def split_corpus(train: ForumSplit) -> PretrainingCorpus:
    """The training split's posts by author (authors with two or more posts), prepared as pre-training reads
    posts; every post its own thread, one community."""
    by_author: dict[str, list[str]] = {}
    for posts, author in zip(train.post_texts(), train.sequence_authors(), strict=True):
        by_author.setdefault(author, []).extend(prepare_text(text) for text in posts if text.strip())
    authors = sorted(author for author, texts in by_author.items() if len(texts) >= 2)
    texts = [by_author[author] for author in authors]
    return PretrainingCorpus.unthreaded(
        authors, texts, [[""] * len(posts) for posts in texts], "the task's training split"
    )


class ForumNgramStyle:
    """Mean of a sample's post embeddings by an n-gram style encoder, cosine; see the module docstring.

    Parameters:
        model: None (learn the encoder from the training split) or a folder written by
            `harness pretrain-style --encoder ngram`.
        steps, dimensions, char_features, word_features: with no model, the encoder's settings
            (`systems.style_encoder.ngram.NgramStylePretraining`; the rest are its defaults).
    """

    name: ClassVar[str] = "forum_ngram_style"
    metric: ClassVar[str] = "cosine"

    def __init__(
        self,
        *,
        model: str | None = None,
        steps: int = 3000,
        dimensions: int = 300,
        char_features: int = 100_000,
        word_features: int = 30_000,
    ) -> None:
        ngram_settings(steps=steps, dimensions=dimensions, char_features=char_features, word_features=word_features)
        self.model = model
        self.steps = int(steps)
        self.dimensions = int(dimensions)
        self.char_features = int(char_features)
        self.word_features = int(word_features)
        self._model: NgramStyleModel | None = None
        self._info: dict[str, Any] = {}

    def params(self) -> dict[str, Any]:
        return constructor_params(self)

    def input_checksums(self) -> dict[str, str]:
        """The pre-trained model folder's checksum, where one is named (`model_checksums`)."""
        return model_checksums(self.model)

    @property
    def info(self) -> dict[str, Any]:
        """Where the encoder came from: its pre-training's manifest in summary (`manifest_summary`)."""
        return self._info

    def fit(self, train: ForumSplit, *, seed: int) -> None:
        if self.model is not None:
            self._model, manifest = load_ngram_style(Path(self.model))
            self._model = self._read_in_this_split(self._model, manifest, train)
        else:
            try:
                self._model, manifest = learn_from_task(
                    split_corpus(train), "training author(s)", seed=seed, steps=self.steps,
                    dimensions=self.dimensions, char_features=self.char_features, word_features=self.word_features,
                )  # fmt: skip
            except HarnessError as error:
                raise HarnessError(f"{self.name}: {error}") from None
        self._info = {"model": self.model, "pretraining": manifest_summary(manifest)}

    def _read_in_this_split(
        self, model: NgramStyleModel, manifest: dict[str, Any], train: ForumSplit
    ) -> NgramStyleModel:
        """The model, refused where it was made for another training split or on these posts with none
        (`toolkit.read_texts.refuse_other_split`); else keeping only the texts it read outside the training split,
        which `embed` refuses to answer about. A model of other posts is read as it is."""
        read = read_in_split(manifest, model.read, train, split_posts_file(train), name=self.name, model=self.model)
        return model._replace(read=None if read is None else read.keys)

    def embed(self, samples: Sequence[ForumSample]) -> np.ndarray:
        """Unit-length means of each sample's unit post embeddings (float32; a sample without text gives zeros)."""
        if self._model is None:
            raise HarnessError(f"{self.name}: not fitted; call fit() or load() first")
        texts = [[prepare_text(text) for text in sample_texts(sample)] for sample in samples]
        flat = [text for posts in texts for text in posts]
        if self._model.read is not None:  # the posts prepared once, for the check and the encoder
            read = TextsRead(self._model.read, str(self.model))
            refuse_read_texts([read], text_keys(flat), name=self.name)
        vectors = self._model.embed(flat, desc=f"{self.name}: embedding posts") if flat else np.zeros((0, 1))
        norms = np.linalg.norm(vectors, axis=1, keepdims=True)
        vectors = np.divide(vectors, norms, out=np.zeros_like(vectors), where=norms > 0)
        size = self._model.projection["output_bias"].shape[0]
        out = np.zeros((len(samples), size))
        start = 0
        for row, posts in enumerate(texts):
            if posts:
                out[row] = vectors[start : start + len(posts)].mean(axis=0)
            start += len(posts)
        norms = np.linalg.norm(out, axis=1, keepdims=True)
        return np.divide(out, norms, out=np.zeros_like(out), where=norms > 0).astype(np.float32)

    def save(self, directory: Path) -> None:
        if self._model is None:
            raise HarnessError(f"{self.name}: not fitted; nothing to save")
        state, arrays = self._model.state()
        save_checkpoint(directory, system=self.name, params=self.params(), state=state | {"info": self._info},
                        arrays=arrays)  # fmt: skip

    @classmethod
    def load(cls, directory: Path) -> ForumNgramStyle:
        params, state, arrays = load_checkpoint(directory, system=cls.name)
        system = cls(**params)
        system._model = NgramStyleModel.from_state(dict(state), dict(arrays), where=Path(directory) / CONFIG_NAME)
        system._info = dict(state.get("info") or {})
        return system
