"""siamese_bilstm parts: batch sampler, modified contrastive loss, routing, authors and validation split."""

from __future__ import annotations

import itertools
from pathlib import Path

import numpy as np
import pytest

from core.records import VerificationData, VerificationProblem, VerificationTruth
from systems.siamese_bilstm.data import author_pool, collect_corpus, split_validation
from systems.siamese_bilstm.routing import ENSEMBLE, GENERAL, PAN23_GROUPS, check_groups, route
from systems.siamese_bilstm.sampler import AuthorBatchSampler, eligible_authors

# -- sampler -----------------------------------------------------------------------------------------


def _pool(rng: np.random.Generator, authors: int) -> list[list[np.ndarray]]:
    """Authors with 1-4 texts of 1-6 chunks; every chunk row is unique, so rows identify author and text."""
    pool, row = [], 0
    for _ in range(authors):
        texts = []
        for _ in range(int(rng.integers(1, 5))):
            n = int(rng.integers(1, 7))
            texts.append(np.arange(row, row + n))
            row += n
        pool.append(texts)
    return pool


@pytest.mark.parametrize(("authors", "batch_size"), [(40, 32), (10, 32), (33, 8), (3, 4), (3, 64)])
def test_sampler_draws_batch_size_chunks_two_each_of_distinct_authors_from_different_texts(authors, batch_size):
    pool = _pool(np.random.default_rng(authors), authors)
    owner = {int(r): (a, t) for a, texts in enumerate(pool) for t, rows in enumerate(texts) for r in rows}
    eligible = eligible_authors(pool)
    sampler = AuthorBatchSampler(pool, batch_size, seed=1)
    seen = []
    for batch in sampler.batches(200):
        # batch_size counts chunks as the paper does (32 = 16 authors x 2), fewer only when authors run out
        assert batch.rows.size == 2 * len(batch.authors) == min(batch_size, 2 * len(eligible))
        assert len(batch.authors) == min(batch_size // 2, len(eligible))
        assert len(set(batch.authors.tolist())) == len(batch.authors)  # no author twice: no false negatives
        for author, (t0, t1), (r0, r1) in zip(batch.authors, batch.texts, batch.rows, strict=True):
            assert t0 != t1
            assert owner[int(r0)] == (author, t0) and owner[int(r1)] == (author, t1)
        seen.extend(batch.authors.tolist())
    assert set(seen) == set(eligible)  # single-text authors never, everybody else
    counts = np.bincount(seen, minlength=authors)[eligible]
    assert counts.max() - counts.min() <= 2  # sweeps: every author about equally often


def test_sampler_needs_two_eligible_authors():
    with pytest.raises(ValueError):
        AuthorBatchSampler([[np.arange(3), np.arange(3, 5)], [np.arange(5, 9)]], 4, seed=0)
    with pytest.raises(ValueError, match="at least 4"):
        AuthorBatchSampler([[np.arange(2), np.arange(2, 4)]] * 3, 2, seed=0)  # 2 chunks: one author, no negative
    with pytest.raises(ValueError, match="even"):
        AuthorBatchSampler([[np.arange(2), np.arange(2, 4)]] * 3, 7, seed=0)  # two chunks per author


def test_the_paper_batch_of_32_is_16_authors_with_two_chunks_each():
    pool = _pool(np.random.default_rng(3), 50)
    batch = AuthorBatchSampler(pool, 32, seed=0).batch()
    assert batch.rows.shape == (16, 2) and len(set(batch.authors.tolist())) == 16
    assert len(set(batch.rows.ravel().tolist())) == 32


def test_sampler_is_reproducible():
    pool = _pool(np.random.default_rng(0), 20)
    a = [b.rows.tolist() for b in AuthorBatchSampler(pool, 8, seed=5).batches(10)]
    b = [b.rows.tolist() for b in AuthorBatchSampler(pool, 8, seed=5).batches(10)]
    assert a == b


# -- loss ----------------------------------------------------------------------------------------------


def _loop_loss(anchors: np.ndarray, positives: np.ndarray, m_p: float, m_n: float, authors=None) -> float:
    """The paper's loss written out pair by pair: every (anchor i, positive j), Y = 1 iff their authors are one."""
    authors = range(len(anchors)) if authors is None else authors
    total, count = 0.0, 0
    for i, j in itertools.product(range(len(anchors)), repeat=2):
        a, b = anchors[i], positives[j]
        d = float(a @ b) / (np.linalg.norm(a) * np.linalg.norm(b))
        y = 1.0 if authors[i] == authors[j] else 0.0
        total += 0.5 * (y * max(m_p - d, 0.0) ** 2 + (1 - y) * max(d - m_n, 0.0) ** 2)
        count += 1
    return total / count


def _pairs(torch, anchors, positives, authors=None):
    """A batch as the loss takes it: (the anchors, then their positives; each row's author as its label)."""
    labels = torch.arange(len(anchors)) if authors is None else torch.tensor(authors)
    return torch.cat([torch.as_tensor(anchors), torch.as_tensor(positives)]), torch.cat([labels, labels])


@pytest.mark.parametrize(("m_p", "m_n"), [(1.0, 0.0), (0.8, 0.2), (0.5, -0.3)])
@pytest.mark.parametrize("batch", [2, 5, 32])
def test_loss_matches_a_plain_loop_over_pairs(batch, m_p, m_n):
    torch = pytest.importorskip("torch")
    from systems.siamese_bilstm.loss import modified_contrastive_loss

    rng = np.random.default_rng(batch)
    a, b = rng.normal(size=(batch, 7)), rng.normal(size=(batch, 7))
    b[0] = 3.0 * a[0]  # a perfect positive: no pull
    got = modified_contrastive_loss(*_pairs(torch, a, b), positive_margin=m_p, negative_margin=m_n)
    assert float(got) == pytest.approx(_loop_loss(a, b, m_p, m_n), rel=1e-5, abs=1e-7)
    # an author twice in a batch (the sampler never draws one): their cross pairs are positives, not negatives
    authors = [0, 0, *range(1, batch - 1)]
    got = modified_contrastive_loss(*_pairs(torch, a, b, authors), positive_margin=m_p, negative_margin=m_n)
    assert float(got) == pytest.approx(_loop_loss(a, b, m_p, m_n, authors), rel=1e-5, abs=1e-7)


def test_loss_pulls_positives_and_pushes_negatives():
    torch = pytest.importorskip("torch")
    from systems.siamese_bilstm.loss import modified_contrastive_loss

    a = torch.tensor([[1.0, 0.0], [0.0, 1.0]])
    assert (
        float(modified_contrastive_loss(*_pairs(torch, a, a.clone()))) == 0.0
    )  # aligned positives, orthogonal negatives
    b = torch.tensor([[0.0, 1.0], [1.0, 0.0]], requires_grad=True)  # positives orthogonal, negatives aligned
    loss = modified_contrastive_loss(*_pairs(torch, a, b))
    assert float(loss.detach()) == pytest.approx(0.5 * (1 + 1 + 1 + 1) / 4)
    loss.backward()
    assert b.grad is not None and float(b.grad.abs().sum()) > 0


def test_the_loss_part_builds_the_loss_with_its_margins():
    torch = pytest.importorskip("torch")
    from systems.siamese_bilstm.loss import ModifiedContrastive, modified_contrastive_loss

    rng = np.random.default_rng(0)
    embeddings, labels = _pairs(torch, rng.normal(size=(5, 7)), rng.normal(size=(5, 7)))
    loss = ModifiedContrastive(positive_margin=0.8, negative_margin=0.1).build(num_classes=5, dim=7)
    expected = modified_contrastive_loss(embeddings, labels, positive_margin=0.8, negative_margin=0.1)
    assert torch.equal(loss(embeddings, labels), expected)
    assert ModifiedContrastive(positive_margin=1) == ModifiedContrastive()  # margins are floats
    for rows, label_rows in ((9, 9), (10, 9)):  # an odd batch; a label per row missing
        with pytest.raises(ValueError, match="B anchors then B positives"):
            loss(embeddings.new_zeros(rows, 7), labels.new_zeros(label_rows))


def test_steps_per_epoch_draw_the_pool_once_unless_given():
    from systems.siamese_bilstm.settings import SiameseTraining

    assert SiameseTraining(batch_size=8).steps(chunks=100, authors=20) == 13  # ceil(100 / 8): batch_size counts chunks
    assert (
        SiameseTraining(batch_size=32).steps(chunks=100, authors=5) == 10
    )  # a batch holds at most 5 authors, 10 chunks
    assert SiameseTraining(batch_size=8).steps(chunks=1, authors=2) == 1
    with pytest.raises(ValueError, match="even"):
        SiameseTraining(batch_size=9)
    assert SiameseTraining(steps_per_epoch=3).steps(chunks=100, authors=20) == 3


# -- routing ------------------------------------------------------------------------------------------

PAN23_TYPES = ("email", "essay", "interview", "speech_transcription")
WRITTEN, ORAL = {"email", "essay"}, {"interview", "speech_transcription"}


@pytest.mark.parametrize(("t1", "t2"), list(itertools.product(PAN23_TYPES, repeat=2)))
def test_routing_of_every_pan23_discourse_type_pair(t1, t2):
    expected = "written" if {t1, t2} <= WRITTEN else "oral" if {t1, t2} <= ORAL else ENSEMBLE
    assert route((t1, t2), PAN23_GROUPS) == expected
    assert route((t2, t1), PAN23_GROUPS) == expected


def test_routing_edge_cases_and_configurable_groups():
    assert route(("Speech Transcription", "interview"), PAN23_GROUPS) == "oral"
    assert route(None, PAN23_GROUPS) == ENSEMBLE
    assert route(("novel", "novel"), PAN23_GROUPS) == ENSEMBLE  # a type in no group
    assert route(("essay", "essay"), {}) == GENERAL  # no groups: the general model answers all
    classic = check_groups({"essay": ["essay"], "novel": ["novel", "textbook"]})
    assert route(("essay",) * 4, classic) == "essay"
    assert route(("novel", "textbook"), classic) == "novel"
    assert route(("essay", "novel"), classic) == ENSEMBLE
    for bad in ({"general": ["essay"]}, {"a": ["essay"], "b": ["Essay"]}, {"a": []}, {"a": "essay"}):
        with pytest.raises(ValueError):
            check_groups(bad)


# -- authors and the validation split -----------------------------------------------------------------


def _classic() -> VerificationData:
    """A PAN 2013-2015 shaped split: no author names; problem C reuses a text of problem A."""
    problems = (
        VerificationProblem("A", ("a1", "a2", "a3"), ("essay",) * 3),
        VerificationProblem("B", ("b1", "x"), ("essay",) * 2),
        VerificationProblem("C", ("a2", "c9"), ("essay",) * 2),
        VerificationProblem("D", ("d1", "d2"), ("essay",) * 2),
    )
    truth = {
        "A": VerificationTruth("A", True),
        "B": VerificationTruth("B", False),
        "C": VerificationTruth("C", True),
        "D": VerificationTruth("D", False),
    }
    return VerificationData(problems, truth, Path("."), "0")


def test_pseudo_authors_from_problems_merged_over_shared_texts():
    corpus = collect_corpus(_classic())
    assert not corpus.named
    author = dict(zip(corpus.texts, corpus.authors, strict=True))
    # A: known and unknown one author (Y); C shares text a2 with A, so its texts are that author too
    assert author["a1"] == author["a2"] == author["a3"] == author["c9"]
    # B and D (N): unknown texts are other authors than the known ones
    assert author["b1"] != author["x"] and author["d1"] != author["d2"]
    assert corpus.num_authors == 5
    assert corpus.texts.count("a2") == 1


def test_texts_differing_only_in_white_space_are_one_text_of_one_author():
    problems = (
        VerificationProblem("A", ("the same text.", "a other"), ("essay",) * 2),
        VerificationProblem("B", ("\ufeffthe  same\ntext. ", "b other"), ("essay",) * 2),
        VerificationProblem("C", ("c1", "c2"), ("essay",) * 2),
    )
    truth = {i: VerificationTruth(i, False) for i in "ABC"}
    corpus = collect_corpus(VerificationData(problems, truth, Path("."), "0"))
    assert len(corpus.texts) == 5  # the shared text once although its bytes differ
    assert corpus.problem_texts[0][0] == corpus.problem_texts[1][0]
    # A's and B's known authors are one pseudo-author; the unknown authors and C's stay apart
    assert corpus.num_authors == 5


def test_converted_placeholder_authors_are_not_names():
    problems = (VerificationProblem("A", ("k", "u"), None), VerificationProblem("B", ("u", "v"), None))
    truth = {
        "A": VerificationTruth("A", False, ("A-known", "A-unknown")),
        "B": VerificationTruth("B", True, ("B-known", "B-known")),
    }
    corpus = collect_corpus(VerificationData(problems, truth, Path("."), "0"))
    assert not corpus.named
    author = dict(zip(corpus.texts, corpus.authors, strict=True))
    assert author["u"] == author["v"] != author["k"]  # B's known text is A's unknown one


def test_pseudo_authors_on_real_pan14_essays_share_no_text(tmp_path: Path):
    """PAN14 essays train reuses 142 of 625 texts across problems: after merging, no text has two authors."""
    import tarfile

    from helpers.paths import SHARED_DATA

    from tasks.pan.folders import read_classic_corpus, read_classic_truth
    from toolkit.splits import problem_groups, text_key

    tarball = SHARED_DATA / "pan13-15-av-en.tar.gz"
    if not tarball.is_file():
        pytest.skip(f"{tarball} not found (set HARNESS_SHARED_DATA)")
    name = "pan14-author-verification-training-corpus-english-essays"
    with tarfile.open(tarball) as archive:
        archive.extractall(tmp_path, members=[m for m in archive.getmembers() if name in m.name], filter="data")
    folder = next(p.parent for p in tmp_path.rglob("truth.txt") if name in str(p))
    problems = read_classic_corpus(folder)[0]
    truth = read_classic_truth(folder / "truth.txt")[0]
    corpus = collect_corpus(VerificationData(problems, truth, folder, "0"))

    keys = {text_key(t) for p in problems for t in p.texts}
    assert len(corpus.texts) == len(keys) < sum(len(p.texts) for p in problems)  # each text once, by its hash
    owner: dict[str, int] = {}
    for problem, ids, same in zip(problems, corpus.problem_texts, corpus.labels, strict=True):
        for text, i in zip(problem.texts, ids, strict=True):
            assert owner.setdefault(text_key(text), corpus.authors[i]) == corpus.authors[i]  # one author per text
        authors = {corpus.authors[i] for i in ids}
        assert len(authors) == (1 if same else 2)  # an N problem's sides are never merged into one author
    # fewer pseudo-authors than problem-local ones (problems that share a text share its author), and
    # authors never span two text-connected groups of problems
    assert corpus.num_authors < sum(1 if s else 2 for s in corpus.labels)
    groups = problem_groups(problems)
    group_of_author: dict[int, int] = {}
    for g, authors in zip(groups, corpus.problem_authors, strict=True):
        for a in authors:
            assert group_of_author.setdefault(a, int(g)) == int(g)


def test_named_authors_are_used_when_the_truth_has_them():
    problems = (VerificationProblem("p", ("t1", "t2"), ("email", "essay")),)
    truth = {"p": VerificationTruth("p", False, ("ann", "bob"))}
    corpus = collect_corpus(VerificationData(problems, truth, Path("."), "0"))
    assert corpus.named and corpus.num_authors == 2 and corpus.types == ["email", "essay"]


@pytest.mark.parametrize("seed", range(5))
def test_validation_authors_are_disjoint_from_training(seed):
    problems, truth = [], {}
    for i in range(60):
        a, b = f"au{i % 15}", f"au{(i * 7 + 3) % 15}"
        problems.append(VerificationProblem(f"p{i}", (f"text {i} a", f"text {i} b"), ("essay", "email")))
        truth[f"p{i}"] = VerificationTruth(f"p{i}", a == b, (a, b))
    corpus = collect_corpus(VerificationData(tuple(problems), truth, Path("."), "0"))
    split = split_validation(corpus, 0.3, seed=seed)
    held = frozenset(range(corpus.num_authors)) - split.train_authors
    assert held and split.train_authors
    for p in split.validation_problems:
        assert corpus.problem_authors[p] <= held
    for p in split.train_problems:
        assert corpus.problem_authors[p] <= split.train_authors
    rows = [np.array([i]) for i in range(len(corpus.texts))]
    pool = author_pool(corpus, rows, split.train_authors, None)
    trained_texts = {int(r[0]) for texts in pool for r in texts}
    assert all(corpus.authors[i] in split.train_authors for i in trained_texts)
    essays_only = author_pool(corpus, rows, split.train_authors, ["essay"])
    assert all(corpus.types[int(r[0])] == "essay" for texts in essays_only for r in texts)
    assert split_validation(corpus, 0.0, seed=seed).validation_problems == []
