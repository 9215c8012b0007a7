"""Parts every report shares: one colour per source on every page (slices as shades of their source), and per-source
numbers that come out the same on every build."""

from reports.colors import OTHER, PALETTE, SourceColors, shade, workspace_colors


def test_sources_take_the_palette_in_order_then_distinct_hues():
    names = [f"s{i}" for i in range(300)]
    colors = SourceColors(names)
    assert [colors.of(n) for n in names[:9]] == list(PALETTE[:9])  # the tenth, a grey, is too like "other"
    assert len({colors.of(n) for n in names} | {OTHER}) == 301  # no colour repeats at 300 sources
    assert colors.of("s42") == SourceColors(names).of("s42")


def test_a_slice_is_a_shade_of_its_source_and_a_source_keeps_its_colour():
    colors = SourceColors(["web", "code"])
    keys = ["web", "code", "code:quality_bucket>=3", "code:lang=en"]
    assert colors.of_component("code", ["code"], keys) == PALETTE[1]
    slices = [colors.of_component(k, ["code"], keys) for k in keys[2:]]
    assert len(set(slices)) == 2 and PALETTE[1] not in slices
    assert all(s == shade(PALETTE[1], amount) for s, amount in zip(slices, (0.5, 0.65)))


def test_a_wildcards_many_cells_are_distinct_shades_of_their_source():
    colors = SourceColors(["web"])
    keys = [f"web:domain={d},quality_bucket={b}" for d in range(8) for b in range(5)]
    cells = [colors.of_component(k, ["web"], keys) for k in keys]
    assert len(set(cells)) == len(keys) and PALETTE[0] not in cells


def test_an_unknown_name_has_a_stable_colour_and_an_empty_workspace_has_colours(tmp_path):
    colors = workspace_colors(tmp_path)
    assert colors.of("web") == workspace_colors(tmp_path).of("web")
    assert colors.of("web") != colors.of("code")


def test_a_sources_main_language_breaks_ties_by_name_not_by_chance():
    import duckdb

    from reports.sections import source_stats

    con = duckdb.connect()
    con.sql("CREATE TABLE funnel AS SELECT 'web' AS source, 'kept' AS fate, NULL AS stage FROM range(4)")
    con.sql("""CREATE TABLE doc_stats AS SELECT 'web' AS source, lang, 10 AS n_tokens, 0.5 AS quality
               FROM (VALUES ('fr'), ('en'), ('en'), ('fr'), ('de')) AS t(lang)""")
    for _ in range(20):  # DuckDB's mode() answered 'en' or 'fr' from one run to the next
        assert source_stats(con)["web"].language == "en"


def test_the_source_table_shows_the_share_kept_rounded_down():
    from reports.sections import SourceStats, source_table

    html = source_table({"docs": SourceStats("docs", fates={"kept": 199, "filtered": 1}),
                         "web": SourceStats("web", fates={"kept": 3})})
    assert "<th>kept %</th>" in html or '<th class="num">kept %</th>' in html
    assert 'data-value="99">99<' in html and 'data-value="100">100<' in html  # 199 of 200 is not all
