"""The inputs of `harness pairs`, read into one record type: `SourceText`.

Four inputs: forum posts (see `forum_texts`), PAN 2013-2015 corpus folders, a folder of text files
whose path names the author and discourse type, and a JSONL of texts. Bad input is a one-line
DataError naming the file, the line (where there is one) and the field; nothing is written here.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import NamedTuple

from core.errors import DataError, HarnessError
from core.files import check_text, file_problem, read_jsonl, require_field, sha256_files
from core.records import VerificationProblem
from toolkit.splits import UnionFind


class SourceText(NamedTuple):
    """One candidate text of a verification pair, whatever the input it came from."""

    text_id: str  # unique within the input
    author: str
    text: str
    discourse_type: str
    topic: str | None
    # What a same-author pair must not share: thread ids (forum), problem ids (PAN 2013-2015), the file
    # (folders, jsonl). A tuple, because one text can belong to several: a forum text joined across threads,
    # a PAN text that occurs in several problems.
    groups: tuple[str, ...]
    community: str | None  # forum: subforum or market
    time: int | float | None  # Unix seconds
    origin: str  # where to find it: "file:line", "file#post_id,...", a path relative to the input


@dataclass
class SourceRead:
    """What reading an input gives: its texts, its files' checksums, and what was left out while reading."""

    texts: list[SourceText]
    inputs: list[dict[str, str]]  # {"path", "sha256"} per input file or folder
    authors: str  # what an author label means for this input (recorded in the manifest)
    dropped_texts: Counter = field(default_factory=Counter)  # reason -> texts


AUTHORS_AS_NAMED = "as named in the input"


# ----------------------------------------------------------------------------------------------- jsonl


def read_jsonl_texts(path: Path) -> SourceRead:
    """Lines `{author, text, discourse_type[, topic][, group][, community][, time]}`, one text each.

    `group` (what a same-author pair must not share) defaults to the line itself. `time` (Unix seconds)
    is given on every line or on none, so that time gaps mean the same for every pair.
    """
    path = Path(path)
    texts: list[SourceText] = []
    first_timed: bool | None = None
    for line, obj in read_jsonl(path):
        author = _non_empty(obj, "author", path, line)
        text = require_field(obj, "text", str, path, line)  # checked for lone surrogates: it is written out
        if not text.strip():
            raise DataError("text is empty", path=path, line=line, field="text")
        discourse_type = _non_empty(obj, "discourse_type", path, line)
        time = obj.get("time")
        if time is not None:
            time = require_field(obj, "time", (int, float), path, line)
        if first_timed is None:
            first_timed = time is not None
        elif first_timed != (time is not None):
            given = "given on the first line but not here" if first_timed else "given here but not on the first line"
            raise DataError(f"time is {given}; give it on every line or on none", path=path, line=line, field="time")
        origin = f"{path.name}:{line}"
        group = _optional(obj, "group", path, line)
        texts.append(
            SourceText(
                text_id=origin,
                author=author,
                text=text,
                discourse_type=discourse_type,
                topic=_optional(obj, "topic", path, line),
                groups=(group if group is not None else origin,),
                community=_optional(obj, "community", path, line),
                time=time,
                origin=origin,
            )
        )
    return SourceRead(texts, [{"path": str(path), "sha256": sha256_files([path])}], AUTHORS_AS_NAMED)


def _non_empty(obj: dict, name: str, path: Path, line: int) -> str:
    value = require_field(obj, name, str, path, line)
    if not value.strip():
        raise DataError("empty string", path=path, line=line, field=name)
    return value


def _optional(obj: dict, name: str, path: Path, line: int) -> str | None:
    """An optional label: absent or null is None; anything else must be a non-empty string."""
    if obj.get(name) is None:
        return None
    return _non_empty(obj, name, path, line)


# --------------------------------------------------------------------------------------------- folders

# AUTHOR/DISCOURSE_TYPE/NAME.txt
DEFAULT_FOLDER_PATTERN = r"(?P<author>[^/]+)/(?P<discourse_type>[^/]+)/[^/]+\.txt"
FOLDER_FIELDS = ("author", "discourse_type", "topic", "group", "community")


