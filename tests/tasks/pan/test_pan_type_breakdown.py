"""Scores per discourse-type pair of the PAN verification tasks, and their table in the leaderboard and report.

The per-pair scores must be what PAN's evaluator gives on that pair's problems alone; a pair of one class
has no AUC (NaN, where PAN writes 0.0); the breakdown table shows the main score per pair, mean ± sd over
seeds; a task without types shows none.
"""

from __future__ import annotations

import json
import math
import random
import re
from pathlib import Path

import pytest
from click.testing import CliRunner

from core.records import Answer, VerificationData, VerificationProblem, VerificationTruth
from harness.cli import main
from harness.leaderboard import build_tables, find_runs, render
from harness.metrics.verification import c_at_1_best_band
from harness.report_html import render_html
from tasks.pan.classic import PanClassicTask
from tasks.pan.evaluator import score_answers
from tasks.pan.pan20 import Pan20Task
from tasks.pan.pan23 import Pan23Task

# (type of text 1, type of text 2, same author); essay+essay holds only different-author problems,
# interview+interview only same-author ones
LAYOUT = [("email", "essay", True), ("essay", "email", False)] * 5 + [("email", "interview", True)] * 2
LAYOUT += [("interview", "email", False)] * 3 + [("essay", "essay", False)] * 3 + [("interview", "interview", True)] * 2


class _Fixed:
    def __init__(self, values: dict[str, float]) -> None:
        self.values = values

    def predict(self, problems: list[VerificationProblem]) -> list[Answer]:
        return [Answer(p.id, self.values[p.id]) for p in problems]


def _data(layout: list[tuple[str, str, bool]], typed: bool = True) -> VerificationData:
    problems = tuple(
        VerificationProblem(f"p{i:02d}", (f"text {i} a", f"text {i} b"), (t1, t2) if typed else None)
        for i, (t1, t2, _) in enumerate(layout)
    )
    truth = {p.id: VerificationTruth(p.id, same) for p, (_, _, same) in zip(problems, layout, strict=True)}
    return VerificationData(problems, truth, Path("synthetic"), "synthetic")


def _answers(data: VerificationData, seed: int = 0) -> dict[str, float]:
    rng = random.Random(seed)
    return {p.id: rng.choice([0.5, round(rng.random(), 3)]) for p in data.problems}


def test_each_pair_is_scored_by_the_evaluator_on_its_problems_alone():
    task, data = Pan23Task(), _data(LAYOUT)
    answers = _answers(data)
    evaluation = task.evaluate(_Fixed(answers), data)
    scores = evaluation.scores
    assert {name: scores[name] for name in task.metadata.measures} == task.score(
        [Answer(i, v) for i, v in answers.items()], data
    )
    pairs = {"email+essay": 10, "email+interview": 5, "essay+essay": 3, "interview+interview": 2}
    assert {name.rpartition("/")[0] for name in scores if "/" in name} == set(pairs)
    for pair, count in pairs.items():
        assert scores[f"{pair}/problems"] == count
        ids = [p.id for p in data.problems if "+".join(sorted(p.discourse_types)) == pair]
        truth = {i: data.truth[i] for i in ids}
        by_hand = score_answers({i: answers[i] for i in ids}, truth, profile="pan23")
        labels = [truth[i].same for i in ids]
        by_hand["c_at_1_best_band"] = c_at_1_best_band(labels, [answers[i] for i in ids])
        one_class = len(set(labels)) == 1
        for measure in task.metadata.measures:
            value = scores[f"{pair}/{measure}"]
            undefined = {"auc", "overall", "c_at_1_best_band"} if one_class else set()
            if not any(labels):
                undefined |= {"f1", "f_05_u"}
            if measure in undefined:
                assert math.isnan(value), (pair, measure)
            else:
                assert value == by_hand[measure], (pair, measure)  # exactly: the same evaluator
        if one_class:
            assert by_hand["auc"] == 0.0  # what PAN's evaluator writes for a pair of one class: not a score


