"""End-to-end tests of the `harness` command line on the shipped format sample."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner
from helpers.paths import REPO

from harness.cli import main
from tasks.pan.evaluator import PAN_OUT_NAMES

SAMPLE = REPO / "samples" / "pan23-format-sample"


def invoke(*args: str) -> tuple[int, str]:
    result = CliRunner().invoke(main, list(args), catch_exceptions=False)
    return result.exit_code, result.output


def run_sample(out: Path, *extra: str) -> tuple[int, str]:
    return invoke("run", "--system", "cngdist", "--task", "pan23", "--data", str(SAMPLE), "--out", str(out), *extra)


def read_jsonl(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]


def test_list_does_not_import_heavy_modules():
    code = (
        "import sys\n"
        "from click.testing import CliRunner\n"
        "from harness.cli import main\n"
        "out = CliRunner().invoke(main, ['list']).output\n"
        "assert 'cngdist' in out and 'pan23' in out and 'min_dcf' in out, out\n"
        "heavy = {'torch', 'transformers', 'sklearn', 'scipy', 'numpy', 'datasets', 'pyarrow'}\n"
        "print(sorted(m for m in sys.modules if m.split('.')[0] in heavy))\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "[]"


def test_every_registered_task_and_system_imports():
    from harness import registry
    from harness.task import TaskMetadata

    for name in registry.TASKS:
        assert isinstance(registry.task_class(name).metadata, TaskMetadata)
        assert registry.task_class(name).metadata.name == name
    for name in registry.SYSTEMS:
        assert callable(registry.system_class(name))


@pytest.fixture()
def finished_run(tmp_path: Path) -> Path:
    code, output = run_sample(tmp_path)
    assert code == 0, output
    return tmp_path / "pan23" / "pan23-format-sample" / "cngdist" / "seed-0"


def test_run_writes_result_answers_and_checkpoint(finished_run: Path):
    result = json.loads((finished_run / "result.json").read_text(encoding="utf-8"))
    answers = read_jsonl(finished_run / "answers.jsonl")
    test_ids = [row["id"] for row in read_jsonl(SAMPLE / "test" / "pairs.jsonl")]
    assert [a["id"] for a in answers] == test_ids
    assert all(0.0 <= a["value"] <= 1.0 for a in answers)
    assert result["task"]["name"] == "pan23"
    assert result["task"]["data"]["test"]["checksum"].startswith("sha256:")
    assert result["system"]["params"]["ngram_size"] == 4
    assert result["system"]["checkpoint"]["checksum"].startswith("sha256:")
    from tasks.pan.pan23 import Pan23Task

    overall = {name for name in result["scores"] if "/" not in name}  # the others: per discourse-type pair
    assert overall == set(Pan23Task.metadata.measures)  # the task's measures, no more, no fewer
    pairs = {"+".join(sorted(row["discourse_types"])) for row in read_jsonl(SAMPLE / "test" / "pairs.jsonl")}
    assert {name.rpartition("/")[0] for name in set(result["scores"]) - overall} == pairs
    assert {"auc", "c_at_1", "f_05_u", "f1", "brier", "overall"} <= set(result["scores"])
    assert result["main_score"] == {"name": "overall", "value": result["scores"]["overall"]}
    assert result["environment"]["libraries"]["numpy"]
    assert result["seeds"] == {"seed": 0}
    assert (finished_run / "checkpoint" / "config.json").is_file()
    truth = {row["id"]: row["same"] for row in read_jsonl(SAMPLE / "test" / "truth.jsonl")}
    details = read_jsonl(finished_run / "details.jsonl")
    types = {row["id"]: "+".join(sorted(row["discourse_types"])) for row in read_jsonl(SAMPLE / "test" / "pairs.jsonl")}
    assert details == [
        {"id": a["id"], "value": a["value"], "same": truth[a["id"]], "pair_type": types[a["id"]]} for a in answers
    ]


def test_existing_run_is_kept_and_overwrite_reproduces_it(finished_run: Path, tmp_path: Path):
    result_path = finished_run / "result.json"
    before = result_path.read_bytes()
    code, output = run_sample(tmp_path)
    assert code == 0 and output.startswith("kept:"), output
    assert result_path.read_bytes() == before

    code, output = run_sample(tmp_path, "--overwrite")
    assert code == 0 and output.startswith("done:"), output
    again = json.loads(result_path.read_text(encoding="utf-8"))
    assert again["scores"] == json.loads(before)["scores"]  # same seed, same data: same scores


def test_run_on_other_data_refuses_to_replace_earlier_result(finished_run: Path, tmp_path: Path):
    other = tmp_path / "elsewhere" / SAMPLE.name  # changed data under the same folder name: the same run folder
    shutil.copytree(SAMPLE, other)
    rows = read_jsonl(other / "test" / "pairs.jsonl")[:-1]
    (other / "test" / "pairs.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    truth = [t for t in read_jsonl(other / "test" / "truth.jsonl") if t["id"] in {r["id"] for r in rows}]
    (other / "test" / "truth.jsonl").write_text("".join(json.dumps(t) + "\n" for t in truth), encoding="utf-8")
    before = (finished_run / "result.json").read_bytes()
    code, output = invoke("run", "--system", "cngdist", "--task", "pan23", "--data", str(other), "--out", str(tmp_path))
    assert code == 2 and "--overwrite" in output
    assert (finished_run / "result.json").read_bytes() == before


def test_crashed_run_leaves_no_result_and_resumes_from_checkpoint(tmp_path: Path, monkeypatch):
    from systems.baselines.cngdist import CharNgramDistance

    def crash(self, problems):
        raise RuntimeError("simulated crash")

    monkeypatch.setattr(CharNgramDistance, "predict", crash)
    args = ("run", "--system", "cngdist", "--task", "pan23", "--data", str(SAMPLE), "--out", str(tmp_path))
    with pytest.raises(RuntimeError):
        invoke(*args)
    run_dir = tmp_path / "pan23" / "pan23-format-sample" / "cngdist" / "seed-0"
    assert not (run_dir / "result.json").exists()
    assert not (run_dir / "answers.jsonl").exists()
    assert (run_dir / "checkpoint" / "config.json").is_file()

    monkeypatch.undo()

    def no_refit(self, train, *, seed):
        raise AssertionError("a resumed run must not fit again")

    monkeypatch.setattr(CharNgramDistance, "fit", no_refit)
    code, output = invoke(*args)
    assert code == 0, output
    assert (run_dir / "result.json").is_file()


def test_unknown_parameter_and_unknown_system_are_clear_errors(tmp_path: Path):
    code, output = invoke(
        "run", "--system", "cngdist", "--task", "pan23", "--data", str(SAMPLE), "--out", str(tmp_path), "--param", "x=1"
    )
    assert code == 2 and "no parameter(s) x" in output
    code, output = invoke("run", "--system", "nope", "--task", "pan23", "--data", str(SAMPLE), "--out", str(tmp_path))
    assert code == 2 and "unknown system 'nope'" in output
    assert not any(tmp_path.iterdir())


def test_parameters_go_to_their_own_run_folder(tmp_path: Path):
    code, output = invoke(
        "run", "--system", "cngdist", "--task", "pan23", "--data", str(SAMPLE), "--out", str(tmp_path),
        "--param", "ngram_size=3",
    )  # fmt: skip
    assert code == 0, output
    (run_dir,) = (tmp_path / "pan23" / SAMPLE.name).iterdir()
    assert run_dir.name.startswith("cngdist@")
    result = json.loads((run_dir / "seed-0" / "result.json").read_text(encoding="utf-8"))
    assert result["system"]["params"]["ngram_size"] == 3


def test_bad_data_dir_writes_nothing(tmp_path: Path):
    empty = tmp_path / "empty"
    empty.mkdir()
    out = tmp_path / "out"
    code, output = invoke("run", "--system", "cngdist", "--task", "pan23", "--data", str(empty), "--out", str(out))
    assert code == 2 and str(empty) in output
    assert not out.exists()


def test_predict_from_checkpoint_matches_run_and_reads_no_truth(finished_run: Path, tmp_path: Path):
    inputs = tmp_path / "inputs"
    inputs.mkdir()
    shutil.copy(SAMPLE / "test" / "pairs.jsonl", inputs / "pairs.jsonl")  # no truth, as on TIRA
    output = tmp_path / "tira-out"
    args = ["predict", "--system", "cngdist", "--task", "pan23", "--input", str(inputs), "--output", str(output)]
    code, text = invoke(*args, "--checkpoint", str(finished_run / "checkpoint"))
    assert code == 0, text
    assert read_jsonl(output / "answers.jsonl") == read_jsonl(finished_run / "answers.jsonl")

    code, text = invoke(*args, "--checkpoint", str(finished_run / "checkpoint"))
    assert code == 2 and "--overwrite" in text


def test_score_reproduces_run_scores_and_writes_tira_files(finished_run: Path, tmp_path: Path):
    out = tmp_path / "eval"
    args = ["score", "--task", "pan23", "--truth", str(SAMPLE / "test"), "--answers", str(finished_run)]
    code, text = invoke(*args, "--output", str(out))
    assert code == 0, text
    result = json.loads((finished_run / "result.json").read_text(encoding="utf-8"))
    written = json.loads((out / "out.json").read_text(encoding="utf-8"))
    overall = {name: value for name, value in result["scores"].items() if "/" not in name}  # the rest: per type pair
    # PAN's measures under PAN's names ("c@1", "F1"); c_at_1_best_band is the harness's own
    assert written == pytest.approx({PAN_OUT_NAMES[m]: v for m, v in overall.items() if m in PAN_OUT_NAMES}, abs=1e-12)
    prototext = (out / "evaluation.prototext").read_text(encoding="utf-8")
    assert prototext.count("measure {") == len(written)

    code, text = invoke(*args, "--output", str(out))
    assert code == 2 and "--overwrite" in text

    code, text = invoke(*args, "--output", str(out), "--overwrite", "--evaluator", "pan20")
    assert code == 0, text
    pan20_scores = json.loads((out / "out.json").read_text(encoding="utf-8"))
    assert set(pan20_scores) == {"auc", "c@1", "F1", "f_05_u", "overall"}


def test_score_checks_every_output_file_before_writing_any(finished_run: Path, tmp_path: Path):
    args = ["score", "--task", "pan23", "--truth", str(SAMPLE / "test"), "--answers", str(finished_run)]
    out, record = tmp_path / "eval", tmp_path / "record"
    # a user's details.jsonl is replaced only with --overwrite, not because no result.json lies beside it
    record.mkdir()
    (record / "details.jsonl").write_text("mine\n", encoding="utf-8")
    code, text = invoke(*args, "--record", str(record))
    assert code == 2 and f"{record / 'details.jsonl'} exists, and is not this record's; pass --overwrite" in text
    assert (record / "details.jsonl").read_text(encoding="utf-8") == "mine\n"
    # a folder where a record file goes: refused whole, before --output writes anything (with --overwrite too)
    (record / "details.jsonl").unlink()
    (record / "result.json").mkdir()
    code, text = invoke(*args, "--output", str(out), "--record", str(record), "--overwrite")
    assert code == 2 and f"{record / 'result.json'} is not a file" in text
    assert not out.exists() and (record / "result.json").is_dir()


@pytest.mark.parametrize("where", ["cngdist/seed-0", "cngdist"])
def test_run_refuses_a_file_where_its_folder_goes_before_fitting(tmp_path: Path, where: str):
    in_the_way = tmp_path / "pan23" / SAMPLE.name / where
    in_the_way.parent.mkdir(parents=True)
    in_the_way.write_text("mine\n", encoding="utf-8")
    code, text = run_sample(tmp_path)
    assert code == 2 and f"{in_the_way} is not a folder" in text and "fit" not in text
    assert in_the_way.read_text(encoding="utf-8") == "mine\n"


def test_a_result_json_of_another_tool_does_not_make_a_run_folder(tmp_path: Path):
    from harness.runner import enclosing_run_folder

    (tmp_path / "project" / "out").mkdir(parents=True)
    (tmp_path / "project" / "result.json").write_text("{}", encoding="utf-8")  # a name other tools use too
    assert enclosing_run_folder(tmp_path / "project" / "out" / "figures") is None
    (tmp_path / "project" / "details.jsonl").write_text("", encoding="utf-8")  # with its details: a run's
    assert enclosing_run_folder(tmp_path / "project" / "out" / "figures") == (tmp_path / "project").absolute()


def test_leaderboard_and_predict_never_write_into_a_run_folder(finished_run: Path, tmp_path: Path):
    """With --overwrite too: a run's answers and checkpoint are its result's, not a table's or another system's."""
    runs = tmp_path / "pan23"
    before = {p: p.read_bytes() for p in finished_run.rglob("*") if p.is_file()}
    for inside in (finished_run / "answers.jsonl", finished_run / "checkpoint" / "config.json"):
        code, text = invoke("leaderboard", str(runs), "--format", "csv", "--output", str(inside), "--overwrite")
        assert code == 2 and f"lies in the run folder {finished_run}" in text
    code, text = invoke("leaderboard", str(runs), "--format", "json", "--output", str(runs / "result.json"))
    assert code == 2 and "would pass for a run's" in text and not (runs / "result.json").exists()
    predict = ["predict", "--system", "cngdist", "--task", "pan23", "--input", str(SAMPLE / "test")]
    code, text = invoke(*predict, "--output", str(finished_run), "--checkpoint", str(finished_run / "checkpoint"),
                        "--overwrite")  # fmt: skip
    assert code == 2 and "is the folder of a run; name another folder" in text
    # nor into its checkpoint folder, which a rerun replaces whole: what predict, report or plot wrote there was lost
    checkpoint = finished_run / "checkpoint"
    for command in (
        [*predict, "--checkpoint", str(checkpoint), "--output", str(checkpoint)],
        ["report", "--results", str(runs), "--out", str(checkpoint / "report")],
        ["plot", str(runs), "--out", str(checkpoint / "figures")],
        ["run", "--system", "cngdist", "--task", "pan23", "--data", str(SAMPLE), "--out", str(checkpoint / "runs")],
    ):
        code, text = invoke(*command)
        assert code == 2 and f"lies in the run folder {finished_run}; name a folder outside it" in text, text
    assert {p: p.read_bytes() for p in finished_run.rglob("*") if p.is_file()} == before


def test_leaderboard_never_writes_into_the_folder_of_a_result_it_reads(finished_run: Path, tmp_path: Path):
    """A result copied without its details is no run folder on disk, but it is one to the leaderboard reading it."""
    copied = tmp_path / "copied" / "pan23" / "cngdist"
    copied.mkdir(parents=True)
    shutil.copy(finished_run / "result.json", copied / "result.json")
    code, text = invoke("leaderboard", str(tmp_path / "copied"), "--output", str(copied / "notes" / "table.md"))
    assert code == 2 and f"--output {copied / 'notes' / 'table.md'} lies in the run folder {copied}" in text, text
    assert sorted(p.name for p in copied.iterdir()) == ["result.json"]
    code, text = invoke("leaderboard", str(tmp_path / "copied"), "--output", str(tmp_path / "table.md"))
    assert code == 0 and "cngdist" in (tmp_path / "table.md").read_text(encoding="utf-8"), text


def test_run_times_the_evaluation_as_one_step(finished_run: Path):
    result = json.loads((finished_run / "result.json").read_text(encoding="utf-8"))
    assert set(result["timings_s"]) == {"load", "fit", "evaluate", "total"}
    assert result["task"]["plot_parameters"] == []


@pytest.mark.parametrize(
    ("command", "task"),
    [
        (["predict", "--system", "cngdist", "--input", "IN", "--output", "OUT"], "darkweb"),
        (["score", "--truth", "IN", "--answers", "IN"], "reddit"),
    ],
)
def test_predict_and_score_refuse_tasks_without_pan_answers(tmp_path: Path, command: list[str], task: str):
    (tmp_path / "IN").mkdir()
    args = [sys.executable, "-m", "harness.cli", *command, "--task", task]
    done = subprocess.run(args, cwd=tmp_path, capture_output=True, text=True)
    assert done.returncode == 2, done.stderr
    assert "Traceback" not in done.stderr
    (line,) = done.stderr.strip().splitlines()
    assert line == f"error: task '{task}' has no PAN answers; predict/score work with: pan23, pan-classic, pan20"
    assert not (tmp_path / "OUT").exists()


def test_framework_imports_no_task_or_system():
    """harness/ names tasks and systems only through the registry's import paths (strings)."""
    import ast

    harness_dir = REPO / "harness"
    for path in sorted(harness_dir.rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.ImportFrom) and node.module:
                names = [node.module]
            elif isinstance(node, ast.Import):
                names = [alias.name for alias in node.names]
            else:
                continue
            assert not [n for n in names if n.split(".")[0] in ("tasks", "systems")], f"{path}: imports {names}"


