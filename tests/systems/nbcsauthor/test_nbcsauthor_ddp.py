"""DDP under torchrun: two CPU processes (gloo) train the tiny multitask model to the same weights."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from helpers.paths import TESTS

WORKER = """
import json, os, sys
import torch
from harness.params import build
from systems.nbcsauthor.system import EpisodeAuthor
from helpers.darkweb_data import TINY_PARAMS, synthetic_split

torch.set_num_threads(1)
system = build(EpisodeAuthor, {**TINY_PARAMS, "training.epochs": 2})
system.fit(synthetic_split("train", multitask=True), seed=3)
weights = dict(system._encoder.named_parameters())  # BatchNorm statistics are per process: rank 0's are saved
summary = {
    "rank": int(os.environ["RANK"]),
    "world_size": system.info["world_size"],
    "batches": [e["batches"] for e in system.info["epochs"]],
    "loss": [e["loss"] for e in system.info["epochs"]],
    "checksum": float(sum(v.detach().double().abs().sum() for v in weights.values())),
}
with open(os.path.join(sys.argv[1], f"rank{summary['rank']}.json"), "w") as handle:
    json.dump(summary, handle)
"""


def test_two_gloo_processes_train_in_step(tmp_path: Path):
    script = tmp_path / "worker.py"
    script.write_text(WORKER, encoding="utf-8")
    tests_dir = TESTS  # the worker imports helpers/ from here
    env = {**os.environ, "OMP_NUM_THREADS": "1", "PYTHONPATH": os.pathsep.join([str(tests_dir.parent), str(tests_dir)])}
    command = [sys.executable, "-m", "torch.distributed.run", "--standalone", "--nproc_per_node", "2"]
    done = subprocess.run(
        [*command, str(script), str(tmp_path)], env=env, capture_output=True, text=True, timeout=120, check=False
    )
    assert done.returncode == 0, done.stderr[-3000:]
    ranks = [json.loads((tmp_path / f"rank{r}.json").read_text()) for r in (0, 1)]
    assert [r["world_size"] for r in ranks] == [2, 2]
    # each process ran half of the planned batches; the losses are averaged over both
    assert ranks[0]["batches"] == ranks[1]["batches"] and ranks[0]["loss"] == ranks[1]["loss"]
    # DDP keeps the replicas identical: same weights after training on different batches
    assert abs(ranks[0]["checksum"] - ranks[1]["checksum"]) < 1e-6 * abs(ranks[0]["checksum"])
