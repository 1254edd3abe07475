"""PAN 2013 English verification (10 training, 30 test problems) as a pan-classic data folder, for tests."""

from __future__ import annotations

import tarfile
from pathlib import Path

import pytest


def write_pan13_english(folder: Path) -> Path:
    """`folder/train` and `folder/test`: the English problems, linked, with their truth lines; skip if absent."""
    from helpers.paths import SHARED_DATA

    archive = SHARED_DATA / "pan13-av-en.tar.gz"
    if not archive.is_file():
        pytest.skip(f"{archive} not found (set HARNESS_SHARED_DATA)")
    with tarfile.open(archive) as tar:
        tar.extractall(folder / "extracted", filter="data")
    for corpus in (p.parent for p in (folder / "extracted").rglob("truth.txt")):
        split = folder / corpus.parent.name  # train or test
        split.mkdir()
        # truth.txt also lists Greek and Spanish problems whose folders are not in the English archive
        lines = [line.split() for line in (corpus / "truth.txt").read_text(encoding="utf-8-sig").splitlines()]
        kept = [(name, label) for name, label in (line for line in lines if line) if (corpus / name).is_dir()]
        for name, _ in kept:
            (split / name).symlink_to(corpus / name, target_is_directory=True)
        (split / "truth.txt").write_text("".join(f"{name} {label}\n" for name, label in kept), encoding="utf-8")
    return folder