def test_a_record_from_a_split_folder_is_scored_per_type_pair_as_the_run_was(tmp_path: Path):
    """Was (audit 23, F2): `score --record` with pan23's test folder recorded the `all` scores only, and the record's
    row in the leaderboard's per-type-pair table was all "-". A truth file given alone stays scored as a whole."""
    code, text = run_sample(tmp_path / "runs")
    assert code == 0, text
    run = tmp_path / "runs" / "pan23" / "pan23-format-sample" / "cngdist" / "seed-0"
    ran = json.loads((run / "result.json").read_text(encoding="utf-8"))
    answers = str(run / "answers.jsonl")
    code, text = invoke("score", "--task", "pan23", "--truth", str(SAMPLE / "test"), "--answers", answers,
                        "--record", str(tmp_path / "record"))  # fmt: skip
    assert code == 0, text
    assert "essay+interview" in text  # a row of the printed table, as the run prints it
    recorded = json.loads((tmp_path / "record" / "result.json").read_text(encoding="utf-8"))
    assert any("+" in name for name in recorded["scores"])
    assert json.dumps(recorded["scores"], sort_keys=True) == json.dumps(ran["scores"], sort_keys=True)
    rows = read_jsonl(tmp_path / "record" / "details.jsonl")
    kinds = {row["id"]: row["pair_type"] for row in read_jsonl(run / "details.jsonl")}
    assert {row["id"]: row["pair_type"] for row in rows} == kinds
    alone = tmp_path / "alone"
    alone.mkdir()
    shutil.copy(SAMPLE / "test" / "truth.jsonl", alone / "truth.jsonl")
    code, text = invoke("score", "--task", "pan23", "--truth", str(alone), "--answers", answers)
    assert code == 0 and "essay+interview" not in text, text


