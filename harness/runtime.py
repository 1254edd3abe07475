"""Run-time settings: the constructor parameters that say where and how a system runs on this machine, not
what it learned; and loading a checkpoint into a system with the run-time settings it was given."""

from __future__ import annotations

import inspect
from pathlib import Path
from typing import Any

# Never read from a checkpoint (a cache_dir there would make `predict` write wherever the checkpoint says).
RUNTIME_SETTINGS = ("device", "mixed_precision", "cpu_threads", "cache_dir")


def load_like(system: Any, directory: Path) -> Any:
    """Load the checkpoint `directory` into a system of `system`'s class with `system`'s run-time settings.

    For a run that resumes from its own checkpoint: the device, cache folder, ... the user gave this run
    apply, as `runtime_params` would otherwise put the defaults in their place.
    """
    params = system.params()
    runtime = {key: params[key] for key in RUNTIME_SETTINGS if key in params}
    load = type(system).load
    if runtime and "runtime" in inspect.signature(load).parameters:
        return load(directory, runtime=runtime)
    return load(directory)
