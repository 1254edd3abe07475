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

An encoder fine-tuned on forum posts with `harness pretrain-style --exclude-test-of SET` has learnt SET's training
authors, so on SET those out-of-fold scores overstate how alike one author's texts look. Pre-trained with
`--band-folds K` as well, its folder also holds K encoders, each without a K-th of SET's training authors
(`toolkit.band_folds`). On SET they take the main encoder's place: fold k's encoder scores fold k's training pairs
(authors it never saw) in a space (centring, PCA, whitening) fitted on the other folds' pairs, its scores are
standardised by their mean and sd over those pairs, and the band is fitted on the logistic of that; a test problem's
score is the logistic of the mean of the K encoders' standardised cosines. On any other set the main encoder answers.

The layers are by default the lower two thirds of the encoder (`toolkit.layer_features.lower_layers`: 1-4 of
all-MiniLM-L6-v2's 6), which hold more of how a text is written than of what it says. The
authors come from the truth's names joined with what the problems say (`toolkit.style_space.text_authors`), so
PAN 2013-2015 data works too.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any, ClassVar, Literal, NamedTuple

import numpy as np

from core.errors import HarnessError
from core.records import VerificationData, VerificationProblem
from harness.params import build
from toolkit.band_folds import band_cosines, fold_folders, logistic_of_mean, made_for, not_read, read_folds
from toolkit.calibration import cross_fitted_scores, fit_then_score
from toolkit.checkpoint import CONFIG_NAME, load_checkpoint, runtime_params
from toolkit.layer_features import LayerFeatures, LayerFeaturesConfig, text_vector
from toolkit.pretrained import identity_matches, model_folder_checksums
from toolkit.read_texts import folder_read_keys
from toolkit.style_space import cosine_scores, distinct_texts, text_authors, within_author_whitening
from toolkit.verifier import CalibratedVerifier


class FoldSpace(NamedTuple):
    """A band fold encoder (its subfolder of the model folder, the hash of its files) and what was fitted on its
    vectors: the space's mean, PCA axes and whitening, and the scale (mean, sd) of its cosines of its fold's pairs."""

    folder: str
    identity: str
    mean: np.ndarray
    projection: np.ndarray
    whitening: np.ndarray
    scale: tuple[float, float]


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
    FITTED: ClassVar[tuple[str, ...]] = ("_band",)  # and a space: the main encoder's or the band folds' (`_folds`)

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
        calibration_by: str = "texts",
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
        if int(encode_batch_size) < 1:  # not first where an empty feature cache needs it (audit 22, F6)
            raise ValueError(f"encode_batch_size must be at least 1, got {encode_batch_size!r}")
        super().__init__(locals())
        self._mean: np.ndarray | None = None  # (layers * hidden,)
        self._projection: np.ndarray | None = None  # (layers * hidden, d): the PCA's axes
        self._whitening: np.ndarray | None = None  # (d, d)
        self._layers: list[int] | None = None
        self._encoder_identity: str | None = None
        self._extractor: LayerFeatures | None = None
        self._folds: list[FoldSpace] = []  # band fold encoders, where they answer instead of the main encoder
        self._fold_extractors: dict[str, LayerFeatures] = {}
        self._info: dict[str, Any] = {}

    @property
    def info(self) -> dict[str, Any]:
        """What fit saw: texts, author groups, layers, dimensions, and the raw scores' out-of-fold training AUC."""
        return self._info

    def extractor(self) -> LayerFeatures:
        """The (lazily built) frozen-encoder feature extractor with its cache."""
        if self._extractor is None:
            self._extractor = self._build_extractor(self.encoder)
        return self._extractor

    def fold_extractor(self, folder: str) -> LayerFeatures:
        """The extractor of the band fold encoder in subfolder `folder` of the model folder (same chunks, layers)."""
        if folder not in self._fold_extractors:
            model = str(Path(str(self.encoder.model)) / folder)
            self._fold_extractors[folder] = self._build_extractor(replace(self.encoder, model=model))
        return self._fold_extractors[folder]

    def _build_extractor(self, encoder: LayerFeaturesConfig) -> LayerFeatures:
        from toolkit.devices import resolve_device

        return encoder.build(
            device=resolve_device(self.device),
            mixed_precision=self.mixed_precision,
            batch_size=self.encode_batch_size,
            cache_dir=self.cache_dir,
        )

    # -- fitting ---------------------------------------------------------------------------------------------------

    def input_checksums(self) -> dict[str, str]:
        """The checksum of the encoder folder `encoder.model` names, where it names one (`model_folder_checksums`)."""
        return model_folder_checksums(self.encoder.model)

    def _fit(self, train: VerificationData, labels: np.ndarray, *, seed: int) -> None:
        from sklearn.metrics import roc_auc_score

        assert train.truth is not None  # training_labels checked it
        truth = train.truth
        self._folds, self._mean, self._projection, self._whitening = [], None, None, None
        folds = self._band_folds()
        if folds is not None and made_for(train, folds):
            self._fit_fold_encoders(train, labels, folds, seed=seed)
            return
        extractor = self.extractor()
        self._layers = self.encoder.layer_indices(extractor.num_layers)
        self._encoder_identity = extractor.identity
        self.keep_texts_read([folder_read_keys(self.encoder.model)], train, self.encoder.model)
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
            cross_fitting = self.cross_fitting_folds(train, labels, seed=seed)
            for candidate in (True, False):
                oof, _ = cross_fitted_scores(train.problems, fitted_with(candidate), folds=cross_fitting)
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
        if folds is not None:
            self._info["band_folds"] = not_read(folds)
        self._info["out_of_fold_auc"] = float(roc_auc_score(labels, scores)) if both else None
        if by_whiten:
            self._info["out_of_fold_auc_by_whiten"] = by_whiten

    def _band_folds(self) -> dict[str, Any] | None:
        """The model folder's band folds (`toolkit.band_folds`), or None where it has none."""
        return None if self.encoder.model is None else read_folds(Path(self.encoder.model))

    def _fit_fold_encoders(
        self, train: VerificationData, labels: np.ndarray, record: dict[str, Any], *, seed: int
    ) -> None:
        """Fit each band fold encoder's space on the other folds' pairs, its scale and the band on its fold's pairs'
        scores (see the module docstring); with whiten "auto", the variant whose band scores rank better."""
        from sklearn.metrics import roc_auc_score

        assert train.truth is not None
        truth, folder = train.truth, Path(str(self.encoder.model))
        names = [fold_folders(fold) for fold in record["folds"]]
        if any(len(fold_names) != 1 for fold_names in names):
            raise HarnessError(f"{folder}: {len(names[0])} encoders a band fold; {self.name} reads one a fold")
        extractors = [self.fold_extractor(fold_names[0]) for fold_names in names]
        self.keep_texts_read([folder_read_keys(folder / fold_names[0]) for fold_names in names], train, folder)
        self._layers = self.encoder.layer_indices(extractors[0].num_layers)
        texts = list(dict.fromkeys(text for problem in train.problems for text in problem.texts))
        vectors = [
            dict(zip(texts, self._text_vectors(texts, desc=f"band fold {k}: encoding training texts", extractor=ex),
                     strict=True))
            for k, ex in enumerate(extractors, 1)
        ]  # fmt: skip
        fold_of = {pair_id: k for k, fold in enumerate(record["folds"]) for pair_id in fold["pair_ids"]}

        def band_with(whiten: bool):
            spaces: dict[int, tuple[np.ndarray, np.ndarray, np.ndarray]] = {}

            def cosines(problems: Sequence[VerificationProblem], k: int, _repeat: int) -> np.ndarray:
                others = [problem for problem in train.problems if fold_of.get(problem.id, k) != k]
                spaces[k] = self._fit_space(others, truth, vectors[k], whiten=whiten)
                return self._similarities(problems, vectors[k], *spaces[k])

            band = band_cosines(train.problems, labels, record, cosines, seed=seed, where=folder)
            return band, spaces

        both = labels.any() and not labels.all()
        candidates = (True, False) if self.whiten == "auto" else (bool(self.whiten),)
        fitted = {whiten: band_with(whiten) for whiten in candidates}
        auc = {
            whiten: float(roc_auc_score(labels[band.rows], logistic_of_mean(band.standardised))) if both else None
            for whiten, (band, _) in fitted.items()
        }
        whiten = candidates[0] if len(candidates) == 1 else not (auc[True] or 0.0) < (auc[False] or 0.0)
        band, spaces = fitted[whiten]
        self._band = self.fit_band(train, logistic_of_mean(band.standardised), labels[band.rows])
        self._folds = [
            FoldSpace(names[k][0], extractors[k].identity, *spaces[k], band.scales[k]) for k in range(len(names))
        ]
        self._calibration = {
            "folds": len(names),
            "scores": "out of sample: each training pair by the band fold encoder pre-trained without its authors "
            f"({record['grouping']}), in a space fitted on the other folds' pairs, standardised by that encoder's "
            f"scores of its fold; {len(band.rows)} of {len(train.problems)} pairs, {band.across} across folds left "
            "out, the classes in the training split's proportion; the test problems are answered by the fold "
            "encoders together",
        }
        self._info = {
            "texts": len(texts),
            "layers": self._layers,
            "band_folds": [fold.folder for fold in self._folds],
            "dimensions": [fold.projection.shape[1] for fold in self._folds],
            "whiten": whiten,
            "out_of_fold_auc": auc[whiten],
        }
        if len(candidates) > 1:
            self._info["out_of_fold_auc_by_whiten"] = {str(w).lower(): auc[w] for w in candidates}

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

    def _text_vectors(
        self, texts: Sequence[str], *, desc: str, extractor: LayerFeatures | None = None
    ) -> list[np.ndarray]:
        """Each text's layer vectors, averaged over its chunks, L2-normalised per layer, side by side (float64), by
        `extractor` (default: the main encoder's)."""
        assert self._layers is not None
        features = (extractor or self.extractor()).features(texts, desc=desc)
        return [text_vector(one, self._layers) for one in features]

    def raw_scores(self, problems: Sequence[VerificationProblem]) -> np.ndarray:
        """(1 + cosine) / 2 of each problem's whitened known (mean) and unknown vectors; with band fold encoders,
        the logistic of the mean of their cosines, each standardised on its own scale."""
        self._check_fitted()
        texts = distinct_texts(problems)
        if self._folds:
            standardised = []
            for k, fold in enumerate(self._folds, 1):
                encoded = self._text_vectors(
                    texts, desc=f"band fold {k}: encoding texts", extractor=self.fold_extractor(fold.folder)
                )
                cosines = self._similarities(
                    problems, dict(zip(texts, encoded, strict=True)), fold.mean, fold.projection, fold.whitening
                )
                standardised.append((cosines - fold.scale[0]) / fold.scale[1])
            return logistic_of_mean(standardised)
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
        """Encoder identity, layers, band and fit summary in config.json; mean, PCA axes, whitening as arrays (band
        fold encoders: each one's subfolder, identity and scale under `folds`, its arrays as `fold<k>.`)."""
        state: dict[str, Any] = {"layers": self._layers, "info": self._info}
        if self._folds:
            state["folds"] = [
                {"folder": fold.folder, "encoder_identity": fold.identity, "scale": list(fold.scale)}
                for fold in self._folds
            ]
            arrays = {
                f"fold{k}.{name}": getattr(fold, name)
                for k, fold in enumerate(self._folds)
                for name in ("mean", "projection", "whitening")
            }
            return state | self.band_state(), arrays
        assert self._mean is not None and self._projection is not None and self._whitening is not None
        state["encoder_identity"] = self._encoder_identity
        arrays = {"mean": self._mean, "projection": self._projection, "whitening": self._whitening}
        return state | self.band_state(), arrays

    @classmethod
    def load(cls, directory: Path, *, runtime: Mapping[str, Any] | None = None) -> EncoderWccn:
        """Read a checkpoint; device and feature cache are this machine's (`runtime`), never the checkpoint's.

        The encoders found (the main one, or each band fold's) must be those it was fitted with (by the hash of their
        files), else a HarnessError.
        """
        directory = Path(directory)
        where = directory / CONFIG_NAME
        params, state, arrays = load_checkpoint(directory, system=cls.name)
        system = build(cls, runtime_params(params, runtime, where=where))
        try:
            system.restore_band(state, where=where)
            system.restore_texts_read(state, arrays)
            system._layers = [int(layer) for layer in state["layers"]]
            system._info = dict(state.get("info") or {})
            if "folds" in state:
                folds = [
                    (str(fold["folder"]), str(fold["encoder_identity"]), [float(x) for x in fold["scale"]])
                    for fold in state["folds"]
                ]
                spaces = [[np.asarray(arrays[f"fold{k}.{name}"], dtype=np.float64)
                           for name in ("mean", "projection", "whitening")] for k in range(len(folds))]  # fmt: skip
            else:
                expected = str(state["encoder_identity"])
                space = [np.asarray(arrays[name], dtype=np.float64) for name in ("mean", "projection", "whitening")]
        except (KeyError, TypeError, ValueError) as error:
            raise HarnessError(f"{where}: malformed {cls.name} checkpoint ({error!r}); refit it") from None
        if "folds" not in state:
            system._checked_space(directory, system.extractor(), expected, space, label=repr(system.encoder.model))
            system._encoder_identity = expected
            system._mean, system._projection, system._whitening = space
            return system
        for (folder, identity, scale), space in zip(folds, spaces, strict=True):
            extractor = system.fold_extractor(folder)
            system._checked_space(directory, extractor, identity, space, label=f"band fold encoder {folder!r}")
            if len(scale) != 2 or not scale[1] > 0:
                raise HarnessError(f"{where}: band fold {folder!r} has no scale (mean, sd > 0); edited or corrupted")
            system._folds.append(FoldSpace(folder, identity, *space, (scale[0], scale[1])))
        return system

    def _checked_space(
        self, directory: Path, extractor: LayerFeatures, expected: str, space: list[np.ndarray], *, label: str
    ) -> None:
        """Refuse a checkpoint whose encoder is not the one found, or whose arrays do not fit its layers."""
        identity = extractor.identity
        if not identity_matches(expected, identity, where=directory):
            raise HarnessError(
                f"{directory}: fitted on features of another encoder "
                f"(checkpoint {expected[:12]}, found {identity[:12]} for {label})"
            )
        mean, projection, whitening = space
        assert self._layers is not None
        width = len(self._layers) * extractor.hidden_size
        dimensions = projection.shape[1] if projection.ndim == 2 else -1
        if (
            mean.shape != (width,)
            or projection.shape != (width, dimensions)
            or whitening.shape != (dimensions, dimensions)
            or any(not 0 <= layer <= extractor.num_layers for layer in self._layers)
        ):
            raise HarnessError(
                f"{directory / CONFIG_NAME}: mean {mean.shape}, projection {projection.shape} and whitening "
                f"{whitening.shape} do not fit layers {self._layers} of a {extractor.hidden_size}-wide encoder "
                f"({label}); refit it"
            )
