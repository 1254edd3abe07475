"""`build_pairs` inputs: jsonl, folders, forum and PAN 2013-2015 corpora; bad input is a one-line error naming file,
line and field, and nothing is written; the output folder is refused, replaced or kept whole as asked."""

from __future__ import annotations

import json
import logging
import os
import shutil
from collections import Counter
from pathlib import Path

import pytest

from core.errors import DataError, HarnessError, OutputError
from tasks.pairs import build_pairs


def jsonl_corpus(path: Path, authors: int = 8, per_type: int = 3, extra: list[dict] | None = None) -> Path:
    """`authors` authors, each with `per_type` texts of two discourse types (every line its own group)."""
    rows = [
        {"author": f"a{a}", "text": f"text {i} of a{a} as {kind}, written with care", "discourse_type": kind}
        for a in range(authors)
        for kind in ("email", "essay")
        for i in range(per_type)
    ]
    rows += extra or []
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    return path


def lines(path: Path) -> list[str]:
    return path.read_text(encoding="utf-8").splitlines()


def assert_nothing_written(out: Path) -> None:
    assert not out.exists()
    assert not [p for p in out.parent.iterdir() if p.name.startswith(f".{out.name}.")]  # no staging left behind


def one_line(exc: pytest.ExceptionInfo) -> str:
    message = str(exc.value)
    assert "\n" not in message
    return message


def test_jsonl_author_with_one_text_is_dropped_and_counted(tmp_path):
    lone = {"author": "lonely", "text": "the only text of this author", "discourse_type": "email"}
    source = jsonl_corpus(tmp_path / "texts.jsonl", extra=[lone])
    manifest = build_pairs("jsonl", source, tmp_path / "out", pairs=8).data
    assert manifest["dropped"]["authors"] == {"author with one text": 1}
    truth = [json.loads(x) for s in ("train", "test") for x in lines(tmp_path / "out" / s / "truth.jsonl")]
    assert len(truth) == 8 and "lonely" not in {a for t in truth for a in t["authors"]}
    assert manifest["source"]["inputs"][0]["sha256"].startswith("sha256:")


@pytest.mark.parametrize(
    ("row", "field", "message"),
    [
        ({"author": "x", "text": "some words"}, "discourse_type", "missing"),
        ({"author": "x", "text": "some words", "discourse_type": 5}, "discourse_type", "expected str, got int"),
        ({"author": "x", "text": "some words", "discourse_type": " "}, "discourse_type", "empty string"),
        ({"author": "x", "text": "  \n", "discourse_type": "email"}, "text", "text is empty"),
        ({"text": "some words", "discourse_type": "email"}, "author", "missing"),
        ({"author": "x", "text": "words", "discourse_type": "email", "time": 5}, "time", "given here but not"),
        ({"author": "x", "text": "words", "discourse_type": "email", "topic": 3}, "topic", "expected str"),
    ],
)
def test_jsonl_bad_line_names_file_line_and_field(tmp_path, row, field, message):
    source = jsonl_corpus(tmp_path / "texts.jsonl", extra=[row])
    out = tmp_path / "out"
    with pytest.raises(DataError) as exc:
        build_pairs("jsonl", source, out, pairs=8)
    assert one_line(exc).startswith(f"{source}:49: field '{field}': ")  # 48 good lines before it
    assert message in str(exc.value)
    assert_nothing_written(out)


def test_no_author_with_two_texts_is_an_error(tmp_path):
    rows = [{"author": f"a{i}", "text": f"text number {i}", "discourse_type": "email"} for i in range(5)]
    source = tmp_path / "texts.jsonl"
    source.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    with pytest.raises(DataError) as exc:
        build_pairs("jsonl", source, tmp_path / "out", pairs=8)
    assert one_line(exc).startswith(f"{source}: field 'author': no author has two texts")
    assert "5 author with one text" in str(exc.value)
    assert_nothing_written(tmp_path / "out")


