"""Every `harness` command walked with bad inputs: refused with exit code 2, no traceback, nothing written (issue 14).

The commands are read from the click group, so a new command is walked as soon as it exists; it must then be given
a working call in `SPECS` (a test fails until it is), and every path option a role there (`Input` or `Output`).
Each case changes one thing in that working call (shown to succeed by `test_the_working_call_of_each_command_works`):

- a required option or argument left out, an unknown option, a stray argument;
- every input path: one that does not exist, an empty folder, a file where a folder is expected, and a folder
  (or file) holding a malformed file: a JSON line cut in the middle (a truncated `truth.txt` line for PAN
  2013-2015 corpora);
- every output path: a file where a folder is expected, or a folder where a file is expected;
- `--system`/`--task`: an unknown name, an empty one; every `click.Choice`: a value not among its choices;
  every integer option: a word and a negative number;
- `run`: bad `--param`/`--task-param` (unknown key, wrong type, no `=`), and for every registered task an
  empty data folder, one of another task's layout and (where a small valid one can be made) a malformed one.

The rule for what is written to stderr (no "Traceback" anywhere, exit code 2, nothing on stdout):
- a value refused by the harness: exactly one non-empty line, starting "error: ";
- a value refused by click while parsing, before the command runs (a required option or argument missing, an
  unknown option or stray argument, a value the declared click type refuses: a `Path(exists=True)` that does not
  exist, a file for a `Path(file_okay=False)`, a word for an integer, a number out of an `IntRange`, a value not
  in a `Choice`): also one line, "error: <click's message> (see harness COMMAND --help)". Each case says which
  of the two it is, from the option's declared click type.

Nothing may be written anywhere: the whole workspace (inputs and every `--out`/`--output`/`--record`/DST given) is
compared byte for byte before and after, and no system is fitted (`fit` raises during the walk).
"""

from __future__ import annotations

import json
import logging
import os
import shutil
import subprocess
import sys
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

import click
import pytest
from click.testing import CliRunner, Result
from helpers.paths import REPO
from helpers.reddit_data import threaded_posts, write_posts
from test_input_faults import classic_corpus, snapshot

from harness import registry
from harness.cli import main

SAMPLE = REPO / "samples" / "pan23-format-sample"
COMMANDS = sorted(main.commands)

# -- the workspace: small valid inputs, and broken copies of them -------------------------------------------------


