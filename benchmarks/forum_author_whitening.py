"""Does wccn gain on the forum cross-kind set from many more authors? (issue 27, item 2; a measurement, not a system)

wccn's within-author covariance on a forum set comes from its 5,000 training pairs (about 1,600 authors with two
texts). The forum posts hold thousands more authors outside the set's test split. This script learns the style
space (`toolkit.style_space`) with them and scores the set's test problems, one variant a line:

- train: basis and whitening from the training texts (wccn's own recipe, the basis here also seeing the posts);
- posts: the whitening from the posts' authors alone;
- train+posts: from both;
- no whitening: the plain cosine in the same basis.

The posts are those of ../shared/data less every author, thread and post of the set's test split
(`systems.style_encoder.corpus`, as `harness pretrain-style --exclude-test-of` reads them), at most
`--per-author` posts an author; the basis is learnt from the training texts and `--basis-posts` of those posts.
The settings are fixed before looking (wccn's own with a background: 300 dimensions; shrinkage 0.1 and 0.3), and
every variant is reported, so no choice here reads the test split.

    python benchmarks/forum_author_whitening.py --set runs/verification-all/sets/forum-seed0 --seed 0 \
        --posts ../shared/data/forum-posts
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import numpy as np

REPO_ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO_ROOT))

from harness.metrics.verification import auc  # noqa: E402
from systems.style_encoder.corpus import excluded_by_sets, pretraining_corpus  # noqa: E402
from tasks.pan.pan23 import Pan23Task  # noqa: E402
from toolkit.style_space import (  # noqa: E402
    cosine_scores,
    distinct_texts,
    fit_basis,
    text_authors,
    within_author_whitening,
)

SHRINKAGES = (0.1, 0.3)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--set", type=Path, required=True, help="a forum set built by `harness pairs --from forum`")
    parser.add_argument("--posts", type=Path, required=True, help="the posts the set was built from")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--per-author", type=int, default=10)
    parser.add_argument("--basis-posts", type=int, default=30000)
    parser.add_argument("--dimensions", type=int, default=300)
    args = parser.parse_args()

    started = time.perf_counter()
    task = Pan23Task()
    train, test = task.load(args.set, "train"), task.load(args.set, "test")
    assert train.truth is not None and test.truth is not None
    corpus = pretraining_corpus(args.posts, excluded_by_sets([args.set]))
    rng = np.random.default_rng(args.seed)
    post_texts, post_authors = [], []
    for author, texts in zip(corpus.authors, corpus.texts, strict=True):
        for i in rng.permutation(len(texts))[: args.per_author]:
            post_texts.append(texts[i])
            post_authors.append(author)
    train_texts, train_authors = text_authors(train.problems, train.truth)
    print(f"posts outside the test split: {len(corpus.authors)} authors, {len(post_texts)} posts used; "
          f"training texts {len(train_texts)}", flush=True)  # fmt: skip

    drawn = rng.permutation(len(post_texts))[: args.basis_posts]
    basis = fit_basis(
        [*train_texts, *(post_texts[i] for i in drawn)], dimensions=args.dimensions, char_features=30000,
        word_features=10000, seed=args.seed, label="forum_author_whitening",
    )  # fmt: skip
    test_texts = distinct_texts(test.problems)
    labels = np.array([test.truth[p.id].same for p in test.problems])
    train_z, post_z, test_z = basis.reduce(train_texts), basis.reduce(post_texts), basis.reduce(test_texts)
    train_a = np.asarray(train_authors)
    post_a = np.unique(post_authors, return_inverse=True)[1] + train_a.max() + 1  # never a training author's label
    variants = {
        "train": (train_z, train_a),
        "posts": (post_z, post_a),
        "train+posts": (np.vstack([train_z, post_z]), np.concatenate([train_a, post_a])),
    }
    print("| whitening from | shrinkage | authors (2+ texts) | test AUC |\n|---|---:|---:|---:|")
    for name, (vectors, authors) in variants.items():
        mean = vectors.mean(axis=0)
        for shrinkage in SHRINKAGES:
            whitening, used = within_author_whitening(vectors - mean, authors, shrinkage)
            scores = cosine_scores(test.problems, test_texts, (test_z - mean) @ whitening)
            print(f"| {name} | {shrinkage} | {used} | {auc(labels, scores):.3f} |", flush=True)
    plain = cosine_scores(test.problems, test_texts, test_z - train_z.mean(axis=0))
    print(f"| no whitening | | | {auc(labels, plain):.3f} |")
    print(f"took {time.perf_counter() - started:.0f} s")


if __name__ == "__main__":
    main()
