"""What a task is: declared, validated metadata plus loading and scoring of its data."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, ClassVar, NamedTuple, Protocol

from harness.records import Answer

TASK_KINDS = ("verification", "retrieval", "linking")


@dataclass(frozen=True)
class TaskMetadata:
    """Declared facts about a task; checked when the class is defined, not at run time."""

    name: str
    version: str  # bump when data handling or scoring changes: leaderboards refuse to mix versions
    kind: str
    description: str
    main_score: str
    measures: tuple[str, ...]
    splits: tuple[str, ...] = ("train", "test")
    evaluator: str | None = None  # PAN evaluator profile, for verification tasks
    citation: str = ""
    extra: dict[str, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        if self.kind not in TASK_KINDS:
            raise ValueError(f"task {self.name}: kind must be one of {TASK_KINDS}, not {self.kind!r}")
        if self.main_score not in self.measures:
            raise ValueError(f"task {self.name}: main score {self.main_score!r} is not among its measures")
        if not self.version:
            raise ValueError(f"task {self.name}: a version is required")


class Task(Protocol):
    """A task adapter: reads a dataset's files into records and scores answers against truth."""

    metadata: ClassVar[TaskMetadata]

    def load(self, data_dir: Path, split: str) -> Any:
        """Read one split (with its truth) from a dataset folder."""
        ...

    def load_inputs(self, input_dir: Path) -> Any:
        """Read problems only, no truth: what TIRA gives a system."""
        ...

    def score(self, answers: Sequence[Answer], data: Any) -> dict[str, float]:
        """Score answers against the split's truth with the task's official measures."""
        ...


class Evaluation(NamedTuple):
    """What scoring a system on a split gives: scores, one row per scored item, and plot data."""

    scores: dict[str, float]
    # one row per problem or query (e.g. its id, answer and label, or its first-match rank):
    # what confidence intervals and significance tests resample
    details: list[dict[str, Any]]
    curves: dict[str, Any] = {}  # the numbers behind plots (ROC/DET points, EER against sample size)
    settings: dict[str, Any] = {}  # parameters of the measures (e.g. minDCF's p_target, c_miss, c_fa)


class EmbeddingTask(Protocol):
    """A retrieval or linking task: it embeds its samples with the system and ranks or links them."""

    metadata: ClassVar[TaskMetadata]

    def load(self, data_dir: Path, split: str) -> Any: ...

    def evaluate(self, system: Any, data: Any) -> Evaluation: ...
