"""The report as one self-contained HTML page: leaderboards, figures and the provenance of every run.

Everything the page shows is inside the file: figures are PNG data URIs, the style is inline, there is
no script, and a Content-Security-Policy forbids fetching anything, so it opens offline and nothing it
shows can change behind it. Every text taken from results (system names, parameters, paths) is escaped.
"""

from __future__ import annotations

import base64
import json
import shlex
from collections.abc import Mapping, Sequence
from html import escape
from pathlib import Path
from typing import Any

from harness.leaderboard import Run, Summary, Table, cells, summary

# only data: images and the inline style may load; no script, no fetch, no font, no frame
_POLICY = "default-src 'none'; img-src data:; style-src 'unsafe-inline'"
_BOLD = ("\x02", "\x03")  # stand-ins for <strong> while the cell text is escaped; never in a formatted number

_STYLE = """
body { font-family: system-ui, sans-serif; margin: 2em auto; max-width: 72em; padding: 0 1em; color: #222; }
table { border-collapse: collapse; margin: 0.5em 0 1em; }
th, td { border-bottom: 1px solid #ddd; padding: 0.25em 0.6em; text-align: right; vertical-align: top; }
th:first-child, td:first-child { text-align: left; }
thead th { border-bottom: 2px solid #888; }
tr.published th, tr.published td { font-style: italic; color: #555; }
table.facts th { text-align: left; font-weight: 600; white-space: nowrap; }
table.facts td { text-align: left; }
code, pre { font-family: ui-monospace, monospace; font-size: 0.9em; }
pre { background: #f6f6f6; padding: 0.8em; overflow-x: auto; }
figure { margin: 1em 0 2em; }
figure img { max-width: 100%; height: auto; border: 1px solid #eee; }
.note { color: #555; font-size: 0.9em; margin: 0.2em 0; }
article.run { border-top: 1px solid #ccc; padding-top: 0.5em; margin-top: 1.5em; }
"""


def render_html(
    tables: Sequence[Table],
    pngs: Sequence[Path],
    *,
    sources: Sequence[Path],
    digits: int = 3,
    figure_notes: Sequence[str] = (),
    summaries: Sequence[Summary] = (),
) -> str:
    """The whole page: the `summaries` first, then `tables` as HTML tables, each PNG embedded (after `figure_notes`:
    what the figures leave out), then every run of the tables with its provenance."""
    runs = [run for table in tables for row in table.rows for run in row.runs]
    anchors = {run.path: f"run-{i}" for i, run in enumerate(runs, start=1)}
    parts = [
        "<!DOCTYPE html>",
        '<html lang="en">',
        "<head>",
        '<meta charset="utf-8">',
        f'<meta http-equiv="Content-Security-Policy" content="{escape(_POLICY)}">',
        "<title>Results report</title>",
        f"<style>{_STYLE}</style>",
        "</head>",
        "<body>",
        "<h1>Results report</h1>",
        f"<p>{len(runs)} runs from: " + ", ".join(f"<code>{escape(str(p))}</code>" for p in sources) + "</p>",
        "<nav>"
        + ('<a href="#summary">Summary</a> · ' if summaries else "")
        + '<a href="#leaderboards">Leaderboards</a>'
        + (' · <a href="#figures">Figures</a>' if pngs or figure_notes else "")
        + ' · <a href="#provenance">Provenance</a></nav>',
    ]
    if summaries:
        parts += ['<section id="summary">', "<h2>Summary</h2>"]
        for one in summaries:
            parts += _summary_html(one, digits)
        parts.append("</section>")
    parts += ['<section id="leaderboards">', "<h2>Leaderboards</h2>"]
    for table in tables:
        parts += _table_html(table, anchors, digits)
    parts.append("</section>")
    if pngs or figure_notes:
        parts += ['<section id="figures">', "<h2>Figures</h2>"]
        parts += [f'<p class="note">{escape(note)}</p>' for note in figure_notes]
        parts += [_figure_html(png) for png in pngs]
        parts.append("</section>")
    parts += ['<section id="provenance">', "<h2>Provenance</h2>"]
    parts += [_run_html(run, anchors[run.path]) for run in runs]
    parts += ["</section>", "</body>", "</html>", ""]
    return "\n".join(parts)


