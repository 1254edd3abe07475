"""The README's first command, run as a new user runs it: in a clean copy of the repository, on a machine where
nothing of the project is installed (a fresh virtual environment), to the end.

Slow (a few minutes: the install of torch and transformers from the local wheels, then the headline system on the
format sample). tests/test_readme_api.py runs the README's Python API section the same way: as written.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent


def first_command(readme: str) -> str:
    """The first ```bash block under "## The two commands": the main job."""
    section = readme.split("## The two commands", 1)[1]
    block = re.search(r"```bash\n(.*?)```", section, flags=re.S)
    assert block, "the README lost its first command"
    return block.group(1).strip()


def test_the_readme_first_command_installs_and_runs_the_headline_system(tmp_path: Path) -> None:
    command = first_command((REPO / "README.md").read_text(encoding="utf-8"))
    assert "siamese_bilstm" in command and "--task pan23" in command  # the command this project is known by
    files = subprocess.run(
        ["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard"],
        cwd=REPO, capture_output=True, check=True,
    ).stdout.decode().split("\0")  # fmt: skip
    clone = tmp_path / "clone"
    for name in filter(None, files):
        source = REPO / name
        if source.is_file():
            (clone / name).parent.mkdir(parents=True, exist_ok=True)
            (clone / name).write_bytes(source.read_bytes())
    # a new user's shell: no virtual environment active, the project not importable from anywhere
    env = {key: value for key, value in os.environ.items() if key not in ("VIRTUAL_ENV", "PYTHONPATH", "PYTHONHOME")}
    env["PATH"] = os.pathsep.join(p for p in env["PATH"].split(os.pathsep) if not p.startswith(sys.prefix))
    env["PATH"] = os.pathsep.join([str(Path(sys.base_prefix) / "bin"), env["PATH"]])
    done = subprocess.run(["bash", "-c", command], cwd=clone, env=env, capture_output=True, text=True, check=False)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    assert (clone / ".venv" / "bin" / "harness").is_file()  # installed into its own environment
    (result_path,) = clone.glob("runs/pan23/pan23-format-sample/siamese_bilstm/seed-0/result.json")
    result = json.loads(result_path.read_text(encoding="utf-8"))
    assert result["system"]["name"] == "siamese_bilstm" and 0.0 <= result["scores"]["overall"] <= 1.0
    assert "main score: overall = " in done.stdout and "mean nothing" in done.stdout