def test_details_name_each_problems_pair_and_an_untyped_split_has_no_breakdown():
    task = Pan23Task()
    data = _data(LAYOUT)
    evaluation = task.evaluate(_Fixed(_answers(data)), data)
    assert [row["pair_type"] for row in evaluation.details] == ["+".join(sorted(t[:2])) for t in LAYOUT]
    assert evaluation.details[1]["pair_type"] == "email+essay"  # ("essay", "email"): unordered

    untyped = _data(LAYOUT, typed=False)
    evaluation = Pan20Task().evaluate(_Fixed(_answers(untyped)), untyped)
    assert list(evaluation.scores) == list(Pan20Task.metadata.measures)
    assert all("pair_type" not in row for row in evaluation.details)

    # problems without types are in no pair; the typed ones still are
    mixed = data._replace(problems=tuple(p._replace(discourse_types=None) if i < 10 else p
                                         for i, p in enumerate(data.problems)))  # fmt: skip
    scores = task.evaluate(_Fixed(_answers(mixed)), mixed).scores
    assert "email+essay/problems" not in scores and scores["email+interview/problems"] == 5


def test_derived_measures_follow_their_parts_per_pair():
    """pan-classic's main score, AUC x c@1, per pair: the product of the pair's own AUC and c@1, NaN without AUC."""
    task = PanClassicTask()
    layout = [(genre, genre, i % 3 != 0) for genre in ("essay", "novel") for i in range(9)]  # one genre a problem
    data = _data(layout + [("email", "email", True)] * 3)
    scores = task.evaluate(_Fixed(_answers(data, seed=3)), data).scores
    for genre in ("essay", "novel"):
        pair = f"{genre}+{genre}"
        assert scores[f"{pair}/auc_x_c_at_1"] == scores[f"{pair}/auc"] * scores[f"{pair}/c_at_1"]
        assert not math.isnan(scores[f"{pair}/auc_x_c_at_1"])
    assert math.isnan(scores["email+email/auc_x_c_at_1"])  # emails here are all same-author problems


# -- the leaderboard and the report ---------------------------------------------------------------------------


def _write_split(folder: Path, layout: list[tuple[str, str, bool]], seed: int, typed: bool = True) -> None:
    """pairs.jsonl + truth.jsonl; same-author texts of similar length, so length_ratio learns something."""
    rng = random.Random(seed)
    folder.mkdir(parents=True)
    pairs, truth = [], []
    for i, (t1, t2, same) in enumerate(layout):
        first = 100 + rng.randint(0, 300)
        second = first + rng.randint(-10, 10) if same else first * 3
        row = {"id": f"{folder.name}-{i}", "pair": [f"{seed} {i} " + "a" * first, f"{seed} {i} " + "b" * second]}
        if typed:
            row["discourse_types"] = [t1, t2]
        pairs.append(json.dumps(row))
        truth.append(json.dumps({"id": row["id"], "same": same}))
    (folder / "pairs.jsonl").write_text("\n".join(pairs) + "\n", encoding="utf-8")
    (folder / "truth.jsonl").write_text("\n".join(truth) + "\n", encoding="utf-8")


def _run(data: Path, out: Path, system: str, task: str, *seeds: int) -> None:
    args = ["run", "--system", system, "--task", task, "--data", str(data), "--out", str(out)]
    result = CliRunner().invoke(main, args + [arg for s in seeds for arg in ("--seed", str(s))], catch_exceptions=False)
    assert result.exit_code == 0, result.output


