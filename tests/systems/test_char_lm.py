"""char_lm (Bagnall 2015 multi-headed character RNN): alphabet, parameters, and a tiny model on real PAN15 data.

The real-data tests train a tiny configuration (a few seconds of CPU) on half of the PAN15 English
training problems and answer the other half (text-disjoint groups, toolkit.splits); they run offline.
"""

from __future__ import annotations

import tarfile
from pathlib import Path

import numpy as np
import pytest
from helpers.pan_corpora import pan15_text_disjoint_halves, run_and_predict

from core.errors import HarnessError
from core.records import VerificationData, VerificationProblem
from harness.params import build

TINY = {
    "preset.embedding": 16,
    "preset.hidden": 48,
    "preset.seq_len": 64,
    "preset.batch_size": 32,
    "preset.epochs": 3,
    "preset.max_text_chars": 2500,
    "preset.window": 128,
    "preset.warmup": 16,
    "preset.head_rows": 2500,
    "preset.head_steps": 25,
    "preset.ref_chars": 500,
    "preset.max_refs": 40,
    "device": "cpu",
}


def test_reduced_alphabet_marks_capitals_and_folds_the_rest() -> None:
    from systems.char_lm.text import ALPHABET, encode, reduce_text

    assert reduce_text("Hello,  World!\n42 café “x”") == '^hello, ^world! 77 cafe "x"'
    assert reduce_text("a\u00a7b") == "a#b"  # a character outside the alphabet -> the rare symbol
    symbols = encode("Abc", max_chars=2)
    assert symbols.dtype == np.uint8 and "".join(ALPHABET[i] for i in symbols) == "^a"


def test_presets_are_parts_reached_by_name_and_bad_fields_are_refused() -> None:
    from systems.char_lm.system import CharLM, PaperPreset

    paper = build(CharLM, {"preset": "paper"})
    assert isinstance(paper.preset, PaperPreset) and paper.preset.hidden > CharLM().preset.hidden
    assert paper.params()["preset"]["name"] == "paper"
    assert build(CharLM, {"preset.hidden": 64}).preset.hidden == 64
    with pytest.raises(HarnessError, match="no field 'hiden'"):
        build(CharLM, {"preset.hiden": 64})
    with pytest.raises(HarnessError, match="cell"):
        build(CharLM, {"preset.cell": "transformer"})


def test_predict_before_fit_is_one_line_error() -> None:
    from systems.char_lm.system import CharLM

    problem = VerificationProblem("p", ("a known text", "an unknown text"), None)
    with pytest.raises(HarnessError, match="not fitted"):
        CharLM().predict([problem])


@pytest.fixture(scope="module")
def pan15(tmp_path_factory: pytest.TempPathFactory) -> tuple[VerificationData, VerificationData]:
    """PAN15 English training problems, split in two halves that share no text."""
    from helpers.paths import SHARED_DATA

    from tasks.pan.classic import PanClassicTask
    from toolkit.splits import grouped_split, problem_groups, shared_texts

    archive_path = SHARED_DATA / "pan13-15-av-en.tar.gz"
    if not archive_path.is_file():
        pytest.skip(f"{archive_path.name} not found in {SHARED_DATA} (set HARNESS_SHARED_DATA)")
    folder = tmp_path_factory.mktemp("pan15")
    with tarfile.open(archive_path) as archive:
        members = [m for m in archive.getmembers() if "pan15-authorship-verification-training" in m.name]
        archive.extractall(folder, members=members, filter="data")
    corpus = next(p.parent for p in folder.rglob("truth.txt") if "english" in p.parent.name)
    root = folder / "data"
    root.mkdir()
    (root / "train").symlink_to(corpus)
    data = PanClassicTask().load(root, "train")
    train_idx, test_idx = grouped_split(problem_groups(list(data.problems)), 0.5, seed=0)
    train = VerificationData(tuple(data.problems[i] for i in train_idx), data.truth, data.source, data.checksum)
    test = VerificationData(tuple(data.problems[i] for i in test_idx), data.truth, data.source, data.checksum)
    assert shared_texts(train.problems, test.problems) == 0
    return train, test


