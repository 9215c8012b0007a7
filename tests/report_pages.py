"""Report pages opened in a real headless Chromium (Debian's chromium): the page as the browser built it (titles,
tables, charts), and a test script run inside it."""

import os
import shutil
import subprocess
from html.parser import HTMLParser
from pathlib import Path

import pytest


CHROMIUM = shutil.which("chromium")


def needs_chromium():
    """The mark of a module whose tests open pages in Debian's chromium: skipped without it, except in CI."""
    if CHROMIUM is None and os.environ.get("CI"):
        pytest.fail("chromium is missing in CI: .ci/run installs Debian's chromium", pytrace=False)
    return pytest.mark.skipif(CHROMIUM is None, reason="needs Debian's chromium (apt-get install chromium)")


def chromium(url: str, tmp: Path, *args) -> subprocess.CompletedProcess:
    flags = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
             "--disable-background-networking", "--disable-component-update", "--disable-sync",
             "--enable-logging=stderr", "--v=0", f"--user-data-dir={tmp / 'profile'}"]
    return subprocess.run([CHROMIUM, *flags, *args, url], capture_output=True, text=True, timeout=120)


class Dom(HTMLParser):
    """Titles, tables (cell data-values by table id), charts with their rects and shapes, images and scripts of a
    page, and the text of each <pre> with an id (where a test script writes its findings)."""

    def __init__(self, text: str):
        super().__init__()
        self.title, self.tables, self.charts, self.tags, self.shapes, self.pre = "", {}, {}, [], {}, {}
        self._in_title, self._table, self._row, self._chart, self._pre = False, None, None, None, None
        self.feed(text)

    def handle_starttag(self, tag, attrs):
        attrs = dict(attrs)
        self.tags.append((tag, attrs))
        if tag == "title" and self._chart is None:
            self._in_title = True
        elif tag == "table" and attrs.get("id"):
            self._table = self.tables.setdefault(attrs["id"], [])
        elif tag == "tr" and self._table is not None:
            self._row = []
            self._table.append(self._row)
        elif tag == "td" and self._row is not None:
            self._row.append(attrs.get("data-value"))
        elif tag == "svg" and "chart" in attrs.get("class", ""):
            self._chart = attrs["id"]
            self.charts[self._chart] = 0
        elif tag == "rect" and self._chart:
            self.charts[self._chart] += 1
        elif tag in ("polyline", "polygon", "circle", "line", "g") and self._chart:
            self.shapes.setdefault(self._chart, []).append((tag, attrs))
        elif tag == "pre" and attrs.get("id"):
            self._pre = attrs["id"]
            self.pre[self._pre] = ""

    def handle_endtag(self, tag):
        if tag == "pre":
            self._pre = None
        elif tag == "title":
            self._in_title = False
        elif tag == "table":
            self._table = None
        elif tag == "svg":
            self._chart = None

    def handle_data(self, data):
        if self._in_title:
            self.title += data
        if self._pre:
            self.pre[self._pre] += data


def only_the_inline_script(text: str, dom: Dom) -> None:
    """A report page's one script is the reports' own, written inline; nothing is loaded from elsewhere (no src,
    no link), in the page as written (`text`) or as the browser built it (`dom`)."""
    from reports.html import SCRIPT

    assert text.count("<script") == 1 and f"<script>{SCRIPT}</script>" in text
    assert [attrs for tag, attrs in dom.tags if tag == "script"] == [{}]
    assert not [(tag, attrs) for tag, attrs in dom.tags if tag in ("link", "img", "iframe") or "src" in attrs]


def open_page(path: Path, tmp: Path) -> tuple[Dom, str]:
    result = chromium(path.as_uri(), tmp, "--dump-dom")
    assert result.returncode == 0, result.stderr
    console = [line for line in result.stderr.splitlines() if "CONSOLE" in line]
    return Dom(result.stdout), "\n".join(console)


def run_in_page(path: Path, tmp: Path, script: str) -> tuple[Dom, str]:
    """Opens a copy of the page at `path` with `script` run last in its body, after the page's own; the DOM is
    dumped once scripts have run, so events the script dispatches (synchronously) have had their effect. The
    script reports what it saw by writing into the page, e.g. JSON in a <pre id="test-result">."""
    text = path.read_text(encoding="utf-8")
    end = text.rindex("</body>")
    copy = tmp / f"scripted-{path.name}"
    copy.write_text(f"{text[:end]}<script>{script}</script>\n{text[end:]}", encoding="utf-8")
    return open_page(copy, tmp)
