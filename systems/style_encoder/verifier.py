"""`ngram_style`: verification by the cosine of an n-gram style encoder's embeddings (`systems.style_encoder.ngram`).

It lives beside the encoder it reads and learns (a system imports no other system's package).

The encoder is the wccn style space (character and word TF-IDF, SVD, within-author whitening) with a projection
learnt authorship-contrastively on top. Two ways to get one:

- `model=FOLDER`: an encoder pre-trained on forum posts by `harness pretrain-style POSTS FOLDER --encoder ngram`,
  which learns from thousands of authors. Pre-train it with `--exclude-all-of SET` (both splits of the set left
  out): the band is then fitted on the training problems' scores as they are, since the encoder never saw them. With
  `--exclude-test-of SET` only, the training pairs' authors were learnt and their scores overstate how alike one
  author's texts look: the band would be placed for scores the test problems never reach. Add `--band-folds K` to
  that and the folder also holds K encoders, each pre-trained without a K-th of the training authors: the band is
  fitted on the training pairs' scores by the encoders that never saw their authors, and those encoders answer the
  test problems together, each on its own scale (`systems.style_encoder.band_folds`). On any other set (none of its
  training problems is one the folds were made of) the folds are not read and the main encoder answers.
- no model: the encoder is learnt from the training problems' texts and authors (the truth's names joined with what
  the problems say, `toolkit.style_space.text_authors`), and the band on out-of-fold scores, each fold's encoder
  learnt without its held-out problems.

A problem's raw score is (1 + cosine) / 2 of its known texts' mean embedding and its unknown text's (with band fold
encoders: the logistic of the mean of their standardised cosines).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any, ClassVar

import numpy as np

from core.errors import HarnessError
from core.records import VerificationData, VerificationProblem, VerificationTruth
from systems.style_encoder.corpus import PretrainingCorpus
from systems.style_encoder.ngram import (
    NgramStyleModel,
    learn_from_task,
    load_ngram_style,
    manifest_summary,
    model_checksums,
    ngram_settings,
)
from toolkit.band_folds import band_cosines, fold_folders, logistic_of_mean, made_for, not_read, read_folds
from toolkit.calibration import fit_then_score
from toolkit.read_texts import read_outside
from toolkit.style_space import cosine_scores, distinct_texts, text_authors, text_types
from toolkit.verifier import CalibratedVerifier


def problems_corpus(
    problems: Sequence[VerificationProblem], truth: Mapping[str, VerificationTruth]
) -> PretrainingCorpus:
    """The training problems' texts by author group, each text's discourse type where the problems give one; threads
    and communities are unknown (`PretrainingCorpus.unthreaded`)."""
    texts, authors = text_authors(problems, truth)
    kinds = text_types(problems)
    by_group: dict[int, list[str]] = {}
    for text, group in zip(texts, authors.tolist(), strict=True):
        by_group.setdefault(group, []).append(text)
    groups = [group for group in sorted(by_group) if len(by_group[group]) >= 2]
    grouped = [by_group[group] for group in groups]
    kinds_of = [[kinds.get(text, "") for text in texts_] for texts_ in grouped]
    return PretrainingCorpus.unthreaded([str(group) for group in groups], grouped, kinds_of, "training problems")


class NgramStyle(CalibratedVerifier):
    """Cosine of n-gram style embeddings; see the module docstring.

    Parameters:
        model: None (learn the encoder from the training problems) or a folder written by
            `harness pretrain-style --encoder ngram`.
        steps, dimensions, char_features, word_features: with no model, the encoder's settings
            (`systems.style_encoder.ngram.NgramStylePretraining`; the rest are its defaults).
    """

    name: ClassVar[str] = "ngram_style"
    FITTED: ClassVar[tuple[str, ...]] = ("_models", "_band")

    def __init__(
        self,
        *,
        model: str | None = None,
        steps: int = 3000,
        dimensions: int = 300,
        char_features: int = 100_000,
        word_features: int = 30_000,
        grid_step: float = 0.01,
        objective: str = "overall",
        calibration_folds: int = 5,
        calibration_by: str = "texts",
    ) -> None:
        ngram_settings(steps=steps, dimensions=dimensions, char_features=char_features, word_features=word_features)
        super().__init__(locals())
        # one encoder (its cosine is the raw score), or band fold encoders with each one's scale (`_fit_fold_encoders`)
        self._models: list[NgramStyleModel] | None = None
        self._scales: list[tuple[float, float]] = []
        self._info: dict[str, Any] = {}

    def input_checksums(self) -> dict[str, str]:
        """The pre-trained model folder's checksum, where one is named (`model_checksums`)."""
        return model_checksums(self.model)

    @property
    def info(self) -> dict[str, Any]:
        """Where the encoder came from (its manifest's summary, or what it was learnt from) and the training
        problems' AUC of the scores the band was fitted on."""
        return self._info

    def _fit(self, train: VerificationData, labels: np.ndarray, *, seed: int) -> None:
        from sklearn.metrics import roc_auc_score

        assert train.truth is not None  # training_labels checked it
        truth = train.truth
        self._scales = []
        if self.model is not None:
            folder = Path(self.model)
            model, manifest = load_ngram_style(folder)
            self._info = {"model": str(self.model), "pretraining": manifest_summary(manifest)}
            folds = read_folds(folder)
            if folds is None or not made_for(train, folds):
                self._models = [model]
                scores = self._similarities(train.problems, model)
                self._calibration = {"folds": 0, "scores": "the pre-trained encoder's, on every training problem"}
                if folds is not None:
                    self._info["band_folds"] = not_read(folds)
            else:
                scores, labels = self._fit_fold_encoders(train, labels, folder, folds, seed=seed)
            self._band = self.fit_band(train, scores, labels)
        else:

            def fit(problems: Sequence[VerificationProblem]) -> NgramStyleModel:
                return self._learn(problems, truth, seed=seed)[0]

            scores = self.cross_fit_band(
                train, labels, fit_then_score(train.problems, fit, self._similarities), seed=seed
            )
            model, manifest = self._learn(train.problems, truth, seed=seed)
            self._models = [model]
            self._info = {"model": None, "pretraining": manifest_summary(manifest)}
        both = labels.any() and not labels.all()
        self._info["band_scores_auc"] = float(roc_auc_score(labels, scores)) if both else None
        self.keep_texts_read([model.read for model in self._models], train, self.model)
        self._models = [model._replace(read=None) for model in self._models]  # kept once, by the base

    def _fit_fold_encoders(
        self, train: VerificationData, labels: np.ndarray, folder: Path, folds: dict[str, Any], *, seed: int
    ) -> tuple[np.ndarray, np.ndarray]:
        """Answer with the band fold encoders: each scores its fold's training pairs (authors it never saw), its
        scale is the mean and sd of those scores, and a problem's raw score is the logistic of the mean over the
        encoders of its standardised cosine (a training pair's: over its fold's repeats). Returns the band's scores
        and labels (`band_rows`)."""
        names = [fold_folders(fold) for fold in folds["folds"]]
        models = [[load_ngram_style(folder / name)[0] for name in fold_names] for fold_names in names]
        repeats = len(names[0])
        band = band_cosines(
            train.problems, labels, folds, lambda problems, k, r: self._similarities(problems, models[k][r]),
            seed=seed, where=folder,
        )  # fmt: skip
        self._models = [model for fold_models in models for model in fold_models]  # the order of band.scales
        self._scales = band.scales
        rows = band.rows
        views = folds.get("views", [])
        repeated = f"; {repeats} a fold, pre-trained with other seeds, averaged" if repeats > 1 else ""
        if views:
            seeds, others = repeats - len(views), ", ".join(views)
            main = "the main settings" if seeds == 1 else f"{seeds} of the main settings with other seeds"
            repeated = f"; {repeats} a fold ({main} and views {others}), averaged"
        self._calibration = {
            "folds": len(models),
            "repeats": repeats,
            "scores": "out of sample: each training pair by the band fold encoder pre-trained without its authors "
            f"({folds['grouping']}{repeated}), standardised by that encoder's scores of its fold; {len(rows)} of "
            f"{len(train.problems)} pairs, {band.across} across folds left out, the classes in the "
            "training split's proportion; the test problems are answered by the fold encoders together",
        }
        return logistic_of_mean(band.standardised), labels[rows]

    def _learn(
        self, problems: Sequence[VerificationProblem], truth: Mapping[str, VerificationTruth], *, seed: int
    ) -> tuple[NgramStyleModel, dict[str, Any]]:
        try:
            return learn_from_task(
                problems_corpus(problems, truth), "author group(s)", seed=seed, steps=self.steps,
                dimensions=self.dimensions, char_features=self.char_features, word_features=self.word_features,
            )  # fmt: skip
        except HarnessError as error:
            raise HarnessError(f"{self.name}: {error}") from None

    def raw_scores(self, problems: Sequence[VerificationProblem]) -> np.ndarray:
        """(1 + cosine) / 2 of each problem's known (mean) and unknown embeddings; with band fold encoders, the
        logistic of the mean of their cosines, each standardised on its own scale."""
        self._check_fitted()
        assert self._models is not None
        if not self._scales:
            return self._similarities(problems, self._models[0])
        standardised = [(self._similarities(problems, model) - mean) / sd
                        for model, (mean, sd) in zip(self._models, self._scales, strict=True)]  # fmt: skip
        return logistic_of_mean(standardised)

    def _similarities(self, problems: Sequence[VerificationProblem], model: NgramStyleModel) -> np.ndarray:
        texts = distinct_texts(problems)
        return cosine_scores(problems, texts, model.embed(texts, desc=f"{self.name}: embedding texts"))

    def _state(self) -> tuple[dict[str, Any], dict[str, np.ndarray]]:
        """Vocabularies, band and info in config.json; idf, SVD basis, whitening and projection in weights (band
        fold encoders: each one's under `folds` and `fold<k>.`, with its scale)."""
        assert self._models is not None
        extra = {"info": self._info} | self.band_state()
        if not self._scales:
            state, arrays = self._models[0].state()
            return state | extra, arrays
        states, arrays = [], {}
        for k, model in enumerate(self._models):
            state, model_arrays = model.state()
            states.append(state)
            arrays |= {f"fold{k}.{name}": array for name, array in model_arrays.items()}
        return {"folds": states, "scales": [list(scale) for scale in self._scales]} | extra, arrays

    def _restore(self, state: Mapping[str, Any], arrays: Mapping[str, np.ndarray], *, where: Path) -> None:
        if "folds" not in state:
            self._models, self._scales = [NgramStyleModel.from_state(dict(state), dict(arrays), where=where)], []
        else:
            self._models = []
            for k, fold_state in enumerate(state["folds"]):
                prefix = f"fold{k}."
                fold_arrays = {name[len(prefix) :]: array for name, array in arrays.items() if name.startswith(prefix)}
                self._models.append(NgramStyleModel.from_state(dict(fold_state), fold_arrays, where=where))
            self._scales = [(float(mean), float(sd)) for mean, sd in state["scales"]]
            if len(self._scales) != len(self._models) or any(not sd > 0 for _, sd in self._scales):
                raise HarnessError(f"{where}: band fold scales do not fit its encoders; edited or corrupted")
        self._info = dict(state.get("info") or {})
        reads = [model.read for model in self._models]  # each model's, in checkpoints written on 2026-12-01
        if self._read is None and any(read is not None for read in reads):
            self._read = read_outside(reads, np.zeros(0, dtype=np.uint64), self.model)
        self._models = [model._replace(read=None) for model in self._models]
