"""Forum posts at scale: a posts file as a memory-mapped Arrow table (HF `datasets`), cached by checksum.

`open_post_table(path)` reads `posts.jsonl[.gz]` once, validating every line with the rules of
tasks.forum.reader (`iter_forum_posts`: the same one-line errors naming file, line and field), and
saves it with `datasets`' `save_to_disk` in parts of PART_ROWS posts under
`$HARNESS_CACHE_DIR/posts/<sha256 of the file>` (default `~/.cache/harness/posts/...`). The parts are
written to a staging folder beside it and renamed into place with a completion marker, so a crash
leaves no half cache and concurrent builders are safe (the first rename wins, the others discard their
copy). Later calls memory-map the parts (`load_from_disk`): a corpus of 10^7 posts opens in seconds and
holds in memory only the columns asked for.

The marker records the size and sha256 of every file of the parts, checked each time the cache is opened (sizes
first, then the hashes: about 0.07 s for the 92 MB cache of the real 261k posts): a truncated, edited or missing
file gets one warning line and the cache is rebuilt and swapped in whole, never used. Where the cache folder cannot
be written (read-only, a file), the posts are converted to a temporary folder removed at exit, with one warning line.

A `PostTable` gives columns as numpy arrays (`created`, and market/author/subforum/thread_id as int64
codes into a sorted string table), and materialises ForumPosts and texts only for the rows asked for
(`post`, `posts`, `texts`, `PostRows`): never one Python object per post of the corpus.

`datasets` and `pyarrow` are imported inside functions: the CLI starts without them.
"""

from __future__ import annotations

import atexit
import contextlib
import hashlib
import json
import logging
import os
import shutil
import tempfile
from collections import OrderedDict
from collections.abc import Iterable, Iterator, Sequence
from pathlib import Path
from typing import Any, TypeVar, overload

import numpy as np

from core.errors import DataError, HarnessError
from core.files import SET_ASIDE_SUFFIX, compression_problem, file_sha256, find_temporaries, staging_folder, swap_folder
from tasks.forum.reader import iter_forum_posts, warn_of_empty_texts
from tasks.forum.records import ForumPost

logger = logging.getLogger("harness")

CACHE_VARIABLE = "HARNESS_CACHE_DIR"
FORMAT_VERSION = 2  # of the cache folder's layout; a marker of another version is rebuilt (1 had no file digests)
COMPLETE_NAME = "complete.json"  # written last, inside the staging folder: a folder without it is never used
PART_ROWS = 1 << 18  # posts per saved part: bounds the memory of the conversion
CODED_FIELDS = ("market", "author", "subforum", "thread_id")
STAGING_SUFFIX = ".partial"
STALE_AFTER_S = 24 * 3600  # a staging folder untouched this long was left by a killed conversion
_BLOCK = 8192  # rows fetched from Arrow at a time when iterating
_FEW = 8  # rows per chunk below which rows are read one by one rather than by a take per chunk
_Item = TypeVar("_Item")
CLEANED_KEPT = 1 << 19  # pre-processed texts a table keeps (the real corpus: all of them)


def cache_root() -> Path:
    """`$HARNESS_CACHE_DIR`, else `~/.cache/harness`."""
    root = os.environ.get(CACHE_VARIABLE)
    return Path(root) if root else Path.home() / ".cache" / "harness"


def posts_cache_folder(content_sha256: str) -> Path:
    """Where the Arrow copy of a posts file with this content (sha256 hex of its bytes) lives."""
    return cache_root() / "posts" / content_sha256


def file_digests(path: Path) -> tuple[str, str]:
    """(sha256 hex of the file's bytes, its checksum as core.files.sha256_files gives it), in one read."""
    path = Path(path)
    content = hashlib.sha256()
    named = hashlib.sha256(path.name.encode("utf-8") + b"\0")
    try:
        with open(path, "rb") as handle:
            for block in iter(lambda: handle.read(1 << 20), b""):
                content.update(block)
                named.update(block)
    except FileNotFoundError:
        raise DataError("file not found", path=path) from None
    except OSError as exc:
        raise DataError(f"cannot read ({exc})", path=path) from None
    named.update(b"\0")
    return content.hexdigest(), "sha256:" + named.hexdigest()


