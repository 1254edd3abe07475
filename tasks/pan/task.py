"""PAN authorship verification task adapters: PAN 2020-2023 jsonl pairs and PAN 2013-2015 problem folders.

Both adapters read a dataset folder with one subfolder per split (`<data>/train/`, `<data>/test/`) into
the same records (`VerificationProblem`, `VerificationTruth`), validating everything they read: bad
input is a `DataError` that names the file, the line (for jsonl and truth.txt) and the field.
Loading never writes anything.

PAN 2020-2023 (`Pan23Task`), per split folder:
    pairs.jsonl[.gz]  {"id": str, "pair": [text1, text2], "discourse_types": [t1, t2] (optional)}
    truth.jsonl[.gz]  {"id": str, "same": bool, "authors": [a, b] (optional)}

PAN 2013-2015 (`PanClassicTask`), each split folder is one corpus folder:
    <ID>/known01.txt ... knownNN.txt, <ID>/unknown.txt   one folder per problem
    truth.txt                                              "ID Y" / "ID N" lines (absent in TIRA mode)
    contents.json                                          optional: {"language", "genre", "problems"}
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any, ClassVar

from harness.errors import DataError, HarnessError
from harness.files import find_data_file, read_jsonl, require_field, sha256_files
from harness.records import Answer, VerificationData, VerificationProblem, VerificationTruth
from harness.task import TaskMetadata

__all__ = [
    "CLASSIC_GENRES",
    "PAN23_DISCOURSE_TYPES",
    "Pan23Task",
    "PanClassicTask",
    "check_truth_ids",
    "classic_genre",
    "placeholder_authors",
    "read_classic_corpus",
    "read_classic_truth",
    "read_pairs",
    "read_text_file",
    "read_truth_jsonl",
]

PAN23_DISCOURSE_TYPES = ("essay", "email", "interview", "speech_transcription")

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


# ----------------------------------------------------------------------------------------------------
# Shared reading helpers
# ----------------------------------------------------------------------------------------------------


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
    try:
        text = raw.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        line = raw.count(b"\n", 0, exc.start) + 1
        bad = raw[exc.start : exc.start + 1].hex()
        raise DataError(f"not valid UTF-8 (byte 0x{bad} at offset {exc.start})", path=path, line=line) from None
    # BOMs (dropped by utf-8-sig) and line ends are corpus-construction artefacts, not style, and they
    # leak labels: in PAN14 novels train the 21 problems that mix BOM and BOM-less texts are all
    # different-author; in PAN14 novels test 28 of the 39 problems with some CRLF texts are same-author.
    text = text.replace("\r\n", "\n").replace("\r", "\n")
    if not text.strip() and not allow_empty:
        raise DataError("text is empty", path=path)
    return text


def _split_dir(data_dir: Path, split: str, metadata: TaskMetadata, expected: str) -> Path:
    """`<data_dir>/<split>`, checked to exist; errors say what layout was expected."""
    if split not in metadata.splits:
        raise HarnessError(f"task {metadata.name}: unknown split {split!r}; splits are {', '.join(metadata.splits)}")
    data_dir = Path(data_dir)
    if not data_dir.is_dir():
        raise DataError(f"data folder not found; expected train/ and test/ folders holding {expected}", path=data_dir)
    folder = data_dir / split
    if not folder.is_dir():
        raise DataError(f"missing split folder '{split}/'; expected {split}/ holding {expected}", path=folder)
    return folder


def check_truth_ids(
    problems: Sequence[VerificationProblem],
    truth: Mapping[str, VerificationTruth],
    truth_lines: Mapping[str, int],
    truth_path: Path,
    problems_source: Path,
) -> None:
    """Every problem has truth and every truth id is a problem; otherwise a DataError naming the truth file and id."""
    ids = {p.id for p in problems}
    for problem_id, line in truth_lines.items():
        if problem_id not in ids:
            raise DataError(
                f"truth for unknown problem {problem_id!r} (not in {problems_source})",
                path=truth_path,
                line=line,
                field="id",
            )
    for problem in problems:
        if problem.id not in truth:
            raise DataError(f"no truth for problem {problem.id!r} (in {problems_source})", path=truth_path, field="id")


def _answers_by_id(answers: Sequence[Answer]) -> dict[str, float]:
    """Answers as the id -> score mapping the evaluator takes; a repeated id is an error, not a silent overwrite."""
    values: dict[str, float] = {}
    for answer in answers:
        if answer.id in values:
            raise DataError(f"more than one answer for problem {answer.id!r}", field="id")
        values[answer.id] = float(answer.value)
    return values


def _require_truth(data: VerificationData, task: str) -> Mapping[str, VerificationTruth]:
    if data.truth is None:
        raise HarnessError(f"task {task}: no truth to score against ({data.source} was loaded without truth)")
    return data.truth


# ----------------------------------------------------------------------------------------------------
# PAN 2020-2023: pairs.jsonl + truth.jsonl
# ----------------------------------------------------------------------------------------------------


def read_pairs(path: Path, *, allow_empty_texts: bool = False) -> tuple[VerificationProblem, ...]:
    """Read a PAN 2020-2023 pairs file (plain or .gz) into problems, in file order, validating each line.

    An empty text is an error, except with `allow_empty_texts` (TIRA mode, where every problem
    must still get an answer: `harness predict` answers such problems with 0.5).
    """
    path = Path(path)
    problems: list[VerificationProblem] = []
    first_line: dict[str, int] = {}
    for line, obj in read_jsonl(path):
        problem_id = _read_id(obj, path, line, first_line)
        pair = require_field(obj, "pair", list, path, line)
        if len(pair) != 2:
            raise DataError(f"expected 2 texts, got {len(pair)}", path=path, line=line, field="pair")
        texts = []
        for i, text in enumerate(pair):
            if not isinstance(text, str):
                raise DataError(f"expected str, got {type(text).__name__}", path=path, line=line, field=f"pair[{i}]")
            if not text.strip() and not allow_empty_texts:
                raise DataError("text is empty", path=path, line=line, field=f"pair[{i}]")
            texts.append(text)
        types = _read_string_list(obj, "discourse_types", len(texts), path, line, optional=True)
        problems.append(VerificationProblem(problem_id, tuple(texts), types))
    return tuple(problems)


def read_truth_jsonl(path: Path) -> tuple[dict[str, VerificationTruth], dict[str, int]]:
    """Read a PAN 2020-2023 truth file (plain or .gz): truth by id, and the line each id is on."""
    path = Path(path)
    truth: dict[str, VerificationTruth] = {}
    lines: dict[str, int] = {}
    for line, obj in read_jsonl(path):
        problem_id = _read_id(obj, path, line, lines)
        same = require_field(obj, "same", bool, path, line)
        authors = _read_string_list(obj, "authors", 2, path, line, optional=True)
        if authors is not None and (authors[0] == authors[1]) != same:
            raise DataError(
                f"authors {list(authors)} contradict same={str(same).lower()}", path=path, line=line, field="authors"
            )
        truth[problem_id] = VerificationTruth(problem_id, same, authors)
    return truth, lines


def _read_id(obj: dict[str, Any], path: Path, line: int, first_line: dict[str, int]) -> str:
    """The line's non-empty, not yet seen `id`; records the line it was first seen on."""
    problem_id = require_field(obj, "id", str, path, line)
    if not problem_id.strip():
        raise DataError("empty id", path=path, line=line, field="id")
    if problem_id in first_line:
        raise DataError(
            f"duplicate id {problem_id!r} (first on line {first_line[problem_id]})", path=path, line=line, field="id"
        )
    first_line[problem_id] = line
    return problem_id


