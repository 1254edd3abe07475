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

`parse_cli(cls, pairs)` turns the command line's text values into typed ones by the types the
constructor and the parts' dataclass fields declare (int, float, bool, str, lists and tuples,
Optional, Literal), refusing a value that is not of its type with one line naming the parameter and
the type expected. A value that JSON reads as the declared type is taken as JSON reads it (`3`,
`true`, `null`, `"campus"`, `[1, 2]`); otherwise the text is read by the type: a string as typed
(`market=campus`), a boolean from true/false/yes/no/on/off/1/0, None from `None`, a list or tuple from
comma-separated items (`linking_target_sizes=1,2,4`). Undeclared types keep JSON-or-text.
"""

from __future__ import annotations

import collections.abc
import dataclasses
import functools
import inspect
import json
import math
import sys
import types
import typing
from collections.abc import Mapping, Sequence
from pathlib import PurePath
from typing import Any, Literal, Union

from core.errors import HarnessError

NAME_KEY = "name"


def coerce(part: object, field: str, kind: type) -> None:
    """Store a part's field as `kind` (a JSON 1 as the float 1.0), or refuse it with a message naming it."""
    value = getattr(part, field)
    try:
        converted = kind(value)
    except (TypeError, ValueError):
        raise ValueError(f"{field} must be {'an integer' if kind is int else 'a number'}, got {value!r}") from None
    object.__setattr__(part, field, converted)  # frozen: set once, while the part is made


def is_part(value: Any) -> bool:
    """A part: a dataclass instance (not a class) with a `name`."""
    return dataclasses.is_dataclass(value) and not isinstance(value, type) and hasattr(value, NAME_KEY)


def describe(obj: Any) -> dict[str, Any]:
    """The constructor parameters of `obj`, read back from its attributes; parts as nested dicts."""
    names = inspect.signature(type(obj)).parameters
    return {name: _describe_value(getattr(obj, name)) for name in names}


def describe_part(part: Any) -> dict[str, Any]:
    """A part's name (under NAME_KEY) and its constructor fields, nested parts as dicts."""
    if not is_part(part):
        raise TypeError(f"not a part: {part!r}")
    return _describe_value(part)


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


# -- command-line values, typed by their declarations -----------------------------------------------------------


class _Raw(str):
    """A value as typed on the command line, not yet read by its declared type."""

    __slots__ = ()


class _NoMatch(Exception):
    """The text cannot be read as the type."""


_NONE_WORDS = ("None", "none")  # besides JSON's null
_TRUE_WORDS = ("true", "yes", "on", "1")
_FALSE_WORDS = ("false", "no", "off", "0")
_UNIONS = (Union, types.UnionType)
_SEQUENCES = (list, tuple, collections.abc.Sequence, collections.abc.Collection, collections.abc.Iterable)
_MAPPINGS = (dict, collections.abc.Mapping)


def parse_cli(cls: type, pairs: Mapping[str, str], *, label: str | None = None) -> dict[str, Any]:
    """`--param` texts (dotted keys as given) to values of the types `cls` and its parts declare; keys are kept.

    Values JSON already reads as the declared type are exactly JSON's, so what worked before keeps its
    value (and its run folder). A name `cls` does not take is left as JSON-or-text: `build` refuses it.
    """
    label = label or getattr(cls, "name", cls.__name__)
    raw = {key: _Raw(value) for key, value in pairs.items()}
    nested = nest(raw)
    accepted = inspect.signature(cls).parameters
    hints = _init_types(cls)
    choices = getattr(cls, "PART_CHOICES", {})
    typed: dict[str, Any] = {}
    for name, value in nested.items():
        if name not in accepted:
            typed[name] = _as_json_or_text(value)
            continue
        default = accepted[name].default
        classes = ((type(default),) if is_part(default) else ()) + tuple(choices.get(name, ()))
        typed[name] = _typed(value, hints.get(name, Any), f"{label}: {name}", classes)
    result = {}
    for key in pairs:
        given: Any = nested
        value: Any = typed
        for step in key.split("."):
            given, value = given[step], value[step]
        # "loss=topk" beside "loss.top_k=8": nest() put the text under the part's name key
        result[key] = value[NAME_KEY] if isinstance(given, dict) else value
    return result


