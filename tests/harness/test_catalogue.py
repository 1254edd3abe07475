"""`harness list NAME`: a system's tasks, install extra, paper and parameters with defaults that `--param` reads
back; a task's systems and parameters; the extra each system declares is the one its imports need."""

from __future__ import annotations

import ast
import inspect
import json
import re
from pathlib import Path

import pytest
from click.testing import CliRunner

from harness import registry
from harness.cli import main

REPO = Path(__file__).resolve().parents[2]
PROJECT = ("core", "harness", "toolkit", "tasks", "systems")
NEURAL = ("torch", "transformers")


def _module_file(module: str) -> Path | None:
    for candidate in (REPO / (module.replace(".", "/") + ".py"), REPO / module.replace(".", "/") / "__init__.py"):
        if candidate.is_file():
            return candidate
    return None


def neural_imports(module: str, seen: set[str] | None = None) -> set[str]:
    """torch/transformers imported anywhere (inside functions too) by `module` or the project modules it imports."""
    seen = set() if seen is None else seen
    path = _module_file(module)
    if module in seen or path is None:
        return set()
    seen.add(module)
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        names: list[str] = []
        if isinstance(node, ast.Import):
            names = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            names = [node.module] + [f"{node.module}.{alias.name}" for alias in node.names]
        for name in names:
            top = name.split(".")[0]
            if top in NEURAL:
                found.add(top)
            elif top in PROJECT:
                found |= neural_imports(name, seen)
    return found


@pytest.mark.parametrize("name", sorted(registry.SYSTEMS))
def test_a_system_declares_the_neural_extra_exactly_when_its_code_imports_torch(name: str):
    entry = registry.SYSTEMS[name]
    needs = bool(neural_imports(entry.target.split(":")[0]))
    assert (entry.extra == "neural") == needs, f"{name}: declares {entry.extra!r}, imports {needs and 'torch'}"


def invoke(*args: str):
    return CliRunner().invoke(main, ["list", *args])


def test_a_system_shows_its_tasks_extra_paper_and_parameters_that_read_back():
    pytest.importorskip("torch")
    from systems.encoder_wccn import EncoderWccn

    result = invoke("encoder_wccn")
    assert result.exit_code == 0, result.output
    lines = result.output.splitlines()
    tasks = next(line for line in lines if line.startswith("  tasks:"))
    assert "pan23" in tasks and "pan-classic" in tasks and "darkweb" not in tasks
    assert any("needs:" in line and "[neural]" in line for line in lines)
    assert any(line.startswith("  about: `encoder_wccn`") for line in lines)
    shown = {}
    for line in lines:
        key, sep, value = line.strip().partition(" = ")
        if sep and not value.endswith("(a part; its fields:)"):
            shown[key] = json.loads(value)
    defaults = inspect.signature(EncoderWccn).parameters
    for name, parameter in defaults.items():
        if name != "encoder":
            assert shown[name] == parameter.default, name
    assert shown["whiten"] is True and shown["encoder.max_chunks_per_text"] == 32 and shown["encoder.model"] is None


def test_a_task_shows_the_systems_that_fit_it_and_its_parameters():
    result = invoke("darkweb")
    assert result.exit_code == 0, result.output
    systems = next(line for line in result.output.splitlines() if line.startswith("  systems:"))
    assert "forum_wccn" in systems and "episode_tfidf" in systems and "cngdist" not in systems
    assert "--task-param KEY=VALUE" in result.output and '    protocol = "thread-disjoint"' in result.output


def test_an_unknown_name_is_refused_with_the_known_ones():
    result = invoke("cngdistt")
    assert result.exit_code == 2 and "no system or task named 'cngdistt'" in result.output
    assert "cngdist" in result.output and "pan23" in result.output


def test_the_list_puts_every_description_in_one_column_after_a_space():
    result = invoke()
    assert result.exit_code == 0, result.output
    entries = [line for line in result.output.splitlines() if line.startswith("  ")]
    assert any(line.startswith("  forum_ngram_style ") for line in entries)  # the longest names are not cut
    starts = {len(line) - len(line[2:].split(" ", 1)[1].lstrip()) for line in entries}
    assert len(starts) == 1, starts


def test_the_readme_names_every_registered_system_and_task():
    """A system that lands is also told to the README's readers ("Tasks and systems"), and one that goes leaves it."""
    from helpers.paths import REPO

    readme = (REPO / "README.md").read_text(encoding="utf-8")
    section = readme.split("\n## Tasks and systems\n", 1)[1].split("\n## ", 1)[0]
    named = set(re.findall(r"`([a-z][a-z0-9_-]*)`", section))
    assert not set(registry.SYSTEMS) - named, sorted(set(registry.SYSTEMS) - named)
    assert not set(registry.TASKS) - named, sorted(set(registry.TASKS) - named)


def test_parts_the_preset_makes_show_the_dotted_names_param_takes():
    """Audit 13: `--param encoder.text_dim=64` (nbcsauthor) was shown nowhere: its encoder's default is None, made
    into a part by the preset, and `list` showed `encoder = null` alone."""
    pytest.importorskip("torch")
    from harness.params import build, parse_cli
    from systems.nbcsauthor.system import EpisodeAuthor

    result = invoke("nbcsauthor")
    assert result.exit_code == 0, result.output
    assert "    encoder = null (the preset's part, episode_encoder; its fields:)" in result.output
    assert "      encoder.text_dim = 64" in result.output and "      loss.tau = 0.2" in result.output
    built = build(EpisodeAuthor, parse_cli(EpisodeAuthor, {"encoder.text_dim": "72", "loss.tau": "0.3"}))
    assert built.encoder.text_dim == 72 and built.loss.tau == 0.3  # the names shown are the ones taken