def test_too_few_authors_for_the_split(tmp_path):
    source = jsonl_corpus(tmp_path / "texts.jsonl", authors=2)
    with pytest.raises(DataError) as exc:
        build_pairs("jsonl", source, tmp_path / "out", pairs=4)
    # the data is at fault, not test_share: no share splits 2 authors into two splits of 2 (was "field 'test_share'")
    assert one_line(exc).startswith(f"{source}: field 'author': only 2 authors can give same-author pairs")
    assert "test_share" not in str(exc.value)
    assert_nothing_written(tmp_path / "out")


def short_texts_corpus(path: Path, *, long_authors: int = 3) -> Path:
    """8 authors of two discourse types; only the first `long_authors` write texts of 30 characters or more."""
    rows = [
        {"author": f"a{a}", "text": f"text {i} of a{a} as {kind}, written with care" if a < long_authors else
         f"{kind} {i} by a{a}", "discourse_type": kind}
        for a in range(8)
        for kind in ("email", "essay")
        for i in range(3)
    ]  # fmt: skip
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    return path


def test_texts_too_short_for_enough_authors_name_the_data_and_min_chars(tmp_path):
    """Issue 7: was "field 'test_share': only 3 authors ... too few for a train split at test_share 0.5"."""
    source = short_texts_corpus(tmp_path / "texts.jsonl")
    with pytest.raises(DataError) as exc:
        build_pairs("jsonl", source, tmp_path / "out", pairs=8, min_chars=30)
    line = one_line(exc)
    assert line.startswith(f"{source}: field 'author': only 3 authors can give same-author pairs")
    assert "30 shorter than min_chars=30" in line and "a lower min_chars keeps the shorter texts" in line
    assert "test_share" not in line and "cross_share" not in line
    assert_nothing_written(tmp_path / "out")
    build_pairs("jsonl", source, tmp_path / "out", pairs=8, min_chars=5)  # the fix it names works


def test_all_texts_too_short_suggest_min_chars_not_cross_share(tmp_path):
    """Issue 7: every text too short was answered with "a lower cross_share allows pairs of one discourse type"."""
    source = short_texts_corpus(tmp_path / "texts.jsonl", long_authors=0)
    with pytest.raises(DataError) as exc:
        build_pairs("jsonl", source, tmp_path / "out", pairs=8, min_chars=30)
    line = one_line(exc)
    assert line.startswith(f"{source}: field 'author': no author has two texts that can form a pair")
    assert "a lower min_chars" in line and "cross_share" not in line


def one_type_corpus(path: Path, authors: int, *, one_group: bool) -> Path:
    """Authors with three emails each, in their own group each (or all in one group per author)."""
    rows = [
        {"author": f"a{a}", "text": f"email {i} of a{a}, written with care", "discourse_type": "email"}
        | ({"group": f"g{a}"} if one_group else {})
        for a in range(authors)
        for i in range(3)
    ]
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    return path


def test_cross_share_is_suggested_only_where_it_would_give_a_set(tmp_path):
    """Audit 3: one genre with cross_share 0 was told "a higher cross_share allows pairs of two discourse types"."""
    enough = one_type_corpus(tmp_path / "enough.jsonl", 6, one_group=False)
    with pytest.raises(DataError) as exc:
        build_pairs("jsonl", enough, tmp_path / "out", pairs=8)  # cross_share 1: emails alone give no pair
    assert "a lower cross_share allows pairs of one discourse type" in one_line(exc)
    build_pairs("jsonl", enough, tmp_path / "out", pairs=8, cross_share=0.0)  # the fix it names works
    too_few = one_type_corpus(tmp_path / "too_few.jsonl", 3, one_group=False)
    with pytest.raises(DataError) as exc:
        build_pairs("jsonl", too_few, tmp_path / "out3", pairs=8)  # 3 authors: no cross_share makes a set
    assert "cross_share allows" not in one_line(exc)
    one_group = one_type_corpus(tmp_path / "one_group.jsonl", 6, one_group=True)
    for share in (0.0, 1.0):  # each author's texts share a group: neither kind of pair exists
        with pytest.raises(DataError) as exc:
            build_pairs("jsonl", one_group, tmp_path / "out4", pairs=8, cross_share=share)
        line = one_line(exc)
        assert "no author has two texts that can form a pair" in line and "cross_share allows" not in line
    assert_nothing_written(tmp_path / "out4")


