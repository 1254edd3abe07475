"""Where outputs may go, through links and beside data (audit 20): a run reached through a link is the same run,
and nothing a command writes lands where data is read from or where a later run would remove it.

F1: `--out` through a link into a run's checkpoint/ was accepted, and the next `run --overwrite` removed it. F2: a
linked run folder lost its result.json to `run --overwrite`, which then stopped with a traceback. F4: a run folder
inside a PAN 2013-2015 corpus (or a record inside the corpus it scores) made every later command on the corpus
fail. F5: the leaderboard left out, without a word, runs that lay under a linked folder. F3: `score --record
--overwrite` replaced any result.json, another tool's too.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

from click.testing import CliRunner
from helpers.paths import SAMPLE
from helpers.refusals import refused
from test_input_faults import classic_corpus

from harness.cli import main

RUN = Path("pan23") / "pan23-format-sample" / "length_ratio" / "seed-0"


def harness(*args: object) -> str:
    """The stdout of a command that worked (exit code 0)."""
    result = CliRunner().invoke(main, [str(arg) for arg in args])
    assert result.exit_code == 0, (result.output, result.exception)
    return result.stdout


def length_ratio_run(out: Path, *more: object) -> str:
    return harness("run", "--system", "length_ratio", "--task", "pan23", "--data", SAMPLE, "--out", out, *more)


def test_an_output_through_a_link_into_a_run_folder_is_refused(tmp_path: Path) -> None:
    length_ratio_run(tmp_path / "runs")
    link = tmp_path / "into-checkpoint"
    link.symlink_to(tmp_path / "runs" / RUN / "checkpoint")
    line = refused("run", "--system", "cngdist", "--task", "pan23", "--data", SAMPLE, "--out", link / "inner")
    assert line == (
        f"error: --out {link / 'inner'} lies in the run folder {(tmp_path / 'runs' / RUN).resolve()}; "
        "name a folder outside it"
    )
    assert "lies in the run folder" in refused("report", "--results", tmp_path / "runs", "--out", link / "report")
    assert not (tmp_path / "runs" / RUN / "checkpoint" / "inner").exists()


def test_overwrite_replaces_a_linked_run_folder_where_it_lies(tmp_path: Path) -> None:
    length_ratio_run(tmp_path / "first")
    kept = Path(shutil.move(tmp_path / "first" / RUN, tmp_path / "kept-run"))
    (kept / "notes.txt").write_text("my notes\n", encoding="utf-8")
    (tmp_path / "runs" / RUN).parent.mkdir(parents=True)
    (tmp_path / "runs" / RUN).symlink_to(kept)
    before = json.loads((kept / "result.json").read_text(encoding="utf-8"))

    printed = length_ratio_run(tmp_path / "runs", "--overwrite")

    assert f"done: pan23 length_ratio seed=0 -> {kept.resolve()}" in printed  # done again, not kept
    assert (tmp_path / "runs" / RUN).is_symlink()  # the user's link stays, and leads to the new run
    after = json.loads((tmp_path / "runs" / RUN / "result.json").read_text(encoding="utf-8"))
    assert after["fingerprint"] == before["fingerprint"] and after["scores"]["overall"] == before["scores"]["overall"]
    assert (kept / "notes.txt").read_text(encoding="utf-8") == "my notes\n"
    assert sorted(path.name for path in kept.parent.iterdir() if path.name.startswith(".")) == [".kept-run.lock"]
    assert sorted(path.name for path in (tmp_path / "runs" / RUN).parent.iterdir()) == ["seed-0"]


def corpus(folder: Path, problems: int = 6) -> Path:
    """A PAN 2013-2015 corpus folder of a few problems (enough for a system's cross-fitting)."""
    truth = []
    for number in range(problems):
        problem = folder / f"P{number:02d}"
        problem.mkdir(parents=True)
        (problem / "known01.txt").write_text(f"a known text {'long ' * number}of {number}\n", encoding="utf-8")
        (problem / "unknown.txt").write_text(f"an unknown text {'short ' * (number % 3)}\n", encoding="utf-8")
        truth.append(f"P{number:02d} {'YN'[number % 2]}\n")
    (folder / "truth.txt").write_text("".join(truth), encoding="utf-8")
    return folder


def test_a_run_folder_inside_a_corpus_it_reads_is_refused(tmp_path: Path) -> None:
    data = tmp_path / "corpus"
    corpus(data / "train")
    corpus(data / "test")
    for out in (data / "train", data / "test" / "runs"):
        line = refused("run", "--system", "length_ratio", "--task", "pan-classic", "--data", data, "--out", out)
        split = out if out.name == "train" else out.parent
        assert line == (
            f"error: --out {out} is or lies in {split.resolve()}, which data is read from: what is written there "
            "would be read back as data; name a folder outside it"
        )
    test = ["--train", data / "train", "--test", data / "test"]
    refused("run", "--system", "length_ratio", "--task", "pan-classic", *test, "--out", data / "test" / "runs")
    assert sorted(path.name for path in (data / "test").iterdir()) == [*(f"P{n:02d}" for n in range(6)), "truth.txt"]
    # beside the splits, as before: the corpus reads train/ and test/ only
    harness("run", "--system", "length_ratio", "--task", "pan-classic", "--data", data, "--out", data / "runs")


def test_a_record_inside_the_corpus_it_scores_is_refused(tmp_path: Path) -> None:
    corpus = classic_corpus(tmp_path / "test")
    answers = tmp_path / "answers.txt"
    answers.write_text("P01 0.9\nP02 0.1\n", encoding="utf-8")
    line = refused(
        "score", "--task", "pan-classic", "--truth", corpus, "--answers", answers, "--record", corpus / "record"
    )
    assert line.startswith(f"error: --record {corpus / 'record'} is or lies in {corpus.resolve()}, which data is read")
    truth = ["--truth", corpus / "truth.txt"]  # the corpus is the truth file's folder
    assert "which data is read" in refused("score", "--task", "pan-classic", *truth, "--answers", answers,
                                           "--record", corpus / "record")  # fmt: skip
    assert not (corpus / "record").exists()
    harness("score", "--task", "pan-classic", "--truth", corpus, "--answers", answers, "--record", tmp_path / "record")


def test_the_leaderboard_reads_runs_under_a_linked_folder(tmp_path: Path) -> None:
    length_ratio_run(tmp_path / "runs")
    harness("run", "--system", "cngdist", "--task", "pan23", "--data", SAMPLE, "--out", tmp_path / "elsewhere")
    systems = tmp_path / "runs" / RUN.parent.parent
    (systems / "cngdist").symlink_to(tmp_path / "elsewhere" / RUN.parent.parent / "cngdist")
    (tmp_path / "runs" / "loop").symlink_to(tmp_path / "runs")  # a link back up is walked once

    table = harness("leaderboard", tmp_path / "runs")

    rows = [line for line in table.splitlines() if line.startswith("|") and "seed" not in line.lower()]
    assert any("cngdist" in row for row in rows) and any("length_ratio" in row for row in rows), table


def test_overwrite_replaces_a_record_but_not_another_tools_result_file(tmp_path: Path) -> None:
    """`score --record --overwrite` replaces what it wrote; a result.json it did not write stays (audit 20, F3)."""
    corpus = classic_corpus(tmp_path / "test")
    answers = tmp_path / "answers.txt"
    answers.write_text("P01 0.9\nP02 0.1\n", encoding="utf-8")
    score = ["score", "--task", "pan-classic", "--truth", corpus, "--answers", answers, "--overwrite", "--record"]
    theirs = tmp_path / "theirs" / "result.json"
    theirs.parent.mkdir()
    theirs.write_text('{"my": "other tool"}\n', encoding="utf-8")
    assert refused(*score, theirs.parent) == (
        f"error: {theirs} is not a record `harness score --record` wrote, and --overwrite replaces only those; "
        "name another folder, or move the file away"
    )
    assert theirs.read_text(encoding="utf-8") == '{"my": "other tool"}\n'
    harness(*score, tmp_path / "ours")
    harness(*score, tmp_path / "ours")  # its own record, replaced


def test_a_folder_at_the_run_path_that_no_run_made_is_not_written_into(tmp_path: Path) -> None:
    """Audit 21, F1: a plain run removed a user's checkpoint/ (and replaced answers.jsonl) where no run had been."""
    for mine in (tmp_path / "runs" / RUN, tmp_path / "mine"):
        (mine / "checkpoint").mkdir(parents=True)
        (mine / "checkpoint" / "weights.bin").write_text("mine\n", encoding="utf-8")
        (mine / "answers.jsonl").write_text("my answers\n", encoding="utf-8")
    (tmp_path / "linked" / RUN).parent.mkdir(parents=True)
    (tmp_path / "linked" / RUN).symlink_to(tmp_path / "mine")
    for out, folder in ((tmp_path / "runs", tmp_path / "runs" / RUN), (tmp_path / "linked", tmp_path / "mine")):
        for more in ((), ("--overwrite",)):
            line = refused("run", "--system", "length_ratio", "--task", "pan23", "--data", SAMPLE, "--out", out, *more)
            assert line == (
                f"error: {folder / 'checkpoint'} was not written by a harness run (no fit fingerprint or result "
                "beside it, no checkpoint config.json in it), and a run would replace it; move it away, or choose "
                "another --out"
            )
        assert (folder / "checkpoint" / "weights.bin").read_text(encoding="utf-8") == "mine\n"
        assert (folder / "answers.jsonl").read_text(encoding="utf-8") == "my answers\n"


def test_a_run_stopped_before_its_fingerprint_is_run_again(tmp_path: Path) -> None:
    """Its checkpoint is the harness's (a stop between the checkpoint's rename and the fingerprint's write)."""
    length_ratio_run(tmp_path / "runs")
    for name in ("result.json", "checkpoint.fingerprint"):
        (tmp_path / "runs" / RUN / name).unlink()
    assert "done: pan23 length_ratio seed=0" in length_ratio_run(tmp_path / "runs")
