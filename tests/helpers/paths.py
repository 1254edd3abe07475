"""Where the tests find the repository, wherever a test file sits under tests/."""

from __future__ import annotations

import os
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
TESTS = REPO / "tests"
FIXTURES = TESTS / "fixtures"
SAMPLE = REPO / "samples" / "pan23-format-sample"  # the PAN 2023 format sample the project wrote
# the real data, read-only (tests skip only where it is absent)
SHARED_DATA = Path(os.environ.get("HARNESS_SHARED_DATA", REPO.parent / "shared" / "data"))
