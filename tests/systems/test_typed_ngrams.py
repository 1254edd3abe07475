"""Typed character 3-grams (Sapkota et al. 2015): the typing on hand-checked examples, and the verifier on the
PAN 2023 format sample (fit, predict, save, load)."""

from __future__ import annotations

import json
from collections import defaultdict
from pathlib import Path

import pytest
from helpers.paths import SAMPLE

from core.errors import HarnessError
from harness.params import parse_cli
from harness.registry import system_class
from systems.baselines.typed_ngrams import AFFIX_TYPES, NGRAM_TYPES, PUNCT_TYPES, TypedNgrams, typed_char_ngrams
from tasks.pan.pan23 import Pan23Task

# The paper's example sentence (its Table 1) and the 3-grams of each type it lists, in text order.
SENTENCE = "The actors wanted to see if the pact seemed like an old-fashioned one."
PAPER_TABLE = {
    "prefix": ["act", "wan", "pac", "see", "lik", "fas"],
    "suffix": ["ors", "ted", "act", "med", "ike", "ned"],
    "space-prefix": [" ac", " wa", " to", " se", " if", " th", " pa", " se", " li", " an", " ol", " on"],
    "space-suffix": ["he ", "rs ", "ed ", "to ", "ee ", "if ", "he ", "ct ", "ed ", "ke ", "an ", "ed "],
    "whole-word": ["The", "see", "the", "old", "one"],
    "mid-word": ["cto", "tor", "ant", "nte", "eem", "eme", "ash", "shi", "hio", "ion", "one"],
    "multi-word": ["e a", "s w", "d t", "o s", "e i", "f t", "e p", "t s", "d l", "e a", "n o", "d o"],
    "beg-punct": ["-fa"],
    "mid-punct": ["d-f"],
    "end-punct": ["ld-", "ne."],
}


def by_type(terms: list[str]) -> dict[str, list[str]]:
    grouped: dict[str, list[str]] = defaultdict(list)
    for term in terms:
        kind, _, ngram = term.partition(":")
        grouped[kind].append(ngram)
    return dict(grouped)


def test_the_papers_example_sentence_is_typed_as_its_table() -> None:
    terms = typed_char_ngrams(SENTENCE)
    assert by_type(terms) == PAPER_TABLE
    assert len(terms) == len(SENTENCE) - 2  # every 3-gram has exactly one type


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("cat", ["whole-word:cat"]),
        ("cats", ["prefix:cat", "suffix:ats"]),
        ("house", ["prefix:hou", "mid-word:ous", "suffix:use"]),
        ("a b", ["multi-word:a b"]),
        (" ab", ["space-prefix: ab"]),
        ("ab ", ["space-suffix:ab "]),
        (" a ", ["space-prefix: a "]),  # a space first wins over a space last
        (",ab", ["beg-punct:,ab"]),
        ("a,b", ["mid-punct:a,b"]),
        ("ab,", ["end-punct:ab,"]),
        (".a.", ["beg-punct:.a."]),  # first punctuation, middle not: beg-punct, whatever the last is
        ("a. ", ["mid-punct:a. "]),
        (". T", ["beg-punct:. T"]),
        ("(a)", ["beg-punct:(a)"]),
        ("it\n\n  is", ["space-suffix:it ", "multi-word:t i", "space-prefix: is"]),  # white space runs: one space
        ("ab", []),
    ],
)
def test_hand_checked_types(text: str, expected: list[str]) -> None:
    assert typed_char_ngrams(text) == expected


def test_types_filter_and_case() -> None:
    assert typed_char_ngrams("The cats.", types=AFFIX_TYPES) == [
        "space-suffix:he ",
        "space-prefix: ca",
        "prefix:cat",
        "suffix:ats",
    ]
    assert typed_char_ngrams("THE cats.", types=("whole-word", "end-punct"), lowercase=True) == [
        "whole-word:the",
        "end-punct:ts.",
    ]


def test_defaults_and_refused_types() -> None:
    system = TypedNgrams()
    assert system.types == AFFIX_TYPES + PUNCT_TYPES
    assert set(NGRAM_TYPES) == set(AFFIX_TYPES) | {"whole-word", "mid-word", "multi-word"} | set(PUNCT_TYPES)
    for bad in (("prefix", "infix"), (), ("prefix", "prefix")):
        with pytest.raises(ValueError, match="types"):
            TypedNgrams(types=bad)
    assert system_class("typed_ngrams") is TypedNgrams
    assert parse_cli(TypedNgrams, {"types": "prefix,end-punct"})["types"] == ("prefix", "end-punct")


def test_fit_predict_save_load_on_the_pan23_sample(tmp_path: Path) -> None:
    task = Pan23Task()
    train, test = task.load(SAMPLE, "train"), task.load(SAMPLE, "test")
    system = TypedNgrams(types=("prefix", "suffix", "space-prefix", "mid-punct"), grid_step=0.05, calibration_folds=2)
    system.fit(train, seed=0)
    assert system._tfidf is not None
    kinds = {term.partition(":")[0] for term in system._tfidf.vocabulary}
    assert kinds <= set(system.types) and len(kinds) > 1
    answers = system.predict(test.problems)
    assert [a.id for a in answers] == [p.id for p in test.problems]
    assert all(0.0 <= a.value <= 1.0 for a in answers)
    raw = system.raw_scores(test.problems)
    assert ((raw >= 0) & (raw <= 1)).all() and raw.std() > 0

    system.save(tmp_path / "ckpt")
    config = json.loads((tmp_path / "ckpt" / "config.json").read_text(encoding="utf-8"))
    assert config["params"]["types"] == list(system.types)  # JSON, no pickle
    assert not list((tmp_path / "ckpt").glob("*.pkl"))
    loaded = TypedNgrams.load(tmp_path / "ckpt")
    assert loaded.params() == system.params()
    assert loaded.predict(test.problems) == answers


def test_a_checkpoint_with_other_types_is_refused(tmp_path: Path) -> None:
    task = Pan23Task()
    system = TypedNgrams(grid_step=0.1, calibration_folds=2)
    system.fit(task.load(SAMPLE, "train"), seed=0)
    system.save(tmp_path / "ckpt")
    config_path = tmp_path / "ckpt" / "config.json"
    config = json.loads(config_path.read_text(encoding="utf-8"))
    config.pop("checksums")  # as written before checksums: the system's own check must refuse it
    config["params"]["types"] = ["prefix", "suffix"]  # the vocabulary holds punctuation and space types too
    config_path.write_text(json.dumps(config), encoding="utf-8")
    with pytest.raises(HarnessError, match="typed 3-gram") as info:
        TypedNgrams.load(tmp_path / "ckpt")
    assert str(config_path) in str(info.value)
