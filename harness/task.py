"""What a task is: declared, validated metadata, loading its data and evaluating a system on it."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, ClassVar, NamedTuple, Protocol, runtime_checkable

from core.records import Answer
from harness.metrics.table import is_known

# The kind of task, by what its main score judges: answers to verification problems, rankings of candidates
# (retrieval) or same-author scores of trials (linking); recorded in result.json as `task.kind`. Not the kind of
# data a task gives its systems, which the registry declares (`harness.registry.DATA_KINDS`).
TASK_KINDS = ("verification", "retrieval", "linking")


@dataclass(frozen=True)
class TaskMetadata:
    """Declared facts about a task; checked when the class is defined, not at run time."""

    name: str
    version: str  # bump when data handling or scoring changes: leaderboards refuse to mix versions
    kind: str  # one of TASK_KINDS
    description: str
    main_score: str
    measures: tuple[str, ...]
    splits: tuple[str, ...] = ("train", "test")
    evaluator: str | None = None  # PAN evaluator profile, for verification tasks
    citation: str = ""
    extra: dict[str, Any] = field(default_factory=dict)
    # task parameters worth a figure of the main score against them (e.g. episode length), drawn by
    # `harness plot`/`report` when runs vary them
    plot_parameters: tuple[str, ...] = ()
    # published results to show beside runs as reference rows (never ranked): "package:file.csv" with columns
    # task, corpus (a glob over the test corpus folder name a run records), system, measures..., source
    published: str = ""
    # rows of a run's printed score table that a name alone does not explain (`migrant_heldout`): row -> what it
    # scores; `harness list NAME` prints them
    scopes: dict[str, str] = field(default_factory=dict)
    # ranking tasks: the details rows (field -> value) whose first-match ranks the headline R@k pools, for
    # `harness plot`'s R@k curves; empty: every row that has a rank
    ranking_rows: dict[str, str] = field(default_factory=dict)
    # what a leaderboard table of the task's runs says under it about what its figures count (audit 14: how many
    # queries a pooled MRR leaves out, how EER is averaged), formatted with the lowest-seed run of the table's
    # first row: its scores, task parameters and measure settings, by name ("?" where a result lacks one)
    table_note: str = ""
    # what a ROC or DET figure of the task's runs shows where that is not the table's main score (reddit: the pooled
    # linking set, where the table's EER is the subreddits' mean), filled as `table_note` is (audit 15)
    curve_note: str = ""

    def __post_init__(self) -> None:
        if self.kind not in TASK_KINDS:
            raise ValueError(f"task {self.name}: kind must be one of {TASK_KINDS}, not {self.kind!r}")
        if self.main_score not in self.measures:
            raise ValueError(f"task {self.name}: main score {self.main_score!r} is not among its measures")
        unknown = [m for m in self.measures if not is_known(m)]
        if unknown:
            raise ValueError(f"task {self.name}: measures {unknown} are not in the measure table (harness.metrics)")
        if "lower_is_better" in self.extra:
            raise ValueError(f"task {self.name}: a measure's direction comes from the measure table, not from extra")
        if not self.version:
            raise ValueError(f"task {self.name}: a version is required")


class Evaluation(NamedTuple):
    """What evaluating a system on a split gives: scores, one row per scored item, plot data, answers."""

    scores: dict[str, float]
    # one row per problem or query (e.g. its id, answer and label, or its first-match rank):
    # what confidence intervals and significance tests resample
    details: list[dict[str, Any]]
    curves: dict[str, Any] = {}  # the numbers behind plots (ROC/DET points, EER against sample size)
    settings: dict[str, Any] = {}  # parameters of the measures (e.g. minDCF's p_target, c_miss, c_fa)
    # the system's answers, one per problem, where the task has answers (verification): the runner
    # writes them as answers.jsonl, the file TIRA and PAN's evaluator read
    answers: tuple[Answer, ...] = ()
    # what a reader of these scores must know to read them right (e.g. why two rows are equal): printed under the
    # run's table and kept in result.json
    notes: tuple[str, ...] = ()


class Task(Protocol):
    """A task adapter: reads a dataset's splits into records and evaluates a system on one of them.

    Every kind has this one shape: verification tasks ask the system for answers and score them,
    retrieval and linking tasks ask it for embeddings and rank or link them.
    """

    metadata: ClassVar[TaskMetadata]

    def load(self, data_dir: Path, split: str) -> Any:
        """Read one split (with its truth) from a dataset folder."""
        ...

    def evaluate(self, system: Any, data: Any) -> Evaluation:
        """Run the system on a loaded split and score it with the task's official measures."""
        ...

    # Optional (see `SplitOverlap`): `overlap(train, test) -> dict[str, int]`, counts of what the two
    # loaded splits share (e.g. texts); `harness run` records them and warns when one is not zero.
    # Optional (see `SplitCheck`): `check_splits(train, test) -> None`, refusing splits it cannot score.