def _read_string_list(
    obj: dict[str, Any], field: str, length: int, path: Path, line: int, *, optional: bool
) -> tuple[str, ...] | None:
    """obj[field] as a tuple of `length` non-empty strings; None where optional and absent (or null)."""
    if optional and obj.get(field) is None:
        return None
    values = require_field(obj, field, list, path, line)
    if len(values) != length:
        raise DataError(f"expected {length} entries, got {len(values)}", path=path, line=line, field=field)
    for i, value in enumerate(values):
        if not isinstance(value, str):
            raise DataError(f"expected str, got {type(value).__name__}", path=path, line=line, field=f"{field}[{i}]")
        if not value.strip():
            raise DataError("empty string", path=path, line=line, field=f"{field}[{i}]")
    return tuple(values)


class PanVerificationTask:
    """Scoring shared by the PAN verification tasks: PAN's official evaluator plus derived measures."""

    metadata: ClassVar[TaskMetadata]

    def score(self, answers: Sequence[Answer], data: VerificationData) -> dict[str, float]:
        """Score answers against the split's truth with the task's evaluator profile."""
        return self.score_truth(_answers_by_id(answers), _require_truth(data, self.metadata.name))

    def score_truth(
        self,
        answers: Mapping[str, float],
        truth: Mapping[str, VerificationTruth],
        *,
        profile: str | None = None,
        answers_path: Path | None = None,
    ) -> dict[str, float]:
        """Score answers by id against truth by id; `profile` (pan20/pan23) overrides the task's evaluator.

        With the task's own profile the result holds exactly the task's measures, in its order.
        """
        from tasks.pan.evaluator import score_answers

        scores = score_answers(answers, truth, profile=profile or self.metadata.evaluator, answers_path=answers_path)
        scores.update(self.derived_measures(scores))
        if profile in (None, self.metadata.evaluator):
            return {name: scores[name] for name in self.metadata.measures}
        return scores

    def derived_measures(self, scores: Mapping[str, float]) -> dict[str, float]:
        """Measures computed from the evaluator's (none by default)."""
        return {}


