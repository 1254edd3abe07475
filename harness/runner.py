"""`harness run`: fit a system on a task's train split, answer the test split, score, record.

A run's folder holds `result.json` (scores and provenance), `details.jsonl` (one row per scored
problem or query, what confidence intervals resample), `checkpoint/` (the fitted system) and, for
tasks whose evaluation gives answers (verification), `answers.jsonl` (PAN format, one answer per test
problem). A finished run is kept, not recomputed; a run that crashed after fitting resumes from its checkpoint.

A run folder is wholly one run: `--overwrite` builds the new run in a hidden sibling folder and swaps it in
once it is complete, so a crash leaves the old run, no result, or the new run, never a mix. A lock file beside
the folder (`.seed-N.lock`) lets one process at a time work on it; the next waits, then keeps what it finds.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import logging
import os
import shutil
import sys
import time
from collections.abc import Iterable
from pathlib import Path
from typing import Any, NamedTuple

from core.errors import HarnessError
from core.files import (
    ATOMIC_WRITE_SUFFIX,
    SET_ASIDE_SUFFIX,
    STAGED_SUFFIX,
    atomic_write,
    find_temporaries,
    folder_temporaries,
    holding,
    lock_path,
    remove_temporaries,
    sha256_files,
    staging_folder,
    swap_folder,
    write_jsonl,
)
from core.progress import duration
from core.records import VerificationData
from harness import registry
from harness.data_location import DataLocation
from harness.params import build
from harness.provenance import forget_devices
from harness.results import (
    DETAILS_NAME,
    RESULT_NAME,
    build_result,
    read_result,
    task_record,
    write_details,
    write_result_file,
)
from harness.run_result import read_run_result
from harness.runtime import load_like
from harness.seeding import seed_everything
from harness.system import constructor_params, input_checksums
from harness.task import Evaluation

logger = logging.getLogger("harness")

ANSWERS_NAME = "answers.jsonl"
CHECKPOINT_NAME = "checkpoint"
FIT_FINGERPRINT_NAME = "checkpoint.fingerprint"
# `--overwrite` builds its run in `.seed-N.XXXXXXXX.new` beside the run folder and sets the run it replaces aside
# as `.seed-N.XXXXXXXX.old` until the swap is done (core.files.swap_folder)
# what the harness writes in a run folder; anything else there (a user's notes) is carried over by --overwrite
OWN_NAMES = (RESULT_NAME, DETAILS_NAME, ANSWERS_NAME, CHECKPOINT_NAME, FIT_FINGERPRINT_NAME)
OWN_TEMPORARIES = [(name, ATOMIC_WRITE_SUFFIX) for name in OWN_NAMES if name != CHECKPOINT_NAME] + folder_temporaries(
    CHECKPOINT_NAME  # toolkit.checkpoint writes through core.files.staged_folder
)


class RunOutcome(NamedTuple):
    run_dir: Path
    result: dict[str, Any]
    reused: bool  # True when an existing result was kept instead of recomputed


def _construct(cls: Any, kind: str, name: str, params: dict[str, Any]) -> Any:
    """Build a registered class from named (or dotted, for parts) constructor parameters; unknown names are refused."""
    return build(cls, params, label=f"{kind} {name!r}")


def make_system(system_name: str, params: dict[str, Any]) -> Any:
    return _construct(registry.system_class(system_name), "system", system_name, params)


def make_task(task_name: str, params: dict[str, Any]) -> Any:
    return _construct(registry.task_class(task_name), "task", task_name, params)


def run_folder(
    out_dir: Path,
    task_name: str,
    system_name: str,
    seed: int,
    params: dict[str, Any],
    task_params: dict[str, Any] | None = None,
    data: DataLocation | None = None,
) -> Path:
    """`<out>/<task>[@<hash>]/<data>/<system>[@<hash>]/seed-<seed>`: runs on other data or parameters never collide.

    `<data>` is the data folder's name (`DataLocation.label`); without `data` it is left out (older layout).
    """
    task_label = task_name + ("@" + _digest(task_params)[:8] if task_params else "")
    system_label = system_name + ("@" + _digest(params)[:8] if params else "")
    folder = Path(out_dir) / task_label
    if data is not None:
        folder = folder / data.label
    return folder / system_label / f"seed-{seed}"


def _digest(obj: Any) -> str:
    return hashlib.sha256(json.dumps(obj, sort_keys=True, default=str).encode("utf-8")).hexdigest()


class _Setup(NamedTuple):
    """A run's names resolved: the task (with every setting), a fresh system, the run folder."""

    task: Any
    task_params: dict[str, Any]  # with defaults: the record names every setting
    system: Any
    run_dir: Path


