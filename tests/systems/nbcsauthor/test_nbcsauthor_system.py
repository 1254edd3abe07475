"""The systems on small synthetic splits: fitting, embedding, checkpoints, parts of the encoder."""

from __future__ import annotations

import dataclasses
import inspect
from pathlib import Path

import numpy as np
import pytest
import torch
from helpers.darkweb_data import TINY_PARAMS, synthetic_split
from helpers.paths import FIXTURES

from core.errors import HarnessError
from harness.params import build
from harness.runtime import load_like
from harness.system import constructor_params
from systems.baselines.forum_tfidf import EpisodeTfidf
from systems.nbcsauthor.graph import (
    META_PATHS,
    Metapath2Vec,
    RandomInit,
    build_graph,
    meta_path_edges,
    subforum_vectors,
)
from systems.nbcsauthor.losses import CosFace, NBCSoftmax, Softmax
from systems.nbcsauthor.model import EpisodeEncoderConfig, TextCNN
from systems.nbcsauthor.settings import PRESETS, SysmlTraining
from systems.nbcsauthor.system import SYSML, EpisodeAuthor, EpisodeCNN
from systems.nbcsauthor.tokenizer import PAD_ID, PostTokenizer
from tasks.darkweb.evaluation import evaluate_embeddings


@pytest.fixture(scope="module")
def splits():
    return synthetic_split("train", multitask=True), synthetic_split("test")


LEGACY = FIXTURES / "nbcsauthor-legacy-checkpoint"


def tiny(cls: type = EpisodeAuthor, **changes):
    """A tiny system; `changes` in dotted form with "__" for the dot (training__epochs=1)."""
    return build(cls, {**TINY_PARAMS, **{key.replace("__", "."): value for key, value in changes.items()}})


def test_registered_names_differ_only_in_default_parts():
    cpu = PRESETS["cpu"].encoder
    assert (EpisodeAuthor().loss, EpisodeAuthor().encoder) == (NBCSoftmax(tau=0.2, alpha=0.5), cpu)
    assert (SYSML().loss, SYSML().encoder.pooling) == (Softmax(), "transformer")
    assert (EpisodeCNN().loss, EpisodeCNN().encoder) == (Softmax(), dataclasses.replace(cpu, pooling="mean"))
    assert list(inspect.signature(SYSML).parameters) == list(inspect.signature(EpisodeAuthor).parameters)
    assert constructor_params(SYSML(loss=CosFace()))["loss"] == {"name": "cosface", "margin": 0.35, "scale": 64.0}
    # a part's fields start from the registered name's default part, on the preset's sizes
    assert build(EpisodeCNN, {"encoder.text_dim": 64}).encoder == dataclasses.replace(cpu, pooling="mean", text_dim=64)
    paper = build(EpisodeCNN, {"preset": "paper", "encoder.text_dim": 64}).encoder
    assert paper == EpisodeEncoderConfig(pooling="mean", text_dim=64)  # the paper's sizes are the part's defaults
    with pytest.raises(HarnessError, match="loss must be one of"):
        EpisodeAuthor(loss="triplet")


def test_parameters_nest_build_and_refuse_in_one_line():
    system = build(
        SYSML,
        {
            "encoder.heads": 8,
            "loss": "nbc_softmax",
            "loss.tau": 0.3,
            "graph_init": "random",
            "training.lr": 0.01,
            "device": "cpu",
        },
    )
    assert system.encoder.heads == 8 and system.loss == NBCSoftmax(tau=0.3)
    assert system.graph_init == RandomInit() and system.device == "cpu"
    assert system.training == SysmlTraining(epochs=5, batch_size=64, lr=0.01)  # the cpu preset's, lr changed
    assert constructor_params(build(EpisodeAuthor, constructor_params(system))) == constructor_params(system)
    assert list(constructor_params(system)) == [
        "preset",
        "encoder",
        "loss",
        "graph_init",
        "training",
        "device",
        "mixed_precision",
        "embed_batch_size",
    ]
    for params, message in (
        (
            {"encoder.heads": 3},
            r"nbcsauthor: encoder: heads \(3\) must divide text_dim \+ time_dim \+ context_dim \(112\)",
        ),
        ({"encoder.vocab_size": 10}, "nbcsauthor: encoder: vocab_size must be at least 300, got 10"),
        ({"encoder.pooling": "max"}, "encoder: pooling must be one of transformer, mean, not 'max'"),
        ({"loss": "triplet"}, "nbcsauthor: loss must be one of arcface, contrastive, .*, not 'triplet'"),
        ({"loss.alpha": 2}, r"nbcsauthor: loss: alpha must lie in \[0, 1\], got 2"),
        ({"graph_init.walks_per_node": 0}, "graph_init: walks_per_node must be at least 1, got 0"),
        ({"training.batch_size": 1}, "nbcsauthor: training: batch_size must be at least 2, got 1"),
        ({"epochs": 3}, "nbcsauthor has no parameter.s. epochs; it takes: preset, encoder, loss, graph_init"),
        ({"preset": "gpu"}, "nbcsauthor: preset must be one of cpu, full, paper, paper_multitask, not 'gpu'"),
        ({"loss.temperature_form": "power"}, "loss: temperature_form must be one of multiply, divide, not 'power'"),
        ({"training.lr_patience": 5}, "lr_patience needs a validation loss: set validation_share above 0"),
    ):
        with pytest.raises(HarnessError, match=message):
            build(EpisodeAuthor, params)


