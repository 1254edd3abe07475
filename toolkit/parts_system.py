"""The shell of a trained system built from parts whose defaults a named preset gives.

A system declares `PRESETS` (a preset's name -> its parts, one attribute per part slot) and
`PART_CHOICES` (a slot -> the part classes it takes). Its constructor takes `_preset(name)` and, slot by
slot, `_part(slot, given, default)`: the preset's part where none is given, else one made from a part, a
name or fields over the preset's (harness.params.build_part), of one of the slot's classes. The base owns
what such systems do alike around their own work: `params()` (the constructor's parameters, parts as
nested dicts, as a result file records them), `fit` (the system's `_fit` under its `cpu_threads`),
`_save` and `_read` (a checkpoint of the system's parameters, state and arrays; read back with this
machine's run-time settings and the system's `LEGACY_PARAMS` upgrade of older formats, if it has one).
A constructor whose slots all default to the preset's parts hands them to `_take_parts` in one call.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any, ClassVar, TypeVar

import numpy as np

from core.errors import HarnessError
from harness.params import build, build_part
from harness.system import constructor_params
from toolkit.checkpoint import CONFIG_NAME, load_checkpoint, runtime_params, save_checkpoint
from toolkit.legacy import LegacyParams
from toolkit.memory import torch_threads

_System = TypeVar("_System", bound="PartsSystem")


class PartsSystem:
    """Preset, parts, parameters, fit under a thread count, and checkpoints (see the module docstring)."""

    name: ClassVar[str]
    PRESETS: ClassVar[Mapping[str, Any]]
    PART_CHOICES: ClassVar[Mapping[str, tuple[type, ...]]]
    LEGACY_PARAMS: ClassVar[LegacyParams | None] = None
    cpu_threads: int | None = None  # torch's CPU threads while fitting (None: torch's default)

    def _preset(self, preset: str) -> Any:
        """The parts of the preset named `preset` (recorded as `self.preset`); an unknown name is refused."""
        if preset not in self.PRESETS:
            raise HarnessError(f"{self.name}: preset must be one of {', '.join(self.PRESETS)}, not {preset!r}")
        self.preset = preset
        return self.PRESETS[preset]

    def _part(self, slot: str, given: Any, default: Any) -> Any:
        """The part for `slot`: `default`, or a part, name or fields given (fields over the default's values)."""
        if given is None:
            return default
        kinds = self.PART_CHOICES[slot]
        part = build_part(default, given, choices=kinds, where=f"{self.name}: {slot}")
        if not isinstance(part, kinds):
            raise HarnessError(
                f"{self.name}: {slot} must be a {' or '.join(kind.__name__ for kind in kinds)}, not {given!r}"
            )
        return part

    def _take_parts(self, preset: str, cpu_threads: int | None, **given: Any) -> None:
        """Check and keep `preset` and `cpu_threads`, then set each slot in `given` to its `_part` (None: preset's)."""
        chosen = self._preset(preset)
        self.cpu_threads = self._check_cpu_threads(cpu_threads)
        for slot, part in given.items():
            setattr(self, slot, self._part(slot, part, getattr(chosen, slot)))

    def _check_cpu_threads(self, cpu_threads: int | None) -> int | None:
        """`cpu_threads` if it is a positive integer or None; anything else is refused."""
        if cpu_threads is not None and (not isinstance(cpu_threads, int) or cpu_threads < 1):
            raise HarnessError(f"{self.name}: cpu_threads must be a positive integer or None, got {cpu_threads!r}")
        return cpu_threads

    def params(self) -> dict[str, Any]:
        """The constructor parameters, parts as nested dicts (the preset's values written out)."""
        return constructor_params(self)

    def fit(self, train: Any, *, seed: int) -> None:
        """Train on the training split (the system's `_fit`), with torch's CPU threads set to `cpu_threads`."""
        with torch_threads(self.cpu_threads):
            self._fit(train, seed=seed)

    def _fit(self, train: Any, *, seed: int) -> None:
        raise NotImplementedError

    def _save(self, directory: Path, *, state: dict[str, Any], arrays: dict[str, np.ndarray]) -> None:
        """Write a checkpoint of this system's parameters, `state` (JSON) and `arrays`."""
        save_checkpoint(Path(directory), system=self.name, params=self.params(), state=state, arrays=arrays)

    @classmethod
    def _read(
        cls: type[_System], directory: Path, runtime: Mapping[str, Any] | None
    ) -> tuple[_System, dict[str, Any], dict[str, np.ndarray]]:
        """(the system a checkpoint's parameters make, its state, its arrays); the parameters of an older
        format upgraded (`LEGACY_PARAMS`), device and other run-time settings this machine's (`runtime`)."""
        params, state, arrays = load_checkpoint(directory, system=cls.name)
        if cls.LEGACY_PARAMS is not None:
            params = cls.LEGACY_PARAMS.upgrade(params)
        params = runtime_params(params, runtime, where=Path(directory) / CONFIG_NAME)
        return build(cls, params, label=f"{directory}: {cls.name} checkpoint"), state, arrays
