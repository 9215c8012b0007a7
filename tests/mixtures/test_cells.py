"""Cells as mixture keys (mixtures.cells): slices of several conditions, domains by name, wildcard keys expanded
into one component per non-empty cell by natural token share; and such a mixture built on the curated slice."""

import json
import math

import duckdb
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from helpers import compiled, copy_curated, published, run_loom, write_spec
from report_pages import needs_chromium, open_page
from base.errors import UserError
from mixtures.cells import Condition, cell_keys, cell_label, expand, expand_spec, parse_conditions
from mixtures.heldout import hold_out
from mixtures.manifest import with_annotator_columns
from mixtures.plan import resolve
from mixtures.spec import parse_spec

SOURCES = {"web": {"tags": []}, "code": {"tags": []}}
NAMES = {"3": "math", "10": "law"}

# web: domains 3, 10 and 2 (numeric order puts 10 last), quality buckets 1 and 2, one document with neither
DOCUMENTS = [  # source, domain, quality_bucket, n_tokens
    ("web", 3, 1, 300), ("web", 3, 2, 100), ("web", 10, 1, 200), ("web", 2, 2, 400), ("web", None, None, 50),
    ("code", None, 1, 1000),
]


def connection(documents=DOCUMENTS) -> duckdb.DuckDBPyConnection:
    """A real DuckDB with the manifest's documents as mixtures.manifest.documents registers them."""
    con = duckdb.connect()
    table = pa.table({
        "source": [d[0] for d in documents], "shard": [f"{d[0]}/part-0.parquet" for d in documents],
        "row": list(range(len(documents))), "domain": pa.array([d[1] for d in documents], pa.int32()),
        "quality_bucket": pa.array([d[2] for d in documents], pa.int32()), "lang": ["en"] * len(documents),
        "n_tokens": pa.array([d[3] for d in documents], pa.int64())})
    con.register("documents_table", table)
    con.execute("CREATE VIEW documents AS SELECT * FROM documents_table")
    return con


def spec(weights: dict, seq_len: int = 8, global_batch: int = 16) -> object:
    return parse_spec({"name": "m", "seq_len": seq_len, "global_batch": global_batch, "steps": 10, "weights": weights},
                      "test")


def test_a_slice_takes_several_conditions_each_column_op_value():
    assert parse_conditions("web:domain=3, quality_bucket>=2") == (
        "web", (Condition("domain", "=", "3"), Condition("quality_bucket", ">=", "2")))
    assert parse_conditions("web:quality_bucket>=3") == ("web", (Condition("quality_bucket", ">=", "3"),))
    assert parse_conditions("web") is None and parse_conditions("web:domain=3,oops") is None


def test_conditions_are_anded_and_a_domain_name_is_its_number():
    single = resolve("web:quality_bucket>=3", SOURCES)
    assert single.where == "source = 'web' AND quality_bucket >= 3"  # as before cells
    both = resolve("web:domain=math,quality_bucket=2", SOURCES, NAMES)
    assert both.where == "source = 'web' AND domain = 3 AND quality_bucket = 2" and both.sources == ("web",)


BAD_KEYS = [
    ("web:domain=3", None, "the curated data has no domains; add a [domains] table to sources.toml and re-run "
                           "`loom curate`"),
    ("web:domain=*", None, "the curated data has no domains"),
    ("web:domain=maths", NAMES, "no domain named 'maths' (did you mean 'math'?) (named: 3 = math, 10 = law)"),
    ("web:quality=*", NAMES, "a wildcard takes a column of few values: domain, lang, quality_bucket"),
    ("web:domain>=*", NAMES, "a wildcard is written 'domain=*'"),
    ("web:domain=3,size=2", NAMES, "cannot slice on 'size'"),
    ("blog:domain=3", NAMES, "no source 'blog'"),
]


