"""benchmarks/stacked_margin.py: each margin's decision read from a stacked run's info, and its table on real data."""

from __future__ import annotations

import json
import math
import os
import subprocess
import sys
from pathlib import Path

import pytest
from helpers.paths import REPO, SHARED_DATA

BENCHMARKS = REPO / "benchmarks"


@pytest.fixture(scope="module")
def margin_module():  # type: ignore[no-untyped-def]
    sys.path.insert(0, str(BENCHMARKS))
    try:
        import stacked_margin

        yield stacked_margin
    finally:
        sys.path.remove(str(BENCHMARKS))


def _info(ensemble: float, members: dict[str, float], se: float) -> dict[str, object]:
    return {"out_of_fold_main": {"ensemble": ensemble, "members": members, "difference_se": se}}


def test_each_margin_decides_from_the_lead_and_its_standard_error(margin_module) -> None:  # type: ignore[no-untyped-def]
    decide = margin_module.decision
    small_lead = decide(_info(0.80, {"tfidf": 0.70, "wccn": 0.79}, 0.02))
    assert small_lead["best"] == "wccn" and small_lead["lead"] == pytest.approx(0.01)
    assert small_lead["none"] is None and small_lead["one_se"] == "wccn"  # leads, but by less than its SE
    large_lead = decide(_info(0.85, {"tfidf": 0.70, "wccn": 0.79}, 0.02))
    assert large_lead["none"] is None and large_lead["one_se"] is None
    behind = decide(_info(0.78, {"tfidf": 0.79, "wccn": 0.79}, 0.02))
    assert behind["best"] == "tfidf" and behind["none"] == "tfidf" == behind["one_se"]  # ties: the first member
    unknown_se = decide(_info(0.80, {"wccn": 0.79}, math.nan))  # too few resamples: stacked uses no margin
    assert unknown_se["none"] is None and unknown_se["one_se"] is None
    with pytest.raises(SystemExit, match="rerun it"):
        decide({"out_of_fold_main": {"ensemble": 0.8, "members": {"wccn": 0.7}}})


@pytest.mark.skipif(not (SHARED_DATA / "pan13-av-en.tar.gz").is_file(), reason="needs ../shared/data")
def test_the_table_holds_the_runs_own_figures_on_pan13(tmp_path: Path) -> None:
    """stacked and tfidf on PAN13 (real data, one seed): the table's stacked cells are the run's own main score, and
    where both margins decide alike no second run is made."""
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "OMP_NUM_THREADS": "1"}
    common = ["--out", str(tmp_path), "--data-dir", str(SHARED_DATA), "--sets", "pan13", "--seeds", "0"]
    run = [sys.executable, str(BENCHMARKS / "verification_all.py"), *common, "--systems", "stacked", "tfidf"]
    done = subprocess.run(run, capture_output=True, text=True, env=env, check=False, timeout=900)
    assert done.returncode == 0, done.stderr[-3000:]
    table = [sys.executable, str(BENCHMARKS / "stacked_margin.py"), *common, "--members", "tfidf"]
    done = subprocess.run(table, capture_output=True, text=True, env=env, check=False, timeout=900)
    assert done.returncode == 0, done.stderr[-3000:]
    result = tmp_path / "runs" / "pan-classic" / "pan13" / "stacked" / "seed-0" / "result.json"
    main = json.loads(result.read_text(encoding="utf-8"))["scores"]["auc_x_c_at_1"]
    row = next(line for line in done.stdout.splitlines() if line.startswith("| PAN13 | 1 |"))
    assert row == f"| PAN13 | 1 | {main:.3f} | {main:.3f} | {main:.3f} |"  # tfidf alone under both margins
    assert "| pan13 | 0 | 1 | tfidf |" in done.stdout and "tfidf alone | tfidf alone |" in done.stdout
    assert not list((tmp_path / "runs" / "pan-classic" / "pan13").glob("stacked@*"))  # no one_se run was needed
