"""The encoder identity: a hash of the encoder folder's files, wherever the folder lies.

Up to this version hidden path parts were checked on the whole path, so every encoder under a hidden
directory (`~/.cache/huggingface`, a `.venv`, `~/.pyenv`: the default MiniLM package included) hashed no
file and got one identity, `LEGACY_EMPTY_IDENTITY`: the feature cache could not tell such encoders apart
and a checkpoint could not check its encoder.
"""

from __future__ import annotations

import json
import logging
import shutil
from pathlib import Path

import pytest
from helpers.paths import FIXTURES

from core.errors import HarnessError
from core.records import VerificationProblem
from toolkit.pretrained import LEGACY_EMPTY_IDENTITY, encoder_identity, identity_matches

LEGACY = FIXTURES / "siamese-legacy-checkpoint"


def test_identity_hashes_the_files_also_under_a_hidden_directory(tmp_path: Path) -> None:
    plain = tmp_path / "models" / "encoder"
    hidden = tmp_path / ".cache" / "encoder"
    for folder in (plain, hidden):
        shutil.copytree(LEGACY / "encoder", folder)
    identity = encoder_identity(plain)
    assert identity != LEGACY_EMPTY_IDENTITY
    assert encoder_identity(hidden) == identity  # the same files, the same identity, wherever they lie

    # hidden files inside the folder and README files are still not part of it
    (hidden / ".gitattributes").write_text("*.bin filter=lfs\n", encoding="utf-8")
    (hidden / ".git").mkdir()
    (hidden / ".git" / "HEAD").write_text("ref: refs/heads/main\n", encoding="utf-8")
    (hidden / "README.md").write_text("notes\n", encoding="utf-8")
    assert encoder_identity(hidden) == identity

    # other weights (here: one byte more in the config), another identity
    config = next(p for p in hidden.iterdir() if p.name == "config.json")
    config.write_text(config.read_text(encoding="utf-8") + " ", encoding="utf-8")
    assert encoder_identity(hidden) != identity


def test_identity_matches_accepts_equal_and_legacy_empty_identities_only(caplog: pytest.LogCaptureFixture) -> None:
    where = Path("ckpt")
    found = "a" * 64
    with caplog.at_level(logging.WARNING, logger="harness"):
        assert identity_matches(found, found, where=where)
        assert not caplog.records
        assert not identity_matches("b" * 64, found, where=where)
        assert identity_matches(LEGACY_EMPTY_IDENTITY, found, where=where)
    assert len(caplog.records) == 1 and "cannot be checked" in caplog.records[0].getMessage()


def _checkpoint_with_identity(tmp_path: Path, identity: str) -> Path:
    folder = tmp_path / f"checkpoint-{identity[:8]}"
    shutil.copytree(LEGACY / "checkpoint", folder)
    path = folder / "config.json"
    config = json.loads(path.read_text(encoding="utf-8"))
    config["params"]["encoder"] = str(LEGACY / "encoder")
    config["state"]["encoder_identity"] = identity
    path.write_text(json.dumps(config, indent=2), encoding="utf-8")
    return folder


def test_siamese_checkpoint_with_the_legacy_identity_loads_with_a_warning_and_another_refuses(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    pytest.importorskip("torch")
    pytest.importorskip("transformers")
    from systems.siamese_bilstm.system import SiameseBiLSTM

    monkeypatch.setenv("HARNESS_CACHE_DIR", str(tmp_path / "cache"))
    rows = json.loads((LEGACY / "problems.json").read_text(encoding="utf-8"))[:2]
    problems = [VerificationProblem(r["id"], tuple(r["texts"]), tuple(r["discourse_types"])) for r in rows]

    with caplog.at_level(logging.WARNING, logger="harness"):
        system = SiameseBiLSTM.load(_checkpoint_with_identity(tmp_path, LEGACY_EMPTY_IDENTITY))
    assert any("cannot be checked" in r.getMessage() for r in caplog.records)
    assert [a.value for a in system.predict(problems)] == pytest.approx([r["answer"] for r in rows], abs=1e-12)

    with pytest.raises(HarnessError, match="another encoder"):
        SiameseBiLSTM.load(_checkpoint_with_identity(tmp_path, "c" * 64))
