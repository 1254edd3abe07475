"""PAN 2013-2015 verification corpora: one folder per problem plus truth.txt, read into records.

Each corpus folder (one per split of the `pan-classic` task) holds:
    <ID>/known01.txt ... knownNN.txt, <ID>/unknown.txt   one folder per problem
    truth.txt                                              "ID Y" / "ID N" lines (absent in TIRA mode)
    contents.json                                          optional: {"language", "genre", "problems"}

Bad input is a `DataError` naming the file, the line (for truth.txt) and the field.
"""

from __future__ import annotations

import codecs
import logging
import math
import os
import re
from collections.abc import Iterable, Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any

from core.errors import DataError, HarnessError
from core.files import file_problem, kind_of, parse_json
from core.records import VerificationProblem, VerificationTruth

logger = logging.getLogger("harness")

# Genre names as PAN 2013-2015 corpora declare them (contents.json "genre") -> the discourse type the
# harness records. A declared genre missing here is kept as declared (lower case).
CLASSIC_GENRES: dict[str, str] = {
    "essay": "essay",
    "essays": "essay",
    "novel": "novel",
    "novels": "novel",
    "textbook": "textbook",
    "textbooks": "textbook",
    "dialogue": "dialogue",
    "dialogues": "dialogue",
    "plays": "dialogue",
    "review": "review",
    "reviews": "review",
    "newspaper": "newspaper",
    "articles": "newspaper",
}

# Where contents.json names no genre (PAN 2013, PAN 2015), it is inferred from folder names. The
# PAN 2013 English corpus is textbook excerpts and the PAN 2015 English corpus is dialogue from plays;
# the other languages of those years mix genres, so the year rules apply only to English corpora.
_GENRE_KEYWORDS = (("essay", "essay"), ("novel", "novel"))
_ENGLISH_YEAR_GENRES = (("pan13", "textbook"), ("pan15", "dialogue"))
_OTHER_LANGUAGES = ("dutch", "greek", "spanish", "german")
UNKNOWN_GENRE = "unknown"

_KNOWN_NAME = re.compile(r"^known(\d+)\.txt$")


def read_text_file(path: Path, *, allow_empty: bool = False) -> str:
    """Read one text as UTF-8: a leading BOM is dropped and line ends are normalised to "\\n".

    Non-UTF-8 bytes and an empty (or whitespace-only) text are DataErrors naming the file; an
    empty text is kept with `allow_empty` (TIRA mode).
    """
    path = Path(path)
    try:
        raw = path.read_bytes()
    except OSError as exc:
        raise DataError(f"cannot read ({exc.strerror or exc})", path=path) from None
    text = decode_utf8(raw, path)
    # BOMs (dropped by decode_utf8) and line ends are corpus-construction artefacts, not style, and they
    # leak labels: in PAN14 novels train the 21 problems that mix BOM and BOM-less texts are all
    # different-author; in PAN14 novels test 28 of the 39 problems with some CRLF texts are same-author.
    text = text.replace("\r\n", "\n").replace("\r", "\n")
    if not text.strip() and not allow_empty:
        raise DataError("text is empty", path=path)
    return text


def decode_utf8(raw: bytes, path: Path) -> str:
    """A file's bytes as UTF-8 text without its leading BOM; bad bytes are a DataError naming line and byte offset.

    The offset counts from the file's first byte, BOM included (decoding "utf-8-sig" counts from after it).
    """
    start = len(codecs.BOM_UTF8) if raw.startswith(codecs.BOM_UTF8) else 0
    try:
        return raw[start:].decode("utf-8")
    except UnicodeDecodeError as exc:
        offset = start + exc.start
        line = raw.count(b"\n", 0, offset) + 1
        bad = raw[offset : offset + 1].hex()
        raise DataError(f"not valid UTF-8 (byte 0x{bad} at offset {offset})", path=path, line=line) from None


def normalised_genre(name: str) -> str:
    """A genre as the corpora and users write it (`Essays`, `novels`) in the harness's name (CLASSIC_GENRES), else
    lower-cased."""
    key = name.strip().lower()
    return CLASSIC_GENRES.get(key, key)


