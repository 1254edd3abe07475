"""siamese_bilstm as a system: fit, routing with abstain bands, checkpoints (today's and the flat format),
parameters as parts, the feature cache.

Everything runs on a tiny randomly initialised BERT written to a temporary folder (or committed with the
legacy checkpoint fixture): nothing is downloaded.
"""

from __future__ import annotations

import json
import random
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

pytest.importorskip("torch")
pytest.importorskip("transformers")

from helpers.paths import FIXTURES, REPO
from helpers.tiny_encoder import make_tiny_encoder  # noqa: E402

from core.errors import HarnessError  # noqa: E402
from core.records import NO_ANSWER, VerificationData, VerificationProblem, VerificationTruth  # noqa: E402
from harness.params import build  # noqa: E402
from harness.runtime import load_like  # noqa: E402
from systems.siamese_bilstm.data import collect_corpus, split_validation  # noqa: E402
from systems.siamese_bilstm.loss import ModifiedContrastive  # noqa: E402
from systems.siamese_bilstm.model import BiLSTMHeadConfig  # noqa: E402
from systems.siamese_bilstm.routing import ENSEMBLE  # noqa: E402
from systems.siamese_bilstm.settings import Calibration, SiameseTraining  # noqa: E402
from systems.siamese_bilstm.system import SiameseBiLSTM, _keep_order  # noqa: E402
from toolkit.calibration import AbstainBand  # noqa: E402
from toolkit.layer_features import LayerFeaturesConfig  # noqa: E402

TYPES = ("email", "essay", "interview", "speech_transcription")
LEGACY = FIXTURES / "siamese-legacy-checkpoint"
# a small system, in the CLI's dotted parameter names
SMALL = {
    "encoder.max_tokens": 24,
    "head.hidden_size": 8,
    "training.epochs": 2,
    "training.batch_size": 8,  # chunks: 4 authors x 2
    "training.steps_per_epoch": 3,
    "calibration.validation_share": 0.4,
    "calibration.grid_step": 0.05,
    "device": "cpu",
}


def _text(rng: random.Random, author: int, words: int = 40) -> str:
    letters = "abcdefghij" if author % 2 else "klmnopqrst"
    body = " ".join("".join(rng.choice(letters) for _ in range(rng.randint(2, 6))) for _ in range(words))
    return f"{body} {rng.randint(0, 999)}<nl>"


