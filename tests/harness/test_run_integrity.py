"""A run folder is wholly old or wholly new, whatever crashes (issue 14, items 1, 4 and 5).

Item 1: `harness run --overwrite` onto other data is crashed at each of its writes; the folder must then
hold the old run, no result, or the whole new run, and a plain rerun must never keep mixed content.
Item 4: temporaries a killed run leaves (`.checkpoint.XXXXXXXX/`, `*.tmp`, staged run folders) are removed
by the next run of that folder, and nothing else is.
Item 5: two identical runs started together into one --out: one computes, the other waits and keeps it.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest
from helpers.paths import REPO

from core.errors import HarnessError
from harness.runner import run
from systems.baselines.cngdist import CharNgramDistance

SAMPLE = REPO / "samples" / "pan23-format-sample"
RUN = Path("pan23") / SAMPLE.name / "cngdist" / "seed-0"  # the other data has the same folder name


class InjectedCrash(RuntimeError):
    pass


def _rows(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]


def _write_rows(path: Path, rows: list[dict]) -> None:
    path.write_text("".join(json.dumps(row) + "\n" for row in rows), encoding="utf-8")


def _other_data(dst: Path) -> Path:
    """The sample less two train problems and one test problem: another fit and another test set."""
    shutil.copytree(SAMPLE, dst)
    for split, drop in (("train", 2), ("test", 1)):
        pairs = _rows(dst / split / "pairs.jsonl")[:-drop]
        kept = {row["id"] for row in pairs}
        _write_rows(dst / split / "pairs.jsonl", pairs)
        _write_rows(dst / split / "truth.jsonl", [t for t in _rows(dst / split / "truth.jsonl") if t["id"] in kept])
    return dst


def _run(data: Path, out: Path, **kwargs):
    return run(system_name="cngdist", task_name="pan23", data=data, out_dir=out, **kwargs)


def _snapshot(folder: Path) -> dict[str, bytes]:
    return {str(p.relative_to(folder)): p.read_bytes() for p in sorted(folder.rglob("*")) if p.is_file()}


def _same_run_files(folder: Path, reference: Path) -> None:
    """Everything but result.json (which holds times and a date) is byte-identical to a clean run's."""
    got = {k: v for k, v in _snapshot(folder).items() if k != "result.json"}
    want = {k: v for k, v in _snapshot(reference).items() if k != "result.json"}
    assert got == want


@pytest.fixture(scope="module")
def runs(tmp_path_factory) -> dict[str, Path]:
    """A clean run on the sample (old) and one on other data (new), each in its own --out."""
    root = tmp_path_factory.mktemp("integrity")
    other = _other_data(root / "other" / SAMPLE.name)
    _run(SAMPLE, root / "old")
    _run(other, root / "new")
    return {"other": other, "old": root / "old", "new": root / "new"}


def _fingerprint(out: Path) -> str:
    return json.loads((out / RUN / "result.json").read_text(encoding="utf-8"))["fingerprint"]


def _state(out: Path, runs: dict[str, Path]) -> str:
    """'old', 'none' or 'new'; fails on anything mixed, or on a result.json anywhere but the run folder."""
    run_dir = out / RUN
    results = sorted(out.rglob("result.json"))
    assert results in ([], [run_dir / "result.json"]), results  # none hidden in a temporary folder either
    if not results:
        return "none"
    fingerprint = _fingerprint(out)
    if fingerprint == _fingerprint(runs["old"]):
        assert _snapshot(run_dir) == _snapshot(runs["old"] / RUN)  # wholly old, result.json included
        return "old"
    assert fingerprint == _fingerprint(runs["new"])
    _same_run_files(run_dir, runs["new"] / RUN)
    return "new"


def _count_replaces(monkeypatch, out: Path, runs: dict[str, Path]) -> int:
    calls = []
    real = os.replace

    def counting(src, dst, *args, **kwargs):
        calls.append(dst)
        return real(src, dst, *args, **kwargs)

    monkeypatch.setattr(os, "replace", counting)
    _run(runs["other"], out, overwrite=True)
    monkeypatch.setattr(os, "replace", real)
    return len(calls)


def _crash_points(monkeypatch, tmp_path: Path, runs: dict[str, Path]) -> list[tuple[str, int]]:
    """Every rename a run makes (each write lands with one), crashed just before and just after it; and fit."""
    shutil.copytree(runs["old"], tmp_path / "count")
    count = _count_replaces(monkeypatch, tmp_path / "count", runs)
    assert count >= 5  # at least checkpoint, fit fingerprint, answers, details, result
    return [("fit", 0)] + [(when, k) for k in range(count) for when in ("before", "after")]


