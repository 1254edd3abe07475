"""What `harness list NAME` says of one system or task: what it is, what it runs on, what it needs, its parameters.

Unlike the plain `harness list`, this imports the one class named (a system's torch, where it has it): its
parameters and their defaults are read from the constructor, so they cannot drift from what `--param` accepts.
"""

from __future__ import annotations

import inspect
import json
from typing import Any

from core.errors import HarnessError
from harness import registry
from harness.params import NAME_KEY, describe_part, is_part

INSTALL = {
    "neural": "pip install -e '.[neural]' -c constraints.txt (torch and transformers)",
    "pos": "pip install -e '.[pos]' -c constraints.txt (nltk and the tagger model of textblob-aptagger)",
}


def details(name: str) -> list[str]:
    """The lines `harness list NAME` prints for a system or a task of that name."""
    if name in registry.SYSTEMS:
        return _system_lines(name)
    if name in registry.TASKS:
        return _task_lines(name)
    known = ", ".join(sorted(registry.SYSTEMS) + sorted(registry.TASKS))
    raise HarnessError(f"no system or task named {name!r}; known: {known}")


def _system_lines(name: str) -> list[str]:
    entry = registry.SYSTEMS[name]
    tasks = [task for task in registry.TASKS if registry.fits(name, task)]
    lines = [
        f"system {name}: {entry.description}",
        f"  tasks: {', '.join(tasks)}",
        f"  needs: {INSTALL[entry.extra] if entry.extra else 'the base install only'}",
        f"  class: {entry.target}",
    ]
    try:
        cls = registry.load(entry.target)
    except ImportError as error:  # a missing extra: say so, with what is known without the class
        lines.append(f"  parameters: unavailable here ({error}); install the extra above to see them")
        return lines
    return lines + _about(cls) + _parameter_lines(cls, "--param")


def _task_lines(name: str) -> list[str]:
    entry = registry.TASKS[name]
    systems = [system for system in registry.SYSTEMS if registry.fits(system, name)]
    kind = registry.DATA_KINDS.get(entry.data_kind, entry.data_kind)
    lines = [
        f"task {name}: {entry.description}",
        f"  gives: {kind}",
        f"  systems: {', '.join(systems)}",
        f"  class: {entry.target}",
    ]
    cls = registry.load(entry.target)
    rows = [f"  row {row}: {meaning}" for row, meaning in cls.metadata.scopes.items()]
    return lines + _about(cls) + rows + _parameter_lines(cls, "--task-param")


def _about(cls: type) -> list[str]:
    """The first paragraph of the module's docstring (where the source paper is named) and of the class's, each
    one line; a class docstring that only points at the module's is left out."""
    lines = []
    for obj in (inspect.getmodule(cls), cls):
        first = " ".join((inspect.getdoc(obj) or "").split("\n\n")[0].split())
        if first and "module docstring" not in first and all(first not in line for line in lines):
            lines.append(f"  about: {first}")
    return lines


def _parameter_lines(cls: type, option: str) -> list[str]:
    """Each constructor parameter with its default; a part's fields as `part.field = default` under it. A default of
    None that the constructor makes into a part (the preset's choice) shows that part's fields too, so the dotted
    names `--param` takes are found here (audit 13: `encoder.text_dim` was shown nowhere)."""
    lines = [f"  parameters ({option} KEY=VALUE):"]
    made = _made_by_default(cls)
    for parameter in inspect.signature(cls).parameters.values():
        if parameter.kind in (parameter.VAR_POSITIONAL, parameter.VAR_KEYWORD):
            continue
        default = parameter.default
        part = default if is_part(default) else made.get(parameter.name) if default is None else None
        if default is parameter.empty:
            lines.append(f"    {parameter.name} (required)")
        elif part is not None:
            fields = describe_part(part)
            name = fields.pop(NAME_KEY)
            shown = f"{name} (a part" if part is default else f"null (the preset's part, {name}"
            lines.append(f"    {parameter.name} = {shown}; its fields:)")
            lines += [f"      {parameter.name}.{key} = {_shown(value)}" for key, value in _flat(fields)]
        else:
            lines.append(f"    {parameter.name} = {_shown(default)}")
    return lines


def _made_by_default(cls: type) -> dict[str, Any]:
    """The parts an instance made with every default holds, by parameter name; {} where it cannot be made so (a
    required parameter, a constructor that reads files)."""
    try:
        instance = cls()
    except Exception:  # noqa: BLE001 - only what `list` can show is at stake
        return {}
    values = {name: getattr(instance, name, None) for name in inspect.signature(cls).parameters}
    return {name: value for name, value in values.items() if is_part(value)}


def _flat(fields: dict[str, Any], prefix: str = "") -> list[tuple[str, Any]]:
    out: list[tuple[str, Any]] = []
    for key, value in fields.items():
        if isinstance(value, dict) and NAME_KEY in value:  # a part inside a part
            out.append((f"{prefix}{key}", value[NAME_KEY]))
            out += _flat({k: v for k, v in value.items() if k != NAME_KEY}, f"{prefix}{key}.")
        else:
            out.append((f"{prefix}{key}", value))
    return out


def _shown(value: Any) -> str:
    """As `--param` reads it back (JSON: null, true, "text"); what JSON cannot hold, as text."""
    try:
        return json.dumps(value)
    except TypeError:
        return str(value)
