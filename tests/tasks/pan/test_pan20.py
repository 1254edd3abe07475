"""The `pan20` task: PAN 2020-2021 jsonl data scored with the PAN 2020 evaluator profile."""

from __future__ import annotations

import json
from pathlib import Path

from click.testing import CliRunner
from helpers.paths import REPO

from harness.cli import main
from tasks.pan.evaluator import PAN_OUT_NAMES
from tasks.pan.pan20 import Pan20Task
from tasks.pan.pan23 import Pan23Task

SAMPLE = REPO / "samples" / "pan23-format-sample"


def invoke(*args: str) -> str:
    result = CliRunner().invoke(main, list(args), catch_exceptions=False)
    assert result.exit_code == 0, result.output
    return result.output


def read_json(path: Path) -> dict:
    return json.loads(path.read_text(encoding="utf-8"))


def test_metadata_and_data_are_the_pan23_layout() -> None:
    meta = Pan20Task.metadata
    assert (meta.name, meta.kind, meta.main_score, meta.evaluator) == ("pan20", "verification", "overall", "pan20")
    assert meta.measures == ("auc", "c_at_1", "f1", "f_05_u", "overall")
    pan20, pan23 = Pan20Task().load(SAMPLE, "test"), Pan23Task().load(SAMPLE, "test")
    assert pan20._replace(ranked_by=None) == pan23._replace(ranked_by=None)  # the same data ...
    assert (pan20.ranked_by.profile, pan23.ranked_by.profile) == ("pan20", "pan23")  # ... ranked by each year's code


def test_run_end_to_end_scores_as_harness_score_with_the_pan20_evaluator(tmp_path: Path) -> None:
    invoke("run", "--system", "cngdist", "--task", "pan20", "--data", str(SAMPLE), "--out", str(tmp_path / "runs"))
    run_dir = tmp_path / "runs" / "pan20" / "pan23-format-sample" / "cngdist" / "seed-0"
    result = read_json(run_dir / "result.json")
    assert result["task"]["name"] == "pan20" and result["task"]["evaluator"] == "pan20"
    overall = {name: value for name, value in result["scores"].items() if "/" not in name}  # the rest: per type pair
    assert list(overall) == list(Pan20Task.metadata.measures)
    assert result["main_score"] == {"name": "overall", "value": result["scores"]["overall"]}

    truth = str(SAMPLE / "test")
    for task, extra in (("pan23", ["--evaluator", "pan20"]), ("pan20", [])):
        out = tmp_path / f"eval-{task}"
        invoke("score", "--task", task, "--truth", truth, "--answers", str(run_dir), "--output", str(out), *extra)
        # bit-identical, not approximately; under PAN's names ("c@1", "F1")
        assert read_json(out / "out.json") == {PAN_OUT_NAMES[name]: value for name, value in overall.items()}

    # the same system on the same data answers the same under pan23: only the evaluator differs
    invoke("run", "--system", "cngdist", "--task", "pan23", "--data", str(SAMPLE), "--out", str(tmp_path / "runs"))
    pan23_run = tmp_path / "runs" / "pan23" / "pan23-format-sample" / "cngdist" / "seed-0"
    assert (pan23_run / "answers.jsonl").read_bytes() == (run_dir / "answers.jsonl").read_bytes()