def classic_genre(corpus_dir: Path, contents: Mapping[str, Any] | None = None) -> str:
    """The discourse type of a PAN 2013-2015 corpus folder.

    Order: contents.json "genre" (mapped through CLASSIC_GENRES, else kept lower-cased); else a
    keyword in the corpus folder's or its parent's name, as given or after resolving links
    ("essay" -> essay, "novel" -> novel; for English corpora "pan13" -> textbook, "pan15" -> dialogue);
    else "unknown". Only those two levels are looked at, so unrelated ancestors cannot leak in.
    """
    contents = contents or {}
    declared = contents.get("genre")
    if isinstance(declared, str) and declared.strip():
        return normalised_genre(declared)
    corpus_dir = Path(corpus_dir)
    resolved = corpus_dir.resolve()
    names = [n.lower() for n in (corpus_dir.name, corpus_dir.parent.name, resolved.name, resolved.parent.name)]
    language = contents.get("language")
    language = language.lower() if isinstance(language, str) else ""
    for name in names:
        for keyword, genre in _GENRE_KEYWORDS:
            if keyword in name:
                return genre
    other_language = any(other in name for name in names for other in _OTHER_LANGUAGES)
    if language in ("", "english", "en") and not other_language:
        for name in names:
            for keyword, genre in _ENGLISH_YEAR_GENRES:
                if keyword in name:
                    return genre
    return UNKNOWN_GENRE


def _read_contents(corpus_dir: Path) -> tuple[dict[str, Any] | None, Path | None]:
    """contents.json of a corpus folder, if present: (object, path)."""
    path = corpus_dir / "contents.json"
    if not path.is_file():
        return None, None
    obj = parse_json(decode_utf8(path.read_bytes(), path), path)
    if not isinstance(obj, dict):
        raise DataError("expected a JSON object", path=path)
    # a field of another type was passed over as absent: a listed genre became "unknown" (audit 20, F6)
    for field, kind in (("language", str), ("genre", str), ("problems", list)):
        if field in obj and not isinstance(obj[field], kind):
            raise DataError(f"expected {kind.__name__}, got {kind_of(obj[field])}", path=path, field=field)
    return obj, path


def problem_dirs(corpus_dir: Path) -> list[Path]:
    """The problem subfolders of a corpus folder, sorted by name; hidden and `__` folders are skipped."""
    for name in ("truth.txt", "contents.json"):  # a folder of that name would be taken for a problem folder
        if (corpus_dir / name).is_dir():
            raise DataError(f"is a folder, not a file; the corpus's {name} must be a file", path=corpus_dir / name)
    dirs = sorted(p for p in corpus_dir.iterdir() if p.is_dir() and not p.name.startswith((".", "__")))
    if not dirs:
        raise DataError(
            "no problem folders here (expected <ID>/known01.txt ... <ID>/unknown.txt, PAN 2013-2015 layout)",
            path=corpus_dir,
        )
    looks_like_corpora = all(
        not (d / "unknown.txt").exists() and not any(_KNOWN_NAME.match(f.name) for f in d.iterdir()) for d in dirs
    )
    if looks_like_corpora:
        # the PAN archives nest corpus folders one or two levels down: name them rather than just refuse
        candidates = [*dirs, *(sub for d in dirs for sub in sorted(d.iterdir()) if sub.is_dir())]
        hint = [
            str(c.relative_to(corpus_dir))
            for c in candidates
            if (c / "truth.txt").is_file() or (c / "contents.json").is_file()
        ]
        shown = ", ".join(hint[:5]) + (f" and {len(hint) - 5} more" if len(hint) > 5 else "")
        where = f" (these look like corpus folders: {shown}; point at one of them)" if hint else ""
        raise DataError(
            f"no problem folders here: no subfolder holds unknown.txt or known01.txt{where}", path=corpus_dir
        )
    return dirs