def truncate(path: Path) -> None:
    """Cut the last line of a JSON-lines or text file in its middle (a `.json` file: cut at half its bytes)."""
    data = path.read_bytes()
    if path.suffix == ".json":
        path.write_bytes(data[: len(data) // 2])
        return
    head, _, last = data.rstrip(b"\n").rpartition(b"\n")
    path.write_bytes(head + b"\n" + last[: len(last) // 2] + b"\n")


class Workspace:
    """Inputs every case reads (built once, never written by a case) and their broken copies, under one folder."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self.pan23 = shutil.copytree(SAMPLE, root / "pan23")
        self.runs = root / "runs"
        run = ["run", "--system", "length_ratio", "--task", "pan23", "--data", str(self.pan23), "--out", str(self.runs)]
        result = invoke(run)
        assert result.exit_code == 0, (result.output, result.stderr, result.exception)
        self.run_dir = self.runs / "pan23" / "pan23" / "length_ratio" / "seed-0"
        self.checkpoint = self.run_dir / "checkpoint"
        self.answers = root / "answers"
        self.answers.mkdir()
        shutil.copy(self.run_dir / "answers.jsonl", self.answers / "answers.jsonl")
        self.truth = self.pan23 / "test"
        self.corpus = classic_corpus(root / "corpus")
        self.classic = root / "classic"
        for split in ("train", "test"):
            classic_corpus(self.classic / split)
        self.forum = write_posts(root / "forum" / "posts.jsonl", threaded_posts(n_authors=8, per_author=6)).parent
        self.texts = root / "texts.jsonl"  # `harness pairs --from jsonl`: 8 authors, 4 texts each, 2 discourse types
        self.texts.write_text(
            "".join(
                json.dumps({"author": f"a{a}", "discourse_type": ("essay", "email")[t % 2], "group": f"g{a}-{t}",
                            "text": f"text {t} of author {a}, long enough to be kept as a text"}) + "\n"
                for a in range(8) for t in range(4)
            ),
            encoding="utf-8",
        )  # fmt: skip
        self.empty = root / "empty"
        self.empty.mkdir()
        self.file = root / "file.txt"
        self.file.write_text("a file, not a folder\n", encoding="utf-8")
        self.missing = root / "no-such-path"

    def broken(self, name: str, relative: str) -> Path:
        """A copy of the input `name` with `relative` (a file in it) truncated: the copy's folder."""
        folder = self.root / "broken" / f"{name}-{relative.replace('/', '-')}"
        if not folder.exists():
            shutil.copytree(getattr(self, name), folder)
            truncate(folder / relative)
        return folder


def invoke(args: list[str]) -> Result:
    """The CLI as a fresh process runs it: its logging configured onto this invocation's stderr, not pytest's."""
    root = logging.getLogger()
    handlers, level = root.handlers[:], root.level
    root.handlers = []
    try:
        return CliRunner().invoke(main, args)
    finally:
        root.handlers = handlers
        root.setLevel(level)


# -- what each command is given: a working call, and the role of each path -----------------------------------------


@dataclass(frozen=True)
class Input:
    """An input path: `valid` names a Workspace input; `folder_only`: a file there is refused;
    `broken`: files of it that the command reads, each truncated in a case of its own (a folder copy, and for
    `as_file` also that file given directly)."""

    valid: str
    folder_only: bool = True
    broken: tuple[str, ...] = ()
    as_file: bool = False


@dataclass(frozen=True)
class Output:
    """An output path: a folder (a file there is refused), or with `file` a file (a folder there is refused)."""

    file: bool = False


@dataclass(frozen=True)
class Spec:
    """A working call of a command, by click parameter name: a text, a flag (True), an Input or an Output."""

    call: dict[str, object]
    extra_cases: Callable[[], list[Case]] = field(default=lambda: [])


RESULTS = Input("runs", folder_only=False, broken=("pan23/pan23/length_ratio/seed-0/result.json",))
RESULTS_WITH_DETAILS = Input(
    "runs", folder_only=False, broken=(*RESULTS.broken, "pan23/pan23/length_ratio/seed-0/details.jsonl")
)


@dataclass(frozen=True)
class Case:
    """One bad call: `args(workspace, out)` gives its argv; `by_click`: refused by click's parser (see above)."""

    command: str
    label: str
    args: Callable[[Workspace, Path], list[str]]
    by_click: bool

    @property
    def id(self) -> str:
        return f"{self.command}:{self.label}"


def run_cases() -> list[Case]:
    """`run` only: bad parameters, and every registered task's data folder empty, of another layout, or broken."""
    cases = []
    for label, pairs in {
        "--param unknown key": ["--param", "no_such_key=1"],
        "--param wrong type": ["--param", "ngram_size=abc"],
        "--param bool for int": ["--param", "ngram_size=true"],
        "--param out of range": ["--param", "ngram_size=-1"],
        "--param without =": ["--param", "ngram_size"],
        "--param empty key": ["--param", "=3"],
        "--task-param unknown key": ["--task-param", "no_such_key=1"],
        "--task-param wrong type": ["--task-param", "ranking_query_size=x"],
    }.items():
        system, task = ("reddit_tfidf", "reddit") if label.startswith("--task-param") else ("cngdist", "pan23")
        cases.append(Case("run", label, _run_with(pairs, system, task), by_click=False))
    cases += split_folder_cases()
    for task in registry.TASKS:
        system = next(s for s in (*LIGHT_SYSTEMS, *registry.SYSTEMS) if registry.fits(s, task))
        for layout, source in DATA_OF_TASK.items():
            if layout == DATA_LAYOUT.get(task):
                continue
            cases.append(Case("run", f"{task} data of {layout} layout", _run_on(task, system, source), False))
        if task == SPECS["run"].call["tasks"]:
            continue  # its empty and broken data folders are walked as the working call's --data
        cases.append(Case("run", f"{task} data empty", _run_on(task, system, ("empty", None)), False))
        for relative in BROKEN_DATA.get(DATA_LAYOUT.get(task, ""), ()):
            source = (DATA_OF_TASK[DATA_LAYOUT[task]][0], relative)
            cases.append(Case("run", f"{task} data with {relative} truncated", _run_on(task, system, source), False))
    return cases


def split_folder_cases() -> list[Case]:
    """`run --train DIR --test DIR` (the PAN tasks' alternative to --data): each folder missing, nonexistent,
    empty, a file or broken; given beside --data; given to a task that cuts one corpus itself."""

    def call(train: Callable[[Workspace], object] | None, test: Callable[[Workspace], object] | None,
             task: str = "pan23", system: str = "length_ratio", data: bool = False):  # fmt: skip
        def args(ws: Workspace, out: Path) -> list[str]:
            argv = ["run", "--system", system, "--task", task, "--out", str(out / "o")]
            argv += ["--data", str(ws.pan23)] if data else []
            argv += ["--train", str(train(ws))] if train else []
            return argv + (["--test", str(test(ws))] if test else [])

        return args

    good = {"--train": lambda ws: ws.pan23 / "train", "--test": lambda ws: ws.pan23 / "test"}
    cases = [
        Case("run", "--train without --test", call(good["--train"], None), False),
        Case("run", "--test without --train", call(None, good["--test"]), False),
        Case("run", "--train and --test beside --data", call(good["--train"], good["--test"], data=True), False),
        Case("run", "--train/--test for darkweb", call(*good.values(), task="darkweb", system="episode_tfidf"), False),
    ]
    bad = {
        "nonexistent": lambda ws: ws.missing,
        "empty folder": lambda ws: ws.empty,
        "a file": lambda ws: ws.file,
        "with pairs.jsonl truncated": lambda ws: ws.broken("pan23", "train/pairs.jsonl") / "train",
    }
    for option in good:
        for label, value in bad.items():
            train, test = (value, good["--test"]) if option == "--train" else (good["--train"], value)
            cases.append(Case("run", f"{option} {label}", call(train, test), False))
    return cases


# walked by split_folder_cases and pretrain-style's extra case, not in the working call
ALTERNATIVE_PATHS = {
    "run": {"train_dir", "test_dir"},
    "pretrain-style": {"exclude_sets", "exclude_all_sets", "reuse_from"},
}
LIGHT_SYSTEMS = ("length_ratio", "reddit_tfidf", "episode_tfidf")  # no torch: cheap to import, never fitted here
DATA_LAYOUT = {"pan23": "pan23", "pan20": "pan23", "pan-classic": "classic", "reddit": "forum", "darkweb": "forum"}
DATA_OF_TASK = {"pan23": ("pan23", None), "classic": ("classic", None), "forum": ("forum", None)}
BROKEN_DATA = {
    "pan23": ("train/pairs.jsonl", "train/truth.jsonl", "test/pairs.jsonl", "test/truth.jsonl"),
    "classic": ("train/truth.txt",),
    "forum": ("posts.jsonl",),
}


def _run_with(extra: list[str], system: str, task: str) -> Callable[[Workspace, Path], list[str]]:
    def args(ws: Workspace, out: Path) -> list[str]:
        data = ws.forum if task == "reddit" else ws.pan23
        return ["run", "--system", system, "--task", task, "--data", str(data), "--out", str(out / "o"), *extra]

    return args


def _run_on(task: str, system: str, source: tuple[str, str | None]) -> Callable[[Workspace, Path], list[str]]:
    def args(ws: Workspace, out: Path) -> list[str]:
        name, relative = source
        data = ws.broken(name, relative) if relative else getattr(ws, name)
        return ["run", "--system", system, "--task", task, "--data", str(data), "--out", str(out / "o")]

    return args


SPECS: dict[str, Spec] = {
    "list": Spec(
        {"name": "cngdist"},
        lambda: [Case("list", "NAME unknown", _with("list", "name", lambda ws, o: "no-such-system"), False)],
    ),
    "run": Spec(
        {
            "systems": "length_ratio",
            "tasks": "pan23",
            "data_dir": Input("pan23", broken=BROKEN_DATA["pan23"]),
            "out_dir": Output(),
        },
        run_cases,
    ),
    "predict": Spec(
        {
            "system_name": "length_ratio",
            "task_name": "pan23",
            "input_dir": Input("truth", broken=("pairs.jsonl",)),
            "output_dir": Output(),
            "checkpoint": Input("checkpoint", broken=("config.json",)),
        },
        lambda: [  # the working call's checkpoint, a length_ratio one, given to another system
            Case(
                "predict",
                "--checkpoint of another system",
                _with("predict", "system_name", lambda ws, o: "cngdist"),
                False,
            )
        ],
    ),
    "score": Spec(
        {
            "task_name": "pan23",
            "truth_path": Input("truth", folder_only=False, broken=("truth.jsonl",), as_file=True),
            "answers_path": Input("answers", folder_only=False, broken=("answers.jsonl",), as_file=True),
            "output_dir": Output(),
            "record_dir": Output(),
        }
    ),
    "convert": Spec({"src": Input("corpus", broken=("truth.txt",)), "dst": Output()}),
    "pairs": Spec(
        {
            "inputs": Input("texts", folder_only=False),
            "out_dir": Output(),
            "source": "jsonl",
            "n_pairs": "8",
        }
    ),
    "pretrain-style": Spec(
        {
            "posts": Input("forum", folder_only=False, broken=("posts.jsonl",)),
            "out_dir": Output(),
            "steps": "1",
            "device": "cpu",
        },
        lambda: [  # a folder that is no `harness pairs` set (no pair_origins.jsonl) to leave the test side of
            Case(
                "pretrain-style",
                "--exclude-test-of a folder that is no pair set",
                lambda ws, out: [
                    *argv("pretrain-style", SPECS["pretrain-style"].call, ws, out),
                    "--exclude-test-of",
                    str(ws.pan23),
                ],  # fmt: skip
                False,
            ),
            Case(
                "pretrain-style",
                "--exclude-all-of a folder that is no pair set",
                lambda ws, out: [
                    *argv("pretrain-style", SPECS["pretrain-style"].call, ws, out),
                    "--exclude-all-of",
                    str(ws.pan23),
                ],  # fmt: skip
                False,
            ),
            Case(
                "pretrain-style",
                "--band-folds with no set to make them of",
                lambda ws, out: [
                    *argv("pretrain-style", SPECS["pretrain-style"].call, ws, out),
                    "--band-folds",
                    "2",
                ],  # fmt: skip
                False,
            ),
            Case(
                "pretrain-style",
                "--reuse-from without --band-folds",
                lambda ws, out: [
                    *argv("pretrain-style", SPECS["pretrain-style"].call, ws, out),
                    "--reuse-from",
                    str(ws.forum),
                ],  # fmt: skip
                False,
            ),
            Case(
                "pretrain-style",
                "--band-folds 1",
                lambda ws, out: [
                    *argv("pretrain-style", SPECS["pretrain-style"].call, ws, out),
                    "--band-folds",
                    "1",
                ],  # fmt: skip
                True,
            ),
        ],
    ),
    "leaderboard": Spec({"results": RESULTS_WITH_DETAILS, "ci": True, "resamples": "10", "output": Output(file=True)}),
    "plot": Spec({"results": RESULTS, "out_dir": Output()}),
    "report": Spec({"results": RESULTS_WITH_DETAILS, "out_dir": Output(), "resamples": "10"}),
}


def params_of(command: str) -> dict[str, click.Parameter]:
    return {param.name: param for param in main.commands[command].params if param.name}


def argv(command: str, call: dict[str, object], ws: Workspace, out: Path) -> list[str]:
    """The call as a command line: options by their first name, arguments in place, outputs below `out`."""
    args: list[str] = [command]
    for name, value in call.items():
        param = params_of(command)[name]
        if isinstance(value, Input):
            value = getattr(ws, value.valid)
        elif isinstance(value, Output):
            value = out / (f"{name}.md" if value.file else name)
        if isinstance(param, click.Argument):
            args.append(str(value))
        elif value is True:
            args.append(param.opts[0])
        else:
            args += [param.opts[0], str(value)]
    return args


def _with(command: str, name: str, value: Callable[[Workspace, Path], object] | None):
    """The working call with parameter `name` replaced by value(ws, out), or left out (None)."""

    def args(ws: Workspace, out: Path) -> list[str]:
        call = dict(SPECS[command].call)
        if value is None:
            gone = {name}
            if isinstance(params_of(command)[name], click.Argument):  # those after it would move into its place
                later = list(call)[list(call).index(name) :]
                gone |= {key for key in later if isinstance(params_of(command)[key], click.Argument)}
            call = {key: item for key, item in call.items() if key not in gone}
        else:
            call[name] = value(ws, out)
        return argv(command, call, ws, out)

    return args


def _appended(command: str, extra: list[str]) -> Callable[[Workspace, Path], list[str]]:
    return lambda ws, out: argv(command, SPECS[command].call, ws, out) + extra


def cases_of(command: str) -> list[Case]:
    """The bad calls of one command, derived from its click parameters and its working call."""
    spec = SPECS[command]
    params = params_of(command)
    cases = [
        Case(command, "unknown option", _appended(command, ["--no-such-option"]), by_click=True),
        Case(command, "stray argument", _appended(command, ["stray-argument"]), by_click=True),
    ]
    for name, param in params.items():
        opt = param.opts[0] if isinstance(param, click.Option) else name.upper()
        value = spec.call.get(name)
        if param.required:
            cases.append(Case(command, f"{opt} missing", _with(command, name, None), by_click=True))
        if isinstance(value, Input):
            checks_exists = isinstance(param.type, click.Path) and param.type.exists
            refuses_files = isinstance(param.type, click.Path) and not param.type.file_okay
            cases.append(
                Case(command, f"{opt} nonexistent", _with(command, name, lambda ws, o: ws.missing), checks_exists)
            )
            cases.append(Case(command, f"{opt} empty folder", _with(command, name, lambda ws, o: ws.empty), False))
            if value.folder_only:
                cases.append(Case(command, f"{opt} a file", _with(command, name, lambda ws, o: ws.file), refuses_files))
            for relative in value.broken:
                folder = _broken(value.valid, relative)
                cases.append(Case(command, f"{opt} with {relative} truncated", _with(command, name, folder), False))
                if value.as_file:
                    file = _broken(value.valid, relative, as_file=True)
                    cases.append(Case(command, f"{opt} {relative} truncated", _with(command, name, file), False))
        elif isinstance(value, Output):
            blocker = (lambda ws, o: ws.runs) if value.file else (lambda ws, o: ws.file)
            what = "a folder" if value.file else "a file"
            cases.append(Case(command, f"{opt} {what}", _with(command, name, blocker), False))
        if opt in ("--system", "--task"):  # registry names (score's --system-name is a free label)
            cases.append(Case(command, f"{opt} unknown", _with(command, name, lambda ws, o: "no_such_name"), False))
            cases.append(Case(command, f"{opt} empty", _with(command, name, lambda ws, o: ""), False))
        if isinstance(param.type, click.Choice):
            cases.append(Case(command, f"{opt} not a choice", _with(command, name, lambda ws, o: "nope"), True))
        if isinstance(param, click.Option) and isinstance(param.type, click.types.IntParamType) and not param.is_flag:
            for word in ("abc", "-1"):
                cases.append(Case(command, f"{opt} {word}", _with(command, name, lambda ws, o, w=word: w), True))
    return cases + spec.extra_cases()


def _broken(name: str, relative: str, *, as_file: bool = False) -> Callable[[Workspace, Path], Path]:
    def value(ws: Workspace, out: Path) -> Path:
        folder = ws.broken(name, relative)
        return folder / relative if as_file else folder

    return value


CASES = [case for command in COMMANDS if command in SPECS for case in cases_of(command)]


# -- the walk -------------------------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def workspace(tmp_path_factory: pytest.TempPathFactory) -> Workspace:
    return Workspace(tmp_path_factory.mktemp("walk"))


@pytest.fixture
def no_fitting(workspace: Workspace, monkeypatch: pytest.MonkeyPatch) -> None:
    """No case fits a system: each is refused before (a fit can take hours in real use)."""

    def fit(self, *args, **kwargs):  # noqa: ANN001, ANN002, ANN003, ANN202
        raise AssertionError("a system was fitted before the refusal")

    for name in {"cngdist", *LIGHT_SYSTEMS}:
        monkeypatch.setattr(registry.system_class(name), "fit", fit)


def check_refused(exit_code: int, stdout: str, stderr: str, by_click: bool, exception: object = None) -> str:
    """The walk's rule (see the module's docstring); returns the error line."""
    detail = (exit_code, stdout, stderr, exception)
    assert exit_code == 2, detail
    assert exception is None or isinstance(exception, SystemExit), detail
    assert "Traceback" not in stdout + stderr, detail
    assert stdout == "", detail
    lines = [line for line in stderr.splitlines() if line.strip()]
    assert len(lines) == 1 and lines[0].startswith("error: "), detail
    if by_click:
        assert lines[0].endswith(" --help)"), detail
    return lines[0]


# Failures whose fix lies outside harness/cli.py: each must fail until it is fixed (strict), then leave this table.
KNOWN_FAILURES: dict[str, str] = {}  # case id -> why it still fails (strict xfail)


def walked(cases: list[Case]) -> list[object]:
    marks = {case_id: pytest.mark.xfail(reason=reason, strict=True) for case_id, reason in KNOWN_FAILURES.items()}
    return [pytest.param(case, id=case.id, marks=[marks[case.id]] if case.id in marks else []) for case in cases]


@pytest.mark.parametrize("case", walked(CASES))
def test_a_bad_input_is_refused_in_one_line_and_writes_nothing(
    case: Case, workspace: Workspace, no_fitting: None, tmp_path: Path
) -> None:
    args = case.args(workspace, tmp_path)  # broken copies are made here, before the snapshots
    before = snapshot(workspace.root), snapshot(tmp_path)
    result = invoke(args)
    check_refused(result.exit_code, result.stdout, result.stderr, case.by_click, result.exception)
    assert (snapshot(workspace.root), snapshot(tmp_path)) == before


def test_every_command_is_walked_and_every_path_has_a_role() -> None:
    """A new command needs a working call here; a new path option needs a role (Input or Output) in it."""
    assert sorted(SPECS) == COMMANDS
    assert set(KNOWN_FAILURES) <= {case.id for case in CASES}
    for command in COMMANDS:
        for name, param in params_of(command).items():
            if isinstance(param.type, click.Path) and name not in ALTERNATIVE_PATHS.get(command, ()):
                assert isinstance(SPECS[command].call.get(name), Input | Output), f"{command} {name}: no role"
    for command in COMMANDS:
        assert sum(case.command == command for case in CASES) >= 2


@pytest.mark.parametrize("command", COMMANDS)
def test_the_working_call_of_each_command_works(command: str, workspace: Workspace, tmp_path: Path) -> None:
    """Each case differs from this call in one thing, so its refusal is that thing's."""
    result = invoke(argv(command, SPECS[command].call, workspace, tmp_path))
    assert result.exit_code == 0, (result.output, result.stderr, result.exception)


def test_the_installed_entry_point_refuses_the_same_way(workspace: Workspace, tmp_path: Path) -> None:
    """A few cases through `python -m harness.cli` itself: what a user's shell sees, tracebacks included."""
    picked = ["run:--task unknown", "run:--out a file", "score:--truth nonexistent", "leaderboard:--digits -1"]
    cases = {case.id: case for case in CASES}
    for case_id in picked:
        case = cases[case_id]
        done = subprocess.run(
            [sys.executable, "-m", "harness.cli", *case.args(workspace, tmp_path)],
            capture_output=True,
            text=True,
            check=False,
            env={**os.environ, "OMP_NUM_THREADS": "1"},
        )
        check_refused(done.returncode, done.stdout, done.stderr, case.by_click)
    assert not any(tmp_path.iterdir())


def test_the_walk_covers_every_kind_of_bad_input() -> None:
    labels = {case.label for case in CASES}
    for expected in (
        "--system missing",
        "--data nonexistent",
        "--data empty folder",
        "--data a file",
        "--out a file",
        "--output a folder",
        "--system unknown",
        "--task unknown",
        "--param unknown key",
        "--param wrong type",
        "--data with test/pairs.jsonl truncated",
        "SRC a file",
    ):
        assert expected in labels, expected