@pytest.fixture(scope="module")
def fitted(pan15: tuple[VerificationData, VerificationData]) -> object:
    from systems.char_lm.system import CharLM

    system = build(CharLM, TINY)
    system.fit(pan15[0], seed=0)
    return system


def test_training_loss_falls_and_heads_favour_their_own_author(
    fitted: object, pan15: tuple[VerificationData, VerificationData]
) -> None:
    history = fitted.training_stats["history"]
    assert len(history) == 3 and history[-1]["loss"] < history[0]["loss"] - 0.1
    # a constructed same-author case from real text: a head fitted on the first half of each known
    # text must predict that text's second half better than the other authors' heads do
    train = pan15[0]
    problems = []
    for problem in train.problems[:12]:
        known = problem.texts[0]
        half = len(known) // 2
        problems.append(VerificationProblem(problem.id, (known[:half], known[half:]), None))
    d = fitted.raw_scores(problems)
    assert np.mean(d > 0) >= 0.75, d


def test_training_scores_are_what_the_map_and_band_were_fitted_on(
    fitted: object, pan15: tuple[VerificationData, VerificationData]
) -> None:
    from toolkit.calibration import training_labels

    # benchmarks/char_lm_calibration.py compares answer rules on these kept scores: they must be the fitted ones
    d = fitted.training_scores
    assert d.shape == (len(pan15[0].problems),)
    labels = training_labels(pan15[0])
    assert fitted.band == fitted.fit_band(pan15[0], fitted.probabilities(d), labels)
    assert d[labels].mean() > d[~labels].mean()


def test_beats_chance_on_held_out_real_problems(
    fitted: object, pan15: tuple[VerificationData, VerificationData]
) -> None:
    from harness.metrics.verification import auc

    test = pan15[1]
    truth = [test.truth[p.id].same for p in test.problems]
    answers = [a.value for a in fitted.predict(test.problems)]
    assert all(0.0 <= a <= 1.0 for a in answers)
    # observed: AUC 0.917 (c@1 0.858) on these 50 held-out problems, trained on the other 50 (seed 0, CPU)
    assert auc(truth, answers) > 0.75


def test_an_answer_does_not_depend_on_the_other_problems_answered_with_it(
    fitted: object, pan15: tuple[VerificationData, VerificationData]
) -> None:
    """Audit 16, F4: a second problem with the same known texts, whose unknown text is one of the training
    unknowns the heads are centred on, must not move the first problem's answer (it did: its own head's bias
    left that reference out for both problems)."""
    from toolkit.splits import text_key

    problem = pan15[1].problems[0]
    reference = next(p.texts[-1] for p in pan15[0].problems if text_key(p.texts[-1]) in fitted._ref_keys)
    twin = VerificationProblem("twin", (*problem.texts[:-1], reference), None)
    alone = fitted.raw_scores([problem])
    together = fitted.raw_scores([problem, twin])
    np.testing.assert_allclose(together[0], alone[0], rtol=0, atol=1e-6)


def test_checkpoint_reload_gives_the_same_answers(
    fitted: object, pan15: tuple[VerificationData, VerificationData], tmp_path: Path
) -> None:
    from systems.char_lm.system import CharLM

    problems = pan15[1].problems[:10]
    before = [a.value for a in fitted.predict(problems)]
    fitted.save(tmp_path / "checkpoint")
    assert (tmp_path / "checkpoint" / "weights.safetensors").is_file()
    from harness.runtime import load_like

    assert CharLM.load(tmp_path / "checkpoint").device == "auto"  # run-time settings are not the checkpoint's
    loaded = load_like(fitted, tmp_path / "checkpoint")  # with the fitted system's device
    assert loaded.params() == fitted.params()
    after = [a.value for a in loaded.predict(problems)]
    np.testing.assert_allclose(after, before, atol=1e-9)
    with pytest.raises(HarnessError, match="checkpoint is for system"):
        from systems.baselines.cngdist import CharNgramDistance

        CharNgramDistance.load(tmp_path / "checkpoint")