def test_texts_shared_by_authors_name_the_data_not_test_share(tmp_path):
    shared = [
        {"author": f"b{a}", "text": f"one text {i} as {kind}, written by several", "discourse_type": kind}
        for a in range(5)
        for kind in ("email", "essay")
        for i in range(3)
    ]
    source = jsonl_corpus(tmp_path / "texts.jsonl", authors=3, extra=shared)
    with pytest.raises(DataError) as exc:
        build_pairs("jsonl", source, tmp_path / "out", pairs=8)
    line = one_line(exc)
    assert line.startswith(f"{source}: field 'author': only 3 authors can give same-author pairs")
    assert "30 same text under several authors" in line
    assert "test_share" not in line and "cross_share" not in line and "min_chars" not in line


def test_a_share_that_leaves_a_split_without_two_authors_names_test_share(tmp_path):
    source = jsonl_corpus(tmp_path / "texts.jsonl", authors=4)
    with pytest.raises(DataError) as exc:
        build_pairs("jsonl", source, tmp_path / "out", pairs=20, test_share=0.9)
    line = one_line(exc)
    assert line.startswith(f"{source}: field 'test_share': 4 authors can give same-author pairs, but only 1")
    assert line.endswith("a test_share nearer 0.5 balances them")


def test_too_many_pairs_names_a_count_that_fits(tmp_path):
    source = jsonl_corpus(tmp_path / "texts.jsonl")  # 8 authors x 6 texts: at most 24 pairs
    with pytest.raises(DataError) as exc:
        build_pairs("jsonl", source, tmp_path / "out", pairs=200)
    assert one_line(exc).startswith(f"{source}: field 'pairs': train split: only ")
    fits = int(str(exc.value).split("ask for at most about ")[1].split()[0])
    assert 0 < fits < 200
    assert_nothing_written(tmp_path / "out")


@pytest.mark.parametrize(
    "options",
    [
        {"test_share": 1.0},
        {"cross_share": 1.5},
        {"text_uses": 0},
        {"pairs": 3},
        {"pattern": r"(?P<author>.+)/(?P<discourse_type>.+)"},  # a folders option given to jsonl
        {"join": "thread"},  # a forum option given to jsonl
    ],
)
def test_bad_parameters_are_refused_before_reading(tmp_path, options):
    with pytest.raises(HarnessError) as exc:
        build_pairs("jsonl", tmp_path / "absent.jsonl", tmp_path / "out", **{"pairs": 8, **options})
    one_line(exc)
    assert not isinstance(exc.value, DataError)
    assert_nothing_written(tmp_path / "out")


def test_a_forum_max_chars_below_min_chars_is_refused_before_reading(tmp_path):
    """The forum build ran, then blamed min_chars for texts that max_chars had cut short (audit 3)."""
    with pytest.raises(HarnessError, match="max_chars=10 is below min_chars=30") as exc:
        build_pairs("forum", tmp_path / "absent", tmp_path / "out", pairs=8, join="thread", max_chars=10, min_chars=30)
    one_line(exc)
    assert_nothing_written(tmp_path / "out")