@runtime_checkable
class SplitOverlap(Protocol):
    """An optional method of a `Task`: what a train and a test split share, counted the task's way.

    `harness run` calls it when the task has it, records the counts in `result.json` under
    `task.data` (e.g. `task.data.shared_texts`) and logs a warning when any count is not zero: a test
    problem whose text the system saw in training measures memory, not authorship.
    """

    def overlap(self, train: Any, test: Any) -> dict[str, int]:
        """Counts named by what they count (e.g. `shared_texts`); zero everywhere means no overlap."""
        ...


@runtime_checkable
class SplitCheck(Protocol):
    """An optional method of a `Task`: refuse loaded splits it cannot score, before any system is fitted.

    `harness run` calls it right after loading both splits (and warnings it logs appear there too): a fit can take
    hours, and a test split without anything to score, found only by `evaluate`, wastes them.
    """

    def check_splits(self, train: Any, test: Any) -> None:
        """A DataError (one line naming the split's source) where the splits cannot give a score; else None."""
        ...


@runtime_checkable
class SplitFolders(Protocol):
    """An optional method of a `Task` whose splits are folders of their own (the PAN tasks).

    Such a task can be given each split's folder as it was distributed (`harness run --train DIR --test DIR`)
    instead of one folder holding `train/` and `test/`; `load(data_dir, split)` reads `data_dir/split` with it.
    """

    def load_split(self, folder: Path, split: str) -> Any:
        """Read one split (with its truth) from its own folder; `split` says which, for messages."""
        ...


@runtime_checkable
class PanAnswers(Protocol):
    """A capability beside `Task`: answers as PAN answer files, the way TIRA runs and PAN scores them.

    `harness predict` (answer problems given without truth) and `harness score` (the official evaluator
    on an answers file, optionally recorded for the leaderboard) work with the tasks that have it.
    """

    def load_inputs(self, input_dir: Path) -> Any:
        """Read problems only, no truth: what TIRA gives a system."""
        ...

    def answer(self, system: Any, data: Any) -> list[Answer]:
        """One answer per problem of `load_inputs`' data, in order, whatever the texts look like."""
        ...

    def read_truth(self, path: Path) -> Mapping[str, Any]:
        """Truth by problem id, from a truth file or a folder holding one."""
        ...

    def answers_file(self, folder: Path) -> Path:
        """The answers file in a submission's folder, as the task's answer files are named."""
        ...

    def read_answers(self, path: Path) -> dict[str, float]:
        """Answer values by problem id, from a PAN answers file."""
        ...

    def score_truth(
        self,
        answers: Mapping[str, float],
        truth: Mapping[str, Any],
        *,
        profile: str | None = None,
        answers_path: Path | None = None,
    ) -> dict[str, float]:
        """Score answers against truth; `profile` names another evaluator profile than the task's."""
        ...

    def problems_beside_truth(self, truth_path: Path, truth: Mapping[str, Any]) -> Sequence[Any] | None:
        """The problems of the split folder the truth lies in (their discourse types), or None."""
        ...

    def type_pair_scores(
        self, answers: Mapping[str, float], truth: Mapping[str, Any], problems: Sequence[Any]
    ) -> dict[str, float]:
        """The task's measures on each discourse-type pair's problems apart (`<pair>/<measure>`)."""
        ...

    def write_scores(self, scores: Mapping[str, float], output_dir: Path, *, overwrite: bool = False) -> list[Path]:
        """Write the evaluator's output files (refusing to replace them unless `overwrite`)."""
        ...

    def record_answers(
        self,
        truth_path: Path,
        truth: Mapping[str, Any],
        answers: Mapping[str, float],
        scores: dict[str, float],
        *,
        system_name: str,
        record_dir: Path,
        answers_path: Path,
        overwrite: bool = False,
        problems: Sequence[Any] | None = None,
    ) -> dict[str, Any]:
        """Write a result (result.json + details.jsonl) for answers made elsewhere, for the leaderboard; an existing
        one is refused unless `overwrite`; `problems` name each details row's discourse-type pair."""
        ...
