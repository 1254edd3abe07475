"""Checkpoint parameters of earlier formats, made today's: the one way a system reads its old checkpoints.

A system says once, in a `LegacyParams`, how its parameters changed: the flat format of before parts
(`vocab_size`, `margin`, the loss as a string) is told apart by a part slot that is a dict today and was
not one then; its names get today's dotted names, after `convert` has made the changes renaming cannot
(a loss string and its settings as a loss part); and a parameter that did not exist when a checkpoint
was written gets the value that checkpoint was trained with (`absent`). Its `load` reads every checkpoint
through `upgrade`.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any


def _unchanged(params: dict[str, Any]) -> dict[str, Any]:
    return params


@dataclass(frozen=True)
class LegacyParams:
    """How one system's checkpoint parameters of earlier formats become today's (see the module docstring).

    slot: a part slot that is a dict in today's parameters and was not one in the flat format.
    renames: flat name -> today's dotted name; a name missing here is kept as it is (it did not move).
    convert: the flat parameters' other changes, made before renaming (names it returns that are in
        `renames` are renamed too).
    absent: a parameter -> the value a checkpoint written before it existed was trained with.
    """

    slot: str
    renames: Mapping[str, str]
    convert: Callable[[dict[str, Any]], dict[str, Any]] = field(default=_unchanged)
    absent: Mapping[str, Any] = field(default_factory=dict)

    def is_flat(self, params: Mapping[str, Any]) -> bool:
        """Whether `params` are of the flat format."""
        return not isinstance(params.get(self.slot), Mapping)

    def upgrade(self, params: Mapping[str, Any]) -> dict[str, Any]:
        """Today's parameters (a new dict): flat ones converted and renamed, absent ones added."""
        upgraded = dict(params)
        if self.is_flat(params):
            upgraded = {self.renames.get(key, key): value for key, value in self.convert(upgraded).items()}
        missing = {key: value for key, value in self.absent.items() if not _given(upgraded, key)}
        return {**missing, **upgraded}


def _given(params: Mapping[str, Any], name: str) -> bool:
    """Whether `params` set `name`, as a value or through dotted keys of its fields."""
    return name in params or any(key.startswith(f"{name}.") for key in params)