def test_out_dir_refused_when_not_empty_its_own_files_replaced_with_overwrite(tmp_path):
    source = jsonl_corpus(tmp_path / "texts.jsonl")
    out = tmp_path / "out"
    out.mkdir()
    (out / "keep.txt").write_text("mine", encoding="utf-8")
    with pytest.raises(HarnessError, match="not empty"):
        build_pairs("jsonl", source, out, pairs=8)
    assert (out / "keep.txt").read_text(encoding="utf-8") == "mine"
    # a failure with overwrite keeps the old folder whole
    with pytest.raises(DataError):
        build_pairs("jsonl", source, out, pairs=200, overwrite=True)
    assert [p.name for p in out.iterdir()] == ["keep.txt"]
    build_pairs("jsonl", source, out, pairs=8, overwrite=True)
    assert sorted(str(p.relative_to(out)) for p in out.rglob("*.json*")) == [
        "manifest.json",
        "pair_origins.jsonl",
        "test/pairs.jsonl",
        "test/truth.jsonl",
        "train/pairs.jsonl",
        "train/truth.jsonl",
    ]
    assert (out / "keep.txt").read_text(encoding="utf-8") == "mine"  # only the builder's own files are replaced
    assert [p.name for p in tmp_path.iterdir() if p.name.startswith(".") and p.suffix != ".lock"] == []
    empty = tmp_path / "empty"
    empty.mkdir()
    build_pairs("jsonl", source, empty, pairs=8)  # an empty folder is fine
    assert (empty / "manifest.json").is_file()


def test_forum_post_with_empty_text_names_its_line(tmp_path):
    post = {
        "post_id": "p1",
        "author": "alice",
        "market": "campus",
        "subforum": "College",
        "thread_id": "t1",
        "parent_id": None,
        "kind": "submission",
        "created": 1500000000,
        "text": "hello there",
    }
    rows = [post, {**post, "post_id": "p2", "kind": "comment"}, {**post, "post_id": "p3", "text": " "}]
    (tmp_path / "forum").mkdir()
    source = tmp_path / "forum" / "posts.jsonl"
    source.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    with pytest.raises(DataError) as exc:
        build_pairs("forum", tmp_path / "forum", tmp_path / "out", pairs=8)
    assert one_line(exc).startswith(f"{source}:3: field 'text': post 'p3': text is empty")
    assert_nothing_written(tmp_path / "out")


def test_folders_default_layout_bom_and_crlf(tmp_path):
    root = tmp_path / "corpus"
    for a in range(6):
        for kind in ("letter", "speech"):
            for i in range(2):
                path = root / f"author{a}" / kind / f"{i}.txt"
                path.parent.mkdir(parents=True, exist_ok=True)
                path.write_bytes(b"\xef\xbb\xbf" + f"line one of {a} {kind} {i}\r\nline two\r\n".encode())
    (root / "notes.md").write_text("not a text", encoding="utf-8")
    manifest = build_pairs("folders", root, tmp_path / "out", pairs=8).data
    assert manifest["dropped"]["texts"] == {"file not matching the pattern": 1}
    rows = [json.loads(x) for s in ("train", "test") for x in lines(tmp_path / "out" / s / "pairs.jsonl")]
    texts = [t for row in rows for t in row["pair"]]
    assert all(t.startswith("line one of ") and t.endswith("\nline two\n") and "\r" not in t for t in texts)
    assert all(sorted(row["discourse_types"]) == ["letter", "speech"] for row in rows)


def test_folders_bad_bytes_and_bad_pattern(tmp_path):
    root = tmp_path / "corpus"
    (root / "a" / "essay").mkdir(parents=True)
    (root / "a" / "essay" / "1.txt").write_bytes(b"fine\nnot \xff utf-8\n")
    with pytest.raises(DataError) as exc:
        build_pairs("folders", root, tmp_path / "out", pairs=8)
    assert one_line(exc).startswith(f"{root / 'a' / 'essay' / '1.txt'}:2: not valid UTF-8")
    with pytest.raises(HarnessError, match="named groups"):
        build_pairs("folders", root, tmp_path / "out", pairs=8, pattern=r"(?P<author>[^/]+)/.*")
    assert_nothing_written(tmp_path / "out")


