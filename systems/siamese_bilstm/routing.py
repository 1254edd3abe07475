"""Which sub-model answers a problem, from its texts' discourse types (the paper's Figure 2).

There is one model per group of discourse types (the paper: written = email, essay; oral =
interview, speech transcription) and a general model trained on all types. A problem whose texts'
types all belong to one group goes to that group's model; a problem whose types span groups, or
lie in no group, or are not given, goes to the ensemble of all models, as the paper answers every
pair that has no model of its own. A problem with a type the training split never showed goes to
the general model: no group model has seen that kind of text, and the ensemble's calibration was
fitted on kinds it knows, so the model trained on everything is the least wrong guess. With no
groups at all, the general model answers everything.

The groups come from the `groups` parameter or, by default, from the types of the training split
(`derive_groups`): the paper's two groups where every type is one of PAN 2023's four, else one
group per type. Types are compared after normalisation (lower case, spaces and hyphens as
underscores), so "Speech Transcription" is "speech_transcription".
"""

from __future__ import annotations

import re
from collections.abc import Collection, Iterable, Mapping, Sequence

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


def derive_groups(types: Iterable[str | None]) -> dict[str, tuple[str, ...]]:
    """The groups for the discourse types a training split holds (None entries, untyped texts, ignored).

    - every type one of PAN 2023's four (email, essay, interview, speech_transcription): the paper's
      written and oral groups, which it chose for exactly these types (also when only some are present:
      a group with no training texts gets no head, and its types are then unseen);
    - any other type: one group per type, named after it. Nothing says which other kinds of text write
      alike (are chat messages written or oral?), and a model per kind is the paper's idea without a
      grouping the data cannot justify; pairs of two kinds go to the ensemble, as the paper's mixed pairs;
    - no types at all: no groups, the general model answers everything.

    A group whose texts are too few gets no head when fitted (fewer than 2 training authors with two
    texts of its types: a positive pair needs two texts of one author, a batch two authors), so its
    problems go to the ensemble.
    """
    seen = sorted({normalise_type(t) for t in types if t})
    if not seen:
        return {}
    pan23 = {t for members in PAN23_GROUPS.values() for t in members}
    if set(seen) <= pan23:
        return dict(PAN23_GROUPS)
    groups: dict[str, tuple[str, ...]] = {}
    for t in seen:
        name = re.sub(r"\W", "_", t)  # a head's weights are stored under "<name>.": no dots in a name
        while name in RESERVED or name in groups:
            name += "_type"
        groups[name] = (t,)
    return groups


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


def route(
    discourse_types: Sequence[str] | None,
    groups: Mapping[str, Sequence[str]],
    known: Collection[str] | None = None,
) -> str:
    """The sub-model for a problem: a group's name, `ENSEMBLE`, or `GENERAL`.

    `known`: the (normalised) types seen in training; a problem with a type outside it goes to `GENERAL`.
    None (a checkpoint that did not record them) leaves that rule out. No groups: `GENERAL` for all.
    """
    if not groups:
        return GENERAL
    if not discourse_types:
        return ENSEMBLE
    types = {normalise_type(t) for t in discourse_types}
    if known is not None and not types <= set(known):
        return GENERAL
    for name, members in groups.items():
        if types <= {normalise_type(m) for m in members}:
            return name
    return ENSEMBLE
