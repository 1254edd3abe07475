"""An n-gram style encoder: the wccn style space with a projection learnt authorship-contrastively, CPU-sized.

The transformer style encoder (`pretraining.py`) needs a GPU to learn anything from the forum posts; this one learns
from the same posts in minutes on a laptop CPU:
1. a text becomes the `toolkit.style_space` vector: character 1-4-gram and word TF-IDF -> SVD (`dimensions`, learnt
   from `basis_texts` posts drawn with the seed) -> centred -> whitened by the within-author covariance of the
   training authors' posts (WCCN);
2. a projection, linear plus a one-hidden-layer GELU network beside it, maps that vector to the embedding, trained
   with the transformer encoder's batches (two posts of each of `authors_per_batch` authors of one community, from
   different threads, a submission and a comment for `cross_kind_share` of those who have both) and its loss
   (symmetric InfoNCE over the batch's cosines at `temperature`). WCCN is the closed-form linear answer to "posts of
   one author close"; the projection learns the non-linear rest the contrastive loss rewards.
3. Early stopping as the transformer encoder does it: held-out authors' pair AUC (different authors of one community)
   every `eval_every` steps; the best step's weights are kept, and training stops after `patience` evaluations
   without a gain. `held_out_authors` are held out, but at most a fifth of the authors (none where that is under 2:
   then every step is trained and the last kept).

Each author gives at most `posts_per_author` posts (drawn with the seed), so a few prolific authors do not make the
whitening theirs. Nothing here needs a GPU: a forward pass is three matrix products (`NgramStyleModel.embed`, numpy),
and training is a small network on cached vectors.
"""

from __future__ import annotations

import json
import logging
import math
import time
from collections.abc import Sequence
from dataclasses import asdict, dataclass, replace
from pathlib import Path
from typing import Any, NamedTuple

import numpy as np

from core.errors import HarnessError
from core.files import give_open_permissions, refuse_used_folder, sha256_files, staged_folder
from core.progress import Progress
from systems.style_encoder.corpus import Exclusions, PretrainingCorpus
from systems.style_encoder.pretraining import PairSampler, StylePretraining, pair_auc, symmetric_info_nce
from toolkit.band_folds import FOLDS_FILE, fold_folders
from toolkit.read_texts import READ_KEYS, text_keys
from toolkit.style_space import Basis, StyleSpace, fit_basis, within_author_whitening

logger = logging.getLogger("harness")

MODEL_CONFIG = "ngram_style.json"  # vocabularies, settings, manifest
MODEL_WEIGHTS = "ngram_style.safetensors"  # idf, SVD basis, mean, whitening, projection
PROJECTION = ("linear", "hidden_weight", "hidden_bias", "output_weight", "output_bias")


@dataclass(frozen=True)
class NgramStylePretraining:
    """The settings of one n-gram style pre-training; see the module docstring."""

    dimensions: int = 300
    char_features: int = 100_000
    word_features: int = 30_000
    shrinkage: float = 0.1
    basis_texts: int = 60_000
    posts_per_author: int = 30
    hidden: int = 1024
    size: int = 256
    dropout: float = 0.1
    steps: int = 3000
    eval_every: int = 250
    patience: int = 4
    authors_per_batch: int = 256
    lr: float = 1e-3
    weight_decay: float = 0.01
    temperature: float = 0.05
    cross_kind_share: float = 0.5
    match_community: bool = True
    held_out_authors: int = 300
    seed: int = 0

    def __post_init__(self) -> None:
        positive = ("dimensions", "char_features", "word_features", "basis_texts", "hidden", "size", "steps")
        for name in (*positive, "eval_every", "patience"):
            if getattr(self, name) < 1:
                raise HarnessError(f"{name} must be >= 1, got {getattr(self, name)}")
        if self.posts_per_author < 2 or self.authors_per_batch < 2:
            raise HarnessError("posts_per_author and authors_per_batch must be >= 2")
        if (
            not 0 <= self.dropout < 1
            or not self.temperature > 0
            or not self.shrinkage >= 0
            or not 0 < self.lr < math.inf
        ):
            raise HarnessError("dropout must be in [0, 1), temperature > 0, lr finite and > 0, shrinkage >= 0")
        if not 0 <= self.cross_kind_share <= 1 or self.held_out_authors < 0:
            raise HarnessError("cross_kind_share must be in [0, 1] and held_out_authors >= 0")

    def sampling(self) -> StylePretraining:
        """The transformer encoder's settings that its batch sampler reads, set to these."""
        return StylePretraining(
            authors_per_batch=self.authors_per_batch,
            cross_kind_share=self.cross_kind_share,
            match_community=self.match_community,
        )