def _small_folders(root: Path) -> Path:
    for a in range(6):
        for kind in ("letter", "speech"):
            for i in range(2):
                path = root / f"author{a}" / kind / f"{i}.txt"
                path.parent.mkdir(parents=True, exist_ok=True)
                path.write_text(f"text {i} of {a} in {kind}, long enough to keep\n", encoding="utf-8")
    return root


@pytest.mark.parametrize("entry", ["broken link", "pipe", "linked author folder", "name not UTF-8"])
def test_folders_refuse_an_entry_they_cannot_read_as_a_text(tmp_path, entry):
    """Each was dropped, and the summary still said 'left out: 0 texts, 0 authors' (audit 3, finding 5)."""
    root = _small_folders(tmp_path / "corpus")
    named = {
        "broken link": root / "author0" / "letter" / "9.txt",
        "pipe": root / "author0" / "speech" / "9.txt",
        "linked author folder": root / "author9",
        "name not UTF-8": root / os.fsdecode(b"author\xff") / "letter" / "0.txt",
    }[entry]
    if entry == "broken link":
        named.symlink_to(root / "nowhere.txt")
    elif entry == "pipe":
        os.mkfifo(named)
    elif entry == "linked author folder":
        named.symlink_to(root / "author1", target_is_directory=True)
    else:
        named.parent.mkdir(parents=True)
        named.write_text("a text by an author whose name is not UTF-8\n", encoding="utf-8")
        named = root
    with pytest.raises(DataError) as exc:
        build_pairs("folders", root, tmp_path / "out", pairs=8)
    assert one_line(exc).startswith(f"{named}: ")
    assert_nothing_written(tmp_path / "out")


# ----------------------------------------------------------------------- real PAN 2013-2015 corpora

ESSAYS = (
    "pan14-author-verification-training-corpus-english-essays-2014-04-22",
    "pan14-author-verification-test-corpus2-english-essays-2014-04-22",
)
NOVELS = "pan14-author-verification-training-corpus-english-novels-2014-04-22"