def test_overwrite_crashed_at_every_write_leaves_old_or_new_and_a_rerun_never_keeps_a_mix(
    runs, tmp_path: Path, monkeypatch
):
    seen = {}
    for when, k in _crash_points(monkeypatch, tmp_path, runs):
        out = tmp_path / f"{when}-{k}"
        shutil.copytree(runs["old"], out)
        real = os.replace
        calls = []

        def crashing(src, dst, *args, _k=k, _when=when, _real=real, _calls=calls, **kwargs):
            _calls.append(dst)
            if len(_calls) - 1 == _k and _when == "before":
                raise InjectedCrash(f"before rename to {dst}")
            done = _real(src, dst, *args, **kwargs)
            if len(_calls) - 1 == _k and _when == "after":
                raise InjectedCrash(f"after rename to {dst}")
            return done

        def crashing_fit(self, train, *, seed):
            raise InjectedCrash("in fit")

        with monkeypatch.context() as patch:
            if when == "fit":
                patch.setattr(CharNgramDistance, "fit", crashing_fit)
            else:
                patch.setattr(os, "replace", crashing)
            try:
                _run(runs["other"], out, overwrite=True)
                crashed = False
            except InjectedCrash:
                crashed = True
        state = _state(out, runs)
        seen[(when, k)] = state
        assert crashed or state == "new", (when, k)

        # a plain rerun on the old data: keeps only a wholly old run, recomputes from nothing or refuses a new one
        if state == "new":
            with pytest.raises(HarnessError, match="--overwrite"):
                _run(SAMPLE, out)
            continue
        outcome = _run(SAMPLE, out)
        assert outcome.reused == (state == "old"), (when, k, state)
        _same_run_files(out / RUN, runs["old"] / RUN)  # recomputed from the right checkpoint, or refitted
        old_scores = json.loads((runs["old"] / RUN / "result.json").read_text())["scores"]
        assert json.dumps(outcome.result["scores"]) == json.dumps(old_scores)  # as text: NaN (a one-class pair) != NaN
    assert seen[("fit", 0)] == "old"
    assert "new" in seen.values()


def test_overwrite_onto_other_data_replaces_the_whole_run(runs, tmp_path: Path):
    out = tmp_path / "out"
    shutil.copytree(runs["old"], out)
    (out / RUN / "notes.txt").write_text("mine\n", encoding="utf-8")  # a user's file in the old run
    outcome = _run(runs["other"], out, overwrite=True)
    assert not outcome.reused
    assert (out / RUN / "notes.txt").read_text(encoding="utf-8") == "mine\n"  # carried into the new run
    (out / RUN / "notes.txt").unlink()
    assert _state(out, runs) == "new"
    assert _run(runs["other"], out).reused


# --- item 4: a killed run's temporaries ------------------------------------------------------------------------

KILL_AT = """
import os, signal, sys
from pathlib import Path

real = os.replace

def replace(src, dst, *args, **kwargs):
    if Path(dst).name == sys.argv[1]:
        os.kill(os.getpid(), signal.SIGKILL)
    return real(src, dst, *args, **kwargs)

os.replace = replace
from harness.cli import main
main(sys.argv[2:])
"""


def _kill_run(at: str, data: Path, out: Path, *extra: str) -> None:
    """Run `harness run` in a child process that SIGKILLs itself just before renaming a file to the name `at`."""
    args = ["run", "--system", "cngdist", "--task", "pan23", "--data", str(data), "--out", str(out), *extra]
    env = {**os.environ, "OMP_NUM_THREADS": "1"}
    done = subprocess.run([sys.executable, "-c", KILL_AT, at, *args], env=env, capture_output=True, text=True)
    assert done.returncode == -signal.SIGKILL, done.stdout + done.stderr


def _hidden(folder: Path) -> set[str]:
    return {p.name for p in folder.iterdir() if p.name.startswith(".")}


USER_FILES = {  # near misses of the harness's own temporaries' names: never removed
    "run": [".notes.tmp", "my.tmp", ".checkpoint.mine", ".result.json.bak", ".result.json.abc.tmp"],
    "parent": [".seed-0.backup", ".seed-1.abcdefgh.new", ".seed-0.abcdefgh", "seed-0.tmp"],
}


@pytest.mark.parametrize(
    ("at", "overwrite"),
    [("checkpoint", False), ("result.json", False), ("checkpoint", True), ("result.json", True)],
)
def test_rerun_removes_what_a_killed_run_left_and_nothing_else(runs, tmp_path: Path, at: str, overwrite: bool):
    out = tmp_path / "out"
    shutil.copytree(runs["old"], out)
    run_dir = out / RUN
    for name in USER_FILES["run"]:
        (run_dir / name).write_text("mine\n", encoding="utf-8")
    for name in USER_FILES["parent"]:
        (run_dir.parent / name).write_text("mine\n", encoding="utf-8")
    before = {"run": _hidden(run_dir), "parent": _hidden(run_dir.parent)}
    if overwrite:
        _kill_run(at, runs["other"], out, "--overwrite")
    else:
        shutil.rmtree(run_dir / "checkpoint")
        (run_dir / "result.json").unlink()
        (run_dir / "checkpoint.fingerprint").unlink()
        _kill_run(at, SAMPLE, out)
    left = (_hidden(run_dir) - before["run"]) | (_hidden(run_dir.parent) - before["parent"])
    assert left  # the kill left temporaries behind

    _run(runs["other"] if overwrite else SAMPLE, out, overwrite=overwrite)
    assert _hidden(run_dir) == before["run"]
    assert _hidden(run_dir.parent) == before["parent"]
    for name in USER_FILES["parent"]:
        assert (run_dir.parent / name).read_text(encoding="utf-8") == "mine\n"


