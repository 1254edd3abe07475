"""How far more encoders a band fold can take `ngram_style` (issue 27): the repeats curve, on training pairs only.

`harness pretrain-style ... --band-folds K --band-repeats R` pre-trains R encoders a fold with other seeds, and
`ngram_style` scores a training pair by the mean of its fold's R standardised cosines. This reads such a folder and
its set's training split (never the test split) and gives, for each m = 1..R, the band pairs' AUC with every subset
of m repeats a fold averaged, the same band pairs and scales as the verifier (`band_folds.band_cosines`), and the
repeats' mean correlation rho within a fold and a class (the noises': the signal both share left out).

Why the curve bends: if each encoder's standardised cosine is one signal plus its own noise, the noises correlated
rho, a mean of m encoders keeps the signal and keeps (1 + (m - 1) rho) / m of the noise variance. Under a binormal
model (AUC = Phi(d' / sqrt 2)) that gives d'(m) = d'(1) sqrt(m / (1 + (m - 1) rho)), which tends to d'(1) / sqrt(rho)
as m grows: the column "bound" is that limit's AUC, what no number of seed repeats of these encoders can pass.

    python benchmarks/band_repeats.py --encoders OUT/encoder-seed0 --set WORK/sets/forum-seed0 --seed 0 [...]

`--encoders` and `--set` pair up in order, each with its `--seed` (the set's seed: it seeds the band rows as the
verifier does). Prints a markdown table, one row a folder.

`--frozen-view --posts POSTS` adds one encoder a fold that sees a post as a frozen transformer does (a screen, not a
harness option; benchmarks/README.md, "Other views a band fold"): encoder_wccn's vector of the post (the [CLS] of the
encoder's lower layers, averaged over chunks, L2 per layer, side by side; `--frozen-encoder`, by default the offline
all-MiniLM-L6-v2) in place of the n-gram basis, and on it the n-gram encoder's own pipeline unchanged (PCA to its
dimensions, centring, within-author whitening, the projection, its batches, loss and early stopping), pre-trained
on at most `--view-posts-per-author` posts an author (drawn with the seed) without the set's test side and the
fold's training authors. The table then also gives the band pairs' AUC of the other encoders' mean, with the view
added, and with a logistic weight on the two fitted on the other folds' band rows (out of fold).

`--sparse-view --posts POSTS` adds one encoder a fold that keeps every n-gram (a screen, not a harness option;
benchmarks/README.md, "Other views a band fold"): the fold's own TF-IDF vocabularies (those of its first encoder,
learnt on the fold's posts) with no SVD, and a linear map of the sparse vector to 256 dimensions in its place,
learnt with the n-gram encoder's batches, loss, held-out authors and early stopping, from the same posts (the set's
test side and the fold's training authors left out, at most 30 posts an author).

`--members` puts other kinds of system beside the encoders (a screen: benchmarks/README.md, "Other views a band
fold"): stacked's default members (cngdist, compressor, pair_features with 200 trees, tfidf, wccn), each fitted on
the training pairs of stacked's other folds (author-disjoint) and scoring its own fold's, as `stacked` makes its
meta-features. On the band pairs it gives each member's AUC alone, and the AUC of a logistic regression on [the
encoders' mean, the member(s)] with each band fold's rows scored by the model fitted on the other band folds' rows
(author-disjoint).
"""

from __future__ import annotations

import argparse
import itertools
import json
import statistics
from pathlib import Path
from typing import Any, NamedTuple

import numpy as np


def equicorrelated_auc(single_auc: float, rho: float, members: float) -> float:
    """The binormal AUC of a mean of `members` scores, each of AUC `single_auc`, whose noises correlate `rho`;
    `members=inf` gives the limit."""
    from scipy.stats import norm

    d_prime = np.sqrt(2) * norm.ppf(single_auc)
    shrink = 1 / rho if np.isinf(members) else members / (1 + (members - 1) * rho)
    return float(norm.cdf(d_prime * np.sqrt(shrink) / np.sqrt(2)))