def run(
    *,
    system_name: str,
    task_name: str,
    data: DataLocation | Path,
    seed: int = 0,
    out_dir: Path = Path("runs"),
    params: dict[str, Any] | None = None,
    task_params: dict[str, Any] | None = None,
    overwrite: bool = False,
    lock_timeout: float | None = None,
) -> RunOutcome:
    """Fit, predict, score and write one run; keep an existing identical run unless `overwrite`.

    While another process works on the same run folder this waits for it (at most `lock_timeout` seconds if
    given, then a HarnessError), and then keeps or replaces what it finished like any existing run.
    """
    data = data if isinstance(data, DataLocation) else DataLocation(data_dir=Path(data))
    started = time.perf_counter()
    timings: dict[str, float] = {}
    forget_devices()  # the result records the devices this run's system resolves, not an earlier run's
    setup = _resolve(system_name, task_name, data, seed, out_dir, dict(params or {}), dict(task_params or {}))
    _refuse_a_file_on_the_way(setup.run_dir)
    run_dir = setup.run_dir
    if run_dir.is_symlink():  # a linked run folder is replaced where it lies: a rename cannot go through the link
        run_dir = run_dir.resolve()  # (audit 20, F2: --overwrite had removed the result, then failed on the rename)
    train, test, overlap = _load_data(setup.task, data, timings)
    meta = setup.task.metadata
    inputs = input_checksums(setup.system)
    fit_key = {
        "task": [meta.name, meta.version, setup.task_params],
        "train": train.checksum,
        "system": system_name,
        "params": setup.system.params(),
        "seed": seed,
        **({"inputs": inputs} if inputs else {}),  # only where a system reads a folder: other fingerprints stay
    }
    fit_fingerprint = "sha256:" + _digest(fit_key)
    fingerprint = "sha256:" + _digest({**fit_key, "test": test.checksum})

    main_process = is_main_process()  # under torchrun only the main process writes, so only it locks
    with holding(run_dir, lock_timeout) if main_process else contextlib.nullcontext():
        if main_process:
            _remove_stale_temporaries(run_dir)
        earlier = _kept_result(run_dir, fingerprint, overwrite, inputs)
        if earlier is not None:
            return RunOutcome(run_dir, earlier, reused=True)
        _refuse_a_folder_no_run_made(run_dir)
        seed_everything(seed)
        system, resumed = _load_or_fit(setup.system, train, run_dir, fit_fingerprint, seed, overwrite, timings)
        if not resumed and not main_process:
            # under torchrun every process trains; only the main one writes and evaluates
            return RunOutcome(run_dir, {}, reused=False)

        # Where a result may stand (--overwrite), the new run is built in a sibling folder and swapped in with
        # renames once complete: until then the old run stays whole. Building in place after removing result.json
        # would be simpler but loses the old run to any crash. A plain run has no result to protect (it returned
        # above otherwise) and builds in place, so a crash after fitting leaves a checkpoint to resume from.
        work_dir = staging_folder(run_dir, STAGED_SUFFIX) if overwrite else run_dir
        try:
            if not resumed:
                _save_fit(system, work_dir, fit_fingerprint)
            evaluation = _evaluate(setup.task, system, test, work_dir, timings)
            timings["total"] = round(time.perf_counter() - started, 6)
            data_record = {**data.record(), **_split_records(train, test), **overlap}
            result = build_result(
                task=task_record(meta, setup.task_params, evaluation, data_record),
                system=_system_record(system_name, system, work_dir, inputs),
                seed=seed,
                evaluation=evaluation,
                timings=timings,
                fingerprint=fingerprint,
                command=sys.argv,
            )
            result["details"]["checksum"] = write_details(work_dir, evaluation.details)
            set_aside = _swap_in(work_dir, run_dir) if work_dir != run_dir else None
        except BaseException:
            if work_dir != run_dir:
                shutil.rmtree(work_dir, ignore_errors=True)  # an --overwrite never resumes: nothing to keep
            raise
        write_result_file(run_dir, result)  # last: its presence marks a finished run
        if set_aside is not None:
            _carry_over(set_aside, run_dir)
            shutil.rmtree(set_aside, ignore_errors=True)
    return RunOutcome(run_dir, result, reused=False)


