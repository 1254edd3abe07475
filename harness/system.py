"""What a system is: something that fits on a training split and answers problems."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any, Protocol

from core.records import Answer, VerificationData, VerificationProblem
from harness.params import describe


class VerificationSystem(Protocol):
    """A verification system, as the runner and TIRA's `harness predict` call it."""

    name: str

    def fit(self, train: VerificationData, *, seed: int) -> None:
        """Train or calibrate on a split with truth; a no-op for untrained systems."""
        ...

    def predict(self, problems: Sequence[VerificationProblem]) -> list[Answer]:
        """One answer per problem, in order; 0.5 exactly for "no answer"."""
        ...

    def params(self) -> dict[str, Any]:
        """The constructor parameters, recorded in every result file."""
        ...

    def save(self, directory: Path) -> None:
        """Write a checkpoint folder that `load` reads back to give the same answers."""
        ...

    @classmethod
    def load(cls, directory: Path) -> VerificationSystem:
        """Read a checkpoint folder written by `save`."""
        ...


def input_checksums(system: object) -> dict[str, str]:
    """Checksums of the folders a system's parameters name and its fit reads (`model=DIR`), by parameter: a run's
    fingerprint holds them, so a folder whose files changed is fitted again, never answered by the old fit. A system
    declares them with an `input_checksums()` method; most read nothing but their training split."""
    declared = getattr(system, "input_checksums", None)
    return dict(declared()) if callable(declared) else {}


def constructor_params(system: object) -> dict[str, Any]:
    """A system's constructor parameters, read back from the attributes of the same names.

    Systems store each constructor parameter under its own name, so `params()` (recorded in
    every result file) never drifts from the signature; parts come out as nested dicts
    (harness.params).
    """
    return describe(system)


class EmbeddingSystem(Protocol):
    """A retrieval or linking system: it fits on a training split and embeds samples."""

    name: str

    def fit(self, train: Any, *, seed: int) -> None: ...

    def embed(self, samples: Sequence[Any]) -> Any:
        """One embedding row per sample (a numpy array, n x dim)."""
        ...

    def params(self) -> dict[str, Any]: ...

    def save(self, directory: Path) -> None: ...

    @classmethod
    def load(cls, directory: Path) -> EmbeddingSystem: ...