def read_classic_corpus(
    corpus_dir: Path, *, allow_empty_texts: bool = False, genre: str | None = None
) -> tuple[tuple[VerificationProblem, ...], list[Path]]:
    """Read the problems of one PAN 2013-2015 corpus folder (not its truth): problems and the files read.

    Problems come in problem-folder name order (the order of truth.txt and contents.json in the PAN
    corpora); each problem's texts are known01..knownNN in number order, then unknown.txt. `genre` is the
    corpus's genre where `classic_genre` finds none (`harness predict --genre`: TIRA mounts a corpus as "input");
    one that contradicts the genre it finds is a HarnessError.
    """
    corpus_dir = Path(corpus_dir)
    if not corpus_dir.is_dir():
        raise DataError("corpus folder not found", path=corpus_dir)
    contents, contents_path = _read_contents(corpus_dir)
    found = classic_genre(corpus_dir, contents)
    given = None if genre is None else normalised_genre(genre)
    if given is not None and found not in (UNKNOWN_GENRE, given):
        raise HarnessError(
            f"{corpus_dir}: genre {given!r} was given, but the corpus is {found!r} (from its contents.json or its "
            "folder's name)"
        )
    genre = given if found == UNKNOWN_GENRE and given else found
    files: list[Path] = [contents_path] if contents_path is not None else []
    problems: list[VerificationProblem] = []
    for problem_dir in problem_dirs(corpus_dir):
        if any(character.isspace() for character in problem_dir.name):
            # truth.txt and answers.txt are "ID value" lines split at white space: no line could name this problem
            raise DataError(
                "a problem folder's name must not hold white space: PAN's truth.txt and answers.txt ('ID value' "
                "lines) cannot name it",
                path=problem_dir,
            )
        known = sorted((int(m.group(1)), f) for f in problem_dir.iterdir() if (m := _KNOWN_NAME.match(f.name)))
        unknown = problem_dir / "unknown.txt"
        if not os.path.lexists(unknown):
            raise DataError("problem folder without unknown.txt", path=problem_dir)
        for path in (*(f for _, f in known), unknown):  # a broken link or a folder was a problem short of a text
            if (problem := file_problem(path)) is not None:
                raise DataError(f"{problem}; a problem's texts must be files", path=path)
        if not known:
            raise DataError("problem folder without known texts (known01.txt ...)", path=problem_dir)
        numbers = [n for n, _ in known]
        if len(set(numbers)) != len(numbers):
            raise DataError("known texts with the same number (e.g. known1.txt and known01.txt)", path=problem_dir)
        paths = [f for _, f in known] + [unknown]
        texts = tuple(read_text_file(f, allow_empty=allow_empty_texts) for f in paths)
        files.extend(paths)
        problems.append(VerificationProblem(problem_dir.name, texts, (genre,) * len(texts)))
    if contents is not None and isinstance(contents.get("problems"), list):
        _check_contents_listing(contents["problems"], problems, contents_path)
    return tuple(problems), files


def warn_of_unknown_genre(problems: Sequence[VerificationProblem], corpus_dir: Path) -> None:
    """Say that a corpus read has no genre (see `classic_genre`): a copy under another folder name labels the same
    problems otherwise, and the run's per-type rows would read unknown+unknown unexplained."""
    if any(UNKNOWN_GENRE in problem.discourse_types for problem in problems):
        logger.warning(
            "%s: discourse type unknown (no \"genre\" in a contents.json, no genre in the folder's or its parent's "
            "name: essay, novel, or pan13/pan15 for English corpora), so per-type rows read unknown+unknown, and a "
            "system fitted on a known genre may answer otherwise than on the corpus under its own name (a system "
            "that routes by type sends unknown types to its general model); to give the genre, `--genre GENRE` "
            "(predict, convert, pairs), or read the folder through a link named after its corpus "
            "(pan15-english-test -> this folder)",
            corpus_dir,
        )


