"""Names from results stay text in every output format: Markdown, CSV, LaTeX and HTML (issue: outputs not escaped).

The runs are real, made by the CLI in fresh processes: `harness score --record --system-name` on the pan23 format
sample gives systems hostile names; `harness run` on a copy of the sample whose discourse types are hostile gives
hostile type-pair names; a recorded run copied with a hostile task name and task parameter gives hostile tables.
"""

from __future__ import annotations

import csv
import io
import json
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from helpers.paths import REPO, SAMPLE

from harness.leaderboard import escape

MARKUP = "<script>alert(1)</script>|a\n# H"  # a tag, a cell break and a heading, in one system name
FORMULA = '=HYPERLINK("http://x","y")'
SPECIALS = "50% & $x^2_y$ #1 {~} \\end{table}"  # every LaTeX special
FORMULA_TYPE = "=1+2"  # discourse types: the pair "=1+2+zz" starts a formula, the other breaks the table
MARKUP_TYPE = "<b>x</b>|y\n\n# T"
HOSTILE_TASK = "pan<i>x</i>|t\n\n# T"
HOSTILE_PARAM = "<u>v</u>|p\n# P"

FORMULA_STARTS = ("=", "+", "-", "@", "\t", "\r")
TEXT_COLUMNS = ("task", "version", "system", "measure", "published")
NUMBER_COLUMNS = ("runs", "mean", "std", "ci_low", "ci_high", "p_vs_best")


def harness(*args: object) -> str:
    """`harness ARGS` in a fresh process, as a user runs it; it must succeed without a traceback."""
    command = [sys.executable, "-m", "harness.cli", *map(str, args)]
    done = subprocess.run(command, cwd=REPO, capture_output=True, text=True, encoding="utf-8", timeout=300)
    assert done.returncode == 0 and "Traceback" not in done.stderr, done.stderr
    return done.stdout


def write_answers(path: Path, shift: float) -> Path:
    ids = [json.loads(line)["id"] for line in (SAMPLE / "test" / "truth.jsonl").read_text().splitlines()]
    path.write_text("".join(json.dumps({"id": i, "value": round((0.13 * k + shift) % 1, 3)}) + "\n"
                            for k, i in enumerate(ids)), encoding="utf-8")  # fmt: skip
    return path