def test_fit_embed_and_checkpoint_round_trip(splits, tmp_path: Path):
    train, test = splits
    system = tiny()
    system.fit(train, seed=0)
    info = system.info
    assert info["classes"] == {"alpha": 6, "beta": 6, "CROSS": 2} and info["graph_markets"] == ["alpha", "beta"]
    assert len(info["epochs"]) == 2 and all(e["seconds"] > 0 for e in info["epochs"])
    emb = system.embed(test.episodes)
    assert emb.shape == (len(test.episodes), TINY_PARAMS["encoder.output_dim"]) and emb.dtype == np.float32
    system.save(tmp_path / "ckpt")
    loaded = load_like(system, tmp_path / "ckpt")  # its run-time settings (device) are not the checkpoint's
    assert loaded.params() == system.params() and loaded.info == info
    np.testing.assert_allclose(loaded.embed(test.episodes), emb, rtol=1e-5, atol=1e-6)
    # the same seed trains the same model
    again = tiny()
    again.fit(train, seed=0)
    np.testing.assert_allclose(again.embed(test.episodes), emb, rtol=1e-4, atol=1e-5)
    with pytest.raises(HarnessError, match="checkpoint is for system 'nbcsauthor'"):
        SYSML.load(tmp_path / "ckpt")


@pytest.mark.parametrize("cls", [SYSML, EpisodeCNN])
def test_other_names_round_trip(cls, splits, tmp_path: Path):
    train, test = splits
    system = tiny(cls, training__epochs=1)
    system.fit(train, seed=0)
    system.save(tmp_path / "ckpt")
    np.testing.assert_allclose(cls.load(tmp_path / "ckpt").embed(test.episodes[:6]), system.embed(test.episodes[:6]))


def test_a_checkpoint_of_the_flat_format_loads_and_embeds_the_same(tmp_path: Path):
    # written by the code before parts (see the fixture's README): flat parameters, the loss as a string
    test = synthetic_split("test")
    expected = np.load(LEGACY / "embeddings.npy")
    system = EpisodeAuthor.load(LEGACY / "checkpoint")
    assert system.loss == NBCSoftmax(tau=0.3, alpha=0.4) and system.graph_init == Metapath2Vec(walks_per_node=1)
    assert system.training == SysmlTraining(epochs=1, batch_size=8) and system.embed_batch_size == 16
    assert system.encoder == EpisodeEncoderConfig(
        vocab_size=300,
        max_tokens=16,
        token_dim=8,
        filters=4,
        text_dim=8,
        time_dim=4,
        context_dim=4,
        output_dim=8,
        layers=1,
        heads=2,
        ff_dim=16,
    )
    np.testing.assert_allclose(system.embed(test.episodes), expected, rtol=1e-5, atol=1e-6)
    # saved again, it is in today's format, with the same outputs
    system.save(tmp_path / "ckpt")
    again = EpisodeAuthor.load(tmp_path / "ckpt")
    assert again.params() == system.params() and again.params()["loss"]["name"] == "nbc_softmax"
    np.testing.assert_allclose(again.embed(test.episodes), expected, rtol=1e-5, atol=1e-6)


