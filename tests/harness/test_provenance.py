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


def test_the_device_recorded_is_the_one_the_run_computed_on_not_the_machines_gpu(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
):
    """Was (audit 22, F3): `cuda:<name>` whenever torch saw a GPU, in runs made with device=cpu and in scikit-learn
    runs alike. Here torch is made to see a GPU it cannot use."""
    torch = pytest.importorskip("torch")
    from helpers.paths import SAMPLE

    from harness.runner import run
    from toolkit.devices import resolve_device

    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
    monkeypatch.setattr(torch.cuda, "get_device_name", lambda index=0: f"FAKE-GPU-{index}")
    monkeypatch.setattr(torch.cuda, "current_device", lambda: 0)
    provenance.forget_devices()
    assert resolve_device("cpu") == "cpu" and provenance.device_description().startswith("cpu:")
    assert resolve_device("cuda:1") == "cuda:1" and provenance.device_description() == "cuda:FAKE-GPU-1"
    assert resolve_device("auto") == "cuda"
    # a task's own search that picks the GPU by itself (reddit, darkweb ranking) is noted as well
    from toolkit.nearest import GPU_MIN_PAIRS, _choose

    provenance.forget_devices()
    assert _choose("auto", "auto", GPU_MIN_PAIRS, 1, top_k=False) == ("torch", "cuda")
    assert provenance.device_description() == "cuda:FAKE-GPU-0"
    # the next run resolves no device (length_ratio): the GPU noted above is not its own
    done = run(system_name="length_ratio", task_name="pan23", data=SAMPLE, out_dir=tmp_path / "runs")
    assert done.result["environment"]["device"].startswith("cpu:")
