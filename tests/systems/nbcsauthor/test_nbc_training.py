"""SYSML-family training as the papers wrote it: the validation split by author-episodes, the best
epoch, ReduceLROnPlateau, frozen sub-forum vectors and the presets."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
import torch
from helpers.darkweb_data import TINY_PARAMS, synthetic_split

from core.errors import HarnessError
from harness.params import build
from harness.runtime import load_like
from systems.nbcsauthor import system as system_module
from systems.nbcsauthor.graph import Metapath2Vec
from systems.nbcsauthor.losses import NBCSoftmax
from systems.nbcsauthor.model import EpisodeEncoderConfig
from systems.nbcsauthor.settings import PRESETS, SysmlTraining
from systems.nbcsauthor.system import SYSML, EpisodeAuthor
from systems.nbcsauthor.validation import BestEpoch, hold_out, threads
from tasks.darkweb.records import Episode, EpisodePost


@pytest.fixture(scope="module")
def train():
    return synthetic_split("train")


def episode(author: str, start: int, thread: str, market: str = "m") -> Episode:
    post = EpisodePost("text", 0, "forum", thread)
    return Episode(f"{market}-{author}-{start}", author, market, (post, post), author, start)


# -- the validation split ---------------------------------------------------------------------------


def test_hold_out_takes_each_accounts_latest_episode_outside_its_threads():
    episodes = [
        # a: three episodes, the latest (start 30) in its own thread: eligible
        episode("a", 20, "t2"),
        episode("a", 30, "t3"),
        episode("a", 10, "t1"),
        # b: its latest shares thread t1 with an earlier one: not eligible
        episode("b", 10, "t1"),
        episode("b", 20, "t1"),
        # c: one episode: it keeps it for fitting
        episode("c", 10, "t9"),
        # d: two episodes in different threads: eligible
        episode("d", 10, "t4"),
        episode("d", 20, "t5"),
        # the same author name in another market is another account (its threads are its own)
        episode("a", 40, "x1", market="n"),
        episode("a", 50, "x2", market="n"),
    ]
    split = hold_out(episodes, 0.45, np.random.default_rng(0))  # round(4.5) = 4 wanted, 3 eligible
    assert split.eligible_accounts == 3
    held = {episodes[i].id for i in split.validation}
    assert held == {"m-a-30", "m-d-20", "n-a-50"}
    assert sorted(split.fit + split.validation) == list(range(len(episodes)))
    assert not set(split.fit) & set(split.validation)
    fitted = [episodes[i] for i in split.fit]
    for i in split.validation:
        v = episodes[i]
        own = [e for e in fitted if (e.market, e.author) == (v.market, v.author)]
        assert own, "a validation account keeps episodes to fit on (its class exists)"
        assert all(e.start < v.start for e in own)  # the held-out episode is the account's latest
        assert not threads(v) & set().union(*(threads(e) for e in own))  # and shares none of its threads
    # fewer wanted than eligible: a seeded choice, the same for the same seed
    one = hold_out(episodes, 0.1, np.random.default_rng(3))
    assert len(one.validation) == 1 and one == hold_out(episodes, 0.1, np.random.default_rng(3))
    assert hold_out(episodes, 0.0, np.random.default_rng(0)).validation == []


def test_fit_trains_on_no_validation_episode(train, monkeypatch):
    planned = []
    real_plan = system_module.plan_labels

    def spy(episodes, **kwargs):
        planned.append({e.id for e in episodes})
        return real_plan(episodes, **kwargs)

    monkeypatch.setattr(system_module, "plan_labels", spy)
    split = hold_out(list(train.episodes), 0.2, np.random.default_rng([0, 1]))  # what fit draws for seed 0
    held = {train.episodes[i].id for i in split.validation}
    system = build(EpisodeAuthor, {**TINY_PARAMS, "training.validation_share": 0.2})
    system.fit(train, seed=0)
    info = system.info
    assert info["validation_episodes"] == len(held) == round(0.2 * len(train.episodes))
    assert info["fit_episodes"] + info["validation_episodes"] == info["train_episodes"]
    (fitted,) = planned
    assert not fitted & held and len(fitted) == info["fit_episodes"]
    assert all(np.isfinite(e["val_loss"]) for e in info["epochs"])


# -- best epoch and the learning-rate schedule ------------------------------------------------------


def scripted_validation(monkeypatch, losses: list[float]) -> list[dict[str, torch.Tensor]]:
    """Make the validation loss of epoch k be losses[k]; returns the encoder's weights at each epoch."""
    seen: list[dict[str, torch.Tensor]] = []

    def fake(self, model, *args, **kwargs):
        seen.append({k: v.detach().clone() for k, v in model.encoder.state_dict().items()})
        return losses[len(seen) - 1]

    monkeypatch.setattr(EpisodeAuthor, "_validation_loss", fake)
    return seen


