"""File helpers: jsonl reading with precise errors, atomic writes, data checksums."""

from __future__ import annotations

import contextlib
import errno
import fcntl
import fnmatch
import gzip
import hashlib
import json
import logging
import math
import os
import re
import shutil
import signal
import stat
import tempfile
import threading
import zlib
from collections.abc import Iterable, Iterator, Sequence
from pathlib import Path
from typing import Any

from filelock import FileLock, Timeout

from core.errors import DataError, HarnessError, OutputError, os_reason

# What tempfile puts between a temporary's prefix and suffix: 8 of these characters.
_RANDOM_PART = r"[a-z0-9_]{8}"
ATOMIC_WRITE_SUFFIX = ".tmp"  # atomic_write's temporary beside NAME is `.NAME.XXXXXXXX.tmp`

logger = logging.getLogger("harness")


GZIP_MAGIC = b"\x1f\x8b"  # the first two bytes of every gzip file
# what a reader says of JSON nested deeper than Python's json can read (a RecursionError, not a JSONDecodeError)
DEEP_JSON = "malformed JSON (nested too deep to read)"
# and of a number longer than Python converts (its int limit raises a ValueError, not a JSONDecodeError)
LONG_NUMBER_JSON = "malformed JSON (a number of more than 4300 digits)"


def file_problem(path: Path) -> str | None:
    """Why `path` is not a regular file a reader can open, in words for an error after the path; None if it is one.

    "file not found", "is a broken symlink (to ...)", "cannot be read (symlink loop)", "is a folder, not a file", or
    "is not a regular file (a device, pipe or socket)": each of these used to read as plain "missing".
    """
    path = Path(path)
    try:
        mode = os.stat(path).st_mode
    except OSError as error:
        if error.errno == errno.ELOOP:
            return "cannot be read (symlink loop)"
        if path.is_symlink():
            return f"is a broken symlink (to {os.readlink(path)})"
        if isinstance(error, FileNotFoundError):
            return "file not found"
        return f"cannot be read ({os_reason(error)})"
    if stat.S_ISREG(mode):
        return None
    if stat.S_ISDIR(mode):
        return "is a folder, not a file"
    return "is not a regular file (a device, pipe or socket)"


def find_data_file(folder: Path, stem: str) -> Path:
    """Return `folder/stem` or its gzipped twin `folder/stem.gz`; a DataError names what is missing.

    Both present is a DataError naming both: which one holds the data meant is not ours to guess. A name that is
    there but no regular file (a folder, a device, a symlink loop) is a DataError saying what it is instead.
    """
    folder = Path(folder)
    if not folder.is_dir():
        raise DataError("is not a directory", path=folder)
    for candidate in (folder / stem, folder / f"{stem}.gz"):
        if os.path.lexists(candidate) and (problem := file_problem(candidate)) is not None:
            raise DataError(f"{problem}; expected the {stem} file (or {stem}.gz) here", path=candidate)
    found = [candidate for candidate in (folder / stem, folder / f"{stem}.gz") if candidate.is_file()]
    if len(found) > 1:
        raise DataError(
            f"both {stem} and {stem}.gz are here, and which one to read is ambiguous; remove or rename one",
            path=folder,
        )
    if found:
        return found[0]
    raise DataError(f"expected {stem} or {stem}.gz in this directory", path=folder)


class _KeyTwice(Exception):
    def __init__(self, key: str) -> None:
        self.key = key


