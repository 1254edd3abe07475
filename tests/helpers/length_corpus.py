"""A tiny pan-classic corpus in which text length tells same-author problems apart (length_ratio can learn it)."""

from __future__ import annotations

import random
from pathlib import Path


def write_corpus(folder: Path, n: int, seed: int) -> None:
    """n problems of distinct texts; same-author problems have texts of similar length (length_ratio can learn)."""
    rng = random.Random(seed)
    folder.mkdir(parents=True)
    lines = []
    for i in range(n):
        same = i % 2 == 0
        known = 200 + rng.randint(0, 50)
        unknown = known + rng.randint(-10, 10) if same else known * 3
        (folder / f"EE{i:03d}").mkdir()
        (folder / f"EE{i:03d}" / "known01.txt").write_text(f"{seed}-{i} known " + "a" * known, encoding="utf-8")
        (folder / f"EE{i:03d}" / "unknown.txt").write_text(f"{seed}-{i} unknown " + "b" * unknown, encoding="utf-8")
        lines.append(f"EE{i:03d} {'Y' if same else 'N'}\n")
    (folder / "truth.txt").write_text("".join(lines), encoding="utf-8")
