"""What a user can type is checked before any work, and refused in one line (issue 14, items 9, 11, 12, 14).

Each refusal goes through the command line: exit code 2, one line on stderr, no traceback, nothing written.
"""

from __future__ import annotations

import json
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import ClassVar, Literal

import pytest
from helpers.paths import REPO
from helpers.reddit_data import threaded_posts, write_posts
from helpers.refusals import refused

from harness import registry

SAMPLE = REPO / "samples" / "pan23-format-sample"
SMALL_REDDIT = {
    "ranking_query_size": 4,
    "ranking_target_size": 4,
    "linking_query_size": 16,
    "linking_min_query_posts": 8,
    "linking_target_sizes": "1,2,4,8",
    "linking_target_size": 4,
}


def run_args(out: Path, *extra: str, system: str = "cngdist", task: str = "pan23", data: Path = SAMPLE) -> list[str]:
    return ["run", "--system", system, "--task", task, "--data", str(data), "--out", str(out), *extra]


def task_params(params: dict[str, object]) -> list[str]:
    return [item for key, value in params.items() for item in ("--task-param", f"{key}={value}")]


@pytest.fixture
def reddit_data(tmp_path: Path) -> Path:
    return write_posts(tmp_path / "reddit" / "posts.jsonl", threaded_posts()).parent


# -- item 9: --param / --task-param values are read by the type the constructor declares -------------------------


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        ("abc", "error: system 'cngdist': ngram_size expects an integer, got 'abc'"),
        ("true", "error: system 'cngdist': ngram_size expects an integer, got 'true'"),  # ran as ngram_size=1
        ("2.5", "error: system 'cngdist': ngram_size expects an integer, got '2.5'"),  # a traceback after fitting
        ("null", "error: system 'cngdist': ngram_size expects an integer, got 'null'"),
        ("-1", "error: system 'cngdist': ngram_size must be positive, got -1"),  # the constructor's own check
    ],
)
def test_a_system_parameter_of_the_wrong_type_is_refused_before_anything_runs(
    tmp_path: Path, value: str, expected: str
) -> None:
    out = tmp_path / "out"
    assert refused(*run_args(out, "--param", f"ngram_size={value}")) == expected
    assert not out.exists()


def test_task_parameters_and_part_fields_are_typed_too(tmp_path: Path) -> None:
    out = tmp_path / "out"
    line = refused(*run_args(out, "--task-param", "episode_length=three", system="episode_tfidf", task="darkweb"))
    assert line == "error: task 'darkweb': episode_length expects an integer, got 'three'"
    line = refused(*run_args(out, "--task-param", "multitask=maybe", system="episode_tfidf", task="darkweb"))
    assert line == "error: task 'darkweb': multitask expects true or false, got 'maybe'"
    line = refused(*run_args(out, "--task-param", "linking_target_sizes=1,x", system="reddit_tfidf", task="reddit"))
    assert line.endswith("linking_target_sizes expects a list (comma-separated or JSON) of integers, got '1,x'")
    # a part's field, typed by the part's dataclass: a slot whose default is None (the preset decides) ...
    line = refused(*run_args(out, "--param", "training.epochs=true", system="varlen_linker", task="reddit"))
    assert line == "error: system 'varlen_linker': training.epochs expects an integer, got 'true'"
    # ... the field of a part picked by name beside it ...
    args = ("--param", "loss=topk", "--param", "loss.top_k=many")
    line = refused(*run_args(out, *args, system="varlen_linker", task="reddit"))
    assert line == "error: system 'varlen_linker': loss.top_k expects an integer, got 'many'"
    # ... and a slot whose default is a part
    line = refused(*run_args(out, "--param", "preset.hidden=wide", system="char_lm"))
    assert line == "error: system 'char_lm': preset.hidden expects an integer, got 'wide'"
    assert refused(*run_args(out, "--param", "ngram_size")) == "error: --param expects KEY=VALUE, got 'ngram_size'"
    assert not out.exists()


class Toy:
    """A constructor with each kind of declared type."""

    name = "toy"

    def __init__(
        self,
        size: int = 1,
        rate: float = 0.5,
        flag: bool = False,
        label: str = "x",
        limit: int | None = None,
        mode: Literal["fast", "slow"] = "fast",
        shape: tuple[int, int] = (1, 1),
        names: tuple[str, ...] = (),
        sizes: list[int] | None = None,
        members: list[str] | str = "a",
    ) -> None:
        self.size = size


@dataclass(frozen=True)
class Head:
    name: ClassVar[str] = "head"
    width: int = 8
    dropout: float = 0.1


class WithPart:
    name = "with_part"

    def __init__(self, head: Head = Head(), raw: dict | None = None) -> None:
        self.head = head


