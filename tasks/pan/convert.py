"""Convert a PAN 2013-2015 verification corpus folder to the PAN 2020-2023 jsonl format.

One corpus folder (problem folders + truth.txt, if present) becomes one split folder of the
`pan23` task: `pairs.jsonl` and, when the corpus has truth, `truth.jsonl`. Each problem becomes
one pair:

    pair            = [known texts joined by one blank line, unknown text]   (see `join_known`)
    known_spans     = [[start, end], ...]: where each known text lies in pair[0]
    discourse_types = [genre, genre]   (the corpus genre, see tasks.pan.folders.classic_genre)
    authors         = placeholder_authors(id, same): ["<id>-known", "<id>-known"] when same,
                      ["<id>-known", "<id>-unknown"] when not, so `same` and `authors` agree.

The conversion loses nothing: pair[0] is what PAN 2020-2023 tools read, and `known_spans` (a field
they ignore) lets `tasks.pan.jsonl.read_pairs` cut it back into the known texts exactly as the
corpus holds them. So `pan23` on converted data hands systems the very problems `pan-classic` hands
them (same texts, ids, order, discourse types) and a system gives the same answers both ways. Without
the spans a system would see one known text per problem, which changes its training documents (e.g.
TF-IDF document frequencies), the cross-fitting folds (problems that share one known text would no
longer be grouped) and whatever it computes per known text.

Texts are read as `PanClassicTask` reads them (UTF-8, BOM dropped, line ends normalised to "\\n").
Everything is read and validated before anything is written; files are written atomically
(to a temporary name, renamed into place), so a failure leaves no half-written output.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Sequence
from pathlib import Path

from core.errors import HarnessError
from core.files import ATOMIC_WRITE_SUFFIX, atomic_writes, remove_temporaries
from core.records import VerificationProblem, placeholder_authors
from tasks.pan.common import check_truth_ids
from tasks.pan.folders import read_classic_corpus, read_classic_truth, warn_of_unknown_genre

logger = logging.getLogger("harness")

PAIRS = "pairs.jsonl"
TRUTH = "truth.jsonl"
# Plain and gzipped twins both count as outputs: a stale twin would be read instead of, or beside, new files.
_OUTPUTS = (PAIRS, f"{PAIRS}.gz", TRUTH, f"{TRUTH}.gz")
_KEEP_OR_MOVE = "convert replaces only the files it writes, and deletes nothing; move it or name another folder"


def join_known(texts: Sequence[str]) -> tuple[str, list[list[int]]]:
    """Known texts as one text with a blank line between each two, and the [start, end) span of each in it.

    The texts are kept whole (trailing line breaks included), so `joined[start:end]` gives each back
    exactly; between two texts comes "\\n" after a text that ends with a line break, else "\\n\\n".
    """
    parts: list[str] = []
    spans: list[list[int]] = []
    length = 0
    for i, text in enumerate(texts):
        if i:
            separator = "\n" if texts[i - 1].endswith("\n") else "\n\n"
            parts.append(separator)
            length += len(separator)
        parts.append(text)
        spans.append([length, length + len(text)])
        length += len(text)
    return "".join(parts), spans


def _pair_row(problem: VerificationProblem) -> dict[str, object]:
    known, spans = join_known(problem.known)
    row: dict[str, object] = {"id": problem.id, "pair": [known, problem.unknown]}
    if problem.discourse_types:
        row["discourse_types"] = [problem.discourse_types[0], problem.discourse_types[-1]]
    row["known_spans"] = spans
    return row


def convert_classic_to_jsonl(src: Path, dst: Path, *, overwrite: bool = False, genre: str | None = None) -> int:
    """Convert the PAN 2013-2015 corpus folder `src` into `dst/pairs.jsonl` (+ `dst/truth.jsonl`).

    `genre` is the corpus's genre (the texts' discourse type) where neither its contents.json nor its folder's name
    gives one (see `read_classic_corpus`).

    Returns the number of problems converted. Existing outputs in `dst` (pairs.jsonl, truth.jsonl or
    their .gz twins) are a HarnessError unless `overwrite` is true; with it, the files convert writes are
    replaced, and one it would not write (a .gz twin, or a truth.jsonl when `src` has no truth, which would
    then stand beside pairs that are not its own) is refused, not deleted: nothing else in `dst` changes.
    """
    src, dst = Path(src), Path(dst)
    existing = [dst / name for name in _OUTPUTS if (dst / name).exists() or (dst / name).is_symlink()]
    if existing and not overwrite:
        names = ", ".join(p.name for p in existing)
        verb = "exists" if len(existing) == 1 else "exist"
        raise HarnessError(
            f"{dst}: {names} already {verb}; pass --overwrite to replace {'it' if len(existing) == 1 else 'them'}"
        )
    truth_path = src / "truth.txt"
    writes = [dst / PAIRS, dst / TRUTH] if truth_path.is_file() else [dst / PAIRS]
    for path in existing:
        if path not in writes:
            why = "would stand beside the new " + (" and ".join(p.name for p in writes))
            if path.name == TRUTH:
                why = f"{src} has no truth.txt, so this truth would stand beside pairs that are not its own"
            raise HarnessError(f"{path}: {why}; {_KEEP_OR_MOVE}")
        if not path.is_file():
            raise HarnessError(f"{path}: is not a file, and the converted {path.name} goes there; {_KEEP_OR_MOVE}")

    problems, _ = read_classic_corpus(src, genre=genre)
    truth = None
    if truth_path.is_file():
        truth, lines = read_classic_truth(truth_path)
        check_truth_ids(problems, truth, lines, truth_path, src)

    # what a convert killed while writing left (`.pairs.jsonl.XXXXXXXX.tmp`, a whole copy of its output) goes first
    removed = remove_temporaries(dst, [(name, ATOMIC_WRITE_SUFFIX) for name in _OUTPUTS])
    if removed:
        logger.info("removed what an interrupted convert left: %s", ", ".join(str(path) for path in removed))
    # Both files are written whole (to temporaries) before anything in dst changes, so a failure while writing
    # leaves dst as it was (earlier outputs included); then both are renamed in together (`atomic_writes`), so a
    # stop never leaves new truth beside the old pairs, nor truth without its pairs.
    with atomic_writes([dst / PAIRS, *([dst / TRUTH] if truth is not None else [])]) as (pairs_handle, *truth_handles):
        for problem in problems:
            pairs_handle.write(json.dumps(_pair_row(problem), ensure_ascii=False) + "\n")
        if truth is not None:
            for problem in problems:
                same = truth[problem.id].same
                row = {"id": problem.id, "same": same, "authors": list(placeholder_authors(problem.id, same))}
                truth_handles[0].write(json.dumps(row, ensure_ascii=False) + "\n")
    warn_of_unknown_genre(problems, src)  # the converted pairs carry it as their discourse types
    if truth is None:  # a TIRA input folder, or a split that lost its truth: said aloud, not silently
        logger.warning(
            "%s has no truth.txt: wrote %s only, no %s (enough for `harness predict`; "
            "`harness run` and `harness score` need truth)",
            src,
            dst / PAIRS,
            TRUTH,
        )
    logger.debug("converted %d problems from %s to %s", len(problems), src, dst)
    return len(problems)
