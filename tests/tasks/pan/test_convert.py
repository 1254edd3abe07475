"""Converting PAN 2013-2015 corpus folders to PAN 2020-2023 jsonl."""

from __future__ import annotations

import json
import logging
import os
import shutil
import tarfile
from pathlib import Path

import pytest
from helpers.paths import REPO

from core.errors import DataError, HarnessError
from tasks.pan import convert as convert_module
from tasks.pan.classic import PanClassicTask
from tasks.pan.convert import convert_classic_to_jsonl, join_known
from tasks.pan.jsonl import read_pairs
from tasks.pan.pan23 import Pan23Task

SHARED = Path(os.environ.get("HARNESS_SHARED_DATA", REPO.parent / "shared" / "data"))
TARBALL = SHARED / "pan13-15-av-en.tar.gz"

# name -> substring of the corpus folder's path in the tarball
CORPORA = {
    "essays-train": "training-corpus-english-essays",
    "novels-test": "test-corpus2-english-novels",
    "pan15-train": "pan15-authorship-verification-training-dataset-english",
}


@pytest.fixture(scope="session")
def corpora(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """Some real corpus folders, extracted from the tarball into a temporary folder."""
    if not TARBALL.is_file():
        pytest.skip(f"real PAN data not found at {TARBALL} (set HARNESS_SHARED_DATA)")
    dest = tmp_path_factory.mktemp("pan-convert")
    with tarfile.open(TARBALL) as tar:
        members = [m for m in tar.getmembers() if any(key in m.name for key in CORPORA.values())]
        tar.extractall(dest, members=members, filter="data")
    folders = {Path(*Path(m.name).parts[:3]) for m in members if len(Path(m.name).parts) > 3}
    return {name: dest / next(f for f in folders if key in f.name) for name, key in CORPORA.items()}


def small_corpus(root: Path, *, truth: str | None = "P01 Y\nP02 N\n") -> Path:
    for problem_id, known in (("P01", ["first known\n", "second known\n\n"]), ("P02", ["only known"])):
        (root / problem_id).mkdir(parents=True)
        for n, text in enumerate(known, start=1):
            (root / problem_id / f"known{n:02d}.txt").write_text(text, encoding="utf-8")
        (root / problem_id / "unknown.txt").write_text(f"unknown of {problem_id}\n", encoding="utf-8")
    if truth is not None:
        (root / "truth.txt").write_text(truth, encoding="utf-8")
    (root / "contents.json").write_text(json.dumps({"language": "english", "genre": "essays"}), encoding="utf-8")
    return root


def test_convert_names_a_corpus_without_a_genre_after_writing(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    """The converted pairs carry the corpus genre as their discourse types: an unknown one is said, once the
    output is written (a refused conversion keeps its one error line)."""
    src = small_corpus(tmp_path / "corpus")
    (src / "contents.json").write_text(json.dumps({"language": "english"}), encoding="utf-8")
    with caplog.at_level(logging.WARNING, logger="harness"):
        convert_classic_to_jsonl(src, tmp_path / "out")
    rows = [json.loads(line) for line in (tmp_path / "out" / "pairs.jsonl").read_text().splitlines()]
    assert {tuple(row["discourse_types"]) for row in rows} == {("unknown", "unknown")}
    (warning,) = [r.getMessage() for r in caplog.records if r.levelno == logging.WARNING]
    assert warning.startswith(f"{src}: discourse type unknown")


def test_convert_small_corpus(tmp_path: Path) -> None:
    src = small_corpus(tmp_path / "corpus")
    assert convert_classic_to_jsonl(src, tmp_path / "out" / "train") == 2
    rows = [json.loads(line) for line in (tmp_path / "out" / "train" / "pairs.jsonl").read_text().splitlines()]
    # texts kept whole, one blank line between them, and where each known text lies in pair[0]
    assert rows[0] == {
        "id": "P01",
        "pair": ["first known\n\nsecond known\n\n", "unknown of P01\n"],
        "discourse_types": ["essay", "essay"],
        "known_spans": [[0, 12], [13, 27]],
    }
    assert rows[1]["pair"] == ["only known", "unknown of P02\n"]
    assert rows[1]["known_spans"] == [[0, 10]]
    # read back, the problems are the corpus's own: several known texts, each with the genre
    original = PanClassicTask().load_inputs(src).problems
    assert Pan23Task().load_inputs(tmp_path / "out" / "train").problems == original
    assert original[0].texts == ("first known\n", "second known\n\n", "unknown of P01\n")
    truth = [json.loads(line) for line in (tmp_path / "out" / "train" / "truth.jsonl").read_text().splitlines()]
    assert truth == [
        {"id": "P01", "same": True, "authors": ["P01-known", "P01-known"]},
        {"id": "P02", "same": False, "authors": ["P02-known", "P02-unknown"]},
    ]
    assert sorted(p.name for p in (tmp_path / "out" / "train").iterdir()) == ["pairs.jsonl", "truth.jsonl"]


def test_converted_placeholder_authors_are_not_taken_for_authors(tmp_path: Path) -> None:
    """Audit 16, F2: calibration read convert's problem-local labels as authors and said its folds kept authors
    apart ('texts and authors'), though they say only whether a problem's two texts share an author."""
    from toolkit.calibration import truth_authors

    src = small_corpus(tmp_path / "corpus")
    convert_classic_to_jsonl(src, tmp_path / "out" / "train")
    data = Pan23Task().load(tmp_path / "out", "train")
    assert [data.truth[p.id].authors for p in data.problems] == [
        ("P01-known", "P01-known"),
        ("P02-known", "P02-unknown"),
    ]
    assert truth_authors(data) is None
    named = data.truth["P02"]._replace(authors=("alice", "bob"))  # names of people are kept
    assert named.named_authors == ("alice", "bob")


def test_cli_convert_goes_through_the_registry(tmp_path: Path) -> None:
    from click.testing import CliRunner

    from harness import registry
    from harness.cli import main

    assert registry.converter("pan-classic") is convert_classic_to_jsonl
    src = small_corpus(tmp_path / "corpus")
    for args, out in (([], tmp_path / "default"), (["--from", "pan-classic"], tmp_path / "named")):
        result = CliRunner().invoke(main, ["convert", str(src), str(out), *args], catch_exceptions=False)
        assert result.exit_code == 0, result.output
        assert result.output.startswith("converted 2 problems")
    for name in ("pairs.jsonl", "truth.jsonl"):
        assert (tmp_path / "default" / name).read_bytes() == (tmp_path / "named" / name).read_bytes()
    result = CliRunner().invoke(main, ["convert", str(src), str(tmp_path / "default")])
    assert result.exit_code == 2 and "already exist" in result.output


@pytest.mark.parametrize("inside", ["converted", "."])
def test_cli_convert_refuses_a_destination_in_the_corpus(tmp_path: Path, inside: str) -> None:
    """Audit 8, F3: `convert CORPUS CORPUS/converted` was accepted, and the new folder then broke every later read of
    the corpus ("problem folder without unknown.txt"). Refused before anything is written."""
    from click.testing import CliRunner

    from harness.cli import main

    src = small_corpus(tmp_path / "corpus")
    before = sorted(p.relative_to(src) for p in src.rglob("*"))
    result = CliRunner().invoke(main, ["convert", str(src), str(src / inside)])
    assert result.exit_code == 2 and "lies in the corpus SRC" in result.output, result.output
    assert sorted(p.relative_to(src) for p in src.rglob("*")) == before
    assert len(PanClassicTask().load_inputs(src).problems) == 2


def test_cli_convert_takes_the_genre_a_corpus_does_not_give(tmp_path: Path) -> None:
    """Audit 8, F2's other path: a PAN 2013/2015 corpus under a name without its genre converted as "unknown"."""
    from click.testing import CliRunner

    from harness.cli import main

    src = small_corpus(tmp_path / "corpus")
    (src / "contents.json").write_text(json.dumps({"language": "english"}), encoding="utf-8")  # no genre
    result = CliRunner().invoke(main, ["convert", str(src), str(tmp_path / "out"), "--genre", "dialogue"])
    assert result.exit_code == 0, result.output
    problems = Pan23Task().load_inputs(tmp_path / "out").problems
    assert {t for p in problems for t in p.discourse_types} == {"dialogue"}
    renamed = tmp_path / "essays-corpus"
    src.rename(renamed)
    result = CliRunner().invoke(main, ["convert", str(renamed), str(tmp_path / "out2"), "--genre", "dialogue"])
    assert result.exit_code == 2 and "genre 'dialogue' was given, but the corpus is 'essay'" in result.output
    assert not (tmp_path / "out2").exists()


def test_convert_without_truth_writes_pairs_only(tmp_path: Path) -> None:
    src = small_corpus(tmp_path / "corpus", truth=None)
    assert convert_classic_to_jsonl(src, tmp_path / "out") == 2
    assert sorted(p.name for p in (tmp_path / "out").iterdir()) == ["pairs.jsonl"]
    assert Pan23Task().load_inputs(tmp_path / "out").truth is None


def test_convert_refuses_to_overwrite(tmp_path: Path) -> None:
    src = small_corpus(tmp_path / "corpus")
    out = tmp_path / "out"
    convert_classic_to_jsonl(src, out)
    before = {p.name: p.read_bytes() for p in out.iterdir()}
    (src / "P01" / "unknown.txt").write_text("changed", encoding="utf-8")
    with pytest.raises(HarnessError, match="already exist.*overwrite"):
        convert_classic_to_jsonl(src, out)
    assert {p.name: p.read_bytes() for p in out.iterdir()} == before
    # a gzipped twin counts as an existing output too: it would shadow or contradict new files
    gz_only = tmp_path / "gz-only"
    gz_only.mkdir()
    (gz_only / "truth.jsonl.gz").write_bytes(b"")
    with pytest.raises(HarnessError, match="truth.jsonl.gz"):
        convert_classic_to_jsonl(src, gz_only)
    assert convert_classic_to_jsonl(src, out, overwrite=True) == 2
    assert "changed" in (out / "pairs.jsonl").read_text(encoding="utf-8")


def test_overwrite_refuses_what_it_would_not_write_and_deletes_nothing(tmp_path: Path) -> None:
    out = tmp_path / "out"
    convert_classic_to_jsonl(small_corpus(tmp_path / "with-truth"), out)
    (out / "pairs.jsonl.gz").write_bytes(b"mine")
    before = {p.name: p.read_bytes() for p in out.iterdir()}
    no_truth = small_corpus(tmp_path / "no-truth", truth=None)
    with pytest.raises(
        HarnessError, match=r"pairs.jsonl.gz: would stand beside the new pairs.jsonl; .*deletes nothing"
    ):
        convert_classic_to_jsonl(no_truth, out, overwrite=True)
    assert {p.name: p.read_bytes() for p in out.iterdir()} == before
    (out / "pairs.jsonl.gz").unlink()
    # the earlier corpus's truth would stand beside pairs that are not its own: refused, kept
    with pytest.raises(HarnessError, match=r"truth.jsonl: .*no-truth has no truth.txt"):
        convert_classic_to_jsonl(no_truth, out, overwrite=True)
    (out / "truth.jsonl").unlink()
    assert convert_classic_to_jsonl(no_truth, out, overwrite=True) == 2
    assert sorted(p.name for p in out.iterdir()) == ["pairs.jsonl"]


def test_overwrite_refuses_a_folder_where_an_output_goes_and_keeps_the_earlier_files(tmp_path: Path) -> None:
    out = tmp_path / "out"
    convert_classic_to_jsonl(small_corpus(tmp_path / "a"), out)
    (out / "truth.jsonl").unlink()
    (out / "truth.jsonl").mkdir()
    pairs = (out / "pairs.jsonl").read_bytes()
    with pytest.raises(HarnessError, match=r"truth.jsonl: is not a file, and the converted truth.jsonl goes there"):
        convert_classic_to_jsonl(small_corpus(tmp_path / "b"), out, overwrite=True)
    assert (out / "pairs.jsonl").read_bytes() == pairs and (out / "truth.jsonl").is_dir()


def test_bad_corpus_writes_nothing(tmp_path: Path) -> None:
    src = small_corpus(tmp_path / "corpus")
    (src / "P02" / "unknown.txt").write_bytes(b"caf\xe9")
    with pytest.raises(DataError, match="UTF-8"):
        convert_classic_to_jsonl(src, tmp_path / "out")
    assert not (tmp_path / "out").exists() or not any((tmp_path / "out").iterdir())
    src = small_corpus(tmp_path / "corpus2", truth="P01 Y\n")
    with pytest.raises(DataError, match="no truth for problem 'P02'"):
        convert_classic_to_jsonl(src, tmp_path / "out")
    assert not (tmp_path / "out").exists() or not any((tmp_path / "out").iterdir())


def test_failure_while_writing_keeps_earlier_outputs(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    src = small_corpus(tmp_path / "corpus")
    out = tmp_path / "out"
    convert_classic_to_jsonl(src, out)
    before = {p.name: p.read_bytes() for p in out.iterdir()}

    def broken(problem_id: str, same: bool) -> tuple[str, str]:
        raise OSError("disk full")

    monkeypatch.setattr(convert_module, "placeholder_authors", broken)
    (src / "P01" / "unknown.txt").write_text("changed", encoding="utf-8")
    with pytest.raises(OSError, match="disk full"):
        convert_classic_to_jsonl(src, out, overwrite=True)
    # neither file was replaced and no temporary file is left behind
    assert {p.name: p.read_bytes() for p in out.iterdir()} == before


@pytest.mark.parametrize(("name", "count", "genre"), [("essays-train", 200, "essay"), ("novels-test", 200, "novel")])
def test_convert_real_corpus_round_trip(
    corpora: dict[str, Path], tmp_path: Path, name: str, count: int, genre: str
) -> None:
    src = corpora[name]
    assert convert_classic_to_jsonl(src, tmp_path / "data" / "test") == count
    converted = Pan23Task().load(tmp_path / "data", "test")
    # load the original the way pan-classic does (a link gives it the <data>/<split> layout)
    (tmp_path / "classic").mkdir()
    (tmp_path / "classic" / "test").symlink_to(src, target_is_directory=True)
    original = PanClassicTask().load(tmp_path / "classic", "test")
    assert [p.id for p in converted.problems] == [p.id for p in original.problems]
    assert {k: t.same for k, t in converted.truth.items()} == {k: t.same for k, t in original.truth.items()}
    for conv, orig in zip(converted.problems, original.problems, strict=True):
        assert conv == orig  # id, every known text and the unknown text, discourse types
        assert conv.discourse_types == (genre,) * len(orig.texts)
        truth = converted.truth[conv.id]
        assert truth.authors[0] == f"{conv.id}-known"
        assert (truth.authors[0] == truth.authors[1]) == truth.same


def test_convert_real_pan15_and_refuse_second_run(corpora: dict[str, Path], tmp_path: Path) -> None:
    out = tmp_path / "pan15" / "train"
    assert convert_classic_to_jsonl(corpora["pan15-train"], out) == 100
    data = Pan23Task().load(tmp_path / "pan15", "train")
    assert sum(t.same for t in data.truth.values()) == 50
    assert all(p.discourse_types == ("dialogue",) * len(p.texts) for p in data.problems)
    with pytest.raises(HarnessError, match="overwrite"):
        convert_classic_to_jsonl(corpora["pan15-train"], out)
    shutil.rmtree(out)
    assert convert_classic_to_jsonl(corpora["pan15-train"], out) == 100


@pytest.mark.parametrize("ensure_ascii", [False, True])
def test_join_known_round_trips_through_pairs_jsonl(tmp_path: Path, ensure_ascii: bool) -> None:
    # trailing line breaks or none, blank lines inside, text outside the Basic Multilingual Plane (offsets are
    # code points even where JSON escapes it as a surrogate pair)
    known = ["ends with a break\n", "none at the end", "caf\u00e9 \U0001f600\n\nsecond paragraph\n\n", "  indented\n"]
    joined, spans = join_known(known)
    assert (
        joined == "ends with a break\n\nnone at the end\n\ncaf\u00e9 \U0001f600\n\nsecond paragraph\n\n\n  indented\n"
    )
    assert [joined[a:b] for a, b in spans] == known
    row = {"id": "p", "pair": [joined, "unknown"], "discourse_types": ["essay", "email"], "known_spans": spans}
    (tmp_path / "pairs.jsonl").write_text(json.dumps(row, ensure_ascii=ensure_ascii) + "\n", encoding="utf-8")
    (problem,) = read_pairs(tmp_path / "pairs.jsonl")
    assert problem.texts == (*known, "unknown")
    assert problem.discourse_types == ("essay",) * 4 + ("email",)


def test_pairs_without_known_spans_stay_pairs(tmp_path: Path) -> None:
    row = {"id": "p", "pair": ["one\n\ntwo", "three"], "known_spans": None}
    (tmp_path / "pairs.jsonl").write_text(json.dumps({"id": "q", "pair": ["a", "b"]}) + "\n" + json.dumps(row) + "\n")
    assert [p.texts for p in read_pairs(tmp_path / "pairs.jsonl")] == [("a", "b"), ("one\n\ntwo", "three")]


@pytest.mark.parametrize(
    ("spans", "field", "message"),
    [
        ([], "known_spans", "non-empty list"),
        ({"0": 3}, "known_spans", "non-empty list"),
        ([[0, 3], [5]], "known_spans[1]", "expected \\[start, end\\] integers"),
        ([[0, 3.0]], "known_spans[0]", "integers"),
        ([[0, True]], "known_spans[0]", "integers"),
        ([[0, 4], [3, 8]], "known_spans[1]", "out of order"),  # overlap
        ([[0, 3], [5, 8], [0, 3]], "known_spans[2]", "out of order"),  # a text repeated
        ([[0, 3], [5, 99]], "known_spans[1]", "past the end of pair\\[0\\] \\(8 characters\\)"),
        ([[1, 3], [5, 8]], "known_spans[0]", "text between characters 0 and 1 that no span covers"),
        ([[0, 2], [5, 8]], "known_spans[1]", "text between characters 2 and 5"),
        ([[0, 3]], "known_spans", "text between characters 3 and 8"),  # "bbb" dropped
        ([[0, 3], [3, 3], [5, 8]], "known_spans[1]", "known text is empty"),
    ],
)
def test_bad_known_spans_are_refused_naming_the_field(tmp_path: Path, spans: object, field: str, message: str) -> None:
    path = tmp_path / "pairs.jsonl"
    rows = [{"id": "ok", "pair": ["a", "b"]}, {"id": "bad", "pair": ["aaa\n\nbbb", "u"], "known_spans": spans}]
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    with pytest.raises(DataError, match=message) as error:
        read_pairs(path)
    assert f"{path}:2" in str(error.value) and field in str(error.value)


def test_cli_convert_says_its_summary_once(tmp_path: Path) -> None:
    import subprocess
    import sys

    src = small_corpus(tmp_path / "corpus")
    command = [sys.executable, "-c", "from harness.cli import main; main()", "convert", str(src), str(tmp_path / "o")]
    done = subprocess.run(command, capture_output=True, text=True, check=True)
    assert (done.stdout + done.stderr).count("converted 2 problems") == 1, (done.stdout, done.stderr)