def repeats_curve(standardised: np.ndarray, folds: np.ndarray, labels: np.ndarray) -> dict[str, Any]:
    """AUC of the band rows for every subset of m repeats (rows of `standardised`) averaged, m = 1..R; the repeats'
    mean correlation within a fold and a class; the equicorrelation model's AUC for m = R and its limit, from the single
    encoders' mean AUC."""
    from sklearn.metrics import roc_auc_score

    repeats = len(standardised)
    if repeats < 2:
        raise SystemExit("the curve needs two or more encoders a fold (--band-repeats 2 or more)")
    aucs = {
        m: [float(roc_auc_score(labels, standardised[list(subset)].mean(axis=0)))
            for subset in itertools.combinations(range(repeats), m)]
        for m in range(1, repeats + 1)
    }  # fmt: skip
    cells = [cell for k in np.unique(folds) for cell in ((folds == k) & labels, (folds == k) & ~labels)]
    pair_rho = {  # within a fold and a class: the noises' correlation, the shared signal left out
        (a, b): statistics.mean(
            float(np.corrcoef(standardised[a][cell], standardised[b][cell])[0, 1])
            for cell in cells
            if cell.sum() >= 3  # a correlation needs a few rows
        )
        for a, b in itertools.combinations(range(repeats), 2)
    }
    rho = statistics.mean(pair_rho.values())
    single = statistics.mean(aucs[1])
    return {
        "aucs": aucs,
        "pair_rho": pair_rho,
        "rho": rho,
        "model": equicorrelated_auc(single, rho, repeats),
        "bound": equicorrelated_auc(single, rho, float("inf")),
    }


class FrozenView(NamedTuple):
    """What `--frozen-view` pre-trains a fold (see the module docstring)."""

    name = "frozen"  # the added encoder's folder name in the curve; a class attribute, not a field
    posts: Path
    encoder: str | None  # a model name or folder; None: the offline all-MiniLM-L6-v2
    posts_per_author: int
    cache_dir: Path | None  # the feature cache (`toolkit.layer_features`); None: its default
    steps: int = 3000  # the n-gram encoder's default


class SparseView(NamedTuple):
    """What `--sparse-view` pre-trains a fold (see the module docstring)."""

    name = "sparse"  # as FrozenView.name
    posts: Path
    steps: int = 3000  # the n-gram encoder's default
    size: int = 256  # the n-gram encoder's embedding size
    lr: float = 1e-3
    init: float = 0.01  # the map's starting weights' sd


def fold_corpora(posts: Path, record: dict[str, Any], set_folder: Path, seed: int) -> list[tuple[Any, Any]]:
    """(exclusions, the posts left) of each fold of `record`: the set's test side and the fold's training authors
    left out (`band_folds.training_pair_folds`, the same folds as the folder's)."""
    import copy

    from systems.style_encoder.band_folds import training_pair_folds
    from systems.style_encoder.corpus import excluded_by_sets, pretraining_corpus

    parts, _ = training_pair_folds(set_folder, len(record["folds"]), seed=seed)
    if [sorted(pair_ids) for pair_ids, _ in parts] != [sorted(fold["pair_ids"]) for fold in record["folds"]]:
        raise SystemExit(f"{set_folder} with seed {seed} does not give the folder's band folds")
    test_side = excluded_by_sets([set_folder])
    corpora = []
    for _, fold_part in parts:
        exclusions = copy.deepcopy(test_side)
        exclusions.merge(fold_part)
        corpora.append((exclusions, pretraining_corpus(posts, exclusions)))
    return corpora


class SparseEncoder(NamedTuple):
    """TF-IDF rows (no SVD) times a learnt map: `embed` as the n-gram encoder's."""

    char: Any  # toolkit.tfidf.TfidfModel
    word: Any
    weight: np.ndarray  # (vocabulary, size)

    def embed(self, texts: list[str], *, desc: str | None = None) -> np.ndarray:
        from toolkit.style_space import tfidf_rows

        return np.asarray(tfidf_rows(self.char, self.word, texts) @ self.weight)


