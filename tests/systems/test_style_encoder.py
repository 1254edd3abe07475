"""Style-encoder pre-training on real forum posts: what a pair set's test side holds is left out, batches hold
distinct authors with posts of two threads (and two kinds where asked), and the result is a model folder that
encoder_wccn reads, written whole, never over a user's folder."""

from __future__ import annotations

import gzip
import json
import logging
import shutil
from pathlib import Path

import numpy as np
import pytest

pytest.importorskip("torch")
pytest.importorskip("transformers")

from click.testing import CliRunner  # noqa: E402

from core.errors import DataError, HarnessError  # noqa: E402
from harness.cli import main  # noqa: E402
from harness.params import build  # noqa: E402
from systems.encoder_wccn import EncoderWccn  # noqa: E402
from systems.style_encoder.corpus import (  # noqa: E402
    Exclusions,
    excluded_by_sets,
    pretraining_corpus,
    training_split_of,
)
from systems.style_encoder.pretraining import (  # noqa: E402
    MANIFEST_NAME,
    PairSampler,
    StylePretraining,
    preset,
    pretrain_style_encoder,
)
from tasks.forum.reader import read_forum_posts  # noqa: E402
from tasks.pairs import build_pairs  # noqa: E402
from tasks.pan.pan23 import Pan23Task  # noqa: E402


