"""Which sub-model answers a problem, from its texts' discourse types (the paper's Figure 2).

There is one model per group of discourse types (the paper: written = email, essay; oral =
interview, speech transcription) and a general model trained on all types. A problem whose texts'
types all belong to one group goes to that group's model; any other problem (types from two
groups, a type in no group, or no types given) goes to the ensemble of all models. With no groups
at all, the general model answers everything.

Types are compared after normalisation (lower case, spaces and hyphens as underscores), so
"Speech Transcription" is "speech_transcription". For PAN 2013-2015, whose corpora each have one
genre, groups such as {"essay": ["essay"], "novel": ["novel"]} give one model per corpus genre.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence

GENERAL = "general"
ENSEMBLE = "ensemble"
RESERVED = (GENERAL, ENSEMBLE)

# The paper's groups for PAN 2023 (discourse types as the PAN 2023 data spells them).
PAN23_GROUPS: dict[str, tuple[str, ...]] = {
    "written": ("email", "essay"),
    "oral": ("interview", "speech_transcription"),
}


def normalise_type(name: str) -> str:
    return re.sub(r"[\s\-]+", "_", name.strip().lower())


def check_groups(groups: Mapping[str, Sequence[str]]) -> dict[str, tuple[str, ...]]:
    """Groups with normalised types; a reserved or empty name, an empty group, or a type in two groups is an error."""
    checked: dict[str, tuple[str, ...]] = {}
    owner: dict[str, str] = {}
    for name, members in groups.items():
        if not isinstance(name, str) or not name.strip() or name in RESERVED:
            raise ValueError(f"group name {name!r} is empty or reserved ({', '.join(RESERVED)})")
        if isinstance(members, str) or not members:
            raise ValueError(f"group {name!r} must be a non-empty list of discourse types, got {members!r}")
        types = tuple(dict.fromkeys(normalise_type(t) for t in members))
        for t in types:
            if t in owner:
                raise ValueError(f"discourse type {t!r} is in two groups: {owner[t]!r} and {name!r}")
            owner[t] = name
        checked[name] = types
    return checked


def route(discourse_types: Sequence[str] | None, groups: Mapping[str, Sequence[str]]) -> str:
    """The sub-model for a problem: a group's name, `ENSEMBLE`, or `GENERAL` when there are no groups."""
    if not groups:
        return GENERAL
    if not discourse_types:
        return ENSEMBLE
    types = {normalise_type(t) for t in discourse_types}
    for name, members in groups.items():
        if types <= {normalise_type(m) for m in members}:
            return name
    return ENSEMBLE