@pytest.mark.parametrize("key, names, message", BAD_KEYS, ids=[k for k, _, _ in BAD_KEYS])
def test_a_bad_cell_key_is_one_line_naming_the_fix(key, names, message):
    with pytest.raises(UserError) as err:
        resolve(key, SOURCES, names)
    assert message in str(err.value) and "\n" not in str(err.value)


TAGGED = {"vimhelp": {"tags": ["doc"]}, "vimh": {"tags": []}, "pages": {"tags": ["vim", "doc"]},
          "man": {"tags": ["vim"]}, "web": {"tags": ["en"]}}
WEIGHT_KEYS = [  # a mistyped key, with the exact first words of its one line
    ("vim", "weight key 'vim' is a tag (2 sources) and close to source 'vimh'; write 'tag:vim' or 'vimh'"),
    ("vimhelpp", "weight key 'vimhelpp' is not a source, a tag or a slice like 'web:quality_bucket>=3' (did you "
                 "mean 'vimhelp'?)"),
    ("tag:vin", "weight key 'tag:vin': no source has tag 'vin' (did you mean 'vim'?)"),
    ("vimhlp:lang=en", "weight key 'vimhlp:lang=en': no source 'vimhlp' (did you mean 'vimhelp'?)"),
]


@pytest.mark.parametrize("key, message", WEIGHT_KEYS, ids=[k for k, _ in WEIGHT_KEYS])
def test_a_weight_key_that_may_be_a_typo_is_refused_naming_what_it_is_close_to(key, message):
    with pytest.raises(UserError) as err:
        resolve(key, TAGGED)
    assert str(err.value).startswith(message) and "\n" not in str(err.value)


def test_tag_prefix_weighs_a_tag_and_a_tag_far_from_every_source_needs_none():
    assert resolve("tag:vim", TAGGED).sources == ("man", "pages")
    assert resolve("doc", TAGGED).sources == ("pages", "vimhelp")  # no source within two edits or starting 'doc'
    assert resolve("en", TAGGED).sources == ("web",)  # two edits from 'web', but so is any two-letter word
    assert resolve("vimh", TAGGED).sources == ("vimh",)  # a source's own name is the source
    assert resolve("tag:lang=en", {"tag": {"tags": []}}).where == "source = 'tag' AND lang = 'en'"  # a slice of `tag`


def test_an_annotators_column_and_buckets_slice_only_the_sources_it_covers():
    curation = with_annotator_columns({"sources": {"web": {"tags": []}, "code": {"tags": []}},
                                       "annotators": [{"name": "edu2", "sources": ["web"], "buckets": 4},
                                                      {"name": "tox", "sources": [], "buckets": 0}]})
    sources = curation["sources"]
    assert resolve("web:edu2>=3", sources).where == "source = 'web' AND edu2 >= 3"
    assert resolve("code:tox<0.5", sources).where == "source = 'code' AND tox < 0.5"
    with pytest.raises(UserError, match="cannot slice on 'edu2'.*NAME_bucket where an"):
        resolve("code:edu2>=3", sources)  # edu2 does not cover code
    with pytest.raises(UserError, match="cannot slice on 'tox_bucket'"):
        resolve("web:tox_bucket=1", sources)  # tox has no buckets
    con = duckdb.connect()
    con.register("t", pa.table({"source": ["web"] * 4, "edu2_bucket": pa.array([0, 3, 3, None], pa.int16()),
                                "n_tokens": pa.array([10, 20, 30, 40], pa.int64())}))
    con.execute("CREATE VIEW documents AS SELECT * FROM t")
    assert cell_keys("web", ["edu2_bucket"], con, None) == [("web:edu2_bucket=0", 10), ("web:edu2_bucket=3", 50)]