@pytest.fixture(scope="module")
def slice_set(forum_slice: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A cross-kind pair set built from the real forum slice."""
    out = tmp_path_factory.mktemp("style-set") / "set"
    build_pairs("forum", forum_slice, out, pairs=60, seed=0)
    return out


def test_the_test_side_of_a_pair_set_is_left_out(forum_slice: Path, slice_set: Path):
    exclusions = excluded_by_sets([slice_set])
    test_authors = {
        name
        for line in (slice_set / "test" / "truth.jsonl").read_text(encoding="utf-8").splitlines()
        for name in json.loads(line)["authors"]
    }
    assert exclusions.authors == test_authors and exclusions.groups and exclusions.post_ids
    corpus = pretraining_corpus(forum_slice, exclusions)
    everything = pretraining_corpus(forum_slice, Exclusions())
    assert not set(corpus.authors) & test_authors
    assert not {thread for threads in corpus.threads for thread in threads} & exclusions.groups
    assert test_authors <= set(everything.authors)  # they were there to leave out
    assert corpus.left_out["excluded_author"] > 0 and corpus.posts < everything.posts
    assert all(len(texts) >= 2 for texts in corpus.texts)


def test_the_corpus_does_not_follow_the_files_line_order(forum_slice: Path, tmp_path: Path):
    """Pre-training's seeded draws pick an author's posts by position: the same posts in another line order gave other
    weights and scores (audit 7, G1). Each author's posts come oldest first, ties by post id."""
    posts = forum_slice / "posts.jsonl" if forum_slice.is_dir() else forum_slice
    from toolkit.text_prep import prepare_text

    lines = posts.read_text(encoding="utf-8").splitlines(keepends=True)
    first = next(r for r in map(json.loads, lines) if len(prepare_text(r["text"])) >= 30)  # one the corpus keeps
    twin = {**first, "post_id": first["post_id"] + "-twin", "text": "a later post of the same second, by its id"}
    (tmp_path / "forward.jsonl").write_text("".join(lines) + json.dumps(twin) + "\n", encoding="utf-8")
    (tmp_path / "backward.jsonl").write_text(json.dumps(twin) + "\n" + "".join(lines[::-1]), encoding="utf-8")
    forward = pretraining_corpus(tmp_path / "forward.jsonl", Exclusions())
    backward = pretraining_corpus(tmp_path / "backward.jsonl", Exclusions())
    assert forward.texts == backward.texts and forward.kinds == backward.kinds and forward.threads == backward.threads
    assert forward.communities == backward.communities and forward.authors == backward.authors
    own = forward.texts[forward.authors.index(first["author"])]
    assert own.index(prepare_text(twin["text"])) == own.index(prepare_text(first["text"])) + 1


def test_a_set_with_gzipped_files_leaves_out_the_same(slice_set: Path, tmp_path: Path):
    """pan23 reads a set's truth.jsonl.gz; exclusion said "not found", and so did --band-folds (audit 10, F8)."""
    from systems.style_encoder.band_folds import training_pair_folds

    zipped = tmp_path / "zipped"
    shutil.copytree(slice_set, zipped)
    for path in (zipped / "test" / "truth.jsonl", zipped / "train" / "truth.jsonl", zipped / "pair_origins.jsonl"):
        path.with_name(path.name + ".gz").write_bytes(gzip.compress(path.read_bytes()))
        path.unlink()
    plain, gzipped = excluded_by_sets([slice_set]), excluded_by_sets([zipped])
    assert (gzipped.authors, gzipped.groups, gzipped.post_ids) == (plain.authors, plain.groups, plain.post_ids)
    folds, plain_folds = training_pair_folds(zipped, 2, seed=0)[0], training_pair_folds(slice_set, 2, seed=0)[0]
    assert [(ids, part.authors) for ids, part in folds] == [(ids, part.authors) for ids, part in plain_folds]


def test_a_set_without_origins_or_with_bad_authors_is_refused(slice_set: Path, tmp_path: Path):
    bare = tmp_path / "bare"
    (bare / "test").mkdir(parents=True)
    (bare / "test" / "truth.jsonl").write_text('{"id": "a", "same": true, "authors": ["x", "x"]}\n')
    with pytest.raises(HarnessError, match="expected pair_origins.jsonl or pair_origins.jsonl.gz in this directory"):
        excluded_by_sets([bare])
    (bare / "pair_origins.jsonl").write_text((slice_set / "pair_origins.jsonl").read_text(encoding="utf-8"))
    (bare / "test" / "truth.jsonl").write_text('{"id": "a", "same": true, "authors": ["x", "x"]}\n{"id": "b"}\n')
    with pytest.raises(DataError) as caught:
        excluded_by_sets([bare])
    assert caught.value.line == 2 and caught.value.field == "authors"


def test_a_set_that_would_leave_nothing_out_is_refused(forum_slice: Path, slice_set: Path, tmp_path: Path):
    """A set built from other posts, or origins without their split, would let pre-training see what it scores."""
    other = tmp_path / "other"
    shutil.copytree(slice_set, other)
    truth = other / "test" / "truth.jsonl"
    rows = [json.loads(line) for line in truth.read_text(encoding="utf-8").splitlines()]
    truth.write_text("".join(json.dumps({**r, "authors": ["nobody-a", "nobody-b"]}) + "\n" for r in rows))
    origins = other / "pair_origins.jsonl"
    records = [json.loads(line) for line in origins.read_text(encoding="utf-8").splitlines()]
    other_posts = [{**r, "groups": [["elsewhere"]] * 2, "origins": ["x#none", "x#none"]} for r in records]
    origins.write_text("".join(json.dumps(r) + "\n" for r in other_posts))
    with pytest.raises(HarnessError, match="nothing would be left out: was the set built from other posts"):
        pretraining_corpus(forum_slice, excluded_by_sets([other]))
    origins.write_text("".join(json.dumps({k: v for k, v in r.items() if k != "split"}) + "\n" for r in records))
    with pytest.raises(DataError) as caught:
        excluded_by_sets([other])
    assert caught.value.line == 1 and caught.value.field == "split"


@pytest.mark.parametrize("task_name", ["reddit", "darkweb"])
def test_for_a_forum_task_only_its_training_split_is_kept(forum_slice: Path, task_name: str):
    """Issue 27, item 2: an encoder pre-trained for the darkweb or reddit task learns only from the posts that task's
    systems may fit on; its test posts (reddit: test authors, and every post after the cutoff) stay out."""
    from harness.runner import make_task
    from tasks.forum.reader import read_forum_posts
    from toolkit.text_prep import prepare_text

    task = make_task(task_name, {})
    kept = training_split_of(task, task_name, {}, forum_slice)
    corpus = pretraining_corpus(forum_slice, Exclusions(only_post_ids=kept))
    everything = pretraining_corpus(forum_slice, Exclusions())
    posts, _ = read_forum_posts(forum_slice / "posts.jsonl")
    kept_texts = {prepare_text(post.text) for post in posts if post.post_id in kept}
    assert all(text in kept_texts for texts in corpus.texts for text in texts)
    assert corpus.left_out["outside_training_split"] > 0 and corpus.posts < everything.posts
    if task_name == "reddit":
        from tasks.reddit.split import is_test_author

        assert not [author for author in corpus.authors if is_test_author(author, task.test_author_share, 0)]
    test_ids = {post.post_id for post in task.load(forum_slice, "test").posts} if task_name == "darkweb" else set()
    assert not kept & test_ids
    with pytest.raises(HarnessError, match="--train-split-of takes a task that splits a posts file itself"):
        training_split_of(Pan23Task(), "pan23", {}, forum_slice)


def test_batches_hold_distinct_authors_with_posts_of_two_threads_and_kinds(forum_slice: Path):
    corpus = pretraining_corpus(forum_slice, Exclusions())
    authors = list(range(len(corpus.authors)))
    settings = StylePretraining(authors_per_batch=16, cross_kind_share=1.0, match_community=False)
    sampler = PairSampler(corpus, authors, settings, seed=0)
    crossed = apart = possible_apart = 0
    for _ in range(20):
        batch = sampler.batch()
        assert len(batch) == 16 and len({author for author, _, _ in batch}) == 16
        for author, first, second in batch:
            assert first != second
            kinds, threads = corpus.kinds[author], corpus.threads[author]
            if len(set(kinds)) > 1:
                crossed += kinds[first] != kinds[second]
                assert kinds[first] != kinds[second]
            possible_apart += len(set(threads)) > 1
            apart += threads[first] != threads[second]
    assert crossed > 0
    assert apart >= 0.9 * possible_apart  # a cross-kind draw may leave only posts of the same thread


def test_community_batches_draw_every_post_from_one_community(forum_slice: Path):
    corpus = pretraining_corpus(forum_slice, Exclusions())
    sampler = PairSampler(corpus, list(range(len(corpus.authors))), StylePretraining(authors_per_batch=8), seed=1)
    seen = set()
    for _ in range(30):
        batch = sampler.batch()
        communities = {corpus.communities[a][i] for a, i, _ in batch} | {corpus.communities[a][j] for a, _, j in batch}
        assert len(communities) == 1 and len({a for a, _, _ in batch}) == len(batch) >= 2
        seen |= communities
    assert len(seen) > 1  # communities take turns


def test_a_bad_post_is_named_by_file_line_and_field(tmp_path: Path):
    posts = tmp_path / "posts.jsonl"
    good = {"post_id": "p1", "author": "a", "market": "m", "thread_id": "t", "subforum": "s", "kind": "comment"}
    good |= {"created": 0, "text": "x" * 40}
    # checked as the forum tasks check them, with their words: a bad or blank author, a blank thread, a repeated id
    cases = ({"author": 7}, "author"), ({"author": " "}, "author"), ({"thread_id": ""}, "thread_id")
    for bad, field in (*cases, ({"post_id": "p1"}, "post_id")):
        posts.write_text(json.dumps(good) + "\n" + json.dumps(good | {"post_id": "p2"} | bad) + "\n")
        with pytest.raises(DataError) as caught:
            pretraining_corpus(tmp_path, Exclusions())
        assert caught.value.path == str(posts) and caught.value.line == 2 and caught.value.field == field
        with pytest.raises(DataError) as read:
            read_forum_posts(posts)
        assert str(caught.value) == str(read.value)


def test_presets_and_bad_settings():
    assert preset("gpu").authors_per_batch == 256 and preset("gpu").trainable_layers is None
    assert preset("cpu", steps=7).steps == 7 and preset("cpu", steps=None).steps == StylePretraining().steps
    with pytest.raises(HarnessError, match="unknown preset"):
        preset("tpu")
    for bad in ({"steps": 0}, {"trainable_layers": 0}, {"temperature": 0.0}, {"eval_every": 0}):
        with pytest.raises(HarnessError):
            StylePretraining(**bad)


def test_pretraining_writes_a_model_folder_encoder_wccn_reads(forum_slice: Path, slice_set: Path, tmp_path: Path):
    from helpers.tiny_encoder import make_tiny_encoder

    encoder = make_tiny_encoder(tmp_path / "tiny", layers=2, hidden=16)
    exclusions = excluded_by_sets([slice_set])
    corpus = pretraining_corpus(forum_slice, exclusions)
    settings = StylePretraining(
        model=str(encoder), max_tokens=32, steps=4, authors_per_batch=8, held_out_authors=10, eval_every=2, device="cpu"
    )
    out = tmp_path / "style"
    manifest = pretrain_style_encoder(corpus, exclusions, out, settings)
    history = manifest["held_out_pair_auc"]["history"]
    assert [step for step, _ in history] == [0, 2, 4]
    kept = max(history, key=lambda item: item[1])
    assert manifest["held_out_pair_auc"]["kept_step"] == kept[0] and manifest["held_out_pair_auc"]["after"] == kept[1]
    assert manifest["excluded"]["authors"] == len(exclusions.authors) and manifest["steps_done"] == 4
    assert json.loads((out / MANIFEST_NAME).read_text(encoding="utf-8")) == manifest
    assert not [entry for entry in tmp_path.iterdir() if entry.name.startswith(".style.")]  # no staging left

    # a verifier reads it as any encoder: its layer 2 is the trained embedding
    task = Pan23Task()
    train = task.load(slice_set, "train")
    system = build(
        EncoderWccn,
        {
            "encoder.model": str(out),
            "encoder.layers": [2],
            "encoder.max_tokens": 32,
            "dimensions": 8,
            "calibration_folds": 2,
            "device": "cpu",
            "cache_dir": str(tmp_path / "cache"),
        },
    )
    system.fit(train, seed=0)
    scores = system.raw_scores(train.problems)
    assert scores.shape == (len(train.problems),) and np.isfinite(scores).all()
    # its files are in a run's fingerprint, so one pre-trained again into the folder is fitted again (audit 10, F3);
    # so are a plain Hugging Face folder's (audit 22, F1); the default encoder, a pinned package, stays out of it
    from toolkit.pretrained import encoder_identity

    assert system.input_checksums() == {"encoder.model": "sha256:" + encoder_identity(out)}
    plain = {"encoder.model": "sha256:" + encoder_identity(encoder)}
    assert build(EncoderWccn, {"encoder.model": str(encoder)}).input_checksums() == plain
    assert EncoderWccn().input_checksums() == {}

    # never over a folder that holds something
    with pytest.raises(HarnessError, match="not empty"):
        pretrain_style_encoder(corpus, exclusions, out, settings)


def test_a_folder_that_appears_during_pre_training_is_kept(
    forum_slice: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
):
    from helpers.tiny_encoder import make_tiny_encoder

    import systems.style_encoder.pretraining as pretraining

    encoder = make_tiny_encoder(tmp_path / "tiny", layers=2, hidden=16)
    corpus = pretraining_corpus(forum_slice, Exclusions())
    settings = StylePretraining(
        model=str(encoder), max_tokens=32, steps=2, authors_per_batch=8, held_out_authors=10, eval_every=2, device="cpu"
    )
    out = tmp_path / "style"
    evaluated = pretraining.pair_auc

    def user_writes_there(*args):  # the held-out evaluation runs during training: the user's file lands meanwhile
        out.mkdir(exist_ok=True)
        (out / "notes.txt").write_text("keep me")
        return evaluated(*args)

    monkeypatch.setattr(pretraining, "pair_auc", user_writes_there)
    with pytest.raises(HarnessError, match="not empty"):
        pretrain_style_encoder(corpus, Exclusions(), out, settings)
    assert [path.name for path in out.iterdir()] == ["notes.txt"] and (out / "notes.txt").read_text() == "keep me"


def test_the_command_refuses_a_non_empty_folder_and_trains(forum_slice: Path, slice_set: Path, tmp_path: Path):
    from helpers.tiny_encoder import make_tiny_encoder

    encoder = make_tiny_encoder(tmp_path / "tiny", layers=2, hidden=16)
    mine = tmp_path / "mine"
    mine.mkdir()
    (mine / "notes.txt").write_text("keep me")
    args = ["pretrain-style", str(forum_slice), "--model", str(encoder), "--steps", "2", "--device", "cpu"]
    refused = CliRunner().invoke(main, [*args[:2], str(mine), *args[2:]])
    assert refused.exit_code != 0 and "not empty" in refused.output
    broken = tmp_path / "broken" / "posts.jsonl"
    broken.parent.mkdir()
    broken.write_text("{not json\n")
    early = CliRunner().invoke(main, ["pretrain-style", str(broken.parent), str(mine), "--steps", "2"])
    assert "not empty" in early.output and "malformed" not in early.output  # refused before the posts are read
    assert (mine / "notes.txt").read_text() == "keep me" and len(list(mine.iterdir())) == 1
    done = CliRunner().invoke(main, [*args[:2], str(tmp_path / "new"), *args[2:], "--exclude-test-of", str(slice_set)])
    assert done.exit_code == 0, done.output
    assert "held-out authors' pair AUC" in done.output and (tmp_path / "new" / "config.json").is_file()
    # the corpus's authors, then how many trained and how many measured (audit 25, F5: "N posts of <trained> authors")
    manifest = json.loads((tmp_path / "new" / MANIFEST_NAME).read_text(encoding="utf-8"))
    trained, held = manifest["training_authors"], manifest["held_out_authors"]
    told = f"of {manifest['corpus']['authors']} authors ({trained} trained on, {held} held out)"
    assert told in done.output and trained + held == manifest["corpus"]["authors"], done.output
    assert "--system encoder_wccn" in done.output and "--param whiten=auto" in done.output  # chosen on training data


def test_the_gpu_preset_on_a_cpu_says_it_will_take_hours(
    forum_slice: Path, tmp_path: Path, caplog: pytest.LogCaptureFixture
):
    from helpers.tiny_encoder import make_tiny_encoder

    encoder = make_tiny_encoder(tmp_path / "tiny", layers=2, hidden=16)
    base = ["pretrain-style", str(forum_slice), "--model", str(encoder), "--steps", "1", "--device", "cpu"]
    for name, warned in (("cpu", False), ("gpu", True)):
        caplog.clear()
        with caplog.at_level(logging.WARNING, logger="harness"):
            done = CliRunner().invoke(main, [*base, str(tmp_path / name), "--preset", name, "--authors-per-batch", "4"])
        assert done.exit_code == 0, done.output
        said = "preset 'gpu' is sized for a GPU and will train on the CPU"
        assert any(said in record.getMessage() for record in caplog.records) == warned


def test_the_command_pre_trains_on_a_forum_tasks_training_split(forum_slice: Path, tmp_path: Path):
    from helpers.tiny_encoder import make_tiny_encoder

    encoder = make_tiny_encoder(tmp_path / "tiny", layers=2, hidden=16)
    base = ["pretrain-style", str(forum_slice), "--model", str(encoder), "--steps", "2", "--device", "cpu"]
    args = [*base, str(tmp_path / "new"), "--train-split-of", "reddit", "--task-param", "cutoff_quantile=0.6"]
    done = CliRunner().invoke(main, args)
    assert done.exit_code == 0, done.output
    manifest = json.loads((tmp_path / "new" / MANIFEST_NAME).read_text(encoding="utf-8"))
    made_for = manifest["excluded"]["training_split_of"]
    assert made_for.pop("split_texts").startswith("sha256:")  # what tells the split a run trains on (forum_ngram_style)
    assert made_for == {"task": "reddit", "task_params": {"cutoff_quantile": 0.6}}
    assert manifest["corpus"]["left_out"]["outside_training_split"] > 0
    assert "--system reddit_encoder --task reddit" in done.output and "encoder.pooling=cls" in done.output
    assert "--task-param 'cutoff_quantile=0.6'" in done.output  # the run that follows splits the posts alike
    alone = CliRunner().invoke(main, [*base, str(tmp_path / "new2"), "--task-param", "cutoff_quantile=0.6"])
    assert alone.exit_code != 0 and "--task-param goes with --train-split-of" in alone.output
    wrong = CliRunner().invoke(main, [*base, str(tmp_path / "new2"), "--train-split-of", "pan23"])
    assert wrong.exit_code != 0 and "splits a posts file itself" in wrong.output
    assert not (tmp_path / "new2").exists()


def test_transformer_band_folds_give_encoder_wccn_out_of_sample_scores(
    forum_slice: Path, slice_set: Path, tmp_path: Path
):
    from helpers.tiny_encoder import make_tiny_encoder

    from toolkit.band_folds import band_rows, read_folds
    from toolkit.calibration import training_labels
    from toolkit.style_space import text_authors

    encoder = make_tiny_encoder(tmp_path / "tiny", layers=2, hidden=16)
    out = tmp_path / "style"
    base = ["pretrain-style", str(forum_slice), str(out), "--model", str(encoder), "--steps", "2", "--device", "cpu"]
    base += ["--exclude-test-of", str(slice_set), "--band-folds", "2"]
    for extra, message in ((["--band-repeats", "2"], "--band-repeats: --encoder ngram's"),
                           (["--jobs", "2"], "--jobs: --encoder ngram's")):  # fmt: skip
        refused = CliRunner().invoke(main, [*base, *extra])
        assert refused.exit_code != 0 and message in refused.output and not out.exists()
    done = CliRunner().invoke(main, base)
    assert done.exit_code == 0, done.output
    assert "band folds: 2 encoders" in done.output and "--param encoder.model=" in done.output
    assert not [entry for entry in tmp_path.iterdir() if entry.name.startswith(".style.")]  # no staging left
    record = read_folds(out)
    assert record is not None and [fold["folders"] for fold in record["folds"]] == [["band-fold-1"], ["band-fold-2"]]
    main_manifest = json.loads((out / MANIFEST_NAME).read_text(encoding="utf-8"))
    assert main_manifest["band_folds"]["pairs"] == [len(fold["pair_ids"]) for fold in record["folds"]]
    task = Pan23Task()
    train, test = task.load(slice_set, "train"), task.load(slice_set, "test")
    authors_of = {problem_id: set(truth.authors or ()) for problem_id, truth in train.truth.items()}
    for k, fold in enumerate(record["folds"], 1):
        manifest = json.loads((out / f"band-fold-{k}" / MANIFEST_NAME).read_text(encoding="utf-8"))
        assert manifest["excluded"]["sets"] == [str(slice_set), f"{slice_set} (training fold {k} of 2)"]
        assert manifest["use"] == f"--param encoder.model={out / f'band-fold-{k}'} --param encoder.layers=[2]"
        # the fold's encoder learnt from none of the authors of the pairs it scores
        fold_authors = set().union(*(authors_of[pair_id] for pair_id in fold["pair_ids"]))
        corpus = pretraining_corpus(forum_slice, excluded_by_sets([slice_set]))
        assert fold_authors <= set(corpus.authors)  # they were there to leave out
        assert manifest["excluded"]["authors"] >= main_manifest["excluded"]["authors"] + len(fold_authors)

    params = {"encoder.model": str(out), "encoder.layers": [2], "encoder.max_tokens": 32, "dimensions": 6,
              "device": "cpu", "cache_dir": str(tmp_path / "cache"), "grid_step": 0.05}  # fmt: skip
    system = build(EncoderWccn, params | {"whiten": "auto"})
    system.fit(train, seed=0)
    assert system.calibration_info["folds"] == 2 and "out of sample" in system.calibration_info["scores"]
    by_whiten = system.info["out_of_fold_auc_by_whiten"]
    assert system.info["whiten"] == (by_whiten["true"] >= by_whiten["false"])  # chosen on the band pairs, ties: true
    # each fold's space is fitted on the other fold's pairs alone; its scale on its own fold's band pairs
    labels = training_labels(train)
    fold_of = {pair_id: k for k, fold in enumerate(record["folds"]) for pair_id in fold["pair_ids"]}
    in_fold = np.array([problem.id in fold_of for problem in train.problems])
    rows = band_rows(labels, in_fold, seed=0)
    standardised = np.zeros(len(rows))
    for k, space in enumerate(system._folds):
        others = [problem for problem in train.problems if fold_of.get(problem.id, k) not in (k,)]
        texts, _ = text_authors(others, train.truth)
        extractor = system.fold_extractor(space.folder)
        vectors = dict(zip(texts, system._text_vectors(texts, desc="t", extractor=extractor), strict=True))
        assert np.allclose(space.mean, np.mean([vectors[text] for text in texts], axis=0))
        mine = [train.problems[i] for i in rows if fold_of[train.problems[i].id] == k]
        texts_k = list(dict.fromkeys(text for problem in mine for text in problem.texts))
        vectors_k = dict(zip(texts_k, system._text_vectors(texts_k, desc="t", extractor=extractor), strict=True))
        cosines = system._similarities(mine, vectors_k, space.mean, space.projection, space.whitening)
        assert np.allclose(space.scale, (cosines.mean(), cosines.std()))
        standardised[[fold_of[train.problems[i].id] == k for i in rows]] = (cosines - space.scale[0]) / space.scale[1]
    assert system.band == system.fit_band(train, 1 / (1 + np.exp(-standardised)), labels[rows])
    # test problems: the logistic of the mean of both fold encoders' standardised cosines
    each = []
    for space in system._folds:
        texts = list(dict.fromkeys(text for problem in test.problems for text in problem.texts))
        encoded = system._text_vectors(texts, desc="t", extractor=system.fold_extractor(space.folder))
        cosines = system._similarities(
            test.problems, dict(zip(texts, encoded, strict=True)), space.mean, space.projection, space.whitening
        )
        each.append((cosines - space.scale[0]) / space.scale[1])
    assert np.allclose(system.raw_scores(test.problems), 1 / (1 + np.exp(-np.mean(each, axis=0))))

    checkpoint = tmp_path / "checkpoint"
    system.save(checkpoint)
    again = EncoderWccn.load(checkpoint)
    assert np.allclose(again.raw_scores(test.problems), system.raw_scores(test.problems))
    assert [a.value for a in again.predict(test.problems)] == [a.value for a in system.predict(test.problems)]
    make_tiny_encoder(out / "band-fold-2", layers=2, hidden=16, seed=1)  # fold 2's encoder replaced by another
    with pytest.raises(HarnessError, match="another encoder .*band fold encoder 'band-fold-2'"):
        EncoderWccn.load(checkpoint)

    mixed = train._replace(problems=train.problems[:5] + test.problems[:5], truth={**train.truth, **test.truth})
    with pytest.raises(HarnessError, match="5 of 10 training problems .* are in no band fold"):
        build(EncoderWccn, params).fit(mixed, seed=0)
    elsewhere = build(EncoderWccn, params)  # another set (here the test split): the main encoder answers
    elsewhere.fit(test, seed=0)
    assert not elsewhere._folds and elsewhere._mean is not None and elsewhere.calibration_info["folds"] == 5
    # another set of the same seed shares the pair ids (as cmcc-seed0 does forum-seed0's), not the truth (here a few
    # pairs are the same, the rest only share their ids)
    other_set = tmp_path / "other-set"
    build_pairs("forum", forum_slice, other_set, pairs=40, seed=0)
    other = task.load(other_set, "train")
    assert {problem.id for problem in other.problems} & set(fold_of) and other.truth != train.truth
    elsewhere.fit(other, seed=0)
    assert not elsewhere._folds and elsewhere._mean is not None
    assert elsewhere.info["band_folds"] == f"not read: made for {slice_set}, not this set"
    plain = build(EncoderWccn, params | {"encoder.model": str(encoder)})  # a folder without band folds
    plain.fit(train, seed=0)
    assert "band_folds" not in plain.info and plain._mean is not None