def _typed(value: Any, annotation: Any, where: str, classes: Sequence[type] = ()) -> Any:
    """A value from the command line (text, or a dict of them from dotted keys) read by its declared type."""
    if isinstance(value, _Raw):
        return _parse(value, annotation, where)
    if not isinstance(value, Mapping):
        return value
    parts = _unique([*classes, *(member for member in _members(annotation) if _is_part_class(member))])
    if parts:
        return _typed_part(value, parts, where)
    if not _takes_a_mapping(annotation):  # `ngram_size.x=3`: a dotted name below a plain value
        field = next(iter(value))
        raise HarnessError(f"{where}: takes {_expected(annotation)}, not a field {field!r} under it")
    value_type = _mapping_value_type(annotation)
    return {key: _typed(item, value_type, f"{where}.{key}") for key, item in value.items()}


def _typed_part(spec: Mapping[str, Any], classes: Sequence[type], where: str) -> dict[str, Any]:
    """A part's fields (and its name), each read by the type of that field in the part class chosen."""
    name = spec.get(NAME_KEY)
    if isinstance(name, _Raw):
        name = _as_json_or_text(name)
    chosen = [c for c in classes if getattr(c, NAME_KEY, None) == name] or list(classes)
    typed: dict[str, Any] = {}
    for key, value in spec.items():
        if key == NAME_KEY:
            typed[key] = name
            continue
        owners = [c for c in chosen if key in _field_types(c)]
        if not owners:  # build_part refuses the unknown field, naming the ones there are
            typed[key] = _as_json_or_text(value)
            continue
        errors = []
        for owner in owners:
            try:
                typed[key] = _typed(value, _field_types(owner)[key], f"{where}.{key}", _field_parts(owner, key))
                break
            except HarnessError as error:
                errors.append(error)
        else:
            raise errors[0]
    return typed


def _parse(raw: str, annotation: Any, where: str) -> Any:
    try:
        return _read(raw, annotation)
    except _NoMatch:
        raise HarnessError(f"{where} expects {_expected(annotation)}, got {str(raw)!r}") from None


def _read(raw: str, annotation: Any) -> Any:
    """JSON's reading where it is of the type, else the text read as the type; _NoMatch if neither."""
    value = _json_or_text(raw)
    if _conforms(value, annotation):
        return value
    return _coerce(str(raw), annotation)


def _json_or_text(raw: str) -> Any:
    try:
        return json.loads(raw)
    except (ValueError, RecursionError):
        return str(raw)


def _as_json_or_text(value: Any) -> Any:
    """What the command line gave before values were typed: JSON where the text parses, else the text."""
    if isinstance(value, _Raw):
        return _json_or_text(value)
    if isinstance(value, Mapping):
        return {key: _as_json_or_text(item) for key, item in value.items()}
    return value