def train_sparse_encoder(view: SparseView, corpus: Any, vocabularies: Any, seed: int) -> tuple[SparseEncoder, dict]:
    """A sparse-view encoder learnt on `corpus` with the TF-IDF weightings of `vocabularies` (a `Basis`), and its
    held-out authors' pair AUC (start, kept, kept step)."""
    import torch

    from core.progress import Progress
    from systems.style_encoder.ngram import NgramStylePretraining, capped, held_out_pairs, hold_out_authors
    from systems.style_encoder.pretraining import PairSampler, pair_auc, symmetric_info_nce
    from toolkit.style_space import tfidf_rows

    settings = NgramStylePretraining(seed=seed, steps=view.steps, size=view.size)
    rng = np.random.default_rng(seed)
    torch.manual_seed(seed)
    corpus = capped(corpus, settings.posts_per_author, rng)
    offsets = np.concatenate([[0], np.cumsum([len(posts) for posts in corpus.texts])]).astype(np.int64)
    held_out, training = hold_out_authors(corpus, settings, rng)
    rows = tfidf_rows(vocabularies.char, vocabularies.word, [text for posts in corpus.texts for text in posts])
    rows = rows.tocsr()
    table = torch.nn.EmbeddingBag(rows.shape[1], settings.size, mode="sum", sparse=True)  # x @ W, x sparse
    torch.nn.init.normal_(table.weight, std=view.init)
    optimizer = torch.optim.SparseAdam(table.parameters(), lr=view.lr)
    sampler = PairSampler(corpus, training, settings.sampling(), settings.seed + 1)
    held_rows, same_community = held_out_pairs(corpus, held_out, offsets, settings)

    def embed(picked: list[int]) -> Any:
        sub = rows[picked]
        inputs = [torch.from_numpy(sub.indices.astype(np.int64)), torch.from_numpy(sub.indptr[:-1].astype(np.int64))]
        vectors = table(*inputs, per_sample_weights=torch.from_numpy(sub.data.astype(np.float32)))
        return torch.nn.functional.normalize(vectors, dim=-1)

    def held_out_auc() -> float:
        with torch.no_grad():
            first, second = (embed([pair[k] for pair in held_rows]) for k in (0, 1))
            return pair_auc((first @ second.T).numpy(), same_community)

    best = (0, held_out_auc(), table.weight.detach().clone())
    start = best[1]
    with Progress(settings.steps, desc="sparse view pre-training", unit="steps") as bar:
        for step in range(1, settings.steps + 1):
            batch = sampler.batch()
            first = embed([offsets[a] + i for a, i, _ in batch])
            second = embed([offsets[a] + j for a, _, j in batch])
            loss = symmetric_info_nce(first @ second.T / settings.temperature)
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
            bar.update(1)
            if step % settings.eval_every and step != settings.steps:
                continue
            auc = held_out_auc()
            if auc > best[1]:
                best = (step, auc, table.weight.detach().clone())
            elif (step - best[0]) // settings.eval_every >= settings.patience:
                break
    encoder = SparseEncoder(vocabularies.char, vocabularies.word, best[2].numpy().astype(np.float64))
    return encoder, {"start": start, "kept": best[1], "kept_step": best[0], "posts": len(rows.indptr) - 1}


def sparse_view_encoders(
    view: SparseView, record: dict[str, Any], set_folder: Path, seed: int, vocabularies: list[Any]
) -> list[Any]:
    """One sparse-view encoder a fold of `record`, fold k with `vocabularies[k]` (its first encoder's basis)."""
    models = []
    for (_, corpus), basis in zip(fold_corpora(view.posts, record, set_folder, seed), vocabularies, strict=True):
        model, auc = train_sparse_encoder(view, corpus, basis, seed)
        print(f"sparse view: {auc['posts']} posts of {len(corpus.authors)} authors; held-out authors' pair AUC "
              f"{auc['start']:.3f} at the start, {auc['kept']:.3f} at step {auc['kept_step']}")  # fmt: skip
        models.append(model)
    return models