@pytest.mark.parametrize("restore", [True, False])
def test_the_epoch_of_lowest_validation_loss_is_kept(restore: bool, train, monkeypatch):
    seen = scripted_validation(monkeypatch, [3.0, 1.0, 2.0, 4.0])
    params = {"training.epochs": 4, "training.validation_share": 0.1, "training.restore_best": restore}
    system = build(EpisodeAuthor, {**TINY_PARAMS, **params, "training.lr": 0.01})
    system.fit(train, seed=0)
    assert [e["val_loss"] for e in system.info["epochs"]] == [3.0, 1.0, 2.0, 4.0]
    assert [e.get("best", False) for e in system.info["epochs"]] == [True, True, False, False]
    assert system.info["best_epoch"] == (2 if restore else None)
    kept = system._encoder.state_dict()
    wanted = seen[1] if restore else seen[3]
    assert all(torch.equal(kept[k], wanted[k]) for k in wanted)
    # the epochs differ, so the test can tell them apart
    assert any(not torch.equal(seen[1][k], seen[3][k]) for k in wanted)


def test_best_epoch_ignores_non_finite_losses():
    layer = torch.nn.Linear(2, 2)
    best = BestEpoch()
    assert not best.update(1, float("nan"), layer)
    assert best.update(2, 0.5, layer) and not best.update(3, 0.5, layer)
    kept = layer.weight.detach().clone()
    with torch.no_grad():
        layer.weight.add_(1.0)
    best.restore(layer)
    assert best.epoch == 2 and torch.equal(layer.weight, kept)


def test_reduce_lr_on_plateau_halves_the_rate_down_to_its_floor(train, monkeypatch):
    scripted_validation(monkeypatch, [1.0] * 9)  # never improves
    params = {"training.epochs": 9, "training.validation_share": 0.1, "training.lr_patience": 0, "training.lr": 0.01}
    system = build(EpisodeAuthor, {**TINY_PARAMS, **params})
    system.fit(train, seed=0)
    rates = [e["lr"] for e in system.info["epochs"]]
    # epoch 1 sets the best; each later epoch without improvement halves it, to lr / 32 (SYSML)
    assert rates == pytest.approx([0.01, 0.01, 0.005, 0.0025, 0.00125, 0.000625, 0.0003125, 0.0003125, 0.0003125])
    assert system.training.min_lr == pytest.approx(0.0003125)


# -- frozen sub-forum vectors -----------------------------------------------------------------------


@pytest.mark.parametrize("freeze", [True, False])
def test_frozen_sub_forum_vectors_do_not_change(freeze: bool, train, monkeypatch):
    initial = {}
    real_init = EpisodeAuthor._init_contexts

    def spy(self, encoder, *args, **kwargs):
        done = real_init(self, encoder, *args, **kwargs)
        initial["weight"] = encoder.context.weight.detach().clone()
        return done

    monkeypatch.setattr(EpisodeAuthor, "_init_contexts", spy)
    system = build(EpisodeAuthor, {**TINY_PARAMS, "graph_init.freeze": freeze, "training.lr": 0.01})
    system.fit(train, seed=0)
    assert system.info["graph_markets"] == ["alpha", "beta"] and system.info["context_frozen"] is freeze
    after = system._encoder.context.weight.detach()
    assert torch.equal(after, initial["weight"]) is freeze
    # the rest of the encoder trained either way
    assert system.info["epochs"][-1]["grad_z_ce"] > 0


