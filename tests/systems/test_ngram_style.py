"""The n-gram style encoder and `ngram_style` on real forum posts and PAN 2013: pre-training learns (the held-out
authors' AUC is kept from the best step), its numpy forward pass is the trained network's, the model folder reads
back to the same embeddings, both splits of a set can be left out, and the verifier answers both with a pre-trained
model (band on its training scores) and without one (learnt per fold)."""

from __future__ import annotations

import json
import os
from pathlib import Path

import numpy as np
import pytest

torch = pytest.importorskip("torch")

from click.testing import CliRunner  # noqa: E402

from core.errors import HarnessError  # noqa: E402
from harness.cli import main  # noqa: E402
from systems.style_encoder.band_folds import training_pair_folds  # noqa: E402
from systems.style_encoder.corpus import Exclusions, excluded_by_sets, pretraining_corpus  # noqa: E402
from systems.style_encoder.fold_jobs import FoldEncoder, pretrain_fold_encoders  # noqa: E402
from systems.style_encoder.ngram import (  # noqa: E402
    MODEL_CONFIG,
    _weights,
    gelu,
    load_ngram_style,
    ngram_settings,
    pretrain_ngram_style,
    projection_network,
)
from systems.style_encoder.verifier import NgramStyle, problems_corpus  # noqa: E402
from tasks.pairs import build_pairs  # noqa: E402
from tasks.pan.pan23 import Pan23Task  # noqa: E402
from toolkit.band_folds import FOLDS_FILE, band_rows, fold_folders, out_of_fold_scores, read_folds  # noqa: E402
from toolkit.calibration import training_labels  # noqa: E402

# a small style space for the command's tests: the default one (300 x 130,000) writes about 85 MB an encoder
TINY = ["--dimensions", "24", "--char-features", "4000", "--word-features", "1500"]
NGRAM = ["--encoder", "ngram", "--steps", "20", *TINY]
SMALL = {
    "dimensions": 20,
    "char_features": 3000,
    "word_features": 1000,
    "basis_texts": 2000,
    "hidden": 32,
    "size": 16,
    "steps": 40,
    "eval_every": 10,
    "authors_per_batch": 16,
    "held_out_authors": 20,
}


