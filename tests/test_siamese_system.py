"""siamese_bilstm as a system: fit, routing with abstain bands, checkpoints, the feature cache.

Everything runs on a tiny randomly initialised BERT written to a temporary folder: nothing is downloaded.
"""

from __future__ import annotations

import json
import random
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

pytest.importorskip("torch")
pytest.importorskip("transformers")

from helpers.tiny_encoder import make_tiny_encoder  # noqa: E402

from harness.errors import HarnessError  # noqa: E402
from harness.records import NO_ANSWER, VerificationData, VerificationProblem, VerificationTruth  # noqa: E402
from systems.siamese_bilstm.routing import ENSEMBLE  # noqa: E402
from systems.siamese_bilstm.system import SiameseBiLSTM  # noqa: E402
from toolkit.calibration import AbstainBand  # noqa: E402

TYPES = ("email", "essay", "interview", "speech_transcription")


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


@pytest.fixture(scope="module")
def encoder(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return make_tiny_encoder(tmp_path_factory.mktemp("encoder"))


def small(encoder: Path, cache: Path, **overrides) -> SiameseBiLSTM:
    params = dict(
        encoder=str(encoder),
        max_tokens=24,
        hidden_size=8,
        epochs=2,
        batch_size=4,
        steps_per_epoch=3,
        validation_share=0.4,
        grid_step=0.05,
        device="cpu",
        cache_dir=str(cache),
    )
    params.update(overrides)
    return SiameseBiLSTM(**params)


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
    assert all(len(h["epoch_loss"]) == 2 for h in info["history"].values())
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
        ensemble = system._ensemble_raw(raw)
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


def test_checkpoint_round_trip_gives_the_same_answers(fitted, tmp_path: Path):
    system, _ = fitted
    test = make_split(2)
    before = system.predict(test.problems)
    system.save(tmp_path / "ckpt")
    assert sorted(p.name for p in (tmp_path / "ckpt").iterdir()) == ["config.json", "weights.safetensors"]
    config = json.loads((tmp_path / "ckpt" / "config.json").read_text())
    assert config["system"] == "siamese_bilstm"
    assert config["params"]["encoder"] == system.encoder
    assert config["state"]["layers"] == [2, 3]
    assert set(config["state"]["bands"]) == {"general", "written", "oral", ENSEMBLE}
    assert config["state"]["groups"] == {"written": ["email", "essay"], "oral": ["interview", "speech_transcription"]}
    loaded = SiameseBiLSTM.load(tmp_path / "ckpt")
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
    other_chunking = small(encoder, cache, max_tokens=16)
    other_chunking.extractor().features([test.problems[0].texts[0]])
    assert other_chunking.extractor().stats["computed_texts"] == 1


def test_load_refuses_heads_trained_on_another_encoder(encoder: Path, tmp_path: Path):
    folder = make_tiny_encoder(tmp_path / "enc", seed=1)
    system = small(folder, tmp_path / "cache", epochs=1)
    system.fit(make_split(0), seed=0)
    system.save(tmp_path / "ckpt")
    make_tiny_encoder(folder, seed=2)  # other weights under the same name
    with pytest.raises(HarnessError, match="another encoder"):
        SiameseBiLSTM.load(tmp_path / "ckpt")


def test_general_model_only_and_chunk_pair_scoring(encoder: Path, tmp_path: Path):
    system = small(encoder, tmp_path / "cache", groups={}, scoring="chunk_pairs", epochs=1)
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
    system = small(encoder, tmp_path / "cache", groups={"essay": ["essay"]}, validation_share=0.3, epochs=1)
    system.fit(data, seed=0)
    assert system.info["named_authors"] is False
    assert {system._route(p.discourse_types) for p in problems} == {"essay"}
    assert len(system.predict(problems)) == 30


def test_bad_parameters_and_misuse_are_harness_errors(encoder: Path, tmp_path: Path):
    with pytest.raises(HarnessError):
        SiameseBiLSTM(scoring="max")
    with pytest.raises(HarnessError):
        SiameseBiLSTM(groups={"general": ["essay"]})
    with pytest.raises(HarnessError):
        SiameseBiLSTM(batch_size=1)
    system = small(encoder, tmp_path / "cache")
    with pytest.raises(HarnessError):
        system.predict(make_split(0).problems)
    with pytest.raises(HarnessError):
        system.fit(make_split(0)._replace(truth=None), seed=0)
    with pytest.raises(HarnessError, match="layers"):
        small(encoder, tmp_path / "cache", layers=[2, 9]).fit(make_split(0), seed=0)


def test_importing_the_package_does_not_import_torch():
    code = "import sys, systems.siamese_bilstm, systems.siamese_bilstm.routing; print('torch' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "False"


def test_harness_run_and_predict_through_the_cli(encoder: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    from click.testing import CliRunner

    from harness import registry
    from harness.cli import main

    sample = Path(__file__).resolve().parent.parent / "samples" / "pan23-format-sample"
    entry = registry.Entry("systems.siamese_bilstm.system:SiameseBiLSTM", "BERT-BiLSTM Siamese ensemble")
    monkeypatch.setitem(registry.SYSTEMS, "siamese_bilstm", entry)  # the lead adds the real registry line
    settings = {
        "encoder": str(encoder),
        "max_tokens": 24,
        "hidden_size": 8,
        "epochs": 1,
        "batch_size": 4,
        "grid_step": 0.05,
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
    (run_dir,) = (out / "pan23").glob("siamese_bilstm@*/seed-0")
    recorded = json.loads((run_dir / "result.json").read_text())
    assert recorded["system"]["params"]["max_tokens"] == 24
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
    from systems.siamese_bilstm.features import LayerFeatures

    text = "the cat sat on the mat and it was not amused"
    first = LayerFeatures(str(encoder), max_tokens=24, cache_dir=tmp_path)
    expected = first.features([text])[0]
    (path,) = (tmp_path / "features").rglob("*.npy")
    path.write_bytes(b"not an array")
    again = LayerFeatures(str(encoder), max_tokens=24, cache_dir=tmp_path)
    np.testing.assert_array_equal(again.features([text])[0], expected)
    assert again.stats["computed_texts"] == 1
    third = LayerFeatures(str(encoder), max_tokens=24, cache_dir=tmp_path)
    np.testing.assert_array_equal(third.features([text])[0], expected)
    assert third.stats == {"computed_texts": 0, "computed_chunks": 0, "cached_texts": 1}
