"""Where a run's data comes from and where the run goes: `--data` or `--train`/`--test` as PAN distributes a
corpus, a run folder per dataset, the format sample's warning, and `harness score` writing only where asked."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from click.testing import CliRunner
from helpers.pan_corpora import extract_corpora
from helpers.paths import REPO

from core.errors import HarnessError
from harness.cli import main
from harness.data_location import DataLocation

SAMPLE = REPO / "samples" / "pan23-format-sample"
NOVELS_TRAIN = "pan14-author-verification-training-corpus-english-novels-2014-04-22"
NOVELS_TEST = "pan14-author-verification-test-corpus2-english-novels-2014-04-22"


def invoke(*args: str | Path) -> tuple[int, str]:
    result = CliRunner().invoke(main, [str(a) for a in args], catch_exceptions=False)
    return result.exit_code, result.output


def test_pan14_novels_as_distributed_run_with_train_and_test(tmp_path: Path) -> None:
    corpora = extract_corpora(tmp_path / "raw", (NOVELS_TRAIN, NOVELS_TEST))
    train, test = corpora[NOVELS_TRAIN], corpora[NOVELS_TEST]
    assert train.parent.parent.name == "train" and test.parent.parent.name == "test"  # the tarball's own layout
    out = tmp_path / "runs"
    code, output = invoke("run", "--system", "length_ratio", "--task", "pan-classic", "--train", train, "--test", test,
                          "--out", out)  # fmt: skip
    assert code == 0, output
    # issue 29: the folder was `<train folder>+<test folder>`, 170 characters; now the corpus's short name
    run_dir = out / "pan-classic" / "pan14-english-novels" / "length_ratio" / "seed-0"
    result = json.loads((run_dir / "result.json").read_text(encoding="utf-8"))
    assert result["task"]["data"]["name"] == "pan14-english-novels"
    assert result["task"]["data"]["train_dir"] == str(train.resolve())
    assert result["task"]["data"]["test_dir"] == str(test.resolve())
    assert result["task"]["data"]["test"]["size"] == 200 and result["task"]["data"]["train"]["size"] == 100
    assert "format_sample" not in result["task"]["data"]
    answers = (run_dir / "answers.jsonl").read_text(encoding="utf-8").splitlines()
    assert len(answers) == 200

    # the same corpus laid out as --data DIR/train, DIR/test gives the same answers
    data = tmp_path / "novels"
    shutil.copytree(train, data / "train")
    shutil.copytree(test, data / "test")
    code, output = invoke("run", "--system", "length_ratio", "--task", "pan-classic", "--data", data, "--out", out)
    assert code == 0, output
    other = out / "pan-classic" / "novels" / "length_ratio" / "seed-0"
    assert (other / "answers.jsonl").read_text(encoding="utf-8").splitlines() == answers


def test_a_second_corpus_for_the_same_system_gets_its_own_run_folder(tmp_path: Path) -> None:
    second = tmp_path / "second-corpus"
    shutil.copytree(SAMPLE, second)
    (second / "FORMAT-SAMPLE").unlink()
    rows = (second / "test" / "pairs.jsonl").read_text(encoding="utf-8").splitlines()[:-1]
    (second / "test" / "pairs.jsonl").write_text("\n".join(rows) + "\n", encoding="utf-8")
    kept = {json.loads(row)["id"] for row in rows}
    truth = [t for t in (second / "test" / "truth.jsonl").read_text(encoding="utf-8").splitlines()
             if json.loads(t)["id"] in kept]  # fmt: skip
    (second / "test" / "truth.jsonl").write_text("\n".join(truth) + "\n", encoding="utf-8")
    out = tmp_path / "runs"
    for data in (SAMPLE, second):
        code, output = invoke("run", "--system", "cngdist", "--task", "pan23", "--data", data, "--out", out)
        assert code == 0, output
    folders = sorted(p.relative_to(out).as_posix() for p in out.glob("pan23/*/cngdist/seed-0"))
    assert folders == ["pan23/pan23-format-sample/cngdist/seed-0", "pan23/second-corpus/cngdist/seed-0"]
    sizes = [json.loads((out / f / "result.json").read_text(encoding="utf-8"))["task"]["data"]["test"]["size"]
             for f in folders]  # fmt: skip
    assert sizes == [8, 7]


def test_the_format_sample_says_its_scores_mean_nothing(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    code, output = invoke("run", "--system", "length_ratio", "--task", "pan23", "--data", SAMPLE, "--out", tmp_path)
    assert code == 0, output
    assert output.count("format sample") == 1 and "mean nothing" in output
    assert "format sample" in caplog.text
    (result_path,) = tmp_path.glob("pan23/*/length_ratio/seed-0/result.json")
    assert json.loads(result_path.read_text(encoding="utf-8"))["task"]["data"]["format_sample"] is True


def test_train_and_test_are_refused_where_they_cannot_work(tmp_path: Path) -> None:
    code, output = invoke("run", "--system", "cngdist", "--task", "pan23", "--train", SAMPLE / "train",
                          "--out", tmp_path)  # fmt: skip
    assert code == 2 and output.strip() == "error: missing --test"
    code, output = invoke("run", "--system", "cngdist", "--task", "pan23", "--data", SAMPLE, "--test", SAMPLE / "test",
                          "--out", tmp_path)  # fmt: skip
    assert code == 2 and "either --data DIR or --train DIR --test DIR" in output
    code, output = invoke("run", "--system", "cngdist", "--task", "pan23", "--out", tmp_path)
    assert code == 2 and "missing --data (or --train and --test)" in output
    code, output = invoke("run", "--system", "episode_tfidf", "--task", "darkweb", "--train", SAMPLE / "train",
                          "--test", SAMPLE / "test", "--out", tmp_path)  # fmt: skip
    assert code == 2 and "give the corpus with --data" in output
    code, output = invoke("run", "--system", "cngdist", "--task", "pan23", "--train", SAMPLE / "train",
                          "--test", SAMPLE / "nope", "--out", tmp_path)  # fmt: skip
    assert code == 2 and "test folder not found" in output and str(SAMPLE / "nope") in output
    assert not any(tmp_path.iterdir())  # nothing written by a refused run


def test_a_data_label_is_one_safe_folder_name(tmp_path: Path) -> None:
    odd = tmp_path / "my data (v2)"
    odd.mkdir()
    assert DataLocation(data_dir=odd).label == "my_data_v2"
    assert DataLocation(train_dir=tmp_path / "a", test_dir=tmp_path / "b").label == "a+b"
    # audit 9, F7: split folders named only train/test were every such dataset's "train+test", so a second one
    # collided with the first (and the refusal advised --overwrite); they take their parent's name
    essays, novels = tmp_path / "essays", tmp_path / "novels"
    assert DataLocation(train_dir=essays / "train", test_dir=essays / "test").label == "essays"
    assert DataLocation(train_dir=novels / "training-corpus", test_dir=essays / "test").label == "novels+essays"
    assert DataLocation(train_dir=SAMPLE / "train", test_dir=SAMPLE / "test").label == SAMPLE.name
    with pytest.raises(HarnessError):
        DataLocation()


def test_score_writes_files_only_where_asked(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    code, output = invoke("run", "--system", "cngdist", "--task", "pan23", "--data", SAMPLE, "--out", tmp_path / "r")
    assert code == 0, output
    (answers,) = (tmp_path / "r").glob("pan23/*/cngdist/seed-0/answers.jsonl")
    work = tmp_path / "cwd"
    work.mkdir()
    monkeypatch.chdir(work)
    code, output = invoke("score", "--task", "pan23", "--truth", SAMPLE / "test", "--answers", answers)
    assert code == 0, output
    assert "main score: overall = " in output and "auc" in output.splitlines()[0]
    assert not any(work.iterdir())  # no out.json in the current folder


def test_a_neural_system_without_the_neural_extra_says_what_to_install(tmp_path: Path) -> None:
    """After a plain install (no torch), the headline command ends in one line naming the extra, no traceback."""
    import subprocess
    import sys

    blocked = ["torch", "transformers", "tokenizers", "pytorch_metric_learning", "torch_geometric", "sentencepiece"]
    code = (
        "import sys\n"
        f"for name in {blocked!r}: sys.modules[name] = None  # as if not installed\n"
        "from harness.cli import main\n"
        "main()\n"
    )
    args = ["run", "--system", "siamese_bilstm", "--task", "pan23", "--data", str(SAMPLE), "--out", str(tmp_path)]
    done = subprocess.run([sys.executable, "-c", code, *args], capture_output=True, text=True, check=False)
    assert done.returncode == 2, done.stderr
    lines = done.stderr.strip().splitlines()
    assert lines == [lines[-1]] and "Traceback" not in done.stderr, done.stderr
    assert 'pip install -c constraints.txt -e ".[neural]"' in lines[0] and "torch" in lines[0]