def test_cells_are_the_non_empty_value_combinations_in_numeric_order():
    con = connection()
    assert cell_keys("web", ["domain"], con, NAMES) == [("web:domain=2", 400), ("web:domain=3", 400),
                                                        ("web:domain=10", 200)]
    assert cell_keys("web", ["domain", "quality_bucket"], con, NAMES) == [
        ("web:domain=2,quality_bucket=2", 400), ("web:domain=3,quality_bucket=1", 300),
        ("web:domain=3,quality_bucket=2", 100), ("web:domain=10,quality_bucket=1", 200)]
    assert cell_keys("web", ["domain", "quality_bucket>=2"], con, NAMES) == [
        ("web:domain=2,quality_bucket>=2", 400), ("web:domain=3,quality_bucket>=2", 100)]


def test_a_wildcard_weight_splits_by_the_cells_token_shares_and_adds_to_an_explicit_cell():
    con = connection()
    expansion = expand(spec({"web:domain=*": 0.6, "web:domain=math": 0.1, "code": 0.3}), con, NAMES, SOURCES)
    weights = dict(expansion.spec.phases[0].weights)
    assert list(weights) == ["web:domain=2", "web:domain=3", "web:domain=10", "code"]
    assert math.isclose(weights["web:domain=2"], 0.6 * 400 / 1000)
    assert math.isclose(weights["web:domain=3"], 0.6 * 400 / 1000 + 0.1)  # the explicit 'math' is cell 3
    assert math.isclose(weights["web:domain=10"], 0.6 * 200 / 1000) and weights["code"] == 0.3
    record = expansion.record()
    assert record["cells"]["web:domain=*"] == {"cells": ["web:domain=2", "web:domain=3", "web:domain=10"],
                                               "left_out_tokens": 50}  # the document without a domain
    assert record["domain_names"] == NAMES


def test_the_shares_are_of_training_tokens_once_validation_is_held_out():
    many = [("web", d, 1, 100) for d in (0, 1) for _ in range(40)]
    con = connection(many)
    mixture = spec({"web:domain=*": 1.0})
    held = hold_out(con, parse_spec({"name": "m", "seq_len": 8, "global_batch": 8, "steps": 10,
                                     "validation_tokens": 1500, "weights": {"web": 1}}, "test"), ["web"])
    held_domains = con.execute("SELECT domain, count(*) FROM documents d JOIN held_out h USING (shard, row) "
                               "GROUP BY ALL").fetchall()
    training = {d: (40 - dict(held_domains).get(d, 0)) * 100 for d in (0, 1)}
    weights = dict(expand_spec(mixture, con, NAMES).phases[0].weights)
    assert held.num_rows == 8 and training[0] != training[1]  # the held-out documents make the shares unequal
    assert math.isclose(weights["web:domain=0"], training[0] / sum(training.values()))


def test_a_cell_under_one_sequence_is_left_out_with_its_tokens():
    expansion = expand(spec({"web:domain=*": 1.0}, seq_len=250), connection(), NAMES)
    assert [k for k, _ in expansion.spec.phases[0].weights] == ["web:domain=2", "web:domain=3"]
    assert expansion.wildcards["web:domain=*"].left_out_tokens == 200 + 50


def test_a_cell_its_share_gives_under_one_sequence_per_batch_is_left_out_and_the_rest_share_its_weight():
    # half of a batch of 8 is 4 sequences: domain 10's 200 of the cells' 1,000 tokens would get 0.8 of one
    expansion = expand(spec({"web:domain=*": 0.5, "code": 0.5}, global_batch=8), connection(), NAMES)
    assert dict(expansion.spec.phases[0].weights) == {"web:domain=2": 0.25, "web:domain=3": 0.25, "code": 0.5}
    assert expansion.wildcards["web:domain=*"].left_out_tokens == 200 + 50


def test_a_wildcard_with_no_cell_is_refused_in_one_line():
    with pytest.raises(UserError, match="'code:domain=\\*' has no cell of at least one sequence \\(9 tokens\\) that its "
                                        "share gives a sequence per batch: the 1,000 training tokens it selects "
                                        "have a null"):
        expand(spec({"code:domain=*": 1.0}), connection(), NAMES)


