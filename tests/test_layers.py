"""Imports run one way: core <- harness <- toolkit <- tasks, systems; no system imports another system, and a system
reads a task family's records (`tasks.<family>.records`), never a task's internals.

Every import statement of the project's packages is read with `ast` (top-level and inside functions alike), so a
lazy import that crosses a layer is caught too. The registry names systems and tasks by import path strings,
which is how the framework reaches them without importing them.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
PACKAGES = ("core", "harness", "toolkit", "tasks", "systems")
# what each package may import of the project's own packages (itself always)
ALLOWED = {
    "core": set(),
    "harness": {"core"},
    "toolkit": {"core", "harness"},
    "tasks": {"core", "harness", "toolkit"},
    "systems": {"core", "harness", "toolkit"},
}


def imported_modules(path: Path) -> list[tuple[int, str]]:
    """(line, module) of every absolute import in a file."""
    tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found += [(node.lineno, alias.name) for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            found.append((node.lineno, node.module))
    return found


def is_records(module: str) -> bool:
    """A task family's records module, the one part of tasks/ a system may read."""
    parts = module.split(".")
    return len(parts) == 3 and parts[0] == "tasks" and parts[2] == "records"


def crossings(package: str) -> list[str]:
    """Imports in `package` that break the layering, as "file:line imports module"."""
    bad = []
    for path in sorted((REPO / package).rglob("*.py")):
        here = path.relative_to(REPO).parts
        for line, module in imported_modules(path):
            top = module.split(".")[0]
            if top not in PACKAGES or top == package and package != "systems":
                continue
            if package == "systems" and top == "systems":
                # a system package (or module) may import only itself
                if module.split(".")[:2] == ["systems", here[1].removesuffix(".py")]:
                    continue
            elif top in ALLOWED[package] or package == "systems" and is_records(module):
                continue
            bad.append(f"{path.relative_to(REPO)}:{line} imports {module}")
    return bad


@pytest.mark.parametrize("package", PACKAGES)
def test_a_package_imports_only_the_layers_below_it(package: str) -> None:
    assert (REPO / package).is_dir()
    assert crossings(package) == []


def test_the_check_sees_a_crossing(tmp_path: Path) -> None:
    """The reader finds imports inside functions and `from` imports: a lazy crossing would not slip through."""
    source = tmp_path / "lazy.py"
    source.write_text("import os\n\ndef f():\n    from systems.char_lm import system\n    import toolkit.tfidf\n")
    assert imported_modules(source) == [(1, "os"), (4, "systems.char_lm"), (5, "toolkit.tfidf")]
