"""`siamese_bilstm`: the BERT-BiLSTM Siamese ensemble of Petropoulos (PAN 2023 notebook).

A frozen encoder gives each text chunk the sequence of its per-layer [CLS] vectors (its lower layers, see below);
a Bi-LSTM head, trained with a modified contrastive loss on batches of distinct authors (the paper's
batch of 32 chunks: 16 authors x 2 chunks from two different texts), turns it into an embedding.
A text's embedding is the mean of its chunks' embeddings; a problem's score is the cosine
similarity of its known and unknown sides. There is one head per group of discourse
types and a general head; a problem goes to its group's head, to the ensemble of all heads when
its types span groups, or to the general head when it has a type training never showed (see
`routing`). The groups are the `groups` parameter's or, by default, derived from the training
split's types (`routing.derive_groups`) and kept in the checkpoint. Each head, and the ensemble,
has an abstain band fitted on open-set validation problems (authors disjoint from training).

Calibration departs from the paper: it grid-searched one threshold per model for the best `overall` on its own
open-set held-out split (0.697, 0.67 and 0.56 for its two sub-models and the general one); here each model gets an
abstain band (a plain threshold among them) on the validation problems of held-out authors, with the classes weighed
alike (`Calibration.balance_classes`): those problems are mostly same-author (a different-author one needs both
authors held out), and an `overall` band fitted on them answered "same" to every test problem (issue 27).

Two more departures, for discourse types the heads cannot learn from a few training authors (issue 27; CMCC
cross-genre, 7 training authors, seed 0: AUC 0.52 with the paper's layers 2..6 of MiniLM, with or without the
whitening; 0.54 with layers 1-4 alone; 0.68 with both): the layers are by default the lower two thirds of the encoder
(`toolkit.layer_features.lower_layers`, 1-4 of all-MiniLM-L6-v2's 6; the paper used 2..12 of BERT-base), which hold
more of how a text is written than of what it says; and each head's text embeddings are whitened by the covariance
of one training author's texts (`whitening`, `_fit_whitening`; None scores them as the paper does).

Raw scores: a cosine c in [-1, 1] becomes (1 + c) / 2 in [0, 1] before calibration, a monotone map
that keeps the whole range (calibration clips to [0, 1]). The ensemble's raw score is the mean of
its members' calibrated answers, which all put their decision threshold at 0.5, calibrated again
with a band of its own. The bands are `toolkit.verifier`'s several-band case: the base owns the band settings
(from the `calibration` part), the fitted check, `predict`, `params` and the checkpoint's writing.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any, ClassVar

import numpy as np
import torch

from core.errors import HarnessError
from core.progress import duration
from core.records import VerificationData, VerificationProblem
from harness.params import build
from systems.siamese_bilstm.data import AuthorSplit, Corpus, author_pool, collect_corpus, split_validation
from systems.siamese_bilstm.loss import ModifiedContrastive
from systems.siamese_bilstm.model import BiLSTMHead, BiLSTMHeadConfig
from systems.siamese_bilstm.routing import (
    ENSEMBLE,
    GENERAL,
    PAN23_GROUPS,
    check_groups,
    derive_groups,
    normalise_type,
    route,
)
from systems.siamese_bilstm.sampler import AuthorBatchSampler, ChunkPairBatch, eligible_authors
from systems.siamese_bilstm.settings import Calibration
from systems.siamese_bilstm.settings import SiameseTraining as Training
from toolkit.calibration import HIGH_MIN, LOW_MAX, AbstainBand, class_balanced
from toolkit.checkpoint import CONFIG_NAME, load_checkpoint, runtime_params
from toolkit.devices import autocast, resolve_device
from toolkit.layer_features import LayerFeatures, LayerFeaturesConfig
from toolkit.legacy import LegacyParams
from toolkit.pretrained import identity_matches, model_folder_checksums
from toolkit.read_texts import folder_read_keys
from toolkit.style_space import within_author_whitening
from toolkit.training import train_epochs
from toolkit.verifier import CalibratedVerifier

logger = logging.getLogger("harness")

SCORINGS = ("mean_embedding", "chunk_pairs")
# A route's band is fitted on the calibration problems routed to it when it has this many of each
# class; otherwise on all calibration problems (a band fitted on a handful of scores is noise).
MIN_PER_CLASS = 5
# Checkpoints written before the parameters were grouped into parts held them flat, under these names.
_FLAT_RENAMES = {
    "encoder": "encoder.model",
    "layers": "encoder.layers",
    "max_tokens": "encoder.max_tokens",
    "stride": "encoder.stride",
    "max_chunks_per_text": "encoder.max_chunks_per_text",
    "hidden_size": "head.hidden_size",
    "positive_margin": "loss.positive_margin",
    "negative_margin": "loss.negative_margin",
    "epochs": "training.epochs",
    "batch_size": "training.batch_size",
    "lr": "training.lr",
    "steps_per_epoch": "training.steps_per_epoch",
    "validation_share": "calibration.validation_share",
    "objective": "calibration.objective",
    "grid_step": "calibration.grid_step",
}
# Checkpoints record in their state what training.batch_size counts; those without this entry were
# written when it counted authors (two chunks each), before it counted chunks as the paper does.
BATCH_UNIT = "chunks"


class SiameseBiLSTM(CalibratedVerifier):
    """BERT-BiLSTM Siamese verification system with discourse-type routing (see the module docstring).

    Parts (objects; `harness run --param encoder.max_tokens=64` sets one field of one):
        encoder: the frozen encoder and its features (`LayerFeaturesConfig`: model, layers,
            max_tokens, stride, max_chunks_per_text).
        head: the Bi-LSTM head (`BiLSTMHeadConfig`: hidden_size).
        loss: the loss of a batch (`ModifiedContrastive`: positive_margin, negative_margin).
        training: the schedule of each head (`Training`: epochs, batch_size in chunks, lr, steps_per_epoch).
        calibration: the abstain bands (`Calibration`: validation_share, objective, grid_step, balance_classes).
    Settings (JSON values):
        groups: {name: [discourse types]}, one head each; {} trains the general head only; None
            derives them from the training split's types (`routing.derive_groups`): the paper's
            written/oral groups for PAN 2023's four types, else one group per type.
        scoring: "mean_embedding" (cosine of mean chunk embeddings) or "chunk_pairs" (mean cosine
            over all known x unknown chunk pairs).
        whitening: the shrinkage of each head's within-author covariance normalisation (`_fit_whitening`;
            not in the paper); None scores the head's embeddings as they are, as the paper does.
    Run-time settings:
        device: "auto", "cpu" or "cuda"; mixed_precision: autocast on CUDA (ignored on CPU).
        cache_dir: where encoder features are cached (None: $HARNESS_CACHE_DIR/siamese_bilstm or
            ~/.cache/harness/siamese_bilstm).
        encode_batch_size: chunks per encoder forward pass.
    """

    name = "siamese_bilstm"
    # a band per route, set when all are fitted (`_calibrate`) or loaded; None: not fitted
    FITTED: ClassVar[tuple[str, ...]] = ("_bands",)
    PART_CHOICES: ClassVar[dict[str, tuple[type, ...]]] = {"loss": (ModifiedContrastive,)}
    # flat checkpoints (encoder a name or None, not a part) made today's
    # checkpoints written before the whitening are scored unwhitened, as they were
    LEGACY_PARAMS: ClassVar[LegacyParams] = LegacyParams(
        slot="encoder", renames=_FLAT_RENAMES, absent={"whitening": None}
    )

    # parts are frozen dataclasses: a shared default instance is safe (hence noqa B008)
    def __init__(
        self,
        encoder: LayerFeaturesConfig = LayerFeaturesConfig(),  # noqa: B008
        head: BiLSTMHeadConfig = BiLSTMHeadConfig(),  # noqa: B008
        loss: ModifiedContrastive = ModifiedContrastive(),  # noqa: B008
        training: Training = Training(),  # noqa: B008
        calibration: Calibration = Calibration(),  # noqa: B008
        groups: Mapping[str, Sequence[str]] | None = None,
        scoring: str = "mean_embedding",
        whitening: float | None = 0.1,
        device: str = "auto",
        mixed_precision: bool = True,
        cache_dir: str | None = None,
        encode_batch_size: int = 32,
    ) -> None:
        for slot, value, kinds in (
            ("encoder", encoder, (LayerFeaturesConfig,)),
            ("head", head, (BiLSTMHeadConfig,)),
            ("loss", loss, self.PART_CHOICES["loss"]),
            ("training", training, (Training,)),
            ("calibration", calibration, (Calibration,)),
        ):
            if not isinstance(value, kinds):
                names = " or ".join(kind.__name__ for kind in kinds)
                raise HarnessError(f"{slot} must be a {names} part, not {value!r} (harness.params.build makes one)")
        if whitening is not None and not whitening >= 0:
            raise HarnessError(f"whitening is a shrinkage >= 0 or None (off), not {whitening!r}")
        if scoring not in SCORINGS:
            raise HarnessError(f"scoring must be one of {', '.join(SCORINGS)}, not {scoring!r}")
        super().__init__(locals())
        try:
            self._explicit_groups = None if groups is None else check_groups(groups)
        except ValueError as exc:
            raise HarnessError(f"groups: {exc}") from None
        # the groups routing uses: the parameter's, or derived at fit; the paper's until then
        self._groups = self._explicit_groups if self._explicit_groups is not None else check_groups(PAN23_GROUPS)
        self._types: frozenset[str] | None = None  # types seen in training; None: not recorded (older checkpoint)
        self.groups = None if groups is None else {name: list(types) for name, types in groups.items()}
        self.mixed_precision = bool(mixed_precision)
        self.encode_batch_size = int(encode_batch_size)
        if self.encode_batch_size < 1:  # checked here, not where an empty feature cache first needs it (audit 22, F6)
            raise HarnessError(f"encode_batch_size must be at least 1, got {encode_batch_size!r}")
        # fitted state
        self._heads: dict[str, BiLSTMHead] = {}
        self._bands: dict[str, AbstainBand] | None = None
        self._layer_index: list[int] | None = None
        self._encoder_identity: str | None = None
        self._whitening: dict[str, tuple[np.ndarray, np.ndarray]] = {}  # head -> (mean, W) of its text embeddings
        self._info: dict[str, Any] = {}
        self._predict_info: dict[str, Any] = {}
        self._extractor: LayerFeatures | None = None
        self._device: str | None = None

    @property
    def grid_step(self) -> float:
        """The band search's step: the calibration part's."""
        return self.calibration.grid_step

    @property
    def objective(self) -> str:
        """What the bands maximise: the calibration part's."""
        return self.calibration.objective

    # -- the protocol ------------------------------------------------------------------------------

    def input_checksums(self) -> dict[str, str]:
        """The checksum of the encoder folder `encoder.model` names, where it names one (`model_folder_checksums`)."""
        return model_folder_checksums(self.encoder.model)

    def _fit(self, train: VerificationData, labels: np.ndarray, *, seed: int) -> None:
        """Train the general head and one head per group, then fit every route's abstain band."""
        self._bands = None
        timings: dict[str, float] = {}
        corpus = collect_corpus(train)
        self._types = frozenset(t for t in corpus.types if t)
        if self._explicit_groups is None:
            self._groups = derive_groups(self._types)
        else:
            self._groups = self._explicit_groups
        split = split_validation(corpus, self.calibration.validation_share, seed=seed)
        extractor = self.extractor()
        self.keep_texts_read([folder_read_keys(self.encoder.model)], train, self.encoder.model)
        with duration("siamese_bilstm features", timings):
            features = extractor.features(corpus.texts, desc="encoding training texts")
        layer_index = self.encoder.layer_indices(extractor.num_layers)
        rows, matrix = _stack(features, layer_index)
        device = self.torch_device()
        matrix_t = torch.from_numpy(matrix).to(device)

        self._heads, history = {}, {}
        with duration("siamese_bilstm training", timings):
            for offset, (name, types) in enumerate([(GENERAL, None), *self._groups.items()]):
                pool = author_pool(corpus, rows, split.train_authors, types)
                if len(eligible_authors(pool)) < 2:
                    logger.warning("%s: too few authors with two texts for the %r head; skipped", self.name, name)
                    continue
                head, epochs = self._train_head(pool, matrix_t, seed=seed + 1000 * offset, label=name)
                self._heads[name] = head
                history[name] = {
                    "authors": len(eligible_authors(pool)),
                    "epoch_loss": [record["loss"] for record in epochs],
                    "epoch_seconds": [record["seconds"] for record in epochs],
                }
        if GENERAL not in self._heads:
            raise HarnessError(
                f"{self.name}: the training split has fewer than 2 training authors with two or more texts; "
                "nothing to learn from"
            )
        self._layer_index = layer_index
        self._encoder_identity = extractor.identity
        self._whitening = {}
        if self.whitening is not None:
            self._whitening = self._fit_whitening(corpus, split, features)

        with duration("siamese_bilstm calibration", timings):
            calibration = self._calibrate(train, corpus, split, features)
        routing = {
            "groups_from": "training types" if self._explicit_groups is None else "groups parameter",
            "groups": {name: list(types) for name, types in self._groups.items()},
            "types": sorted(self._types),
            "without_head": [name for name in self._groups if name not in self._heads],
            "unseen_types_go_to": GENERAL,
        }
        logger.info(
            "%s: groups %s (from the %s); heads: %s",
            self.name,
            routing["groups"] or "none",
            routing["groups_from"],
            ", ".join(self._heads),
        )
        self._info = {
            "routing": routing,
            "texts": len(corpus.texts),
            "authors": corpus.num_authors,
            "named_authors": corpus.named,
            "train_authors": len(split.train_authors),
            "chunks": int(matrix.shape[0]),
            "history": history,
            "calibration": calibration,
            "feature_stats": dict(extractor.stats),
            "timings_s": timings,
        }

    def answer_values(self, problems: Sequence[VerificationProblem]) -> np.ndarray:
        """Calibrated answers in [0, 1], 0.5 exactly where the routed model abstains."""
        texts: dict[str, int] = {}
        for problem in problems:
            for text in problem.texts:
                texts.setdefault(text, len(texts))
        features = self.extractor().features(list(texts), desc="encoding texts")
        problem_texts = [tuple(texts[t] for t in p.texts) for p in problems]
        routes = [self._route(p.discourse_types) for p in problems]
        self._note_routes(problems, routes)
        return self._answers(features, problem_texts, routes)

    def _note_routes(self, problems: Sequence[VerificationProblem], routes: Sequence[str]) -> None:
        """`predict_info`: problems per route and the types training never showed; the latter also logged."""
        unseen: set[str] = set()
        if self._types is not None and self._groups:
            for problem in problems:
                unseen |= {normalise_type(t) for t in problem.discourse_types or ()} - self._types
        counts: dict[str, int] = {}
        for name in routes:
            counts[name] = counts.get(name, 0) + 1
        self._predict_info = {"routes": counts, "unseen_types": sorted(unseen)}
        if unseen:
            logger.info(
                "%s: discourse type(s) %s not seen in training; their problems go to the general model",
                self.name,
                ", ".join(sorted(unseen)),
            )

    def _state(self) -> tuple[dict[str, Any], dict[str, np.ndarray]]:
        """Encoder identity, routing, bands and fit summary in config.json; every head's weights as arrays."""
        arrays = {
            f"{name}.{key}": value.detach().cpu().numpy()
            for name, head in self._heads.items()
            for key, value in head.state_dict().items()
        }
        for name, (mean, whitening) in self._whitening.items():
            arrays[f"whitening/{name}/mean"], arrays[f"whitening/{name}/matrix"] = mean, whitening
        state = {
            "encoder_identity": self._encoder_identity,
            "layers": self._layer_index,
            "input_size": next(iter(self._heads.values())).input_size,
            "groups": {k: list(v) for k, v in self._groups.items()},
            "types": None if self._types is None else sorted(self._types),
            "heads": list(self._heads),
            **self.band_state(),
            "batch_size_counts": BATCH_UNIT,
            "info": self._info,
            "whitened_heads": sorted(self._whitening),
        }
        return state, arrays

    def band_state(self) -> dict[str, Any]:
        """The bands' entry of the checkpoint's state: "bands", route -> [p1, p2]."""
        assert self._bands is not None
        return {"bands": {name: [band.p1, band.p2] for name, band in self._bands.items()}}

    def restore_band(self, state: Mapping[str, Any], *, where: Path) -> None:
        """Set the bands from a checkpoint's state; a bad band is a HarnessError."""
        self._bands = {str(name): self._read_band(band, where=where) for name, band in state["bands"].items()}

    @classmethod
    def load(cls, directory: Path, *, runtime: Mapping[str, Any] | None = None) -> SiameseBiLSTM:
        """Read a checkpoint folder, also one written before the parameters became parts (flat names).

        Device, mixed precision and feature cache are this machine's (`runtime`, else the defaults:
        device "auto", the default cache folder), never the checkpoint's: its recorded values say only
        where it was trained (toolkit.checkpoint.RUNTIME_SETTINGS).
        """
        directory = Path(directory)
        config_path = directory / CONFIG_NAME
        params, state, arrays = load_checkpoint(directory, system=cls.name)
        params = cls.LEGACY_PARAMS.upgrade(params)
        if state.get("batch_size_counts") != BATCH_UNIT:
            # Written when batch_size counted authors per batch (two chunks each): an old batch_size B
            # is 2B chunks today, so the reloaded configuration means what it meant when it was trained.
            params = _authors_to_chunks(params)
        system = build(cls, runtime_params(params, runtime, where=config_path))
        try:
            expected = str(state["encoder_identity"])
            layers = [int(x) for x in state["layers"]]
            input_size = int(state["input_size"])
            names = [str(name) for name in state["heads"]]
            system.restore_band(state, where=config_path)
            system.restore_texts_read(state, arrays)
            # the groups it routed by (derived from its training types); older checkpoints stored the paper's
            # or null, and route by the groups parameter as they did
            if state.get("groups") is not None:
                system._groups = check_groups(state["groups"])
            types = state.get("types")  # absent in older checkpoints: no "unseen type -> general" rule
            if types is not None and not isinstance(types, list):
                raise TypeError(f"state types must be a list, got {type(types).__name__}")
            system._types = None if types is None else frozenset(normalise_type(str(t)) for t in types)
        except (KeyError, TypeError, ValueError, AttributeError) as error:
            raise HarnessError(f"{config_path}: malformed {cls.name} checkpoint ({error!r}); refit it") from None
        identity = system.extractor().identity
        if not identity_matches(expected, identity, where=directory):
            raise HarnessError(
                f"{directory}: the checkpoint's heads were trained on encoder features of another encoder "
                f"(checkpoint {expected[:12]}, found {identity[:12]} for {system.encoder.model!r})"
            )
        system._layer_index = layers
        system._encoder_identity = expected
        system._info = state.get("info", {})
        for name in state.get("whitened_heads", []):  # absent in checkpoints written before the whitening
            try:
                mean = np.asarray(arrays[f"whitening/{name}/mean"], dtype=np.float64)
                matrix = np.asarray(arrays[f"whitening/{name}/matrix"], dtype=np.float64)
            except KeyError:
                raise HarnessError(f"{directory}: the {name!r} head's whitening is missing; refit it") from None
            if name not in names or matrix.shape != (len(mean), len(mean)):
                raise HarnessError(f"{directory}: the {name!r} head's whitening does not fit its head; refit it")
            system._whitening[str(name)] = (mean, matrix)
        device = system.torch_device()
        for name in names:
            head = system.head.build(input_size)
            prefix = f"{name}."
            weights = {
                k[len(prefix) :]: torch.from_numpy(np.array(v)) for k, v in arrays.items() if k.startswith(prefix)
            }
            try:
                head.load_state_dict(weights, strict=True)
            except RuntimeError as error:  # missing or unexpected tensors, shapes other than the parameters give
                reason = " ".join(str(error).split())[:300]
                raise HarnessError(
                    f"{directory}: the {name!r} head's weights do not fit its parameters ({reason}); refit it"
                ) from None
            system._heads[name] = head.to(device).eval()
        return system

    # -- pieces ------------------------------------------------------------------------------------

    def torch_device(self) -> str:
        if self._device is None:
            self._device = resolve_device(self.device)
        return self._device

    def extractor(self) -> LayerFeatures:
        """The (lazily built) frozen-encoder feature extractor with its cache."""
        if self._extractor is None:
            self._extractor = self.encoder.build(
                device=self.torch_device(),
                mixed_precision=self.mixed_precision,
                batch_size=self.encode_batch_size,
                cache_dir=self.cache_dir,
            )
        return self._extractor

    @property
    def info(self) -> dict[str, Any]:
        """What fit saw and did: routing (groups, where they came from, types seen, groups left without a
        head), counts, per-epoch losses, calibration sets and bands, feature cache stats."""
        return self._info

    @property
    def predict_info(self) -> dict[str, Any]:
        """The last predict's routing: problems per route, and the types training never showed (-> general)."""
        return self._predict_info

    @property
    def routing_groups(self) -> dict[str, tuple[str, ...]]:
        """The groups routing uses now: the parameter's, derived from the training types, or the checkpoint's."""
        return dict(self._groups)

    def _route(self, discourse_types: Sequence[str] | None) -> str:
        name = route(discourse_types, self._groups, self._types)
        # a group whose head could not be trained (too few texts) is answered by the ensemble
        return name if name in self._heads else ENSEMBLE

    def _train_head(
        self, pool: list[list[np.ndarray]], matrix: torch.Tensor, *, seed: int, label: str
    ) -> tuple[BiLSTMHead, list[dict[str, float]]]:
        """One head trained on the authors of `pool`; also the training loop's per-epoch records."""
        device = self.torch_device()
        torch.manual_seed(seed)
        head = self.head.build(matrix.shape[-1]).to(device)
        optimiser = torch.optim.Adam(head.parameters(), lr=self.training.lr)
        sampler = AuthorBatchSampler(pool, self.training.batch_size, seed=seed)  # batch_size counts chunks
        chunks = sum(len(text) for author in sampler.eligible for text in pool[author])
        steps = self.training.steps(chunks, len(sampler.eligible))
        amp = self.mixed_precision and device.startswith("cuda")
        loss = self.loss.build(len(pool), 2 * self.head.hidden_size)  # embeddings: both directions' last states

        def batch_loss(batch: ChunkPairBatch) -> torch.Tensor:
            rows = torch.from_numpy(batch.rows).to(device)
            authors = torch.from_numpy(np.concatenate([batch.authors, batch.authors])).to(device)
            with autocast(device, amp):  # the head under autocast; the loss (cosines in float32) outside it
                anchors = head(matrix[rows[:, 0]])
                positives = head(matrix[rows[:, 1]])
            return loss(torch.cat([anchors, positives]), authors)

        epochs = train_epochs(
            network=head,
            optimizer=optimiser,
            epochs=self.training.epochs,
            # the sampler draws from its own generator, so drawing an epoch's batches up front changes nothing
            epoch_batches=lambda epoch: list(sampler.batches(steps)),
            batch_loss=batch_loss,
            device=device,
            mixed_precision=self.mixed_precision,
            label=f"{self.name} head {label!r}",
        )
        return head.eval(), epochs

    def _fit_whitening(
        self, corpus: Corpus, split: AuthorSplit, features: Sequence[np.ndarray]
    ) -> dict[str, tuple[np.ndarray, np.ndarray]]:
        """Per head: the mean and the within-author whitening of the training authors' text embeddings (all types).

        A head trained on a few authors maps two texts of one author in two genres apart; the covariance of one
        author's texts, estimated in closed form on the same training authors (never the validation ones, whose
        problems fit the bands), says in which directions, and the whitening makes them count little in the cosine
        (`toolkit.style_space.within_author_whitening`, the `wccn` systems' step)."""
        ids = [i for i, author in enumerate(corpus.authors) if author in split.train_authors]
        authors = np.array([corpus.authors[i] for i in ids])
        whitening = {}
        for name in self._heads:
            vectors = np.stack([chunks.mean(axis=0) for chunks in self._embed(name, [features[i] for i in ids])])
            mean = vectors.mean(axis=0)
            try:
                whitening[name] = (mean, within_author_whitening(vectors - mean, authors, self.whitening)[0])
            except HarnessError:  # no training author with two texts: this head is scored unwhitened
                logger.warning("%s: no training author has two texts; the %r head is not whitened", self.name, name)
        return whitening

    def _embed(self, name: str, features: Sequence[np.ndarray]) -> list[np.ndarray]:
        """Each text's chunk embeddings by head `name` (float64), whitened where the head has a whitening."""
        assert self._layer_index is not None
        rows, matrix = _stack(features, self._layer_index)
        device = self.torch_device()
        parts = []
        with torch.inference_mode(), autocast(device, self.mixed_precision):
            for start in range(0, matrix.shape[0], 4096):
                batch = torch.from_numpy(matrix[start : start + 4096]).to(device)
                parts.append(self._heads[name](batch).float().cpu().numpy())
        embedded = np.concatenate(parts).astype(np.float64) if parts else np.zeros((0, 0))
        if name in self._whitening:
            mean, whitening = self._whitening[name]
            embedded = (embedded - mean) @ whitening
        return [embedded[r] for r in rows]

    def _route_scores(
        self, features: Sequence[np.ndarray], problem_texts: Sequence[tuple[int, ...]]
    ) -> dict[str, np.ndarray]:
        """Raw scores of every head: (1 + cosine) / 2 of each problem's known side and unknown text."""
        used = sorted({i for ids in problem_texts for i in ids})
        position = {i: n for n, i in enumerate(used)}
        raw: dict[str, np.ndarray] = {}
        for name in self._heads:
            embedded = self._embed(name, [features[i] for i in used])
            scores = np.empty(len(problem_texts), dtype=np.float64)
            for p, ids in enumerate(problem_texts):
                known = np.concatenate([embedded[position[i]] for i in ids[:-1]])
                unknown = embedded[position[ids[-1]]]
                if self.scoring == "mean_embedding":
                    cosine = float(
                        _cosine(known.mean(axis=0, keepdims=True), unknown.mean(axis=0, keepdims=True))[0, 0]
                    )
                else:
                    cosine = float(_cosine(known, unknown).mean())
                scores[p] = (1.0 + cosine) / 2.0
            raw[name] = scores
        return raw

    def _ensemble_raw(self, raw: Mapping[str, np.ndarray], bands: Mapping[str, AbstainBand]) -> np.ndarray:
        """The ensemble's raw score: the mean of all heads' calibrated scores (each decides at 0.5), their order kept
        inside the bands (`_keep_order`)."""
        return np.mean([_keep_order(raw[name], bands[name]) for name in self._heads], axis=0)

    def _answers(
        self, features: Sequence[np.ndarray], problem_texts: Sequence[tuple[int, ...]], routes: Sequence[str]
    ) -> np.ndarray:
        assert self._bands is not None
        raw = self._route_scores(features, problem_texts)
        calibrated = {name: self._bands[name].apply(raw[name]) for name in self._heads}
        calibrated[ENSEMBLE] = self._bands[ENSEMBLE].apply(self._ensemble_raw(raw, self._bands))
        return np.array([calibrated[name][p] for p, name in enumerate(routes)], dtype=np.float64)

    def _calibrate(
        self, train: VerificationData, corpus: Corpus, split: AuthorSplit, features: Sequence[np.ndarray]
    ) -> dict[str, Any]:
        """Fit each head's band, then the ensemble's, on the validation problems (or training ones), for the
        `calibration` part's objective (`fit_band`: for `train`'s ranking where it is "task")."""
        problems, where = split.validation_problems, "validation"
        labels = np.array([corpus.labels[p] for p in problems], dtype=bool)
        if len(problems) < 2 * MIN_PER_CLASS or labels.all() or not labels.any():
            logger.warning(
                "%s: %d validation problems (%d same-author) are too few to calibrate on; "
                "calibrating on the training problems instead (in-sample: bands will be optimistic)",
                self.name,
                len(problems),
                int(labels.sum()),
            )
            problems, where = split.train_problems or list(range(len(corpus.labels))), "train"
            labels = np.array([corpus.labels[p] for p in problems], dtype=bool)
        problem_texts = [corpus.problem_texts[p] for p in problems]
        types = [[corpus.types[i] for i in ids] for ids in problem_texts]
        routes = [self._route(t if all(t) else None) for t in types]
        raw = self._route_scores(features, problem_texts)
        report: dict[str, Any] = {"on": where, "problems": len(problems), "same": int(labels.sum()), "bands": {}}
        bands: dict[str, AbstainBand] = {}

        def fit(name: str, scores: np.ndarray) -> None:
            mine = np.array([r == name for r in routes])
            enough = mine.any() and min(labels[mine].sum(), (~labels[mine]).sum()) >= MIN_PER_CLASS
            subset = mine if enough else np.ones(len(routes), dtype=bool)
            fitted_on, truth = scores[subset], labels[subset]
            if self.calibration.balance_classes:
                fitted_on, truth = class_balanced(fitted_on, truth)
            band = bands[name] = self.fit_band(train, fitted_on, truth)
            report["bands"][name] = {
                "p1": band.p1,
                "p2": band.p2,
                "fitted_on": int(subset.sum()),
                "own_route": bool(enough),
            }

        for name in self._heads:
            fit(name, raw[name])
        fit(ENSEMBLE, self._ensemble_raw(raw, bands))
        self._bands = bands
        return report