def _resolve(
    system_name: str,
    task_name: str,
    data: DataLocation,
    seed: int,
    out_dir: Path,
    params: dict[str, Any],
    given_task_params: dict[str, Any],
) -> _Setup:
    """Build the task and the system from their names and parameters, and name the run folder."""
    task = make_task(task_name, given_task_params)
    task_params = constructor_params(task)
    system = make_system(system_name, params)
    given = {key: value for key, value in task_params.items() if key in given_task_params}
    run_dir = run_folder(out_dir, task_name, system_name, seed, params, given, data)
    return _Setup(task, task_params, system, run_dir)


def _load_data(task: Any, data: DataLocation, timings: dict[str, float]) -> tuple[Any, Any, dict[str, int]]:
    """The train and test splits, and the task's counts of what they share."""
    with duration("load", timings):
        train = data.load(task, "train")
        test = data.load(task, "test")
    if isinstance(train, VerificationData):
        train = train.in_id_order()  # the same problems in another line order fit the same system
    if data.format_sample:
        logger.warning("%s is a format sample the project wrote, not real data: its scores mean nothing", data.label)
    check = getattr(task, "check_splits", None)  # harness.task.SplitCheck: what cannot be scored, refused now
    if check is not None:
        check(train, test)
    return train, test, split_overlap(task, train, test)


def _refuse_a_file_on_the_way(run_dir: Path) -> None:
    """A file where the run folder (or a folder above it) goes is refused before the fit, not after it."""
    for folder in (run_dir, *run_dir.parents):
        if folder.exists() or folder.is_symlink():
            if not folder.is_dir():
                what = "the run folder" if folder == run_dir else f"a folder above the run folder {run_dir}"
                raise HarnessError(f"{folder} is not a folder, and {what} goes there; move it or choose another --out")
            return


def _kept_result(run_dir: Path, fingerprint: str, overwrite: bool, inputs: dict[str, str]) -> dict[str, Any] | None:
    """The finished result in run_dir if it is this run's (and not `overwrite`); a HarnessError if it is another's."""
    result_path = run_dir / RESULT_NAME
    if not result_path.exists() or overwrite:
        return None
    try:
        earlier = read_result(result_path)
    except HarnessError as error:  # a damaged result: say how to recompute it (audit 20, F8)
        raise HarnessError(f"{error}; --overwrite recomputes the run") from None
    if earlier.get("fingerprint") != fingerprint:
        system = earlier.get("system")
        theirs = system.get("inputs", {}) if isinstance(system, dict) else {}
        changed = sorted(
            name for name in inputs if isinstance(theirs, dict) and name in theirs and theirs[name] != inputs[name]
        )
        if changed:
            raise HarnessError(
                f"{result_path} was fitted with other files in the folder of {', '.join(changed)} than are there now; "
                "--overwrite fits again with them"
            )
        unrecorded = sorted(name for name in inputs if not isinstance(theirs, dict) or name not in theirs)
        if unrecorded:  # e.g. a Hugging Face folder as encoder.model, checksummed since audit 22 (F1)
            raise HarnessError(
                f"{result_path} holds a run on other data or parameters, or one made before the harness kept the "
                f"checksum of the folder of {', '.join(unrecorded)} (so whether its files changed since cannot be "
                "told); --overwrite fits again"
            )
        raise HarnessError(
            f"{result_path} holds a run on other data or parameters; if this is another dataset, give it a name of "
            "its own (--name), or choose another --out; --overwrite replaces that run"
        )
    logger.info("kept the existing result %s (pass --overwrite to recompute)", result_path)
    return earlier