def _check_contents_listing(listed: list[Any], problems: Sequence[VerificationProblem], path: Path | None) -> None:
    """contents.json's problem list, where present, must name exactly the problem folders."""
    names = {str(x) for x in listed}
    folders = {p.id for p in problems}
    if names - folders:
        missing = sorted(names - folders)[:5]
        raise DataError(f"lists problems without a folder: {', '.join(missing)}", path=path, field="problems")
    if folders - names:
        extra = sorted(folders - names)[:5]
        raise DataError(f"does not list problem folders: {', '.join(extra)}", path=path, field="problems")


def _id_lines(path: Path, expected: str, missing: str) -> Iterator[tuple[int, str, str]]:
    """(line number, id, second field) of each "ID field" line of a PAN 2013-2015 text file (BOM, CRLF and blank
    lines tolerated); a line of another shape, a repeated id and a file with no line are DataErrors."""
    try:
        raw = path.read_bytes()
    except FileNotFoundError:
        raise DataError(missing, path=path) from None
    except OSError as exc:
        raise DataError(f"cannot read ({exc.strerror or exc})", path=path) from None
    first: dict[str, int] = {}
    # line ends as an editor counts them: str.splitlines would also split at a form feed, U+2028 and the like, and
    # every error after one would name the wrong line
    for line_no, line in enumerate(re.split(r"\r\n|\r|\n", decode_utf8(raw, path)), start=1):
        parts = line.split()
        if not parts:
            continue
        if len(parts) != 2:
            raise DataError(f"expected {expected}, got {line.strip()[:80]!r}", path=path, line=line_no)
        problem_id, field = parts
        if problem_id in first:
            raise DataError(
                f"duplicate id {problem_id!r} (first on line {first[problem_id]})", path=path, line=line_no, field="id"
            )
        first[problem_id] = line_no
        yield line_no, problem_id, field
    if not first:
        raise DataError("file is empty", path=path)


def read_classic_truth(path: Path) -> tuple[dict[str, VerificationTruth], dict[str, int]]:
    """Read a PAN 2013-2015 truth.txt ("ID Y|N" lines; BOM, CRLF and blank lines tolerated).

    Returns truth by id (authors None: the corpora do not name them; see `core.records.placeholder_authors`)
    and the line each id is on.
    """
    path = Path(path)
    truth: dict[str, VerificationTruth] = {}
    lines: dict[str, int] = {}
    for line_no, problem_id, answer in _id_lines(path, "'ID Y' or 'ID N'", "truth file not found"):
        if answer.upper() not in ("Y", "N"):
            raise DataError(f"expected Y or N, got {answer!r}", path=path, line=line_no, field="answer")
        truth[problem_id] = VerificationTruth(problem_id, answer.upper() == "Y", None)
        lines[problem_id] = line_no
    return truth, lines


CLASSIC_ANSWERS = "answers.txt"  # PAN 2013-2015's answers file: "ID value" lines (the ID without quotes)


def classic_answer_lines(path: Path) -> Iterator[tuple[int, str, str]]:
    """(line number, id, value as written) of each line of a PAN 2013-2015 answers.txt."""
    return _id_lines(Path(path), "'ID value'", "answers file not found")


def read_classic_answers(path: Path) -> dict[str, float]:
    """Read a PAN 2013-2015 answers.txt ("EN101 0.513" lines; BOM, CRLF and blank lines tolerated) into value by id.

    A line without exactly two fields, a value that is not a number in [0, 1], and a duplicate id are DataErrors
    naming file, line and field.
    """
    path = Path(path)
    answers: dict[str, float] = {}
    for line_no, problem_id, text in classic_answer_lines(path):
        try:
            value = float(text)
        except ValueError:
            value = math.nan
        if not (math.isfinite(value) and 0.0 <= value <= 1.0):
            raise DataError(f"expected a number in [0, 1], got {text!r}", path=path, line=line_no, field="value")
        answers[problem_id] = value
    return answers


def classic_answers_text(answers: Iterable[tuple[str, float]]) -> str:
    """answers.txt as PAN 2013-2015 asked for it: one "ID value" line per problem (the value written in full, so the
    file scores exactly as answers.jsonl does)."""
    return "".join(f"{problem_id} {float(value)!r}\n" for problem_id, value in answers)
