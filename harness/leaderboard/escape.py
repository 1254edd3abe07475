"""Text from results (system and task names, parameter values, discourse types, measures) made safe per format.

A name is data: written into a table it must stay one cell of text, never become markup, a formula or a
command. Numbers are never passed through here: they stay numbers. HTML is escaped with `html.escape`.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from typing import Any

# | would end the cell; < > as entities: no tag, no autolink; [ ] no link or image. * _ ` stay: emphasis
# breaks nothing, and `length_ratio` stays readable in the file
_MARKDOWN = str.maketrans({"\\": "\\\\", "|": "\\|", "[": "\\[", "]": "\\]", "<": "&lt;", ">": "&gt;"})

# < > | too: the default font encoding prints them as ¡ ¿ —
_LATEX = str.maketrans({"\\": r"\textbackslash{}", "&": r"\&", "%": r"\%", "$": r"\$", "#": r"\#", "_": r"\_",
          "{": r"\{", "}": r"\}", "~": r"\textasciitilde{}", "^": r"\textasciicircum{}",
          "<": r"\textless{}", ">": r"\textgreater{}", "|": r"\textbar{}"})  # fmt: skip

# a spreadsheet runs a cell starting with one of these as a formula (OWASP "CSV injection")
_FORMULA_STARTS = ("=", "+", "-", "@", "\t", "\r")


def one_line(text: Any) -> str:
    """The text with every run of whitespace (newlines, tabs) as one space: a row or a heading stays one line."""
    return " ".join(str(text).split())


def markdown(text: Any) -> str:
    """Text for a Markdown table cell, heading or note line: one line, no cell break, tag, link or heading."""
    text = one_line(text).translate(_MARKDOWN)
    return "\\" + text if text.startswith("#") else text


def markdown_code(text: Any) -> str:
    """Text as a Markdown code span, on one line, fenced by more backticks than it holds in a row."""
    text = one_line(text)
    fence = "`" * (max(map(len, re.findall("`+", text)), default=0) + 1)
    return f"{fence} {text} {fence}" if "`" in text else f"`{text}`"


def latex(text: Any) -> str:
    """Text for LaTeX (a cell, caption or note): every special character printed as itself, on one line."""
    return one_line(text).translate(_LATEX)


def csv_cell(value: Any) -> Any:
    """A text cell that a spreadsheet would take for a formula, behind a single quote; anything else as it is."""
    if isinstance(value, str) and value.startswith(_FORMULA_STARTS):
        return "'" + value
    return value


def csv_row(values: Iterable[Any]) -> list[Any]:
    """A row for `csv.writer`: text cells through `csv_cell`; numbers stay numbers, so -0.5 is never quoted."""
    return [csv_cell(value) for value in values]
