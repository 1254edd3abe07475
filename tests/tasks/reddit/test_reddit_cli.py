"""`harness run --system varlen_linker --task reddit` end to end on a small slice of the real posts, and the plots."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner
from helpers.forum_slice import write_author_slice

from harness.cli import main
from harness.leaderboard import find_runs
from harness.plotting import plot_linking_curves

TASK_PARAMS = {
    "ranking_query_size": 8,
    "ranking_target_size": 8,
    "linking_query_size": 16,
    "linking_min_query_posts": 8,
    "linking_target_sizes": "[1,2,4,8]",
    "linking_target_size": 4,
}
SYSTEM_PARAMS = {  # a part's field by its dotted name
    "encoder.vocab_size": 400,
    "encoder.token_dim": 16,
    "encoder.filters": 16,
    "encoder.subreddit_dim": 8,
    "encoder.attention_dim": 32,
    "encoder.embedding_dim": 32,
    "training.epochs": 1,
    "training.steps_per_epoch": 4,
    "training.authors_per_batch": 8,
    "training.samples_per_author": 2,
    "loss": "topk",
    "loss.top_k": 2,
    "device": "cpu",
    "cpu_threads": 1,
}


@pytest.fixture(scope="module")
def real_slice(forum_posts_file: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """All posts of 120 real authors with 40-300 posts each (chosen by a hash of the name)."""
    return write_author_slice(forum_posts_file, tmp_path_factory.mktemp("reddit-slice"), authors=120)


def options(flag: str, params: dict) -> list[str]:
    return [item for key, value in params.items() for item in (flag, f"{key}={value}")]


def test_harness_run_varlen_linker_on_reddit(real_slice: Path, tmp_path: Path):
    args = ["run", "--system", "varlen_linker", "--task", "reddit", "--data", str(real_slice), "--out", str(tmp_path)]
    args += options("--param", SYSTEM_PARAMS) + options("--task-param", TASK_PARAMS)
    outcome = CliRunner().invoke(main, args, catch_exceptions=False)
    assert outcome.exit_code == 0, outcome.output
    [result_path] = tmp_path.glob("reddit@*/*/varlen_linker@*/seed-0/result.json")
    result = json.loads(result_path.read_text(encoding="utf-8"))
    assert result["task"]["params"]["protocol"] == "leak-free"
    averaged = result["task"]["measure_settings"]["linking_averaged_subreddits"]
    per_subreddit = {f"{measure}@{name}" for name in averaged for measure in ("eer", "min_dcf")}
    assert averaged and set(result["scores"]) == {
        "mrr",
        "recall_at_4",
        "recall_at_8",
        "eer",
        "min_dcf",
        "eer_pooled",
        "min_dcf_pooled",
        *per_subreddit,
    }
    assert result["main_score"]["name"] == "eer" and 0.0 <= result["main_score"]["value"] <= 1.0
    assert result["system"]["params"]["loss"] == {"name": "topk", "top_k": 2, "margin": 0.25}
    assert result["system"]["params"]["encoder"]["token_dim"] == 16
    settings = result["task"]["measure_settings"]
    assert settings["min_dcf"] == {"p_target": 0.05, "c_miss": 1.0, "c_fa": 2.0, "normalized": True}
    assert settings["metric"] == "euclidean" and settings["counts"]["linking"]["queries"] > 0
    assert result["task"]["params"]["linking_target_sizes"] == [1, 2, 4, 8]
    curve = result["curves"]["eer_vs_target_size"]
    assert curve["target_sizes"] == [1, 2, 4, 8] and len(curve["eer"]) == 4
    details = [json.loads(line) for line in (result_path.parent / "details.jsonl").read_text().splitlines()]
    ranking_rows = [d for d in details if d["evaluation"] == "ranking"]
    assert len(ranking_rows) == settings["counts"]["ranking"]["authors"]
    linking_queries = settings["counts"]["linking"]["queries"] + sum(
        settings["counts"]["linking_by_subreddit"]["subreddits"][name]["queries"] for name in averaged
    )
    assert len(details) - len(ranking_rows) == 4 * linking_queries

    written = plot_linking_curves(find_runs([result_path]), tmp_path / "plots")
    names = {p.name for p in written}
    for stem in (f"{kind}-reddit-{real_slice.name}" for kind in ("eer-by-target-size", "roc", "det")):
        assert {f"{stem}.png", f"{stem}.pdf", f"{stem}.csv"} <= names
    assert all(p.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" for p in written if p.suffix == ".png")
