"""`loom publish NAME`: the workspace as a static site in WORKSPACE/sites/NAME, to copy anywhere and open. Every
page at its own path (so their relative links hold), an index with downloads (the data cards, the published
manifest's tables as Parquet beside the curation report), each run's metrics.jsonl beside its page. Nothing else: the curated data, sequences
and checkpoints stay in the workspace, so the site's size follows the manifest's and the pages', not the data's.
A link to anything not published is turned into its text, and no link leaves the folder.

The site is built into a staging folder and swapped in whole (base.atomic_files.replace_folder) under the site's
lock: a reader sees the old site or the new one, and two publishes of one name never interleave. `watch_site`
republishes whenever a page, a run's metrics or run.json, or the published generation changes."""

import html
import os
import re
import shutil
import time
from pathlib import Path
from typing import Callable, NamedTuple
from urllib.parse import quote, unquote, urlsplit

from markdown_it import MarkdownIt

from base.atomic_files import TEMPORARY_GLOB, remove_tree, replace_folder, write_text
from base.errors import UserError
from base.lock import exclusive
from base.names import check_name, suggest
from base.parquet_files import parquet_file, parquet_writer
from base.store import as_path
from base.workspace import INDEX_FILE, PAGE_GLOB, PART_GLOB, PART_TABLES, Workspace, site_lock, staging_name
from mixtures import compiled_mixtures
from reports.card import card_markdown, card_path
from reports.html import REPORT_FILE, Html, esc, page, table
from reports.index import comparison_pages, index_page, run_summaries
from reports.pages import page_writers, write_pages
from reports.run import REFRESH_SECONDS
from sweeps.ownership import marked_by
from trainer.metrics import METRICS_FILE, RUN_FILE, RUNNING

LEFT_OUT_TABLES = {"removed"}  # the removed documents' own text: data, not the manifest's account of it
FRONT_MATTER = re.compile(r"---\n(.*?\n)---\n", re.DOTALL)  # a card's YAML header
ANCHOR = re.compile(r'<a\s+href="([^"]*)"[^>]*>(.*?)</a>', re.DOTALL)


class Site(NamedTuple):
    folder: Path
    files: int
    bytes: int
    skipped: list[str]  # a line for each page that could not be written, saying why


def publish_site(root, name: str, note: Callable[[str], None] = lambda line: None) -> Site:
    """Publish the workspace at `root` as WORKSPACE/sites/NAME, whole, under the site's lock."""
    ws = site_workspace(root, name)
    with exclusive(ws.lock_file(site_lock(name)), f"site '{name}'", note):
        return publish(ws, name)


def watch_site(root, name: str, every: float, published: Callable[[Site, list[str]], None],
               note: Callable[[str], None] = lambda line: None, sleep: Callable[[float], None] = time.sleep) -> None:
    """Publish, then every `every` seconds publish again if an input changed, telling `published(site, changed
    paths)` each time; holds the site's lock until interrupted (Ctrl-C: the site stays the last one published)."""
    if not every > 0:
        raise UserError(f"--every {every} is not a number of seconds above 0; give e.g. --every 5")
    ws = site_workspace(root, name)
    with exclusive(ws.lock_file(site_lock(name)), f"site '{name}'", note):
        seen = input_state(ws)  # taken before each publish: a change while it runs is caught at the next poll
        published(publish(ws, name), [])
        while True:
            sleep(every)
            now = input_state(ws)
            if now != seen:
                changed = sorted(path for path in now.keys() | seen.keys() if now.get(path) != seen.get(path))
                seen = now
                published(publish(ws, name), changed)


def site_workspace(root, name: str) -> Workspace:
    ws = Workspace(as_path(root))
    if "/" in name or name in (".", ".."):
        raise UserError(f"site name {name!r} is a path: `loom publish NAME` writes the site inside the workspace, "
                        f"in sites/NAME; give a name, e.g. {suggest(name)!r}, and copy that folder to host it")
    check_name("site", name)
    if ws.remote:
        raise UserError(f"`loom publish` needs a local workspace ({ws.root} is on object storage): copy it to a "
                        "local folder and publish from there")
    if not ws.root.is_dir():
        raise UserError(f"no workspace at {ws.root}: `loom quickstart` or `loom init` starts one, or name one with -w")
    return ws


