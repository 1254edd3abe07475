"""Provenance: inside the TIRA image a result records the image's installed packages."""

from __future__ import annotations

from pathlib import Path

import pytest
from helpers.paths import REPO

from harness import provenance


def test_outside_an_image_no_package_list_is_recorded(monkeypatch: pytest.MonkeyPatch):
    monkeypatch.delenv(provenance.IMAGE_PACKAGES_VARIABLE, raising=False)
    assert provenance.image_packages() is None
    assert "image_packages" not in provenance.environment()


def test_inside_an_image_its_pip_freeze_is_recorded(monkeypatch: pytest.MonkeyPatch, tmp_path: Path):
    freeze = tmp_path / "image-packages.txt"
    freeze.write_text("numpy==2.4.6\n\nscipy==1.17.1\n", encoding="utf-8")
    monkeypatch.setenv(provenance.IMAGE_PACKAGES_VARIABLE, str(freeze))
    assert provenance.environment()["image_packages"] == ["numpy==2.4.6", "scipy==1.17.1"]
    monkeypatch.setenv(provenance.IMAGE_PACKAGES_VARIABLE, str(tmp_path / "missing.txt"))
    assert "image_packages" not in provenance.environment()


def test_the_image_constraints_pin_every_dependency_exactly_and_leave_torch_to_the_base():
    lines = (REPO / "tira" / "image-constraints.txt").read_text().splitlines()
    pins = [line for line in lines if line and not line.startswith("#")]
    assert pins and all("==" in pin and " @ " not in pin for pin in pins)
    names = {pin.split("==")[0].lower().replace("_", "-") for pin in pins}
    assert "torch" not in names and "authorship-harness" not in names
    assert {"numpy", "scipy", "scikit-learn", "transformers", "filelock"} <= names