class Pan23Task(PanVerificationTask):
    """PAN 2020-2023 authorship verification: pairs of texts, same author or not; PAN 2023 measures."""

    metadata: ClassVar[TaskMetadata] = TaskMetadata(
        name="pan23",
        version="1",
        kind="verification",
        description=(
            "PAN 2020-2023 authorship verification: pairs.jsonl + truth.jsonl per split; "
            "scored with the PAN 2023 evaluator (overall = mean of AUC, c@1, F0.5u, F1, Brier)"
        ),
        main_score="overall",
        measures=("auc", "c_at_1", "f_05_u", "f1", "brier", "overall"),
        splits=("train", "test"),
        evaluator="pan23",
        citation=(
            "Efstathios Stamatatos, Krzysztof Kredens, Piotr Pezik, Annina Heini, Janek Bevendorff, "
            "Benno Stein, Martin Potthast. Overview of the Authorship Verification Task at PAN 2023. "
            "CLEF 2023 Working Notes, CEUR-WS.org vol. 3497, 2023."
        ),
        extra={"discourse_types": PAN23_DISCOURSE_TYPES},
    )

    _EXPECTED = "pairs.jsonl[.gz] and truth.jsonl[.gz], the PAN 2020-2023 layout"

    def load(self, data_dir: Path, split: str) -> VerificationData:
        """Read `<data_dir>/<split>/pairs.jsonl[.gz]` and its `truth.jsonl[.gz]`."""
        folder = _split_dir(data_dir, split, self.metadata, self._EXPECTED)
        pairs_path = find_data_file(folder, "pairs.jsonl")
        truth_path = find_data_file(folder, "truth.jsonl")
        problems = read_pairs(pairs_path)
        truth, truth_lines = read_truth_jsonl(truth_path)
        check_truth_ids(problems, truth, truth_lines, truth_path, pairs_path)
        checksum = sha256_files([pairs_path, truth_path], root=folder)
        return VerificationData(problems, truth, folder, checksum)

    def load_inputs(self, input_dir: Path) -> VerificationData:
        """TIRA mode: read only `<input_dir>/pairs.jsonl[.gz]`; truth is None and never looked for."""
        input_dir = Path(input_dir)
        pairs_path = find_data_file(input_dir, "pairs.jsonl")
        problems = read_pairs(pairs_path, allow_empty_texts=True)
        return VerificationData(problems, None, input_dir, sha256_files([pairs_path], root=input_dir))

    def read_truth(self, path: Path) -> dict[str, VerificationTruth]:
        """Read a truth file, or the truth.jsonl[.gz] of a folder, into truth by problem id."""
        path = Path(path)
        if path.is_dir():
            path = find_data_file(path, "truth.jsonl")
        elif not path.exists():
            raise DataError("truth file not found", path=path)
        return read_truth_jsonl(path)[0]


# ----------------------------------------------------------------------------------------------------
# PAN 2013-2015: problem folders + truth.txt
# ----------------------------------------------------------------------------------------------------


