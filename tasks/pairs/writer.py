"""Writing a pairs dataset all or nothing: every file goes into a staging folder beside the output folder,
which is renamed into place only once complete. A failure or a kill leaves no partial dataset. With
`overwrite`, only the builder's own files in the output folder are replaced (each set aside until all the new
ones are in place); anything else there, a user's notes or corpus, is left as it was. "Own" means written by an
earlier build and unchanged since: its `manifest.json` lists the file with this content. A file at one of the
builder's names that is not (a user's own dataset, or a builder's file the user edited) is refused, not replaced."""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import shutil
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any

from core.errors import HarnessError, OutputError
from core.files import file_sha256, is_write_error, refuse_current_folder, staging_folder, sweeping

STAGED_SUFFIX = ".pairs-new"  # `.OUT.XXXXXXXX.pairs-new`: the dataset being written
SET_ASIDE_SUFFIX = ".pairs-old"  # `.OUT.XXXXXXXX.pairs-old`: the dataset being replaced, for a moment
MANIFEST = "manifest.json"  # lists every other file of a build with its sha256
MANIFEST_CHECKSUM = "manifest_checksum"  # the manifest's own, of the rest of its content (`manifest_checksum`)
_BUFFER = 1 << 20


def check_out_dir(out_dir: Path, overwrite: bool, inputs: Iterable[Path] = (), own: Iterable[str] = ()) -> None:
    """Refuse a file, a folder that is, holds or lies inside an input, or a non-empty folder unless `overwrite`,
    and with it any file at one of the builder's names (`own`, relative) that is not its own earlier output:
    before any work, so a refusal costs nothing."""
    out_dir = Path(out_dir)
    refuse_current_folder(out_dir)
    resolved = out_dir.resolve()
    for given in inputs:
        source = Path(given).resolve()
        if resolved == source or resolved in source.parents or source in resolved.parents:
            where = "is" if resolved == source else "holds" if resolved in source.parents else "lies inside"
            raise HarnessError(f"{out_dir}: the output folder {where} the input {given}; name a folder of its own")
    if out_dir.exists() and not out_dir.is_dir():
        raise HarnessError(f"{out_dir}: is a file, not a folder for the dataset")
    if out_dir.is_dir() and any(out_dir.iterdir()) and not overwrite:
        raise HarnessError(
            f"{out_dir}: folder is not empty; pass --overwrite to replace the files an earlier build wrote there "
            "(nothing else is touched)"
        )
    if out_dir.is_dir():
        _refuse_what_is_not_own(out_dir, own)


def _refuse_what_is_not_own(out_dir: Path, own: Iterable[str]) -> None:
    """Each of the builder's names in `out_dir` must hold its earlier output, unchanged, or nothing; and no `.gz`
    twin may lie beside one, since a reader given both would not know which to read."""
    earlier = _earlier_manifest(out_dir)
    for relative in own:
        path = out_dir / relative
        for folder in reversed(Path(relative).parents[:-1]):  # `train/` of train/pairs.jsonl: a file there blocks it
            if (out_dir / folder).exists() and not (out_dir / folder).is_dir():
                why = f"is not a folder, and the dataset's {relative} goes there"
                raise HarnessError(f"{out_dir / folder}: {why}; move it or name another folder")
        twin = path.with_name(path.name + ".gz")
        if twin.exists() or twin.is_symlink():
            why = f"would lie beside the new {relative}, and a run could not tell which to read"
            raise HarnessError(f"{twin}: {why}; move it or name another folder")
        if not (path.exists() or path.is_symlink()):
            continue
        if not path.is_file():
            why = f"is not a file, and the dataset's {relative} goes there"
        elif earlier is None:
            why = f"not written by harness pairs (no {MANIFEST} of a build is here), so --overwrite leaves it"
        elif relative == MANIFEST:
            if not _manifest_edited(earlier):
                continue
            why = "changed since harness pairs wrote it (its content is not what its manifest_checksum says), so "
            why += "--overwrite leaves it"
        elif relative not in earlier["files"]:
            why = f"not written by harness pairs ({MANIFEST} does not list it), so --overwrite leaves it"
        elif earlier["files"][relative] != "sha256:" + file_sha256(path):
            why = f"changed since harness pairs wrote it (its sha256 is not {MANIFEST}'s), so --overwrite leaves it"
        else:
            continue
        raise HarnessError(f"{path}: {why}; move it or name another folder")


def manifest_checksum(data: dict[str, Any]) -> str:
    """The checksum a manifest records of itself (`manifest_checksum`): of its content without that key, so that an
    edited manifest (a note added by hand) is refused by --overwrite like any other edited file of a build."""
    body = {key: value for key, value in data.items() if key != MANIFEST_CHECKSUM}
    return "sha256:" + hashlib.sha256(json.dumps(body, sort_keys=True, ensure_ascii=False).encode("utf-8")).hexdigest()


def _manifest_edited(manifest: dict[str, Any]) -> bool:
    """Whether a build's manifest no longer holds what the build wrote (one written before manifests recorded their
    checksum cannot tell, and counts as unchanged)."""
    recorded = manifest.get(MANIFEST_CHECKSUM)
    return recorded is not None and recorded != manifest_checksum(manifest)