def _conforms(value: Any, annotation: Any) -> bool:
    """Whether a JSON value is of the declared type (undeclared or unknown types accept anything)."""
    origin = typing.get_origin(annotation)
    if annotation is Any or annotation is object or annotation is inspect.Parameter.empty:
        return True
    if origin in _UNIONS:
        return any(_conforms(value, member) for member in typing.get_args(annotation))
    if origin is Literal:
        return any(type(value) is type(choice) and value == choice for choice in typing.get_args(annotation))
    if annotation is None or annotation is type(None):
        return value is None
    if annotation is bool:
        return isinstance(value, bool)
    if annotation is int:
        return isinstance(value, int) and not isinstance(value, bool)
    if annotation is float:
        return isinstance(value, (int, float)) and not isinstance(value, bool) and not math.isnan(value)
    if annotation is str or _is_path(annotation):
        return isinstance(value, str)
    sequence = _sequence_items(annotation)
    if sequence is not None:
        if not isinstance(value, (list, tuple)):
            return False
        items, fixed = sequence
        if fixed:
            return len(value) == len(items) and all(_conforms(v, t) for v, t in zip(value, items, strict=True))
        return all(_conforms(v, items[0]) for v in value)
    if annotation in _MAPPINGS or origin in _MAPPINGS:
        value_type = _mapping_value_type(annotation)
        return isinstance(value, Mapping) and all(_conforms(v, value_type) for v in value.values())
    if _is_part_class(annotation):
        return isinstance(value, (str, Mapping))  # a part's name, or its fields
    return True


def _coerce(raw: str, annotation: Any) -> Any:
    """The text read as the type, where JSON's reading was not of it."""
    origin = typing.get_origin(annotation)
    if origin in _UNIONS:
        members = typing.get_args(annotation)
        if type(None) in members and raw.strip() in _NONE_WORDS:
            return None
        for member in members:
            if member is not type(None):
                try:
                    return _coerce(raw, member)
                except _NoMatch:
                    continue
        raise _NoMatch
    if origin is Literal:
        for choice in typing.get_args(annotation):
            if isinstance(choice, str) and raw == choice:
                return choice
        raise _NoMatch
    if annotation is bool:
        word = raw.strip().lower()
        if word in _TRUE_WORDS or word in _FALSE_WORDS:
            return word in _TRUE_WORDS
        raise _NoMatch
    if annotation is float:
        try:
            number = float(raw)
        except ValueError:
            raise _NoMatch from None
        if math.isnan(number):
            raise _NoMatch
        return number
    if annotation is str or _is_path(annotation):
        return raw
    sequence = _sequence_items(annotation)
    if sequence is not None and not raw.lstrip().startswith("["):
        items, fixed = sequence
        pieces = [piece.strip() for piece in raw.split(",")] if raw.strip() else []
        if fixed and len(pieces) != len(items):
            raise _NoMatch
        values = [_read(piece, items[i] if fixed else items[0]) for i, piece in enumerate(pieces)]
        return list(values) if (typing.get_origin(annotation) or annotation) is list else tuple(values)
    raise _NoMatch


def _expected(annotation: Any) -> str:
    """The declared type in words, for an error message."""
    origin = typing.get_origin(annotation)
    if origin in _UNIONS:
        members = typing.get_args(annotation)
        words = [_expected(member) for member in members if member is not type(None)]
        if type(None) in members:
            words.append("null")
        return " or ".join(_unique(words))
    if origin is Literal:
        return "one of " + ", ".join(json.dumps(choice) for choice in typing.get_args(annotation))
    if annotation is None or annotation is type(None):
        return "null"
    simple = {bool: "true or false", int: "an integer", float: "a number", str: "a string"}
    if annotation in simple:
        return simple[annotation]
    if _is_path(annotation):
        return "a path"
    sequence = _sequence_items(annotation)
    if sequence is not None:
        items, fixed = sequence
        if fixed:
            return f"{len(items)} comma-separated values ({', '.join(_expected(item) for item in items)})"
        return f"a list (comma-separated or JSON) of {_plural(items[0])}"
    if annotation in _MAPPINGS or origin in _MAPPINGS:
        return "a JSON object"
    if _is_part_class(annotation):
        return f"a {annotation.__name__} (a name or fields)"
    return getattr(annotation, "__name__", str(annotation))


def _plural(annotation: Any) -> str:
    words = {bool: "booleans", int: "integers", float: "numbers", str: "strings"}
    return words.get(annotation, f"items of type {_expected(annotation)}")


def _members(annotation: Any) -> tuple[Any, ...]:
    return typing.get_args(annotation) if typing.get_origin(annotation) in _UNIONS else (annotation,)


