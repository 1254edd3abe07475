"""varlen_linker, iur_fixed, varlen_avg and reddit_tfidf: fit, embed, checkpoints, bad input, DDP."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np
import pytest
from helpers.reddit_data import synthetic_train_data

from harness.errors import HarnessError
from systems.varlen_linker.system import IurFixed, VarlenAvg, VarlenLinker
from systems.varlen_linker.tfidf import RedditTfidf
from tasks.reddit import Action

REPO = Path(__file__).resolve().parents[1]

TINY = {
    "vocab_size": 60,
    "post_length": 8,
    "token_dim": 8,
    "filters": 8,
    "subreddit_dim": 4,
    "attention_dim": 16,
    "embedding_dim": 12,
    "authors_per_batch": 4,
    "samples_per_author": 2,
    "epochs": 2,
    "steps_per_epoch": 3,
    "device": "cpu",
    "cpu_threads": 1,
}


@pytest.fixture(scope="module")
def train():
    return synthetic_train_data(n_authors=10, per_author=20)


@pytest.fixture(scope="module")
def fitted(train) -> dict:
    systems = {}
    for cls in (VarlenLinker, IurFixed, VarlenAvg):
        params = dict(TINY)
        if cls is IurFixed:
            params.update(min_sample_length=4, max_sample_length=4)
        system = cls(**params)
        system.fit(train, seed=0)
        systems[cls.name] = system
    return systems


def samples_of(train, sizes=(1, 3, 9, 20)):
    return [train.streams[i % len(train.streams)].actions[:size] for i, size in enumerate(sizes)]


@pytest.mark.parametrize("name", ["varlen_linker", "iur_fixed", "varlen_avg"])
def test_embed_shapes_and_checkpoint_round_trip(fitted, train, name, tmp_path: Path):
    system = fitted[name]
    samples = samples_of(train)
    embeddings = system.embed(samples)
    assert embeddings.shape == (4, 12) and embeddings.dtype == np.float32 and np.isfinite(embeddings).all()
    system.save(tmp_path / "checkpoint")
    config = json.loads((tmp_path / "checkpoint" / "config.json").read_text())
    assert config["system"] == name and config["params"] == system.params()
    assert config["state"]["training"]["steps_per_process"] == 6
    loaded = type(system).load(tmp_path / "checkpoint")
    assert np.allclose(loaded.embed(samples), embeddings, atol=1e-6)
    assert loaded.params() == system.params() and loaded.metric == "euclidean"


def test_fit_is_reproducible_with_a_seed(train):
    a, b = VarlenLinker(**TINY), VarlenLinker(**TINY)
    a.fit(train, seed=3)
    b.fit(train, seed=3)
    samples = samples_of(train)
    assert np.allclose(a.embed(samples), b.embed(samples), atol=1e-6)


def test_the_three_embedding_modes(fitted, train):
    """varlen embeds whole samples (unit norm); iur averages padded groups of S; avg averages single posts."""
    posts = train.streams[0].actions[:6]
    whole = fitted["varlen_linker"].embed([posts])
    assert np.allclose(np.linalg.norm(whole, axis=1), 1.0, atol=1e-5)
    iur = fitted["iur_fixed"]  # S = 4: groups of posts 0-3 and 4-5 (padded with blanks)
    groups = iur.embed([posts[:4]]), iur.embed([posts[4:]])
    assert np.allclose(iur.embed([posts]), (groups[0] + groups[1]) / 2, atol=1e-5)
    avg = fitted["varlen_avg"]
    singles = avg.embed([[p] for p in posts])
    assert np.allclose(avg.embed([posts]), singles.mean(axis=0, keepdims=True), atol=1e-5)


def test_bad_input(fitted, train):
    system = fitted["varlen_linker"]
    with pytest.raises(HarnessError, match="no posts"):
        system.embed([train.streams[0].actions[:2], ()])
    assert system.embed([]).shape == (0, 12)
    # an empty text embeds like any post
    empty = system.embed([(Action("", 5, 0),), (Action("", 5, 0), Action("a0w1", 6, 1))])
    assert np.isfinite(empty).all()
    # an unknown subreddit index (here beyond the trained buckets) is the "other" bucket
    other = len(train.subreddits)
    unknown = system.embed([(Action("a1w2 a1w3", 4, 99),), (Action("a1w2 a1w3", 4, -3),)])
    assert np.allclose(unknown, system.embed([(Action("a1w2 a1w3", 4, other),)] * 2), atol=1e-6)
    with pytest.raises(HarnessError, match="not fitted"):
        VarlenLinker(**TINY).embed([train.streams[0].actions])


def test_fit_with_authors_shorter_than_the_sample_size():
    short = synthetic_train_data(n_authors=6, per_author=3)  # every author has fewer posts than S = 16
    system = VarlenLinker(**{**TINY, "min_sample_length": 1, "max_sample_length": 16})
    system.fit(short, seed=0)
    assert np.isfinite(system.embed([s.actions for s in short.streams])).all()
    iur = IurFixed(**TINY)  # pads the 3-post samples to 16 in training
    iur.fit(short, seed=0)
    assert iur.embed([short.streams[0].actions]).shape == (1, 12)


def test_bad_parameters_and_too_little_data():
    with pytest.raises(HarnessError, match="loss"):
        VarlenLinker(loss="arcface")
    with pytest.raises(HarnessError):
        VarlenLinker(samples_per_author=1)
    with pytest.raises(HarnessError):
        VarlenLinker(min_sample_length=5, max_sample_length=2)
    with pytest.raises(HarnessError, match="at least 2 authors"):
        VarlenLinker(**TINY).fit(synthetic_train_data(n_authors=1, per_author=5), seed=0)


@pytest.mark.parametrize("loss", ["topk", "ranked_list"])
def test_other_losses_train(train, loss):
    system = VarlenLinker(**{**TINY, "loss": loss, "samples_per_author": 3, "epochs": 1})
    system.fit(train, seed=0)
    assert np.isfinite(system.training_stats["epoch_losses"]).all()


def test_tfidf_baseline(train, tmp_path: Path):
    system = RedditTfidf(min_df=1)
    system.fit(train, seed=0)
    samples = samples_of(train) + [(Action("", 0, 0),), (Action("zzz unseen words", 0, 0),)]
    embeddings = system.embed(samples)
    assert embeddings.shape[0] == 6 and system.metric == "cosine"
    assert np.allclose(np.linalg.norm(embeddings[:4], axis=1), 1.0) and not embeddings[4:].any()  # no known terms
    system.save(tmp_path / "tfidf")
    assert np.allclose(RedditTfidf.load(tmp_path / "tfidf").embed(samples), embeddings)
    # the same author's samples are closer than other authors'
    a, b = system.embed([train.streams[0].actions[:5], train.streams[0].actions[5:10]])
    c = system.embed([train.streams[1].actions[:5]])[0]
    assert a @ b > a @ c


DDP_SCRIPT = textwrap.dedent(
    """
    import hashlib, json, os, sys
    import torch
    from systems.varlen_linker.system import VarlenLinker
    from helpers.reddit_data import synthetic_train_data

    params = json.loads(sys.argv[2])
    system = VarlenLinker(**params)
    system.fit(synthetic_train_data(n_authors=12, per_author=16), seed=0)
    digest = hashlib.sha256()
    for name, tensor in sorted(system._model.state_dict().items()):
        digest.update(tensor.detach().numpy().tobytes())
    record = {"digest": digest.hexdigest(), "stats": system.training_stats,
              "tokenizer": hashlib.sha256(system._tokenizer.model_proto).hexdigest()}
    with open(os.path.join(sys.argv[1], f"rank{os.environ['RANK']}.json"), "w") as handle:
        json.dump(record, handle)
    """
)


def test_ddp_with_two_gloo_processes(tmp_path: Path):
    """torchrun, 2 CPU processes: one tokenizer, identical weights after training, each process half the steps."""
    script = tmp_path / "ddp_fit.py"
    script.write_text(DDP_SCRIPT, encoding="utf-8")
    params = {**TINY, "epochs": 1, "steps_per_epoch": 4}
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(REPO), str(REPO / "tests")]), "OMP_NUM_THREADS": "1"}
    command = [sys.executable, "-m", "torch.distributed.run", "--nproc_per_node=2", "--master_port=0"]
    command += ["--rdzv_backend=c10d", "--rdzv_endpoint=localhost:0", str(script), str(tmp_path), json.dumps(params)]
    done = subprocess.run(command, cwd=REPO, env=env, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr[-3000:]
    ranks = [json.loads((tmp_path / f"rank{r}.json").read_text()) for r in (0, 1)]
    assert ranks[0]["digest"] == ranks[1]["digest"]
    assert ranks[0]["tokenizer"] == ranks[1]["tokenizer"]
    assert all(r["stats"]["processes"] == 2 and r["stats"]["steps_per_process"] == 2 for r in ranks)