@pytest.mark.parametrize(
    ("option", "value"), [("--lr", "inf"), ("--lr", "nan"), ("--time-limit", "nan"), ("--cross-kind-share", "nan")]
)
def test_pretrain_style_refuses_a_number_that_is_not_finite_before_any_work(tmp_path: Path, option, value):
    """Was (audit 25, F1/F3): `--lr inf` began pre-training and ended in a 40-line traceback ("Input contains NaN");
    `--time-limit nan` meant no limit and wrote NaN into the encoder's JSON manifest."""
    posts = SAMPLE / "test" / "pairs.jsonl"  # any existing file: nothing may be read
    code, text = invoke("pretrain-style", str(posts), str(tmp_path / "enc"), option, value)
    assert code == 2 and f"{option}" in text and "is not a finite number" in text, text
    assert not (tmp_path / "enc").exists()


def test_pretrain_style_names_the_time_limit_option_as_it_is_spelt(tmp_path: Path):
    """Was (audit 25, F2): `--encoder ngram --time-limit 5` was refused as `--time-limit-s: ...`, an option that
    does not exist."""
    posts = SAMPLE / "test" / "pairs.jsonl"
    code, text = invoke("pretrain-style", str(posts), str(tmp_path / "enc"), "--encoder", "ngram", "--time-limit", "5")
    assert code == 2 and "--time-limit: the transformer encoder's" in text and "--time-limit-s" not in text, text


