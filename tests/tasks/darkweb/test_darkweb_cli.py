"""`harness run --task darkweb` end to end on a small slice of the real forum posts."""

from __future__ import annotations

import json
from pathlib import Path

from click.testing import CliRunner
from helpers.darkweb_data import TINY_PARAMS

from harness.cli import main


def run(*args: str) -> str:
    result = CliRunner().invoke(main, ["run", *args], catch_exceptions=False)
    assert result.exit_code == 0, result.output
    return result.output


def test_multitask_nbcsauthor_and_tfidf_on_real_posts(forum_posts_file: Path, tmp_path: Path):
    params = [f"--param={key}={json.dumps(value)}" for key, value in {**TINY_PARAMS, "training.epochs": 1}.items()]
    common = ["--task", "darkweb", "--data", str(forum_posts_file.parent), "--out", str(tmp_path)]
    # the 75 persons first by name hash include one migrant with test episodes in two markets (campus
    # and admissions) and two with training episodes in two markets (CROSS labels)
    task = ["--task-param", "max_authors=75", "--task-param", "multitask=true"]
    output = run("--system", "nbcsauthor", *common, *task, *params)
    assert "main score: mrr = " in output
    assert {line.split()[0] for line in output.splitlines() if line[:1].isalpha()} >= {"all", "academia", "migrant"}
    (run_dir,) = tmp_path.glob("darkweb@*/*/nbcsauthor@*/seed-0")
    result = json.loads((run_dir / "result.json").read_text(encoding="utf-8"))
    assert result["task"]["name"] == "darkweb" and result["task"]["params"]["multitask"] is True
    assert result["task"]["data"]["test"]["size"] == result["details"]["count"] - _migrant_rows(run_dir)
    scores = result["scores"]
    assert 0.0 < scores["mrr"] <= 1.0 and {"recall_at_1", "recall_at_2", "recall_at_5", "recall_at_10"} <= set(scores)
    assert {"academia/mrr", "admissions/mrr", "campus/mrr"} <= set(scores)
    assert scores["migrant/admissions->campus/persons"] == 1.0 and "migrant/academia->campus/mrr" not in scores
    config = json.loads((run_dir / "checkpoint" / "config.json").read_text(encoding="utf-8"))
    assert config["state"]["info"]["classes"]["CROSS"] == 2  # two persons of the slice post in two markets
    # a second identical run is kept, not recomputed
    assert "kept:" in run("--system", "nbcsauthor", *common, *task, *params)

    run("--system", "episode_tfidf", *common, "--task-param", "max_authors=40", "--task-param", 'market="campus"')
    (tfidf_dir,) = tmp_path.glob("darkweb@*/*/episode_tfidf/seed-0")
    tfidf = json.loads((tfidf_dir / "result.json").read_text(encoding="utf-8"))["scores"]
    assert set(k for k in tfidf if k.endswith("/mrr")) == {"campus/mrr"} and tfidf["mrr"] > 0.2


def _migrant_rows(run_dir: Path) -> int:
    rows = [json.loads(line) for line in (run_dir / "details.jsonl").read_text(encoding="utf-8").splitlines()]
    return sum(row["set"] != "within" for row in rows)
