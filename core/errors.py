"""Errors a user can act on: each names the file, line and field at fault."""

from __future__ import annotations

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