def test_values_that_json_reads_as_the_declared_type_are_kept_exactly() -> None:
    """What worked before keeps its value, so its run folder (a hash of the values) stays the same."""
    from harness.params import parse_cli

    given = {
        "size": "3",
        "rate": "1",
        "flag": "true",
        "label": '"academia"',
        "limit": "null",
        "mode": '"slow"',
        "shape": "[2, 3]",
        "names": '["a", "b"]',
        "sizes": "[1, 2]",
        "members": "a,b",  # a system that splits the string itself gets the string
    }
    assert parse_cli(Toy, given) == {key: json.loads(value) for key, value in given.items() if key != "members"} | {
        "members": "a,b"
    }
    # stacked splits members itself; the darkweb task takes the market as a string with or without quotes
    assert parse_cli(registry.system_class("stacked"), {"members": "cngdist,tfidf"}) == {"members": "cngdist,tfidf"}
    darkweb = registry.task_class("darkweb")
    assert (
        parse_cli(darkweb, {"market": "campus"}) == parse_cli(darkweb, {"market": '"campus"'}) == {"market": "campus"}
    )


def test_texts_are_read_by_their_declared_type() -> None:
    from harness.params import parse_cli

    given = {
        "rate": ".25",
        "flag": "no",
        "label": "123",  # a string, not the number JSON would make of it
        "limit": "None",
        "mode": "slow",
        "shape": "2,3",
        "names": "a, b",
        "sizes": "1,2",
        "members": '["a"]',
    }
    expected = {
        "rate": 0.25,
        "flag": False,
        "label": "123",
        "limit": None,
        "mode": "slow",
        "shape": (2, 3),
        "names": ("a", "b"),
        "sizes": [1, 2],
        "members": ["a"],
    }
    assert parse_cli(Toy, given) == expected
    assert parse_cli(WithPart, {"head.width": "4", "head.dropout": "0", "raw": '{"k": 1}'}) == {
        "head.width": 4,
        "head.dropout": 0,
        "raw": {"k": 1},
    }


@pytest.mark.parametrize(
    ("key", "value", "expected"),
    [
        ("size", "1.0", "an integer"),
        ("rate", "fast", "a number"),
        ("rate", "nan", "a number"),
        ("flag", "2", "true or false"),
        ("limit", "x", "an integer or null"),
        ("mode", "medium", 'one of "fast", "slow"'),
        ("shape", "1,2,3", "2 comma-separated values (an integer, an integer)"),
        ("names", "[1]", "a list (comma-separated or JSON) of strings"),
        ("sizes", "1,b", "a list (comma-separated or JSON) of integers or null"),
        ("head.width", "wide", "an integer"),
    ],
)
def test_a_text_not_of_the_declared_type_names_the_parameter_and_the_type(key: str, value: str, expected: str) -> None:
    from core.errors import HarnessError
    from harness.params import parse_cli

    cls = WithPart if key.startswith("head.") else Toy
    with pytest.raises(HarnessError) as error:
        parse_cli(cls, {key: value}, label="system 'toy'")
    assert str(error.value) == f"system 'toy': {key} expects {expected}, got {value!r}"


def test_every_registered_constructor_has_types_the_cli_can_read() -> None:
    """Each parameter's default, written as JSON, reads back as itself: nothing declared is unreadable."""
    import inspect

    from harness.params import describe, parse_cli

    for table, load in ((registry.TASKS, registry.task_class), (registry.SYSTEMS, registry.system_class)):
        for name in table:
            cls = load(name)
            if not inspect.signature(cls).parameters:
                continue
            defaults = describe(cls())
            plain = {key: value for key, value in defaults.items() if not isinstance(value, dict)}
            texts = {key: json.dumps(value) for key, value in plain.items()}
            read = parse_cli(cls, texts, label=name)
            assert {key: json.dumps(value) for key, value in read.items()} == texts, name


# -- item 11: a system that does not fit the task, predict/score on a task without PAN answers ----------------------


def test_a_system_that_does_not_fit_the_task_is_refused_from_the_registry(tmp_path: Path) -> None:
    out = tmp_path / "out"
    line = refused(*run_args(out, system="episode_tfidf"))  # was an AttributeError traceback after loading
    assert line.startswith("error: system 'episode_tfidf' does not fit task 'pan23'")
    assert "episode_tfidf runs on: darkweb, reddit;" in line and "systems for pan23: cngdist," in line
    line = refused(*run_args(out, system="varlen_linker", task="darkweb"))
    assert "varlen_linker runs on: reddit;" in line and "systems for darkweb: nbcsauthor," in line
    assert not out.exists()


def test_cngdist_on_darkweb_is_refused_before_loading(reddit_data: Path, tmp_path: Path) -> None:
    out = tmp_path / "out"
    line = refused(*run_args(out, task="darkweb", data=reddit_data))
    assert line.startswith("error: system 'cngdist' does not fit task 'darkweb', which gives darkweb episodes")
    assert "cngdist runs on: pan23, pan-classic, pan20;" in line
    assert not out.exists()


