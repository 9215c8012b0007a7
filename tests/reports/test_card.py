"""`loom card [MIXTURE]`: the data card is a Hugging Face dataset card (its README.md parsed by huggingface_hub's own
card loader, no network) and every figure in it is the manifest's and the plan's, read here with DuckDB."""

import json
import re
from pathlib import Path

import duckdb
import pytest
from huggingface_hub import DatasetCard

from base.errors import UserError
from base.sql import literal
from base.workspace import Workspace
from helpers import compiled, published, run_loom
from reports.card import LANGUAGE_SHARE, card_markdown, card_path, hf_licenses, size_category


def tables(text: str) -> dict[str, list[dict]]:
    """The first Markdown table under each heading, as rows of {column: cell}, numbers without thousands separators."""
    found, heading, columns = {}, None, None
    for line in text.splitlines():
        if line.startswith("#"):
            heading, columns = line.lstrip("#").strip(), None
        elif not line.startswith("|"):
            columns = None  # a table ends at its first other line
        elif set(line) <= set("|-"):
            continue
        elif columns is None:
            columns = [] if heading in found else cells(line)  # a second table under a heading is skipped
            found.setdefault(heading, [])
        elif columns:
            found[heading].append(dict(zip(columns, cells(line))))
    return found


def cells(line: str) -> list[str]:
    return [c.replace(",", "") if re.fullmatch(r"[\d,.]+", c) else c.replace("\\|", "|")
            for c in (c.strip() for c in re.split(r"(?<!\\)\|", line)[1:-1])]


def manifest(ws: Path) -> duckdb.DuckDBPyConnection:
    con = duckdb.connect()
    root = published(ws)
    for name in ("funnel", "documents"):
        con.execute(f"CREATE VIEW {name} AS SELECT * FROM read_parquet({literal(f'{root}/manifest/{name}/*.parquet')})")
    for name in ("pii", "provenance"):
        con.execute(f"CREATE VIEW {name} AS SELECT * FROM read_parquet({literal(f'{root}/manifest/{name}.parquet')})")
    return con


def expected_languages(con, sources: list[str]) -> list[str]:
    rows = con.execute("SELECT lang, count(*) FROM documents WHERE list_contains(?, source) GROUP BY 1 "
                       "ORDER BY 2 DESC, 1", [sources]).fetchall()
    whole = sum(n for _, n in rows)
    return [lang for lang, n in rows if n >= LANGUAGE_SHARE * whole]


FATE_COLUMNS = {"kept": "kept", "duplicate": "duplicates", "malformed": "malformed", "low_quality": "low quality",
                "contaminated": "contaminated"}


def check_curation_figures(card: str, con, sources: list[str]) -> None:
    """The funnel, sources, dedup and personal-data tables equal the manifest's counts."""
    found = tables(card)
    expected = {s: {} for s in [*sources, "all"]}
    for source, fate, stage, n in con.execute("SELECT source, fate, stage, count(*) FROM funnel "
                                              "WHERE list_contains(?, source) GROUP BY ALL", [sources]).fetchall():
        for row in (expected[source], expected["all"]):
            for column in ("records in", FATE_COLUMNS.get(fate) or f"filter: {stage}"):
                row[column] = row.get(column, 0) + n
    funnel = {r.pop("source"): {c: int(v) for c, v in r.items()} for r in found["Curation funnel"]}
    assert funnel == {s: {c: row.get(c, 0) for c in funnel[s]} for s, row in expected.items()
                      if s != "all" or len(sources) > 1}
    assert all(set(expected[s]) <= set(funnel[s]) for s in sources)
    kept = {r["source"]: (int(r["kept documents"]), int(r["kept tokens"])) for r in found["Sources"]}
    assert kept == {s: (d, t) for s, d, t in con.execute(
        "SELECT source, count(*), sum(n_tokens) FROM documents GROUP BY 1").fetchall() if s in sources}
    dedup = {r["source"]: r for r in found.get("Deduplication", [])}
    for source, stage, n in con.execute("SELECT source, stage, count(*) FROM funnel WHERE fate = 'duplicate' "
                                        "GROUP BY ALL").fetchall():
        if source in sources:
            assert int(dedup[source][f"removed by {stage}"]) == n
    pii = {(r["source"], r["kind"]): (int(r["documents with any"]), int(r["spans"]), int(r["removed by max_pii"]))
           for r in found.get("Personal data", [])}
    assert pii == {(s, k): (d, n, r) for s, k, d, n, r in con.execute(
        "SELECT source, kind, documents, spans, removed FROM pii").fetchall() if s in sources}