def frozen_view_encoders(view: FrozenView, record: dict[str, Any], set_folder: Path, seed: int) -> list[Any]:
    """One frozen-view encoder a fold of `record`, each pre-trained without the set's test side and its fold's
    training authors (`fold_corpora`)."""
    from unittest import mock

    import systems.style_encoder.ngram as ngram
    from systems.style_encoder.corpus import Exclusions, PretrainingCorpus, pretraining_corpus
    from toolkit.layer_features import LayerFeatures, lower_layers, text_vector

    extractor = LayerFeatures(view.encoder, max_chunks=32, device="cpu", mixed_precision=False,
                              cache_dir=view.cache_dir)  # fmt: skip
    vectors: dict[str, np.ndarray] = {}

    def vectors_of(texts: list[str]) -> np.ndarray:
        missing = [text for text in dict.fromkeys(texts) if text not in vectors]
        arrays = extractor.features(missing, desc="frozen view: encoding posts") if missing else []
        for text, array in zip(missing, arrays, strict=True):  # float32: the forum's 128,514 texts in about 800 MB
            vectors[text] = text_vector(array, lower_layers(array.shape[1] - 1)).astype(np.float32)
        return np.stack([vectors[text] for text in texts]).astype(np.float64)

    class FrozenBasis:  # in place of the n-gram basis: a PCA of the frozen vectors of the basis sample
        def __init__(self, texts: list[str], dimensions: int, **_: Any) -> None:
            x = vectors_of(texts)
            self.mean = x.mean(axis=0)
            self.components = np.linalg.svd(x - self.mean, full_matrices=False)[2][:dimensions]

        def reduce(self, texts: list[str], desc: str | None = None) -> np.ndarray:
            return (vectors_of(texts) - self.mean) @ self.components.T

    folds = fold_corpora(view.posts, record, set_folder, seed)
    everyone = pretraining_corpus(view.posts, Exclusions())
    rng = np.random.default_rng(seed)
    sample = {posts[i] for posts in everyone.texts
              for i in rng.choice(len(posts), min(view.posts_per_author, len(posts)), replace=False)}  # fmt: skip
    models = []
    for fold, (exclusions, corpus) in zip(record["folds"], folds, strict=True):
        kept: dict[str, list[Any]] = {"authors": [], "texts": [], "kinds": [], "threads": [], "communities": []}
        columns_of = zip(corpus.texts, corpus.kinds, corpus.threads, corpus.communities, strict=True)
        for author, columns in zip(corpus.authors, columns_of, strict=True):
            rows = [i for i, text in enumerate(columns[0]) if text in sample]
            if len(rows) >= 2:
                kept["authors"].append(author)
                for name, column in zip(("texts", "kinds", "threads", "communities"), columns, strict=True):
                    kept[name].append([column[i] for i in rows])
        sampled = PretrainingCorpus(**kept, source=corpus.source, left_out=corpus.left_out)
        settings = ngram.NgramStylePretraining(seed=seed, steps=view.steps)
        with mock.patch.object(ngram, "fit_basis", FrozenBasis):
            model, manifest = ngram.pretrain_ngram_style(sampled, exclusions, None, settings)
        auc = manifest["held_out_pair_auc"]
        print(f"frozen view, fold of {len(fold['pair_ids'])} pairs: {sampled.posts} posts of "
              f"{len(sampled.authors)} authors; held-out authors' pair AUC {auc['whitened']:.3f} whitened, "
              f"{auc['kept']:.3f} at step {auc['kept_step']}")  # fmt: skip
        models.append(model)
    return models


def out_of_fold_logistic_auc(x: np.ndarray, folds: np.ndarray, labels: np.ndarray) -> float:
    """AUC of a logistic regression on the columns of `x`, each fold's rows scored by the model fitted on the other
    folds' rows."""
    from sklearn.linear_model import LogisticRegression
    from sklearn.metrics import roc_auc_score

    scores = np.zeros(len(labels))
    for k in np.unique(folds):
        model = LogisticRegression(max_iter=1000).fit(x[folds != k], labels[folds != k])
        scores[folds == k] = model.decision_function(x[folds == k])
    return float(roc_auc_score(labels, scores))


def weighted_view_auc(standardised: np.ndarray, folds: np.ndarray, labels: np.ndarray) -> float:
    """Band pairs' AUC of a logistic weight on [the other encoders' mean, the last encoder], out of fold."""
    return out_of_fold_logistic_auc(np.column_stack([standardised[:-1].mean(axis=0), standardised[-1]]), folds, labels)


