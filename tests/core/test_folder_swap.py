"""One atomic folder writer (core.files): a folder is built beside its target and swapped in whole, or not at all."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from core.errors import OutputError
from core.files import find_temporaries, folder_temporaries, staged_folder, swap_folder


def contents(folder: Path) -> dict[str, str]:
    return {str(p.relative_to(folder)): p.read_text() for p in sorted(folder.rglob("*")) if p.is_file()}


def test_a_staged_folder_replaces_the_old_one_whole(tmp_path: Path) -> None:
    target = tmp_path / "checkpoint"
    target.mkdir()
    (target / "old.txt").write_text("old")
    with staged_folder(target) as staging:
        assert staging.parent == tmp_path and staging != target
        (staging / "config.json").write_text("new")
        assert contents(target) == {"old.txt": "old"}  # nothing visible until the block ends
    assert contents(target) == {"config.json": "new"}
    assert find_temporaries(tmp_path, folder_temporaries("checkpoint")) == []


def test_a_failure_inside_leaves_the_old_folder_and_no_temporaries(tmp_path: Path) -> None:
    target = tmp_path / "checkpoint"
    target.mkdir()
    (target / "old.txt").write_text("old")
    # the OS refusing a write is the CLI's one-line OutputError (naming the folder), no longer the bare OSError
    with pytest.raises(OutputError, match="cannot be written: disk full"), staged_folder(target) as staging:
        (staging / "config.json").write_text("half")
        raise OSError(28, "disk full")
    assert contents(target) == {"old.txt": "old"}
    assert sorted(p.name for p in tmp_path.iterdir()) == ["checkpoint"]


def test_a_failed_swap_puts_the_old_folder_back(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    target, staged = tmp_path / "run", tmp_path / ".run.12345678.new"
    target.mkdir()
    staged.mkdir()
    (target / "old.txt").write_text("old")
    real_replace, calls = os.replace, []

    def second_rename_fails(src: Path, dst: Path) -> None:
        calls.append(src)
        if len(calls) == 2:
            raise OSError(5, "I/O error")
        real_replace(src, dst)

    monkeypatch.setattr(os, "replace", second_rename_fails)
    with pytest.raises(OSError, match="I/O error"):
        swap_folder(staged, target)
    monkeypatch.setattr(os, "replace", real_replace)
    assert contents(target) == {"old.txt": "old"} and staged.is_dir()


def test_a_swap_onto_nothing_is_a_rename(tmp_path: Path) -> None:
    staged = tmp_path / ".run.12345678.new"
    staged.mkdir()
    (staged / "a.txt").write_text("a")
    assert swap_folder(staged, tmp_path / "run") is None
    assert contents(tmp_path / "run") == {"a.txt": "a"} and not staged.exists()


def test_a_new_folder_is_never_written_over_even_one_filled_while_staging(tmp_path: Path) -> None:
    from core.errors import HarnessError

    used = tmp_path / "used"
    used.mkdir()
    (used / "notes.txt").write_text("keep me")
    with pytest.raises(HarnessError, match="not empty"), staged_folder(used, new=True):
        pass  # refused before anything is staged
    target = tmp_path / "model"
    with pytest.raises(HarnessError, match="not empty"), staged_folder(target, new=True) as staging:
        (staging / "config.json").write_text("new")
        target.mkdir()  # a user's folder appears while the long job writes
        (target / "notes.txt").write_text("keep me")
    assert contents(target) == {"notes.txt": "keep me"} and contents(used) == {"notes.txt": "keep me"}
    assert sorted(p.name for p in tmp_path.iterdir()) == ["model", "used"]  # no staging left
    empty = tmp_path / "empty"
    empty.mkdir()
    with staged_folder(empty, new=True) as staging:  # an empty folder is taken, as a missing one is
        (staging / "config.json").write_text("new")
    assert contents(empty) == {"config.json": "new"}


def test_what_a_killed_writer_left_beside_the_target_goes_with_the_next_one(tmp_path: Path) -> None:
    """Was: a `pretrain-style` killed while its model moved in left a whole hidden copy that nothing removed."""
    target = tmp_path / "encoder"
    staged, set_aside = tmp_path / ".encoder.abcd1234.new", tmp_path / ".encoder.efgh5678.old"
    for left in (staged, set_aside):
        left.mkdir()
        (left / "model.safetensors").write_text("a killed writer's")
    (tmp_path / ".encoder.notes").write_text("the user's")  # not a name the writer makes: kept
    with staged_folder(target, new=True) as staging:
        (staging / "model.safetensors").write_text("new")
    assert sorted(p.name for p in tmp_path.iterdir()) == [".encoder.notes", "encoder"]
    assert contents(target) == {"model.safetensors": "new"}
