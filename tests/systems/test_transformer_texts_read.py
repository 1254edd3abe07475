"""A transformer style encoder pre-trained by `harness pretrain-style` keeps the keys of the posts it read, and the
systems that answer with it refuse to answer about them (encoder_wccn, siamese_bilstm, stacked over them,
episode_encoder and reddit_encoder), or to run on a forum split the encoder was not made for: audit 10's F1 and F2,
which the n-gram encoder's consumers got first, for the transformer. Real forum posts, a tiny random encoder."""

from __future__ import annotations

import shutil
from pathlib import Path

import numpy as np
import pytest

pytest.importorskip("torch")
pytest.importorskip("transformers")

from click.testing import CliRunner  # noqa: E402

from core.errors import HarnessError  # noqa: E402
from harness.cli import main  # noqa: E402
from harness.params import build  # noqa: E402
from harness.runner import make_task, run  # noqa: E402
from systems.encoder_wccn import EncoderWccn  # noqa: E402
from systems.forum_encoder.system import EpisodeEncoder  # noqa: E402
from systems.siamese_bilstm.system import SiameseBiLSTM  # noqa: E402
from systems.stacked import StackedEnsemble  # noqa: E402
from systems.style_encoder.corpus import Exclusions, pretraining_corpus  # noqa: E402
from tasks.pairs import build_pairs  # noqa: E402
from tasks.pan.pan23 import Pan23Task  # noqa: E402
from toolkit.pretrained import STYLE_PRETRAINING_MANIFEST  # noqa: E402
from toolkit.read_texts import READ_KEYS_FILE, folder_read_keys, prepared_keys, text_keys  # noqa: E402
from toolkit.text_prep import prepare_text  # noqa: E402

READ = "was pre-trained on "


