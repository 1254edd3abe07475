"""What a refused CLI call looks like: exit code 2, one line on stderr starting "error: ", no traceback."""

from __future__ import annotations

from click.testing import CliRunner

from harness.cli import main


def refused(*args: object) -> str:
    """The one line a refused command writes to stderr (exit code 2, no traceback)."""
    result = CliRunner().invoke(main, [str(arg) for arg in args])
    assert result.exit_code == 2, (result.output, result.exception)
    assert "Traceback" not in result.stderr
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1, result.stderr
    assert lines[0].startswith("error: ")
    return lines[0]
