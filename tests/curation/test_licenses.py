"""A source's licence, origin and citation in sources.toml: the licence checked and spelt as SPDX spells it (pure),
and what a change to them redoes (the stages' fingerprints, planned without a cluster)."""

import dataclasses

import pytest

from base.errors import UserError
from base.workspace import Workspace
from curation.config import load_config
from curation.job import plan_job
from curation.licenses import allows, spdx_license
from curation.publish import generation_id
from curation.run import stage_fingerprints


@pytest.mark.parametrize("given, stored", [
    ("MIT", "MIT"), ("mit", "MIT"), ("Unknown", "unknown"), ("gpl-2.0+", "GPL-2.0-or-later"),
    ("GPL-2.0+ or CC-BY-SA-3.0", "GPL-2.0-or-later OR CC-BY-SA-3.0"),
    ("apache-2.0 WITH llvm-exception", "Apache-2.0 WITH LLVM-exception"),
    ("LicenseRef-our-crawl", "LicenseRef-our-crawl"),
])
def test_a_licence_is_stored_as_spdx_spells_it(given, stored):
    assert spdx_license(given, "sources.toml: source 'web'") == stored


@pytest.mark.parametrize("given, message", [
    ("MITT", "`license` = 'MITT': 'MITT' is no SPDX licence id (did you mean 'MIT'?); use an SPDX licence id"),
    ("cc-by-sa-4", "'cc-by-sa-4' is no SPDX licence id (did you mean 'CC-BY-SA-4.0'?)"),
    ("GPL-3+", "'GPL-3+' is no SPDX licence id (did you mean 'GPL-3.0-or-later'?)"),  # Debian's copyright files'
    ("GPL-2", "'GPL-2' is no SPDX licence id (did you mean 'GPL-2.0-only'?)"),
    ("Expat", "'Expat' is no SPDX licence id (did you mean 'MIT'?)"),
    ("MIT OR", "`license` = 'MIT OR' is not a licence expression"),
    ("public domain", "'public domain' is no SPDX licence id"),
    ("LLVM-exception", "an exception in a \"WITH exception\" statement"), (3, "`license` must be a non-empty string"),
])
def test_a_wrong_licence_is_one_line_naming_the_source(given, message):
    with pytest.raises(UserError) as err:
        spdx_license(given, "sources.toml: source 'web'")
    line = str(err.value)
    assert line.startswith("sources.toml: source 'web': ") and message in line and "\n" not in line
    assert line.endswith('a LicenseRef-NAME of your own, or "unknown"')


def test_allow_licenses_admits_an_or_by_either_side_and_an_and_only_by_both():
    assert allows(["MIT"], "MIT") and allows(["CC-BY-SA-3.0"], "GPL-2.0-or-later OR CC-BY-SA-3.0")
    assert not allows(["MIT"], "MIT AND Apache-2.0") and allows(["MIT", "Apache-2.0"], "MIT AND Apache-2.0")
    assert not allows(["MIT"], "unknown") and allows(["unknown"], "unknown")


def test_origin_and_citation_must_be_text(tmp_path):
    (tmp_path / "a.jsonl").write_text('{"text": "hello"}\n')
    (tmp_path / "sources.toml").write_text('[[source]]\nname = "a"\nformat = "jsonl"\npaths = ["a.jsonl"]\n'
                                           'origin = 3\n')
    with pytest.raises(UserError, match=r"source 'a': `origin` must be a string"):
        load_config(tmp_path / "sources.toml")


def test_a_changed_licence_redoes_tokenize_of_its_source_alone_and_a_citation_only_the_generation(
        tmp_path, slice_sources, slice_tokenizer):
    config = load_config(slice_sources)
    ws = Workspace(tmp_path / "ws")

    def fingerprints(**changes):
        sources = [dataclasses.replace(s, **changes) if s.name == "docs" else s for s in config.sources]
        shards, ctx = plan_job(dataclasses.replace(config, sources=sources), ws, slice_tokenizer)
        by_stage = {stage.name: fingerprint for stage, fingerprint, _ in stage_fingerprints(shards, ctx)}
        stats = {s.key: {"fingerprint": by_stage["tokenize"][s.key]} for s in shards}
        return by_stage, generation_id(ctx, shards, stats)

    (before, generation), (relicensed, _), (cited, cited_generation) = (
        fingerprints(), fingerprints(license="MIT", origin="elsewhere"), fingerprints(citation="Someone, 2026"))
    assert {stage: relicensed[stage] == before[stage] for stage in before} == {
        stage: stage != "tokenize" for stage in before}  # dedup, quality and the rest are not redone
    assert {key: relicensed["tokenize"][key] != value for key, value in before["tokenize"].items()} == {
        key: key.startswith("docs") for key in before["tokenize"]}
    assert cited == before and cited_generation != generation  # the manifest is published again, nothing redone