def placeholder_authors(problem_id: str, same: bool) -> tuple[str, str]:
    """Problem-local author labels for a PAN 2013-2015 problem, whose corpus does not name authors.

    The known texts get `"<id>-known"`; the unknown text gets the same label when `same`, else
    `"<id>-unknown"`, so `authors[0] == authors[1]` exactly when the truth says Y. `PanClassicTask`
    itself reports `authors=None`; training code that needs author labels (pair mining, contrastive
    losses) can call this, and `harness convert` writes these labels into truth.jsonl.

    Caveat: the labels are local to one problem. PAN 2014 corpora reuse texts and authors across
    problems (and across train and test for essays), so two different labels may be the same real
    person: never treat labels from different problems as different authors (e.g. as negatives).
    """
    return f"{problem_id}-known", f"{problem_id}-known" if same else f"{problem_id}-unknown"


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
        key = declared.strip().lower()
        return CLASSIC_GENRES.get(key, key)
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
    try:
        obj = json.loads(path.read_bytes().decode("utf-8-sig"))
    except UnicodeDecodeError as exc:
        raise DataError(f"not valid UTF-8 ({exc.reason})", path=path) from None
    except json.JSONDecodeError as exc:
        raise DataError(f"malformed JSON ({exc.msg})", path=path, line=exc.lineno) from None
    if not isinstance(obj, dict):
        raise DataError("expected a JSON object", path=path)
    return obj, path


def _problem_dirs(corpus_dir: Path) -> list[Path]:
    """The problem subfolders of a corpus folder, sorted by name; hidden and `__` folders are skipped."""
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
    corpus_dir: Path, *, allow_empty_texts: bool = False
) -> tuple[tuple[VerificationProblem, ...], list[Path]]:
    """Read the problems of one PAN 2013-2015 corpus folder (not its truth): problems and the files read.

    Problems come in problem-folder name order (the order of truth.txt and contents.json in the PAN
    corpora); each problem's texts are known01..knownNN in number order, then unknown.txt.
    """
    corpus_dir = Path(corpus_dir)
    if not corpus_dir.is_dir():
        raise DataError("corpus folder not found", path=corpus_dir)
    contents, contents_path = _read_contents(corpus_dir)
    genre = classic_genre(corpus_dir, contents)
    files: list[Path] = [contents_path] if contents_path is not None else []
    problems: list[VerificationProblem] = []
    for problem_dir in _problem_dirs(corpus_dir):
        known = sorted(
            (int(m.group(1)), f) for f in problem_dir.iterdir() if f.is_file() and (m := _KNOWN_NAME.match(f.name))
        )
        unknown = problem_dir / "unknown.txt"
        if not unknown.is_file():
            raise DataError("problem folder without unknown.txt", path=problem_dir)
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


def read_classic_truth(path: Path) -> tuple[dict[str, VerificationTruth], dict[str, int]]:
    """Read a PAN 2013-2015 truth.txt ("ID Y|N" lines; BOM, CRLF and blank lines tolerated).

    Returns truth by id (authors None: the corpora do not name them; see `placeholder_authors`)
    and the line each id is on.
    """
    path = Path(path)
    try:
        raw = path.read_bytes()
    except FileNotFoundError:
        raise DataError("truth file not found", path=path) from None
    except OSError as exc:
        raise DataError(f"cannot read ({exc.strerror or exc})", path=path) from None
    try:
        content = raw.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        line = raw.count(b"\n", 0, exc.start) + 1
        raise DataError(f"not valid UTF-8 ({exc.reason})", path=path, line=line) from None
    truth: dict[str, VerificationTruth] = {}
    lines: dict[str, int] = {}
    for line_no, line in enumerate(content.splitlines(), start=1):
        parts = line.split()
        if not parts:
            continue
        if len(parts) != 2:
            raise DataError(f"expected 'ID Y' or 'ID N', got {line.strip()!r}", path=path, line=line_no)
        problem_id, answer = parts
        if problem_id in lines:
            raise DataError(
                f"duplicate id {problem_id!r} (first on line {lines[problem_id]})", path=path, line=line_no, field="id"
            )
        if answer.upper() not in ("Y", "N"):
            raise DataError(f"expected Y or N, got {answer!r}", path=path, line=line_no, field="answer")
        truth[problem_id] = VerificationTruth(problem_id, answer.upper() == "Y", None)
        lines[problem_id] = line_no
    if not truth:
        raise DataError("file is empty", path=path)
    return truth, lines