def members_screen(meta: np.ndarray, names: list[str], labels: np.ndarray, band: Any) -> dict[str, Any]:
    """The band pairs' AUC of the encoders' mean beside other systems' out-of-fold scores of every training pair
    (`meta`, a column a system named in `names`): each system alone, and a logistic regression on [the mean, the
    system] and on [the mean, every system], out of fold over the band folds (the module docstring, `--members`)."""
    from sklearn.metrics import roc_auc_score

    scale = meta.std(axis=0)
    scale[scale == 0] = 1.0  # a member that scores every pair alike stays a column of zeros
    members = (meta[band.rows] - meta.mean(axis=0)) / scale
    y, encoders = labels[band.rows], band.standardised.mean(axis=0)
    screen: dict[str, Any] = {"encoders": float(roc_auc_score(y, encoders)), "alone": {}, "with": {}}
    for j, name in enumerate(names):
        screen["alone"][name] = float(roc_auc_score(y, members[:, j]))
        screen["with"][name] = out_of_fold_logistic_auc(np.column_stack([encoders, members[:, j]]), band.folds, y)
    screen["with_all"] = out_of_fold_logistic_auc(np.column_stack([encoders, members]), band.folds, y)
    return screen


def folder_curve(
    encoders: Path,
    set_folder: Path,
    seed: int,
    view: FrozenView | SparseView | None = None,
    members: bool = False,
) -> dict[str, Any]:
    """The curve of one band-fold encoder folder on its set's training split (with `view`: one frozen-view or
    sparse-view encoder added to each fold; with `members`: stacked's members beside the encoders)."""
    from sklearn.metrics import roc_auc_score

    from harness.runner import make_task
    from systems.style_encoder.ngram import load_ngram_style
    from toolkit.band_folds import band_cosines, fold_folders, read_folds
    from toolkit.calibration import training_labels
    from toolkit.style_space import cosine_scores, distinct_texts

    record = read_folds(encoders)
    if record is None:
        raise SystemExit(f"{encoders}: no band folds (pre-train with --band-folds K --band-repeats R)")
    train = make_task("pan23", {}).load_split(set_folder / "train", "train")
    labels = training_labels(train)
    models = [[load_ngram_style(encoders / name)[0] for name in fold_folders(fold)] for fold in record["folds"]]
    if view is not None:
        if isinstance(view, SparseView):  # fold k's own TF-IDF vocabularies: its first encoder's
            added = sparse_view_encoders(view, record, set_folder, seed, [fold[0].space.basis for fold in models])
        else:
            added = frozen_view_encoders(view, record, set_folder, seed)
        for fold_models, model in zip(models, added, strict=True):
            fold_models.append(model)
        record = json.loads(json.dumps(record))
        for fold in record["folds"]:
            fold["folders"] = [*fold_folders(fold), view.name]

    def cosines(problems: Any, k: int, r: int) -> np.ndarray:
        texts = distinct_texts(problems)
        return cosine_scores(problems, texts, models[k][r].embed(texts))

    band = band_cosines(train.problems, labels, record, cosines, seed=seed, where=encoders)
    # each encoder of a fold by its folder's ending: "1", "2", ... the seed repeats, "char", "char-2" ... the views
    names = [name.removeprefix("band-fold-1").lstrip("-") or "1" for name in fold_folders(record["folds"][0])]
    if view is not None:  # the added encoder, last in each fold
        names[-1] = f"{view.name} view"
    curve = repeats_curve(band.standardised, band.folds, labels[band.rows])
    if view is not None:
        y, z = labels[band.rows], band.standardised
        curve["view"] = {
            "name": names[-1],
            "others": float(roc_auc_score(y, z[:-1].mean(axis=0))),
            "with_view": float(roc_auc_score(y, z.mean(axis=0))),
            "weighted": weighted_view_auc(z, band.folds, y),
        }
    if members:
        from systems.stacked import StackedEnsemble

        stacked = StackedEnsemble()
        stacked.fit(train, seed=seed)  # its meta-features: each member's out-of-fold score of every training pair
        assert stacked.meta_features is not None
        curve["members"] = members_screen(stacked.meta_features, list(stacked.members), labels, band)
    return curve | {"rows": len(band.rows), "encoders": names}