@pytest.fixture(scope="module")
def recorded(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Three recorded runs of the pan23 sample, one per hostile system name."""
    root = tmp_path_factory.mktemp("escaping-recorded")
    for k, name in enumerate((MARKUP, FORMULA, SPECIALS)):
        answers = write_answers(root / f"answers-{k}.jsonl", 0.3 * k)
        harness("score", "--task", "pan23", "--truth", SAMPLE / "test" / "truth.jsonl", "--answers", answers,
                "--record", root / "runs" / f"system-{k}", "--system-name", name)  # fmt: skip
    return root / "runs"


@pytest.fixture(scope="module")
def typed(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A run of length_ratio on a copy of the sample whose discourse types are hostile: a type-pair breakdown."""
    root = tmp_path_factory.mktemp("escaping-typed")
    shutil.copytree(SAMPLE, root / "data")
    pairs = root / "data" / "test" / "pairs.jsonl"
    problems = [json.loads(line) for line in pairs.read_text(encoding="utf-8").splitlines()]
    kinds = [[FORMULA_TYPE, "zz"], [MARKUP_TYPE, "essay"], ["email", "essay"], ["email", "essay"]]
    for k, problem in enumerate(problems):
        problem["discourse_types"] = kinds[k % 4]
    pairs.write_text("".join(json.dumps(problem) + "\n" for problem in problems), encoding="utf-8")
    harness("run", "--system", "length_ratio", "--task", "pan23", "--data", root / "data", "--out", root / "runs")
    return root / "runs"


@pytest.fixture(scope="module")
def renamed(recorded: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A recorded run twice under a hostile task name, once with a hostile task parameter: two tables."""
    root = tmp_path_factory.mktemp("escaping-renamed")
    for folder, value in (("a", HOSTILE_PARAM), ("b", "1")):
        shutil.copytree(recorded / "system-1", root / folder)
        result = json.loads((root / folder / "result.json").read_text(encoding="utf-8"))
        result["task"]["name"], result["task"]["params"] = HOSTILE_TASK, {"k": value}
        (root / folder / "result.json").write_text(json.dumps(result), encoding="utf-8")
    return root


def render(runs: Path, fmt: str, out: Path) -> str:
    harness("leaderboard", runs, "--format", fmt, "--output", out)
    return out.read_text(encoding="utf-8")


def unescaped(line: str, char: str) -> int:
    """How often `char` occurs in a line not escaped by a backslash."""
    return re.sub(r"\\.", "", line).count(char)


def check_markdown(text: str, rows: int) -> None:
    """Every table has its rows, each row one line with the header's cells; no tag, no heading from a name."""
    assert not re.search(r"<(script|b|i|u)>", text)
    lines = text.splitlines()
    assert not [line for line in lines if line.startswith(("# H", "# T", "# P"))]
    blocks = re.findall(r"(?m)(?:^\|.*\n)+", text)
    assert blocks
    for block in blocks:
        table = block.splitlines()
        assert len(table) == 2 + rows, block
        assert {unescaped(line, "|") for line in table} == {unescaped(table[0], "|")}, block
    for heading in (line for line in lines if line.startswith("#")):
        assert re.match(r"#+ ", heading), heading


def check_csv(text: str) -> list[dict[str, str]]:
    """No text cell starts a formula; number cells are plain numbers."""
    rows = list(csv.DictReader(io.StringIO(text)))
    assert rows
    for row in rows:
        assert not [column for column in TEXT_COLUMNS if row[column].startswith(FORMULA_STARTS)], row
        for column in NUMBER_COLUMNS:
            if row[column]:
                float(row[column])
    return rows


def check_latex(text: str, rows: int) -> None:
    """Each tabular row is one line with the header's cells; no raw < > | (the default font prints ¡ ¿ —)."""
    lines = text.splitlines()
    starts = [k for k, line in enumerate(lines) if line == "\\midrule"]
    assert starts
    for start in starts:
        end = lines.index("\\bottomrule", start)
        header, body = lines[start - 1], lines[start + 1 : end]
        assert len(body) == rows, body
        assert all(line.endswith(" \\\\") and unescaped(line, "&") == unescaped(header, "&") for line in body), body
        assert not re.search("[<>|]", "".join([header, *body]))
    captions = [line for line in lines if line.startswith("\\caption{")]
    assert captions and all(line.endswith("}") for line in captions)


def test_markdown_leaderboard_keeps_its_table(recorded: Path, typed: Path, renamed: Path, tmp_path: Path) -> None:
    check_markdown(render(recorded, "markdown", tmp_path / "recorded.md"), rows=3)
    typed_md = render(typed, "markdown", tmp_path / "typed.md")
    check_markdown(typed_md, rows=1)
    check_markdown(render(renamed, "markdown", tmp_path / "renamed.md"), rows=1)
    assert "| &lt;script&gt;alert(1)&lt;/script&gt;\\|a # H | 1 |" in (tmp_path / "recorded.md").read_text()
    assert "| &lt;b&gt;x&lt;/b&gt;\\|y # T+essay (n=2) |" in typed_md


def test_csv_cells_never_start_a_formula(recorded: Path, typed: Path, renamed: Path, tmp_path: Path) -> None:
    systems = {row["system"] for row in check_csv(render(recorded, "csv", tmp_path / "recorded.csv"))}
    assert systems == {MARKUP, "'" + FORMULA, SPECIALS}  # quoted by csv, newline and all; only a formula prefixed
    measures = {row["measure"] for row in check_csv(render(typed, "csv", tmp_path / "typed.csv"))}
    assert f"'{FORMULA_TYPE}+zz/overall" in measures and f"{MARKUP_TYPE}+essay/overall" in measures
    check_csv(render(renamed, "csv", tmp_path / "renamed.csv"))


def test_csv_prefixes_text_cells_only() -> None:
    assert escape.csv_row(["=1", "+1", "-x", "@x", "\tx", "\rx", "x=1", -0.5, -3, None, "-0.5"]) == [
        "'=1", "'+1", "'-x", "'@x", "'\tx", "'\rx", "x=1", -0.5, -3, None, "'-0.5"
    ]  # fmt: skip


def test_latex_rows_stay_rows(recorded: Path, typed: Path, renamed: Path, tmp_path: Path) -> None:
    latex = render(recorded, "latex", tmp_path / "recorded.tex")
    check_latex(latex, rows=3)
    assert r"\textless{}script\textgreater{}alert(1)\textless{}/script\textgreater{}\textbar{}a \# H" in latex
    assert r"50\% \& \$x\textasciicircum{}2\_y\$ \#1 \{\textasciitilde{}\} \textbackslash{}end\{table\}" in latex
    check_latex(render(typed, "latex", tmp_path / "typed.tex"), rows=1)
    check_latex(render(renamed, "latex", tmp_path / "renamed.tex"), rows=1)


def test_latex_with_hostile_names_compiles(recorded: Path, typed: Path, renamed: Path, tmp_path: Path) -> None:
    if shutil.which("pdflatex") is None:
        pytest.skip("pdflatex not installed (.ci/run installs it from Debian)")
    sources = enumerate((recorded, typed, renamed))
    tables = "\n".join(render(runs, "latex", tmp_path / f"{k}.tex") for k, runs in sources)
    document = "\\documentclass{article}\\usepackage{booktabs}\\begin{document}\n" + tables + "\\end{document}\n"
    (tmp_path / "table.tex").write_text(document, encoding="utf-8")
    command = ["pdflatex", "-interaction=nonstopmode", "-halt-on-error", "table.tex"]
    run = subprocess.run(command, cwd=tmp_path, capture_output=True, text=True, timeout=120)
    assert run.returncode == 0, run.stdout[-2000:]


def test_report_writes_every_name_as_text(recorded: Path, tmp_path: Path) -> None:
    report = tmp_path / "report"
    harness("report", "--results", recorded, "--out", report, "--resamples", 10)
    for markdown in (report / "index.md", report / "tables" / "leaderboard.md"):
        check_markdown(markdown.read_text(encoding="utf-8"), rows=3)
    check_latex((report / "tables" / "leaderboard.tex").read_text(encoding="utf-8"), rows=3)
    check_csv((report / "tables" / "leaderboard.csv").read_text(encoding="utf-8"))
    roc = (report / "plots" / "roc-pan23-pan23-format-sample.csv").read_text(encoding="utf-8")
    curves = list(csv.DictReader(io.StringIO(roc)))
    assert {row["system"] for row in curves} == {MARKUP, "'" + FORMULA, SPECIALS}
    html = (report / "index.html").read_text(encoding="utf-8")
    assert "<script" not in html and "&lt;script&gt;alert(1)&lt;/script&gt;|a\n# H" in html


def test_markdown_escapes() -> None:
    assert escape.markdown(" # a\\b|c\n[d](e) <f> ") == "\\# a\\\\b\\|c \\[d\\](e) &lt;f&gt;"
    assert escape.markdown_code("a`b\nc") == "`` a`b c ``" and escape.markdown_code("p/q") == "`p/q`"


def test_plots_draw_names_as_text(tmp_path: Path) -> None:
    """A name that is not valid mathtext ("$\\frac$") used to stop `harness plot` with matplotlib's ValueError, and a
    name starting with "_" was left out of the legend: both are drawn as the text they are."""
    names = ("a $\\frac$ b", "_hidden")
    for k, name in enumerate(names):
        answers = write_answers(tmp_path / f"answers-{k}.jsonl", 0.3 * k)
        harness("score", "--task", "pan23", "--truth", SAMPLE / "test" / "truth.jsonl", "--answers", answers,
                "--record", tmp_path / "runs" / f"system-{k}", "--system-name", name)  # fmt: skip
    harness("plot", tmp_path / "runs", "--out", tmp_path / "figures")
    roc = (tmp_path / "figures" / "roc-pan23-pan23-format-sample.csv").read_text(encoding="utf-8")
    assert all(name in roc for name in names)
    from harness.plotting import legend_label

    assert legend_label("_hidden") == "\u200b_hidden" and legend_label("a_b") == "a_b"


def test_summary_keeps_names_as_text(recorded: Path, renamed: Path, tmp_path: Path) -> None:
    """The summary table (systems x datasets) escapes as the leaderboard does, and its LaTeX compiles."""
    latex = []
    for runs, rows in ((recorded, 3), (renamed, 1)):  # renamed: two settings of a hostile task, two summaries
        options = ("leaderboard", runs, "--summary", "--include-format-samples", "--format")
        check_markdown(harness(*options, "markdown"), rows=rows)
        latex.append(harness(*options, "latex"))
        check_latex(latex[-1], rows=rows)
        for row in csv.DictReader(io.StringIO(harness(*options, "csv"))):
            assert not [c for c in ("task", "system", "dataset", "published") if row[c].startswith(FORMULA_STARTS)]
            float(row["mean"])
    assert "\\label{tab:summary-pan-i-x-i-t-t-k-u-v-u-p-p}" in latex[1]  # a label holds letters, digits, hyphens
    if shutil.which("pdflatex") is None:
        pytest.skip("pdflatex not installed (.ci/run installs it from Debian)")
    document = (
        "\\documentclass{article}\\usepackage{booktabs}\\begin{document}\n" + "\n".join(latex) + "\\end{document}\n"
    )
    (tmp_path / "summary.tex").write_text(document, encoding="utf-8")
    command = ["pdflatex", "-interaction=nonstopmode", "-halt-on-error", "summary.tex"]
    run = subprocess.run(command, cwd=tmp_path, capture_output=True, text=True, timeout=120)
    assert run.returncode == 0, run.stdout[-2000:]
