"""benchmarks/length_bins.py on a real forum set: pairs go to the bin of their shorter text, a run's AUC per bin is
the AUC of its answers within the bin, seeds are pooled per system, and answers that do not fit the set are refused."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from helpers.benchmark_script import load_benchmark

from tasks.pairs import build_pairs


def _answers(folder: Path, values: dict[str, float]) -> None:
    folder.mkdir(parents=True)
    lines = [json.dumps({"id": pair_id, "value": value}) for pair_id, value in values.items()]
    (folder / "answers.jsonl").write_text("\n".join(lines) + "\n", encoding="utf-8")


def test_auc_per_length_bin_of_the_shorter_text(forum_slice: Path, tmp_path: Path) -> None:
    script = load_benchmark("length_bins")
    build_pairs("forum", forum_slice, tmp_path / "sets" / "forum-seed0", pairs=60, seed=0)
    pairs = script.set_pairs(tmp_path / "sets" / "forum-seed0")
    records = [json.loads(line) for line in (tmp_path / "sets" / "forum-seed0" / "test" / "pairs.jsonl").open()]
    assert {r["id"]: min(map(len, r["pair"])) for r in records} == {i: length for i, (length, _) in pairs.items()}
    # answers that rank by length alone: AUC within a bin is then what the bin's own lengths give
    runs = tmp_path / "runs" / "pan23" / "forum-seed0"
    _answers(runs / "perfect" / "seed-0", {i: float(same) for i, (_, same) in pairs.items()})
    _answers(runs / "length@abc" / "seed-0", {i: float(length) for i, (length, _) in pairs.items()})
    table = script.main(["--sets", str(tmp_path / "sets"), "--runs", str(tmp_path / "runs")])
    perfect = script.run_aucs(runs / "perfect" / "seed-0" / "answers.jsonl", pairs)
    assert perfect["all"] == 1.0 and all(value == 1.0 for value in perfect.values())
    from sklearn.metrics import roc_auc_score

    by_length = script.run_aucs(runs / "length@abc" / "seed-0" / "answers.jsonl", pairs)
    short = {i: v for i, v in pairs.items() if v[0] < 100}
    assert len({same for _, same in short.values()}) == 2  # this slice has both classes among its short pairs
    expected = roc_auc_score([same for _, same in short.values()], [length for length, _ in short.values()])
    assert by_length["0-100"] == pytest.approx(expected)
    assert f"| length ({tmp_path / 'runs'}) | {by_length['all']:.3f} (1) |" in table  # the @params part dropped
    _answers(runs / "partial" / "seed-0", dict(list({i: 0.5 for i in pairs}.items())[:3]))
    with pytest.raises(SystemExit, match="answers for 3 problems"):
        script.main(["--sets", str(tmp_path / "sets"), "--runs", str(tmp_path / "runs")])