def _refuse_a_folder_no_run_made(run_dir: Path) -> None:
    """A `checkpoint/` at the run path that no run wrote (no fit fingerprint or result beside it, no config.json of
    the harness's in it) is someone's own folder: a fit replaces checkpoint/ whole, so it would go unasked,
    --overwrite too (audit 21, F1: a user's checkpoint/ was removed and answers.jsonl replaced). answers.jsonl and
    details.jsonl alone are not taken for a user's: a run stopped between the two renames of its checkpoint's swap
    leaves them with no other sign of the run, and the rerun must go on."""
    checkpoint = run_dir / CHECKPOINT_NAME
    if not os.path.lexists(checkpoint) or (run_dir / FIT_FINGERPRINT_NAME).exists() or (run_dir / RESULT_NAME).exists():
        return
    if _written_by_the_harness(checkpoint):  # a run stopped between its checkpoint and its fingerprint
        return
    raise HarnessError(
        f"{checkpoint} was not written by a harness run (no fit fingerprint or result beside it, no checkpoint "
        "config.json in it), and a run would replace it; move it away, or choose another --out"
    )


def _written_by_the_harness(checkpoint: Path) -> bool:
    """Whether `checkpoint` holds a config.json with the keys `toolkit.checkpoint.save_checkpoint` writes (read
    here without it: the harness layer does not import the toolkit)."""
    try:
        config = json.loads((checkpoint / "config.json").read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return False
    return isinstance(config, dict) and {"format", "system", "checksums"} <= config.keys()


def _load_or_fit(
    system: Any, train: Any, run_dir: Path, fit_fingerprint: str, seed: int, overwrite: bool, timings: dict[str, float]
) -> tuple[Any, bool]:
    """The fitted system and whether it was resumed: loaded from run_dir's checkpoint where that is this fit's."""
    fingerprint_path = run_dir / FIT_FINGERPRINT_NAME
    resumable = (
        not overwrite
        and fingerprint_path.is_file()
        and fingerprint_path.read_text(encoding="utf-8").strip() == fit_fingerprint
    )
    if resumable and not os.path.lexists(run_dir / CHECKPOINT_NAME):  # removed by hand: nothing to resume from
        logger.warning("%s is gone, though its fingerprint is there: fitting again", run_dir / CHECKPOINT_NAME)
        resumable = False
    if resumable:
        loaded = load_like(system, run_dir / CHECKPOINT_NAME)  # the run-time settings given to this run
        # a checkpoint copied in from another run has this run's fingerprint beside it but not its parameters
        # (tests/systems/test_conformance.py: fitting leaves a system's params() as it was built with)
        theirs, ours = loaded.params(), system.params()
        if theirs == ours:
            logger.info("resuming from the fitted checkpoint %s", run_dir / CHECKPOINT_NAME)
            timings["fit"] = 0.0
            return loaded, True
        other = sorted(key for key in {*theirs, *ours} if theirs.get(key) != ours.get(key))
        logger.warning(
            "%s was fitted with other parameters than this run's (%s): fitting again",
            run_dir / CHECKPOINT_NAME,
            ", ".join(other),
        )
    with duration("fit", timings):
        system.fit(train, seed=seed)
    return system, False


def _evaluate(task: Any, system: Any, test: Any, work_dir: Path, timings: dict[str, float]) -> Evaluation:
    """Score the system on the test split; write its answers (PAN format) where the task gives answers."""
    with duration("evaluate", timings):
        evaluation = task.evaluate(system, test)
    if evaluation.answers:
        write_jsonl(work_dir / ANSWERS_NAME, ({"id": a.id, "value": a.value} for a in evaluation.answers))
    return evaluation


def _split_records(train: Any, test: Any) -> dict[str, Any]:
    """The `train` and `test` parts of the record's `task.data`: checksum, size, the test truth's checksum and
    corpus."""
    return {
        "train": {"checksum": train.checksum, "size": _size(train)},
        "test": {"checksum": test.checksum, **_truth_checksum(test), "size": _size(test), **_corpus(test)},
    }


def _truth_checksum(data: Any) -> dict[str, str]:
    """`{"truth_checksum": ...}` where the split has one (core.records.truth_checksum: the PAN tasks' truth), the
    test data's identity that `harness score --record` records too, so leaderboards can compare the two."""
    checksum = getattr(data, "truth_checksum", None)
    return {"truth_checksum": checksum} if isinstance(checksum, str) else {}


def _system_record(system_name: str, system: Any, work_dir: Path, inputs: dict[str, str]) -> dict[str, Any]:
    """The record's `system` section: name, class, parameters, the checksums of the folders its parameters name
    (where it reads any), and the checksum of the checkpoint in work_dir."""
    return {
        "name": system_name,
        "class": f"{type(system).__module__}:{type(system).__qualname__}",
        "params": system.params(),
        **({"inputs": inputs} if inputs else {}),
        "checkpoint": {"path": CHECKPOINT_NAME, "checksum": _checkpoint_checksum(work_dir / CHECKPOINT_NAME)},
    }


def run_lock_path(run_dir: Path) -> Path:
    """A run folder's lock file, `.seed-N.lock` beside it: inside, it would move with the folder's swap."""
    return lock_path(run_dir)


def _remove_stale_temporaries(run_dir: Path) -> None:
    """Remove the temporaries a killed run of this folder left; with the lock held, no live run owns them."""
    for set_aside in find_temporaries(run_dir.parent, [(run_dir.name, SET_ASIDE_SUFFIX)]):
        if not set_aside.is_dir() or set_aside.is_symlink():
            continue
        if not run_dir.exists():
            # killed between the two renames of a swap: the old run goes back (it lost its result.json first)
            os.replace(set_aside, run_dir)
            logger.info("restored %s without its result from %s (an interrupted --overwrite)", run_dir, set_aside)
        else:
            _carry_over(set_aside, run_dir)
    beside = [(run_dir.name, STAGED_SUFFIX), (run_dir.name, SET_ASIDE_SUFFIX)]
    removed = remove_temporaries(run_dir.parent, beside) + remove_temporaries(run_dir, OWN_TEMPORARIES)
    if removed:
        logger.info("removed what an interrupted run left: %s", ", ".join(str(path) for path in removed))


def enclosing_run_folder(path: Path, runs: Iterable[Path] = (), *, records: bool = True) -> Path | None:
    """The run folder `path` is or lies in, if any (absolute): one holding a fitted checkpoint's fingerprint, or a
    result with its details (not a result.json alone, a name other tools use too), or one of `runs`, folders known
    to hold a run (those whose results a leaderboard reads, details or not).

    With `records=False` a recorded result (`score --record`'s, which says it was recorded from a truth file) is not
    taken for a run, so a record may be replaced in place, also beside the answers file it was recorded from; a
    `harness run`'s folder still is.
    """
    path = Path(path).absolute()
    known = {Path(folder).resolve() for folder in runs}  # resolved: a run read through a link is the same run
    # the folders on the way as written and, where a link leads elsewhere, as they are on disk: an output written
    # through a link into a run's checkpoint/ would go with the next --overwrite of that run (audit 20, F1)
    resolved = path.resolve()
    ways = (path, *path.parents) + ((resolved, *resolved.parents) if resolved != path else ())
    for folder in ways:
        finished = (folder / RESULT_NAME).is_file() and (folder / DETAILS_NAME).is_file()
        if finished and not records:
            finished = not holds_a_record(folder / RESULT_NAME)
        if finished or (folder / FIT_FINGERPRINT_NAME).is_file() or (known and folder.resolve() in known):
            return folder
    return None


def holds_a_record(result_path: Path) -> bool:
    """Whether a result.json is a record of answers made elsewhere (`RunResult.test_truth_only`, which
    `harness score --record` writes), not a run's; an unreadable one counts as a run's, to be safe."""
    try:
        return read_run_result(result_path).test_truth_only
    except HarnessError:
        return False


def _carry_over(set_aside: Path, run_dir: Path) -> None:
    """Move what is not the harness's own (a user's notes, say) from a replaced run folder into the new one."""
    if not set_aside.is_dir() or not run_dir.is_dir():
        return
    temporaries = set(find_temporaries(set_aside, OWN_TEMPORARIES))
    for entry in sorted(set_aside.iterdir()):
        if entry.name not in OWN_NAMES and entry not in temporaries and not (run_dir / entry.name).exists():
            os.replace(entry, run_dir / entry.name)


def _save_fit(system: Any, folder: Path, fit_fingerprint: str) -> None:
    """Save the fitted system's checkpoint, then the fingerprint that lets a plain rerun resume from it."""
    fingerprint_path = folder / FIT_FINGERPRINT_NAME
    # the fingerprint goes before the checkpoint changes and comes back once it is whole: a crash between never
    # leaves the fingerprint of another fit beside this checkpoint, for a later run to resume from
    fingerprint_path.unlink(missing_ok=True)
    system.save(folder / CHECKPOINT_NAME)
    with atomic_write(fingerprint_path) as handle:
        handle.write(fit_fingerprint + "\n")


def _swap_in(staged: Path, run_dir: Path) -> Path | None:
    """Put a complete staged run (all but result.json) in run_dir's place; return where the old one was set aside."""
    # the old run loses its result.json first: a crash between the renames then leaves no result beside another
    # run's files, and none in a hidden folder for the leaderboard to find
    (run_dir / RESULT_NAME).unlink(missing_ok=True)
    return swap_folder(staged, run_dir)


def split_overlap(task: Any, train: Any, test: Any) -> dict[str, int]:
    """The task's counts of what train and test share (`harness.task.SplitOverlap`), with a warning if any is not 0.

    Tasks without the optional `overlap` method give {}: nothing is claimed either way.
    """
    count = getattr(task, "overlap", None)
    if count is None:
        return {}
    counts = {name: int(value) for name, value in count(train, test).items()}
    shared = {name: value for name, value in counts.items() if value}
    if shared:
        logger.warning(
            "train and test share data (%s): scores on the shared part measure memory, not the task",
            ", ".join(f"{name} = {value}" for name, value in shared.items()),
        )
    return counts


def is_main_process() -> bool:
    """False in the non-zero ranks of a torchrun launch (read from the environment, no torch import)."""
    return int(os.environ.get("RANK", "0")) == 0


def _corpus(data: Any) -> dict[str, str]:
    """`{"corpus": name}`: the folder a split was read from, links resolved (what published results name)."""
    source = getattr(data, "source", None)
    return {"corpus": Path(source).resolve().name} if isinstance(source, (str, Path)) else {}


def _size(data: Any) -> int:
    """How many problems or samples a split holds, for the record."""
    for attribute in ("problems", "samples", "episodes"):
        if hasattr(data, attribute):
            return len(getattr(data, attribute))
    return len(data)


def _checkpoint_checksum(checkpoint_dir: Path) -> str | None:
    files = [p for p in Path(checkpoint_dir).rglob("*") if p.is_file()]
    return sha256_files(files, root=checkpoint_dir) if files else None