# -- presets ----------------------------------------------------------------------------------------


def test_presets_hold_the_papers_settings():
    paper = build(EpisodeAuthor, {"preset": "paper"})
    assert paper.encoder == EpisodeEncoderConfig()  # SYSML's sizes: BPE 30k, 256 tokens, 4 layers, z 32
    assert (paper.encoder.vocab_size, paper.encoder.max_tokens, paper.encoder.output_dim) == (30000, 256, 32)
    assert paper.training == SysmlTraining(
        epochs=30, batch_size=256, lr=0.001, validation_share=0.1, restore_best=True, lr_patience=5, lr_factor=0.5
    )
    assert paper.loss == NBCSoftmax(tau=0.2, alpha=0.5)
    assert paper.graph_init == Metapath2Vec(walks_per_node=200, walk_length=80, context_size=7, freeze=True)
    multi = build(EpisodeAuthor, {"preset": "paper_multitask"})
    assert multi.encoder.output_dim == 128 and multi.loss == NBCSoftmax(tau=0.3)
    # the preset's tau follows NBC-Softmax when another system picks it by name; an explicit tau wins
    assert build(SYSML, {"preset": "paper_multitask", "loss": "nbc_softmax"}).loss == NBCSoftmax(tau=0.3)
    assert build(EpisodeAuthor, {"preset": "paper_multitask", "loss.tau": 0.5}).loss.tau == 0.5
    assert build(SYSML, {"preset": "paper"}).loss.name == "softmax"
    # the default stays the CPU budget
    assert EpisodeAuthor().preset == "cpu" and EpisodeAuthor().encoder == PRESETS["cpu"].encoder
    assert EpisodeAuthor().training.validation_share == 0.0


def test_paper_preset_builds_and_trains_on_a_tiny_config(tmp_path: Path):
    tiny = {k: v for k, v in TINY_PARAMS.items() if not k.startswith("graph_init")}
    params = {"preset": "paper", **tiny, "graph_init.walks_per_node": 2, "graph_init.walk_length": 12}
    system = build(EpisodeAuthor, params)
    assert system.training.validation_share == 0.1 and system.training.lr_patience == 5
    assert system.graph_init.freeze and system.encoder.output_dim == TINY_PARAMS["encoder.output_dim"]
    train, test = synthetic_split("train"), synthetic_split("test")
    system.fit(train, seed=0)
    info = system.info
    assert info["validation_episodes"] == 4 and info["context_frozen"] and info["best_epoch"] in (1, 2)
    assert all("val_loss" in e and e["grad_z_nbc"] > 0 for e in info["epochs"])
    emb = system.embed(test.episodes)
    system.save(tmp_path / "ckpt")
    loaded = load_like(system, tmp_path / "ckpt")  # with this run's device (run-time settings are not stored)
    assert loaded.params() == system.params() and loaded.params()["preset"] == "paper"
    np.testing.assert_allclose(loaded.embed(test.episodes), emb, rtol=1e-5, atol=1e-6)
    # the single-market preset refuses a multitask split, naming the one to use
    with pytest.raises(HarnessError, match="use --param preset=paper_multitask"):
        system.fit(synthetic_split("train", multitask=True), seed=0)


def test_paper_multitask_preset_trains_on_a_multitask_split():
    tiny = {k: v for k, v in TINY_PARAMS.items() if not k.startswith("graph_init")}
    system = build(SYSML, {"preset": "paper_multitask", **tiny, "training.epochs": 1, "graph_init.walks_per_node": 1})
    system.fit(synthetic_split("train", multitask=True), seed=0)
    assert system.info["classes"] == {"alpha": 6, "beta": 6, "CROSS": 2}
    assert system.info["validation_episodes"] > 0 and "val_loss" in system.info["epochs"][0]