class PanClassicTask(PanVerificationTask):
    """PAN 2013-2015 authorship verification: 1-5 known texts and one unknown text per problem.

    Ranked by AUC x c@1 as PAN 2014 and 2015 did; the PAN 2023 measures are reported as well.
    Each problem's discourse types are its corpus genre, once per text (see `classic_genre`).
    Truth has `authors=None` because the corpora do not name authors; `placeholder_authors`
    gives consistent problem-local labels where training code needs them.
    """

    metadata: ClassVar[TaskMetadata] = TaskMetadata(
        name="pan-classic",
        version="1",
        kind="verification",
        description=(
            "PAN 2013-2015 authorship verification: problem folders (known01..NN.txt, unknown.txt) + truth.txt "
            "per split; ranked by AUC x c@1 (PAN 2014/15), PAN 2023 measures also reported"
        ),
        main_score="auc_x_c_at_1",
        measures=("auc", "c_at_1", "auc_x_c_at_1", "f_05_u", "f1", "brier", "overall"),
        splits=("train", "test"),
        evaluator="pan23",  # auc, c@1 and the extra measures come from the PAN 2023 profile
        citation=(
            "Patrick Juola, Efstathios Stamatatos. Overview of the Author Identification Task at PAN 2013. "
            "CLEF 2013 Working Notes, CEUR-WS.org vol. 1179, 2013. | "
            "Efstathios Stamatatos, Walter Daelemans, Ben Verhoeven, Martin Potthast, Benno Stein, Patrick Juola, "
            "Miguel A. Sanchez-Perez, Alberto Barron-Cedeno. Overview of the Author Identification Task at PAN 2014. "
            "CLEF 2014 Working Notes, CEUR-WS.org vol. 1180, 2014. | "
            "Efstathios Stamatatos, Walter Daelemans, Ben Verhoeven, Patrick Juola, Aurelio Lopez-Lopez, "
            "Martin Potthast, Benno Stein. Overview of the Author Identification Task at PAN 2015. "
            "CLEF 2015 Working Notes, CEUR-WS.org vol. 1391, 2015."
        ),
        extra={"genres": CLASSIC_GENRES},
    )

    _EXPECTED = "a PAN 2013-2015 corpus folder: <ID>/known01.txt ... <ID>/unknown.txt and truth.txt"

    def load(self, data_dir: Path, split: str) -> VerificationData:
        """Read the corpus folder `<data_dir>/<split>/` with its truth.txt."""
        folder = _split_dir(data_dir, split, self.metadata, self._EXPECTED)
        _problem_dirs(folder)  # cheap layout check first: a wrong folder is named before truth.txt is asked for
        truth_path = folder / "truth.txt"
        if not truth_path.is_file():
            raise DataError("expected truth.txt ('ID Y|N' lines) in this corpus folder", path=folder)
        truth, truth_lines = read_classic_truth(truth_path)
        problems, files = read_classic_corpus(folder)
        check_truth_ids(problems, truth, truth_lines, truth_path, folder)
        checksum = sha256_files([*files, truth_path], root=folder)
        return VerificationData(problems, truth, folder, checksum)

    def load_inputs(self, input_dir: Path) -> VerificationData:
        """TIRA mode: read the problem folders of `input_dir` only; truth is None and truth.txt never read."""
        input_dir = Path(input_dir)
        problems, files = read_classic_corpus(input_dir, allow_empty_texts=True)
        return VerificationData(problems, None, input_dir, sha256_files(files, root=input_dir))

    def read_truth(self, path: Path) -> dict[str, VerificationTruth]:
        """Read a truth.txt, or the truth.txt of a corpus folder, into truth by problem id."""
        path = Path(path)
        if path.is_dir():
            if not (path / "truth.txt").is_file():
                raise DataError("expected truth.txt in this directory", path=path)
            path = path / "truth.txt"
        return read_classic_truth(path)[0]

    def derived_measures(self, scores: Mapping[str, float]) -> dict[str, float]:
        """AUC x c@1, the PAN 2014/15 ranking score."""
        return {"auc_x_c_at_1": scores["auc"] * scores["c_at_1"]}
