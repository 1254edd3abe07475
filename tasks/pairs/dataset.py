"""`build_pairs`: read an input, draw pairs under the builder's rules, write a PAN 2020-2023 dataset.

Output (`out_dir`):
    train/pairs.jsonl, test/pairs.jsonl   {"id", "discourse_types": [t1, t2], "pair": [text1, text2]}
    train/truth.jsonl, test/truth.jsonl   {"id", "same": bool, "authors": [a1, a2]}
    pair_origins.jsonl                    {"split", "id", "origins", "groups", "communities", "topics", "times"}:
                                          where each text of each pair came from, to audit the rules
    manifest.json                         sources, parameters, counts, distributions (see manifest.py)
"""

from __future__ import annotations

import random
import uuid
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from core.errors import HarnessError
from tasks.pairs.builder import SPLITS, BuiltPairs, PairRules, draw_pairs
from tasks.pairs.manifest import Manifest, manifest_data
from tasks.pairs.sources import SourceRead, read_folder_texts, read_jsonl_texts, read_pan_classic_texts
from tasks.pairs.writer import MANIFEST, MANIFEST_CHECKSUM, Stage, check_out_dir, manifest_checksum, staged_dataset

SOURCES = ("forum", "pan-classic", "folders", "jsonl")
# options that apply to one input only, with their defaults
FORUM_OPTIONS = {"discourse": "kind", "community": "subforum", "join": "post", "max_chars": None}
FOLDER_OPTIONS = {"pattern": None, "encoding": "utf-8"}

# every file a build writes, relative to its folder: with --overwrite only these are replaced, and only where an
# earlier build wrote them (tasks.pairs.writer)
DATASET_FILES = (
    *(f"{split}/{name}" for split in SPLITS for name in ("pairs.jsonl", "truth.jsonl")),
    "pair_origins.jsonl",
    MANIFEST,
)


def build_pairs(
    source: str,
    input: Path | Sequence[Path],  # noqa: A002 - the CLI's INPUT
    out_dir: Path,
    *,
    seed: int = 0,
    pairs: int = 10_000,
    test_share: float = 0.5,
    cross_share: float = 1.0,
    text_uses: int = 1,
    min_chars: int = 1,
    match_length: bool = True,
    overwrite: bool = False,
    discourse: str | None = None,
    community: str | None = None,
    join: str | None = None,
    max_chars: int | None = None,
    pattern: str | None = None,
    encoding: str | None = None,
    genre: Sequence[str] = (),
) -> Manifest:
    """Build a train/test verification dataset from `input` into `out_dir`; see the module doc and builder.py.

    source: "forum" (posts.jsonl[.gz] or its folder), "pan-classic" (one or several PAN 2013-2015 corpus
    folders), "folders" (text files under a folder), "jsonl" ({author, text, discourse_type, ...} lines).
    pairs: in all, test getting round(pairs * test_share); half of each split same-author.
    cross_share: share of pairs with two different discourse types (1.0: all, as PAN 2023).
    text_uses: how many pairs one text may be in (1: each text once overall).
    min_chars: texts shorter than this are left out (counted in the manifest).
    match_length: a different-author pair's texts also share the length classes (64-127, 128-255, ... characters)
    of its same-author twin's, so length tells nothing either (default; False gives more pairs from thin data).
    Forum only: discourse ("kind", "subforum", "market"), community ("subforum", "market", "none"),
    join ("post", "thread", "type"), max_chars (length a joined text stays within; longer posts are cut).
    Folders only: pattern (regex over paths relative to input, named groups author and discourse_type,
    optional topic, group, community; default AUTHOR/DISCOURSE_TYPE/NAME.txt) and encoding (default utf-8).
    PAN 2013-2015 corpora only: genre, the genre of each input whose contents.json and folder name give none (one
    value for every input, or one per input in order; a genre that contradicts the one found is refused).

    Bad input is a one-line DataError naming file, line and field; a bad parameter a HarnessError; either way
    nothing is written. A non-empty `out_dir` is refused unless `overwrite`, which replaces only the
    builder's own files; an `out_dir` that is, holds or lies inside an input is always refused.
    """
    if source not in SOURCES:
        raise HarnessError(f"source must be one of {', '.join(SOURCES)}, got {source!r}")
    given = {"discourse": discourse, "community": community, "join": join, "max_chars": max_chars}
    given_folder = {"pattern": pattern, "encoding": encoding}
    _refuse_foreign(source, "forum", given)
    _refuse_foreign(source, "folders", given_folder)
    _refuse_foreign(source, "pan-classic", {"genre": tuple(genre) or None})
    options = {k: v if v is not None else FORUM_OPTIONS[k] for k, v in given.items()} if source == "forum" else {}
    if source == "folders":
        options = {k: v if v is not None else FOLDER_OPTIONS[k] for k, v in given_folder.items()}
    rules = PairRules(pairs, test_share, cross_share, text_uses, min_chars, seed, match_length)
    rules.check()
    if source == "forum":
        from tasks.pairs.forum_texts import check_forum_options

        check_forum_options(**options)
        if options["max_chars"] is not None and options["max_chars"] < min_chars:  # else min_chars took the blame
            raise HarnessError(
                f"max_chars={options['max_chars']} is below min_chars={min_chars}: every joined text would be cut "
                "shorter than a text may be; raise --max-chars or lower --min-chars"
            )
    inputs = [Path(p) for p in input] if isinstance(input, (list, tuple)) else [Path(input)]
    if len(inputs) != 1 and source != "pan-classic":
        raise HarnessError(f"{source} reads one input, got {len(inputs)}")
    if genre:
        options["genre"] = _genre_per_input(tuple(genre), inputs)
    out_dir = Path(out_dir)
    check_out_dir(out_dir, overwrite, inputs, own=DATASET_FILES)

    read = _read(source, inputs, options)
    built = draw_pairs(read.texts, rules, inputs[0])
    parameters = {
        "source": source,
        "input": [str(p) for p in inputs],
        "pairs": pairs,
        "test_share": test_share,
        "cross_share": cross_share,
        "text_uses": text_uses,
        "min_chars": min_chars,
        "match_length": match_length,
        "seed": seed,
        **options,
    }
    with staged_dataset(out_dir, overwrite, own=DATASET_FILES) as stage:
        _write_splits(stage, built, seed)
        data = manifest_data(
            source=source, read=read, parameters=parameters, rules=rules, built=built, files=dict(stage.checksums)
        )
        data[MANIFEST_CHECKSUM] = manifest_checksum(data)
        stage.write_json(MANIFEST, data)
    return Manifest(data, out_dir)