@pytest.fixture(scope="module")
def pan14(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    from helpers.pan_corpora import extract_corpora

    return extract_corpora(tmp_path_factory.mktemp("pan14"), (*ESSAYS, NOVELS))


def test_pan_classic_essays_pairs_never_from_one_problem(pan14, tmp_path):
    """PAN14 essays train + test reuse texts: each text is one text, in one pair, never with a text of its problems."""
    from tasks.pan.folders import read_classic_corpus
    from toolkit.splits import text_key

    corpora = [pan14[name] for name in ESSAYS]
    manifest = build_pairs("pan-classic", corpora, tmp_path / "out", pairs=12, cross_share=0.0).data
    assert manifest["source"]["authors"].startswith("linked:")
    problems_of: dict[str, set[str]] = {}
    for corpus in corpora:
        for problem in read_classic_corpus(corpus)[0]:
            for text in problem.texts:
                problems_of.setdefault(text_key(text), set()).add(f"{corpus.name}/{problem.id}")
    assert sum(len(p) > 1 for p in problems_of.values()) > 100  # the reuse this guards against is real
    seen: Counter = Counter()
    for split in ("train", "test"):
        pairs = [json.loads(x) for x in lines(tmp_path / "out" / split / "pairs.jsonl")]
        truth = [json.loads(x) for x in lines(tmp_path / "out" / split / "truth.jsonl")]
        for pair, answer in zip(pairs, truth, strict=True):
            first, second = (text_key(t) for t in pair["pair"])
            seen.update((first, second))
            assert pair["discourse_types"] == ["essay", "essay"]
            assert not problems_of[first] & problems_of[second]
            assert answer["same"] == (answer["authors"][0] == answer["authors"][1])
    assert max(seen.values()) == 1


def test_pan_classic_essays_and_novels_share_no_author(pan14, tmp_path):
    """No PAN14 author wrote both essays and novels: a cross-genre set from them cannot exist, and says so."""
    with pytest.raises(DataError) as exc:
        build_pairs("pan-classic", [pan14[ESSAYS[0]], pan14[NOVELS]], tmp_path / "out", pairs=12)
    assert "no author has two texts that can form a pair" in one_line(exc)
    assert "a lower cross_share" in str(exc.value)
    assert_nothing_written(tmp_path / "out")


def test_pan_classic_genre_labels_a_corpus_whose_name_gives_none(pan14, tmp_path):
    """A PAN14 corpus mounted under a name without its genre (as TIRA's "input") reads "unknown"; --genre gives it
    back, is recorded in the manifest, and is refused where it contradicts the genre found or miscounts the inputs."""
    from click.testing import CliRunner

    from harness.cli import main

    renamed = [tmp_path / "first", tmp_path / "second"]  # train and test corpora, under names without a genre
    for name, folder in zip(ESSAYS, renamed, strict=True):
        shutil.copytree(pan14[name], folder)
    arguments = ["--from", "pan-classic", "--pairs", "12", "--cross-share", "0", "--genre", "Essays"]
    result = CliRunner().invoke(main, ["pairs", *arguments, *map(str, renamed), str(tmp_path / "out")])
    assert result.exit_code == 0, result.output
    pairs = [json.loads(x) for x in lines(tmp_path / "out" / "train" / "pairs.jsonl")]
    assert {tuple(pair["discourse_types"]) for pair in pairs} == {("essay", "essay")}
    assert json.loads((tmp_path / "out" / "manifest.json").read_text())["parameters"]["genre"] == ["essay", "essay"]

    both = [renamed[0], pan14[NOVELS]]
    with pytest.raises(HarnessError, match="but the corpus is 'novel'"):
        build_pairs("pan-classic", both, tmp_path / "o2", pairs=12, cross_share=0.0, genre=("essay",))
    with pytest.raises(HarnessError, match="--genre given 3 times for 2 inputs"):
        build_pairs("pan-classic", both, tmp_path / "o2", pairs=12, genre=("essay", "novel", "essay"))
    with pytest.raises(HarnessError, match="genre applies to pan-classic input only"):
        build_pairs("jsonl", jsonl_corpus(tmp_path / "texts.jsonl"), tmp_path / "o2", pairs=8, genre=("essay",))
    assert_nothing_written(tmp_path / "o2")


def test_the_current_folder_is_refused_as_the_output(tmp_path, monkeypatch):
    """Audit 10, F6: `harness pairs ... .` in an empty folder built the set, then called the folder "not empty"."""
    source = jsonl_corpus(tmp_path / "texts.jsonl")
    here = tmp_path / "empty"
    here.mkdir()
    monkeypatch.chdir(here)
    with pytest.raises(HarnessError, match="is the current folder; name a new folder"):
        build_pairs("jsonl", source, Path("."), pairs=8)
    assert not any(here.iterdir())


def test_overwrite_replaces_the_builders_files_and_keeps_the_users(tmp_path):
    source = jsonl_corpus(tmp_path / "texts.jsonl")
    out = tmp_path / "out"
    build_pairs("jsonl", source, out, pairs=8, seed=0)
    (out / "train" / "notes.txt").write_text("my notes", encoding="utf-8")
    first = (out / "manifest.json").read_bytes()
    build_pairs("jsonl", source, out, pairs=8, seed=1, overwrite=True)
    assert (out / "manifest.json").read_bytes() != first and json.loads((out / "manifest.json").read_text())[
        "seed"
    ] == 1
    assert (out / "train" / "notes.txt").read_text(encoding="utf-8") == "my notes"
    assert [p.name for p in tmp_path.iterdir() if p.name.startswith(".") and p.suffix != ".lock"] == []


def test_a_failure_while_replacing_puts_the_old_dataset_back(tmp_path, monkeypatch):
    source = jsonl_corpus(tmp_path / "texts.jsonl")
    out = tmp_path / "out"
    build_pairs("jsonl", source, out, pairs=8, seed=0)
    before = {p.relative_to(out): p.read_bytes() for p in out.rglob("*") if p.is_file()}
    real_replace = os.replace
    calls = []

    def failing_replace(src, dst):
        calls.append(src)
        if len(calls) == 9:  # after the six old files are set aside and three new ones are in place
            raise OSError(28, "No space left on device")
        return real_replace(src, dst)

    monkeypatch.setattr(os, "replace", failing_replace)
    with pytest.raises(OutputError, match=f"^{out}: cannot be written: No space left on device$"):  # one line
        build_pairs("jsonl", source, out, pairs=8, seed=1, overwrite=True)
    monkeypatch.setattr(os, "replace", real_replace)
    assert {p.relative_to(out): p.read_bytes() for p in out.rglob("*") if p.is_file()} == before
    assert [p.name for p in tmp_path.iterdir() if p.name.startswith(".") and p.suffix != ".lock"] == []


@pytest.mark.parametrize("where", ["is", "holds", "lies inside"])
def test_an_output_folder_that_is_holds_or_lies_inside_the_input_is_refused(tmp_path, where):
    corpus = tmp_path / "corpus"
    corpus.mkdir()
    source = jsonl_corpus(corpus / "texts.jsonl")
    (corpus / "notes.txt").write_text("mine", encoding="utf-8")
    # a folders input can hold the output folder; a jsonl input (a file) can be it or lie in it
    given, out = {"is": (source, source), "holds": (source, corpus), "lies inside": (corpus, corpus / "out")}[where]
    before = sorted(p.relative_to(tmp_path) for p in tmp_path.rglob("*"))
    with pytest.raises(HarnessError, match=f"output folder {where} the input") as exc:
        build_pairs("jsonl" if given == source else "folders", given, out, pairs=8, overwrite=True)
    one_line(exc)
    assert sorted(p.relative_to(tmp_path) for p in tmp_path.rglob("*")) == before


def _files(folder: Path) -> dict[str, bytes]:
    return {str(p.relative_to(folder)): p.read_bytes() for p in folder.rglob("*") if p.is_file()}


def _a_users_own_dataset(out: Path) -> None:  # never written by the builder: no manifest of a build
    (out / "manifest.json").unlink()


def _edited_since(out: Path) -> None:  # the builder's own earlier file, edited by the user since
    (out / "test" / "truth.jsonl").write_text("{}\n", encoding="utf-8")


def _manifest_edited(out: Path) -> None:  # audit 9, F9: a note added to the manifest was lost to --overwrite
    data = json.loads((out / "manifest.json").read_text(encoding="utf-8"))
    (out / "manifest.json").write_text(json.dumps({**data, "my_notes": "important"}), encoding="utf-8")


def _not_listed(out: Path) -> None:  # files the earlier build's manifest does not list
    (out / "manifest.json").write_text('{"source": {}, "files": {}}', encoding="utf-8")


@pytest.mark.parametrize(
    ("make", "message"),
    [
        (_a_users_own_dataset, "not written by harness pairs (no manifest.json of a build is here)"),
        (_edited_since, "changed since harness pairs wrote it"),
        (_manifest_edited, "manifest.json: changed since harness pairs wrote it"),
        (_not_listed, "not written by harness pairs (manifest.json does not list it)"),
    ],
)
def test_overwrite_refuses_files_the_builder_did_not_write(tmp_path, make, message):
    source = jsonl_corpus(tmp_path / "texts.jsonl")
    out = tmp_path / "out"
    build_pairs("jsonl", source, out, pairs=8, seed=0)
    make(out)
    before = _files(out)
    with pytest.raises(HarnessError) as exc:
        build_pairs("jsonl", source, out, pairs=8, seed=1, overwrite=True)
    assert message in one_line(exc) and str(out) in str(exc.value)
    assert _files(out) == before  # nothing of the user's replaced or removed


def test_overwrite_refuses_a_compressed_twin_and_a_folder_where_a_file_goes(tmp_path):
    source = jsonl_corpus(tmp_path / "texts.jsonl")
    out = tmp_path / "out"
    (out / "train").mkdir(parents=True)
    (out / "train" / "pairs.jsonl.gz").write_bytes(b"mine")
    with pytest.raises(HarnessError) as exc:
        build_pairs("jsonl", source, out, pairs=8, overwrite=True)
    assert one_line(exc).startswith(f"{out / 'train' / 'pairs.jsonl.gz'}: would lie beside the new train/pairs.jsonl")
    (out / "train" / "pairs.jsonl.gz").unlink()
    (out / "test" / "pairs.jsonl").mkdir(parents=True)
    with pytest.raises(HarnessError, match="is not a file, and the dataset's test/pairs.jsonl goes there"):
        build_pairs("jsonl", source, out, pairs=8, overwrite=True)
    assert sorted(str(p.relative_to(out)) for p in out.rglob("*")) == ["test", "test/pairs.jsonl", "train"]
    # audit 9, F10: a file where a split's folder goes was "cannot be written: File exists", after the other split's
    # folder had been made
    (out / "test" / "pairs.jsonl").rmdir()
    (out / "test").rmdir()
    shutil.rmtree(out / "train")
    (out / "train").write_text("mine", encoding="utf-8")
    with pytest.raises(HarnessError) as exc:
        build_pairs("jsonl", source, out, pairs=8, overwrite=True)
    assert one_line(exc).startswith(f"{out / 'train'}: is not a folder, and the dataset's train/")
    assert sorted(str(p.relative_to(out)) for p in out.rglob("*")) == ["train"]


def test_a_pan_classic_corpus_without_a_genre_is_named(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    """Its texts' discourse type is what cross-type pairs are made of: an unknown one is said, once every corpus
    has been read (a refused input keeps its one error line)."""
    from tasks.pairs.sources import read_pan_classic_texts

    corpora = []
    for name in ("pan14-essays", "corpus"):  # a genre in the name; none
        for problem in ("P01", "P02"):
            (tmp_path / name / problem).mkdir(parents=True)
            (tmp_path / name / problem / "known01.txt").write_text(f"known text of {name} {problem}", encoding="utf-8")
            (tmp_path / name / problem / "unknown.txt").write_text(f"other text of {name} {problem}", encoding="utf-8")
        (tmp_path / name / "truth.txt").write_text("P01 Y\nP02 N\n", encoding="utf-8")
        corpora.append(tmp_path / name)
    with caplog.at_level(logging.WARNING, logger="harness"):
        read = read_pan_classic_texts(corpora)
    assert Counter(text.discourse_type for text in read.texts) == {"essay": 4, "unknown": 4}
    (warning,) = [r.getMessage() for r in caplog.records if r.levelno == logging.WARNING]
    assert warning.startswith(f"{tmp_path / 'corpus'}: discourse type unknown")


def test_forum_texts_of_the_same_second_come_by_post_id_whatever_the_files_order(tmp_path: Path) -> None:
    from tasks.forum.records import ForumPost
    from tasks.pairs.forum_texts import forum_texts

    posts = [
        ForumPost(f"p{i}", f"u{i % 2}", "campus", "College", f"t{i}", None, kind, 1_500_000_000 + i // 3, f"text {i}")
        for i, kind in zip(range(9), ["submission", "comment"] * 5, strict=False)
    ]
    forward = forum_texts(posts, tmp_path / "posts.jsonl")
    assert forum_texts(posts[::-1], tmp_path / "posts.jsonl") == forward
    assert [t.text for t in forward][:3] == ["text 0", "text 1", "text 2"]  # made in one second: by id