def open_post_table(path: Path) -> PostTable:
    """The posts of `path` as a PostTable, converted on first use and memory-mapped from the cache after.

    A cache whose files differ from what its marker records is rebuilt; one that cannot be written is bypassed.
    """
    path = Path(path)
    if (problem := compression_problem(path)) is not None:  # the cache's key is the bytes, not the name
        raise DataError(problem, path=path)
    content, checksum = file_digests(path)
    folder = posts_cache_folder(content)
    marker = _read_marker(folder)
    if marker is None or (damage := _damage(folder, marker)) is not None:
        if marker is not None:
            logger.warning("the posts cache at %s is damaged (%s): it is rebuilt", folder, damage)
        folder = _build(path, folder)
        marker = _read_marker(folder) or {}
    empty = marker.get("empty_texts")
    table = PostTable(folder, source=path, checksum=checksum)
    warn_of_empty_texts(path, empty if isinstance(empty, int) else 0, len(table))
    return table


def _build(path: Path, folder: Path) -> Path:
    """Convert `path` into the cache `folder`, or, where the cache cannot be written, into a temporary folder.

    The temporary copy lives until this process exits: a run still works, only the next one converts again.
    """
    try:
        _convert(path, folder)
        return folder
    except OSError as exc:  # the source's read errors are DataErrors: an OSError here is the cache's
        logger.warning("cannot write the posts cache in %s (%s): the posts are not cached", cache_root(), exc)
    try:
        temporary = Path(tempfile.mkdtemp(prefix="harness-posts-"))
        atexit.register(shutil.rmtree, temporary, ignore_errors=True)
        _convert(path, temporary / folder.name)
    except OSError as exc:
        raise HarnessError(f"cannot write the posts cache in {cache_root()} nor a temporary copy ({exc})") from None
    return temporary / folder.name


