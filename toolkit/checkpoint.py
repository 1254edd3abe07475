"""Checkpoints: a folder with `config.json` (names, parameters, small state) and
`weights.safetensors` (arrays). No pickle anywhere, so a checkpoint from a stranger is safe to load.

A checkpoint is an input like any other: `config.json` records checksums of its content (format,
system, parameters, fitted state) and of the weights file, and `load_checkpoint` refuses a checkpoint
that does not match them, or that cannot be read, in one line naming the file. Paths and devices
(`RUNTIME_SETTINGS`) are recorded with the parameters for provenance but are settings of the machine
that loads a checkpoint, not of the checkpoint: `runtime_params` replaces them when a system is loaded.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import numpy as np

from core.errors import DataError, HarnessError, OutputError
from core.files import file_sha256, give_open_permissions, parse_json, staged_folder
from harness.runtime import RUNTIME_SETTINGS

CONFIG_NAME = "config.json"
WEIGHTS_NAME = "weights.safetensors"
CHECKPOINT_FORMAT = 1
CHECKSUMS_KEY = "checksums"
CONTENT_CHECKSUM = "content"  # of format, system, params and state, as canonical JSON
REFIT = "refit it (harness run --overwrite)"


def save_checkpoint(
    directory: Path,
    *,
    system: str,
    params: dict[str, Any],
    state: dict[str, Any],
    arrays: dict[str, np.ndarray] | None = None,
) -> None:
    """Write a checkpoint folder atomically: built beside the target, then renamed into place.

    config.json records the checksums `load_checkpoint` checks: of the content (read back as JSON,
    so what is hashed is what a reader sees) and of the weights file, where there are arrays.
    """
    from safetensors.numpy import save_file

    with staged_folder(Path(directory)) as staging:
        config: dict[str, Any] = {"format": CHECKPOINT_FORMAT, "system": system, "params": params, "state": state}
        checksums = {CONTENT_CHECKSUM: _content_checksum(json.loads(json.dumps(config)))}
        if arrays:
            try:
                save_file({k: np.ascontiguousarray(v) for k, v in arrays.items()}, str(staging / WEIGHTS_NAME))
            except Exception as error:  # noqa: BLE001 - safetensors reports the OS refusing a write as its own error
                raise _weights_not_written(Path(directory) / WEIGHTS_NAME, error) from None
            checksums[WEIGHTS_NAME] = _file_checksum(staging / WEIGHTS_NAME)
        config[CHECKSUMS_KEY] = checksums
        text = json.dumps(config, indent=2, ensure_ascii=False) + "\n"
        try:
            (staging / CONFIG_NAME).write_text(text, encoding="utf-8")
        except OSError as error:  # a full disk: one line naming the file (staged_folder removes the staging)
            raise OutputError(Path(directory) / CONFIG_NAME, error) from None
        give_open_permissions(staging)  # safetensors writes its file private (0600)


def _weights_not_written(path: Path, error: Exception) -> Exception:
    """The OutputError for safetensors failing to write `path`: it words the OS's error as "... (os error 28)"."""
    found = re.search(r"\(os error (\d+)\)", str(error))
    if found is None:
        return error
    code = int(found.group(1))
    return OutputError(path, OSError(code, os.strerror(code)))


def load_checkpoint(directory: Path, *, system: str) -> tuple[dict[str, Any], dict[str, Any], dict[str, np.ndarray]]:
    """Read (params, state, arrays) from a checkpoint folder written for `system`.

    A file that cannot be read, or that does not match the checksums config.json records, is a
    one-line HarnessError naming it. Checkpoints written before checksums were recorded have none:
    they load unchecked, as they always did (their systems' own checks of shapes and bands still apply).
    """
    directory = Path(directory)
    config_path = directory / CONFIG_NAME
    if not directory.exists():
        raise HarnessError(f"{directory}: no such checkpoint folder")
    if not directory.is_dir():
        raise HarnessError(f"{directory}: a file, not a checkpoint folder; name the folder ({directory.parent})")
    if not config_path.is_file():
        raise HarnessError(f"{directory}: not a checkpoint folder (no {CONFIG_NAME})")
    config = _read_config(config_path)
    if config.get("system") != system:
        raise HarnessError(f"{config_path}: checkpoint is for system {config.get('system')!r}, not {system!r}")
    if config.get("format") != CHECKPOINT_FORMAT:
        raise HarnessError(f"{config_path}: unsupported checkpoint format {config.get('format')!r}")
    for key in ("params", "state"):
        if key not in config:
            raise HarnessError(f"{config_path}: no {key!r} in this checkpoint config; {REFIT}")
        if not isinstance(config[key], dict):
            raise HarnessError(f"{config_path}: {key!r} must be a JSON object, not {_json_kind(config[key])}; {REFIT}")
    weights_path = directory / WEIGHTS_NAME
    checksums = config.pop(CHECKSUMS_KEY, None)
    if checksums is not None:  # None: written before checksums (those checkpoints are not checked)
        _check(config_path, config, checksums, weights_path)
    arrays = _read_weights(weights_path) if weights_path.is_file() else {}
    return config["params"], config["state"], arrays


def runtime_params(
    params: Mapping[str, Any], runtime: Mapping[str, Any] | None, *, where: Path | str
) -> dict[str, Any]:
    """A checkpoint's parameters with the run-time settings (`RUNTIME_SETTINGS`) dropped, then `runtime` added.

    Dropped settings take the constructor's defaults (`device="auto"`, no `cache_dir`, ...): the machine that
    loads a checkpoint decides them, not the one that wrote it, whose values stay recorded in its config.json.
    """
    runtime = dict(runtime or {})
    unknown = sorted(set(runtime) - set(RUNTIME_SETTINGS))
    if unknown:
        raise HarnessError(
            f"{where}: {', '.join(unknown)} is not a run-time setting (those are: {', '.join(RUNTIME_SETTINGS)}); "
            "the checkpoint's other parameters are what it was trained with"
        )
    kept = {key: value for key, value in params.items() if key not in RUNTIME_SETTINGS}
    return {**kept, **runtime}


