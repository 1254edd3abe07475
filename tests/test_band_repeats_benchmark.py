"""benchmarks/band_repeats.py: the equicorrelation model predicts the AUC of averaged scores it is given, and on a
real forum slice the curve's full row is the band `ngram_style` fits (same band pairs, same scales)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pytest
from helpers.benchmark_script import load_benchmark
from sklearn.metrics import roc_auc_score


def _script() -> Any:
    return load_benchmark("band_repeats")


def _band_fold_folder(forum_slice: Path, tmp_path: Path, *more: str) -> tuple[Path, Path]:
    """A forum pair set built from the slice, and a small n-gram encoder folder pre-trained for it with `--band-folds
    2` and `more` options: (set, encoders)."""
    from click.testing import CliRunner

    from harness.cli import main
    from tasks.pairs import build_pairs

    pairs = tmp_path / "set"
    build_pairs("forum", forum_slice, pairs, pairs=60, seed=0)
    encoders = tmp_path / "encoders"
    args = ["pretrain-style", str(forum_slice), str(encoders), "--encoder", "ngram", "--steps", "20"]
    args += ["--dimensions", "24", "--char-features", "4000", "--word-features", "1500"]  # small: a few MB, not 85
    done = CliRunner().invoke(main, [*args, "--exclude-test-of", str(pairs), "--band-folds", "2", *more])
    assert done.exit_code == 0, done.output
    return pairs, encoders


def test_the_model_predicts_the_auc_of_a_mean_of_correlated_scores():
    script = _script()
    rng = np.random.default_rng(0)
    labels = rng.random(40_000) < 0.5
    rho, d_prime = 0.7, 0.6
    shared = rng.normal(size=labels.size)  # the noise every member shares, then each member's own
    members = [d_prime * labels + np.sqrt(rho) * shared + np.sqrt(1 - rho) * rng.normal(size=labels.size)
               for _ in range(4)]  # fmt: skip
    single = float(np.mean([roc_auc_score(labels, member) for member in members]))
    for m in (2, 4):
        observed = roc_auc_score(labels, np.mean(members[:m], axis=0))
        assert script.equicorrelated_auc(single, rho, m) == pytest.approx(observed, abs=0.005)
    assert script.equicorrelated_auc(single, rho, 1) == pytest.approx(single)
    assert script.equicorrelated_auc(single, 1.0, 50) == pytest.approx(single)  # copies add nothing
    limit = script.equicorrelated_auc(single, rho, float("inf"))
    assert script.equicorrelated_auc(single, rho, 4) < script.equicorrelated_auc(single, rho, 1000) < limit
    # the curve of these members: every subset, their correlation and the same prediction
    curve = script.repeats_curve(np.array(members[:3]), np.zeros(labels.size, dtype=int), labels)
    assert [len(curve["aucs"][m]) for m in (1, 2, 3)] == [3, 3, 1]
    assert curve["rho"] == pytest.approx(rho, abs=0.01)  # the noises', not the scores' (0.72 with the signal)
    assert list(curve["pair_rho"]) == [(0, 1), (0, 2), (1, 2)]
    assert all(value == pytest.approx(rho, abs=0.02) for value in curve["pair_rho"].values())
    assert curve["model"] == pytest.approx(curve["aucs"][3][0], abs=0.005)


def test_on_real_posts_the_full_row_is_the_verifiers_band(
    forum_slice: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
):
    pytest.importorskip("torch")
    from systems.style_encoder.verifier import NgramStyle
    from tasks.pan.pan23 import Pan23Task

    pairs, encoders = _band_fold_folder(forum_slice, tmp_path, "--band-repeats", "2")

    script = _script()
    text = script.main(["--encoders", str(encoders), "--set", str(pairs), "--seed", "0"])
    curve = script.folder_curve(encoders, pairs, 0, members=True)
    system = NgramStyle(model=str(encoders), grid_step=0.05)
    system.fit(Pan23Task().load(pairs, "train"), seed=0)
    assert curve["aucs"][2] == [pytest.approx(system.info["band_scores_auc"])]
    # `--members`: stacked's default members beside the encoders, on the same band pairs
    screen = curve["members"]
    assert screen["encoders"] == pytest.approx(curve["aucs"][2][0])
    assert list(screen["alone"]) == ["cngdist", "compressor", "pair_features", "tfidf", "wccn"] == list(screen["with"])
    assert len(curve["aucs"][1]) == 2 and -1 <= curve["rho"] <= 1
    assert f"{curve['aucs'][2][0]:.3f}" in text and str(encoders) in text
    assert curve["encoders"] == ["1", "2"] and f"1-2 {curve['pair_rho'][0, 1]:.2f}" in text
    with pytest.raises(SystemExit):
        script.main(["--encoders", str(encoders), "--set", str(pairs), "--seed", "0", "1"])
    assert "as many --set and --seed values" in capsys.readouterr().err


def test_the_members_screen_scores_each_band_fold_by_a_model_fitted_on_the_others():
    """On noise, a logistic regression on twenty columns fitted on the rows it scores looks informative; fitted on
    the other folds it does not. A column that carries the class carries it through."""
    from types import SimpleNamespace

    script = _script()
    rng = np.random.default_rng(0)
    labels = rng.random(300) < 0.5
    rows = np.arange(0, 300, 2)  # the band pairs: every second training pair
    y = labels[rows]
    band = SimpleNamespace(rows=rows, folds=rows % 3, standardised=rng.normal(size=(2, rows.size)))
    noise = rng.normal(size=(300, 20))
    screen = script.members_screen(noise, [f"m{j}" for j in range(20)], labels, band)
    assert screen["alone"]["m3"] == pytest.approx(roc_auc_score(y, noise[rows, 3]))  # the member's own rows
    assert screen["encoders"] == pytest.approx(roc_auc_score(y, band.standardised.mean(axis=0)))
    x = np.column_stack([band.standardised.mean(axis=0), noise[rows]])
    from sklearn.linear_model import LogisticRegression

    in_sample = roc_auc_score(y, LogisticRegression(max_iter=1000).fit(x, y).decision_function(x))
    assert in_sample > 0.65 and abs(screen["with_all"] - 0.5) < 0.1
    signal = np.column_stack([labels + rng.normal(scale=0.5, size=300), noise[:, 0]])
    assert script.members_screen(signal, ["signal", "noise"], labels, band)["with"]["signal"] > 0.8


def test_a_frozen_view_encoder_a_fold_learns_without_the_test_side_and_its_fold(forum_slice: Path, tmp_path: Path):
    """`--frozen-view`: one more encoder a fold, on a frozen transformer's vectors instead of the n-gram basis, learnt
    from at most N posts an author without the set's test side and the fold's training authors; the table's "others"
    is the folder's own band (the verifier's), and "with the view" the mean of all encoders a fold."""
    pytest.importorskip("torch")
    from unittest import mock

    from helpers.tiny_encoder import make_tiny_encoder

    import systems.style_encoder.ngram as ngram
    from systems.style_encoder.band_folds import training_pair_folds
    from systems.style_encoder.corpus import excluded_by_sets
    from systems.style_encoder.verifier import NgramStyle
    from tasks.pan.pan23 import Pan23Task
    from toolkit.band_folds import read_folds

    pairs, encoders = _band_fold_folder(forum_slice, tmp_path)
    tiny = make_tiny_encoder(tmp_path / "tiny", layers=3, hidden=16)

    script = _script()
    corpora, pretrain = [], ngram.pretrain_ngram_style

    def spy(corpus, *args, **kwargs):
        corpora.append(corpus)
        return pretrain(corpus, *args, **kwargs)

    view = script.FrozenView(forum_slice, str(tiny), 3, tmp_path / "cache", steps=40)
    with mock.patch.object(ngram, "pretrain_ngram_style", spy):
        curve = script.folder_curve(encoders, pairs, 0, view)
    assert curve["encoders"] == ["1", "frozen view"] and len(corpora) == 2
    test_side = excluded_by_sets([pairs])
    parts, _ = training_pair_folds(pairs, 2, seed=0)
    for corpus, (_, fold) in zip(corpora, parts, strict=True):
        authors = set(corpus.authors)
        assert authors and not authors & (test_side.authors | fold.authors)
        assert not {thread for threads in corpus.threads for thread in threads} & (test_side.groups | fold.groups)
        assert max(map(len, corpus.texts)) <= 3 and min(map(len, corpus.texts)) >= 2
    system = NgramStyle(model=str(encoders), grid_step=0.05)
    system.fit(Pan23Task().load(pairs, "train"), seed=0)
    assert curve["view"]["others"] == pytest.approx(system.info["band_scores_auc"])  # the folder's own band
    assert curve["view"]["with_view"] == pytest.approx(curve["aucs"][2][0])
    assert 0 <= curve["view"]["weighted"] <= 1 and read_folds(encoders)["folds"][0]["folders"] == ["band-fold-1"]
    text = script.table([(encoders, curve)])
    assert f"with the view added {curve['view']['with_view']:.4f}" in text and "frozen view 0." in text


def test_a_sparse_view_encoder_a_fold_keeps_every_ngram_and_learns_without_the_test_side_and_its_fold(
    forum_slice: Path, tmp_path: Path
):
    """`--sparse-view`: one more encoder a fold on its first encoder's TF-IDF vocabularies with no SVD, learnt from
    the posts left when the set's test side and the fold's training authors are out; the encoder it returns is the one
    early stopping kept (its numpy embedding gives the kept held-out AUC the torch one measured), and the table's
    "others" is the folder's own band."""
    pytest.importorskip("torch")
    from unittest import mock

    from systems.style_encoder.band_folds import training_pair_folds
    from systems.style_encoder.corpus import excluded_by_sets
    from systems.style_encoder.ngram import NgramStylePretraining, capped, held_out_pairs, hold_out_authors
    from systems.style_encoder.pretraining import pair_auc
    from systems.style_encoder.verifier import NgramStyle
    from tasks.pan.pan23 import Pan23Task

    pairs, encoders = _band_fold_folder(forum_slice, tmp_path)

    script = _script()
    trained, train = [], script.train_sparse_encoder

    def spy(view, corpus, vocabularies, seed):
        model, auc = train(view, corpus, vocabularies, seed)
        trained.append((corpus, vocabularies, model, auc))
        return model, auc

    view = script.SparseView(forum_slice, steps=60)
    with mock.patch.object(script, "train_sparse_encoder", spy):
        curve = script.folder_curve(encoders, pairs, 0, view)
    assert curve["encoders"] == ["1", "sparse view"] and len(trained) == 2
    test_side = excluded_by_sets([pairs])
    parts, _ = training_pair_folds(pairs, 2, seed=0)
    for (corpus, vocabularies, model, auc), (_, fold) in zip(trained, parts, strict=True):
        authors = set(corpus.authors)
        assert authors and not authors & (test_side.authors | fold.authors)
        assert not {thread for threads in corpus.threads for thread in threads} & (test_side.groups | fold.groups)
        features = len(vocabularies.char.vocabulary) + len(vocabularies.word.vocabulary)
        assert model.weight.shape == (features, 256) and features > 24  # every n-gram, not the 24-dimensional SVD
        # the held-out pairs as training drew them, scored by the returned encoder's numpy embedding
        settings = NgramStylePretraining(seed=0, steps=60)
        rng = np.random.default_rng(0)
        capped_corpus = capped(corpus, settings.posts_per_author, rng)
        held_out, _ = hold_out_authors(capped_corpus, settings, rng)
        offsets = np.concatenate([[0], np.cumsum([len(posts) for posts in capped_corpus.texts])])
        rows, comparable = held_out_pairs(capped_corpus, held_out, offsets, settings)
        texts = [text for posts in capped_corpus.texts for text in posts]
        first, second = (model.embed([texts[pair[k]] for pair in rows]) for k in (0, 1))
        first, second = (x / np.linalg.norm(x, axis=1, keepdims=True) for x in (first, second))
        assert pair_auc(first @ second.T, comparable) == pytest.approx(auc["kept"], abs=1e-6)
    system = NgramStyle(model=str(encoders), grid_step=0.05)
    system.fit(Pan23Task().load(pairs, "train"), seed=0)
    assert curve["view"]["others"] == pytest.approx(system.info["band_scores_auc"])
    assert curve["view"]["with_view"] == pytest.approx(curve["aucs"][2][0])
    text = script.table([(encoders, curve)])
    assert f"sparse view: the other encoders' mean {curve['view']['others']:.4f}" in text and "sparse view 0." in text