def test_score_reads_no_text_beside_the_truth_and_a_bad_pairs_file_only_costs_the_type_pairs(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
):
    """The review of audit 23's fix: `score` must not fail, nor hold a test set's texts, for the pairs beside a
    truth. Pairs without types (PAN 2020-2021) give the whole set's scores alone; a pairs file that cannot be read
    gives them with a warning."""
    folder = tmp_path / "test"
    shutil.copytree(SAMPLE / "test", folder)
    answers = folder / "answers.jsonl"
    answers.write_text("".join(json.dumps({"id": row["id"], "value": 0.7}) + "\n"
                               for row in read_jsonl(folder / "truth.jsonl")))  # fmt: skip
    rows = read_jsonl(folder / "pairs.jsonl")
    (folder / "pairs.jsonl").write_text("".join(json.dumps({**row, "pair": ["", ""]}) + "\n" for row in rows))
    code, text = invoke("score", "--task", "pan23", "--truth", str(folder), "--answers", str(answers))
    assert code == 0 and "essay+interview" in text, text  # types read, texts not needed
    untyped = [{k: v for k, v in row.items() if k != "discourse_types"} for row in rows]
    (folder / "pairs.jsonl").write_text("".join(json.dumps(row) + "\n" for row in untyped))
    code, text = invoke("score", "--task", "pan23", "--truth", str(folder), "--answers", str(answers))
    assert code == 0 and "+" not in text, text
    (folder / "pairs.jsonl").write_text("{not json\n")
    code, text = invoke("score", "--task", "pan23", "--truth", str(folder), "--answers", str(answers))
    assert code == 0 and "main score: overall" in text and "+" not in text, text
    assert "malformed JSON" in caplog.text and "no discourse-type pair is scored apart" in caplog.text
