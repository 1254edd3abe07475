"""The PAN evaluator's quirks: reading answers, missing and unknown ids, TIRA output files."""

from __future__ import annotations

import gzip
import json
import logging
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
from helpers.paths import REPO

from core.errors import DataError, HarnessError
from core.records import VerificationTruth
from harness.metrics.verification import evaluate_all
from tasks.pan.evaluator import (
    PAN_OUT_NAMES,
    evaluate_answers_file,
    read_answers,
    score_answers,
    write_tira_outputs,
)

TRUTH = {
    "a": VerificationTruth("a", True),
    "b": VerificationTruth("b", False),
    "c": VerificationTruth("c", True),
    "d": VerificationTruth("d", False),
}


def _write(path: Path, lines: list[str]) -> Path:
    text = "".join(line + "\n" for line in lines)
    if path.suffix == ".gz":
        with gzip.open(path, "wt", encoding="utf-8") as handle:
            handle.write(text)
    else:
        path.write_text(text, encoding="utf-8")
    return path


# ---- read_answers ----------------------------------------------------------------------------


def test_reads_plain_and_gzipped(tmp_path: Path) -> None:
    lines = ['{"id": "a", "value": 0.9}', "", '{"id": "b", "value": 0}', '{"id": "c", "value": 1}']
    for name in ("answers.jsonl", "answers.jsonl.gz"):
        answers = read_answers(_write(tmp_path / name, lines))
        assert answers == {"a": 0.9, "b": 0.0, "c": 1.0}
        assert all(type(v) is float for v in answers.values())


def test_one_element_list_is_accepted(tmp_path: Path) -> None:
    path = _write(tmp_path / "answers.jsonl", ['{"id": "a", "value": [0.25]}', '{"id": "b", "value": 0.5}'])
    assert read_answers(path) == {"a": 0.25, "b": 0.5}


@pytest.mark.parametrize(
    ("line", "field", "message"),
    [
        ('{"id": "b", "value": NaN}', "value", "got nan"),
        ('{"id": "b", "value": Infinity}', "value", "got inf"),
        ('{"id": "b", "value": 1.5}', "value", "in \\[0, 1\\]"),
        ('{"id": "b", "value": -0.1}', "value", "in \\[0, 1\\]"),
        ('{"id": "b", "value": true}', "value", "got bool"),
        ('{"id": "b", "value": "0.7"}', "value", "got str"),
        ('{"id": "b", "value": null}', "value", "got null"),
        ('{"id": "b", "value": [0.1, 0.2]}', "value", "list of 2"),
        ('{"id": "b", "value": []}', "value", "list of 0"),
        ('{"id": "b"}', "value", "missing"),
        ('{"value": 0.3}', "id", "missing"),
        ('{"id": 7, "value": 0.3}', "id", "expected str"),
        ('{"id": "", "value": 0.3}', "id", "empty"),
        ('{"id": "a", "value": 0.3}', "id", "duplicate id 'a' \\(first answered on line 1\\)"),
    ],
)
def test_bad_lines_name_file_line_and_field(tmp_path: Path, line: str, field: str, message: str) -> None:
    path = _write(tmp_path / "answers.jsonl", ['{"id": "a", "value": 0.1}', line])
    with pytest.raises(DataError, match=message) as info:
        read_answers(path)
    error = info.value
    assert (error.path, error.line, error.field) == (str(path), 2, field)
    assert str(error).startswith(f"{path}:2: field '{field}'")


def test_malformed_json_names_file_and_line(tmp_path: Path) -> None:
    path = _write(tmp_path / "answers.jsonl", ['{"id": "a", "value": 0.1}', '{"id": "b", "value": 0.'])
    with pytest.raises(DataError, match="malformed JSON") as info:
        read_answers(path)
    assert (info.value.path, info.value.line) == (str(path), 2)
    assert f"{path}:2" in str(info.value)


def test_empty_file_is_an_error(tmp_path: Path) -> None:
    with pytest.raises(DataError, match="empty"):
        read_answers(_write(tmp_path / "answers.jsonl", []))


# ---- score_answers ---------------------------------------------------------------------------


def warnings_logged(caplog: pytest.LogCaptureFixture) -> list[str]:
    return [r.getMessage() for r in caplog.records if r.name == "harness" and r.levelno == logging.WARNING]