def _table_html(table: Table, anchors: dict[Path, str], digits: int) -> list[str]:
    facts = cells.table_facts(table)
    out = [f"<h3>{escape(table.title)} <small>({escape('; '.join(facts))})</small></h3>", '<table class="leaderboard">']
    heads = "".join(f'<th scope="col">{escape(h)}</th>' for h in cells.header_cells(table))
    out.append(f"<thead><tr>{heads}</tr></thead>")
    out.append("<tbody>")
    for row in [*table.rows, *table.published]:
        # the same cells as the Markdown and LaTeX tables, so every format shows the same numbers
        texts = cells.row_cells(table, row, digits, pm="±", bold=_BOLD[0] + "{}" + _BOLD[1], dash="–")
        label = escape(row.label)
        if row.source is None:
            label = f'<a href="#{anchors[row.first_run.path]}">{label}</a>'
        numbers = [escape(c).replace(_BOLD[0], "<strong>").replace(_BOLD[1], "</strong>") for c in texts[1:]]
        css = ' class="published"' if row.source is not None else ""
        out.append(f'<tr{css}><th scope="row">{label}</th>' + "".join(f"<td>{c}</td>" for c in numbers) + "</tr>")
    out += ["</tbody>", "</table>"]
    out += [f'<p class="note">{escape(note)}</p>' for note in [*table.notes, *cells.source_lines(table)]]
    if table.type_pairs:
        out += _pairs_html(table, anchors, digits)
    return out


def _summary_html(one: Summary, digits: int) -> list[str]:
    """A summary table (systems x datasets), with the same cells as its Markdown and LaTeX forms."""
    title = f"{escape(summary.summary_title(one))} <small>({escape(summary.summary_facts(one))})</small>"
    out = [f"<h3>{title}</h3>", f'<table class="summary" id="summary-{one.slug}">']
    heads = "".join(f'<th scope="col">{escape(h)}</th>' for h in ["system", *one.datasets])
    out += [f"<thead><tr>{heads}</tr></thead>", "<tbody>"]
    for row in [*one.rows, *one.published]:
        texts = summary.summary_row_cells(one, row, digits, pm="±", bold=_BOLD[0] + "{}" + _BOLD[1])
        numbers = [escape(c).replace(_BOLD[0], "<strong>").replace(_BOLD[1], "</strong>") for c in texts]
        label, css = escape(row.label), ""
        if row.source is not None:
            label, css = label + " (published)", ' class="published"'
        out.append(f'<tr{css}><th scope="row">{label}</th>' + "".join(f"<td>{c}</td>" for c in numbers) + "</tr>")
    out += ["</tbody>", "</table>"]
    out += [f'<p class="note">{escape(note)}</p>' for note in summary.summary_notes(one)]
    return out


def _pairs_html(table: Table, anchors: dict[Path, str], digits: int) -> list[str]:
    """The breakdown table of a verification task: its main score per discourse-type pair, as the Markdown one."""
    out = [f"<h4>{escape(cells.pair_title(table))}</h4>", '<table class="type-pairs">']
    heads = "".join(f'<th scope="col">{escape(h)}</th>' for h in cells.pair_header_cells(table))
    out += [f"<thead><tr>{heads}</tr></thead>", "<tbody>"]
    for row in table.rows:
        texts = cells.pair_row_cells(table, row, digits, pm="±", bold=_BOLD[0] + "{}" + _BOLD[1], dash="–")
        label = f'<a href="#{anchors[row.first_run.path]}">{escape(row.label)}</a>'
        numbers = [escape(c).replace(_BOLD[0], "<strong>").replace(_BOLD[1], "</strong>") for c in texts[1:]]
        out.append(f'<tr><th scope="row">{label}</th>' + "".join(f"<td>{c}</td>" for c in numbers) + "</tr>")
    out += ["</tbody>", "</table>"]
    out += [f'<p class="note">{escape(note)}</p>' for note in table.pair_notes]
    return out


def _figure_html(png: Path) -> str:
    data = base64.b64encode(png.read_bytes()).decode("ascii")
    pdf, csv = (_code(f"plots/{png.with_suffix(suffix).name}") for suffix in (".pdf", ".csv"))
    return (
        f'<figure id="figure-{escape(png.stem)}"><img src="data:image/png;base64,{data}" alt="{escape(png.stem)}">'
        f"<figcaption>{escape(png.stem)}; PDF: {pdf}, numbers: {csv}</figcaption></figure>"
    )


