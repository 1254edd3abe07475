"""How long `harness leaderboard` takes on hundreds of result files.

Builds result files from the 13 real PAN 2020 submissions (`harness score --record`), copies them
as seeds until there are N files, then times the leaderboard command in a fresh process (start-up
included), with and without bootstrap intervals.

    python benchmarks/leaderboard_speed.py [--files 325] [--data ../shared/data]
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    default_data = Path(os.environ.get("HARNESS_SHARED_DATA", Path(__file__).resolve().parents[2] / "shared" / "data"))
    parser.add_argument("--data", type=Path, default=default_data)
    parser.add_argument("--files", type=int, default=325)
    args = parser.parse_args()
    pan20 = args.data / "pan20-av-scored"

    with tempfile.TemporaryDirectory() as tmp:
        base = Path(tmp) / "base"
        for answers in sorted((pan20 / "answers").glob("*.jsonl.gz")):
            team = answers.name.removesuffix(".jsonl.gz")
            subprocess.run(
                ["harness", "score", "--task", "pan23", "--truth", str(pan20 / "truth.jsonl.gz"),
                 "--answers", str(answers), "--output", str(Path(tmp) / "eval" / team),
                 "--record", str(base / team), "--system-name", team],
                check=True, capture_output=True,
            )  # fmt: skip
        teams = sorted(base.iterdir())
        runs = Path(tmp) / "runs"
        for i in range(args.files):
            team = teams[i % len(teams)]
            target = runs / team.name / f"seed-{i // len(teams)}"
            shutil.copytree(team, target)
            result = json.loads((target / "result.json").read_text(encoding="utf-8"))
            result["seeds"]["seed"] = i // len(teams)
            (target / "result.json").write_text(json.dumps(result), encoding="utf-8")
        print(f"{args.files} result files, {len(teams)} systems, {args.files // len(teams)} seeds each")
        for label, extra in (("leaderboard", []), ("leaderboard --ci --resamples 200", ["--ci", "--resamples", "200"])):
            start = time.perf_counter()
            subprocess.run(["harness", "leaderboard", str(runs), *extra], check=True, capture_output=True)
            print(f"{label:<36} {time.perf_counter() - start:6.2f} s (fresh process, start-up included)")


if __name__ == "__main__":
    sys.exit(main())