def _keys_once(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    """A JSON object as a dict, refusing a key given twice: json keeps the last value, so a truth line with
    `"same": true, "same": false` was read as false without a word (audit 20, F7)."""
    obj = dict(pairs)
    if len(obj) < len(pairs):
        seen: set[str] = set()
        for key, _ in pairs:
            if key in seen:
                raise _KeyTwice(key)
            seen.add(key)
    return obj


def parse_json(text: str, path: Path, *, line: int | None = None) -> Any:
    """`text` parsed as JSON; what cannot be parsed is a DataError naming `path` and the line.

    `line` is the line `text` stands on (a jsonl line); without it, the decoder's line of the fault in `text`. Python
    raises more than JSONDecodeError here: a number of more than 4,300 digits (its int limit) is a ValueError and a
    value nested too deep a RecursionError. `text` is already decoded, so a bad byte, a ValueError too, cannot be
    taken for a long number.
    """
    try:
        return json.loads(text, object_pairs_hook=_keys_once)
    except _KeyTwice as twice:
        raise DataError("the key is given twice in one object", path=path, line=line, field=twice.key) from None
    except json.JSONDecodeError as exc:
        # json's message names the place apart ("Invalid control character at"): give the column (audit 21, F4)
        what = f"{exc.msg} column {exc.colno}" if exc.msg.endswith(" at") else exc.msg
        raise DataError(f"malformed JSON ({what})", path=path, line=exc.lineno if line is None else line) from None
    except ValueError:
        raise DataError(LONG_NUMBER_JSON, path=path, line=line) from None
    except RecursionError:
        raise DataError(DEEP_JSON, path=path, line=line) from None


def compression_problem(path: Path) -> str | None:
    """Why `path`'s first bytes disagree with its name, in words for an error after the path; None where they agree.

    A `.gz` name must hold gzip bytes and a plain name must not. A reader that keys a cache by the bytes alone
    (tasks.forum.post_table) checks this first, so a plain file named `.gz` is refused as it is when not cached.
    """
    path = Path(path)
    try:
        with open(path, "rb") as handle:
            head = handle.read(len(GZIP_MAGIC))
    except OSError:
        return None  # the reader's own open names what is wrong with the file
    if not head:
        return None  # the reader names an empty file as empty
    gzip_bytes = head == GZIP_MAGIC
    if path.suffix == ".gz" and not gzip_bytes:
        return f"not gzipped, though named .gz; name it {path.stem} or compress it"
    if path.suffix != ".gz" and gzip_bytes:
        return f"this looks gzipped; name it {path.name}.gz"
    return None


def read_jsonl(path: Path) -> Iterator[tuple[int, dict[str, Any]]]:
    """Yield (line number, object) for each non-blank line of a plain or gzipped jsonl file.

    Non-UTF-8 bytes, malformed JSON (nested too deep included), non-object lines and an empty file are DataErrors
    that name the file and line; so is a plain file holding gzip bytes (it wants a `.gz` name). A byte order mark
    before the first line is read past.
    """
    path = Path(path)
    if (problem := compression_problem(path)) is not None:
        raise DataError(problem, path=path)
    opener = gzip.open if path.suffix == ".gz" else open
    seen_any = False
    line_no = 0
    try:
        with opener(path, "rb") as handle:
            for line_no, raw in enumerate(handle, start=1):
                try:
                    line = raw.decode("utf-8")
                except UnicodeDecodeError as exc:
                    raise DataError(f"not valid UTF-8 ({exc.reason})", path=path, line=line_no) from None
                if line_no == 1 and line.startswith("\ufeff"):  # a byte order mark, as Windows tools write: read past
                    line = line[1:]
                if not line.strip():
                    continue
                obj = parse_json(line, path, line=line_no)
                if not isinstance(obj, dict):
                    raise DataError("expected a JSON object", path=path, line=line_no)
                seen_any = True
                yield line_no, obj
    except (OSError, EOFError, zlib.error) as exc:  # gzip's errors: truncated, damaged, not gzip, junk after it
        if isinstance(exc, OSError) and exc.errno is not None and (problem := file_problem(path)) is not None:
            raise DataError(problem, path=path) from None  # not found, a folder, a symlink loop
        after = f", after line {line_no}" if line_no else ""
        raise DataError(f"cannot read ({_gzip_fault(exc, seen_any)}){after}", path=path) from None
    if not seen_any:
        problem = file_problem(path)  # /dev/null reads as empty
        raise DataError("file is empty" if problem is None else f"{problem}, and gave no lines", path=path)


def _gzip_fault(exc: BaseException, read_some: bool) -> str:
    """What went wrong in a gzip stream, in words that point at the cause (Python's name the symptom)."""
    if isinstance(exc, zlib.error):  # a valid header, then data that does not inflate
        return f"damaged compressed data: {exc}"
    if isinstance(exc, gzip.BadGzipFile) and read_some:  # the first stream read whole; then bytes that are not gzip
        return f"bytes after the end of the gzip stream that are not gzip ({exc})"
    if isinstance(exc, EOFError):  # the stream stops before its end: a copy or download cut short (audit 21, F4)
        return f"the compressed file is cut short ({exc})"
    return str(exc)


def require_field(
    obj: dict[str, Any], field: str, kind: type | tuple[type, ...], path: Path, line: int, *, free_text: bool = False
) -> Any:
    """Return obj[field], checking presence and type; a DataError names file, line and field.

    A number must be finite: JSON as Python reads it lets NaN and Infinity through. A string must be one UTF-8
    can encode (see `check_text`): ids and labels end up in answer and result files, and a lone surrogate there
    fails only when they are written, after the work is done. A `free_text` (a post's or a problem's text, read
    but never written) may hold one: a system still answers it.
    """
    if field not in obj:
        raise DataError("missing", path=path, line=line, field=field)
    value = obj[field]
    # bool is an int in Python; never accept it where a number is asked for, or the reverse
    if not isinstance(value, kind) or (isinstance(value, bool) and bool not in _as_tuple(kind)):
        raise DataError(f"expected {_type_names(kind)}, got {kind_of(value)}", path=path, line=line, field=field)
    if isinstance(value, float) and not math.isfinite(value):
        raise DataError(f"expected a finite number, got {value!r}", path=path, line=line, field=field)
    if isinstance(value, str) and not free_text:
        check_text(value, path, line, field)
    return value


def check_text(value: str, path: Path, line: int | None, field: str) -> str:
    """`value`, if UTF-8 can encode it: a lone surrogate (a JSON escape "\\ud800" without its pair) is a DataError."""
    if value.isascii():  # constant time in CPython: the common case costs nothing
        return value
    try:
        value.encode("utf-8")
    except UnicodeEncodeError as exc:
        code = ord(value[exc.start])
        raise DataError(
            f"holds a lone surrogate \\u{code:04x} at character {exc.start}, which UTF-8 cannot encode",
            path=path,
            line=line,
            field=field,
        ) from None
    return value


def _as_tuple(kind: type | tuple[type, ...]) -> tuple[type, ...]:
    return kind if isinstance(kind, tuple) else (kind,)


def kind_of(value: Any) -> str:
    """A JSON value's type as errors name it: Python's name, but "null" for JSON's null (not "NoneType")."""
    return "null" if value is None else type(value).__name__


def _type_names(kind: type | tuple[type, ...]) -> str:
    return " or ".join(k.__name__ for k in _as_tuple(kind))


def refuse_non_files(paths: Iterable[Path], whose: str) -> None:
    """A HarnessError, in one line, where one of `paths` exists but is no file (a folder, say) and `whose` file of
    that name would go there: checked before a write, which would fail half way."""
    for path in map(Path, paths):
        if (path.exists() or path.is_symlink()) and not path.is_file():
            raise HarnessError(f"{path} is not a file, and {whose} {path.name} goes there; move it")


def give_open_permissions(folder: Path) -> None:
    """Give each file in `folder` the permissions a plain open() gives (0666 less the umask).

    safetensors (and so transformers' save_pretrained) writes its files private (0600): a model folder one user
    shares, or a checkpoint a container reads as another user, would not be readable.
    """
    umask = os.umask(0)
    os.umask(umask)
    for written in Path(folder).iterdir():
        if written.is_file() and not written.is_symlink():
            os.chmod(written, 0o666 & ~umask)


@contextlib.contextmanager
def atomic_write(path: Path, mode: str = "w") -> Iterator[Any]:
    """Write to a temporary file beside `path` and rename it into place on success.

    A crash or an exception leaves no half-written file and keeps any earlier file intact. The OS refusing the
    write (disk full, file too large, read-only) is an OutputError naming `path` and the OS's reason.
    """
    with atomic_writes([path], mode) as handles:
        yield handles[0]


@contextlib.contextmanager
def atomic_writes(paths: Sequence[Path], mode: str = "w") -> Iterator[list[Any]]:
    """`atomic_write` for files that make one output together (a PAN answers.jsonl and its answers.txt, TIRA's
    out.json and evaluation.prototext, a converted pairs.jsonl and truth.jsonl): each is written whole to its
    temporary first, and then all are renamed in, in the order given, with Ctrl-C and SIGTERM held back until the
    last is in. A stopped command leaves the old files or the new ones, never some of each (only a SIGKILL in the
    microseconds between two renames could).
    """
    paths = [Path(path) for path in paths]
    with contextlib.ExitStack() as stack:
        opened = [stack.enter_context(_temporary_beside(path, mode)) for path in paths]
        yield [handle for handle, _ in opened]
    temporaries = [temporary for _, temporary in opened]
    renaming = paths[0]
    try:
        with _signals_held():
            for temporary, renaming in zip(temporaries, paths, strict=True):
                os.replace(temporary, renaming)
    except BaseException as error:
        for temporary in temporaries:
            with contextlib.suppress(FileNotFoundError):
                os.unlink(temporary)
        if is_write_error(error, *temporaries):
            raise OutputError(renaming, error) from None
        raise


@contextlib.contextmanager
def _temporary_beside(path: Path, mode: str) -> Iterator[tuple[Any, Path]]:
    """An open temporary `.NAME.XXXXXXXX.tmp` beside `path`, on disk (flushed and synced) once the block ends
    cleanly, removed if it does not; the caller renames it in. Its permissions are those a plain open() gives."""
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp_name = tempfile.mkstemp(prefix=f".{path.name}.", suffix=ATOMIC_WRITE_SUFFIX, dir=path.parent)
    except OSError as error:
        raise OutputError(path, error) from None
    temporary = Path(tmp_name)
    umask = os.umask(0)  # mkstemp makes the file private (0600)
    os.umask(umask)
    try:
        encoding = None if "b" in mode else "utf-8"
        with os.fdopen(fd, mode, encoding=encoding) as handle:
            os.chmod(temporary, 0o666 & ~umask)
            yield handle, temporary
            handle.flush()
            os.fsync(handle.fileno())
    except BaseException as error:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(temporary)
        if is_write_error(error, temporary):
            raise OutputError(path, error) from None  # a full disk is a one-line error, not a traceback
        raise


@contextlib.contextmanager
def _signals_held() -> Iterator[None]:
    """Ctrl-C and SIGTERM wait until the block ends, and are taken then: renames that belong together all happen.

    Held where Python takes them, in the main thread's handlers (an OS signal mask would not do: the OS hands a
    signal to any thread that does not mask it); a block in another thread is never interrupted by them anyway.
    """
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    arrived: list[int] = []
    held = (signal.SIGINT, signal.SIGTERM)
    previous = {signum: signal.signal(signum, lambda signum, frame: arrived.append(signum)) for signum in held}
    try:
        yield
    finally:
        for signum, handler in previous.items():
            signal.signal(signum, handler if handler is not None else signal.SIG_DFL)
        for signum in arrived:  # taken now, as the handler that was there takes it
            signal.raise_signal(signum)


def is_write_error(error: BaseException, *ours: Path) -> bool:
    """Whether `error` is the OS refusing a write of ours (disk full, file too large, read-only, quota, I/O):
    an OSError with an errno about no file (a write on an open handle), or about one of `ours` or a path in them.
    An OSError about another file (one read while writing) or without an errno (a bad gzip stream) is not."""
    if not isinstance(error, OSError) or error.errno is None:
        return False
    if error.filename is None:
        return True
    name = Path(os.fsdecode(error.filename))
    return any(name == own or own in name.parents for own in ours)


def staging_folder(path: Path, suffix: str) -> Path:
    """A new empty folder `.NAME.XXXXXXXX<suffix>` beside `path`, with the permissions a plain mkdir gives."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    staging = Path(tempfile.mkdtemp(prefix=f".{path.name}.", suffix=suffix, dir=path.parent))
    umask = os.umask(0)
    os.umask(umask)
    os.chmod(staging, 0o777 & ~umask)  # mkdtemp makes it private (0700)
    return staging


STAGED_SUFFIX = ".new"  # `.NAME.XXXXXXXX.new`: a folder being written, renamed into place once complete
SET_ASIDE_SUFFIX = ".old"  # `.NAME.XXXXXXXX.old`: the folder it replaces, set aside until the swap is done


def folder_temporaries(name: str) -> list[tuple[str, str]]:
    """The (NAME, SUFFIX) pairs of what `staged_folder` and `swap_folder` leave beside `name` if killed."""
    return [(name, STAGED_SUFFIX), (name, SET_ASIDE_SUFFIX)]


def swap_folder(staged: Path, target: Path) -> Path | None:
    """Put the complete folder `staged` in `target`'s place; return where the old `target` was set aside.

    None where there was no old folder. The caller removes the set-aside folder once done with it; a failure of
    the second rename puts the old folder back, so `target` is always one whole folder.
    """
    if not target.exists():
        os.replace(staged, target)
        return None
    set_aside = staging_folder(target, SET_ASIDE_SUFFIX)
    os.replace(target, set_aside)  # a rename onto an empty folder replaces it
    try:
        os.replace(staged, target)
    except BaseException:
        if not target.exists():  # the new folder did not get in: the old one goes back
            os.replace(set_aside, target)
        raise
    return set_aside


def refuse_current_folder(folder: Path) -> None:
    """A folder made beside its place and renamed into it cannot be the current folder or one above it (`.`): its
    staging folder would lie inside it, and the rename would swap the folder the shell stands in (audit 10, F6:
    `pretrain-style POSTS .` trained, then called the empty folder "not empty")."""
    resolved, here = Path(folder).resolve(), Path.cwd().resolve()
    if resolved == here or resolved in here.parents:
        what = "the current folder" if resolved == here else "a folder above the current one"
        raise HarnessError(
            f"{folder} is {what}; name a new folder (e.g. {Path(folder) / 'out'}), or run the command from outside it"
        )


def refuse_used_folder(folder: Path) -> None:
    """A folder to be written new: one that exists with anything in it is refused (nothing is overwritten), and so
    is the current folder (`refuse_current_folder`)."""
    refuse_current_folder(folder)
    if Path(folder).exists() and any(Path(folder).iterdir()):
        raise HarnessError(f"{folder} exists and is not empty; name a new folder (nothing is overwritten)")


@contextlib.contextmanager
def staged_folder(target: Path, *, new: bool = False) -> Iterator[Path]:
    """Yield an empty staging folder beside `target`; on a clean exit it replaces `target` whole, else it goes.

    `new`: `target` must be missing or empty, at the start and when the staging folder moves in (a long job gives
    time for a folder to be filled there); then it is refused (`refuse_used_folder`) and nothing is replaced.
    The OS refusing a write into it (disk full, file too large) is an OutputError naming `target`, after the staging
    folder is gone: `target` stays as it was. Where `new` (an output folder of its own: a report, a pre-trained
    model), what a killed writer of `target` left beside it (its staging folder, possibly gigabytes of a model) is
    removed first, where no live writer holds it (`sweeping`); a folder swapped in place (a checkpoint) lies in a run
    folder, whose run removes what a killed one left.
    """
    target = Path(target)
    if new:
        refuse_used_folder(target)
    with sweeping(target, folder_temporaries(target.name)) if new else contextlib.nullcontext():
        try:
            staging = staging_folder(target, STAGED_SUFFIX)
        except OSError as error:
            raise OutputError(target, error) from None
        try:
            yield staging
            set_aside = _move_into_new(staging, target) if new else swap_folder(staging, target)
        except BaseException as error:
            shutil.rmtree(staging, ignore_errors=True)
            if is_write_error(error, staging, target):
                raise OutputError(target, error) from None  # what the writer was writing is gone with the staging
            raise
        if set_aside is not None:
            shutil.rmtree(set_aside, ignore_errors=True)


def _move_into_new(staged: Path, target: Path) -> None:
    """Rename `staged` onto a missing or empty `target`; one filled meanwhile makes the rename fail, so it stays."""
    refuse_used_folder(target)
    try:
        os.replace(staged, target)
    except OSError as error:
        if error.errno in (errno.ENOTEMPTY, errno.EEXIST):  # filled between the check and the rename
            refuse_used_folder(target)
        raise


def find_temporaries(folder: Path, temporaries: Iterable[tuple[str, str]]) -> list[Path]:
    """The entries of `folder` named exactly `.NAME.XXXXXXXX<SUFFIX>` for one of the (NAME, SUFFIX) pairs.

    XXXXXXXX is tempfile's random part: these are what atomic_write (SUFFIX ".tmp"), staging_folder and
    toolkit.checkpoint.save_checkpoint (SUFFIX "") make beside NAME, and nothing else.
    """
    folder = Path(folder)
    alternatives = "|".join(re.escape(f".{name}.") + _RANDOM_PART + re.escape(suffix) for name, suffix in temporaries)
    if not alternatives or not folder.is_dir():
        return []
    pattern = re.compile(alternatives)
    return [entry for entry in sorted(folder.iterdir()) if pattern.fullmatch(entry.name)]


def remove_temporaries(folder: Path, temporaries: Iterable[tuple[str, str]]) -> list[Path]:
    """Remove what interrupted writers left in `folder` (see find_temporaries); return what was removed.

    Call it only while holding the lock of what writes them, or a live writer's temporary goes from under it.
    """
    removed = find_temporaries(folder, temporaries)
    for entry in removed:
        if entry.is_dir() and not entry.is_symlink():
            shutil.rmtree(entry)
        else:
            entry.unlink()
    return removed


def lock_path(target: Path) -> Path:
    """The lock file of a file or folder, `.NAME.lock` beside it: inside a folder, it would move with its swap."""
    target = Path(target)
    return target.parent / f".{target.name}.lock"


def outside_lock_path(target: Path) -> Path:
    """The lock file of a user's output, kept out of their folder (a TIRA output folder must hold the answers only):
    in the temporary folder, named by a hash of the target's absolute path. One user's writers on one machine see
    it, which is where two commands race for one output. The folder is the user's own (`harness-locks-UID`): one
    shared by all users was made by the first, and every other user's command that writes was refused there."""
    key = hashlib.sha256(str(Path(target).resolve()).encode("utf-8", "surrogatepass")).hexdigest()[:32]
    return Path(tempfile.gettempdir()) / f"harness-locks-{os.getuid()}" / f"{key}.lock"


@contextlib.contextmanager
def holding(target: Path, timeout: float | None = None, *, lock: Path | None = None) -> Iterator[None]:
    """Hold `target`'s lock (`lock`, by default `lock_path`): one process at a time writes it; the next waits (at
    most `timeout` s, then a HarnessError; 0 refuses at once). The lock file is made once and left (deleting it
    would race)."""
    path = lock_path(target) if lock is None else lock
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
    except OSError as error:
        raise OutputError(path, error) from None
    lock = FileLock(str(path))
    try:
        try:
            lock.acquire(timeout=0)
        except Timeout:
            if timeout != 0:
                logger.info("another process is working on %s; waiting for it to finish (lock %s)", target, path)
            try:
                lock.acquire(timeout=-1 if timeout is None else timeout)
            except Timeout:
                raise HarnessError(
                    f"{target}: another process is writing it (lock {path}); wait for it to finish, or write elsewhere"
                ) from None
    except OSError as error:  # the lock file cannot be opened (another user's, a folder there): one line, no traceback
        raise OutputError(path, error) from None
    try:
        yield
    finally:
        lock.release()


@contextlib.contextmanager
def writing_alone(folder: Path, names: Iterable[str], timeout: float | None = None) -> Iterator[None]:
    """Hold the lock of `folder/<first name>` (kept outside the folder) and remove what a killed writer of these
    files left in `folder` (atomic_write's `.NAME.XXXXXXXX.tmp`): a writer holds the lock while its temporary
    exists, so with the lock held none left there is a live one. Only these exact names go, never another file."""
    names = list(names)
    target = Path(folder) / names[0]
    with holding(target, timeout, lock=outside_lock_path(target)):
        removed = remove_temporaries(folder, [(name, ATOMIC_WRITE_SUFFIX) for name in names])
        if removed:
            logger.info("removed what an interrupted command left: %s", ", ".join(map(str, removed)))
        yield


@contextlib.contextmanager
def sweeping(target: Path, temporaries: Iterable[tuple[str, str]]) -> Iterator[None]:
    """For writers that may run side by side (two builds into one folder): hold `target`'s lock file (kept outside
    the user's folder) shared for the block, and first, where no other process holds it, remove the `temporaries`
    beside `target` (find_temporaries).

    Each live writer holds the lock shared while its temporaries exist, so what is there when nobody holds it is a
    killed writer's. (filelock has no shared lock: flock, which the OS releases when a process dies, gives one.)
    """
    target = Path(target)
    path = outside_lock_path(target)
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o666)
    except OSError as error:
        raise OutputError(path, error) from None
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            pass  # another writer is live: its temporaries are not ours to remove
        else:
            removed = remove_temporaries(target.parent, temporaries)
            if removed:
                logger.info("removed what an interrupted command left: %s", ", ".join(map(str, removed)))
        fcntl.flock(fd, fcntl.LOCK_SH)
        yield
    finally:
        os.close(fd)  # releases the lock