# other views of a text for band fold encoders (`--band-view`): settings over the main encoder's. The style space
# takes both vectorisers, so a view keeps one feature of the other (its most frequent term) rather than none.
VIEWS = {
    "char": {"word_features": 1},  # character 1-4-grams only
    "word": {"char_features": 1},  # words only
}


def ngram_settings(**overrides: Any) -> NgramStylePretraining:
    """The defaults with `overrides` (those not None) on top."""
    return replace(NgramStylePretraining(), **{key: value for key, value in overrides.items() if value is not None})


def learn_from_task(
    corpus: PretrainingCorpus, what: str, *, seed: int, **settings: Any
) -> tuple[NgramStyleModel, dict[str, Any]]:
    """Learn an encoder from a task's own training data (a system with no pre-trained model): `settings` on top of
    the defaults, the SVD no larger than the texts allow, and the batches no larger than the authors not held out.
    Pre-training holds out a fifth of the authors for early stopping (a projection learnt from a few hundred authors
    is overfitted long before 3,000 steps); the rest fill the batches. `what` names the authors in the error where
    fewer than 3 are left."""
    if len(corpus.authors) < 3:
        raise HarnessError(
            f"{len(corpus.authors)} {what} with two or more training texts; need 3 (or give --param model=FOLDER, "
            "an encoder pre-trained with `harness pretrain-style --encoder ngram`)"
        )
    authors = len(corpus.authors)
    chosen = ngram_settings(**settings, seed=seed, authors_per_batch=min(256, authors - authors // 5))
    chosen = replace(chosen, dimensions=min(chosen.dimensions, corpus.posts - 1))
    model, manifest = pretrain_ngram_style(corpus, None, None, chosen)
    return model._replace(read=None), manifest  # it read the training data, which a run may well answer about


def gelu(x: np.ndarray) -> np.ndarray:
    """GELU as torch computes it by default (the exact, erf form)."""
    from scipy.special import erf

    return 0.5 * x * (1.0 + erf(x / np.sqrt(2.0)))


class NgramStyleModel(NamedTuple):
    """A trained n-gram style encoder: the whitened style space and the projection on top.

    A model pre-trained on posts keeps which texts it read (`read`: `toolkit.read_texts`), so that a system answering
    with it refuses to answer about them.
    """

    space: StyleSpace
    projection: dict[str, np.ndarray]  # PROJECTION's arrays
    read: np.ndarray | None = None  # sorted uint64 text keys; None: learnt from a task's own training data

    def project(self, whitened: np.ndarray) -> np.ndarray:
        p = self.projection
        hidden = gelu(whitened @ p["hidden_weight"] + p["hidden_bias"])
        return whitened @ p["linear"] + hidden @ p["output_weight"] + p["output_bias"]

    def embed(self, texts: list[str], *, desc: str | None = None) -> np.ndarray:
        """One embedding per text (rows, not normalised: the verifier compares by cosine)."""
        return self.project(self.space.embed(texts, desc=desc))

    def state(self) -> tuple[dict[str, Any], dict[str, np.ndarray]]:
        """(JSON state, arrays), as a checkpoint keeps them."""
        state, arrays = self.space.state()
        read = {} if self.read is None else {READ_KEYS: self.read}
        return state, arrays | {f"projection.{name}": self.projection[name] for name in PROJECTION} | read

    @classmethod
    def from_state(cls, state: dict[str, Any], arrays: dict[str, np.ndarray], *, where: Path) -> NgramStyleModel:
        """Read back what `state` gave; missing or mis-shaped arrays are a HarnessError naming `where`."""
        space = StyleSpace.from_state(
            state, arrays, char_features=len(state["char_vocabulary"]), word_features=len(state["word_vocabulary"]),
            where=where,
        )  # fmt: skip
        missing = [name for name in PROJECTION if f"projection.{name}" not in arrays]
        if missing:
            raise HarnessError(f"{where}: no projection array {', '.join(missing)}")
        projection = {name: np.asarray(arrays[f"projection.{name}"], dtype=np.float64) for name in PROJECTION}
        d = len(space.mean)
        hidden, size = projection["hidden_bias"].shape[0], projection["output_bias"].shape[0]
        expected = {"linear": (d, size), "hidden_weight": (d, hidden), "output_weight": (hidden, size)}
        if any(projection[name].shape != shape for name, shape in expected.items()):
            raise HarnessError(f"{where}: the projection's shapes do not fit a {d}-dimensional style space")
        read = arrays.get(READ_KEYS)  # absent from models written before 2026-12-01: those are not checked
        return cls(space, projection, None if read is None else np.asarray(read, dtype=np.uint64))


def load_ngram_style(folder: Path) -> tuple[NgramStyleModel, dict[str, Any]]:
    """The model `harness pretrain-style --encoder ngram` wrote to `folder`, and its manifest."""
    from safetensors.numpy import load_file

    folder = Path(folder).expanduser()
    config_path, weights_path = _model_files(folder)
    try:
        config = json.loads(config_path.read_text(encoding="utf-8"))
        arrays = load_file(str(weights_path))
    except Exception as error:  # noqa: BLE001 - JSON and safetensors raise their own kinds
        raise HarnessError(f"{folder}: cannot read the n-gram style model ({' '.join(str(error).split())})") from None
    if not isinstance(config, dict) or "state" not in config:
        raise HarnessError(f"{config_path}: no 'state'; not an n-gram style model")
    return NgramStyleModel.from_state(config["state"], arrays, where=folder), config.get("manifest", {})


def model_checksums(model: str | None) -> dict[str, str]:
    """`{"model": checksum}` of every file of the folder `model=DIR` names (with its band fold encoders), {} without
    one: a system's `input_checksums` (`harness.system`), so a model pre-trained again into its folder is another
    input."""
    if model is None:
        return {}
    folder = Path(model).expanduser()
    _model_files(folder)
    return {"model": sha256_files([path for path in folder.rglob("*") if path.is_file()], root=folder)}


def _model_files(folder: Path) -> tuple[Path, Path]:
    """The model folder's config and weights files; a missing one is a HarnessError naming it."""
    paths = folder / MODEL_CONFIG, folder / MODEL_WEIGHTS
    for path in paths:
        if not path.is_file():
            raise HarnessError(f"{path}: not found; name a folder written by `harness pretrain-style --encoder ngram`")
    return paths


def manifest_summary(manifest: dict[str, Any]) -> dict[str, Any]:
    """What a pre-training's manifest says of where the encoder came from, without its per-step history."""
    auc = dict(manifest.get("held_out_pair_auc") or {})
    auc.pop("history", None)
    keys = ("corpus", "training_authors", "held_out_authors", "steps_done", "seconds", "excluded")
    return {key: manifest.get(key) for key in keys} | {"held_out_pair_auc": auc}


def capped(corpus: PretrainingCorpus, cap: int, rng: np.random.Generator) -> PretrainingCorpus:
    """At most `cap` posts of each author, drawn with `rng`, in their original order."""
    keep = [sorted(rng.choice(len(texts), min(cap, len(texts)), replace=False)) for texts in corpus.texts]

    def pick(columns: list[list[str]]) -> list[list[str]]:
        return [[column[i] for i in kept] for column, kept in zip(columns, keep, strict=True)]

    return replace(
        corpus,
        texts=pick(corpus.texts),
        kinds=pick(corpus.kinds),
        threads=pick(corpus.threads),
        communities=pick(corpus.communities),
    )


def hold_out_authors(
    corpus: PretrainingCorpus, settings: NgramStylePretraining, rng: np.random.Generator
) -> tuple[list[int], list[int]]:
    """(held-out authors, training authors), drawn with `rng`: at most a fifth of the authors held out for early
    stopping, and none where that is under 2 (no AUC to stop on)."""
    order = rng.permutation(len(corpus.authors))
    held_out_count = min(settings.held_out_authors, len(corpus.authors) // 5)
    held_out_count = held_out_count if held_out_count >= 2 else 0
    held_out, training = sorted(order[:held_out_count].tolist()), sorted(order[held_out_count:].tolist())
    if len(training) < 2:
        raise HarnessError(f"{len(training)} training author(s) after holding out {held_out_count}; need 2")
    return held_out, training


def held_out_pairs(
    corpus: PretrainingCorpus, held_out: list[int], offsets: np.ndarray, settings: NgramStylePretraining
) -> tuple[list[tuple[int, int]], np.ndarray]:
    """Early stopping's pairs: two posts (rows of the flattened corpus, `offsets` an author's first) of each held-out
    author, from their main community, and which pairs of them are comparable (the two authors of one community)."""
    pairs = PairSampler(corpus, held_out, settings.sampling(), settings.seed + 2)
    communities = [pairs.main_community(author) for author in held_out]
    rows = [(offsets[a] + i, offsets[a] + j) for a, c in zip(held_out, communities, strict=True)
            for i, j in [pairs.two_posts(a, c)]]  # fmt: skip
    names = np.array([str(c) for c in communities])
    return rows, np.equal.outer(names, names)


def pretrain_ngram_style(
    corpus: PretrainingCorpus,
    exclusions: Exclusions | None,
    out_dir: Path | None,
    settings: NgramStylePretraining,
    band_folds: tuple[dict[str, Any], Sequence[tuple[NgramStyleModel, dict[str, Any]]]] | None = None,
) -> tuple[NgramStyleModel, dict[str, Any]]:
    """Learn the model on `corpus`; write it with its manifest to `out_dir` (which must not exist) where given,
    with the band folds' models where given (`write_ngram_style`)."""
    import torch

    if out_dir is not None:
        refuse_used_folder(out_dir)
    started = time.perf_counter()
    rng = np.random.default_rng(settings.seed)
    torch.manual_seed(settings.seed)
    corpus = capped(corpus, settings.posts_per_author, rng)
    texts = [text for posts in corpus.texts for text in posts]
    author_of = np.concatenate([np.full(len(posts), a) for a, posts in enumerate(corpus.texts)]).astype(np.int64)
    offsets = np.concatenate([[0], np.cumsum([len(posts) for posts in corpus.texts])]).astype(np.int64)

    held_out, training = hold_out_authors(corpus, settings, rng)

    # 1. the whitened style space: basis from a sample of the posts, mean and whitening from the training authors'
    sample = rng.choice(len(texts), min(settings.basis_texts, len(texts)), replace=False)
    basis: Basis = fit_basis(
        [texts[i] for i in sorted(sample)], dimensions=settings.dimensions, char_features=settings.char_features,
        word_features=settings.word_features, seed=settings.seed, label="ngram style pre-training",
    )  # fmt: skip
    reduced = basis.reduce(texts, desc="ngram style pre-training: reducing posts")
    trained_rows = np.isin(author_of, training)
    mean = reduced[trained_rows].mean(axis=0)
    whitening, _ = within_author_whitening(reduced[trained_rows] - mean, author_of[trained_rows], settings.shrinkage)
    space = StyleSpace(basis, mean, whitening)
    vectors = torch.tensor((reduced - mean) @ whitening, dtype=torch.float32)

    # 2. the projection, trained contrastively with early stopping on the held-out authors
    d = vectors.shape[1]
    network = projection_network(d, settings.hidden, settings.size, settings.dropout)
    optimizer = torch.optim.AdamW(network.parameters(), lr=settings.lr, weight_decay=settings.weight_decay)
    sampler = PairSampler(corpus, training, settings.sampling(), settings.seed + 1)
    held_rows, same_community = held_out_pairs(corpus, held_out, offsets, settings)

    def held_out_auc(embed: Any = None) -> float | None:
        """The held-out authors' pair AUC of `embed`'s cosines (None: the projection being trained)."""
        if len(held_rows) < 2:
            return None
        network.eval()
        with torch.no_grad():
            model = network if embed is None else embed
            first, second = (model(vectors[[pair[k] for pair in held_rows]]) for k in (0, 1))
            first, second = (torch.nn.functional.normalize(rows, dim=-1) for rows in (first, second))
            similarities = first @ second.T
        network.train()
        return pair_auc(similarities.numpy(), same_community)

    before = held_out_auc()  # the projection's random start; what whitening alone gives:
    whitened_auc = held_out_auc(torch.nn.Identity())
    logger.info("ngram style pre-training: held-out pair AUC of the whitened space %s", _fmt(whitened_auc))
    history: list[list[Any]] = [[0, before]]
    best_step, best_auc, best_weights = 0, before, _weights(network)
    losses: list[float] = []
    network.train()
    with Progress(settings.steps, desc="ngram style pre-training", unit="steps") as bar:
        for step in range(1, settings.steps + 1):
            batch = sampler.batch()
            first_rows = torch.tensor([offsets[a] + i for a, i, _ in batch])
            second_rows = torch.tensor([offsets[a] + j for a, _, j in batch])
            first = torch.nn.functional.normalize(network(vectors[first_rows]), dim=-1)
            second = torch.nn.functional.normalize(network(vectors[second_rows]), dim=-1)
            loss = symmetric_info_nce(first @ second.T / settings.temperature)
            optimizer.zero_grad(set_to_none=True)
            loss.backward()
            optimizer.step()
            losses.append(float(loss.detach()))
            bar.update(1)
            if step % settings.eval_every and step != settings.steps:
                continue
            auc = held_out_auc()
            history.append([step, auc])
            logger.info("ngram style pre-training: step %d, held-out authors' pair AUC %s", step, _fmt(auc))
            if auc is None or best_auc is None or auc > best_auc:
                best_step, best_auc, best_weights = step, auc, _weights(network)
            elif (step - best_step) // settings.eval_every >= settings.patience:
                logger.info("ngram style pre-training: no gain in %d evaluations; stopping", settings.patience)
                break
    model = NgramStyleModel(space, best_weights, text_keys(texts))
    manifest = {
        "format": "ngram-style-pretraining-v1",
        "settings": asdict(settings),
        # what the style space holds: fit_basis caps the settings at what the posts have (texts - 1, vocabulary)
        "style_space": {"dimensions": int(basis.components.shape[0]), "features": int(basis.components.shape[1])},
        "corpus": corpus.summary() | _checksum(corpus.source),
        "excluded": exclusions.summary() if exclusions is not None else None,
        "training_authors": len(training),
        "held_out_authors": len(held_out),
        "held_out_pair_auc": {"whitened": whitened_auc, "kept": best_auc, "kept_step": best_step, "history": history},
        "steps_done": len(losses),
        "seconds": round(time.perf_counter() - started, 1),
    }
    if out_dir is not None:
        manifest = write_pretrained(model, manifest, Path(out_dir), band_folds)
    return model, manifest


def write_pretrained(
    model: NgramStyleModel,
    manifest: dict[str, Any],
    out_dir: Path,
    band_folds: tuple[dict[str, Any], Sequence[tuple[NgramStyleModel, dict[str, Any]]]] | None = None,
) -> dict[str, Any]:
    """Write a pre-trained model (`write_ngram_style`) with its manifest told how to use it and, where there are band
    folds, what they hold; returns that manifest."""
    manifest = manifest | {"use": f"--param model={out_dir}"}
    if band_folds is not None:
        record, models = band_folds
        manifest["band_folds"] = {
            "set": record["set"],
            "grouping": record["grouping"],
            "repeats": record["repeats"],
            "views": record.get("views", []),
            "pairs": [len(fold["pair_ids"]) for fold in record["folds"]],
            "held_out_pair_auc": [fold_manifest["held_out_pair_auc"]["kept"] for _, fold_manifest in models],
        }
    write_ngram_style(model, manifest, out_dir, band_folds)
    return manifest


def write_ngram_style(
    model: NgramStyleModel,
    manifest: dict[str, Any],
    out_dir: Path,
    band_folds: tuple[dict[str, Any], Sequence[tuple[NgramStyleModel, dict[str, Any]]]] | None = None,
) -> None:
    """The model and its manifest into the new folder `out_dir`, whole or not at all; with `band_folds` (the folds'
    record and each fold's models and manifests, fold by fold and repeat by repeat, `systems.style_encoder.band_folds`)
    each fold encoder's in its own subfolder."""
    with staged_folder(Path(out_dir), new=True) as staging:  # new: long pre-trainings give time for one to appear
        _write_files(staging, model, manifest)
        if band_folds is not None:
            record, models = band_folds
            folders = [name for fold in record["folds"] for name in fold_folders(fold)]
            for name, (fold_model, fold_manifest) in zip(folders, models, strict=True):
                (staging / name).mkdir()
                _write_files(staging / name, fold_model, fold_manifest)
            (staging / FOLDS_FILE).write_text(json.dumps(record) + "\n", encoding="utf-8")


def _write_files(folder: Path, model: NgramStyleModel, manifest: dict[str, Any]) -> None:
    from safetensors.numpy import save_file

    state, arrays = model.state()
    save_file({name: np.ascontiguousarray(array) for name, array in arrays.items()}, str(folder / MODEL_WEIGHTS))
    config = {"format": "ngram-style-v1", "state": state, "manifest": manifest}
    (folder / MODEL_CONFIG).write_text(json.dumps(config) + "\n", encoding="utf-8")
    give_open_permissions(folder)  # safetensors writes its file private (0600)


def _weights(network: Any) -> dict[str, np.ndarray]:
    """The projection's arrays, laid out as `NgramStyleModel.project` multiplies them."""
    hidden, output = network.hidden[0], network.hidden[3]
    return {
        "linear": network.linear.weight.detach().numpy().T.astype(np.float64),
        "hidden_weight": hidden.weight.detach().numpy().T.astype(np.float64),
        "hidden_bias": hidden.bias.detach().numpy().astype(np.float64),
        "output_weight": output.weight.detach().numpy().T.astype(np.float64),
        "output_bias": output.bias.detach().numpy().astype(np.float64),
    }


def projection_network(d: int, hidden: int, size: int, dropout: float) -> Any:
    """The projection as a torch module: linear, plus a one-hidden-layer GELU network beside it."""
    import torch

    class Projection(torch.nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.linear = torch.nn.Linear(d, size, bias=False)
            self.hidden = torch.nn.Sequential(
                torch.nn.Linear(d, hidden), torch.nn.GELU(), torch.nn.Dropout(dropout), torch.nn.Linear(hidden, size)
            )

        def forward(self, x: Any) -> Any:
            return self.linear(x) + self.hidden(x)

    return Projection()


def recipe(settings: NgramStylePretraining, exclusions: Exclusions | None, posts_sha256: str | None) -> dict[str, Any]:
    """What makes two pre-trainings the same (their manifests' "settings", "excluded" and the posts' checksum,
    `posts_checksum`), as a manifest records it: an encoder of an earlier run with this recipe is the one this run
    would train."""
    wanted = {"settings": asdict(settings), "excluded": exclusions.summary() if exclusions is not None else None}
    return json.loads(json.dumps(wanted | {"posts": posts_sha256}))


def manifest_recipe(manifest: dict[str, Any]) -> dict[str, Any]:
    """The recipe a pre-training's manifest records (`recipe`)."""
    posts = manifest.get("corpus", {}).get("sha256")
    return {"settings": manifest.get("settings"), "excluded": manifest.get("excluded"), "posts": posts}


def posts_checksum(source: str) -> str | None:
    """The checksum a manifest records for the posts file `source` (None where it is no file)."""
    return _checksum(source).get("sha256")


def _checksum(source: str) -> dict[str, str]:
    """The posts file's checksum where the corpus came from one (not where it is a verifier's training problems)."""
    return {"sha256": sha256_files([Path(source)])} if Path(source).is_file() else {}


def _fmt(value: float | None) -> str:
    return "n/a" if value is None else f"{value:.4f}"