def test_the_quickstart_card_is_a_hub_dataset_card_with_the_manifests_figures(quickstart_ws):
    ws = quickstart_ws[0]
    result = run_loom("-w", ws, "card", "sample")
    path = ws / "mixtures" / "sample" / "README.md"
    assert result.stdout == f"Card: {path}\n"
    card = DatasetCard(path.read_text())  # the Hub's own loader: YAML header and body
    data = card.data.to_dict()
    build = compiled(ws, "sample")
    meta = json.loads((build / "schedule.json").read_text())
    sources = sorted({s for c in meta["components"] for s in c["sources"]})
    con = manifest(ws)
    documents = con.execute(f"SELECT count(DISTINCT (shard, row)) FROM read_parquet('{build}/sequences/*.parquet')"
                            ).fetchone()[0]
    assert data["size_categories"] == [size_category(documents)] == ["1K<n<10K"]
    assert data["task_categories"] == ["text-generation"] and data["pretty_name"] == "Loom mixture sample"
    assert data["language"] == expected_languages(con, sources) and data["language"][0] == "en"
    recorded = {s: (license, origin, citation) for s, license, origin, citation in con.execute(
        "SELECT source, license, origin, citation FROM provenance").fetchall() if s in sources}
    assert data["license"] == sorted({hub for license, _, _ in recorded.values() for hub in hf_licenses(license)})
    assert "gpl-2.0" in data["license"] and data["license_name"] == "psf-2.0"  # the bundled corpora's licences
    assert {r["source"]: (r["license"], r["origin"], r["citation"]) for r in tables(card.text)["Sources"]} == recorded
    check_curation_figures(card.text, con, sources)
    licenses = [(r["phase"], r["license"], int(r["tokens"]), r["sources"]) for r in tables(card.text)["By license"]]
    assert licenses == con.execute(f"SELECT * FROM read_parquet({literal(str(build / 'licenses.parquet'))})"
                                   ).fetchall() and licenses
    plan = {(r["phase"], r["component"]): int(r["tokens"]) for r in tables(card.text)["Mixture composition"]}
    assert plan == {(p, c): t for p, c, t in con.execute(
        f"SELECT phase, component, tokens FROM read_parquet('{build}/plan.parquet')").fetchall()}
    quality = tables(card.text)["By quality bucket"]
    assert abs(sum(int(r["tokens"]) for r in quality) - meta["tokens"]) <= len(quality)  # each rounded
    assert f"- vocabulary: {meta['vocab_size']:,} tokens" in card.text
    assert f"- fingerprint: `{meta['tokenizer_fingerprint']}`" in card.text
    assert "loom mix build sample\nloom train --mixture sample --run-name quickstart " in card.text


def test_a_card_of_the_curated_data_alone_and_a_mixture_it_lacks(curated_slice):
    ws = curated_slice[0]
    files = Workspace(ws)
    text = card_markdown(files)
    card = DatasetCard(text)
    con = manifest(ws)
    sources = [s for (s,) in con.sql("SELECT DISTINCT source FROM funnel ORDER BY 1").fetchall()]
    documents = con.execute("SELECT count(*) FROM documents").fetchone()[0]
    assert card.data.to_dict()["size_categories"] == [size_category(documents)]
    assert card.data.to_dict()["language"] == expected_languages(con, sources)
    check_curation_figures(card.text, con, sources)
    assert "Mixture composition" not in text and "loom curate --sources sources.toml" in text
    assert card_path(files, None) == published(ws) / "manifest" / "README.md"
    with pytest.raises(UserError, match=r"^mixture 'nope' is not compiled in .*; `loom mix build NAME` compiles one$"):
        card_markdown(files, "nope")


@pytest.mark.parametrize("spdx, hub", [
    ("MIT", ["mit"]), ("Apache-2.0", ["apache-2.0"]), ("GPL-2.0-or-later", ["gpl-2.0"]), ("ODbL-1.0", ["odbl"]),
    ("unknown", ["unknown"]), ("LicenseRef-ours", ["other"]), ("PSF-2.0", ["other"]),
    ("GPL-2.0-or-later OR CC-BY-SA-3.0", ["gpl-2.0", "cc-by-sa-3.0"]),
    ("(MIT AND BSD-3-Clause) OR GPL-2.0-only WITH Classpath-exception-2.0", ["mit", "bsd-3-clause", "gpl-2.0"])])
def test_spdx_licences_are_named_as_the_hub_names_them(spdx, hub):
    assert hf_licenses(spdx) == hub


def test_size_categories_are_the_hubs():
    assert [size_category(n) for n in (0, 999, 1000, 10_000, 2_500_000, 10 ** 13)] == [
        "n<1K", "n<1K", "1K<n<10K", "10K<n<100K", "1M<n<10M", "n>1T"]
