"""A CLI call that must succeed, in-process: its output (exit code 0 asserted, the output shown where it is not)."""

from __future__ import annotations

from click.testing import CliRunner

from harness.cli import main


def invoke(*args: object) -> str:
    result = CliRunner().invoke(main, [str(a) for a in args], catch_exceptions=False)
    assert result.exit_code == 0, result.output
    return result.output
