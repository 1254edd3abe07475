"""`harness report` writes index.html: one self-contained page, checked as text and in a real headless Chromium."""

from __future__ import annotations

import base64
import json
import re
import shutil
import struct
from html.parser import HTMLParser
from pathlib import Path

import pytest
from click.testing import CliRunner
from helpers.length_corpus import write_corpus
from helpers.paths import REPO

from harness.cli import main
from harness.leaderboard import build_summaries, build_tables, find_runs
from harness.leaderboard.cells import measure_label

SAMPLE = REPO / "samples" / "pan23-format-sample"
HOSTILE = '<script>alert("x")</script> & <b>co</b>'


def invoke(*args: object) -> None:
    result = CliRunner().invoke(main, [str(arg) for arg in args], catch_exceptions=False)
    assert result.exit_code == 0, result.output


@pytest.fixture(scope="module")
def runs_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Real runs: cngdist and length_ratio (2 seeds) on the pan23 sample, length_ratio on a tiny pan-classic corpus."""
    root = tmp_path_factory.mktemp("report-html")
    out = root / "runs"
    invoke("run", "--system", "cngdist", "--task", "pan23", "--data", SAMPLE, "--out", out)
    invoke(
        "run", "--system", "length_ratio", "--task", "pan23", "--data", SAMPLE, "--seed", 0, "--seed", 1, "--out", out
    )
    classic = root / "classic"
    write_corpus(classic / "train", 20, seed=1)
    write_corpus(classic / "test", 12, seed=2)
    invoke("run", "--system", "length_ratio", "--task", "pan-classic", "--data", classic, "--out", out)
    return out


@pytest.fixture(scope="module")
def report_dir(runs_dir: Path) -> Path:
    report = runs_dir.parent / "report"
    invoke("report", "--results", runs_dir, "--out", report, "--resamples", 30)
    return report


class Page(HTMLParser):
    """What a page loads and shows: tags seen, resource URLs, ids, and the text of each provenance article."""

    def __init__(self, text: str) -> None:
        super().__init__(convert_charrefs=True)
        self.tags: list[str] = []
        self.urls: list[str] = []
        self.ids: list[str] = []
        self.text: list[str] = []
        self.feed(text)

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.tags.append(tag)
        for name, value in attrs:
            if name in {"src", "href", "srcset", "data", "action", "poster"}:
                self.urls.append(value or "")
            if name == "id":
                self.ids.append(value or "")

    def handle_data(self, data: str) -> None:
        self.text.append(data)


def png_width(data: bytes) -> int:
    assert data[:8] == b"\x89PNG\r\n\x1a\n"
    return struct.unpack(">I", data[16:20])[0]


def test_the_page_holds_every_table_figure_and_run(runs_dir: Path, report_dir: Path) -> None:
    html = (report_dir / "index.html").read_text(encoding="utf-8")
    page = Page(html)
    assert "script" not in page.tags and "link" not in page.tags  # no code, no external style
    # nothing is loaded from outside the page: images are data URIs, links stay inside it
    images = [url for url in page.urls if not url.startswith("#")]
    assert images and all(url.startswith("data:image/png;base64,") for url in images)
    assert all(url[1:] in page.ids for url in page.urls if url.startswith("#"))
    # the embedded figures are the report's PNG files, byte for byte
    embedded = sorted(base64.b64decode(url.split(",", 1)[1]) for url in images)
    assert embedded == sorted(p.read_bytes() for p in (report_dir / "plots").glob("*.png"))
    # ROC, DET, score distributions and reliability of pan23 and of pan-classic; pan23's type-pair heatmap
    assert len(embedded) == 9

    text = " ".join(page.text)
    result_files = sorted(runs_dir.rglob("result.json"))
    assert len(result_files) == 4
    assert page.ids.count("provenance") == 1 and sum(i.startswith("run-") for i in page.ids) == len(result_files)
    for path in result_files:
        result = json.loads(path.read_text(encoding="utf-8"))
        for fact in (
            str(path),
            result["fingerprint"],
            result["task"]["data"]["test"]["checksum"],
            result["task"]["data"]["train"]["checksum"],
            result["environment"]["git"]["commit"] or "unknown",
            result["environment"]["device"],
            f"{result['task']['name']} / {result['system']['name']} / seed {result['seeds']['seed']}",
        ):
            assert fact in text, fact
    for table in build_tables(find_runs([runs_dir])):
        assert table.task in text
        for row in table.rows:
            assert row.label in text
            assert f"{row.mean[table.main]:.3f}" in text
    assert "[index.html](index.html)" in (report_dir / "index.md").read_text(encoding="utf-8")


def test_text_from_results_is_escaped(runs_dir: Path, tmp_path: Path) -> None:
    """A system name with markup (from `harness score --record`) shows as text and never becomes markup."""
    recorded = tmp_path / "recorded"
    truth = SAMPLE / "test" / "truth.jsonl"
    for name, system in ((HOSTILE, "cngdist"), ("plain", "length_ratio")):
        (answers,) = (runs_dir / "pan23").rglob(f"{system}/seed-0/answers.jsonl")
        evaluation = tmp_path / "eval" / system
        invoke("score", "--task", "pan23", "--truth", truth, "--answers", answers, "--output", evaluation,
               "--record", recorded / system, "--system-name", name)  # fmt: skip
    report = tmp_path / "report"
    invoke("report", "--results", recorded, "--out", report, "--resamples", 10)
    html = (report / "index.html").read_text(encoding="utf-8")
    page = Page(html)
    assert "script" not in page.tags and "b" not in page.tags
    assert "<script>" not in html
    assert "&lt;script&gt;alert(&quot;x&quot;)&lt;/script&gt; &amp; &lt;b&gt;co&lt;/b&gt;" in html
    text = "".join(page.text)
    assert text.count(HOSTILE) >= 2  # its leaderboard row and its provenance heading, as written
    assert sum(i.startswith("run-") for i in page.ids) == 2


# ------------------------------------------------------------------------------------------ in a real browser


def chromium_driver():  # -> selenium.webdriver.Chrome
    """Headless Chromium through the system's chromedriver; skipped only where Chromium, its driver or Selenium
    is not installed. Given both paths, Selenium never runs its manager (which would download drivers)."""
    browser = shutil.which("chromium") or shutil.which("chromium-browser")
    driver = shutil.which("chromedriver")
    if browser is None or driver is None:
        pytest.skip("Chromium or chromedriver not installed (Debian: apt-get install chromium chromium-driver)")
    try:
        from selenium import webdriver
        from selenium.webdriver.chrome.service import Service
    except ImportError:
        pytest.skip("selenium not installed (pip install selenium)")
    options = webdriver.ChromeOptions()
    options.binary_location = browser
    flags = ["--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage", "--no-first-run"]
    flags += ["--disable-background-networking", "--disable-component-update", "--window-size=1280,1600"]
    for flag in flags:
        options.add_argument(flag)
    options.set_capability("goog:loggingPrefs", {"performance": "ALL", "browser": "ALL"})
    return webdriver.Chrome(service=Service(executable_path=driver), options=options)


def test_the_page_renders_offline_in_a_browser(runs_dir: Path, report_dir: Path) -> None:
    from selenium.webdriver.common.by import By

    driver = chromium_driver()
    try:
        driver.get((report_dir / "index.html").resolve().as_uri())

        tables = build_tables(find_runs([runs_dir]), ci=True, significance=True, resamples=30)  # as the report did
        shown = driver.find_elements(By.CSS_SELECTOR, "table.leaderboard")
        assert len(shown) == len(tables) and any(row.p_value is not None for t in tables for row in t.rows)
        for table, element in zip(tables, shown, strict=True):
            header = [th.text for th in element.find_elements(By.CSS_SELECTOR, "thead th")]
            rows = element.find_elements(By.CSS_SELECTOR, "tbody tr")
            assert [row.find_element(By.TAG_NAME, "th").text for row in rows] == [row.label for row in table.rows]
            for row, tr in zip(table.rows, rows, strict=True):
                cells = dict(zip(header[1:], (td.text for td in tr.find_elements(By.TAG_NAME, "td")), strict=True))
                assert tr.is_displayed() and all(td.is_displayed() for td in tr.find_elements(By.TAG_NAME, "td"))
                assert cells["runs"] == str(len(row.runs))
                main, label = f"{row.mean[table.main]:.3f}", measure_label(table.main)
                assert cells[label] == (main if len(row.runs) == 1 else f"{main} ± {row.std[table.main]:.3f}")
                low, high = map(
                    float, re.fullmatch(r"\[(\S+), (\S+)\]", cells[f"{label} 95% CI (lowest seed)"]).groups()
                )
                assert 0.0 <= low <= high <= 1.0 and (low, high) == pytest.approx(row.ci, abs=5e-4)
                if any(other.p_value is not None for other in table.rows):  # a table of one system has no test
                    p = "–" if row.p_value is None else f"{row.p_value:.3f}" + "*" * (row.p_value < 0.05)
                    assert cells["p vs best (lowest seed)"] == p

        # the summary (systems x datasets; the format sample left out): every cell shown, the column's best bold
        summaries = build_summaries(tables)
        shown = driver.find_elements(By.CSS_SELECTOR, "table.summary")
        assert len(shown) == len(summaries) == 1 and summaries[0].datasets == ["classic"]
        for one, element in zip(summaries, shown, strict=True):
            assert element.is_displayed()
            assert [th.text for th in element.find_elements(By.CSS_SELECTOR, "thead th")] == ["system", *one.datasets]
            rows = element.find_elements(By.CSS_SELECTOR, "tbody tr")
            assert [tr.find_element(By.TAG_NAME, "th").text for tr in rows] == [row.label for row in one.rows]
            for row, tr in zip(one.rows, rows, strict=True):
                for dataset, td in zip(one.datasets, tr.find_elements(By.TAG_NAME, "td"), strict=True):
                    cell = row.cells[dataset]
                    assert float(td.text.split()[0]) == pytest.approx(cell.mean, abs=5e-4)
                    assert bool(td.find_elements(By.TAG_NAME, "strong")) == (cell.mean == one.best(dataset))

        # every figure decoded, at the size of its PNG, and nothing fetched from anywhere
        images = driver.execute_script(
            "return Array.from(document.images).map(i => [i.complete, i.naturalWidth, i.getAttribute('src')])"
        )
        assert len(images) == len(list((report_dir / "plots").glob("*.png"))) > 0
        for complete, width, src in images:
            assert complete and width > 0 and src.startswith("data:image/png;base64,")
            assert width == png_width(base64.b64decode(src.split(",", 1)[1]))
        requested = [
            event["params"]["request"]["url"]
            for entry in driver.get_log("performance")
            if (event := json.loads(entry["message"])["message"])["method"] == "Network.requestWillBeSent"
        ]
        assert requested and all(url.startswith(("file://", "data:")) for url in requested), requested
        errors = [entry for entry in driver.get_log("browser") if entry["level"] == "SEVERE"]
        assert errors == []  # e.g. a resource the page's policy refused, or one that failed to load

        # each run has its provenance, reached from its leaderboard row
        articles = driver.find_elements(By.CSS_SELECTOR, "#provenance article.run")
        assert len(articles) == len(list(runs_dir.rglob("result.json")))
        for article in articles:
            assert article.is_displayed()
            assert "git commit" in article.text and "sha256:" in article.text and "seed " in article.text
        first = driver.find_element(By.CSS_SELECTOR, "table.leaderboard tbody tr th a")
        label = first.text
        first.click()
        target = driver.find_element(By.CSS_SELECTOR, first.get_attribute("hash") or "#missing")
        assert driver.current_url.endswith(first.get_attribute("hash"))
        assert f"/ {label} / seed" in target.find_element(By.TAG_NAME, "h3").text
    finally:
        driver.quit()