def read_folder_texts(root: Path, pattern: str | None = None, encoding: str = "utf-8") -> SourceRead:
    """Every file under `root` whose path relative to it (with "/") fully matches `pattern`, one text each.

    The pattern names groups `author` and `discourse_type`, and optionally `topic`, `group` (what a
    same-author pair must not share; default: the file) and `community`. Files that do not match are
    skipped and counted; hidden files and folders are never read. Line ends are normalised to "\\n"
    (CMCC has CRLF) and a UTF-8 BOM is dropped.
    """
    root = Path(root)
    if not root.is_dir():
        raise DataError("is not a directory", path=root)
    regex = _folder_regex(pattern or DEFAULT_FOLDER_PATTERN)
    texts: list[SourceText] = []
    read: list[Path] = []
    skipped = 0
    for path in sorted(root.rglob("*")):
        relative = path.relative_to(root).as_posix()
        if any(part.startswith(".") for part in relative.split("/")):
            continue
        if path.is_dir() and not path.is_symlink():
            continue
        try:
            relative.encode("utf-8")
        except UnicodeEncodeError:  # its id would be written to the set's files, which are UTF-8
            raise DataError(f"the name {relative!r} is not valid UTF-8; rename it", path=root) from None
        if path.is_dir():  # rglob does not follow a linked folder: its texts would be left out unsaid
            raise DataError("is a link to a folder, whose files are not read; copy the folder here instead", path=path)
        match = regex.fullmatch(relative)
        if match is None:
            skipped += 1
            continue
        if (problem := file_problem(path)) is not None:  # a broken link or a pipe was dropped unsaid
            raise DataError(f"{problem}; the pattern takes it for a text", path=path)
        text = _decode(path, encoding).replace("\r\n", "\n").replace("\r", "\n")
        if not text.strip():
            raise DataError("text is empty", path=path, field="text")
        check_text(text, path, None, "text")
        labels = {}
        for name in FOLDER_FIELDS:
            value = match.groupdict().get(name)
            if name in ("author", "discourse_type") and not value:
                raise DataError(f"the pattern gives an empty {name} for this file", path=path, field=name)
            labels[name] = value or None
        texts.append(
            SourceText(
                text_id=relative,
                author=labels["author"],
                text=text,
                discourse_type=labels["discourse_type"],
                topic=labels["topic"],
                groups=(labels["group"] or relative,),
                community=labels["community"],
                time=None,
                origin=relative,
            )
        )
        read.append(path)
    if not texts:
        raise DataError(f"no file here matches the pattern {regex.pattern!r}", path=root, field="pattern")
    dropped = Counter({"file not matching the pattern": skipped}) if skipped else Counter()
    return SourceRead(texts, [{"path": str(root), "sha256": sha256_files(read, root)}], AUTHORS_AS_NAMED, dropped)


def _folder_regex(pattern: str) -> re.Pattern[str]:
    try:
        regex = re.compile(pattern)
    except re.error as exc:
        raise HarnessError(f"pattern {pattern!r} is not a regular expression ({exc})") from None
    missing = [name for name in ("author", "discourse_type") if name not in regex.groupindex]
    if missing:
        raise HarnessError(f"pattern {pattern!r} needs the named groups (?P<author>...) and (?P<discourse_type>...)")
    unknown = sorted(set(regex.groupindex) - set(FOLDER_FIELDS))
    if unknown:
        raise HarnessError(f"pattern {pattern!r} names unknown groups {unknown}; known: {list(FOLDER_FIELDS)}")
    return regex


def _decode(path: Path, encoding: str) -> str:
    from tasks.pan.folders import decode_utf8

    try:
        raw = path.read_bytes()
    except OSError as exc:
        raise DataError(f"cannot read ({exc.strerror or exc})", path=path) from None
    if encoding.lower().replace("-", "").replace("_", "") in ("utf8", "utf8sig"):
        return decode_utf8(raw, path)
    try:
        return raw.decode(encoding)
    except LookupError:
        raise HarnessError(f"unknown encoding {encoding!r}") from None
    except UnicodeDecodeError as exc:
        line = raw.count(b"\n", 0, exc.start) + 1
        bad = raw[exc.start : exc.start + 1].hex()
        raise DataError(f"not valid {encoding} (byte 0x{bad} at offset {exc.start})", path=path, line=line) from None


