"""`loom publish`'s parts that need no trained workspace: a link to anything not published made its text, a card
as a page, a folder swapped in whole, a site name that is a path refused in one line. The sites of real workspaces
(after a ladder, after a search, --watch on a live run) are tested beside those fixtures, in tests/sweeps/."""

import os

import pytest

from base.atomic_files import replace_folder
from base.errors import UserError
from base.lock import exclusive
from base.workspace import Workspace, site_lock
from reports.site import card_page, publish_site, unlink_dead_links


def test_a_link_to_anything_not_published_outside_the_site_or_elsewhere_becomes_its_text(tmp_path):
    site = tmp_path / "site"
    (site / "runs" / "a").mkdir(parents=True)
    (site / "runs" / "a" / "metrics.jsonl").write_text("{}\n")
    (tmp_path / "secret.html").write_text("outside the site")
    page = site / "runs" / "b" / "report.html"
    page.parent.mkdir()
    kept = ['<a href="../a/metrics.jsonl">metrics</a>', '<a href="#loss">the loss</a>',
            '<a href="../a/metrics.jsonl#x" class="k">again</a>']
    page.write_text("".join(kept) + '<a href="../c/report.html">run c</a> <a href="../../../secret.html">secret</a> '
                    '<a href="https://example.com/x">the web</a> <a href="../a">a folder</a>')
    unlink_dead_links(page, site)
    assert page.read_text() == "".join(kept) + "run c secret the web a folder"


def test_a_card_as_a_page_shows_its_header_as_written_and_escapes_html_in_it():
    markdown = "---\nlicense:\n- mit\n---\n\n# Card <b>x</b>\n\n| a | b |\n|---|---|\n| <script>1</script> | 2 |\n"
    text = card_page(markdown, "Data card")
    assert "<pre>license:\n- mit\n</pre>" in text and "<h1>Card &lt;b&gt;x&lt;/b&gt;</h1>" in text
    assert "<td>&lt;script&gt;1&lt;/script&gt;</td>" in text and text.count("<script>") == 1  # the page's own


def test_a_folder_is_replaced_whole_and_a_link_in_its_place_is_removed_not_followed(tmp_path):
    target, staging, elsewhere = tmp_path / "site", tmp_path / ".site.tmp-1", tmp_path / "elsewhere"
    for folder, name in ((target, "old"), (staging, "new"), (elsewhere, "keep")):
        folder.mkdir()
        (folder / f"{name}.html").write_text(name)
    replace_folder(staging, target)
    assert os.listdir(target) == ["new.html"] and sorted(os.listdir(tmp_path)) == ["elsewhere", "site"]
    target.rename(tmp_path / "moved")
    target.symlink_to(elsewhere)
    staging.mkdir()
    replace_folder(staging, target)
    assert not target.is_symlink() and os.listdir(elsewhere) == ["keep.html"]


def loom_in_process(capsys, *args) -> tuple[int, str]:
    """`loom ARGS` in this process (no interpreter to start): its exit status and what it wrote to stderr."""
    from loom.cli.commands import cli

    with pytest.raises(SystemExit) as ended:
        cli.main(args=[str(a) for a in args], prog_name="loom")
    return ended.value.code, capsys.readouterr().err


def test_a_site_name_that_is_a_path_or_a_missing_workspace_is_one_line_and_writes_nothing(tmp_path, capsys):
    ws = tmp_path / "ws"
    ws.mkdir()
    for name in ("../out", "a/b", ".."):
        status, err = loom_in_process(capsys, "-w", ws, "publish", name)
        assert status == 2 and err.startswith(f"error: site name {name!r} is a path: ") and err.count("\n") == 1
    status, err = loom_in_process(capsys, "-w", ws, "publish", "My Site")
    assert status == 2 and err.startswith("error: site name 'My Site' is invalid: a name is ") and err.count("\n") == 1
    status, err = loom_in_process(capsys, "-w", tmp_path / "none", "publish", "site")
    assert status == 2 and err == (f"error: no workspace at {tmp_path / 'none'}: `loom quickstart` or `loom init` "
                                   "starts one, or name one with -w\n")
    assert os.listdir(ws) == [] and not (tmp_path / "none").exists()


def test_a_second_publish_of_a_site_being_published_is_refused_in_one_line(tmp_path):
    with exclusive(Workspace(tmp_path).lock_file(site_lock("s")), "site 's'"):
        with pytest.raises(UserError, match=r"^site 's' is in use by pid \d+ "):
            publish_site(tmp_path, "s")
    assert not (tmp_path / "sites").exists()
