"""The siamese tests' tiny random encoder (tests/helpers/tiny_encoder.py), made once per test module."""

from __future__ import annotations

from pathlib import Path

import pytest
from helpers.tiny_encoder import make_tiny_encoder


@pytest.fixture(scope="module")
def encoder(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return make_tiny_encoder(tmp_path_factory.mktemp("encoder"))
