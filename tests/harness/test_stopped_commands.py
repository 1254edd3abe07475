"""What a stopped command leaves (audit 4): SIGTERM, which `timeout`, `docker stop`, TIRA and batch schedulers send,
stops a command through its clean-up as Ctrl-C does; what a command killed outright (SIGKILL, out of memory) left
is removed by the next command that writes there."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from click.testing import CliRunner

from harness.cli import Terminated, _sigterm_stops_like_ctrl_c, main

REPO = Path(__file__).resolve().parents[2]
SAMPLE = REPO / "samples" / "pan23-format-sample"


def invoke(*args: object) -> tuple[int, str]:
    result = CliRunner().invoke(main, [str(a) for a in args], catch_exceptions=False)
    return result.exit_code, result.output


@pytest.fixture(scope="module")
def runs(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("runs")
    code, text = invoke("run", "--system", "cngdist", "--task", "pan23", "--data", SAMPLE, "--out", out)
    assert code == 0, text
    return out / "pan23"


def test_sigterm_raises_where_the_command_is_so_its_clean_up_runs():
    before = signal.getsignal(signal.SIGTERM)
    cleaned = False
    with pytest.raises(Terminated) as stopped, _sigterm_stops_like_ctrl_c():
        try:
            os.kill(os.getpid(), signal.SIGTERM)
            time.sleep(10)  # interrupted at once
        finally:
            cleaned = True
    assert stopped.value.code == 143 and cleaned
    assert signal.getsignal(signal.SIGTERM) == before  # put back when the command ends


# `harness plot` whose figures stay in their staging folder until it is stopped: a plot that finished between the
# test seeing that folder and the signal made the test flaky (returncode 0 where 143 was expected)
_PLOT_HELD_IN_STAGING = """
import signal, sys, time
import harness.plotting
from harness.cli import main

draw = harness.plotting.plot_verification_curves

def drawn_then_held(runs, staging):
    drawn = draw(runs, staging)
    print("staged", flush=True)
    while True:
        time.sleep(0.05)

harness.plotting.plot_verification_curves = drawn_then_held
signal.signal(signal.SIGINT, signal.default_int_handler)  # a shell's background job starts with Ctrl-C ignored
main(sys.argv[1:])
"""


@pytest.mark.parametrize(
    ("stop", "status", "said"),
    [(signal.SIGTERM, 143, "error: stopped by SIGTERM"), (signal.SIGINT, 130, "error: stopped by Ctrl-C")],
)
def test_a_plot_stopped_leaves_no_staging_folder_and_says_why(runs: Path, tmp_path: Path, stop, status, said):
    """Was: `.figures.XXXXXXXX.new` with a 0-byte PDF left in the user's --out, and kept by every later plot; and
    Ctrl-C ended with click's "Aborted!" and status 1, a failure to a script, not 130 (audit 21, F5)."""
    out = tmp_path / "figures"
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    plot = subprocess.Popen([sys.executable, "-c", _PLOT_HELD_IN_STAGING, "plot", str(runs), "--out", str(out)],
                            env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)  # fmt: skip
    if plot.stdout.readline().strip() != "staged":
        pytest.fail(f"the plot ended before its figures were staged: {plot.communicate()}")
    assert [p.name for p in out.glob(".figures.*.new")], "no staging folder while the plot is held in it"
    plot.send_signal(stop)
    _, stderr = plot.communicate(timeout=60)
    assert plot.returncode == status and said in stderr, stderr
    leftovers = [p.name for p in out.iterdir() if p.name.startswith(".")] if out.exists() else []
    assert leftovers == []


def test_what_a_killed_plot_or_leaderboard_left_goes_with_the_next(runs: Path, tmp_path: Path):
    out = tmp_path / "figures"
    left = out / ".figures.abcd1234.new"
    left.mkdir(parents=True)
    (left / "roc.pdf").write_bytes(b"")  # as a SIGKILL leaves it: the clean-up never ran
    mine = out / ".figures.mine"  # not a name the harness makes: the user's, kept
    mine.mkdir()
    code, text = invoke("plot", runs, "--out", out)
    assert code == 0, text
    assert not left.exists() and mine.is_dir() and list(out.glob("*.pdf"))
    board = tmp_path / "tables" / "board.md"
    board.parent.mkdir()
    temporary = board.parent / ".board.md.abcd1234.tmp"
    temporary.write_text("half a table", encoding="utf-8")
    code, text = invoke("leaderboard", runs, "--output", board)
    assert code == 0, text
    assert not temporary.exists() and "cngdist" in board.read_text(encoding="utf-8")