@pytest.fixture(scope="module")
def runs(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("breakdown")
    _write_split(root / "data" / "train", LAYOUT * 2, seed=1)
    _write_split(root / "data" / "test", LAYOUT, seed=2)
    _run(root / "data", root / "runs", "length_ratio", "pan23", 0, 1)
    _run(root / "data", root / "runs", "cngdist", "pan23", 0)
    return root / "runs"


def test_the_leaderboard_has_a_table_of_the_main_score_per_pair(runs: Path):
    (table,) = build_tables(find_runs([runs]))
    assert table.type_pairs == {"email+essay": 10, "email+interview": 5, "essay+essay": 3, "interview+interview": 2}
    markdown = render([table], "markdown")
    pairs = "email+essay (n=10) | email+interview (n=5) | essay+essay (n=3) | interview+interview (n=2)"
    head = f"| system | runs | {pairs} |"
    assert "#### pan23 on data: overall per discourse-type pair" in markdown and head in markdown
    for row in table.rows:
        results = [json.loads(run.path.read_text(encoding="utf-8"))["scores"] for run in row.runs]
        line = next(line for line in markdown.splitlines()[markdown.splitlines().index(head) :]
                    if line.startswith(f"| {row.label} |"))  # fmt: skip
        cells = [cell.strip("* ") for cell in line.strip("|").split("|")]
        assert cells[1] == str(len(row.runs))
        for pair, cell in zip(table.type_pairs, cells[2:], strict=True):
            values = [scores[f"{pair}/overall"] for scores in results]
            if pair in ("essay+essay", "interview+interview"):  # one class: no AUC, so no overall
                assert cell == "nan" and all(math.isnan(v) for v in values)
                continue
            mean = sum(values) / len(values)
            expected = f"{mean:.3f}" + (f" ± {row.pair_std[pair]:.3f}" if len(values) > 1 else "")
            assert cell == expected and row.pair_mean[pair] == pytest.approx(mean, abs=1e-12)
    assert "nan: overall is undefined on that pair's problems" in markdown

    # the main table is the one a leaderboard without the breakdown prints
    table.type_pairs = {}
    assert markdown.startswith(render([table], "markdown"))
    assert "####" not in render([table], "markdown")


def test_the_html_report_shows_the_same_breakdown(runs: Path, tmp_path: Path):
    tables = build_tables(find_runs([runs]))
    html = render_html(tables, [], sources=[runs])
    block = html[html.index('<table class="type-pairs">') :]
    block = block[: block.index("</table>")]
    heads = re.findall(r'<th scope="col">([^<]*)</th>', block)
    assert heads == ["system", "runs", "email+essay (n=10)", "email+interview (n=5)", "essay+essay (n=3)",
                     "interview+interview (n=2)"]  # fmt: skip
    markdown = render(tables, "markdown")
    for row in tables[0].rows:
        label = rf'<tr><th scope="row"><a href="#run-\d+">{re.escape(row.label)}</a></th>'
        html_row = re.search(label + "(.*?)</tr>", block)
        html_cells = [re.sub("</?strong>", "", c) for c in re.findall(r"<td>(.*?)</td>", html_row.group(1))]
        md_line = [line for line in markdown.split("#### ")[1].splitlines() if line.startswith(f"| {row.label} |")][0]
        assert html_cells == [cell.strip("* ") for cell in md_line.strip("|").split("|")][1:]
    assert html.count('<table class="leaderboard">') == 1  # the main table, as before

    # `harness report` writes both
    report = tmp_path / "report"
    result = CliRunner().invoke(main, ["report", "--results", str(runs), "--out", str(report), "--resamples", "5"])
    assert result.exit_code == 0, result.output
    assert "#### pan23 on data: overall per discourse-type pair" in (report / "index.md").read_text(encoding="utf-8")
    assert '<table class="type-pairs">' in (report / "index.html").read_text(encoding="utf-8")


def test_a_task_without_types_or_with_one_pair_shows_no_breakdown(tmp_path: Path):
    _write_split(tmp_path / "plain" / "train", LAYOUT * 2, seed=1, typed=False)
    _write_split(tmp_path / "plain" / "test", LAYOUT, seed=2, typed=False)
    _run(tmp_path / "plain", tmp_path / "runs", "length_ratio", "pan20", 0)
    one = [("essay", "essay", same) for _, _, same in LAYOUT]
    _write_split(tmp_path / "one" / "train", one * 2, seed=1)
    _write_split(tmp_path / "one" / "test", one, seed=2)
    _run(tmp_path / "one", tmp_path / "runs", "length_ratio", "pan23", 0)
    tables = build_tables(find_runs([tmp_path / "runs"]))
    assert [t.task for t in tables] == ["pan20", "pan23"]
    (pan23_run,) = (tmp_path / "runs" / "pan23").rglob("result.json")
    assert json.loads(pan23_run.read_text(encoding="utf-8"))["scores"]["essay+essay/problems"] == len(LAYOUT)
    for table in tables:  # untyped, or one pair holding every problem: the main table says it all
        assert table.type_pairs == {}
    for fmt in ("markdown", "latex"):
        assert "per discourse-type pair" not in render(tables, fmt)
    assert "type_pairs" not in render(tables, "json")
    assert 'class="type-pairs"' not in render_html(tables, [], sources=[tmp_path])