def _read_marker(folder: Path) -> dict | None:
    """The completion marker of a cache folder, or None where the folder is missing, partial or of another format."""
    try:
        marker = json.loads((folder / COMPLETE_NAME).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    if not isinstance(marker, dict) or marker.get("format") != FORMAT_VERSION:
        return None
    parts = marker.get("parts")
    if not isinstance(parts, list) or not all(isinstance(p, str) and (folder / p).is_dir() for p in parts):
        return None
    files = marker.get("files")
    if not isinstance(files, dict) or not all(
        isinstance(f, dict) and isinstance(f.get("size"), int) and isinstance(f.get("sha256"), str)
        for f in files.values()
    ):
        return None
    return marker


def _file_records(folder: Path, parts: list[str]) -> dict[str, dict]:
    """{relative name: {"size", "sha256"}} of every file of the parts: what the marker records to check them by."""
    return {
        file.relative_to(folder).as_posix(): {"size": file.stat().st_size, "sha256": file_sha256(file)}
        for part in parts
        for file in sorted((folder / part).rglob("*"))
        if file.is_file()
    }


def _damage(folder: Path, marker: dict) -> str | None:
    """What differs between the files of a cache folder and its marker's records (None: nothing).

    Sizes first, for every file: a truncated part costs no hashing. Then the hashes: an edit that keeps the size
    (a name patched in place) is caught too, whatever the file's mtime says.
    """
    files = marker["files"]
    for name, record in files.items():
        try:
            size = (folder / name).stat().st_size
        except OSError:
            return f"{name} is missing"
        if size != record["size"]:
            return f"{name} has {size} bytes, {record['size']} were written"
    for name, record in files.items():
        try:
            digest = file_sha256(folder / name)  # sha256 beats blake2b where the CPU has SHA instructions
        except OSError as exc:
            return f"{name} cannot be read ({exc.strerror or exc})"
        if digest != record["sha256"]:
            return f"{name} changed since it was written"
    return None


def _convert(path: Path, folder: Path) -> None:
    """One validating pass over `path`, saved in parts to a staging folder, then renamed to `folder`."""
    import datasets

    _sweep_stale_staging(folder)
    staging = staging_folder(folder, STAGING_SUFFIX)
    try:
        parts: list[str] = []
        rows = empty = 0
        with _quiet_datasets():
            for number, batch in enumerate(_batches(iter_forum_posts(path), PART_ROWS)):
                name = f"part-{number:05d}"
                datasets.Dataset(_arrow_table(batch)).save_to_disk(str(staging / name))
                parts.append(name)
                rows += len(batch)
                empty += sum(not post.text.strip() for post in batch)
        marker = {"format": FORMAT_VERSION, "rows": rows, "parts": parts, "files": _file_records(staging, parts)}
        marker["empty_texts"] = empty  # said on every open (older caches lack it, and say nothing)
        # a plain write: the staging folder is renamed whole, and its write errors stay OSErrors (see _build)
        (staging / COMPLETE_NAME).write_text(json.dumps(marker, indent=2) + "\n", encoding="utf-8")
        _install(staging, folder)
    finally:
        if staging.exists():
            shutil.rmtree(staging, ignore_errors=True)


def _sweep_stale_staging(folder: Path) -> None:
    """Remove the staging folders of `folder` that a killed conversion left (untouched for STALE_AFTER_S).

    A younger one may belong to a conversion running now, in this or another process: it is kept.
    """
    import time

    names = [(folder.name, STAGING_SUFFIX), (folder.name, SET_ASIDE_SUFFIX), (folder.name, ".stale")]
    leftovers = find_temporaries(folder.parent, names)  # ".stale": what versions before swap_folder set aside
    for entry in leftovers:
        with contextlib.suppress(OSError):
            if time.time() - entry.stat().st_mtime > STALE_AFTER_S:
                shutil.rmtree(entry, ignore_errors=True)


def _install(staging: Path, folder: Path) -> None:
    """Put the finished `staging` in `folder`'s place; a sound complete folder already there wins, any other goes.

    Under a lock beside the folder, so one builder never removes what another just installed.
    """
    from filelock import FileLock

    with FileLock(str(folder.parent / f".{folder.name}.lock")):
        marker = _read_marker(folder)
        if marker is not None and _damage(folder, marker) is None:
            return  # another builder finished first: its copy holds the same posts
        # a partial, outdated or damaged folder is swapped out whole: readers see the old folder or the new one
        set_aside = swap_folder(staging, folder)
        if set_aside is not None:
            shutil.rmtree(set_aside, ignore_errors=True)


def _batches(posts: Iterable[ForumPost], size: int) -> Iterator[list[ForumPost]]:
    batch: list[ForumPost] = []
    for post in posts:
        batch.append(post)
        if len(batch) == size:
            yield batch
            batch = []
    if batch:
        yield batch


def _schema() -> Any:
    import pyarrow as pa

    types = {"created": pa.int64()}
    return pa.schema([(field, types.get(field, pa.string())) for field in ForumPost._fields])


def _arrow_table(posts: list[ForumPost]) -> Any:
    import pyarrow as pa

    schema = _schema()
    columns = list(zip(*posts, strict=True))
    return pa.table([pa.array(column, type=schema.field(i).type) for i, column in enumerate(columns)], schema=schema)


@contextlib.contextmanager
def _quiet_datasets() -> Iterator[None]:
    """No tqdm bars of `datasets` while saving or loading (progress goes through core.progress)."""
    import datasets

    enabled = datasets.is_progress_bar_enabled()
    datasets.disable_progress_bars()
    try:
        yield
    finally:
        if enabled:
            datasets.enable_progress_bars()


class PostTable:
    """The posts of one file, memory-mapped from the Arrow cache, in file order (row i = the file's i-th post)."""

    def __init__(self, folder: Path, *, source: Path, checksum: str) -> None:
        import datasets
        import pyarrow as pa

        marker = _read_marker(folder)
        if marker is None:
            raise DataError("not a complete posts cache (no completion marker)", path=folder)
        self.folder = Path(folder)
        self.source = Path(source)
        self.checksum = checksum  # of the source file, as core.files.sha256_files gives it
        try:
            with _quiet_datasets():
                self._datasets = [datasets.load_from_disk(str(self.folder / part)) for part in marker["parts"]]
            self._table = pa.concat_tables([d.data.table for d in self._datasets])
        except (OSError, ValueError, pa.ArrowException) as exc:  # damaged after open_post_table checked it
            raise DataError(f"cannot read this posts cache ({exc})", path=folder) from None
        if self._table.num_rows != marker["rows"]:
            raise DataError(f"expected {marker['rows']} posts, found {self._table.num_rows}", path=folder)
        self._codes: dict[str, tuple[np.ndarray, tuple[str, ...]]] = {}
        self._created: np.ndarray | None = None
        self._cleaned: OrderedDict[int, str] = OrderedDict()
        self._chunk_index: dict[str, tuple[list, np.ndarray]] = {}

    def __reduce__(self) -> tuple:
        return (_reopen, (str(self.folder), str(self.source), self.checksum))

    def __len__(self) -> int:
        return self._table.num_rows

    def __repr__(self) -> str:
        return f"PostTable({self.source.name}: {len(self)} posts, cache {self.folder})"

    # -- columns -------------------------------------------------------------------------------------

    @property
    def created(self) -> np.ndarray:
        """Unix seconds of every post (int64, read-only)."""
        if self._created is None:
            created = np.asarray(self._table.column("created").to_numpy(), dtype=np.int64)
            created.flags.writeable = False
            self._created = created
        return self._created

    def id_ranks(self) -> np.ndarray:
        """Every post's rank by post_id (ids compared as Python compares strings), computed anew on each call.

        What orders posts made in the same second: the file's order of its lines must not change a result. Not kept:
        the time split needs it once, and at 10^7 posts it is 80 MB.
        """
        import pyarrow.compute as pc

        column = self._table.column("post_id")  # ranked across its chunks, not copied into one
        return np.asarray(pc.rank(column, sort_keys="ascending", tiebreaker="first").to_numpy(), dtype=np.int64)

    def codes(self, field: str) -> np.ndarray:
        """Every post's value of a string field (market, author, subforum, thread_id) as an int64 code into `names`."""
        return self._coded(field)[0]

    def names(self, field: str) -> tuple[str, ...]:
        """The distinct values of a coded field, sorted: code k stands for names(field)[k]."""
        return self._coded(field)[1]

    def _coded(self, field: str) -> tuple[np.ndarray, tuple[str, ...]]:
        if field not in CODED_FIELDS:
            raise ValueError(f"{field!r} is not one of the coded fields {CODED_FIELDS}")
        if field not in self._codes:
            import pyarrow as pa
            import pyarrow.compute as pc

            column = self._table.column(field)
            names = tuple(sorted(pc.unique(column).to_pylist()))
            indices = pc.index_in(column, value_set=pa.array(names, type=pa.string()))
            codes = np.asarray(indices.to_numpy(), dtype=np.int64)
            codes.flags.writeable = False
            self._codes[field] = (codes, names)
        return self._codes[field]

    def values(self, field: str, rows: Sequence[int] | np.ndarray) -> list:
        """The values of one field at the given rows, in their order, as Python objects."""
        import pyarrow as pa

        rows = np.asarray(rows, dtype=np.int64).reshape(-1)
        if len(rows) == 0:
            return []
        if rows.min() < 0 or rows.max() >= len(self):
            raise IndexError(f"row out of range 0..{len(self) - 1}")
        chunks, starts = self._chunks(field)
        which = np.searchsorted(starts, rows, side="right") - 1
        order = np.argsort(which, kind="stable")
        bounds = np.flatnonzero(np.diff(which[order])) + 1
        if len(rows) < _FEW * (len(bounds) + 1):  # a few rows per chunk: read them one by one
            return [chunks[k][row - starts[k]].as_py() for k, row in zip(which.tolist(), rows.tolist(), strict=True)]
        # take from each memory-mapped chunk on its own: a take on the whole column would copy all its chunks
        groups = np.split(order, bounds)
        out: list = [None] * len(rows)
        for group in groups:
            k = int(which[group[0]])
            taken = chunks[k].take(pa.array(rows[group] - starts[k])).to_pylist()
            for i, value in zip(group.tolist(), taken, strict=True):
                out[i] = value
        return out

    def _chunks(self, field: str) -> tuple[list, np.ndarray]:
        """A column's Arrow chunks and the first row of each."""
        if field not in self._chunk_index:
            column = self._table.column(field)
            lengths = np.fromiter((len(c) for c in column.chunks), dtype=np.int64, count=column.num_chunks)
            starts = np.concatenate([[0], np.cumsum(lengths)[:-1]]).astype(np.int64)
            self._chunk_index[field] = (column.chunks, starts)
        return self._chunk_index[field]

    # -- posts -----------------------------------------------------------------------------------------

    def posts(self, rows: Sequence[int] | np.ndarray) -> list[ForumPost]:
        """The ForumPosts at the given rows, in their order."""
        columns = [self.values(field, rows) for field in ForumPost._fields]
        return [ForumPost(*values) for values in zip(*columns, strict=True)]

    def post(self, row: int) -> ForumPost:
        """The ForumPost at one row."""
        return self.posts([_row_index(row, len(self))])[0]

    def texts(self, rows: Sequence[int] | np.ndarray) -> list[str]:
        """The raw texts at the given rows, in their order."""
        return self.values("text", rows)

    def cleaned_texts(self, rows: Sequence[int] | np.ndarray) -> list[str]:
        """The pre-processed texts (tasks.forum.preprocess.clean_post) at the given rows, in their order.

        The last CLEANED_KEPT are kept: a split's episodes are read several times (embedding, evaluation).
        """
        from tasks.forum.preprocess import clean_post

        kept = self._cleaned
        rows = [int(r) for r in rows]
        found = {r: kept[r] for r in dict.fromkeys(rows) if r in kept}
        missing = [r for r in dict.fromkeys(rows) if r not in found]
        if missing:  # the texts not cleaned yet, fetched in one go
            for row, text in zip(missing, self.texts(missing), strict=True):
                found[row] = kept[row] = clean_post(text)
                if len(kept) > CLEANED_KEPT:
                    kept.popitem(last=False)  # the oldest first (O(1): a dict's first key is not, once many went)
        return [found[r] for r in rows]


def _reopen(folder: str, source: str, checksum: str) -> PostTable:
    return PostTable(Path(folder), source=Path(source), checksum=checksum)


def _row_index(index: int, length: int) -> int:
    index = int(index)
    if index < 0:
        index += length
    if not 0 <= index < length:
        raise IndexError("row out of range")
    return index


class LazyRows(Sequence[_Item]):
    """What the lazy sequences of a PostTable share: they compare equal to any sequence of the same items, as a
    tuple does, are unhashable like a list, and `+` makes a tuple (callers join splits that way)."""

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Sequence) or isinstance(other, str | bytes):
            return NotImplemented
        return len(self) == len(other) and all(a == b for a, b in zip(self, other, strict=True))

    __hash__ = None  # type: ignore[assignment]

    def __add__(self, other: Sequence[_Item]) -> tuple[_Item, ...]:
        return tuple(self) + tuple(other)

    def __radd__(self, other: Sequence[_Item]) -> tuple[_Item, ...]:
        return tuple(other) + tuple(self)


class PostRows(LazyRows[ForumPost]):
    """A read-only sequence of a PostTable's posts at the given rows: each ForumPost is made when accessed."""

    def __init__(self, table: PostTable, rows: np.ndarray) -> None:
        self.table = table
        self.rows = np.asarray(rows, dtype=np.int64)
        self.rows.flags.writeable = False

    def __len__(self) -> int:
        return len(self.rows)

    @overload
    def __getitem__(self, index: int) -> ForumPost: ...
    @overload
    def __getitem__(self, index: slice) -> PostRows: ...
    def __getitem__(self, index: int | slice) -> ForumPost | PostRows:
        if isinstance(index, slice):
            return PostRows(self.table, self.rows[index])
        return self.table.posts([self.rows[_row_index(index, len(self))]])[0]

    def __iter__(self) -> Iterator[ForumPost]:
        for start in range(0, len(self.rows), _BLOCK):
            yield from self.table.posts(self.rows[start : start + _BLOCK])

    def __repr__(self) -> str:
        return f"PostRows({len(self)} posts of {self.table!r})"
