"""Verification by the cosine of style vectors with the within-author variation taken out (WCCN).

Across discourse types two texts of one author differ in genre and topic more than two authors' texts of one genre
differ in style, so a plain TF-IDF cosine mostly measures genre. `toolkit.style_space` whitens TF-IDF/SVD vectors by
the covariance of one author's texts (within-class covariance normalisation, from speaker verification, where the
channel is what varies within a speaker). Here the channel is the discourse type and topic:

1. the style space (`toolkit.style_space`) is learnt on the training texts; the authors are the truth's where it
   names them, joined with what the problems say: a problem's known texts share an author, and a same-author
   problem's unknown text shares it too (PAN 2013-2015 name no authors);
2. a problem's raw score is the cosine of its known texts' mean style vector and its unknown text's, as
   (1 + cosine) / 2 in [0, 1]. The abstain band is fitted on out-of-fold scores: each fold's whole pipeline (TF-IDF,
   SVD, W and the authors) is fitted on the other folds' problems only.

A `background` corpus (unlabelled texts of other people: forum posts, a folder of .txt files) joins the training
texts where the vocabulary, idf and SVD basis are learnt; the within-author covariance and the mean come from the
training texts alone. A basis learnt from a few hundred training texts fits those very texts; with thousands of
others beside them it also describes writing in general, and the whitening works in it (CMCC, 7 training authors:
see benchmarks/README.md; a basis from the background alone lost the training texts' genre directions, which the
whitening needs to see). This basis is learnt once, from all training texts and the background, and shared by the
cross-fitting folds (learning it per fold took 6 times as long): a fold's basis has seen its held-out texts, without
their labels, so the band's out-of-fold scores are out of fold for the labels only. Posts are joined, in file order
and per author where the file names them, into documents of `background_length` characters or more, the length of a
text to verify; `background_texts` of them, drawn with the seed, are used. The background must hold no test text:
its texts shape the space every test text is scored in.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any, ClassVar

import numpy as np

from core.errors import DataError, HarnessError
from core.files import paths_under, read_jsonl
from core.records import VerificationData, VerificationProblem, VerificationTruth
from toolkit.calibration import fit_then_score
from toolkit.style_space import (
    Basis,
    StyleSpace,
    check_space_params,
    cosine_scores,
    distinct_texts,
    fit_basis,
    fit_space,
    text_authors,
)
from toolkit.verifier import CalibratedVerifier


def background_documents(path: Path, *, count: int, length: int, seed: int) -> list[str]:
    """`count` documents of at least `length` characters from a posts file (.jsonl or .jsonl.gz, a "text" per line,
    optionally an "author") or a folder of .txt files (one document each, however long), drawn with `seed`."""
    if path.is_dir():
        files = paths_under(path, "*.txt")
        if not files:
            raise HarnessError(f"{path}: the background folder holds no .txt file")
        documents = [file.read_text(encoding="utf-8", errors="replace") for file in files]
    elif path.is_file():
        pending: dict[str, list[str]] = {}
        documents = []
        for line, record in read_jsonl(path):
            text = record.get("text") if isinstance(record, dict) else None
            if not isinstance(text, str):
                raise DataError("must be a string", path=path, line=line, field="text")
            author = str(record.get("author", ""))  # posts of no named author are joined in file order
            parts = pending.setdefault(author, [])
            parts.append(text)
            if sum(map(len, parts)) >= length:
                documents.append("\n\n".join(parts))
                del pending[author]
    else:
        raise HarnessError(f"{path}: background corpus not found (a posts .jsonl[.gz] file or a folder of .txt files)")
    if len(documents) < 2:
        raise HarnessError(f"{path}: the background gives {len(documents)} document(s) of {length}+ characters")
    order = np.random.default_rng(seed).permutation(len(documents))[:count]
    return [documents[i] for i in sorted(order)]


class WccnCosine(CalibratedVerifier):
    """Cosine of TF-IDF style vectors after within-class (author) covariance normalisation; see the module docstring.

    Parameters:
        dimensions: the SVD's size (capped at the training texts less one).
        shrinkage: how much of a scaled identity is added to the within-author covariance before it is inverted
            (0: full whitening; larger: closer to a plain cosine in the SVD space).
        char_features, word_features: the most frequent character 1-4-grams and words kept (in >= 2 texts).
        background: None, or a corpus of other people's texts that joins the training texts where the vocabulary and
            SVD basis are learnt (see the module docstring); background_texts documents of background_length
            characters or more are drawn from it.
    """

    name: ClassVar[str] = "wccn"
    FITTED: ClassVar[tuple[str, ...]] = ("_space", "_band")

    def __init__(
        self,
        *,
        dimensions: int = 200,
        shrinkage: float = 0.1,
        char_features: int = 30000,
        word_features: int = 10000,
        background: str | None = None,
        background_texts: int = 6000,
        background_length: int = 2500,
        grid_step: float = 0.01,
        objective: str = "overall",
        calibration_folds: int = 5,
        calibration_by: str = "texts",
    ) -> None:
        check_space_params(dimensions, shrinkage, char_features, word_features)
        if background_texts < 2 or background_length < 1:
            raise ValueError(
                f"background_texts must be at least 2 and background_length positive, got {background_texts!r}, "
                f"{background_length!r}"
            )
        super().__init__(locals())
        self._space: StyleSpace | None = None
        self._info: dict[str, Any] = {}

    @property
    def info(self) -> dict[str, Any]:
        """What fit saw: texts, background documents, author groups (those with two or more texts estimated S_w),
        dimensions, vocabularies, and the out-of-fold AUC of the raw scores on the training problems."""
        return self._info

    def _fit(self, train: VerificationData, labels: np.ndarray, *, seed: int) -> None:
        from sklearn.metrics import roc_auc_score

        assert train.truth is not None  # training_labels checked it
        truth = train.truth
        background = self._background(seed)
        # with a background, one basis from all training texts and the background for every fold (see the module
        # docstring); without, each fold learns its own from its texts
        shared = None
        if background:
            shared = self._fit_basis([*text_authors(train.problems, truth)[0], *background], seed=seed)

        def fit(problems: Sequence[VerificationProblem]) -> StyleSpace:
            return self._fit_space(problems, truth, shared, seed=seed)

        scores = self.cross_fit_band(train, labels, fit_then_score(train.problems, fit, self._similarities), seed=seed)
        self._space = self._fit_space(train.problems, truth, shared, seed=seed, record=True)
        self._info["background_documents"] = len(background)
        # how well the raw scores rank the training problems out of fold: a choice between settings made on
        # training data reads this, never a test score
        both = labels.any() and not labels.all()
        self._info["out_of_fold_auc"] = float(roc_auc_score(labels, scores)) if both else None

    def _background(self, seed: int) -> list[str]:
        if self.background is None:
            return []
        path = Path(self.background).expanduser()
        return background_documents(path, count=self.background_texts, length=self.background_length, seed=seed)

    def _fit_basis(self, texts: Sequence[str], *, seed: int) -> Basis:
        return fit_basis(
            texts, dimensions=self.dimensions, char_features=self.char_features, word_features=self.word_features,
            seed=seed, label=self.name,
        )  # fmt: skip

    def _fit_space(
        self,
        problems: Sequence[VerificationProblem],
        truth: Mapping[str, VerificationTruth],
        basis: Basis | None,
        *,
        seed: int,
        record: bool = False,
    ) -> StyleSpace:
        """The style space of these training problems: `basis` (or one learnt from their texts), their mean, and
        the whitening by their authors' within-author covariance."""
        texts, authors = text_authors(problems, truth)
        if len(texts) < 3:
            raise HarnessError(f"{self.name}: needs at least 3 distinct training texts, got {len(texts)}")
        space, used = fit_space(basis or self._fit_basis(texts, seed=seed), texts, authors, shrinkage=self.shrinkage)
        if record:
            self._info = {
                "texts": len(texts),
                "author_groups": int(len(np.unique(authors))),
                "authors_with_two_texts": used,
                "dimensions": len(space.mean),
                "vocabulary": {"char": len(space.basis.char.vocabulary), "word": len(space.basis.word.vocabulary)},
            }
        return space

    def raw_scores(self, problems: Sequence[VerificationProblem]) -> np.ndarray:
        """(1 + cosine) / 2 of each problem's whitened known (mean) and unknown vectors."""
        self._check_fitted()
        assert self._space is not None
        return self._similarities(problems, self._space)

    def _similarities(self, problems: Sequence[VerificationProblem], space: StyleSpace) -> np.ndarray:
        texts = distinct_texts(problems)
        return cosine_scores(problems, texts, space.embed(texts, desc=f"{self.name}: embedding texts"))

    def _state(self) -> tuple[dict[str, Any], dict[str, np.ndarray]]:
        """Vocabularies, band and seed in config.json; idf, SVD basis, mean and whitening in weights.safetensors."""
        assert self._space is not None
        state, arrays = self._space.state()
        return state | {"info": self._info} | self.band_state(), arrays

    def _restore(self, state: Mapping[str, Any], arrays: Mapping[str, np.ndarray], *, where: Path) -> None:
        self._space = StyleSpace.from_state(
            state, arrays, char_features=self.char_features, word_features=self.word_features, where=where
        )
        self._info = dict(state.get("info") or {})
