"""Two users of one machine (a shared server): the lock files the harness keeps outside a user's folder do not stop
the second user's commands."""

from __future__ import annotations

import os
import shutil
import subprocess
import tempfile
from pathlib import Path

import numpy
import pytest
from click.testing import CliRunner

from harness.cli import main

REPO = Path(__file__).resolve().parents[2]
SAMPLE = REPO / "samples" / "pan23-format-sample"
SYSTEM_PYTHON = Path("/usr/bin/python3")  # sys.executable may live where another user cannot read (/root/.pyenv)
OTHER_USER = 65534  # nobody
AS_OTHER_USER = f"""
import sys
sys.path[:0] = [{str(REPO)!r}, {str(Path(numpy.__file__).resolve().parents[1])!r}]
from harness.cli import main
main(sys.argv[1:], prog_name="harness")
"""


def as_other_user(args: list[str], tmp: Path) -> subprocess.CompletedProcess:
    env = {"PATH": "/usr/bin:/bin", "HOME": str(tmp), "TMPDIR": str(tmp), "HF_HUB_OFFLINE": "1"}
    return subprocess.run([str(SYSTEM_PYTHON), "-c", AS_OTHER_USER, *args], env=env, capture_output=True, text=True,
                          timeout=300, user=OTHER_USER, group=OTHER_USER, extra_groups=[])  # fmt: skip


@pytest.fixture
def shared_tmp():
    """A temporary folder every user may write, as /tmp is (pytest's own is its user's alone)."""
    folder = Path(tempfile.mkdtemp(prefix="harness-two-users-", dir="/tmp"))
    folder.chmod(0o1777)
    yield folder
    shutil.rmtree(folder, ignore_errors=True)


@pytest.mark.skipif(os.geteuid() != 0, reason="running a command as another user needs root")
def test_a_second_user_writes_a_leaderboard_after_the_first(shared_tmp: Path, monkeypatch: pytest.MonkeyPatch):
    """Was: the first user's command made TMPDIR/harness-locks theirs (mode 755), and every other user's leaderboard,
    plot, pairs, predict and score --record was refused ('harness-locks/<hash>.lock: cannot be written')."""
    if not SYSTEM_PYTHON.exists():
        pytest.skip(f"no {SYSTEM_PYTHON} for the other user")
    probe = as_other_user(["--version"], shared_tmp)
    if probe.returncode != 0:
        pytest.skip(f"the other user cannot run the harness here: {probe.stderr.strip()[-300:]}")
    monkeypatch.setattr(tempfile, "tempdir", str(shared_tmp))
    runs = shared_tmp / "runs"
    for args in (
        ["run", "--system", "length_ratio", "--task", "pan23", "--data", str(SAMPLE), "--out", str(runs)],
        ["leaderboard", str(runs), "--output", str(shared_tmp / "first.md")],  # the first user's lock folder
    ):
        result = CliRunner().invoke(main, args, catch_exceptions=False)
        assert result.exit_code == 0, result.output
    for path in [runs, *runs.rglob("*")]:  # the runs readable, as a shared project folder's are
        path.chmod(0o777 if path.is_dir() else 0o666)
    second = as_other_user(["leaderboard", str(runs), "--output", str(shared_tmp / "second.md")], shared_tmp)
    assert second.returncode == 0, second.stderr
    assert "length_ratio" in (shared_tmp / "second.md").read_text(encoding="utf-8")


def test_a_lock_file_that_cannot_be_opened_is_one_line(tmp_path: Path):
    """Was a traceback (PermissionError, IsADirectoryError from filelock) where the lock file could not be opened."""
    from core.files import outside_lock_path

    runs = tmp_path / "runs"
    code = CliRunner().invoke(main, ["run", "--system", "length_ratio", "--task", "pan23", "--data", str(SAMPLE),
                                     "--out", str(runs)], catch_exceptions=False).exit_code  # fmt: skip
    assert code == 0
    board = tmp_path / "board.md"
    lock = outside_lock_path(board)
    lock.mkdir(parents=True)  # a folder where the lock file goes
    try:
        result = CliRunner().invoke(main, ["leaderboard", str(runs), "--output", str(board)])
    finally:
        lock.rmdir()
    assert result.exit_code == 2 and not isinstance(result.exception, OSError), result.output
    assert f"error: {lock}: cannot be written: Is a directory" in result.output
    assert not board.exists()
