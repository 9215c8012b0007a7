"""Report pages opened in a real headless Chromium (Debian's chromium): the page as the browser built it (titles,
tables, charts), and a test script run inside it."""

import os
import shutil
import subprocess
from html.parser import HTMLParser
from pathlib import Path

import pytest


CHROMIUM = shutil.which("chromium")
WITHOUT_CHROMIUM = "needs Debian's chromium (apt-get install chromium)"


def needs_chromium():
    """The mark of a module whose tests open pages in Debian's chromium: skipped without it, except in CI."""
    if CHROMIUM is None and os.environ.get("CI"):
        pytest.fail("chromium is missing in CI: .ci/run installs Debian's chromium", pytrace=False)
    return pytest.mark.skipif(CHROMIUM is None, reason=WITHOUT_CHROMIUM)


def chromium(url: str, tmp: Path, *args) -> subprocess.CompletedProcess:
    if CHROMIUM is None:  # a test without the mark is skipped all the same, not failed on a missing browser
        pytest.skip(WITHOUT_CHROMIUM)
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


# A crawler run inside Chromium from a page at the site's root: every link of every page followed from index.html
# (read by the browser itself: synchronous requests, which --allow-file-access-from-files permits on file://), then
# each page it found opened in a frame, so that a console error of any page reaches Chromium's log.
SITE_WALKER = """<!DOCTYPE html><html><body><pre id="test-result"></pre><script>
const root = new URL('.', location.href).href, short = url => url.slice(root.length);
const seen = new Set(), pages = [], broken = [], outside = [], external = [], queue = [root + 'index.html'];
function read(url) {
  const request = new XMLHttpRequest();
  try { request.open('GET', url, false); request.send(); return request.responseText; } catch (e) { return null; }
}
while (queue.length) {
  const url = queue.shift();
  if (seen.has(url)) continue;
  seen.add(url);
  const text = read(url);
  if (text === null) { broken.push(short(url)); continue; }
  if (!url.endsWith('.html')) continue;
  pages.push(url);
  for (const element of new DOMParser().parseFromString(text, 'text/html').querySelectorAll('[href], [src]')) {
    const ref = element.getAttribute('href') ?? element.getAttribute('src');
    if (ref.startsWith('#')) continue;
    const target = new URL(ref, url);
    if (target.protocol !== 'file:') external.push(short(url) + ' -> ' + ref);
    else if (!target.href.startsWith(root)) outside.push(short(url) + ' -> ' + ref);
    else queue.push(target.href.split('#')[0]);
  }
}
for (const url of pages) { const frame = document.createElement('iframe'); frame.src = url; document.body.appendChild(frame); }
document.getElementById('test-result').textContent = JSON.stringify({files: [...seen].map(short), broken, outside, external});
</script></body></html>
"""


def walk_site(site: Path, tmp: Path) -> tuple[dict, str]:
    """Every file reachable by links from a published site's index.html, as Chromium follows them in a copy of the
    site: {"files": relative paths, "broken": links to nothing, "outside": links out of the folder, "external":
    links or sources on another scheme (http, https ...)}, and the console lines of every page it opened."""
    import json

    copy = tmp / "site-copy"
    shutil.copytree(site, copy)
    (copy / "walk-site.html").write_text(SITE_WALKER, encoding="utf-8")
    result = chromium((copy / "walk-site.html").as_uri(), tmp, "--allow-file-access-from-files", "--dump-dom")
    assert result.returncode == 0, result.stderr
    console = [line for line in result.stderr.splitlines() if "CONSOLE" in line]
    return json.loads(Dom(result.stdout).pre["test-result"]), "\n".join(console)


def published_site(ws: Path, name: str, tmp: Path) -> tuple[Path, dict]:
    """`loom publish NAME` on the workspace and its site walked in Chromium: the size its last line states is the
    folder's; every file of the site is reached by links from its index and every link resolves inside the folder;
    no page links or loads anything on another scheme, or logs a console error; no curated data, sequences or
    checkpoints are in it, so it is no larger than the workspace's pages, metrics and manifest together."""
    from helpers import run_loom

    result = run_loom("-w", ws, "publish", name)
    site = ws / "sites" / name
    files = {p.relative_to(site).as_posix(): p.stat().st_size for p in site.rglob("*") if p.is_file()}
    assert result.stdout.strip().splitlines()[-1] == (f"Published {len(files):,} files, {sum(files.values()):,} bytes "
                                                      f"to {site} (open index.html; copy this folder to host it)")
    assert str(ws) not in (site / "index.html").read_text()  # the workspace's path on this machine is not told
    walked, console = walk_site(site, tmp)
    assert (walked["broken"], walked["outside"], walked["external"]) == ([], [], []), walked
    assert console == "", console
    assert sorted(walked["files"]) == sorted(files)
    assert not [p for p in files if p.split("/")[0] in ("work", "curated", "quarantine")
                or any(part in ("curated", "sequences", "checkpoints", "builds") for part in p.split("/"))]
    workspace_record = sum(p.stat().st_size for pattern in ("**/*.html", "runs/*/metrics.jsonl")
                           for p in ws.glob(pattern) if "sites" not in p.relative_to(ws).parts)
    manifest = sum(p.stat().st_size for p in ws.glob("generations/*/manifest/**/*") if p.is_file())
    assert sum(files.values()) < workspace_record + manifest
    return site, walked
