"""manifest.json of a built pairs dataset (how it was built, what it holds) and its few-line summary."""

from __future__ import annotations

import statistics
from collections import Counter
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from tasks.pairs.builder import (
    AUTHOR_SLACK,
    GAP_EDGES,
    GAP_LABELS,
    SPLITS,
    BuiltPairs,
    PairRules,
    gap_bucket,
    length_bucket,
)
from tasks.pairs.sources import SourceRead, SourceText

FORMAT = "PAN 2020-2023 authorship verification: <split>/pairs.jsonl + <split>/truth.jsonl"
RULES = (
    "authors disjoint across splits",
    "groups (threads, problems) disjoint across splits: a group's texts by the other split's authors left out",
    "each text in at most text_uses pairs, all in one split; texts equal after white-space folding are one text",
    "no pair (same- or different-author) takes both texts from one group (thread, problem, file)",
    "each different-author pair matches one same-author pair in ordered discourse types, communities, topics "
    "and time-gap bucket (and, with match_length, length classes)",
    f"no author gives more than {AUTHOR_SLACK} texts more to different-author pairs than to same-author pairs",
    "half of each split same-author (one more when odd)",
    "round(cross_share * same-author pairs) cross-discourse same-author pairs, and as many different-author ones",
)


@dataclass(frozen=True)
class Manifest:
    """What manifest.json holds (`data`) and where the dataset is."""

    data: dict[str, Any]
    out_dir: Path

    def summary(self) -> str:
        """A few lines for the terminal."""
        splits = self.data["splits"]
        counts = ", ".join(f"{s} {splits[s]['pairs']}" for s in SPLITS)
        lines = [
            f"{sum(splits[s]['pairs'] for s in SPLITS)} pairs ({counts}), half same-author, "
            f"seed {self.data['parameters']['seed']} -> {self.out_dir}",
            "authors (disjoint): "
            + ", ".join(f"{s} {splits[s]['authors']}" for s in SPLITS)
            + "; texts in pairs: "
            + ", ".join(f"{s} {splits[s]['texts']}" for s in SPLITS),
        ]
        type_pairs: Counter = Counter()
        for s in SPLITS:
            for name, by_class in splits[s]["discourse_type_pairs"].items():
                type_pairs[name] += sum(by_class.values())
        lines.append("discourse-type pairs: " + ", ".join(f"{name} {n}" for name, n in type_pairs.most_common(6)))
        if len(type_pairs) > 6:
            lines[-1] += f" and {len(type_pairs) - 6} more"
        for s in SPLITS:
            chars = splits[s]["lengths"]["all"]
            lines.append(
                f"{s} text length (chars): min {chars['min']}, median {chars['median']:g}, "
                f"mean {chars['mean']:.0f}, max {chars['max']}"
            )
        dropped = self.data["dropped"]
        texts = sum(dropped["texts"].values())
        authors = sum(dropped["authors"].values())
        left = f"left out: {texts} texts"
        if texts:
            left += " (" + ", ".join(f"{why} {n}" for why, n in dropped["texts"].items()) + ")"
        left += f", {authors} authors"
        if authors:
            left += " (" + ", ".join(f"{why} {n}" for why, n in dropped["authors"].items()) + ")"
        unmatched = sum(dropped["same_author_pairs_without_a_twin"].values())
        lines.append(left + f"; {unmatched} same-author pairs found no matching different-author pair")
        return "\n".join(lines)


def manifest_data(
    *,
    source: str,
    read: SourceRead,
    parameters: dict[str, Any],
    rules: PairRules,
    built: BuiltPairs,
    files: dict[str, str],
) -> dict[str, Any]:
    """The manifest: sources and checksums, parameters, rules, per-split counts and distributions, what was left out."""
    return {
        "format": FORMAT,
        "source": {"kind": source, "inputs": read.inputs, "authors": read.authors},
        "parameters": parameters,
        "seed": rules.seed,
        "rules": list(RULES),
        "time_gap_buckets_s": {"edges": list(GAP_EDGES), "labels": list(GAP_LABELS)},
        "splits": {split: describe_split(built.splits[split], built.texts) for split in SPLITS},
        "dropped": {
            "texts": dict(sorted((read.dropped_texts + built.dropped_texts).items())),
            "authors": dict(sorted(built.dropped_authors.items())),
            "same_author_pairs_without_a_twin": {split: built.unmatched[split] for split in SPLITS},
        },
        "candidates": {
            split: {"authors": built.split_authors[split], "texts": built.split_texts[split]} for split in SPLITS
        },
        "files": files,
    }


def describe_split(pairs: list[tuple[int, int, bool]], texts: list[SourceText]) -> dict[str, Any]:
    """Counts per class of each property that rule 4 matches, and text lengths, for one split."""
    tables: dict[str, dict[str, Counter]] = {
        name: {} for name in ("discourse_type_pairs", "communities", "topics", "time_gaps", "length_classes")
    }
    lengths: dict[str, list[int]] = {"same": [], "different": []}
    per_author = {"same": Counter(), "different": Counter()}  # texts per author in each class
    used: set[int] = set()
    cross = 0
    for a, b, same in pairs:
        first, second = texts[a], texts[b]
        label = "same" if same else "different"
        cross += first.discourse_type != second.discourse_type
        values = {
            "discourse_type_pairs": "|".join(sorted((first.discourse_type, second.discourse_type))),
            "communities": _relation(first.community, second.community),
            "topics": _relation(first.topic, second.topic),
            "time_gaps": gap_bucket(first.time, second.time),
            "length_classes": f"{length_bucket(first.text)}|{length_bucket(second.text)}",
        }
        for name, value in values.items():
            tables[name].setdefault(value, Counter())[label] += 1
        lengths[label] += (len(first.text), len(second.text))
        per_author[label].update((first.author, second.author))
        used.update((a, b))
    same = sum(1 for *_, s in pairs if s)
    return {
        "pairs": len(pairs),
        "same": same,
        "different": len(pairs) - same,
        "cross_discourse": cross,
        "authors": len(per_author["same"].keys() | per_author["different"].keys()),
        "author_balance": {  # how far one author's share of texts differs between the classes
            "max_extra_texts_in_different": max(
                (n - per_author["same"][a] for a, n in per_author["different"].items()), default=0
            ),
            "max_extra_texts_in_same": max(
                (n - per_author["different"][a] for a, n in per_author["same"].items()), default=0
            ),
        },
        "texts": len(used),
        **{
            name: {
                value: {k: by_class.get(k, 0) for k in ("same", "different")} for value, by_class in sorted(t.items())
            }
            for name, t in tables.items()
        },
        "lengths": {
            "all": _length_stats(lengths["same"] + lengths["different"]),
            "same": _length_stats(lengths["same"]),
            "different": _length_stats(lengths["different"]),
        },
    }


def _relation(first: str | None, second: str | None) -> str:
    if first is None or second is None:
        return "n/a"
    return "same" if first == second else "different"


def _length_stats(values: list[int]) -> dict[str, float]:
    if not values:
        return {"min": 0, "median": 0, "mean": 0.0, "max": 0}
    return {
        "min": min(values),
        "median": statistics.median(values),
        "mean": round(statistics.fmean(values), 1),
        "max": max(values),
    }