@pytest.fixture(scope="module")
def slice_set(forum_slice: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("ngram-set") / "set"
    build_pairs("forum", forum_slice, out, pairs=60, seed=0)
    return out


def test_numpy_forward_pass_is_the_networks():
    torch.manual_seed(0)
    network = projection_network(6, 10, 4, 0.1).eval()
    x = torch.randn(5, 6)
    weights = _weights(network)
    with torch.no_grad():
        expected = network(x).numpy()
    hidden = gelu(x.numpy() @ weights["hidden_weight"] + weights["hidden_bias"])
    got = x.numpy() @ weights["linear"] + hidden @ weights["output_weight"] + weights["output_bias"]
    assert np.allclose(got, expected, atol=1e-5)


def test_both_splits_of_a_set_can_be_left_out(slice_set: Path):
    test_only = excluded_by_sets([slice_set])
    both = excluded_by_sets([slice_set], splits=("train", "test"))
    train_authors = {
        name
        for line in (slice_set / "train" / "truth.jsonl").read_text(encoding="utf-8").splitlines()
        for name in json.loads(line)["authors"]
    }
    assert train_authors and not train_authors & test_only.authors  # the builder keeps splits apart
    assert both.authors == test_only.authors | train_authors
    assert test_only.groups < both.groups and test_only.post_ids < both.post_ids


def test_pretraining_keeps_the_best_step_and_reads_back(forum_slice: Path, slice_set: Path, tmp_path: Path):
    exclusions = excluded_by_sets([slice_set], splits=("train", "test"))
    corpus = pretraining_corpus(forum_slice, exclusions)
    out = tmp_path / "ngram"
    model, manifest = pretrain_ngram_style(corpus, exclusions, out, ngram_settings(**SMALL, patience=10))
    auc = manifest["held_out_pair_auc"]
    history = auc["history"]
    assert [step for step, _ in history] == [0, 10, 20, 30, 40] and manifest["steps_done"] == 40
    best = max(history, key=lambda item: item[1])
    assert (auc["kept_step"], auc["kept"]) == tuple(best)
    assert 0 <= auc["whitened"] <= 1 and manifest["held_out_authors"] == min(20, len(corpus.authors) // 5) >= 2
    assert manifest["excluded"]["authors"] == len(exclusions.authors)
    read, read_manifest = load_ngram_style(out)
    texts = corpus.texts[0][:3] + corpus.texts[1][:2]
    assert np.allclose(read.embed(texts), model.embed(texts)) and read_manifest == manifest
    assert not [entry for entry in tmp_path.iterdir() if entry.name.startswith(".ngram.")]  # no staging left
    with pytest.raises(HarnessError, match="not empty"):
        pretrain_ngram_style(corpus, exclusions, out, ngram_settings(**SMALL))


def test_the_manifest_says_what_the_style_space_holds_where_the_posts_cap_the_settings(forum_slice: Path):
    corpus = pretraining_corpus(forum_slice, Exclusions())
    settings = ngram_settings(**SMALL | {"basis_texts": 30, "dimensions": 50, "steps": 10})
    model, manifest = pretrain_ngram_style(corpus, None, None, settings)
    assert manifest["settings"]["dimensions"] == 50 and manifest["style_space"]["dimensions"] == 29  # 30 texts
    assert model.embed(["one post", "another"]).shape[0] == 2


def test_the_command_says_when_the_style_space_is_smaller_than_asked(forum_slice: Path, tmp_path: Path):
    args = ["pretrain-style", str(forum_slice), str(tmp_path / "m"), "--encoder", "ngram", "--steps", "5"]
    done = CliRunner().invoke(main, [*args, "--dimensions", "500", "--char-features", "300", "--word-features", "100"])
    assert done.exit_code == 0, done.output
    built = json.loads((tmp_path / "m" / MODEL_CONFIG).read_text(encoding="utf-8"))["manifest"]["style_space"]
    assert (
        built["dimensions"] < 500 and f"style space: {built['dimensions']} dimensions, not the 500 asked" in done.output
    )
    done = CliRunner().invoke(main, [*args[:2], str(tmp_path / "n"), *args[3:], *TINY])
    assert done.exit_code == 0 and "style space:" not in done.output  # as asked: nothing to say


def test_training_stops_after_patience_evaluations_without_a_gain(forum_slice: Path):
    corpus = pretraining_corpus(forum_slice, excluded_by_sets([]))
    _, manifest = pretrain_ngram_style(corpus, None, None, ngram_settings(**{**SMALL, "steps": 400}, patience=2))
    auc = manifest["held_out_pair_auc"]
    assert manifest["steps_done"] < 400  # a small corpus is overfitted long before
    assert manifest["steps_done"] == auc["kept_step"] + 2 * 10


def test_bad_settings_and_files_are_refused(tmp_path: Path):
    for bad in ({"steps": 0}, {"posts_per_author": 1}, {"dropout": 1.0}, {"temperature": 0}):
        with pytest.raises(HarnessError):
            ngram_settings(**bad)
    with pytest.raises(HarnessError, match="not found"):
        load_ngram_style(tmp_path)
    (tmp_path / MODEL_CONFIG).write_text("{}", encoding="utf-8")
    (tmp_path / "ngram_style.safetensors").write_bytes(b"junk")
    with pytest.raises(HarnessError, match="cannot read"):
        load_ngram_style(tmp_path)


def test_the_command_writes_a_model_the_verifier_reads(forum_slice: Path, slice_set: Path, tmp_path: Path):
    out = tmp_path / "model"
    args = ["pretrain-style", str(forum_slice), str(out), *NGRAM]
    refused = CliRunner().invoke(main, [*args, "--trainable-layers", "2"])
    assert refused.exit_code != 0 and "--trainable-layers" in refused.output and not out.exists()
    transformer = ["pretrain-style", str(forum_slice), str(out), "--dimensions", "24", "--word-features", "9"]
    refused = CliRunner().invoke(main, transformer)
    assert refused.exit_code != 0 and "--dimensions, --word-features: the n-gram encoder's" in refused.output
    assert not out.exists()
    done = CliRunner().invoke(main, [*args, "--exclude-all-of", str(slice_set), "--seed", "1"])
    assert done.exit_code == 0, done.output
    assert "projected" in done.output
    assert f"--system ngram_style --task pan23 --data SET --param model={out}" in done.output
    manifest = json.loads((out / MODEL_CONFIG).read_text(encoding="utf-8"))["manifest"]
    assert manifest["settings"]["seed"] == 1 and manifest["excluded"]["sets"] == [f"{slice_set} (both splits)"]
    assert (manifest["settings"]["dimensions"], manifest["settings"]["char_features"]) == (24, 4000)
    assert manifest["style_space"]["dimensions"] == 24 and 1000 < manifest["style_space"]["features"] <= 5500
    umask = os.umask(0)
    os.umask(umask)
    modes = {path.name: path.stat().st_mode & 0o777 for path in out.iterdir()}  # safetensors alone wrote 0600
    assert modes == {MODEL_CONFIG: 0o666 & ~umask, "ngram_style.safetensors": 0o666 & ~umask}

    task = Pan23Task()
    train, test = task.load(slice_set, "train"), task.load(slice_set, "test")
    system = NgramStyle(model=str(out), grid_step=0.05)
    system.fit(train, seed=0)
    assert system.calibration_info is not None and system.calibration_info["folds"] == 0
    assert system.info["pretraining"]["excluded"]["authors"] == manifest["excluded"]["authors"]
    answers = [answer.value for answer in system.predict(test.problems)]
    assert len(answers) == len(test.problems) and all(0 <= value <= 1 for value in answers)


def test_a_model_pre_trained_again_into_its_folder_is_fitted_again_not_answered_by_the_old_fit(
    forum_slice: Path, slice_set: Path, tmp_path: Path
):
    """The run's fingerprint holds the model folder's checksum (audit 10, F3: the run kept, and resumed, the result
    of the model the folder held before)."""
    import shutil

    from harness.runner import run

    model = tmp_path / "model"
    for seed, out in (("1", model), ("2", tmp_path / "other")):
        args = ["pretrain-style", str(forum_slice), str(out), *NGRAM, "--exclude-all-of", str(slice_set)]
        done = CliRunner().invoke(main, [*args, "--seed", seed])
        assert done.exit_code == 0, done.output
    settings = {"system_name": "ngram_style", "task_name": "pan23", "data": slice_set, "out_dir": tmp_path / "runs"}
    params = {"model": str(model), "grid_step": 0.05}
    first = run(**settings, params=params)
    checksum = first.result["system"]["inputs"]["model"]
    assert checksum.startswith("sha256:") and run(**settings, params=params).reused  # unchanged: kept
    shutil.rmtree(model)
    shutil.copytree(tmp_path / "other", model)  # pre-trained again into the same folder
    with pytest.raises(HarnessError, match="fitted with other files in the folder of model than are there now"):
        run(**settings, params=params)
    (first.run_dir / "result.json").unlink()  # a crash after the fit: the old checkpoint must not be resumed
    again = run(**settings, params=params)
    assert not again.reused and again.result["system"]["inputs"]["model"] not in (checksum, None)
    fresh = run(**settings | {"out_dir": tmp_path / "fresh"}, params=params | {"model": str(tmp_path / "other")})
    assert again.result["scores"] == fresh.result["scores"] != first.result["scores"]  # fitted on the new model


def test_an_encoder_that_read_the_test_texts_is_refused_before_it_answers(
    forum_slice: Path, slice_set: Path, tmp_path: Path
):
    """Audit 10, F1: an encoder pre-trained without this set's test side left out (here: nothing left out; there: a
    model made for another set of the same posts) answered silently. It is refused, also from its checkpoint; with
    the test side left out it answers."""
    from harness.runner import run

    read_all, clean = tmp_path / "read-all", tmp_path / "clean"
    for out, exclude in ((read_all, []), (clean, ["--exclude-test-of", str(slice_set)])):
        done = CliRunner().invoke(main, ["pretrain-style", str(forum_slice), str(out), *NGRAM, *exclude])
        assert done.exit_code == 0, done.output
    task = Pan23Task()
    train, test = task.load(slice_set, "train"), task.load(slice_set, "test")
    system = NgramStyle(model=str(read_all), grid_step=0.05)
    system.fit(train, seed=0)
    texts = {text for problem in test.problems for text in problem.texts}
    with pytest.raises(HarnessError, match=f"ngram_style: the encoder at {read_all} was pre-trained on ") as refused:
        system.predict(test.problems)
    assert f" of the {len(texts)} texts it is asked to answer about" in str(refused.value)
    system.save(tmp_path / "checkpoint")
    with pytest.raises(HarnessError, match="was pre-trained on "):
        NgramStyle.load(tmp_path / "checkpoint").predict(test.problems)
    settings = {"system_name": "ngram_style", "task_name": "pan23", "data": slice_set, "out_dir": tmp_path / "runs"}
    with pytest.raises(HarnessError, match="was pre-trained on "):
        run(**settings, params={"model": str(read_all), "grid_step": 0.05})
    assert 0 <= run(**settings, params={"model": str(clean), "grid_step": 0.05}).result["scores"]["auc"] <= 1


def test_the_current_folder_is_refused_as_out_dir_before_any_training(
    forum_slice: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
):
    """Audit 10, F6: an empty current folder passed the first check, the whole pre-training ran, and then the folder
    was called "not empty" (its staging folder lay inside it)."""
    here = tmp_path / "empty"
    here.mkdir()
    monkeypatch.chdir(here)
    for out in (".", "./", str(here), ".."):
        done = CliRunner().invoke(main, ["pretrain-style", str(forum_slice), out, *NGRAM])
        assert done.exit_code != 0 and "current" in done.output and "name a new folder" in done.output, done.output
        assert "pre-training" not in done.output
    assert not any(here.iterdir())


def test_without_a_model_it_learns_from_the_training_problems(tmp_path: Path):
    from helpers.pan13 import write_pan13_english

    from tasks.pan.classic import PanClassicTask

    pan13_en = write_pan13_english(tmp_path)
    task = PanClassicTask()
    train = task.load(pan13_en, "test")  # 30 problems to fit on, as the conformance tests do
    corpus = problems_corpus(train.problems, train.truth)
    assert len(corpus.authors) >= 3 and all(len(texts) >= 2 for texts in corpus.texts)
    system = NgramStyle(steps=20, dimensions=10, char_features=2000, word_features=500, calibration_folds=2)
    system.fit(train, seed=0)
    assert system.info["model"] is None and system.calibration_info["folds"] == 2
    # a fifth of the author groups held out, so training stops on their AUC
    assert system.info["pretraining"]["held_out_authors"] == len(corpus.authors) // 5 >= 2
    scores = system.raw_scores(task.load(pan13_en, "train").problems)
    assert np.isfinite(scores).all() and ((scores >= 0) & (scores <= 1)).all()


def test_band_folds_deal_the_training_authors_into_folds(slice_set: Path):
    folds, across = training_pair_folds(slice_set, 2, seed=0)
    lines = (slice_set / "train" / "truth.jsonl").read_text(encoding="utf-8").splitlines()
    authors_of = {record["id"]: set(record["authors"]) for record in map(json.loads, lines)}
    (first, first_out), (second, second_out) = folds
    assert sorted(first + second + across) == sorted(authors_of) and first and second
    assert not first_out.authors & second_out.authors
    assert first_out.authors | second_out.authors == {name for names in authors_of.values() for name in names}
    for pair_ids, exclusions in folds:  # a fold's pairs: every author in the fold
        assert all(authors_of[i] <= exclusions.authors for i in pair_ids)
    assert all(authors_of[i] & first_out.authors and authors_of[i] & second_out.authors for i in across)
    test_only = excluded_by_sets([slice_set])
    both = excluded_by_sets([slice_set], splits=("train", "test"))
    assert not (first_out.post_ids | second_out.post_ids) & test_only.post_ids
    assert first_out.post_ids | second_out.post_ids | test_only.post_ids == both.post_ids
    assert training_pair_folds(slice_set, 2, seed=0)[1] == across  # seeded
    with pytest.raises(HarnessError, match="cannot make 1000 band folds"):
        training_pair_folds(slice_set, 1000, seed=0)


def test_band_rows_keep_the_classes_in_proportion():
    labels = np.array([True] * 6 + [False] * 6)
    in_fold = np.array([True] * 6 + [True, True, False, False, False, False])
    rows = band_rows(labels, in_fold, seed=0)
    assert labels[rows].sum() == 2 and (~labels[rows]).sum() == 2 and in_fold[rows].all()
    assert list(band_rows(labels, np.ones(12, bool), seed=0)) == list(range(12))


def test_band_folds_give_the_verifier_out_of_fold_scores(forum_slice: Path, slice_set: Path, tmp_path: Path):
    out = tmp_path / "model"
    args = ["pretrain-style", str(forum_slice), str(out), *NGRAM, "--band-folds", "2"]
    for refused in (args, [*args, "--exclude-test-of", str(slice_set), "--exclude-test-of", str(slice_set)]):
        result = CliRunner().invoke(main, refused)
        assert result.exit_code != 0 and "--band-folds goes with" in result.output and not out.exists()
    done = CliRunner().invoke(main, [*args, "--exclude-test-of", str(slice_set)])
    assert done.exit_code == 0, done.output
    assert "band folds: 2 encoders" in done.output
    record = json.loads((out / "band_folds.json").read_text(encoding="utf-8"))
    main_manifest = json.loads((out / MODEL_CONFIG).read_text(encoding="utf-8"))["manifest"]
    assert main_manifest["band_folds"]["pairs"] == [len(fold["pair_ids"]) for fold in record["folds"]]
    for k, fold in enumerate(record["folds"], 1):
        _, manifest = load_ngram_style(out / fold["folder"])
        excluded = manifest["excluded"]
        assert excluded["sets"] == [str(slice_set), f"{slice_set} (training fold {k} of 2)"]
        assert excluded["authors"] > main_manifest["excluded"]["authors"]

    task = Pan23Task()
    train, test = task.load(slice_set, "train"), task.load(slice_set, "test")
    system = NgramStyle(model=str(out), grid_step=0.05)
    system.fit(train, seed=0)
    assert system.calibration_info["folds"] == 2 and "out of sample" in system.calibration_info["scores"]
    fold_models = [load_ngram_style(out / fold["folder"])[0] for fold in record["folds"]]
    cosines, fold_of = out_of_fold_scores(train.problems, record, lambda p, k: system._similarities(p, fold_models[k]))
    assert np.isnan(cosines[fold_of < 0]).all() and (fold_of < 0).sum() == len(record["across_folds"])
    labels = training_labels(train)
    rows = band_rows(labels, fold_of >= 0, seed=0)
    # each fold encoder's scale is read on its own fold's band pairs; the band on their standardised scores
    scales = [(cosines[rows][fold_of[rows] == k].mean(), cosines[rows][fold_of[rows] == k].std()) for k in (0, 1)]
    assert np.allclose(system._scales, scales)
    standardised = [(cosines[i] - scales[k][0]) / scales[k][1] for i, k in zip(rows, fold_of[rows], strict=True)]
    assert system.band == system.fit_band(train, 1 / (1 + np.exp(-np.array(standardised))), labels[rows])
    # test problems: the logistic of the mean of both fold encoders' standardised cosines
    each = [(system._similarities(test.problems, m) - a) / b for m, (a, b) in zip(fold_models, scales, strict=True)]
    mean = np.mean(each, axis=0)
    assert np.allclose(system.raw_scores(test.problems), 1 / (1 + np.exp(-mean)))
    checkpoint = tmp_path / "checkpoint"
    system.save(checkpoint)
    again = NgramStyle.load(checkpoint)
    assert [a.value for a in again.predict(test.problems)] == [a.value for a in system.predict(test.problems)]
    assert len(system.predict(test.problems)) == len(test.problems)
    mixed = train._replace(problems=train.problems[:5] + test.problems[:5], truth={**train.truth, **test.truth})
    with pytest.raises(HarnessError, match="5 of 10 training problems .* are in no band fold"):
        NgramStyle(model=str(out)).fit(mixed, seed=0)
    elsewhere = NgramStyle(model=str(out))  # another set (here the test split): the folds are not read
    elsewhere.fit(test, seed=0)
    assert elsewhere.calibration_info["folds"] == 0
    assert elsewhere.info["band_folds"] == f"not read: made for {slice_set}, not this set"


def test_band_repeats_average_several_encoders_a_fold(forum_slice: Path, slice_set: Path, tmp_path: Path):
    out = tmp_path / "model"
    args = ["pretrain-style", str(forum_slice), str(out), *NGRAM, "--band-repeats", "2"]
    refused = CliRunner().invoke(main, [*args, "--exclude-test-of", str(slice_set)])
    assert refused.exit_code != 0 and "--band-repeats goes with --band-folds" in refused.output and not out.exists()
    done = CliRunner().invoke(main, [*args, "--exclude-test-of", str(slice_set), "--band-folds", "2"])
    assert done.exit_code == 0, done.output
    assert "band folds: 4 encoders (2 folds x 2)" in done.output
    record = read_folds(out)
    assert record is not None and record["repeats"] == 2
    assert [fold_folders(fold) for fold in record["folds"]] == [["band-fold-1", "band-fold-1-2"],
                                                                ["band-fold-2", "band-fold-2-2"]]  # fmt: skip
    loaded = [[load_ngram_style(out / name) for name in fold_folders(fold)] for fold in record["folds"]]
    for k, fold in enumerate(loaded, 1):  # a fold's repeats: the same exclusions, other seeds, other encoders
        (first, first_manifest), (second, second_manifest) = fold
        assert [first_manifest["settings"]["seed"], second_manifest["settings"]["seed"]] == [0, 1000]
        assert first_manifest["excluded"] == second_manifest["excluded"]
        assert f"(training fold {k} of 2)" in first_manifest["excluded"]["sets"][-1]
        assert not np.allclose(first.embed(["one post", "another post"]), second.embed(["one post", "another post"]))

    task = Pan23Task()
    train, test = task.load(slice_set, "train"), task.load(slice_set, "test")
    system = NgramStyle(model=str(out), grid_step=0.05)
    system.fit(train, seed=0)
    assert system.calibration_info["repeats"] == 2 and "2 a fold" in system.calibration_info["scores"]
    labels = training_labels(train)
    per_repeat = [out_of_fold_scores(train.problems, record, lambda p, k, r=r: system._similarities(p, loaded[k][r][0]))
                  for r in (0, 1)]  # fmt: skip
    fold_of = per_repeat[0][1]
    rows = band_rows(labels, fold_of >= 0, seed=0)
    scales = [(per_repeat[r][0][rows][fold_of[rows] == k].mean(), per_repeat[r][0][rows][fold_of[rows] == k].std())
              for k in (0, 1) for r in (0, 1)]  # fmt: skip
    assert np.allclose(system._scales, scales)
    # a training pair's band score: the mean of its fold's two encoders' standardised cosines
    standardised = [np.mean([(per_repeat[r][0][i] - scales[2 * k + r][0]) / scales[2 * k + r][1] for r in (0, 1)])
                    for i, k in zip(rows, fold_of[rows], strict=True)]  # fmt: skip
    assert system.band == system.fit_band(train, 1 / (1 + np.exp(-np.array(standardised))), labels[rows])
    # a test problem's: the mean over all four encoders
    models = [model for fold in loaded for model, _ in fold]
    each = [(system._similarities(test.problems, m) - a) / b for m, (a, b) in zip(models, scales, strict=True)]
    assert np.allclose(system.raw_scores(test.problems), 1 / (1 + np.exp(-np.mean(each, axis=0))))
    system.save(tmp_path / "checkpoint")
    again = NgramStyle.load(tmp_path / "checkpoint")
    assert [a.value for a in again.predict(test.problems)] == [a.value for a in system.predict(test.problems)]


def test_band_folds_records_read_back_with_or_without_repeats(tmp_path: Path):
    fold = {"folder": "band-fold-1", "pair_ids": ["a"]}
    assert fold_folders(fold) == ["band-fold-1"]  # written before repeats: one encoder a fold
    record = {"folds": [fold, {"folder": "band-fold-2", "pair_ids": ["b"]}]}
    (tmp_path / FOLDS_FILE).write_text(json.dumps(record), encoding="utf-8")
    assert read_folds(tmp_path) == record
    record["folds"][1]["folders"] = ["band-fold-2", "band-fold-2-2"]
    (tmp_path / FOLDS_FILE).write_text(json.dumps(record), encoding="utf-8")
    with pytest.raises(HarnessError, match="different numbers of repeats"):
        read_folds(tmp_path)


def test_reuse_from_copies_an_earlier_folders_encoders_and_trains_only_the_missing(
    forum_slice: Path, slice_set: Path, tmp_path: Path
):
    base = ["pretrain-style", str(forum_slice)]
    recipe = ["--encoder", "ngram", "--steps", "20", "--exclude-test-of", str(slice_set), "--band-folds", "2", *TINY]
    first, fresh, grown = tmp_path / "one-a-fold", tmp_path / "fresh", tmp_path / "grown"
    assert CliRunner().invoke(main, [*base, str(first), *recipe]).exit_code == 0
    before = {path: path.read_bytes() for path in first.rglob("*") if path.is_file()}
    done = CliRunner().invoke(main, [*base, str(grown), *recipe, "--band-repeats", "2", "--reuse-from", str(first)])
    assert done.exit_code == 0, done.output
    assert "reused from" in done.output and "3 encoders" in done.output  # the main one and each fold's first
    assert {path: path.read_bytes() for path in first.rglob("*") if path.is_file()} == before  # left as it was
    assert CliRunner().invoke(main, [*base, str(fresh), *recipe, "--band-repeats", "2"]).exit_code == 0

    posts = ["one post", "another post, longer than the first"]
    for name in (".", "band-fold-1", "band-fold-2"):  # copied: the earlier folder's encoders
        assert np.array_equal(
            load_ngram_style(grown / name)[0].embed(posts), load_ngram_style(first / name)[0].embed(posts)
        )
    for name in ("band-fold-1-2", "band-fold-2-2"):  # trained here, as a fresh run of the whole recipe trains them
        assert np.allclose(
            load_ngram_style(grown / name)[0].embed(posts), load_ngram_style(fresh / name)[0].embed(posts)
        )
    assert read_folds(grown) == read_folds(fresh)
    manifest = json.loads((grown / MODEL_CONFIG).read_text(encoding="utf-8"))["manifest"]
    assert manifest["reused_from"] == {"folder": str(first), "encoders": [".", "band-fold-1", "band-fold-2"]}
    assert manifest["use"] == f"--param model={grown}" and manifest["band_folds"]["repeats"] == 2

    task = Pan23Task()
    train, test = task.load(slice_set, "train"), task.load(slice_set, "test")
    answers = []
    for folder in (grown, fresh):
        system = NgramStyle(model=str(folder), grid_step=0.05)
        system.fit(train, seed=0)
        answers.append(system.raw_scores(test.problems))
    assert np.allclose(answers[0], answers[1])

    other_steps = [*recipe[:3], "21", *recipe[4:]]
    refusals = {
        # by name, with both values (audit 10, F11: the whole settings were printed, cut before what differed)
        "another recipe (settings.steps: 20 there, 21 here); nothing": [*base, str(tmp_path / "r1"), *other_steps,
                                                                        "--reuse-from", str(first)],
        "--reuse-from goes with --band-folds": [*base, str(tmp_path / "r2"), *recipe[:6], "--reuse-from", str(first)],
        "no band folds there": [*base, str(tmp_path / "r3"), *recipe, "--reuse-from", str(first / "band-fold-1")],
    }  # fmt: skip
    for message, args in refusals.items():
        refused = CliRunner().invoke(main, args)
        assert refused.exit_code != 0 and message in refused.output, refused.output
        assert not Path(args[2]).exists()


def test_reuse_from_takes_the_same_set_named_by_another_path(
    forum_slice: Path, slice_set: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
):
    """Audit 10, F9: a folder made with the set named by its absolute path was another recipe when named relatively."""
    base = ["pretrain-style", str(forum_slice)]
    recipe = ["--encoder", "ngram", "--steps", "20", "--band-folds", "2", *TINY]
    first = tmp_path / "first"
    done = CliRunner().invoke(main, [*base, str(first), *recipe, "--exclude-test-of", str(slice_set)])
    assert done.exit_code == 0, done.output
    monkeypatch.chdir(slice_set.parent)
    again = ["--exclude-test-of", slice_set.name, "--reuse-from", str(first)]
    done = CliRunner().invoke(main, [*base, str(tmp_path / "again"), *recipe, *again])
    assert done.exit_code == 0 and "3 encoders" in done.output, done.output  # all reused, none trained


def test_band_folds_are_refused_before_any_training_where_they_cannot_work(
    forum_slice: Path, slice_set: Path, tmp_path: Path
):
    """Audit 10: folds of 0 or 1 training pairs (F4) failed in the verifier after K + 1 pre-trainings, saying the
    encoder scored its pairs alike; the same set left out whole and in folds (F5) trained K copies of the main
    encoder."""
    base = ["pretrain-style", str(forum_slice), str(tmp_path / "out"), *NGRAM, "--exclude-test-of", str(slice_set)]
    refused = CliRunner().invoke(main, [*base, "--band-folds", "10"])  # 13 training authors, 30 pairs
    assert refused.exit_code != 0 and "training pair(s)" in refused.output, refused.output
    assert "give fewer --band-folds" in refused.output
    refused = CliRunner().invoke(main, [*base, "--band-folds", "2", "--exclude-all-of", str(slice_set)])
    assert refused.exit_code != 0 and "also given to --exclude-all-of" in refused.output, refused.output
    assert "pre-training" not in refused.output and not (tmp_path / "out").exists()


def test_band_views_add_encoders_that_see_the_texts_otherwise(forum_slice: Path, slice_set: Path, tmp_path: Path):
    base = ["pretrain-style", str(forum_slice)]
    recipe = ["--encoder", "ngram", "--steps", "20", "--exclude-test-of", str(slice_set), "--band-folds", "2", *TINY]
    refused = CliRunner().invoke(main, [*base, str(tmp_path / "r1"), *recipe[:6], "--band-view", "char"])
    assert refused.exit_code != 0 and "--band-view goes with --band-folds" in refused.output
    refused = CliRunner().invoke(main, [*base, str(tmp_path / "r2"), *recipe, "--band-view", "syntax"])
    assert refused.exit_code != 0 and "'syntax' is not one of 'char', 'word'" in refused.output
    assert not (tmp_path / "r1").exists() and not (tmp_path / "r2").exists()

    first, views = tmp_path / "one-a-fold", tmp_path / "views"
    assert CliRunner().invoke(main, [*base, str(first), *recipe]).exit_code == 0
    grow = ["--band-view", "char", "--band-view", "word", "--band-view", "char", "--reuse-from", str(first)]
    done = CliRunner().invoke(main, [*base, str(views), *recipe, *grow])
    assert done.exit_code == 0, done.output
    assert "band folds: 8 encoders (2 folds x 4: 1 + char, word, char)" in done.output
    assert "reused from" in done.output and "3 encoders" in done.output  # the main one and each fold's first
    record = read_folds(views)
    assert record is not None and record["repeats"] == 1 and record["views"] == ["char", "word", "char"]
    assert [fold_folders(fold) for fold in record["folds"]] == [
        [f"band-fold-{k}", f"band-fold-{k}-char", f"band-fold-{k}-word", f"band-fold-{k}-char-2"] for k in (1, 2)
    ]
    posts = ["one post", "another post, longer than the first"]
    for k, fold in enumerate(record["folds"], 1):
        loaded = [load_ngram_style(views / name) for name in fold_folders(fold)]
        settings = [manifest["settings"] for _, manifest in loaded]
        # a view is the main settings with one vectoriser cut to one term; a view named twice, its next seed
        assert [(s["char_features"], s["word_features"], s["seed"]) for s in settings] == [
            (4000, 1500, 0), (4000, 1, 0), (1, 1500, 0), (4000, 1, 1000)
        ]  # fmt: skip
        assert all(manifest["excluded"] == loaded[0][1]["excluded"] for _, manifest in loaded)
        assert f"(training fold {k} of 2)" in loaded[0][1]["excluded"]["sets"][-1]
        assert np.array_equal(loaded[0][0].embed(posts), load_ngram_style(first / f"band-fold-{k}")[0].embed(posts))
        assert not np.allclose(loaded[1][0].embed(posts), loaded[3][0].embed(posts))

    task = Pan23Task()
    train, test = task.load(slice_set, "train"), task.load(slice_set, "test")
    system = NgramStyle(model=str(views), grid_step=0.05)
    system.fit(train, seed=0)
    assert system.calibration_info["repeats"] == 4
    assert "4 a fold (the main settings and views char, word, char)" in system.calibration_info["scores"]
    assert len(system._scales) == 8  # every encoder of every fold on its own scale
    system.save(tmp_path / "checkpoint")
    again = NgramStyle.load(tmp_path / "checkpoint")
    assert [a.value for a in again.predict(test.problems)] == [a.value for a in system.predict(test.problems)]


def test_band_fold_encoders_pre_trained_side_by_side_are_those_of_one_at_a_time(
    forum_slice: Path, slice_set: Path, tmp_path: Path
):
    base = ["pretrain-style", str(forum_slice)]
    recipe = ["--encoder", "ngram", "--steps", "20", "--exclude-test-of", str(slice_set), *TINY]
    refused = CliRunner().invoke(main, [*base, str(tmp_path / "r"), *recipe, "--jobs", "2"])
    assert refused.exit_code != 0 and "--jobs goes with --band-folds" in refused.output
    assert not (tmp_path / "r").exists()

    recipe += ["--band-folds", "2", "--band-view", "char"]
    alone, side_by_side = tmp_path / "alone", tmp_path / "side-by-side"
    assert CliRunner().invoke(main, [*base, str(alone), *recipe]).exit_code == 0
    done = CliRunner().invoke(main, [*base, str(side_by_side), *recipe, "--jobs", "2"])
    assert done.exit_code == 0, done.output
    assert "band folds: 4 encoders (2 folds x 2: 1 + char)" in done.output
    assert read_folds(side_by_side) == read_folds(alone)
    posts = ["one post", "another post, longer than the first", "and a third: with, punctuation!"]
    names = [".", "band-fold-1", "band-fold-1-char", "band-fold-2", "band-fold-2-char"]
    for name in names:
        (model, manifest), (model_alone, manifest_alone) = (load_ngram_style(f / name) for f in (side_by_side, alone))
        assert manifest["settings"] == manifest_alone["settings"] and manifest["excluded"] == manifest_alone["excluded"]
        assert manifest["steps_done"] == manifest_alone["steps_done"]
        # the same recipe; only the threads' summation order may differ
        assert np.allclose(model.embed(posts), model_alone.embed(posts), atol=1e-5), name
    different = [load_ngram_style(side_by_side / name)[0].embed(posts) for name in names]
    assert not np.allclose(different[1], different[2])  # the check can tell encoders apart


def test_a_failing_side_by_side_pre_training_reaches_the_caller(forum_slice: Path):
    broken = FoldEncoder("band-fold-1", 0, Exclusions(), settings=None)  # no settings: fails inside the worker
    with pytest.raises(AttributeError, match="seed"):
        pretrain_fold_encoders(forum_slice, [broken, broken._replace(name="band-fold-2", fold=1)], jobs=2)


def test_the_jobs_benchmark_times_each_jobs_value_and_compares_the_encoders(
    forum_slice: Path, slice_set: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
):
    from helpers.benchmark_script import load_benchmark

    script = load_benchmark("band_fold_jobs")
    argv = ["--posts", str(forum_slice), "--set", str(slice_set), "--out", str(tmp_path), "--band-folds", "2"]
    script.main([*argv, "--steps", "20", *TINY, "--jobs", "1", "2"])
    rows = [line for line in capsys.readouterr().out.splitlines() if line.startswith("| 1 ") or line.startswith("| 2 ")]
    assert len(rows) == 2 and rows[0].split(" | ")[2] == "1.00"
    assert float(rows[1].split(" | ")[-1].rstrip(" |")) < 1e-5  # the same encoders, two at a time
    for jobs in (1, 2):
        timing = json.loads((tmp_path / f"jobs-{jobs}.json").read_text(encoding="utf-8"))
        assert timing["jobs"] == jobs and timing["wall_s"] > 0 and timing["peak_gb"] > 0
        assert (tmp_path / f"jobs-{jobs}" / "band_folds.json").is_file()