def _mapping_value_type(annotation: Any) -> Any:
    """The value type of the first mapping type among a (union) annotation's members; Any if none is declared."""
    for member in _members(annotation):
        if member in _MAPPINGS:
            return Any
        if typing.get_origin(member) in _MAPPINGS:
            args = typing.get_args(member)
            return args[1] if len(args) == 2 else Any
    return Any


def _takes_a_mapping(annotation: Any) -> bool:
    """Whether a (union) annotation admits a mapping: Any (undeclared) or a mapping type among its members."""
    members = _members(annotation)
    return any(m is Any or m in _MAPPINGS or typing.get_origin(m) in _MAPPINGS for m in members)


def _sequence_items(annotation: Any) -> tuple[tuple[Any, ...], bool] | None:
    """(item types, fixed length?) of a list, tuple or Sequence type; None for other types (str included)."""
    origin = typing.get_origin(annotation)
    if annotation in (list, tuple) or annotation in _SEQUENCES[2:]:
        return (Any,), False
    if origin not in _SEQUENCES:
        return None
    args = typing.get_args(annotation)
    if not args:
        return (Any,), False
    if origin is tuple and not (len(args) == 2 and args[1] is Ellipsis):
        return args, True
    return (args[0],), False


def _is_path(annotation: Any) -> bool:
    return isinstance(annotation, type) and issubclass(annotation, PurePath)


def _is_part_class(annotation: Any) -> bool:
    return isinstance(annotation, type) and dataclasses.is_dataclass(annotation) and hasattr(annotation, NAME_KEY)


def _unique(items: Sequence[Any]) -> list[Any]:
    return list(dict.fromkeys(items))


def _init_types(cls: type) -> dict[str, Any]:
    """The constructor's declared parameter types, evaluated where `__init__` is defined; Any where that fails."""
    namespace: dict[str, Any] = {}
    for klass in cls.__mro__:
        if "__init__" in vars(klass):
            init = vars(klass)["__init__"]
            init = getattr(init, "func", init)  # functools.partialmethod
            namespace = getattr(inspect.unwrap(init), "__globals__", None) or vars(sys.modules[klass.__module__])
            break
    try:
        parameters = inspect.signature(cls).parameters
    except (TypeError, ValueError):
        return {}
    return {name: _evaluate(p.annotation, namespace) for name, p in parameters.items()}


@functools.cache
def _field_types(cls: type) -> dict[str, Any]:
    """A part class's init fields and their declared types, each evaluated in the module that declares it."""
    declared: dict[str, Any] = {}
    for klass in reversed(cls.__mro__):
        namespace = vars(sys.modules[klass.__module__]) if klass.__module__ in sys.modules else {}
        for name, annotation in vars(klass).get("__annotations__", {}).items():
            declared[name] = _evaluate(annotation, namespace)
    return {f.name: declared.get(f.name, Any) for f in dataclasses.fields(cls) if f.init}


def _field_parts(cls: type, name: str) -> tuple[type, ...]:
    """The part class of a field whose default is a part (its nested fields are typed by it)."""
    for f in dataclasses.fields(cls):
        if f.name == name:
            if f.default is not dataclasses.MISSING and is_part(f.default):
                return (type(f.default),)
            if f.default_factory is not dataclasses.MISSING:
                try:
                    default = f.default_factory()
                except Exception:  # a factory that needs more than nothing: no nested typing
                    return ()
                return (type(default),) if is_part(default) else ()
    return ()


def _evaluate(annotation: Any, namespace: Mapping[str, Any]) -> Any:
    if annotation is inspect.Parameter.empty:
        return Any
    if not isinstance(annotation, str):
        return annotation
    try:
        return eval(annotation, dict(namespace))  # noqa: S307 - a declared annotation of the project's own code
    except Exception:  # a name only imported for type checkers: the value is not typed
        return Any
