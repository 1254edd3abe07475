"""Errors a user can act on: each names the file, line and field at fault."""

from __future__ import annotations

import os
from pathlib import Path


class HarnessError(Exception):
    """An error the CLI reports in one line, without a traceback."""


class DataError(HarnessError):
    """Bad input data: the message says where (file, line, field) and what is wrong."""

    def __init__(
        self,
        message: str,
        *,
        path: str | Path | None = None,
        line: int | None = None,
        field: str | None = None,
    ) -> None:
        self.message = message
        self.path = str(path) if path is not None else None
        self.line = line
        self.field = field
        super().__init__(self.__str__())

    def __str__(self) -> str:
        where = self.path or "<input>"
        if self.line is not None:
            where += f":{self.line}"
        if self.field is not None:
            where += f": field '{self.field}'"
        return f"{where}: {self.message}"


class OutputError(HarnessError):
    """An output that could not be written (disk full, file too large, read-only): names the file and the OS's reason.

    The writers (core.files.atomic_write, staged_folder, toolkit.checkpoint) raise it once they have removed what
    they had begun, so the file or folder named is as it was before.
    """

    def __init__(self, path: str | Path, error: OSError) -> None:
        self.path = str(path)
        self.reason = os_reason(error)
        super().__init__(f"{self.path}: cannot be written: {self.reason}")


def os_reason(error: OSError) -> str:
    """The OS's words for an OSError ("No space left on device"), without the file name Python adds."""
    if error.strerror:
        return error.strerror
    if error.errno:
        return os.strerror(error.errno)
    return " ".join(str(error).split()) or type(error).__name__