def table(rows: list[tuple[Path, dict[str, Any]]]) -> str:
    repeats = max(len(curve["aucs"]) for _, curve in rows)
    head = [f"{m} a fold" for m in range(1, repeats + 1)]
    lines = [
        "| encoders | band rows | " + " | ".join(head) + " | rho | model at R | bound (R -> inf) |",
        "|---|---:|" + "---:|" * (repeats + 3),
    ]
    for folder, curve in rows:
        cells = []
        for m in range(1, repeats + 1):
            values = curve["aucs"].get(m, [])
            cells.append(" / ".join(f"{value:.3f}" for value in values) if values else "")
        lines.append(
            f"| {folder} | {curve['rows']} | " + " | ".join(cells)
            + f" | {curve['rho']:.2f} | {curve['model']:.3f} | {curve['bound']:.3f} |"
        )  # fmt: skip
    lines.append("")
    lines.append("Band pairs' AUC (training split, out of sample); a cell lists every subset of that many repeats.")
    lines += ["", "| encoders | each encoder's AUC | noise rho of each two |", "|---|---|---|"]
    for folder, curve in rows:
        names = curve["encoders"]
        singles = ", ".join(f"{name} {auc:.3f}" for name, auc in zip(names, curve["aucs"][1], strict=True))
        pairs = ", ".join(f"{names[a]}-{names[b]} {rho:.2f}" for (a, b), rho in curve["pair_rho"].items())
        lines.append(f"| {folder} | {singles} | {pairs} |")
    for folder, curve in rows:
        if "view" in curve:
            view = curve["view"]
            lines += ["", f"{folder}, {view['name']}: the other encoders' mean {view['others']:.4f}, with the view "
                      f"added {view['with_view']:.4f}, with a weight fitted out of fold "
                      f"{view['weighted']:.4f}"]  # fmt: skip
    screened = [(folder, curve["members"]) for folder, curve in rows if "members" in curve]
    if screened:
        names = list(screened[0][1]["alone"])
        lines += ["", "| encoders | their mean | " + " | ".join(f"{name} alone / with" for name in names)
                  + " | with all |", "|---|---:|" + "---:|" * (len(names) + 1)]  # fmt: skip
        for folder, screen in screened:
            cells = [f"{screen['alone'][name]:.4f} / {screen['with'][name]:.4f}" for name in names]
            lines.append(f"| {folder} | {screen['encoders']:.4f} | " + " | ".join(cells)
                         + f" | {screen['with_all']:.4f} |")  # fmt: skip
        lines.append("Band pairs' AUC; with: a logistic regression on the encoders' mean and member(s), out of fold.")
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> str:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--encoders", type=Path, nargs="+", required=True)
    parser.add_argument("--set", type=Path, nargs="+", required=True, dest="sets")
    parser.add_argument("--seed", type=int, nargs="+", required=True, dest="seeds")
    parser.add_argument("--json", type=Path, help="also write the curves here")
    parser.add_argument("--frozen-view", action="store_true", help="add a frozen-transformer encoder to each fold")
    parser.add_argument("--sparse-view", action="store_true", help="add a sparse TF-IDF encoder to each fold")
    parser.add_argument("--posts", type=Path, help="with --frozen-view or --sparse-view: the posts to pre-train on")
    parser.add_argument("--frozen-encoder", help="with --frozen-view: a model name or folder (default: MiniLM)")
    parser.add_argument("--view-posts-per-author", type=int, default=15)
    parser.add_argument("--cache-dir", type=Path, help="with --frozen-view: the feature cache")
    parser.add_argument("--members", action="store_true", help="put stacked's default members beside the encoders")
    args = parser.parse_args(argv)
    if not len(args.encoders) == len(args.sets) == len(args.seeds):
        parser.error("give as many --set and --seed values as --encoders folders")
    if args.frozen_view and args.sparse_view:
        parser.error("give one of --frozen-view and --sparse-view")
    if (args.frozen_view or args.sparse_view) and args.posts is None:
        parser.error("--frozen-view and --sparse-view need --posts (what their encoders are pre-trained on)")
    view: FrozenView | SparseView | None = SparseView(args.posts) if args.sparse_view else None
    if args.frozen_view:
        view = FrozenView(args.posts, args.frozen_encoder, args.view_posts_per_author, args.cache_dir)
    rows = [(folder, folder_curve(folder, set_folder, seed, view, args.members))
            for folder, set_folder, seed in zip(args.encoders, args.sets, args.seeds, strict=True)]  # fmt: skip
    if args.json is not None:
        curves = {str(folder): curve | {"pair_rho": list(curve["pair_rho"].values())} for folder, curve in rows}
        args.json.write_text(json.dumps(curves, indent=1), encoding="utf-8")
    text = table(rows)
    print(text, end="")
    return text


if __name__ == "__main__":
    main()