def _sleep(seconds: float) -> float:
    time.sleep(seconds)
    return seconds


def test_stopping_a_pool_ends_its_running_workers():
    """Was: SIGTERM to `pretrain-style --band-folds K --jobs N` left its workers alive, holding their fold's posts."""
    import multiprocessing
    from concurrent.futures import ProcessPoolExecutor

    from systems.style_encoder.fold_jobs import _stop_workers

    started = time.monotonic()
    with ProcessPoolExecutor(2, mp_context=multiprocessing.get_context("spawn")) as pool:
        futures = [pool.submit(_sleep, 60) for _ in range(3)]
        time.sleep(1)
        workers = list(pool._processes.values())
        _stop_workers(pool)
        pool.shutdown(cancel_futures=True)
    for worker in workers:
        worker.join(timeout=10)
    assert all(not worker.is_alive() for worker in workers) and time.monotonic() - started < 30
    assert all(future.done() for future in futures)


_ORPHAN_PARENT = """
import multiprocessing, sys, time
from pathlib import Path

def worker(ready):
    import logging
    from systems.style_encoder.fold_jobs import _start_worker
    _start_worker(Path(ready), 1, logging.WARNING)  # what each --jobs worker runs first
    Path(ready).write_text("ready")
    time.sleep(120)

if __name__ == "__main__":
    process = multiprocessing.get_context("spawn").Process(target=worker, args=(sys.argv[1],))
    process.start()
    print(process.pid, flush=True)
    time.sleep(120)
"""


def _ended(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except (FileNotFoundError, ProcessLookupError):
        return True
    return state in ("Z", "X")  # a zombie has ended; whether its new parent reaps it is not ours


@pytest.mark.skipif(not Path("/proc").is_dir(), reason="reads process states from /proc")
def test_a_pre_training_worker_ends_when_its_command_is_killed(tmp_path: Path):
    """Was (audit 10, F7): SIGKILL of `pretrain-style --jobs N` (the OOM killer's, `kill -9`) left its workers alive
    for good, holding their fold's posts and model."""
    ready = tmp_path / "ready"
    script = tmp_path / "parent.py"
    script.write_text(_ORPHAN_PARENT, encoding="utf-8")
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    parent = subprocess.Popen([sys.executable, str(script), str(ready)], stdout=subprocess.PIPE, text=True, env=env)
    worker = int(parent.stdout.readline())
    deadline = time.monotonic() + 60
    while not ready.exists() and time.monotonic() < deadline:
        time.sleep(0.1)
    assert ready.exists() and not _ended(worker)
    parent.kill()
    parent.wait()
    deadline = time.monotonic() + 20
    while not _ended(worker) and time.monotonic() < deadline:
        time.sleep(0.2)
    ended = _ended(worker)
    if not ended:
        os.kill(worker, signal.SIGKILL)
    assert ended


def test_files_that_belong_together_all_go_in_before_a_sigterm_is_taken(tmp_path: Path, monkeypatch):
    """Was: a predict stopped between its two renames left answers.jsonl of one input beside answers.txt of
    another; a score, an evaluation.prototext beside another's out.json; a convert, truth without its pairs."""
    from core.files import atomic_writes

    for name in ("answers.jsonl", "answers.txt"):
        (tmp_path / name).write_text("old", encoding="utf-8")
    replace = os.replace

    def replace_then_sigterm(source, target):  # a SIGTERM between the first rename and the second
        replace(source, target)
        os.kill(os.getpid(), signal.SIGTERM)

    monkeypatch.setattr(os, "replace", replace_then_sigterm)
    files = [tmp_path / "answers.jsonl", tmp_path / "answers.txt"]
    with pytest.raises(Terminated), _sigterm_stops_like_ctrl_c(), atomic_writes(files) as handles:
        for handle in handles:
            handle.write("new")
    assert {p.name: p.read_text(encoding="utf-8") for p in tmp_path.iterdir()} == {
        "answers.jsonl": "new",
        "answers.txt": "new",
    }
