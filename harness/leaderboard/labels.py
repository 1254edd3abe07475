"""How tables name their rows: one label for each system setting, the same in every table and summary of a command.

A system run with one setting is its name. Where the runs hold several settings of one name, each is named by the
parameters that set it apart, `tfidf (max_ngram=2)`, or, where those would make a long name, by the digest of its
parameters with a note saying what it stands for; a result of `harness score --record` beside a run of the
same name is `NAME (record)`. Labels are made from every run a command reads, not one table's: audit 12 found one
table's `tfidf` to be another's `tfidf@38873879`, and a setting called `tfidf` in one table and another setting
`tfidf` in the next.
"""

from __future__ import annotations

import hashlib
import json
from collections import defaultdict
from collections.abc import Iterable, Mapping
from typing import Any

from harness.leaderboard.collect import Run
from harness.run_result import RunResult

LONGEST_SETTING = 40  # characters of "k=v, ..." in a label; a longer setting is named by its digest and a note
UNSET = "unset"  # a parameter one setting's result does not record (an older harness version's)

SystemKey = tuple[str, str]  # (name, parameters' digest)
RowKey = tuple[str, str, str]  # (name, parameters' digest, training set's dataset name or "")


def params_digest(params: Any) -> str:
    """The first 8 hex digits of the sha256 of every parameter (defaults too), as canonical JSON."""
    return hashlib.sha256(json.dumps(params, sort_keys=True, default=str).encode()).hexdigest()[:8]


def system_key(result: RunResult) -> SystemKey:
    return result.system_name, params_digest(result.system_params)


class SystemLabels:
    """Each system setting's label (`label`, by `system_key`), and what a digest label stands for (`legend`)."""

    def __init__(self, runs: Iterable[Run]) -> None:
        settings: dict[str, dict[str, RunResult]] = defaultdict(dict)
        for run in runs:
            name, digest = system_key(run.result)
            settings[name].setdefault(digest, run.result)
        self._labels: dict[SystemKey, str] = {}
        self._legend: dict[str, str] = {}
        for name, by_digest in settings.items():
            fitted = {digest: r.system_params for digest, r in by_digest.items() if not _is_record(r)}
            differing = _differing(fitted.values())
            settings_text = {digest: _setting(params, differing) for digest, params in fitted.items()}
            texts = list(settings_text.values())
            for digest, result in by_digest.items():
                setting = settings_text.get(digest, "")
                if len(by_digest) == 1 or (not _is_record(result) and not differing):
                    label = name  # its only setting, or its only fitted one beside records of the same name
                elif _is_record(result):
                    label = f"{name} (record)"
                elif len(setting) <= LONGEST_SETTING and texts.count(setting) == 1:
                    label = f"{name} ({setting})"
                else:  # too long, or two values that read alike (1 and "1")
                    label = f"{name}@{digest}"
                    self._legend[label] = setting
                self._labels[(name, digest)] = label

    def label(self, key: SystemKey) -> str:
        return self._labels[key]

    def legend(self, labels: Iterable[str]) -> list[str]:
        """Notes saying what each digest label among `labels` stands for (its parameters that differ from the other
        settings of its name)."""
        return [
            f"{label}: {self._legend[label]} (@: the digest of every parameter of the setting)."
            for label in dict.fromkeys(labels)
            if label in self._legend
        ]


def row_labels(keys: Iterable[RowKey], systems: SystemLabels) -> dict[RowKey, str]:
    """Each row's label: its system setting's (`systems`), with the training set's dataset name where the system has
    a row per training set (`harness.leaderboard.build._rows_of_runs`). The summary labels its rows by the same
    rule."""
    return {
        (name, digest, training): systems.label((name, digest)) + (f" ({training})" if training else "")
        for name, digest, training in keys
    }


def _is_record(result: RunResult) -> bool:
    """A result of `harness score --record`: an answers file scored, no system fitted here (no parameters)."""
    return result.answers_checksum is not None


def _differing(settings: Iterable[Mapping[str, Any]]) -> list[str]:
    """The parameters whose values differ between `settings`, sorted."""
    settings = list(settings)
    names = sorted({key for params in settings for key in params})
    return [key for key in names if len({_value(params, key) for params in settings}) > 1]


def _setting(params: Mapping[str, Any], keys: Iterable[str]) -> str:
    """`keys` as "k=v, ..." (`_value`)."""
    return ", ".join(f"{key}={_value(params, key)}" for key in keys)


def _value(params: Mapping[str, Any], key: str) -> str:
    """A parameter's value as a label shows it: text as it is, anything else as compact JSON."""
    if key not in params:
        return UNSET
    value = params[key]
    return value if isinstance(value, str) else json.dumps(value, sort_keys=True, separators=(",", ":"), default=str)