def _earlier_manifest(out_dir: Path) -> dict[str, Any] | None:
    """An earlier build's manifest: its "files" map each file it wrote to its checksum; None where there is no such
    manifest."""
    try:
        data = json.loads((out_dir / MANIFEST).read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, ValueError):
        return None
    files = data.get("files") if isinstance(data, dict) else None
    return data if isinstance(files, dict) and "source" in data else None


class Stage:
    """The staging folder: files written here get their sha256 recorded under their relative name."""

    def __init__(self, folder: Path, out_dir: Path | None = None) -> None:
        self.folder = folder
        self.out_dir = folder if out_dir is None else out_dir  # where the files will be: what errors name
        self.checksums: dict[str, str] = {}

    def write_lines(self, relative: str, lines: Iterable[str]) -> None:
        """Write lines (each ending in "\\n") as UTF-8, hashing them on the way.

        The OS refusing the write (disk full, file too large) is an OutputError naming the file in the output folder
        (`staged_dataset` then removes the staging folder: nothing half-written stays).
        """
        path = self.folder / relative
        digest = hashlib.sha256()
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            with open(path, "wb", buffering=_BUFFER) as handle:
                for line in lines:
                    data = line.encode("utf-8")
                    digest.update(data)
                    handle.write(data)
                handle.flush()
                os.fsync(handle.fileno())
        except OSError as error:
            if not is_write_error(error, self.folder):
                raise
            raise OutputError(self.out_dir / relative, error) from None
        self.checksums[relative] = "sha256:" + digest.hexdigest()

    def write_jsonl(self, relative: str, rows: Iterable[dict[str, Any]]) -> None:
        self.write_lines(relative, (json.dumps(row, ensure_ascii=False) + "\n" for row in rows))

    def write_json(self, relative: str, obj: Any) -> None:
        self.write_lines(relative, [json.dumps(obj, indent=2, ensure_ascii=False) + "\n"])


@contextlib.contextmanager
def staged_dataset(out_dir: Path, overwrite: bool, own: Iterable[str]) -> Iterator[Stage]:
    """Yield a Stage; on a clean exit its folder becomes `out_dir` (replacing its `own` files with `overwrite`).

    The caller checks `out_dir` (`check_out_dir`) before its work, so a refusal costs nothing; it is checked again
    here just before the files are placed, since another process may have written there meanwhile.
    """
    out_dir = Path(out_dir)
    own = list(own)
    # two builds may run into one folder at once, so the lock is shared; a `.OUT.XXXXXXXX.pairs-new` (a whole copy
    # of a dataset) that a killed build left is removed once no build is live. A `.pairs-old` is left: it holds the
    # files of a dataset a killed --overwrite had set aside, the user's to recover.
    with sweeping(out_dir, [(out_dir.name, STAGED_SUFFIX)]):
        try:
            staged = staging_folder(out_dir, STAGED_SUFFIX)
        except OSError as error:
            raise OutputError(out_dir, error) from None
        try:
            yield Stage(staged, out_dir)
            _put_in_place(staged, out_dir, overwrite, own)
        except BaseException as error:
            shutil.rmtree(staged, ignore_errors=True)
            if is_write_error(error, staged, out_dir):
                raise OutputError(out_dir, error) from None
            raise


def _put_in_place(staged: Path, out_dir: Path, overwrite: bool, own_names: list[str]) -> None:
    check_out_dir(out_dir, overwrite, own=own_names)  # again: another process may have filled it meanwhile
    if not out_dir.exists() or not any(out_dir.iterdir()):
        os.replace(staged, out_dir)  # a rename onto an empty folder replaces it
        return
    # Only the builder's own files move: the old ones are set aside, the new ones renamed in, and on any
    # failure the new ones come out and the old ones go back, so the folder holds one whole dataset.
    own = sorted(path.relative_to(staged) for path in staged.rglob("*") if path.is_file())
    if sorted(map(str, own)) != sorted(own_names):  # the checks above must have covered every file placed
        raise RuntimeError(f"staged files {own} are not the builder's names {own_names}")
    set_aside = staging_folder(out_dir, SET_ASIDE_SUFFIX)
    moved_aside: list[Path] = []
    placed: list[Path] = []
    try:
        for relative in own:
            if (out_dir / relative).is_file() or (out_dir / relative).is_symlink():
                (set_aside / relative).parent.mkdir(parents=True, exist_ok=True)
                os.replace(out_dir / relative, set_aside / relative)
                moved_aside.append(relative)
        for relative in own:
            (out_dir / relative).parent.mkdir(parents=True, exist_ok=True)
            os.replace(staged / relative, out_dir / relative)
            placed.append(relative)
    except BaseException:
        for relative in placed:
            os.replace(out_dir / relative, staged / relative)
        for relative in moved_aside:
            os.replace(set_aside / relative, out_dir / relative)
        shutil.rmtree(set_aside, ignore_errors=True)
        raise
    shutil.rmtree(set_aside, ignore_errors=True)
    shutil.rmtree(staged, ignore_errors=True)