def test_predict_refuses_a_system_that_does_not_fit_the_task(tmp_path: Path) -> None:
    args = ["predict", "--system", "reddit_tfidf", "--task", "pan23", "--input", str(SAMPLE / "test")]
    line = refused(*args, "--output", str(tmp_path / "out"), "--checkpoint", str(tmp_path))
    assert line.startswith("error: system 'reddit_tfidf' does not fit task 'pan23'")
    assert not (tmp_path / "out").exists()


def test_predict_and_score_decide_pan_answers_from_the_registry_without_importing_tasks(tmp_path: Path) -> None:
    code = (
        "import sys\n"
        "from click.testing import CliRunner\n"
        "from harness.cli import main\n"
        f"result = CliRunner().invoke(main, ['score', '--task', 'reddit', '--truth', {str(tmp_path)!r}, "
        f"'--answers', {str(tmp_path)!r}])\n"
        "assert result.exit_code == 2, result.output\n"
        "print(result.stderr.strip())\n"
        "print(sorted(m for m in sys.modules if m.split('.')[0] in ('tasks', 'systems', 'torch')))\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    line, imported = done.stdout.strip().splitlines()
    assert line == "error: task 'reddit' has no PAN answers; predict/score work with: pan23, pan-classic, pan20"
    assert imported == "[]"


def test_the_declared_kinds_agree_with_the_classes() -> None:
    from harness.task import PanAnswers, SplitFolders

    for name, entry in registry.TASKS.items():
        assert entry.data_kind in registry.DATA_KINDS, name
        cls = registry.task_class(name)
        assert entry.pan_answers == issubclass(cls, PanAnswers), name
        assert entry.split_folders == issubclass(cls, SplitFolders), name
        assert (entry.data_kind == "verification") == (cls.metadata.kind == "verification"), name
    for name, entry in registry.SYSTEMS.items():
        assert entry.serves and set(entry.serves) <= set(registry.DATA_KINDS), name
        assert any(registry.fits(name, task) for task in registry.TASKS), name


# -- item 12: every name of a repeated --system / --task is checked before the first run ---------------------------


@pytest.mark.parametrize(
    ("extra", "expected"),
    [
        (["--system", "nope"], "error: unknown system 'nope'; known systems: "),
        (["--task", "nope"], "error: unknown task 'nope'; known tasks: "),
        (["--system", "episode_tfidf"], "error: system 'episode_tfidf' does not fit task 'pan23'"),
        (["--task", "darkweb"], "error: system 'cngdist' does not fit task 'darkweb'"),
        # a parameter the second system does not take: refused before the first fits
        (["--system", "length_ratio", "--param", "ngram_size=3"], "error: system 'length_ratio' has no parameter(s)"),
    ],
)
def test_a_bad_name_later_in_the_list_stops_the_command_before_the_first_run(
    tmp_path: Path, extra: list[str], expected: str
) -> None:
    out = tmp_path / "out"
    assert refused(*run_args(out, *extra)).startswith(expected)
    assert not out.exists()  # cngdist on pan23, first in the list, did not run


# -- item 14: messages a CLI user reaches speak the CLI's words ---------------------------------------------------


def test_predict_without_a_checkpoint_asks_for_one(tmp_path: Path) -> None:
    args = ["predict", "--system", "cngdist", "--task", "pan23", "--input", str(SAMPLE / "test")]
    line = refused(*args, "--output", str(tmp_path / "out"))  # was "not fitted; call fit() or load() ..."
    assert "pass --checkpoint DIR" in line and "fit()" not in line
    assert not (tmp_path / "out").exists()


def test_task_messages_name_command_line_options(tmp_path: Path, reddit_data: Path) -> None:
    args = ("--task-param", "multitask=true", "--task-param", "market=campus")
    line = refused(*run_args(tmp_path / "out", *args, system="episode_tfidf", task="darkweb"))
    assert line == "error: multitask training needs all markets: leave market unset (--task-param market=null)"
    line = refused(
        *run_args(tmp_path / "out", *task_params(SMALL_REDDIT), system="reddit_tfidf", task="reddit", data=reddit_data)
    )
    assert line.endswith("or pass --task-param protocol=legacy") and "protocol='legacy'" not in line


@pytest.mark.parametrize(
    ("key", "expected"),
    [("size.x", "size: takes an integer"), ("flag.x", "flag: takes true or false"), ("head.width.x", "head.width:")],
)
def test_a_dotted_name_below_a_plain_value_is_refused_by_name(key: str, expected: str) -> None:
    """`ngram_size.x=3` was read as a dict, and failed later as a comparison of a dict with an int."""
    from core.errors import HarnessError
    from harness.params import parse_cli

    cls = WithPart if key.startswith("head.") else Toy
    with pytest.raises(HarnessError) as error:
        parse_cli(cls, {key: "3"}, label="system 'toy'")
    assert str(error.value).startswith(f"system 'toy': {expected}") and "not a field 'x' under it" in str(error.value)
