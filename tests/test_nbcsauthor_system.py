"""The systems on small synthetic splits: fitting, embedding, checkpoints, parts of the encoder."""

from __future__ import annotations

import inspect
from pathlib import Path

import numpy as np
import pytest
import torch
from helpers.darkweb_data import TINY_PARAMS, synthetic_split

from harness.errors import HarnessError
from harness.system import constructor_params
from systems.nbcsauthor.graph import META_PATHS, build_graph, meta_path_edges, subforum_vectors
from systems.nbcsauthor.model import TextCNN
from systems.nbcsauthor.system import SYSML, EpisodeAuthor, EpisodeCNN
from systems.nbcsauthor.tfidf import EpisodeTfidf
from systems.nbcsauthor.tokenizer import PAD_ID, PostTokenizer
from tasks.darkweb.evaluation import evaluate_embeddings


@pytest.fixture(scope="module")
def splits():
    return synthetic_split("train", multitask=True), synthetic_split("test")


def test_registered_names_differ_only_in_defaults():
    assert (EpisodeAuthor().loss, EpisodeAuthor().pooling) == ("nbc_softmax", "transformer")
    assert (SYSML().loss, SYSML().pooling) == ("softmax", "transformer")
    assert (EpisodeCNN().loss, EpisodeCNN().pooling) == ("softmax", "mean")
    assert list(inspect.signature(SYSML).parameters) == list(inspect.signature(EpisodeAuthor).parameters)
    assert constructor_params(SYSML(loss="cosface"))["loss"] == "cosface"
    with pytest.raises(HarnessError, match="loss must be one of"):
        EpisodeAuthor(loss="triplet")
    with pytest.raises(HarnessError, match="must divide"):
        EpisodeAuthor(heads=3)


def test_fit_embed_and_checkpoint_round_trip(splits, tmp_path: Path):
    train, test = splits
    system = EpisodeAuthor(**TINY_PARAMS)
    system.fit(train, seed=0)
    info = system.info
    assert info["classes"] == {"alpha": 6, "beta": 6, "CROSS": 2} and info["graph_markets"] == ["alpha", "beta"]
    assert len(info["epochs"]) == 2 and all(e["seconds"] > 0 for e in info["epochs"])
    emb = system.embed(test.episodes)
    assert emb.shape == (len(test.episodes), TINY_PARAMS["output_dim"]) and emb.dtype == np.float32
    system.save(tmp_path / "ckpt")
    loaded = EpisodeAuthor.load(tmp_path / "ckpt")
    assert loaded.params() == system.params() and loaded.info == info
    np.testing.assert_allclose(loaded.embed(test.episodes), emb, rtol=1e-5, atol=1e-6)
    # the same seed trains the same model
    again = EpisodeAuthor(**TINY_PARAMS)
    again.fit(train, seed=0)
    np.testing.assert_allclose(again.embed(test.episodes), emb, rtol=1e-4, atol=1e-5)
    with pytest.raises(HarnessError, match="checkpoint is for system 'nbcsauthor'"):
        SYSML.load(tmp_path / "ckpt")


@pytest.mark.parametrize("cls", [SYSML, EpisodeCNN])
def test_other_names_round_trip(cls, splits, tmp_path: Path):
    train, test = splits
    system = cls(**{**TINY_PARAMS, "epochs": 1})
    system.fit(train, seed=0)
    system.save(tmp_path / "ckpt")
    np.testing.assert_allclose(cls.load(tmp_path / "ckpt").embed(test.episodes[:6]), system.embed(test.episodes[:6]))


def test_training_learns_the_synthetic_authors(splits):
    train, test = splits
    system = SYSML(**{**TINY_PARAMS, "epochs": 8, "lr": 0.01})
    system.fit(train, seed=1)
    scores = evaluate_embeddings(system.embed(test.episodes), test.episodes).scores
    # 6 authors a market, 3 episodes each: chance MRR is about 0.4
    assert scores["mrr"] > 0.6, scores


@pytest.mark.parametrize("loss", ["cosface", "multi_similarity"])
def test_library_losses_fit(loss: str, splits):
    train, _ = splits
    system = EpisodeAuthor(**{**TINY_PARAMS, "loss": loss, "epochs": 1})
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
