"""The curation report's removed documents on the curated slice (a copy, its removed sample's fortunes texts given
markup first): per source and reason up to three sampled texts with their detail and input#record, beside kept
ones, each source folded shut; in Chromium the markup is text and the page's title and scripts are its own."""

import json

import pyarrow as pa
import pytest

from base.parquet_files import read_parquet, write_parquet
from base.workspace import Workspace
from helpers import copy_curated
from report_pages import needs_chromium, run_in_page
from reports.html import esc

PAYLOAD = "<script>document.title='pwned'</script> & <b>bold</b> "
pytestmark = needs_chromium()


@pytest.fixture(scope="module")
def report(curated_slice, slice_tokenizer, tmp_path_factory):
    """The copy's curation report, and its removed sample as rows (fortunes' texts with PAYLOAD first)."""
    from reports.build import curation_report

    ws = copy_curated(curated_slice, slice_tokenizer, tmp_path_factory.mktemp("removedreport") / "ws")
    rows = []
    for part in sorted(Workspace(ws).published().manifest_files("removed").parent.glob("*.parquet")):
        table = read_parquet(part)
        texts = [PAYLOAD + text if source == "fortunes" else text
                 for source, text in zip(table["source"].to_pylist(), table["text"].to_pylist())]
        table = table.set_column(table.schema.get_field_index("text"), "text", pa.array(texts, pa.string()))
        write_parquet(table, part)
        rows += table.to_pylist()
    return curation_report(ws), rows


def test_the_removed_section_shows_sampled_texts_per_reason_beside_kept_ones(report, tmp_path):
    page, rows = report
    text = page.read_text(encoding="utf-8")
    section = text[text.index("<h2>Removed documents</h2>"):]
    fortunes = section[section.index('<details class="removed" id="removed-fortunes">'):]
    fortunes = fortunes[:fortunes.index("</details>")]
    sampled = sorted((r for r in rows if r["source"] == "fortunes"),
                     key=lambda r: (r["reason"], r["shard"], r["record"]))
    reasons = {r["reason"] for r in sampled}
    assert len(reasons) > 1
    for reason in reasons:
        first = [r for r in sampled if r["reason"] == reason][:4]
        for shown in first[:3]:
            where = f"{shown['input']}#{shown['record']}"
            assert esc(f"{where} · {shown['detail']}" if shown["detail"] else where) + "</p>" in fortunes
        if len(first) == 4:  # three per reason, the first by shard and record
            fourth = esc(f"{first[3]['input']}#{first[3]['record']}")
            assert f"{fourth}</p>" not in fortunes and f"{fourth} · " not in fortunes
    assert "<h4>kept</h4>" in fortunes and esc(PAYLOAD) in fortunes and PAYLOAD not in text

    script = """const pre = document.createElement('pre'); pre.id = 'test-result';
        const fold = document.getElementById('removed-fortunes');
        pre.textContent = JSON.stringify({title: document.title, scripts: document.scripts.length, open: fold.open,
            texts: [...fold.querySelectorAll('pre.doc')].map(p => p.textContent)});
        document.body.appendChild(pre);"""
    dom, console = run_in_page(page, tmp_path, script)
    seen = json.loads(dom.pre["test-result"])
    assert console == "" and seen["title"] == "Loom curation report" and seen["scripts"] == 2  # its own and ours
    assert seen["open"] is False
    assert sum(t.startswith(PAYLOAD) for t in seen["texts"]) == sum(min(3, sum(r["reason"] == reason for r in sampled))
                                                                  for reason in reasons)