@pytest.fixture(scope="module")
def slice_set(forum_slice: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("read-set") / "set"
    build_pairs("forum", forum_slice, out, pairs=60, seed=0)
    return out


@pytest.fixture(scope="module")
def models(forum_slice: Path, slice_set: Path, tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """Tiny encoders pre-trained on every post ("read-all"), without the set's test side ("clean"), and on the reddit
    task's training split ("darkweb")."""
    from helpers.tiny_encoder import make_tiny_encoder

    root = tmp_path_factory.mktemp("read-models")
    tiny = make_tiny_encoder(root / "tiny", layers=2, hidden=16)
    made = {}
    for name, extra in (
        ("read-all", []),
        ("clean", ["--exclude-test-of", str(slice_set)]),
        ("darkweb", ["--train-split-of", "darkweb"]),
    ):
        made[name] = root / name
        args = ["pretrain-style", str(forum_slice), str(made[name]), "--model", str(tiny), "--steps", "2"]
        done = CliRunner().invoke(main, [*args, "--device", "cpu", *extra])
        assert done.exit_code == 0, done.output
    return made


def wccn_params(model: Path, tmp_path: Path) -> dict:
    encoder = {"encoder.model": str(model), "encoder.layers": [2], "encoder.max_tokens": 32}
    return encoder | {"dimensions": 6, "calibration_folds": 2, "grid_step": 0.05, "device": "cpu",
                      "cache_dir": str(tmp_path / "cache")}  # fmt: skip


def test_pre_training_keeps_the_keys_of_every_post_it_read(forum_slice: Path, slice_set: Path, models):
    """Held-out authors' posts too: they chose the kept step."""
    read_all = np.load(models["read-all"] / READ_KEYS_FILE)
    everything = pretraining_corpus(forum_slice, Exclusions())
    assert np.array_equal(read_all, text_keys(text for texts in everything.texts for text in texts))
    test = Pan23Task().load(slice_set, "test")
    texts = {text for problem in test.problems for text in problem.texts}
    long = [text for text in texts if len(prepare_text(text)) >= 30]  # shorter posts are not pre-trained on
    assert 0 < len(long) < len(texts) and np.isin(prepared_keys(long), read_all).all()
    assert not np.isin(prepared_keys(texts), np.load(models["clean"] / READ_KEYS_FILE)).any()


def test_encoder_wccn_refuses_to_answer_about_texts_its_encoder_read(slice_set: Path, models, tmp_path: Path):
    """Before this, an encoder pre-trained on the test side answered silently; from its checkpoint and through
    `harness run` as well. Pre-trained without the test side, it answers."""
    task = Pan23Task()
    train, test = task.load(slice_set, "train"), task.load(slice_set, "test")
    system = build(EncoderWccn, wccn_params(models["read-all"], tmp_path))
    system.fit(train, seed=0)  # its training texts were read too: that is no leak
    texts = {text for problem in test.problems for text in problem.texts}
    read = int(np.isin(prepared_keys(texts), np.load(models["read-all"] / READ_KEYS_FILE)).sum())
    with pytest.raises(HarnessError, match=f"encoder_wccn: the encoder at {models['read-all']} {READ}") as refused:
        system.predict(test.problems)
    assert f"{READ}{read} of the {len(texts)} texts it is asked to answer about" in str(refused.value)
    assert "(the same `harness pretrain-style` command and `--encoder`" in str(refused.value)  # audit 11, F4
    system.save(tmp_path / "checkpoint")
    with pytest.raises(HarnessError, match=READ):
        EncoderWccn.load(tmp_path / "checkpoint").predict(test.problems)
    settings = {"system_name": "encoder_wccn", "task_name": "pan23", "data": slice_set, "out_dir": tmp_path / "runs"}
    with pytest.raises(HarnessError, match=READ):
        run(**settings, params=wccn_params(models["read-all"], tmp_path))
    assert 0 <= run(**settings, params=wccn_params(models["clean"], tmp_path)).result["scores"]["auc"] <= 1


def test_siamese_bilstm_and_stacked_refuse_it_too(slice_set: Path, models, tmp_path: Path):
    task = Pan23Task()
    train, test = task.load(slice_set, "train"), task.load(slice_set, "test")
    encoder = {"encoder.model": str(models["read-all"]), "encoder.layers": [2], "encoder.max_tokens": 32}
    small = {"head.hidden_size": 4, "training.epochs": 1, "training.batch_size": 8, "training.steps_per_epoch": 2}
    siamese = build(SiameseBiLSTM, encoder | small | {"calibration.grid_step": 0.05, "device": "cpu"})
    siamese.fit(train, seed=0)
    with pytest.raises(HarnessError, match=f"siamese_bilstm: the encoder at {models['read-all']} {READ}"):
        siamese.predict(test.problems)
    siamese.save(tmp_path / "siamese")
    with pytest.raises(HarnessError, match=READ):
        SiameseBiLSTM.load(tmp_path / "siamese").predict(test.problems)
    member = wccn_params(models["read-all"], tmp_path)
    stacked = StackedEnsemble(
        members=("encoder_wccn", "length_ratio"), member_params={"encoder_wccn": member}, select="all", folds=2
    )
    stacked.fit(train, seed=0)  # its members score held-out training problems: no refusal
    assert stacked.scores(train.problems).shape == (len(train.problems),)
    with pytest.raises(HarnessError, match=f"encoder_wccn: the encoder at {models['read-all']} {READ}"):
        stacked.scores(test.problems)  # the scores a model over it reads are refused as its answers are
    said = rf"stacked: the encoder at {models['read-all']} \(member encoder_wccn\) {READ}"
    with pytest.raises(HarnessError, match=said):
        stacked.predict(test.problems)
    stacked.save(tmp_path / "stacked")
    with pytest.raises(HarnessError, match=READ):
        StackedEnsemble.load(tmp_path / "stacked").predict(test.problems)

    # audit 11, F2 and F3: a member fitted on part of the training split counts the rest as training data too, when
    # stacked reads its answers on held-out training problems and when its fold members answer a repeated text
    member = wccn_params(models["clean"], tmp_path)
    for values in ("answers", "scores"):
        clean = StackedEnsemble(members=("encoder_wccn", "length_ratio"), member_params={"encoder_wccn": member},
                                select="all", folds=2, member_values=values)  # fmt: skip
        clean.fit(train, seed=0)
        assert len(clean.predict(train.problems + test.problems)) == len(train.problems + test.problems)


def test_a_chain_of_pre_trainings_keeps_what_its_first_one_read(forum_slice: Path, slice_set: Path, models, tmp_path):
    """Audit 11, F1: an encoder fine-tuned from one that read the test texts answered about them unrefused."""
    chained = tmp_path / "chained"
    args = ["pretrain-style", str(forum_slice), str(chained), "--model", str(models["read-all"]), "--steps", "2"]
    done = CliRunner().invoke(main, [*args, "--device", "cpu", "--exclude-test-of", str(slice_set)])
    assert done.exit_code == 0, done.output
    base = np.load(models["read-all"] / READ_KEYS_FILE)
    assert np.isin(base, np.load(chained / READ_KEYS_FILE)).all()
    task = Pan23Task()
    system = build(EncoderWccn, wccn_params(chained, tmp_path))
    system.fit(task.load(slice_set, "train"), seed=0)
    with pytest.raises(HarnessError, match=f"the encoder at {chained} {READ}"):
        system.predict(task.load(slice_set, "test").problems)


@pytest.mark.parametrize(
    ("kind", "message"),
    [
        ("folder", "cannot read the keys of the texts the encoder read"),
        ("dangling", "cannot read the keys of the texts the encoder read"),
        ("objects", "not an array of text keys"),
        ("int64", "expected one row of uint64 text keys, found int64"),
    ],
)
def test_a_bad_keys_file_is_refused_not_skipped(kind: str, message: str, tmp_path: Path):
    """Audit 11, F5: a folder or a dangling link there was read as "no keys", and the encoder went unchecked."""
    path = tmp_path / READ_KEYS_FILE
    if kind == "folder":
        path.mkdir()
    elif kind == "dangling":
        path.symlink_to(tmp_path / "gone.npy")
    elif kind == "objects":
        np.save(path, np.array([{"a": 1}], dtype=object), allow_pickle=True)
    else:
        np.save(path, np.arange(3, dtype=np.int64))
    with pytest.raises(HarnessError, match=f"{path}: {message}"):
        folder_read_keys(tmp_path)


def test_keys_in_either_byte_order_are_read(tmp_path: Path):
    np.save(tmp_path / READ_KEYS_FILE, np.array([3, 1], dtype=">u8"))
    assert folder_read_keys(tmp_path).tolist() == [3, 1]
    assert folder_read_keys(tmp_path / "none") is None and folder_read_keys(None) is None


def test_episode_encoder_runs_only_on_the_split_its_encoder_was_made_for(forum_slice: Path, models, tmp_path: Path):
    """A model pre-trained on another split of these posts, or on all of them, may know the test authors from their
    other posts: refused before training. One made for this split answers, and one that read test posts (a folder
    without its manifest here) is refused when it embeds them, also from its checkpoint."""
    settings = {"system_name": "episode_encoder", "task_name": "darkweb", "data": forum_slice}
    params = {"device": "cpu", "training.epochs": 1}
    for name, task_params, message in (
        ("darkweb", {"min_posts": 60}, "was pre-trained on the training split of darkweb, not on this run's"),
        ("read-all", {}, "was pre-trained on these posts, its test side included"),
    ):
        with pytest.raises(HarnessError, match=message):
            run(**settings, out_dir=tmp_path / name, params=params | {"encoder.model": str(models[name])},
                task_params=task_params)  # fmt: skip
    done = run(**settings, out_dir=tmp_path / "ok", params=params | {"encoder.model": str(models["darkweb"])})
    assert 0 <= done.result["scores"]["mrr"] <= 1
    made_for = EpisodeEncoder.load(done.run_dir / "checkpoint")._pretrained_read
    assert made_for is not None and len(made_for.keys) == 0  # nothing read outside the split (test_forum_ngram_style)
    bare = tmp_path / "bare"
    shutil.copytree(models["read-all"], bare)
    (bare / STYLE_PRETRAINING_MANIFEST).unlink()
    task = make_task("darkweb", {})
    train, test = task.load(forum_slice, "train"), task.load(forum_slice, "test")
    system = build(EpisodeEncoder, params | {"encoder.model": str(bare)})
    system.fit(train, seed=0)
    samples = list(test.episodes[:5])
    with pytest.raises(HarnessError, match=f"episode_encoder: the encoder at {bare} {READ}"):
        system.embed(samples)
    system.save(tmp_path / "checkpoint")
    with pytest.raises(HarnessError, match=READ):
        EpisodeEncoder.load(tmp_path / "checkpoint").embed(samples)