def test_harness_predict_reloads_the_checkpoint_of_harness_run(tmp_path: Path) -> None:
    """Through the CLI, offline: `harness predict` from the run's checkpoint writes the run's answers exactly."""
    # run_and_predict asserts both commands succeed, the recorded AUC matches the answers file, and the
    # answers of `harness predict` equal the run's byte for byte; the quality bar is the held-out test above
    run_and_predict("char_lm", pan15_text_disjoint_halves(tmp_path), tmp_path, params=TINY)


def test_a_head_is_fitted_alike_whatever_heads_share_its_group() -> None:
    """fit_heads groups samples by length; each head's fit must not depend on its group or its place in the
    input: heads fitted one at a time equal heads fitted in groups of 3 from an unsorted input."""
    import torch

    from systems.char_lm.model import fit_heads

    rng = np.random.default_rng(0)
    hidden, vocab = 8, 5
    lengths = [40, 3, 17, 1, 60, 9, 25]  # unsorted, so grouping by length reorders them
    samples = [
        (rng.normal(size=(n, hidden)).astype(np.float32), rng.integers(0, vocab, size=n).astype(np.int64))
        for n in lengths
    ]
    init = {"init_weight": rng.normal(size=(hidden, vocab)).astype(np.float32),
            "init_bias": np.zeros(vocab, dtype=np.float32)}  # fmt: skip
    settings = {"steps": 15, "lr": 0.05, "l2": 1e-3, "device": "cpu"}
    torch.manual_seed(0)
    grouped_w, grouped_b = fit_heads(samples, group=3, **init, **settings)
    alone = [fit_heads([sample], group=1, **init, **settings) for sample in samples]
    np.testing.assert_allclose(grouped_w, np.concatenate([w for w, _ in alone]), atol=1e-5)
    np.testing.assert_allclose(grouped_b, np.concatenate([b for _, b in alone]), atol=1e-5)
    # and the heads moved: each one fits its own sample (a check that would pass on untouched heads fails here)
    assert all(np.abs(w - init["init_weight"]).max() > 1e-3 for w in grouped_w)


def test_reference_sample_is_seeded_sorted_and_all_heads_without_a_cap() -> None:
    from systems.char_lm.system import _reference_sample

    assert _reference_sample(7, None, seed=0).tolist() == list(range(7))
    assert _reference_sample(7, 7, seed=0).tolist() == list(range(7))  # a cap at or above the heads: all of them
    sample = _reference_sample(5000, 500, seed=1)
    assert len(set(sample.tolist())) == 500 and sample.min() >= 0 and sample.max() < 5000
    assert np.all(np.diff(sample) > 0)
    assert np.array_equal(sample, _reference_sample(5000, 500, seed=1))
    assert not np.array_equal(sample, _reference_sample(5000, 500, seed=2))


def test_a_sample_of_reference_heads_approximates_every_head_and_survives_a_checkpoint(
    fitted: object, pan15: tuple[VerificationData, VerificationData], tmp_path: Path
) -> None:
    """Same seed, same network and heads: only the reference heads differ. A cap at the head count changes
    nothing; a cap of 10 of the ~50 heads changes d but keeps its order close to the full mean's."""
    from harness.runtime import load_like
    from systems.char_lm.system import CharLM

    test = pan15[1].problems
    full = fitted.raw_scores(test)
    heads = fitted.training_stats["heads"]
    assert fitted.training_stats["reference_heads"] == heads

    uncapped = build(CharLM, {**TINY, "preset.max_reference_heads": heads})
    uncapped.fit(pan15[0], seed=0)
    # two fits of one seed agree to float32 rounding (about 1e-6; the d's are of order 0.05)
    np.testing.assert_allclose(uncapped.raw_scores(test), full, atol=1e-5)

    capped = build(CharLM, {**TINY, "preset.max_reference_heads": 10})
    capped.fit(pan15[0], seed=0)
    assert capped.training_stats["reference_heads"] == 10
    sampled = capped.raw_scores(test)
    assert not np.allclose(sampled, full)
    # observed: Pearson r 0.96 between the two on these 50 held-out problems
    assert np.corrcoef(sampled, full)[0, 1] > 0.8
    capped.save(tmp_path / "capped")
    np.testing.assert_allclose(load_like(capped, tmp_path / "capped").raw_scores(test), sampled, atol=1e-9)
