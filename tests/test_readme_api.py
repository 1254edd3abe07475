"""The README's "Python API" section, run as written: its Python blocks, in order, from a folder laid out as the
repository's root (the format sample in samples/), with the project importable as a user's install makes it."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

from helpers.paths import REPO


def python_api_code(readme: str) -> str:
    """The ```python blocks of the "## Python API" section, joined."""
    assert "\n## Python API\n" in readme, "the README lost its Python API section"
    section = readme.split("\n## Python API\n", 1)[1].split("\n## ", 1)[0]
    blocks = re.findall(r"```python\n(.*?)```", section, flags=re.S)
    assert blocks, "the Python API section has no python block"
    return "\n".join(blocks)


def test_the_readme_python_api_runs_and_scores(tmp_path: Path) -> None:
    code = python_api_code((REPO / "README.md").read_text(encoding="utf-8"))
    (tmp_path / "samples").symlink_to(REPO / "samples")  # the repository's root, but runs/ is written here
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    done = subprocess.run(
        [sys.executable, "-c", code], cwd=tmp_path, env=env, capture_output=True, text=True, check=False
    )
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    lines = done.stdout.splitlines()
    overall = float(re.fullmatch(r"overall = (\S+)", lines[0]).group(1))
    auc, c_at_1 = map(float, re.fullmatch(r"auc = (\S+), c@1 = (\S+)", lines[1]).groups())
    assert all(0.0 <= value <= 1.0 for value in (overall, auc, c_at_1))
    run_dir, run_overall = lines[2].split()
    (result,) = tmp_path.glob("runs/pan23/pan23-format-sample/cngdist@*/seed-0/result.json")
    assert (tmp_path / run_dir).resolve() == result.parent.resolve()  # relative to where it ran
    scores = json.loads(result.read_text(encoding="utf-8"))["scores"]
    # the run fits the same system on the same data: the same score as the steps above it
    assert float(run_overall) == scores["overall"] and round(scores["overall"], 4) == overall