def test_legacy_migration_of_other_losses_and_no_graph():
    flat = {"loss": "softmax", "tau": 0.2, "alpha": 0.5, "pooling": "mean", "graph_init": False}
    flat |= {"graph_epochs": 1, "graph_walks": 3, "epochs": 4, "lr": 0.01, "device": "cpu"}
    migrated = EpisodeAuthor.LEGACY_PARAMS.upgrade(flat)
    assert migrated == {
        "preset": "full",  # the defaults of that time: the parts' own
        "loss": "softmax",  # tau and alpha were NBC-Softmax's alone
        "graph_init": "random",
        "encoder.pooling": "mean",
        "training.epochs": 4,
        "training.lr": 0.01,
        "device": "cpu",
    }
    system = build(EpisodeCNN, migrated)
    assert (system.loss, system.graph_init, system.training) == (
        Softmax(),
        RandomInit(),
        SysmlTraining(epochs=4, lr=0.01),
    )
    assert build(SYSML, EpisodeAuthor.LEGACY_PARAMS.upgrade({"loss": "cosface", "tau": 0.2})).loss == CosFace()


def test_training_learns_the_synthetic_authors(splits):
    train, test = splits
    system = tiny(SYSML, training__epochs=8, training__lr=0.01)
    system.fit(train, seed=1)
    scores = evaluate_embeddings(system.embed(test.episodes), test.episodes).scores
    # 6 authors a market, 3 episodes each: chance MRR is about 0.4
    assert scores["mrr"] > 0.6, scores


@pytest.mark.parametrize("loss", ["cosface", "multi_similarity"])
def test_library_losses_fit(loss: str, splits):
    train, _ = splits
    system = tiny(loss=loss, training__epochs=1)
    system.fit(train._replace(multitask=False), seed=0)
    assert system.info["classes"] == {"all": 12}  # accounts: p0 and p1 count once per market


def test_text_cnn_ignores_padding():
    torch.manual_seed(0)
    cnn = TextCNN(50, token_dim=4, filters=3, out_dim=5, dropout=0.0).eval()
    tokens = torch.tensor([[5, 6, 7, 8, 9, 10, 0, 0]])
    short = cnn(tokens[:, :6], torch.tensor([6]))
    assert torch.allclose(cnn(tokens, torch.tensor([6])), short)  # more padding, same vector
    tiny = torch.tensor([[5, 6, 0, 0, 0, 0, 0]])  # shorter than the widest window
    assert torch.allclose(cnn(tiny, torch.tensor([2])), cnn(tiny[:, :5], torch.tensor([2])))


def test_tokenizer_keeps_placeholders_whole_and_round_trips():
    tokenizer = PostTokenizer.train(["[QUOTE] hello there", "see [LINK] and [IMAGE]", "plain words"] * 5, 300)
    assert "[QUOTE]" in tokenizer.tokens("[QUOTE] hello") and "[PGP PUBKEY]" in tokenizer.tokens("x [PGP PUBKEY]")
    again = PostTokenizer.from_json(tokenizer.to_json())
    assert [a.tolist() for a in again.encode(["héllo wörld 東京"], 8)] == [
        a.tolist() for a in tokenizer.encode(["héllo wörld 東京"], 8)
    ]
    assert len(tokenizer.encode(["a " * 50], 8)[0]) == 8 and PAD_ID not in tokenizer.encode(["hello"], 8)[0]


def test_graph_and_metapath2vec_sub_forum_vectors(splits):
    train, _ = splits
    alpha = [p for p in train.posts if p.market == "alpha"]
    edges, counts, forums = build_graph(alpha)
    assert set(forums) == {"drugs", "talk"} and counts["user"] == 6
    starts = edges[("user", "starts", "thread")]
    assert starts.shape[1] == sum(p.kind == "submission" for p in alpha)
    for path in META_PATHS:  # each meta-path is a chain of edge types from user back to user
        chain = meta_path_edges(path)
        assert chain[0][0] == chain[-1][-1] == "user" and all(
            a[2] == b[0] for a, b in zip(chain, chain[1:], strict=False)
        )
    vectors = subforum_vectors(alpha, dim=6, seed=0)
    assert set(vectors) == {"drugs", "talk"} and all(v.shape == (6,) for v in vectors.values())
    again = subforum_vectors(alpha, dim=6, seed=0)
    assert all(np.array_equal(vectors[f], again[f]) for f in vectors)
    assert subforum_vectors([], dim=6) == {}


def test_tfidf_baseline(splits, tmp_path: Path):
    train, test = splits
    system = EpisodeTfidf(min_df=1)
    system.fit(train, seed=0)
    emb = system.embed(test.episodes)
    assert np.allclose(np.linalg.norm(emb, axis=1), 1.0, atol=1e-5)
    assert evaluate_embeddings(emb, test.episodes).scores["mrr"] > 0.9  # each author has a vocabulary
    system.save(tmp_path / "tfidf")
    np.testing.assert_allclose(EpisodeTfidf.load(tmp_path / "tfidf").embed(test.episodes), emb)
