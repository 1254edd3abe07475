"""What a refused CLI call looks like: exit code 2, one line on stderr starting "error: ", no traceback."""

from __future__ import annotations

import subprocess

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


def error_line(done: subprocess.CompletedProcess) -> str:
    """The one `error:` line a refused subprocess call ends with (exit code 2, no traceback; log lines may come
    before it)."""
    assert done.returncode == 2, done.stderr
    assert "Traceback" not in done.stderr
    errors = [line for line in done.stderr.splitlines() if line.startswith("error: ")]
    assert len(errors) == 1, done.stderr
    assert done.stderr.rstrip("\n").endswith(errors[0])
    return errors[0]
