"""An output the OS refuses to write (disk full, file too large) is one line, not a traceback (reliability issue,
item 6: `OSError: [Errno 28]` at toolkit/checkpoint.py with a 24 KB tmpfs as `--out`).

A tmpfs cannot be mounted here: the commands run in a subprocess whose files may grow to a few bytes only
(RLIMIT_FSIZE, with SIGXFSZ ignored, so a write past it fails with EFBIG, as one past a full disk fails with
ENOSPC); the library tests raise ENOSPC itself. Each failure: exit code 2, one `error:` line on stderr naming the
file and the OS's reason, no traceback, no half-written file, and what was there before is kept.
"""

from __future__ import annotations

import errno
import json
import os
import resource
import signal
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from helpers.paths import REPO, SAMPLE
from helpers.refusals import error_line

from core.errors import HarnessError, OutputError
from core.files import atomic_write, staged_folder, write_json
from toolkit.checkpoint import save_checkpoint

RUN = Path("pan23") / SAMPLE.name


def harness(*args: object, max_file_bytes: int | None = None) -> subprocess.CompletedProcess:
    """`python -m harness.cli ARGS` in a subprocess; with `max_file_bytes`, no file it writes may grow past that."""

    def limit_files() -> None:
        signal.signal(signal.SIGXFSZ, signal.SIG_IGN)  # the write fails with EFBIG instead of killing the process
        resource.setrlimit(resource.RLIMIT_FSIZE, (max_file_bytes, max_file_bytes))

    return subprocess.run(
        [sys.executable, "-m", "harness.cli", *map(str, args)],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=300,
        preexec_fn=limit_files if max_file_bytes is not None else None,
    )


def files_under(folder: Path) -> dict[str, bytes]:
    return {str(p.relative_to(folder)): p.read_bytes() for p in sorted(folder.rglob("*")) if p.is_file()}


def hidden(folder: Path) -> list[str]:
    """Temporaries (`.NAME.XXXXXXXX.tmp`, staging folders) anywhere under `folder`; run locks are not."""
    return [str(p.relative_to(folder)) for p in folder.rglob(".*") if not p.name.endswith(".lock")]


def test_a_checkpoint_that_does_not_fit_is_one_line_and_leaves_nothing(tmp_path: Path) -> None:
    out = tmp_path / "out"
    done = harness("run", "--system", "cngdist", "--task", "pan23", "--data", SAMPLE, "--out", out,
                   max_file_bytes=24 * 1024)  # fmt: skip
    run_dir = out / RUN / "cngdist" / "seed-0"
    assert error_line(done) == f"error: {run_dir}/checkpoint/config.json: cannot be written: File too large"
    assert files_under(out) == {str(RUN / "cngdist" / ".seed-0.lock"): b""}  # no checkpoint, result or answers
    assert hidden(out) == []  # no staging folder left behind
    rerun = harness("run", "--system", "cngdist", "--task", "pan23", "--data", SAMPLE, "--out", out)
    assert rerun.returncode == 0, rerun.stderr
    assert (run_dir / "result.json").is_file()


def test_a_result_that_does_not_fit_leaves_no_result_and_the_rerun_resumes(tmp_path: Path) -> None:
    """compressor's checkpoint, answers and details are under 3000 bytes each, its result.json is not."""
    out = tmp_path / "out"
    args = ("run", "--system", "compressor", "--task", "pan23", "--data", SAMPLE, "--out", out)
    done = harness(*args, max_file_bytes=3000)
    run_dir = out / RUN / "compressor" / "seed-0"
    assert error_line(done) == f"error: {run_dir}/result.json: cannot be written: File too large"
    assert not (run_dir / "result.json").exists()
    assert hidden(out) == []  # no .result.json.XXXXXXXX.tmp
    rerun = harness(*args)
    assert rerun.returncode == 0, rerun.stderr
    assert "resuming from the fitted checkpoint" in rerun.stderr
    assert (run_dir / "result.json").is_file()