# -- reading and checking ------------------------------------------------------------------------------------------


def _read_config(path: Path) -> dict[str, Any]:
    try:
        text = path.read_bytes().decode("utf-8")
    except UnicodeDecodeError as error:
        raise HarnessError(f"{path}: not UTF-8 text (byte {error.start}); edited or corrupted; {REFIT}") from None
    except OSError as error:
        raise HarnessError(f"{path}: cannot be read ({error.strerror or error})") from None
    try:
        config = parse_json(text, path)
    except DataError as error:
        raise HarnessError(f"{error}; edited or corrupted; {REFIT}") from None
    if not isinstance(config, dict):
        raise HarnessError(f"{path}: must hold a JSON object, not {_json_kind(config)}; edited or corrupted; {REFIT}")
    return config


def _check(config_path: Path, config: dict[str, Any], checksums: Any, weights_path: Path) -> None:
    """Refuse a checkpoint whose content or weights file do not match the checksums recorded when it was saved."""
    if (
        not isinstance(checksums, dict)
        or not isinstance(checksums.get(CONTENT_CHECKSUM), str)
        or not all(isinstance(value, str) for value in checksums.values())
        or not set(checksums) <= {CONTENT_CHECKSUM, WEIGHTS_NAME}
    ):
        raise HarnessError(f"{config_path}: malformed {CHECKSUMS_KEY!r} record; edited or corrupted; {REFIT}")
    if _content_checksum(config) != checksums[CONTENT_CHECKSUM]:
        raise HarnessError(
            f"{config_path}: edited or corrupted (its parameters or state do not match the checksum saved with "
            f"them); {REFIT}"
        )
    expected = checksums.get(WEIGHTS_NAME)
    if expected is None:
        if weights_path.exists():
            raise HarnessError(f"{weights_path}: not written with this checkpoint (config.json has no checksum of it)")
        return
    if not weights_path.is_file():
        raise HarnessError(f"{weights_path}: missing; the checkpoint was saved with it; {REFIT}")
    if _file_checksum(weights_path) != expected:
        raise HarnessError(f"{weights_path}: edited or corrupted (does not match its checksum in config.json); {REFIT}")


def _read_weights(path: Path) -> dict[str, np.ndarray]:
    from safetensors.numpy import load_file

    try:
        return load_file(str(path))
    except Exception as error:  # noqa: BLE001 - safetensors raises its own error kinds (and OSError, ValueError)
        reason = " ".join(str(error).split()) or type(error).__name__
        raise HarnessError(f"{path}: not a readable safetensors file ({reason}); corrupted; {REFIT}") from None


def _content_checksum(config: Mapping[str, Any]) -> str:
    body = {key: config.get(key) for key in ("format", "system", "params", "state")}
    text = json.dumps(body, sort_keys=True, ensure_ascii=True, separators=(",", ":"))
    return "sha256:" + hashlib.sha256(text.encode("ascii")).hexdigest()


def _file_checksum(path: Path) -> str:
    return "sha256:" + file_sha256(path)


def _json_kind(value: Any) -> str:
    if isinstance(value, list):
        return "a list"
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, str):
        return "a string"
    if isinstance(value, int | float):
        return "a number"
    return type(value).__name__


# -- fitted state that must fit its parameters -----------------------------------------------------------------------


def check_tfidf_state(
    vocabulary: list[str], idf: np.ndarray, analyzer: Mapping[str, Any], max_features: int | None, *, where: Path
) -> None:
    """Refuse a TF-IDF state its parameters could not have made: terms of other lengths than the analyzer's
    `ngram_range`, upper case where it lower-cases, a term twice, more terms than `max_features`, idf values
    that are not finite and positive. One pass over the terms; for checkpoints no checksum guards
    (those of older code), where edited parameters would otherwise score every problem 0 without a word.
    """
    problem = None
    if not np.isfinite(idf).all() or (idf <= 0).any():
        problem = "idf values that are not finite and positive"
    elif max_features is not None and len(vocabulary) > max_features:
        problem = f"a vocabulary of {len(vocabulary)} terms, more than max_features={max_features}"
    elif len(set(vocabulary)) != len(vocabulary):
        seen: set[str] = set()
        twice = next(term for term in vocabulary if term in seen or seen.add(term))  # type: ignore[func-returns-value]
        problem = f"the term {twice!r} twice in its vocabulary"
    low, high = analyzer.get("ngram_range", (1, 1))
    kind = analyzer.get("analyzer", "word")
    lowercase = analyzer.get("lowercase", True)
    for term in vocabulary if problem is None else ():
        # sklearn's "char" n-grams are exactly n characters; its "word" n-grams are n tokens joined by one space
        size, unit = (len(term), "characters") if kind == "char" else (term.count(" ") + 1, "words")
        if kind in ("char", "word") and not low <= size <= high:
            problem = f"a term {size} {unit} long ({term!r}) but its analyzer's ngram_range is ({low}, {high})"
        elif lowercase and term.lower() != term:
            problem = f"the term {term!r}, not in lower case, though its analyzer lower-cases"
        if problem is not None:
            break
    if problem is not None:
        raise HarnessError(f"{where}: its state holds {problem}: parameters and state do not fit; {REFIT}")