def test_a_cell_is_shown_with_its_domains_name():
    assert cell_label("web:domain=3,quality_bucket=2", NAMES) == "web:domain=3,quality_bucket=2 (math)"
    assert cell_label("web:domain=2", NAMES) == "web:domain=2" and cell_label("web", NAMES) == "web"


def test_the_plan_shows_a_wildcards_cells_under_their_totals_with_domain_names():
    from loom.cli.mix import plan_lines

    row = lambda component, share, tokens: {"phase": "pretrain", "component": component, "target_share": share,  # noqa: E731
                                            "realized_share": share, "tokens": tokens, "available_tokens": 10 * tokens}
    rows = [row("web:domain=2", 0.25, 100), row("web:domain=3", 0.25, 100), row("code", 0.5, 200)]
    meta = {"cells": {"web:domain=*": {"cells": ["web:domain=2", "web:domain=3"], "left_out_tokens": 0}},
            "domain_names": NAMES}
    lines = plan_lines(rows, meta)
    assert [shown for _, shown in lines] == [
        ("pretrain", "web:domain=* (2 cells)", "0.500", "0.500", "200", "", "2,000"),
        "  web:domain=2", "  web:domain=3 (math)", "code"]


# ---- built on the curated slice (languages; no quality buckets, no domains) -----------------------------

CELLS_SPEC = """seq_len = 32
global_batch = 16
total_tokens = 20_000
[weights]
"web:lang=*" = 0.6
docs = 0.4
[midtrain]
docs = 1.0
"""


@pytest.fixture(scope="module")
def cells_ws(tmp_path_factory, curated_slice, slice_tokenizer):
    return copy_curated(curated_slice, slice_tokenizer, tmp_path_factory.mktemp("cellsws") / "ws")


def test_a_wildcard_builds_one_component_per_non_empty_cell_with_the_plans_tokens(cells_ws):
    write_spec(cells_ws, "cells", CELLS_SPEC)
    result = run_loom("-w", cells_ws, "mix", "build", "cells")
    out = compiled(cells_ws, "cells")
    meta = json.loads((out / "schedule.json").read_text())
    documents = pq.read_table(published(cells_ws) / "manifest" / "documents").to_pylist()
    held = {(r["shard"], r["row"]) for r in pq.read_table(out / "validation.parquet").to_pylist()}
    training = {}
    for d in documents:
        if d["source"] == "web" and (d["shard"], d["row"]) not in held:
            training[d["lang"]] = training.get(d["lang"], 0) + d["n_tokens"]
    cells = [f"web:lang={lang}" for lang in sorted(training)]
    assert len(cells) >= 2 and meta["cells"]["web:lang=*"]["cells"] == cells
    assert [c["key"] for c in meta["components"]] == cells + ["docs"]
    plan = [r for r in pq.read_table(out / "plan.parquet").to_pylist() if r["phase"] == "pretrain"]
    assert {r["component"]: r["available_tokens"] for r in plan if r["component"] != "docs"} == \
        {f"web:lang={lang}": t for lang, t in training.items()}
    whole = sum(training.values())
    for r in plan:
        if r["component"] != "docs":
            assert math.isclose(r["weight"], 0.6 * r["available_tokens"] / whole)
    assert 'weights = { "web:lang=*" = 0.6' in (out / "mixture.toml").read_text()  # the user's form
    assert f"Cells of 'web:lang=*': {len(cells)}" in result.stdout
    shown = run_loom("-w", cells_ws, "mix", "show", "cells").stdout
    assert f"web:lang=* ({len(cells)} cells)" in shown and all(f"  {cell} " in shown for cell in cells)


