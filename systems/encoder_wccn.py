"""`encoder_wccn`: style vectors from a frozen transformer's lower layers, whitened by the within-author covariance.

`wccn` does this with TF-IDF; here a text's vector comes from a pretrained encoder, with no training of the encoder:

1. each chunk of a text (`toolkit.chunking`, after `toolkit.text_prep`) goes through the frozen encoder; the [CLS]
   vector of each of `layers` is averaged over the text's chunks, L2-normalised per layer (so no layer outweighs
   another by its scale) and the layers are put side by side (`toolkit.layer_features`, cached on disk);
2. the training texts' vectors are centred, reduced by PCA to `dimensions`, and whitened by the covariance of one
   author's texts (within-class covariance normalisation, `toolkit.style_space.within_author_whitening`): what
   varies between one author's texts, genre and topic here, counts little in the cosine;
3. a problem's raw score is the cosine of its known texts' mean vector and its unknown text's, as (1 + cosine) / 2;
   the abstain band is fitted on out-of-fold scores, each fold's centring, PCA and whitening fitted without the
   held-out problems (the encoder is frozen and sees no label, so its features are computed once).

The layers are by default the lower two thirds of the encoder (`toolkit.layer_features.lower_layers`: 1-4 of
all-MiniLM-L6-v2's 6), which hold more of how a text is written than of what it says. The
authors come from the truth's names joined with what the problems say (`toolkit.style_space.text_authors`), so
PAN 2013-2015 data works too.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any, ClassVar, Literal

import numpy as np

from core.errors import HarnessError
from core.records import VerificationData, VerificationProblem
from harness.params import build
from toolkit.calibration import cross_fitted_scores, fit_then_score
from toolkit.checkpoint import CONFIG_NAME, load_checkpoint, runtime_params
from toolkit.layer_features import LayerFeatures, LayerFeaturesConfig, text_vector
from toolkit.pretrained import identity_matches
from toolkit.style_space import cosine_scores, distinct_texts, text_authors, within_author_whitening
from toolkit.verifier import CalibratedVerifier


class EncoderWccn(CalibratedVerifier):
    """Cosine of whitened frozen-encoder layer vectors; see the module docstring.

    Parts:
        encoder: the frozen encoder and its chunks (`LayerFeaturesConfig`: model, layers, max_tokens, stride,
            max_chunks_per_text); layers None is `toolkit.layer_features.lower_layers` of the encoder's depth.
    Settings:
        dimensions: the PCA's size (capped at the training texts less one).
        shrinkage: the share of a scaled identity added to the within-author covariance (0: full whitening).
        whiten: False leaves the whitening out (the cosine of centred PCA vectors): for an encoder trained to put
            one author's texts together (`harness pretrain-style`), whose space the training authors' covariance
            only distorts. "auto" fits both and keeps the one whose raw scores rank the training problems better
            out of fold (the same folds as the band's; a tie keeps the whitening): the choice is made on training
            data alone, and `info` records it (`whiten`, `out_of_fold_auc_by_whiten`).
    Run-time settings: device ("auto", "cpu", "cuda"), mixed_precision, cache_dir (the feature cache; None:
        $HARNESS_CACHE_DIR/siamese_bilstm or ~/.cache/harness/siamese_bilstm), encode_batch_size.
    """

    name: ClassVar[str] = "encoder_wccn"
    FITTED: ClassVar[tuple[str, ...]] = ("_mean", "_band")

    def __init__(
        self,
        encoder: LayerFeaturesConfig = LayerFeaturesConfig(max_chunks_per_text=32),  # noqa: B008 (frozen part)
        *,
        dimensions: int = 200,
        shrinkage: float = 0.1,
        whiten: bool | Literal["auto"] = True,
        grid_step: float = 0.01,
        objective: str = "overall",
        calibration_folds: int = 5,
        device: str = "auto",
        mixed_precision: bool = True,
        cache_dir: str | None = None,
        encode_batch_size: int = 32,
    ) -> None:
        if not isinstance(encoder, LayerFeaturesConfig):
            raise HarnessError(f"encoder must be a LayerFeaturesConfig part, not {encoder!r}")
        if dimensions < 1:
            raise ValueError(f"dimensions must be positive, got {dimensions!r}")
        if not shrinkage >= 0:
            raise ValueError(f"shrinkage must be zero or positive, got {shrinkage!r}")
        if whiten not in (True, False, "auto"):
            raise ValueError(f"whiten must be true, false or auto, got {whiten!r}")
        super().__init__(locals())
        self._mean: np.ndarray | None = None  # (layers * hidden,)
        self._projection: np.ndarray | None = None  # (layers * hidden, d): the PCA's axes
        self._whitening: np.ndarray | None = None  # (d, d)
        self._layers: list[int] | None = None
        self._encoder_identity: str | None = None
        self._extractor: LayerFeatures | None = None
        self._info: dict[str, Any] = {}

    @property
    def info(self) -> dict[str, Any]:
        """What fit saw: texts, author groups, layers, dimensions, and the raw scores' out-of-fold training AUC."""
        return self._info

    def extractor(self) -> LayerFeatures:
        """The (lazily built) frozen-encoder feature extractor with its cache."""
        if self._extractor is None:
            from toolkit.devices import resolve_device

            self._extractor = self.encoder.build(
                device=resolve_device(self.device),
                mixed_precision=self.mixed_precision,
                batch_size=self.encode_batch_size,
                cache_dir=self.cache_dir,
            )
        return self._extractor

    # -- fitting ---------------------------------------------------------------------------------------------------

    def _fit(self, train: VerificationData, labels: np.ndarray, *, seed: int) -> None:
        from sklearn.metrics import roc_auc_score

        assert train.truth is not None  # training_labels checked it
        truth = train.truth
        extractor = self.extractor()
        self._layers = self.encoder.layer_indices(extractor.num_layers)
        self._encoder_identity = extractor.identity
        texts = list(dict.fromkeys(text for problem in train.problems for text in problem.texts))
        vectors = dict(zip(texts, self._text_vectors(texts, desc="encoding training texts"), strict=True))

        both = labels.any() and not labels.all()

        def fitted_with(whiten: bool):
            def fit(problems: Sequence[VerificationProblem]) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
                return self._fit_space(problems, truth, vectors, whiten=whiten)

            def score(problems: Sequence[VerificationProblem], space: tuple[np.ndarray, ...]) -> np.ndarray:
                return self._similarities(problems, vectors, *space)

            return fit_then_score(train.problems, fit, score)

        # how well the raw scores rank the training problems out of fold: a choice between settings made on
        # training data reads this, never a test score
        by_whiten: dict[str, float | None] = {}
        if self.whiten == "auto":
            for candidate in (True, False):
                oof, _ = cross_fitted_scores(
                    train.problems, fitted_with(candidate), k=self.calibration_folds, seed=seed
                )
                by_whiten[str(candidate).lower()] = float(roc_auc_score(labels, oof)) if both else None
            plain, whitened = by_whiten["false"], by_whiten["true"]
            whiten = not (plain is not None and whitened is not None and plain > whitened)
        else:
            whiten = bool(self.whiten)
        scores = self.cross_fit_band(train, labels, fitted_with(whiten), seed=seed)
        self._mean, self._projection, self._whitening = self._fit_space(
            train.problems, truth, vectors, whiten=whiten, record=True
        )
        self._info["whiten"] = whiten
        self._info["out_of_fold_auc"] = float(roc_auc_score(labels, scores)) if both else None
        if by_whiten:
            self._info["out_of_fold_auc_by_whiten"] = by_whiten

    def _fit_space(
        self,
        problems: Sequence[VerificationProblem],
        truth: Mapping[str, Any],
        vectors: Mapping[str, np.ndarray],
        *,
        whiten: bool,
        record: bool = False,
    ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Mean, PCA axes and whitening (the identity where `whiten` is False) of these training problems' texts."""
        texts, authors = text_authors(problems, truth)
        if len(texts) < 3:
            raise HarnessError(f"{self.name}: needs at least 3 distinct training texts, got {len(texts)}")
        matrix = np.stack([vectors[text] for text in texts])
        mean = matrix.mean(axis=0)
        centred = matrix - mean
        dimensions = min(self.dimensions, len(texts) - 1, matrix.shape[1])
        # contiguous, as it is read back from a checkpoint: the same memory layout gives the same rounding
        projection = np.ascontiguousarray(np.linalg.svd(centred, full_matrices=False)[2][:dimensions].T)
        if whiten:
            whitening, used = within_author_whitening(centred @ projection, authors, self.shrinkage)
        else:
            whitening, used = np.eye(dimensions), None
        if record:
            self._info = {
                "texts": len(texts),
                "author_groups": int(len(np.unique(authors))),
                "authors_with_two_texts": used,
                "layers": self._layers,
                "dimensions": dimensions,
            }
        return mean, projection, whitening

    # -- scoring ---------------------------------------------------------------------------------------------------

    def _text_vectors(self, texts: Sequence[str], *, desc: str) -> list[np.ndarray]:
        """Each text's layer vectors, averaged over its chunks, L2-normalised per layer, side by side (float64)."""
        assert self._layers is not None
        return [text_vector(features, self._layers) for features in self.extractor().features(texts, desc=desc)]

    def raw_scores(self, problems: Sequence[VerificationProblem]) -> np.ndarray:
        """(1 + cosine) / 2 of each problem's whitened known (mean) and unknown vectors."""
        self._check_fitted()
        texts = distinct_texts(problems)
        vectors = dict(zip(texts, self._text_vectors(texts, desc="encoding texts"), strict=True))
        assert self._mean is not None and self._projection is not None and self._whitening is not None
        return self._similarities(problems, vectors, self._mean, self._projection, self._whitening)

    @staticmethod
    def _similarities(
        problems: Sequence[VerificationProblem],
        vectors: Mapping[str, np.ndarray],
        mean: np.ndarray,
        projection: np.ndarray,
        whitening: np.ndarray,
    ) -> np.ndarray:
        texts = distinct_texts(problems)
        whitened = ((np.stack([vectors[text] for text in texts]) - mean) @ projection) @ whitening
        return cosine_scores(problems, texts, whitened)

    # -- checkpoint ------------------------------------------------------------------------------------------------

    def _state(self) -> tuple[dict[str, Any], dict[str, np.ndarray]]:
        """Encoder identity, layers, band and fit summary in config.json; mean, PCA axes, whitening as arrays."""
        assert self._mean is not None and self._projection is not None and self._whitening is not None
        state = {"encoder_identity": self._encoder_identity, "layers": self._layers, "info": self._info}
        arrays = {"mean": self._mean, "projection": self._projection, "whitening": self._whitening}
        return state | self.band_state(), arrays

    @classmethod
    def load(cls, directory: Path, *, runtime: Mapping[str, Any] | None = None) -> EncoderWccn:
        """Read a checkpoint; device and feature cache are this machine's (`runtime`), never the checkpoint's.

        The encoder found must be the one it was fitted with (by the hash of its files), else a HarnessError.
        """
        directory = Path(directory)
        where = directory / CONFIG_NAME
        params, state, arrays = load_checkpoint(directory, system=cls.name)
        system = build(cls, runtime_params(params, runtime, where=where))
        try:
            system.restore_band(state, where=where)
            expected = str(state["encoder_identity"])
            system._layers = [int(layer) for layer in state["layers"]]
            mean = np.asarray(arrays["mean"], dtype=np.float64)
            projection = np.asarray(arrays["projection"], dtype=np.float64)
            whitening = np.asarray(arrays["whitening"], dtype=np.float64)
            system._info = dict(state.get("info") or {})
        except (KeyError, TypeError, ValueError) as error:
            raise HarnessError(f"{where}: malformed {cls.name} checkpoint ({error!r}); refit it") from None
        extractor = system.extractor()
        identity = extractor.identity
        if not identity_matches(expected, identity, where=directory):
            raise HarnessError(
                f"{directory}: fitted on features of another encoder "
                f"(checkpoint {expected[:12]}, found {identity[:12]} for {system.encoder.model!r})"
            )
        width = len(system._layers) * extractor.hidden_size
        dimensions = projection.shape[1] if projection.ndim == 2 else -1
        if (
            mean.shape != (width,)
            or projection.shape != (width, dimensions)
            or whitening.shape != (dimensions, dimensions)
            or any(not 0 <= layer <= extractor.num_layers for layer in system._layers)
        ):
            raise HarnessError(
                f"{where}: mean {mean.shape}, projection {projection.shape} and whitening {whitening.shape} do not "
                f"fit layers {system._layers} of a {extractor.hidden_size}-wide encoder; refit it"
            )
        system._encoder_identity = expected
        system._mean, system._projection, system._whitening = mean, projection, whitening
        return system