def _refuse_foreign(source: str, owner: str, given: dict[str, Any]) -> None:
    foreign = [name for name, value in given.items() if value is not None]
    if foreign and source != owner:
        raise HarnessError(f"{', '.join(foreign)} appl{'ies' if len(foreign) == 1 else 'y'} to {owner} input only")


def _genre_per_input(genre: tuple[str, ...], inputs: list[Path]) -> list[str]:
    """One genre for every input, or one per input in their order, in the harness's spelling (`Essays` -> essay)."""
    from tasks.pan.folders import normalised_genre

    if len(genre) not in (1, len(inputs)):
        raise HarnessError(
            f"--genre given {len(genre)} times for {len(inputs)} inputs: give it once (every input) or once per "
            "input, in the inputs' order"
        )
    return [normalised_genre(name) for name in genre] * (len(inputs) // len(genre))


def _read(source: str, inputs: list[Path], options: dict[str, Any]) -> SourceRead:
    if source == "forum":
        from tasks.pairs.forum_texts import read_forum_texts

        return read_forum_texts(inputs[0], **options)
    if source == "pan-classic":
        return read_pan_classic_texts(inputs, genres=options.get("genre"))
    if source == "folders":
        return read_folder_texts(inputs[0], **options)
    return read_jsonl_texts(inputs[0])


def _write_splits(stage: Stage, built: BuiltPairs, seed: int) -> None:
    """pairs.jsonl and truth.jsonl per split, in one shuffled order, and pair_origins.jsonl for all."""
    texts = built.texts
    seen: set[str] = set()
    ids: dict[str, list[str]] = {}
    for split in SPLITS:
        # random ids (as PAN's), reproducible from the seed, telling nothing of the pair
        rng = random.Random(f"{seed}:ids:{split}")
        ids[split] = []
        for _ in built.splits[split]:
            pair_id = str(uuid.UUID(int=rng.getrandbits(128), version=4))
            while pair_id in seen:
                pair_id = str(uuid.UUID(int=rng.getrandbits(128), version=4))
            seen.add(pair_id)
            ids[split].append(pair_id)
    for split in SPLITS:
        rows = list(zip(ids[split], built.splits[split], strict=True))
        stage.write_jsonl(
            f"{split}/pairs.jsonl",
            (
                {
                    "id": pair_id,
                    "discourse_types": [texts[a].discourse_type, texts[b].discourse_type],
                    "pair": [texts[a].text, texts[b].text],
                }
                for pair_id, (a, b, _) in rows
            ),
        )
        stage.write_jsonl(
            f"{split}/truth.jsonl",
            (
                {"id": pair_id, "same": same, "authors": [texts[a].author, texts[b].author]}
                for pair_id, (a, b, same) in rows
            ),
        )
    stage.write_jsonl(
        "pair_origins.jsonl",
        (
            {
                "split": split,
                "id": pair_id,
                "origins": [texts[a].origin, texts[b].origin],
                "groups": [list(texts[a].groups), list(texts[b].groups)],
                "communities": [texts[a].community, texts[b].community],
                "topics": [texts[a].topic, texts[b].topic],
                "times": [texts[a].time, texts[b].time],
            }
            for split in SPLITS
            for pair_id, (a, b, _) in zip(ids[split], built.splits[split], strict=True)
        ),
    )