def test_answers_that_do_not_fit_keep_the_earlier_answers(tmp_path: Path) -> None:
    out = tmp_path / "out"
    fitted = harness("run", "--system", "cngdist", "--task", "pan23", "--data", SAMPLE, "--out", out)
    assert fitted.returncode == 0, fitted.stderr
    checkpoint = out / RUN / "cngdist" / "seed-0" / "checkpoint"
    answers = tmp_path / "predicted" / "answers.jsonl"
    answers.parent.mkdir()
    answers.write_bytes(b'{"id": "earlier", "value": 0.5}\n')
    before = files_under(tmp_path / "predicted")
    done = harness(
        *("predict", "--system", "cngdist", "--task", "pan23", "--input", SAMPLE / "test", "--checkpoint", checkpoint),
        *("--output", answers.parent, "--overwrite"),
        max_file_bytes=100,  # 8 answers take some 300 bytes
    )
    assert error_line(done) == f"error: {answers}: cannot be written: File too large"
    assert files_under(tmp_path / "predicted") == before
    assert hidden(tmp_path / "predicted") == []


def test_a_pairs_dataset_that_does_not_fit_leaves_no_folder(tmp_path: Path) -> None:
    texts = tmp_path / "texts.jsonl"
    rows = [
        {"author": f"a{a}", "text": f"text {i} of a{a} as {kind}, written with care", "discourse_type": kind}
        for a in range(8)
        for kind in ("email", "essay")
        for i in range(3)
    ]
    texts.write_text("".join(json.dumps(row) + "\n" for row in rows), encoding="utf-8")
    out = tmp_path / "out"
    line = error_line(harness("pairs", "--from", "jsonl", texts, out, "--pairs", 8, max_file_bytes=200))
    assert line == f"error: {out / 'train' / 'pairs.jsonl'}: cannot be written: File too large"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["texts.jsonl"]  # no dataset, no staging folder


# -- the writers themselves, on a full disk (ENOSPC) ---------------------------------------------------------------


def no_space(*args: object, **kwargs: object) -> None:
    raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))


def test_atomic_write_on_a_full_disk_keeps_the_earlier_file(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = tmp_path / "result.json"
    path.write_text("earlier\n", encoding="utf-8")
    monkeypatch.setattr("core.files.os.fsync", no_space)
    with pytest.raises(OutputError) as caught:
        write_json(path, {"scores": {"auc": 0.5}})
    assert str(caught.value) == f"{path}: cannot be written: No space left on device"
    assert isinstance(caught.value, HarnessError)  # the CLI's one-line error
    assert path.read_text(encoding="utf-8") == "earlier\n"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["result.json"]


def test_an_error_of_the_writer_itself_is_not_called_a_full_disk(tmp_path: Path) -> None:
    """Only the OS refusing the write becomes an OutputError: another file's error or a bug stays what it is."""
    with pytest.raises(FileNotFoundError), atomic_write(tmp_path / "out.txt") as handle:
        handle.write("x")
        (tmp_path / "absent.txt").read_text(encoding="utf-8")
    with pytest.raises(ValueError), atomic_write(tmp_path / "out.txt") as handle:
        raise ValueError("a bug")
    assert list(tmp_path.iterdir()) == []


def test_a_staged_folder_on_a_full_disk_is_one_line_and_leaves_the_old_folder(tmp_path: Path) -> None:
    target = tmp_path / "checkpoint"
    target.mkdir()
    (target / "config.json").write_text("old\n", encoding="utf-8")
    with pytest.raises(OutputError) as caught, staged_folder(target) as staging:
        (staging / "part").write_text("new\n", encoding="utf-8")
        no_space()
    assert str(caught.value) == f"{target}: cannot be written: No space left on device"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["checkpoint"]
    assert (target / "config.json").read_text(encoding="utf-8") == "old\n"


def test_a_checkpoint_on_a_full_disk_names_its_weights_file(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """safetensors reports the OS's error as its own ("... (os error 28)"); it is an OutputError all the same."""

    def save_file(*args: object, **kwargs: object) -> None:
        raise RuntimeError("Error while serializing: I/O error: No space left on device (os error 28)")

    monkeypatch.setattr("safetensors.numpy.save_file", save_file)
    target = tmp_path / "checkpoint"
    with pytest.raises(OutputError) as caught:
        save_checkpoint(target, system="toy", params={}, state={}, arrays={"w": np.zeros(3)})
    assert str(caught.value) == f"{target / 'weights.safetensors'}: cannot be written: No space left on device"
    assert list(tmp_path.iterdir()) == []
