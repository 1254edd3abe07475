"""toolkit.devices: a preset sized for a GPU says so before it trains on a CPU, and only then."""

from __future__ import annotations

import logging

import pytest

from toolkit.devices import warn_if_gpu_sized


@pytest.mark.parametrize(
    ("preset", "device", "warned"),
    [("paper", "cpu", True), ("gpu", "cpu", True), ("cpu", "cpu", False), ("paper", "cuda", False),
     ("paper", "cuda:1", False)],
)  # fmt: skip
def test_a_gpu_sized_preset_on_the_cpu_is_announced(
    preset: str, device: str, warned: bool, caplog: pytest.LogCaptureFixture
):
    with caplog.at_level(logging.WARNING, logger="harness"):
        warn_if_gpu_sized("nbcsauthor", preset, device)
    said = [record.getMessage() for record in caplog.records]
    assert bool(said) == warned
    if warned:
        assert said[0].startswith(f"nbcsauthor: preset {preset!r} is sized for a GPU") and "hours" in said[0]