def _keep_order(scores: np.ndarray, band: AbstainBand) -> np.ndarray:
    """A head's band applied as its answers are, but inside the band from 0.49 to 0.51 in order instead of 0.5 flat.

    An ensemble member that abstains on most problems (a wide band) would otherwise hand the mean nothing but 0.5
    for them, and the ensemble could not rank what its members rank (issue 27: CMCC seed 0, 117 of 200 answers
    abstained, AUC 0.675 where the heads' own scores ranked better)."""
    answers = band.apply(scores)
    inside = (scores > band.p1) & (scores < band.p2)
    if band.p2 > band.p1:
        share = (np.clip(scores, band.p1, band.p2) - band.p1) / (band.p2 - band.p1)
        answers = np.where(inside, LOW_MAX + (HIGH_MIN - LOW_MAX) * share, answers)
    return answers


def _authors_to_chunks(params: Mapping[str, Any]) -> dict[str, Any]:
    """Parameters with an authors-per-batch `training.batch_size` B (dotted or in the part) made 2B chunks."""
    params = dict(params)
    if isinstance(params.get("training.batch_size"), int | float):
        params["training.batch_size"] = 2 * int(params["training.batch_size"])
    training = params.get("training")
    if isinstance(training, Mapping) and isinstance(training.get("batch_size"), int | float):
        params["training"] = {**training, "batch_size": 2 * int(training["batch_size"])}
    return params


def _stack(features: Sequence[np.ndarray], layers: Sequence[int]) -> tuple[list[np.ndarray], np.ndarray]:
    """One (chunks, len(layers), hidden) float32 matrix of all texts, and each text's rows in it."""
    sizes = [f.shape[0] for f in features]
    starts = np.concatenate([[0], np.cumsum(sizes)]).astype(np.int64)
    rows = [np.arange(starts[i], starts[i + 1]) for i in range(len(features))]
    if not features:
        return rows, np.zeros((0, len(layers), 0), dtype=np.float32)
    matrix = np.ascontiguousarray(np.concatenate([f[:, layers] for f in features]), dtype=np.float32)
    return rows, matrix


def _cosine(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    a = a / np.maximum(np.linalg.norm(a, axis=1, keepdims=True), 1e-12)
    b = b / np.maximum(np.linalg.norm(b, axis=1, keepdims=True), 1e-12)
    return a @ b.T