@needs_chromium()
def test_the_mixture_report_lists_the_cells_largest_first(cells_ws, tmp_path):
    if not (cells_ws / "mixtures" / "cells" / "report.html").exists():
        write_spec(cells_ws, "cells", CELLS_SPEC)
        run_loom("-w", cells_ws, "mix", "build", "cells")
    dom, console = open_page(cells_ws / "mixtures" / "cells" / "report.html", tmp_path)
    assert console == "", console
    plan = pq.read_table(compiled(cells_ws, "cells") / "plan.parquet").to_pylist()
    tokens = {}
    for r in plan:
        if r["component"].startswith("web:lang="):
            tokens[r["component"]] = tokens.get(r["component"], 0) + r["tokens"]
    ranked = sorted(tokens, key=lambda cell: (-tokens[cell], cell))
    assert [int(r[1]) for r in dom.tables["cells-0"] if r] == [tokens[cell] for cell in ranked]
    text = (cells_ws / "mixtures" / "cells" / "report.html").read_text()
    table = text[text.index('id="cells-0"'):]
    assert sorted(ranked, key=lambda cell: table.index(f"<td>{cell}</td>")) == ranked  # names in the same order


def test_a_domain_slice_without_domains_fails_in_one_line_before_anything_is_written(cells_ws):
    write_spec(cells_ws, "bydomain", CELLS_SPEC.replace("lang=*", "domain=3"))
    result = run_loom("-w", cells_ws, "mix", "build", "bydomain", check=False)
    lines = result.stderr.strip().splitlines()
    assert result.returncode == 2 and len(lines) == 1, result.stderr
    assert "the curated data has no domains; add a [domains] table to sources.toml" in lines[0]
    assert not list((cells_ws / "mixtures" / "bydomain").glob("builds/*"))


# ---- domains end to end: the slice curated with [domains] (needs curation's domains stage) --------------

DOMAIN_CELLS = """seq_len = 32
global_batch = 64
total_tokens = 20_000
[weights]
"docs:domain=*" = 0.5
"docs:domain=first" = 0.1
"web:domain=*" = 0.1
code = 0.3
[midtrain]
docs = 1.0
"""


def test_domain_cells_build_from_curated_domains_with_names_shown(domains_slice):
    ws = domains_slice[0]
    write_spec(ws, "domains", DOMAIN_CELLS)
    result = run_loom("-w", ws, "mix", "build", "domains")
    meta = json.loads((compiled(ws, "domains") / "schedule.json").read_text())
    held = {(r["shard"], r["row"]) for r in pq.read_table(compiled(ws, "domains") / "validation.parquet").to_pylist()}
    training = {}
    for d in pq.read_table(published(ws) / "manifest" / "documents").to_pylist():
        if d["source"] == "docs" and (d["shard"], d["row"]) not in held:
            training[d["domain"]] = training.get(d["domain"], 0) + d["n_tokens"]
    # a cell holds one sequence (33 tokens) and gets one of the 32 sequences per batch its wildcard's 0.5 gives
    cells = [f"docs:domain={d}" for d in sorted(training)
             if training[d] >= 33 and training[d] * 32 >= sum(t for t in training.values() if t >= 33)]
    assert len(cells) >= 2 and meta["cells"]["docs:domain=*"]["cells"] == cells
    assert meta["domain_names"] == {"1": "first"}
    keys = [c["key"] for c in meta["components"]]
    assert keys[:len(cells)] == cells and keys[-2:] == ["code", "docs"] and "docs:domain=first" not in keys
    plan = {r["component"]: r for r in pq.read_table(compiled(ws, "domains") / "plan.parquet").to_pylist()
            if r["phase"] == "pretrain"}
    whole = sum(training[int(c.split("=")[1])] for c in cells)
    assert math.isclose(plan["docs:domain=1"]["weight"], 0.5 * training[1] / whole + 0.1)  # 'first' is domain 1
    shown = run_loom("-w", ws, "mix", "show", "domains").stdout
    assert "docs:domain=1 (first)" in shown and f"docs:domain=* ({len(cells)} cells)" in shown
    assert f"Cells of 'docs:domain=*': {len(cells)}" in result.stdout