def publish(ws: Workspace, name: str) -> Site:
    """The site built into a staging folder and put in place whole; a failure or Ctrl-C leaves the old one."""
    ws.sites.mkdir(parents=True, exist_ok=True)
    for leftover in ws.sites.iterdir():  # a killed publish's, of this name: ours to remove, as we hold its lock
        if leftover.name.startswith(f".{name}.") and leftover.match(TEMPORARY_GLOB):
            remove_tree(leftover)
    staging = ws.sites / staging_name(name)
    try:
        skipped = build_site(ws, staging, ws.site_dir(name))
        files, size = folder_size(staging)
        replace_folder(staging, ws.site_dir(name))
    except BaseException:
        remove_tree(staging)
        raise
    return Site(ws.site_dir(name), files, size, skipped)


def build_site(ws: Workspace, site: Path, previous: Path) -> list[str]:
    """Every page (written first where the workspace has the data but not the page), each run's metrics, the
    downloads and the index into `site` (`previous`: the site it replaces); returns why any page could not be
    written."""
    writers, runs = page_writers(ws), run_summaries(ws)
    live = {run["dir"] / REPORT_FILE for run in runs if run["status"] == RUNNING}  # its trainer writes its page
    skipped = write_pages([w for w in writers if not w.path.exists() and w.path not in live]).skipped
    for path in [w.path for w in writers if w.path.exists()] + comparison_pages(ws):
        copy_into(site, ws, path)
    for run in runs:
        copy_whole_lines(run["dir"] / METRICS_FILE, site / run["dir"].relative_to(ws.root) / METRICS_FILE)
    cards = data_cards(ws, site, skipped)
    downloads = manifest_downloads(ws, site, previous)
    write_text(index_page(ws, (downloads_section(ws, cards, downloads),), REFRESH_SECONDS if live else None,
                          published=True),
               site / INDEX_FILE)
    for html_file in site.rglob(PAGE_GLOB):
        unlink_dead_links(html_file, site)
    return skipped


def copy_into(site: Path, ws: Workspace, path: Path) -> None:
    """A workspace file at the same path in the site: a copy, never a link, so that the site never changes with
    the workspace."""
    target = site / path.relative_to(ws.root)
    target.parent.mkdir(parents=True, exist_ok=True)
    try:
        shutil.copyfile(path, target)
    except FileNotFoundError:
        pass  # removed meanwhile (`loom runs rm`): its links become text


def copy_whole_lines(source: Path, target: Path) -> None:
    """A metrics log as far as its last whole line: a training run may be appending to it right now."""
    try:
        data = source.read_bytes()
    except FileNotFoundError:
        return  # its run removed meanwhile
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_bytes(data[:data.rfind(b"\n") + 1])


class Card(NamedTuple):
    what: str  # "the curated data", "mixture 'sample'"
    path: str  # its Markdown, relative to the site; its page is beside it, .html


def data_cards(ws: Workspace, site: Path, skipped: list[str]) -> list[Card]:
    """The data card (reports.card) of the curated data and of each compiled mixture that no sweep made, at the
    paths `loom card` writes them in the workspace, each also as a page; one that cannot be written is skipped."""
    if not ws.published().manifest_table("shards").exists():
        return []
    cards = []
    mine = [name for name in compiled_mixtures(ws.mixtures) if marked_by(ws.mixture_dir(name)) is None]
    for mixture in [None, *mine]:
        what = f"mixture '{mixture}'" if mixture else "the curated data"
        try:
            text = card_markdown(ws, mixture)
        except UserError as err:
            skipped.append(f"the card of {what}: {err}")
            continue
        out = site / card_path(ws, mixture).relative_to(ws.root)
        write_text(text, out)
        write_text(card_page(text, f"Data card: {what}"), out.with_suffix(".html"))
        cards.append(Card(what, out.relative_to(site).as_posix()))
    return cards


def card_page(markdown: str, title: str) -> str:
    """A card as a page: its YAML header as written, then its Markdown rendered (raw HTML in it escaped)."""
    header = FRONT_MATTER.match(markdown)
    body = markdown[header.end():] if header else markdown
    rendered = MarkdownIt("commonmark", {"html": False}).enable("table").render(body)
    shown = [f"<pre>{esc(header.group(1))}</pre>"] if header else []
    return page(title, [*shown, rendered])


class Download(NamedTuple):
    table: str
    path: str  # relative to the site
    rows: int
    bytes: int