def test_a_run_killed_between_the_renames_of_its_swap_gets_the_old_run_back(runs, tmp_path: Path, monkeypatch):
    out = tmp_path / "out"
    shutil.copytree(runs["old"], out)
    run_dir = out / RUN
    (run_dir / "notes.txt").write_text("mine\n", encoding="utf-8")
    _kill_run("seed-0", runs["other"], out, "--overwrite")  # the old run is set aside, the new not yet in place
    assert not run_dir.exists()
    assert not list(out.rglob("result.json"))  # no result waits in a hidden folder for the leaderboard

    def no_refit(self, train, *, seed):
        raise AssertionError("the restored run resumes from its checkpoint")

    monkeypatch.setattr(CharNgramDistance, "fit", no_refit)
    outcome = _run(SAMPLE, out)  # the old run comes back without its result and resumes from its checkpoint
    assert not outcome.reused
    assert (run_dir / "notes.txt").read_text(encoding="utf-8") == "mine\n"
    (run_dir / "notes.txt").unlink()
    _same_run_files(run_dir, runs["old"] / RUN)
    assert _hidden(run_dir.parent) == {".seed-0.lock"}


# --- item 5: two runs of one folder at once ---------------------------------------------------------------------


def test_two_identical_runs_at_once_one_computes_and_the_other_keeps_it(tmp_path: Path, monkeypatch):
    fits = []
    real_fit = CharNgramDistance.fit

    def slow_fit(self, train, *, seed):
        fits.append(threading.get_ident())
        time.sleep(1.0)  # long enough for the other run to arrive while this one works
        return real_fit(self, train, seed=seed)

    monkeypatch.setattr(CharNgramDistance, "fit", slow_fit)
    outcomes, errors = [], []

    def one_run():
        try:
            outcomes.append(_run(SAMPLE, tmp_path))
        except BaseException as error:  # noqa: BLE001 - reported below
            errors.append(error)

    threads = [threading.Thread(target=one_run) for _ in range(2)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=120)
    assert not errors, errors
    assert sorted(outcome.reused for outcome in outcomes) == [False, True]
    assert len(fits) == 1
    assert outcomes[0].result["fingerprint"] == outcomes[1].result["fingerprint"]


def test_a_run_held_by_another_process_says_so_after_the_timeout(tmp_path: Path):
    from filelock import FileLock

    from harness.runner import run_lock_path

    run_dir = tmp_path / RUN
    run_dir.parent.mkdir(parents=True)
    hold = (
        "import time\nfrom filelock import FileLock\n"
        f"with FileLock({str(run_lock_path(run_dir))!r}):\n    print('held', flush=True)\n    time.sleep(60)\n"
    )
    holder = subprocess.Popen([sys.executable, "-c", hold], stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout.readline().strip() == "held"
        with pytest.raises(HarnessError, match="another process"):
            _run(SAMPLE, tmp_path, lock_timeout=0.5)
        assert not (run_dir / "result.json").exists()
    finally:
        holder.kill()
        holder.wait()
    assert FileLock(str(run_lock_path(run_dir))).acquire(timeout=5)  # released with its holder


def test_a_run_whose_checkpoint_folder_was_removed_fits_again(runs, tmp_path: Path, caplog):
    """Before: a rerun found the fingerprint, tried to resume, and stopped at 'no such checkpoint folder'."""
    out = tmp_path / "out"
    shutil.copytree(runs["old"], out)
    run_dir = out / RUN
    (run_dir / "result.json").unlink()  # unfinished: it resumes, or fits
    shutil.rmtree(run_dir / "checkpoint")
    with caplog.at_level("WARNING", logger="harness"):
        outcome = _run(SAMPLE, out)
    assert not outcome.reused and (run_dir / "checkpoint").is_dir() and (run_dir / "result.json").is_file()
    assert "checkpoint is gone, though its fingerprint is there: fitting again" in caplog.text
    _same_run_files(run_dir, runs["old"] / RUN)


def test_a_checkpoint_fitted_with_other_parameters_is_not_resumed(runs, tmp_path: Path, caplog):
    """A checkpoint copied into an unfinished run (its fingerprint kept) was resumed, and its answers recorded under
    this run's parameters (audit 3, finding 7)."""
    other_params = tmp_path / "other"
    done = _run(SAMPLE, other_params, params={"ngram_size": 3})
    out = tmp_path / "out"
    shutil.copytree(runs["old"], out)
    run_dir = out / RUN
    (run_dir / "result.json").unlink()  # unfinished: a rerun resumes from its checkpoint
    shutil.rmtree(run_dir / "checkpoint")
    shutil.copytree(done.run_dir / "checkpoint", run_dir / "checkpoint")
    with caplog.at_level("WARNING", logger="harness"):
        _run(SAMPLE, out)
    assert "was fitted with other parameters than this run's (ngram_size): fitting again" in caplog.text
    _same_run_files(run_dir, runs["old"] / RUN)  # the default fit's checkpoint and answers, as a clean run's