def test_missing_answers_count_as_non_answers(
    tmp_path: Path, caplog: pytest.LogCaptureFixture, recwarn: pytest.WarningsRecorder
) -> None:
    path = tmp_path / "answers.jsonl"
    with caplog.at_level(logging.WARNING, logger="harness"):
        got = score_answers({"a": 0.9, "b": 0.2}, TRUTH, answers_path=path)
    (line,) = warnings_logged(caplog)
    assert re.search(r"\b2 of 4 problems have no answer", line) and str(path) in line
    assert not recwarn.list  # a log line only: a Python warning would print it again with a source line
    # ordered by sorted id: a, b, c, d
    assert got == evaluate_all([1, 0, 1, 0], [0.9, 0.2, 0.5, 0.5])


def test_missing_answers_from_python_print_one_line_without_a_source_line(tmp_path: Path) -> None:
    """Scored from a script (the Python API, no logging set up): the message alone, once."""
    script = tmp_path / "score.py"
    script.write_text(
        "from core.records import VerificationTruth\n"
        "from tasks.pan.evaluator import score_answers\n"
        "truth = {'a': VerificationTruth('a', True), 'b': VerificationTruth('b', False)}\n"
        "score_answers({'a': 0.9}, truth)\n",
        encoding="utf-8",
    )
    done = subprocess.run(
        [sys.executable, str(script)],
        cwd=REPO,
        env={**os.environ, "PYTHONPATH": str(REPO)},
        capture_output=True,
        text=True,
    )
    assert done.returncode == 0, done.stderr
    assert done.stderr.splitlines() == ["1 of 2 problems have no answer and are scored as 0.5 (non-answers)"]


def test_complete_answers_do_not_warn(caplog: pytest.LogCaptureFixture) -> None:
    with caplog.at_level(logging.WARNING, logger="harness"):
        score_answers({"d": 0.1, "c": 0.8, "b": 0.3, "a": 0.6}, TRUTH, profile="pan20")
    assert not warnings_logged(caplog)


def test_order_of_answers_does_not_matter() -> None:
    forward = score_answers({"a": 0.9, "b": 0.4, "c": 0.3, "d": 0.5}, TRUTH)
    backward = score_answers({"d": 0.5, "c": 0.3, "b": 0.4, "a": 0.9}, TRUTH)
    assert forward == backward == evaluate_all([1, 0, 1, 0], [0.9, 0.4, 0.3, 0.5])


def test_unknown_id_names_the_id_and_the_file(tmp_path: Path) -> None:
    path = tmp_path / "answers.jsonl"
    with pytest.raises(DataError, match="'zz'") as info:
        score_answers({"a": 0.9, "zz": 0.2}, TRUTH, answers_path=path)  # no such file: named, without a line
    assert info.value.path == str(path) and info.value.line is None
    assert str(info.value).startswith(str(path))
    path.write_text('{"id": "a", "value": 0.9}\n\n{"id": "zz", "value": 0.2}\n', encoding="utf-8")
    with pytest.raises(DataError, match="'zz'") as info:
        score_answers(read_answers(path), TRUTH, answers_path=path)
    assert str(info.value).startswith(f"{path}:3: field 'id': 1 answer(s) to problems not in the truth")


def test_invalid_value_in_memory_is_rejected() -> None:
    with pytest.raises(DataError, match="'a'.*got nan"):
        score_answers({"a": float("nan")}, TRUTH)


def test_unknown_profile_is_rejected() -> None:
    with pytest.raises(ValueError, match="unknown profile"):
        score_answers({"a": 0.9}, TRUTH, profile="pan19")


# ---- TIRA outputs ----------------------------------------------------------------------------


def _parse_prototext(text: str) -> dict[str, float]:
    blocks = re.findall(r'measure \{\s*key: "([^"]+)"\s*value: "([^"]+)"\s*\}', text)
    assert len(blocks) == text.count("measure {")
    return {key: float(value) for key, value in blocks}


def test_writes_out_json_and_prototext(tmp_path: Path) -> None:
    # with a measure of the harness's own, as `harness score --output` passes its task's scores
    scores = {**score_answers({"a": 0.9, "b": 0.4, "c": 0.3, "d": 0.5}, TRUTH), "c_at_1_best_band": 0.75}
    write_tira_outputs(scores, tmp_path / "out")
    # audit 8, F4: PAN's evaluator's names and measures ("c@1", "F1"; not the harness's own c_at_1_best_band)
    pan = {"auc", "c@1", "f_05_u", "F1", "brier", "overall"}
    expected = {pan_name: scores[name] for name, pan_name in PAN_OUT_NAMES.items()}
    assert set(expected) == pan
    written = json.loads((tmp_path / "out" / "out.json").read_text(encoding="utf-8"))
    assert written == expected and list(written) == ["auc", "c@1", "f_05_u", "F1", "brier", "overall"]  # full precision
    text = (tmp_path / "out" / "evaluation.prototext").read_text(encoding="utf-8")
    assert text.startswith('measure {\n  key: "auc"\n  value: "')
    assert _parse_prototext(text) == expected
    assert sorted(p.name for p in (tmp_path / "out").iterdir()) == ["evaluation.prototext", "out.json"]


