"""`core.files.paths_under`: what `Path.rglob` gives, with linked folders followed once each (audit 20, F5)."""

from __future__ import annotations

from pathlib import Path

from core.files import paths_under


def test_it_gives_what_rglob_gives_where_there_is_no_link(tmp_path: Path) -> None:
    for name in ("a/result.json", "a/b/result.json", "a/b/notes.txt", ".hidden/result.json", "c/d/e/x.txt"):
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_text("x", encoding="utf-8")
    (tmp_path / "f" / "result.json").mkdir(parents=True)  # a folder of the name, as rglob gives it too
    for pattern in ("result.json", "*.txt", "*"):
        assert paths_under(tmp_path, pattern) == sorted(tmp_path.rglob(pattern))


def test_linked_folders_are_followed_once_each(tmp_path: Path) -> None:
    (tmp_path / "elsewhere" / "run").mkdir(parents=True)
    (tmp_path / "elsewhere" / "run" / "result.json").write_text("{}", encoding="utf-8")
    (tmp_path / "runs").mkdir()
    (tmp_path / "runs" / "linked").symlink_to(tmp_path / "elsewhere")
    (tmp_path / "runs" / "linked-again").symlink_to(tmp_path / "elsewhere")
    (tmp_path / "runs" / "up").symlink_to(tmp_path / "runs")  # a loop
    (tmp_path / "runs" / "broken.txt").symlink_to(tmp_path / "nowhere.txt")

    assert paths_under(tmp_path / "runs", "result.json") == [tmp_path / "runs" / "linked" / "run" / "result.json"]
    assert sorted(tmp_path.joinpath("runs").rglob("result.json")) == []  # what was left out before
    assert paths_under(tmp_path / "runs", "*.txt") == [tmp_path / "runs" / "broken.txt"]  # a broken link is named