def _run_html(run: Run, anchor: str) -> str:
    result = run.result
    title = f"{result.task_name} / {result.system_name} / seed {result.seed}"
    rows = "".join(f'<tr><th scope="row">{escape(name)}</th><td>{value}</td></tr>' for name, value in _facts(run))
    full = json.dumps(result.raw, indent=2, ensure_ascii=False, default=str)
    return (
        f'<article class="run" id="{anchor}"><h3>{escape(title)}</h3><table class="facts">{rows}</table>'
        f"<details><summary>{escape(run.path.name)} as recorded</summary><pre>{escape(full)}</pre></details></article>"
    )


def _facts(run: Run) -> list[tuple[str, str]]:
    """(field, escaped HTML) pairs for the provenance table of one run; a field the result lacks is left out."""
    result = run.result
    raw, system, env = result.raw, result.raw["system"], result.environment  # a result has both sections
    facts = [("result file", _code(run.path))]
    if run.copies:
        facts.append(("also in", ", ".join(_code(path) for path in run.copies)))
    facts.append(("created", escape("?" if result.created is None else result.created)))
    facts.append(("task", escape(f"{result.task_name} version {result.task_version}")))
    facts.append(("task parameters", _mapping(result.task_params)))
    data = raw["task"].get("data")
    if isinstance(data, dict):
        if "dir" in data:
            facts.append(("data folder", _code(data["dir"])))
        for split, part in data.items():
            if isinstance(part, dict):
                extra = ", ".join(f"{key} {part[key]}" for key in part if key != "checksum")
                facts.append(
                    (f"data: {split}", _code(part.get("checksum", "?")) + (f" ({escape(extra)})" if extra else ""))
                )
    facts.append(("system", escape(result.system_name)))
    if system.get("class"):
        facts.append(("system class", _code(system["class"])))
    facts.append(("system parameters", _mapping(result.system_params)))
    for key in ("checkpoint", "answers"):
        if isinstance(system.get(key), dict):
            facts.append((key, _code(system[key].get("checksum", "?"))))
    facts.append(("seed", escape(str(result.seed))))
    if result.fingerprint:
        facts.append(("fingerprint", _code(result.fingerprint)))
    main = _section(raw, "main_score")
    if main:
        facts.append(("main score", escape(f"{main.get('name')} = {main.get('value')}")))
    timings = _section(raw, "timings_s")
    if timings:
        facts.append(("timings", escape(", ".join(f"{name} {_seconds(value)}" for name, value in timings.items()))))
    if env:
        git = _section(env, "git")
        commit = git.get("commit") or "unknown"
        facts.append(("git commit", _code(commit) + (" (with uncommitted changes)" if git.get("dirty") else "")))
        for key, name in (("harness_version", "harness version"), ("python", "Python"), ("platform", "platform"),
                          ("device", "device")):  # fmt: skip
            if key in env:
                facts.append((name, escape(str(env[key]))))
        libraries = _section(env, "libraries")
        facts.append(("libraries", ", ".join(escape(f"{name} {version}") for name, version in libraries.items())))
        if isinstance(env.get("image_packages"), list):
            facts.append(("image packages", escape(f"{len(env['image_packages'])} (listed in the record below)")))
    if isinstance(raw.get("command"), list):
        facts.append(("command", _code(shlex.join(str(arg) for arg in raw["command"]))))
    return facts


def _section(result: Mapping[str, Any], name: str) -> Mapping[str, Any]:
    section = result.get(name)
    return section if isinstance(section, dict) else {}


def _code(value: Any) -> str:
    return f"<code>{escape(str(value))}</code>"


def _mapping(value: Any) -> str:
    """A parameter mapping as `key=value, ...` (values as JSON), "none" when empty."""
    if not isinstance(value, dict):
        return escape("none" if value is None else str(value))
    if not value:
        return "none"
    return ", ".join(_code(f"{key}={json.dumps(item, default=str)}") for key, item in value.items())


def _seconds(value: Any) -> str:
    return f"{value:.3f} s" if isinstance(value, (int, float)) and not isinstance(value, bool) else str(value)