def write_json(path: Path, obj: Any) -> None:
    """Write pretty JSON atomically."""
    with atomic_write(path) as handle:
        handle.write(json_text(obj))


def json_text(obj: Any) -> str:
    """`obj` as `write_json` writes it."""
    return json.dumps(obj, indent=2, ensure_ascii=False, sort_keys=False) + "\n"


def write_jsonl(path: Path, rows: Iterable[dict[str, Any]]) -> None:
    """Write one JSON object per line atomically."""
    with atomic_write(path) as handle:
        for row in rows:
            handle.write(jsonl_line(row))


def jsonl_line(row: Any) -> str:
    """One row as `write_jsonl` writes it."""
    return json.dumps(row, ensure_ascii=False) + "\n"


def file_sha256(path: Path) -> str:
    """The sha256 hex digest of a file's bytes, read in 1 MiB blocks (what `sha256sum` prints)."""
    digest = hashlib.sha256()
    with open(path, "rb") as handle:
        for block in iter(lambda: handle.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def paths_under(folder: Path, pattern: str = "*") -> list[Path]:
    """Every path under `folder` whose name matches `pattern` (files, folders, links), sorted, as `Path.rglob` gives
    them, but with linked folders followed, each real folder once (a link back up is not walked again): `rglob`
    does not enter a linked folder before Python 3.13, so what lay behind a link was left out unsaid (audit 20, F5:
    a run, a model's file)."""
    found: list[Path] = []
    walked: set[str] = set()
    for root, folders, names in os.walk(folder, followlinks=True):
        real = os.path.realpath(root)
        if real in walked:
            folders[:] = []
            continue
        walked.add(real)
        folders.sort()  # walked in name order: of two links to one folder, the first by name names what is in it
        found += [Path(root) / name for name in (*folders, *names) if fnmatch.fnmatchcase(name, pattern)]
    return sorted(found)


def sha256_files(paths: Iterable[Path], root: Path | None = None) -> str:
    """One sha256 over several files' relative names and bytes, in sorted order."""
    digest = hashlib.sha256()
    for path in sorted(Path(p) for p in paths):
        name = str(path.relative_to(root)) if root is not None else path.name
        digest.update(name.encode("utf-8") + b"\0")
        with open(path, "rb") as handle:
            for block in iter(lambda: handle.read(1 << 20), b""):
                digest.update(block)
        digest.update(b"\0")
    return "sha256:" + digest.hexdigest()