def manifest_downloads(ws: Workspace, site: Path, previous: Path) -> list[Download]:
    """Each table of the published generation's manifest as one Parquet file beside the curation report (a
    per-document table's parts joined in order), but the removed documents' text. A generation never changes once
    published, so a file the previous site has for it is linked, not rebuilt: --watch stays cheap on a large one."""
    gen = ws.published()
    if not gen.manifest.is_dir():
        return []
    downloads = []
    for entry in sorted(gen.manifest.iterdir()):
        name = entry.stem if entry.is_file() and entry.suffix == ".parquet" else entry.name
        if name in LEFT_OUT_TABLES or not (entry.suffix == ".parquet" or name in PART_TABLES):
            continue
        relative = entry.parent.relative_to(ws.root) / f"{name}.parquet"
        target = site / relative
        target.parent.mkdir(parents=True, exist_ok=True)
        if gen.id and (previous / relative).is_file():
            link_or_copy(previous / relative, target)
        elif entry.is_file():
            shutil.copyfile(entry, target)
        else:
            join_parts(sorted(p for p in entry.glob(PART_GLOB) if p.suffix == ".parquet"), target)
        rows = parquet_file(target).metadata.num_rows
        downloads.append(Download(name, relative.as_posix(), rows, target.stat().st_size))
    return downloads


def link_or_copy(source: Path, target: Path) -> None:
    try:
        os.link(source, target)
    except OSError:
        shutil.copyfile(source, target)


def join_parts(parts: list[Path], target: Path) -> None:
    """A table's parts as one file, row group by row group (never the whole table in memory)."""
    if not parts:
        return
    schema = parquet_file(parts[0]).schema_arrow
    with parquet_writer(target, schema) as writer:
        for part in parts:
            file = parquet_file(part)
            for group in range(file.metadata.num_row_groups):
                writer.write_table(file.read_row_group(group).cast(schema))


def downloads_section(ws: Workspace, cards: list[Card], downloads: list[Download]) -> str:
    if not downloads:
        return "<h2>Downloads</h2><p>Nothing curated yet, so no manifest to download.</p>"
    rows = [[Html(f'<a href="{esc(quote(d.path))}">{esc(d.table)}</a>'), d.rows, d.bytes] for d in downloads]
    generation = ws.published().id or "(before generations)"
    card_items = "".join(f'<li>{esc(c.what)}: <a href="{esc(quote(str(Path(c.path).with_suffix(".html"))))}">the card'
                         f'</a> (<a href="{esc(quote(c.path))}">Markdown</a>, Hugging Face\'s dataset-card layout)</li>'
                         for c in cards)
    return ("<h2>Downloads</h2>" + (f'<p>Data cards:</p><ul id="data-cards">{card_items}</ul>' if cards else "") +
            f"<p>The published manifest (generation {esc(generation)}), a Parquet file per table: what was kept of "
            "every source, document by document, and why the rest was not. The curated text, the mixtures' "
            "sequences and the checkpoints are not in this site. Each run's metrics.jsonl is linked from its page.</p>"
            + table(["table", "rows", "bytes"], rows, "downloads", numeric={1, 2}))


def unlink_dead_links(page: Path, site: Path) -> None:
    """Each link of the page that does not lead to a file of the site (something not published, or outside it)
    made its text."""
    text = page.read_text(encoding="utf-8")
    kept = ANCHOR.sub(lambda m: m.group(0) if leads_inside(m.group(1), page, site) else m.group(2), text)
    if kept != text:
        page.write_text(kept, encoding="utf-8")


def leads_inside(href: str, page: Path, site: Path) -> bool:
    """Whether a link (as written in the page) leads to a file of the site: relative, and there."""
    parts = urlsplit(html.unescape(href))
    if parts.scheme or parts.netloc:
        return False
    if not parts.path:
        return True  # within the page itself (#fragment)
    target = Path(os.path.normpath(page.parent / unquote(parts.path)))
    return target.is_relative_to(site) and target.is_file()


def folder_size(folder: Path) -> tuple[int, int]:
    """(files, bytes) below a folder."""
    files = [p for p in folder.rglob("*") if p.is_file()]
    return len(files), sum(p.stat().st_size for p in files)


def input_state(ws: Workspace) -> dict[str, tuple[int, int]]:
    """What a site is made of, as (mtime, size) by path: every page and run's files, and the published
    generation's pointer. A change of any (or one appearing or going) calls for a new publish."""
    paths = [w.path for w in page_writers(ws)] + comparison_pages(ws) + [ws.published_file]
    for run in run_summaries(ws):
        paths += [run["dir"] / METRICS_FILE, run["dir"] / RUN_FILE]
    state = {}
    for path in paths:
        try:
            info = path.stat()
        except FileNotFoundError:
            continue
        state[str(path.relative_to(ws.root))] = (info.st_mtime_ns, info.st_size)
    return state
