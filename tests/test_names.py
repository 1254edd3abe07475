"""One name, one meaning: no two modules of the project define a top-level function or class of the same name.

A name defined twice for two things (two `text_key`s, two `EpisodeEncoder`s) costs every reader a detour: which one
is this, and do they agree? Each file of the project's packages is read with `ast` (nothing is imported); the public
top-level definitions are counted, those under a top-level `if` or `try` included. Private names (`_helper`) are a
module's own business and not counted.
"""

from __future__ import annotations

import ast
from collections import defaultdict
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
PACKAGES = ("harness", "toolkit", "tasks", "systems")

# Names that every module may define for itself, each meaning the same thing wherever it is defined.
ALLOWED = {
    "main": "the entry point of a module run as a script (`python -m package.module`), by convention",
}


def definitions(path: Path) -> list[str]:
    """The public top-level functions and classes a file defines."""
    tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
    names, statements = [], list(tree.body)
    while statements:
        node = statements.pop()
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
            names.append(node.name)
        elif isinstance(node, ast.If | ast.Try):
            statements += [*node.body, *node.orelse, *getattr(node, "finalbody", [])]
            statements += [s for handler in getattr(node, "handlers", []) for s in handler.body]
    return [name for name in names if not name.startswith("_")]


def defined_where() -> dict[str, set[str]]:
    """Each public top-level name of the packages, with the modules (dotted) that define it."""
    where: dict[str, set[str]] = defaultdict(set)
    for package in PACKAGES:
        for path in sorted((REPO / package).rglob("*.py")):
            module = ".".join(path.relative_to(REPO).with_suffix("").parts).removesuffix(".__init__")
            for name in definitions(path):
                where[name].add(module)
    return where


def test_the_scan_sees_the_packages() -> None:
    where = defined_where()
    assert where["text_key"] == {"toolkit.splits"}
    assert where["cache_key"] == {"toolkit.feature_store"}


def test_no_name_is_defined_in_two_modules() -> None:
    repeated = {name: modules for name, modules in defined_where().items() if len(modules) > 1 and name not in ALLOWED}
    if repeated:
        lines = [f"  {name}: {', '.join(sorted(modules))}" for name, modules in sorted(repeated.items())]
        pytest.fail("names defined in more than one module (rename one, or say why in ALLOWED):\n" + "\n".join(lines))