def make_split(seed: int, problems: int = 48, authors: int = 12) -> VerificationData:
    """PAN 2023 shaped pairs with author names and all discourse-type combinations."""
    rng = random.Random(seed)
    items, truth = [], {}
    for i in range(problems):
        a = i % authors
        same = i % 2 == 0
        b = a if same else (a + 1 + i % (authors - 1)) % authors
        pid = f"s{seed}-{i}"
        items.append(VerificationProblem(pid, (_text(rng, a), _text(rng, b)), (TYPES[i % 4], TYPES[(i // 4) % 4])))
        truth[pid] = VerificationTruth(pid, same, (f"author{a}", f"author{b}"))
    return VerificationData(tuple(items), truth, Path("synthetic"), f"seed{seed}")


def small(encoder: Path, cache: Path, overrides: dict | None = None) -> SiameseBiLSTM:
    """A small system on `encoder`; `overrides` in dotted names ({"training.epochs": 1})."""
    return build(SiameseBiLSTM, {**SMALL, "encoder.model": str(encoder), "cache_dir": str(cache), **(overrides or {})})


@pytest.fixture(scope="module")
def fitted(encoder: Path, tmp_path_factory: pytest.TempPathFactory) -> tuple[SiameseBiLSTM, Path]:
    cache = tmp_path_factory.mktemp("cache")
    system = small(encoder, cache)
    system.fit(make_split(0), seed=0)
    return system, cache


def test_fit_trains_one_head_per_group_and_calibrates_on_validation(fitted):
    system, _ = fitted
    info = system.info
    assert set(info["history"]) == {"general", "written", "oral"}
    assert all(len(h["epoch_loss"]) == len(h["epoch_seconds"]) == 2 for h in info["history"].values())
    assert info["calibration"]["on"] == "validation"
    assert set(info["calibration"]["bands"]) == {"general", "written", "oral", ENSEMBLE}
    assert info["named_authors"] is True


def test_answers_are_the_routed_models_calibrated_scores_with_an_abstain_band(fitted):
    system, _ = fitted
    test = make_split(1)
    features = system.extractor().features([t for p in test.problems for t in p.texts])
    problem_texts = [(2 * i, 2 * i + 1) for i in range(len(test.problems))]
    raw = system._route_scores(features, problem_texts)
    # bands wide enough that every model abstains on part of the problems
    saved = dict(system._bands)
    try:
        for name in list(system._bands):
            if name != ENSEMBLE:
                lo, hi = np.quantile(raw[name], [0.3, 0.7])
                system._bands[name] = AbstainBand(float(lo), float(hi))
        system._bands[ENSEMBLE] = AbstainBand(0.45, 0.55)
        answers = [a.value for a in system.predict(test.problems)]
        ensemble = system._ensemble_raw(raw, system._bands)
        routes = [system._route(p.discourse_types) for p in test.problems]
        assert {"written", "oral", ENSEMBLE} <= set(routes)
        for i, route in enumerate(routes):
            band = system._bands[route]
            score = ensemble[i] if route == ENSEMBLE else raw[route][i]
            assert answers[i] == pytest.approx(band.apply([score])[0], abs=1e-12)
            if band.p1 < score < band.p2:
                assert answers[i] == NO_ANSWER  # exactly 0.5: PAN's "no answer"
            else:
                assert answers[i] != NO_ANSWER and (answers[i] < 0.5) == (score <= band.p1)
        assert NO_ANSWER in answers and any(a != NO_ANSWER for a in answers)
    finally:
        system._bands = saved


def test_each_head_is_whitened_by_the_training_authors_only_and_none_scores_unwhitened(
    fitted, encoder: Path, tmp_path: Path
):
    """The whitening of a head is centred on the embeddings of the training authors' texts (not the validation
    authors', whose problems fit the bands); it changes the scores; a checkpoint keeps it; whitening=None (the
    paper's scoring, and every checkpoint written before it) leaves the head's embeddings as they are."""
    system, cache = fitted
    assert set(system._whitening) == set(system._heads)
    corpus = collect_corpus(make_split(0))
    split = split_validation(corpus, system.calibration.validation_share, seed=0)
    features = system.extractor().features(corpus.texts)
    ids = [i for i, author in enumerate(corpus.authors) if author in split.train_authors]
    assert 0 < len(ids) < len(corpus.texts)
    saved = system._whitening
    try:
        system._whitening = {}
        plain = [chunks.mean(axis=0) for chunks in system._embed("general", [features[i] for i in ids])]
        np.testing.assert_allclose(saved["general"][0], np.mean(plain, axis=0), rtol=1e-9, atol=1e-12)
        test = [t for p in make_split(1).problems for t in p.texts]
        problem_texts = [(2 * i, 2 * i + 1) for i in range(len(test) // 2)]
        unwhitened = system._route_scores(system.extractor().features(test), problem_texts)["general"]
    finally:
        system._whitening = saved
    whitened = system._route_scores(system.extractor().features(test), problem_texts)["general"]
    assert not np.allclose(whitened, unwhitened)
    system.save(tmp_path / "ckpt")
    again = SiameseBiLSTM.load(tmp_path / "ckpt", runtime={"cache_dir": str(cache)})
    assert set(again._whitening) == set(system._heads)

    unfitted = small(encoder, cache, {"whitening": None})
    unfitted.fit(make_split(0), seed=0)
    assert unfitted._whitening == {}
    unfitted.save(tmp_path / "plain")
    config = json.loads((tmp_path / "plain" / "config.json").read_text(encoding="utf-8"))
    assert config["state"]["whitened_heads"] == [] and config["params"]["whitening"] is None


def test_the_ensemble_keeps_the_order_its_members_abstain_on():
    """A member's band makes its answers, but inside the band its scores stay in order (0.49..0.51), so an ensemble
    of members that abstain on most problems still ranks them; outside the band the answers are the band's."""
    band = AbstainBand(0.3, 0.7)
    scores = np.array([0.1, 0.3, 0.35, 0.5, 0.65, 0.7, 0.9])
    kept = _keep_order(scores, band)
    inside = (scores > 0.3) & (scores < 0.7)
    np.testing.assert_array_equal(kept[~inside], band.apply(scores[~inside]))
    assert np.all(np.diff(kept) > 0) and np.all((kept[inside] > 0.49) & (kept[inside] < 0.51))
    assert kept[3] == pytest.approx(0.5)
    assert set(band.apply(scores[inside])) == {NO_ANSWER}  # what the ensemble averaged before: no order at all


def test_checkpoint_round_trip_gives_the_same_answers(fitted, tmp_path: Path):
    system, _ = fitted
    test = make_split(2)
    before = system.predict(test.problems)
    system.save(tmp_path / "ckpt")
    assert sorted(p.name for p in (tmp_path / "ckpt").iterdir()) == ["config.json", "weights.safetensors"]
    config = json.loads((tmp_path / "ckpt" / "config.json").read_text())
    assert config["system"] == "siamese_bilstm"
    assert config["params"]["encoder"] == {
        "name": "layer_cls",
        "model": system.encoder.model,
        "layers": None,
        "max_tokens": 24,
        "stride": None,
        "max_chunks_per_text": None,
    }
    assert config["params"]["training"]["epochs"] == 2 and config["params"]["loss"]["name"] == "modified_contrastive"
    assert config["state"]["layers"] == [1, 2]  # lower_layers(3): the lower two thirds of the tiny encoder
    assert set(config["state"]["bands"]) == {"general", "written", "oral", ENSEMBLE}
    assert config["state"]["groups"] == {"written": ["email", "essay"], "oral": ["interview", "speech_transcription"]}
    loaded = load_like(system, tmp_path / "ckpt")  # run-time settings (device, cache_dir) are not the checkpoint's
    assert loaded.params() == system.params()
    assert loaded.predict(test.problems) == before


def test_feature_cache_hit_computes_nothing_and_changes_nothing(fitted, encoder: Path):
    system, cache = fitted
    again = small(encoder, cache)
    again.fit(make_split(0), seed=0)
    stats = again.info["feature_stats"]
    assert stats["computed_chunks"] == 0 and stats["computed_texts"] == 0
    assert stats["cached_texts"] == system.info["feature_stats"]["computed_texts"] > 0
    test = make_split(3)
    assert again.predict(test.problems) == system.predict(test.problems)  # same seed, same cache: same answers
    other_chunking = small(encoder, cache, {"encoder.max_tokens": 16})
    other_chunking.extractor().features([test.problems[0].texts[0]])
    assert other_chunking.extractor().stats["computed_texts"] == 1


def test_load_refuses_heads_trained_on_another_encoder(encoder: Path, tmp_path: Path):
    folder = make_tiny_encoder(tmp_path / "enc", seed=1)
    system = small(folder, tmp_path / "cache", {"training.epochs": 1})
    system.fit(make_split(0), seed=0)
    system.save(tmp_path / "ckpt")
    make_tiny_encoder(folder, seed=2)  # other weights under the same name
    with pytest.raises(HarnessError, match="another encoder"):
        SiameseBiLSTM.load(tmp_path / "ckpt")


def test_general_model_only_and_chunk_pair_scoring(encoder: Path, tmp_path: Path):
    system = small(encoder, tmp_path / "cache", {"groups": {}, "scoring": "chunk_pairs", "training.epochs": 1})
    system.fit(make_split(0), seed=0)
    assert set(system.info["history"]) == {"general"}
    answers = system.predict(make_split(4).problems)
    assert all(0.0 <= a.value <= 1.0 for a in answers)
    json.dumps(system.params())  # parameters are JSON, as result files need


def test_pan_classic_problems_without_author_names(encoder: Path, tmp_path: Path):
    rng = random.Random(5)
    problems, truth = [], {}
    for i in range(30):
        a, same = i % 10, i % 3 != 0
        known = tuple(_text(rng, a) for _ in range(1 + i % 3))
        unknown = _text(rng, a if same else a + 1)
        problems.append(VerificationProblem(f"EE{i:03d}", (*known, unknown), ("essay",) * (len(known) + 1)))
        truth[f"EE{i:03d}"] = VerificationTruth(f"EE{i:03d}", same, None)
    data = VerificationData(tuple(problems), truth, Path("classic"), "c")
    system = small(
        encoder,
        tmp_path / "cache",
        {"groups": {"essay": ["essay"]}, "calibration.validation_share": 0.3, "training.epochs": 1},
    )
    system.fit(data, seed=0)
    assert system.info["named_authors"] is False
    assert {system._route(p.discourse_types) for p in problems} == {"essay"}
    assert len(system.predict(problems)) == 30


def test_parts_are_objects_with_defaults_and_dotted_parameters_set_their_fields():
    system = SiameseBiLSTM(head=BiLSTMHeadConfig(hidden_size=8), loss=ModifiedContrastive(positive_margin=0.9))
    assert system.encoder == LayerFeaturesConfig() and system.training == SiameseTraining()
    assert system.calibration == Calibration() and system.head.hidden_size == 8
    params = system.params()
    assert params["loss"] == {"name": "modified_contrastive", "positive_margin": 0.9, "negative_margin": 0.0}
    assert params["training"] == {"name": "adam", "epochs": 5, "batch_size": 32, "lr": 0.002, "steps_per_epoch": None}
    assert json.loads(json.dumps(params)) == json.loads(json.dumps(build(SiameseBiLSTM, params).params()))
    built = build(
        SiameseBiLSTM,
        {"encoder.layers": [1, 2], "encoder.model": "x", "loss": "modified_contrastive", "loss.negative_margin": 0.2},
    )
    assert built.encoder == LayerFeaturesConfig(model="x", layers=(1, 2))
    assert built.loss == ModifiedContrastive(negative_margin=0.2)
    assert build(SiameseBiLSTM, {"training": SiameseTraining(epochs=1)}).training.epochs == 1


@pytest.mark.parametrize(
    ("params", "message"),
    [
        ({"scoring": "max"}, "scoring must be one of"),
        ({"whitening": -0.1}, "whitening is a shrinkage >= 0 or None (off)"),
        ({"groups": {"general": ["essay"]}}, "groups: group name 'general'"),
        ({"training.batch_size": 2}, "siamese_bilstm: training: batch_size must be at least 4, got 2"),
        ({"training.batch_size": 5}, "siamese_bilstm: training: batch_size counts chunks, two per author"),
        ({"training.epochs": 0}, "siamese_bilstm: training: epochs must be at least 1, got 0"),
        ({"head.hidden_size": 0}, "siamese_bilstm: head: hidden_size must be at least 1, got 0"),
        ({"loss.positive_margin": "abc"}, "siamese_bilstm: loss: positive_margin must be a number, got 'abc'"),
        ({"encoder.layers": 3}, "encoder: layers must be a list of hidden-state indices or None, got 3"),
        ({"calibration.validation_share": 1.0}, "calibration: validation_share must be in [0, 1)"),
        ({"calibration.grid_step": 0.7}, "calibration: grid_step: grid step must be in [0.002, 0.5]"),
        ({"calibration.objective": "accuracy"}, "unknown objective 'accuracy'"),
        ({"loss": "triplet"}, "loss must be one of modified_contrastive, not 'triplet'"),
        ({"encoder.width": 3}, "encoder (layer_cls) has no field 'width'"),
        ({"hidden_size": 8}, "siamese_bilstm has no parameter(s) hidden_size"),
    ],
)
def test_bad_parameters_are_one_line_harness_errors_naming_them(params, message):
    with pytest.raises(HarnessError) as error:
        build(SiameseBiLSTM, params)
    assert message in str(error.value) and "\n" not in str(error.value)


def test_parts_refuse_bad_values_themselves_and_the_constructor_refuses_a_dict_for_a_part():
    with pytest.raises(ValueError, match="batch_size must be at least 4"):
        SiameseTraining(batch_size=2)
    with pytest.raises(ValueError, match="steps_per_epoch"):
        SiameseTraining(steps_per_epoch=0)
    with pytest.raises(HarnessError, match="training must be a SiameseTraining part"):
        SiameseBiLSTM(training={"epochs": 1})


def test_misuse_is_a_harness_error(encoder: Path, tmp_path: Path):
    system = small(encoder, tmp_path / "cache")
    with pytest.raises(HarnessError):
        system.predict(make_split(0).problems)
    with pytest.raises(HarnessError):
        system.fit(make_split(0)._replace(truth=None), seed=0)
    with pytest.raises(HarnessError, match="layers"):
        small(encoder, tmp_path / "cache", {"encoder.layers": [2, 9]}).fit(make_split(0), seed=0)


def test_a_checkpoint_of_the_flat_format_loads_and_gives_the_same_answers(tmp_path: Path):
    """A checkpoint written before the parameters were parts (see the fixture's README)."""
    checkpoint = tmp_path / "checkpoint"
    shutil.copytree(LEGACY / "checkpoint", checkpoint)
    config = json.loads((checkpoint / "config.json").read_text(encoding="utf-8"))
    assert config["params"]["hidden_size"] == 4 and isinstance(config["params"]["encoder"], str)  # the flat format
    # the encoder: a path of the machine that wrote it; point it at the committed one
    config["params"].update(encoder=str(LEGACY / "encoder"))
    (checkpoint / "config.json").write_text(json.dumps(config), encoding="utf-8")

    # device and cache are this machine's, never the checkpoint's (its cache_dir is another machine's path)
    system = SiameseBiLSTM.load(checkpoint, runtime={"device": "cpu", "cache_dir": str(tmp_path / "cache")})
    assert system.encoder == LayerFeaturesConfig(
        model=str(LEGACY / "encoder"), layers=(1, 3), max_tokens=24, stride=16, max_chunks_per_text=3
    )
    assert system.head == BiLSTMHeadConfig(hidden_size=4)
    assert system.loss == ModifiedContrastive(positive_margin=0.9, negative_margin=0.1)
    # its batch_size 4 counted authors; today's batch_size counts chunks: 4 authors x 2 = 8
    assert system.training == SiameseTraining(epochs=2, batch_size=8, lr=0.01, steps_per_epoch=3)
    assert system.calibration == Calibration(validation_share=0.4, objective="auc_x_c_at_1", grid_step=0.05)
    assert (system.groups, system.scoring, system.device, system.cache_dir) == (
        None,
        "mean_embedding",
        "cpu",
        str(tmp_path / "cache"),
    )
    rows = json.loads((LEGACY / "problems.json").read_text(encoding="utf-8"))
    problems = [VerificationProblem(r["id"], tuple(r["texts"]), tuple(r["discourse_types"])) for r in rows]
    assert {system._route(p.discourse_types) for p in problems} == {"written", "oral", ENSEMBLE}
    # as before, to the last bits: a CPU with other vector kernels may round a float64 answer one ulp apart
    # 1e-9, not 1e-12: float rounding differs from the machine that wrote the fixture (here: 4e-11 on one answer);
    # a changed route or band moves answers by orders of magnitude more
    assert [a.value for a in system.predict(problems)] == pytest.approx([r["answer"] for r in rows], abs=1e-9, rel=0)

    system.save(tmp_path / "again")  # saved again, in today's nested format, and read back
    again = SiameseBiLSTM.load(tmp_path / "again")
    assert again.training.batch_size == 8  # in chunks already: not doubled a second time
    assert again.predict(problems) == system.predict(problems)


def test_a_nested_checkpoint_from_before_batch_size_counted_chunks_keeps_its_meaning(fitted, tmp_path: Path):
    system, _ = fitted
    system.save(tmp_path / "ckpt")
    path = tmp_path / "ckpt" / "config.json"
    config = json.loads(path.read_text(encoding="utf-8"))
    assert config["state"].pop("batch_size_counts") == "chunks"
    config.pop("checksums")  # written then, it had no checksums either
    config["params"]["training"]["batch_size"] = 5  # then: 5 authors a batch
    path.write_text(json.dumps(config), encoding="utf-8")
    assert SiameseBiLSTM.load(tmp_path / "ckpt").training.batch_size == 10


@pytest.mark.parametrize("mixed_precision", [True, False])
def test_a_cpu_trained_checkpoint_predicts_the_same_on_cpu_with_or_without_mixed_precision(
    fitted, tmp_path: Path, mixed_precision: bool
):
    """The CPU half of "trained on one device, predicts the same on another to 1e-4" (the GPU half needs a GPU)."""
    system, _ = fitted
    assert system.device == "cpu"
    test = make_split(3)
    features = system.extractor().features([t for p in test.problems for t in p.texts])
    problem_texts = [(2 * i, 2 * i + 1) for i in range(len(test.problems))]
    raw = system._route_scores(features, problem_texts)
    before = [a.value for a in system.predict(test.problems)]
    system.save(tmp_path / "ckpt")
    loaded = SiameseBiLSTM.load(tmp_path / "ckpt", runtime={"device": "cpu", "mixed_precision": mixed_precision})
    assert (loaded.torch_device(), loaded.mixed_precision) == ("cpu", mixed_precision)
    again = loaded._route_scores(features, problem_texts)
    for name in raw:
        np.testing.assert_allclose(again[name], raw[name], rtol=0, atol=1e-4)
    np.testing.assert_allclose([a.value for a in loaded.predict(test.problems)], before, rtol=0, atol=1e-4)


def test_importing_the_package_does_not_import_torch():
    code = "import sys, systems.siamese_bilstm, systems.siamese_bilstm.routing; print('torch' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "False"


def test_harness_run_and_predict_through_the_cli(encoder: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    from click.testing import CliRunner

    from harness import registry
    from harness.cli import main

    sample = REPO / "samples" / "pan23-format-sample"
    entry = registry.Entry("systems.siamese_bilstm.system:SiameseBiLSTM", "BERT-BiLSTM Siamese ensemble")
    monkeypatch.setitem(registry.SYSTEMS, "siamese_bilstm", entry)  # the lead adds the real registry line
    settings = {
        "encoder.model": str(encoder),
        "encoder.max_tokens": 24,
        "head.hidden_size": 8,
        "training.epochs": 1,
        "training.batch_size": 4,
        "calibration.grid_step": 0.05,
        "device": "cpu",
        "cache_dir": str(tmp_path / "cache"),
    }
    params = [arg for key, value in settings.items() for arg in ("--param", f"{key}={value}")]
    runner = CliRunner()
    out = tmp_path / "runs"
    result = runner.invoke(
        main,
        ["run", "--system", "siamese_bilstm", "--task", "pan23", "--data", str(sample), "--out", str(out), *params],
        catch_exceptions=False,
    )
    assert result.exit_code == 0, result.output
    (run_dir,) = (out / "pan23").glob("*/siamese_bilstm@*/seed-0")
    recorded = json.loads((run_dir / "result.json").read_text())
    assert recorded["system"]["params"]["encoder"]["max_tokens"] == 24
    assert recorded["system"]["params"]["training"] == {
        "name": "adam",
        "epochs": 1,
        "batch_size": 4,
        "lr": 0.002,
        "steps_per_epoch": None,
    }
    result = runner.invoke(
        main,
        [
            "predict",
            "--system",
            "siamese_bilstm",
            "--task",
            "pan23",
            "--input",
            str(sample / "test"),
            "--output",
            str(tmp_path / "tira"),
            "--checkpoint",
            str(run_dir / "checkpoint"),
        ],
        catch_exceptions=False,
    )
    assert result.exit_code == 0, result.output
    assert (tmp_path / "tira" / "answers.jsonl").read_text() == (run_dir / "answers.jsonl").read_text()


def test_a_damaged_cache_file_is_computed_again(encoder: Path, tmp_path: Path):
    from toolkit.layer_features import LayerFeatures

    text = "the cat sat on the mat and it was not amused"
    first = LayerFeatures(str(encoder), max_tokens=24, cache_dir=tmp_path)
    expected = first.features([text])[0]
    (path,) = (tmp_path / "feature-shards").rglob("*.rows.npy")  # the one shard holding the text
    path.write_bytes(b"not an array")
    again = LayerFeatures(str(encoder), max_tokens=24, cache_dir=tmp_path)
    np.testing.assert_array_equal(again.features([text])[0], expected)
    assert again.stats["computed_texts"] == 1
    third = LayerFeatures(str(encoder), max_tokens=24, cache_dir=tmp_path)
    np.testing.assert_array_equal(third.features([text])[0], expected)
    assert third.stats == {"computed_texts": 0, "computed_chunks": 0, "cached_texts": 1}
