"""Systems built from parts, and their parameters as nested dictionaries.

A *part* is a frozen dataclass that names one piece of a system and its settings (an encoder's
sizes, a loss and its margin, the training schedule), passed to the system's constructor as an
object, as in pytorch-metric-learning: `VarlenLinker(loss=TripletLoss(margin=0.2))`. A part class
carries a short `name`; a system lists the classes a slot accepts in `PART_CHOICES` (a slot
without an entry accepts its default's class only).

Parameters travel as plain JSON, both ways:
- `describe(system)` gives the constructor parameters, a part as `{"name": ..., field: value}`:
  what result files record and checkpoints store;
- `build(cls, params)` makes a system from such a dictionary, from the CLI's dotted keys
  (`--param encoder.text_dim=64`, sklearn's nested parameters with a dot), or from both:
  `--param loss=topk --param loss.top_k=8` picks a part by name, then sets its fields.
Unknown names and fields are refused with one line that lists what is accepted.
"""

from __future__ import annotations

import dataclasses
import inspect
from collections.abc import Mapping, Sequence
from typing import Any

from harness.errors import HarnessError

NAME_KEY = "name"


def is_part(value: Any) -> bool:
    """A part: a dataclass instance (not a class) with a `name`."""
    return dataclasses.is_dataclass(value) and not isinstance(value, type) and hasattr(value, NAME_KEY)


def describe(obj: Any) -> dict[str, Any]:
    """The constructor parameters of `obj`, read back from its attributes; parts as nested dicts."""
    names = inspect.signature(type(obj)).parameters
    return {name: _describe_value(getattr(obj, name)) for name in names}


def _describe_value(value: Any) -> Any:
    if not is_part(value):
        return value
    fields = {f.name: _describe_value(getattr(value, f.name)) for f in dataclasses.fields(value) if f.init}
    return {NAME_KEY: value.name, **fields}


def nest(params: Mapping[str, Any]) -> dict[str, Any]:
    """Dotted keys to nested dicts: {"loss.margin": 0.3} -> {"loss": {"margin": 0.3}}."""
    nested: dict[str, Any] = {}
    for key, value in params.items():
        *path, last = key.split(".")
        level = nested
        for step in path:
            inner = level.setdefault(step, {})
            if not isinstance(inner, dict):
                inner = level[step] = {NAME_KEY: inner}  # "loss=topk" given beside "loss.top_k=8"
            level = inner
        if isinstance(value, Mapping) and isinstance(level.get(last), dict):
            level[last] = {**level[last], **value}
        elif isinstance(level.get(last), dict):
            level[last][NAME_KEY] = value
        else:
            level[last] = value
    return nested


def build(cls: type, params: Mapping[str, Any], *, label: str | None = None) -> Any:
    """An instance of `cls` from (dotted or nested) parameters; defaults for the ones not given."""
    label = label or getattr(cls, "name", cls.__name__)
    accepted = inspect.signature(cls).parameters
    given = nest(params)
    unknown = sorted(set(given) - set(accepted))
    if unknown:
        takes = ", ".join(accepted) or "none"
        raise HarnessError(f"{label} has no parameter(s) {', '.join(unknown)}; it takes: {takes}")
    choices = getattr(cls, "PART_CHOICES", {})
    kwargs = {}
    for name, value in given.items():
        default = accepted[name].default
        if is_part(default):
            value = build_part(default, value, choices=choices.get(name, ()), where=f"{label}: {name}")
        kwargs[name] = value
    try:
        return cls(**kwargs)
    except (TypeError, ValueError) as error:
        raise HarnessError(f"{label}: {error}") from error


def build_part(default: Any, spec: Any, *, choices: Sequence[type] = (), where: str) -> Any:
    """A part from its default and a spec: a part, a name, or a dict of a name and/or fields."""
    if is_part(spec):
        return spec
    if isinstance(spec, str):
        spec = {NAME_KEY: spec}
    if not isinstance(spec, Mapping):
        raise HarnessError(f"{where} takes a name or fields, not {spec!r}")
    classes = {c.name: c for c in (*choices, type(default))}
    chosen = spec.get(NAME_KEY, default.name)
    if chosen not in classes:
        raise HarnessError(f"{where} must be one of {', '.join(sorted(classes))}, not {chosen!r}")
    base = default if type(default) is classes[chosen] else classes[chosen]()
    fields = {f.name: f for f in dataclasses.fields(base) if f.init}
    updates = {}
    for key, value in spec.items():
        if key == NAME_KEY:
            continue
        if key not in fields:
            raise HarnessError(f"{where} ({chosen}) has no field {key!r}; it has: {', '.join(fields)}")
        current = getattr(base, key)
        updates[key] = build_part(current, value, where=f"{where}.{key}") if is_part(current) else value
    try:
        return dataclasses.replace(base, **updates)
    except (TypeError, ValueError) as error:
        raise HarnessError(f"{where}: {error}") from error


def rename_legacy(params: Mapping[str, Any], renames: Mapping[str, str]) -> dict[str, Any]:
    """Flat parameters of an earlier checkpoint format to today's dotted names (`renames`: old -> new).

    A name missing from `renames` is kept as it is (a parameter that did not move).
    """
    return {renames.get(key, key): value for key, value in params.items()}