def test_evaluate_answers_file_end_to_end(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    answers = _write(tmp_path / "answers.jsonl", ['{"id": "a", "value": 0.9}', '{"id": "b", "value": [0.2]}'])
    with caplog.at_level(logging.WARNING, logger="harness"):
        got = evaluate_answers_file(answers, TRUTH, tmp_path / "out", profile="pan20")
    assert ["2 of 4" in line for line in warnings_logged(caplog)] == [True]
    assert list(got) == ["auc", "c_at_1", "f1", "f_05_u", "overall"]
    written = json.loads((tmp_path / "out" / "out.json").read_text(encoding="utf-8"))
    assert written == {PAN_OUT_NAMES[name]: value for name, value in got.items()}
    assert list(written) == ["auc", "c@1", "f_05_u", "F1", "overall"]  # PAN 2020's evaluator writes no brier


@pytest.mark.parametrize(
    "lines",
    [
        ['{"id": "a", "value": 0.9}', '{"id": "zz", "value": 0.2}'],  # unknown id
        ['{"id": "a", "value": 0.9}', '{"id": "b", "value": NaN}'],
        ['{"id": "a", "value": 0.9}', "{oops"],
        ['{"id": "a", "value": 0.9}', '{"id": "a", "value": 0.2}'],
    ],
)
def test_a_failed_evaluation_leaves_no_files(tmp_path: Path, lines: list[str]) -> None:
    answers = _write(tmp_path / "answers.jsonl", lines)
    with pytest.raises(DataError):
        evaluate_answers_file(answers, TRUTH, tmp_path / "out")
    assert not (tmp_path / "out").exists() or not any((tmp_path / "out").iterdir())


def test_unwritable_scores_leave_no_files(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="finite"):
        write_tira_outputs({"auc": 0.9, "brier": float("nan")}, tmp_path)
    with pytest.raises(ValueError, match="no scores"):  # only PAN's measures are written, under PAN's names
        write_tira_outputs({'a"b': 0.9}, tmp_path)
    assert list(tmp_path.iterdir()) == []


def test_failure_writing_out_json_leaves_the_earlier_pair(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import tasks.pan.evaluator as evaluator

    write_tira_outputs({"auc": 0.9}, tmp_path)
    before = {path.name: path.read_text() for path in tmp_path.iterdir()}
    assert sorted(before) == ["evaluation.prototext", "out.json"]

    def broken_json_text(obj: object) -> str:
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(evaluator, "json_text", broken_json_text)
    with pytest.raises(HarnessError, match="No space left on device"):
        write_tira_outputs({"auc": 0.5}, tmp_path)
    assert {path.name: path.read_text() for path in tmp_path.iterdir()} == before  # no temporary, no new prototext


def test_single_problem_truth() -> None:
    truth = {"only": VerificationTruth("only", True)}
    got = score_answers({"only": 0.9}, truth)
    assert got == evaluate_all([1], [0.9])
    assert got["auc"] == 0.0 and got["c_at_1"] == 1.0  # one class: AUC undefined, PAN gives 0
    assert score_answers({}, truth)["c_at_1"] == 0.0  # the one problem unanswered


def test_evaluate_module_loads_offline(tmp_path: Path) -> None:
    pytest.importorskip("evaluate")
    module = REPO / "tasks" / "pan" / "evaluate_module" / "pan_verification"
    script = (
        "import evaluate, json\n"
        f"m = evaluate.load({str(module)!r})\n"
        "print(json.dumps(m.compute(predictions=[0.9, 0.5, 0.5, 0.2, 0.7], references=[1, 1, 0, 0, 1],"
        " profile='pan20')))\n"
    )
    # a private cache, and no network: the module must load from the local folder alone
    env = {**os.environ, "HF_HOME": str(tmp_path), "HF_EVALUATE_OFFLINE": "1", "HF_HUB_OFFLINE": "1"}
    env["HF_DATASETS_OFFLINE"] = "1"
    done = subprocess.run([sys.executable, "-c", script], env=env, cwd=tmp_path, capture_output=True, text=True)
    assert done.returncode == 0, done.stderr[-2000:]
    got = json.loads(done.stdout.strip().splitlines()[-1])
    assert got == pytest.approx(evaluate_all([1, 1, 0, 0, 1], [0.9, 0.5, 0.5, 0.2, 0.7], profile="pan20"))