# ----------------------------------------------------------------------------------------- pan-classic

PAN_CLASSIC_AUTHORS = (
    "linked: PAN 2013-2015 corpora name no authors. Each problem has a known author and an unknown one "
    "(the same where truth says Y); problems are linked where they share a text (after white-space "
    "normalisation), and each linked set is one author, named after its first problem. Two different labels "
    "may still be one real person whose problems share no text, so some different-author pairs may be "
    "same-author in truth."
)


def read_pan_classic_texts(corpus_dirs: Sequence[Path], *, genres: Sequence[str] | None = None) -> SourceRead:
    """The texts of one or several PAN 2013-2015 corpus folders (each with its truth.txt), one per distinct text.

    The corpus genre (`classic_genre`, else the corpus's entry in `genres`: `harness pairs --genre`) is the
    discourse type. A text found in several problems (PAN14
    reuses texts, even across train and test) is one text whose groups are all those problems, so no
    same-author pair takes both texts from one problem and no text lands in two splits.
    """
    from tasks.pan.folders import read_classic_corpus, read_classic_truth, warn_of_unknown_genre
    from toolkit.splits import text_key

    nodes = _Links()
    by_key: dict[str, int] = {}  # text key -> index in `found`
    found: list[dict] = []  # per distinct text: text, genre, node, problems, origin
    inputs: list[dict[str, str]] = []
    corpora: list[tuple[Sequence[VerificationProblem], Path]] = []  # read whole, before any genre warning
    for index, corpus_dir in enumerate(corpus_dirs):
        corpus_dir = Path(corpus_dir)
        problems, files = read_classic_corpus(corpus_dir, genre=genres[index] if genres else None)
        truth_path = corpus_dir / "truth.txt"
        truth, _ = read_classic_truth(truth_path)
        corpora.append((problems, corpus_dir))
        inputs.append({"path": str(corpus_dir), "sha256": sha256_files([*files, truth_path], corpus_dir)})
        for problem in problems:
            if problem.id not in truth:
                raise DataError(f"no answer for problem {problem.id!r}", path=truth_path, field="id")
            label = f"{corpus_dir.name}/{problem.id}"
            known, unknown = nodes.add(f"{label}/known"), nodes.add(f"{label}/unknown")
            if truth[problem.id].same:
                nodes.union(known, unknown)
            names = [f"known{i + 1:02d}" for i in range(len(problem.known))] + ["unknown"]
            for position, (text, name) in enumerate(zip(problem.texts, names, strict=True)):
                node = unknown if position == len(problem.texts) - 1 else known
                key = text_key(text)
                if key in by_key:  # the same text again: same author, one more problem it belongs to
                    entry = found[by_key[key]]
                    nodes.union(entry["node"], node)
                    if label not in entry["problems"]:
                        entry["problems"].append(label)
                    continue
                by_key[key] = len(found)
                genre = problem.discourse_types[position] if problem.discourse_types else "unknown"
                found.append(
                    {"text": text, "genre": genre, "node": node, "problems": [label], "origin": f"{label}/{name}"}
                )
    for problems, corpus_dir in corpora:  # the texts' discourse type, which cross-type pairs are made of
        warn_of_unknown_genre(problems, corpus_dir)
    texts = [
        SourceText(
            text_id=entry["origin"],
            author=nodes.name(entry["node"]),
            text=entry["text"],
            discourse_type=entry["genre"],
            topic=None,
            groups=tuple(entry["problems"]),
            community=None,
            time=None,
            origin=entry["origin"],
        )
        for entry in found
    ]
    return SourceRead(texts, inputs, PAN_CLASSIC_AUTHORS)


class _Links(UnionFind):
    """Union-find over author nodes named by strings; a set is named after its first (lowest) node."""

    def __init__(self) -> None:
        super().__init__()
        self.names: list[str] = []

    def add(self, name: str) -> int:  # type: ignore[override]  # a node needs its name
        self.names.append(name)
        return super().add()

    def name(self, node: int) -> str:
        return self.names[self.find(node)]
