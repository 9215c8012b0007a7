"""The mixture compiler and its schedule: exact block composition, the phase switch, random access."""

import json
import shutil

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st

from helpers import GOOD_SPEC, compiled, copy_curated, published, run_loom, write_spec
from base.errors import UserError
from base.workspace import Workspace
from mixtures import SequenceIndex, compile_mixture, current_build, load_schedule, load_spec
from mixtures.plan import plan_phases
from mixtures.schedule import Schedule
from mixtures.spec import parse_spec


def synthetic_schedule(shares, available, batch, steps, seed, midtrain_shares=None) -> Schedule:
    keys = [f"c{i}" for i in range(len(shares))]
    raw = {"name": "t", "steps": steps, "global_batch": batch, "seed": seed,
           "weights": dict(zip(keys, shares)), "midtrain": dict(zip(keys, midtrain_shares or shares))}
    spec = parse_spec(raw, "test")
    phases = plan_phases(spec, keys, steps)
    return Schedule({"seed": seed, "global_batch": batch, "steps": steps,
                     "components": [{"key": k, "available_sequences": a} for k, a in zip(keys, available)],
                     "phases": [{k: p[k] for k in ("name", "start_step", "end_step", "counts")} for p in phases]})


schedules = st.builds(
    lambda n, batch, steps, seed, data: (n, batch, steps, seed, data),
    st.integers(1, 4), st.integers(4, 48), st.integers(5, 60), st.integers(0, 2**31), st.data(),
)


def draw_schedule(params, seed_offset=0):
    n, batch, steps, seed, data = params
    shares = data.draw(st.lists(st.integers(1, 10), min_size=n, max_size=n))
    mid = data.draw(st.lists(st.integers(1, 10), min_size=n, max_size=n))
    # every share must be worth one sequence per batch, or the compiler refuses
    if min(s / sum(shares) for s in shares) * batch < 1 or min(s / sum(mid) for s in mid) * batch < 1:
        shares = mid = [1] * n
    available = data.draw(st.lists(st.integers(1, 400), min_size=n, max_size=n))
    return synthetic_schedule(shares, available, batch, steps, seed + seed_offset, mid), shares, mid


@settings(max_examples=40, deadline=None)
@given(schedules)
def test_every_block_holds_each_share_within_one_sequence(params):
    schedule, shares, mid = draw_schedule(params)
    batch = schedule.global_batch
    for step in range(schedule.steps):
        weights = shares if step < schedule.phases[1].start_step else mid
        counts = np.bincount(schedule.slots(step), minlength=len(weights))
        for count, weight in zip(counts, weights):
            assert abs(count - weight / sum(weights) * batch) < 1


@settings(max_examples=40, deadline=None)
@given(schedules)
def test_the_phase_switch_is_at_eighty_percent_of_the_steps(params):
    schedule, *_ = draw_schedule(params)
    assert [p.start_step for p in schedule.phases] == [0, round(0.8 * schedule.steps)]
    assert schedule.phases[-1].end_step == schedule.steps


@settings(max_examples=25, deadline=None)
@given(schedules)
def test_random_access_equals_iteration_and_ranks_see_the_same_batch(params):
    schedule, *_ = draw_schedule(params)
    for step, batch in enumerate(schedule.iterate()):
        assert schedule.batch(step) == batch
        if schedule.global_batch % 2 == 0:
            assert schedule.rank_batch(step, 0, 2) + schedule.rank_batch(step, 1, 2) == batch
        assert schedule.rank_batch(step, 0, 1) == batch


@settings(max_examples=25, deadline=None)
@given(schedules)
def test_the_seed_decides_the_schedule(params):
    schedule, shares, mid = draw_schedule(params)
    n, batch, steps, seed, _ = params
    assume(n > 1 or schedule.available[0] >= 3)  # otherwise there is nothing for a seed to reorder
    again = synthetic_schedule(shares, list(schedule.available), batch, steps, seed, mid)
    other = synthetic_schedule(shares, list(schedule.available), batch, steps, seed + 1, mid)
    everything = lambda s: [s.batch(step) for step in range(s.steps)]  # noqa: E731
    assert everything(schedule) == everything(again)
    assert everything(schedule) != everything(other)


def test_a_small_component_is_reshuffled_each_epoch_and_stops_at_its_epoch_count():
    schedule = synthetic_schedule([1, 3], [5, 10_000], batch=4, steps=15, seed=3, midtrain_shares=[1, 3])
    uses = [seq for step in range(schedule.steps) for key, seq in schedule.batch(step) if key == "c0"]
    assert len(uses) == 15  # one per batch: exactly 3 epochs of its 5 sequences
    epochs = [uses[i : i + 5] for i in range(0, 15, 5)]
    assert all(sorted(epoch) == list(range(5)) for epoch in epochs)
    assert len({tuple(epoch) for epoch in epochs}) == 3  # each epoch in a different order


# ---- compiling against a curated workspace ------------------------------------------------------------


@pytest.fixture(scope="module")
def mix_ws(tmp_path_factory, curated_slice, slice_tokenizer):
    """A copy of the curated slice's workspace with its tokenizer in place."""
    return copy_curated(curated_slice, slice_tokenizer, tmp_path_factory.mktemp("mixws") / "ws")


@pytest.fixture(scope="module")
def built(mix_ws):
    write_spec(mix_ws, "good", GOOD_SPEC)
    result = run_loom("-w", mix_ws, "mix", "build", "good")
    return compiled(mix_ws, "good"), result


def test_build_writes_the_plan_schedule_and_resolved_spec(built, mix_ws):
    out, result = built
    meta = json.loads((out / "schedule.json").read_text())
    steps = round(60_000 / (8 * 64))
    assert meta["steps"] == steps and meta["phases"][1]["start_step"] == round(0.8 * steps)
    plan = pq.read_table(out / "plan.parquet").to_pylist()
    assert sum(row["tokens"] for row in plan) == steps * 8 * 64
    assert {row["component"] for row in plan if row["phase"] == "midtrain"} == {"docs", "web:lang=de"}
    resolved = load_spec(out / "mixture.toml")
    assert resolved.steps == steps and resolved.phases[1].weights == (("docs", 0.5), ("web:lang=de", 0.5))
    assert "Plan of good" in result.stdout
    licenses = pq.read_table(out / "licenses.parquet").to_pylist()  # docs PSF-2.0, code unknown (tests/helpers.py)
    web = "GPL-2.0-or-later OR CC-BY-SA-3.0"
    assert {(r["phase"], r["license"], r["sources"]) for r in licenses} == {
        ("pretrain", web, "web"), ("pretrain", "PSF-2.0", "docs"), ("pretrain", "unknown", "code"),
        ("midtrain", web, "web"), ("midtrain", "PSF-2.0", "docs")}
    for phase in ("pretrain", "midtrain"):
        assert sum(r["tokens"] for r in licenses if r["phase"] == phase) == sum(
            r["tokens"] for r in plan if r["phase"] == phase)
    assert meta["licenses"] == {"code": "unknown", "docs": "PSF-2.0", "web": web}
    assert f"Licences (tokens): {web} " in result.stdout
    page = (mix_ws / "mixtures" / "good" / "report.html").read_text()
    licences_table = page.split('<table id="licenses"')[1].split("</table>")[0]
    assert licences_table.count("<tr>") == 1 + len(licenses) and "GPL-2.0-or-later OR CC-BY-SA-3.0" in licences_table
    shown = run_loom("-w", mix_ws, "mix", "show", "good")
    assert "web:lang=de" in shown.stdout
    listed = run_loom("-w", mix_ws, "mix", "list")
    assert "good" in listed.stdout and "sample" in listed.stdout


def test_sequences_are_the_packed_token_stream_of_their_component(built, mix_ws):
    out, _ = built
    meta = json.loads((out / "schedule.json").read_text())
    web = next(c for c in meta["components"] if c["key"] == "web")
    documents = pq.read_table(published(mix_ws) / "manifest" / "documents").to_pylist()
    held_out = {(d["shard"], d["row"]) for d in pq.read_table(out / "validation.parquet").to_pylist()}
    training = [d for d in documents if d["source"] == "web" and (d["shard"], d["row"]) not in held_out]
    assert 0 < len(training) < sum(d["source"] == "web" for d in documents)
    stream = []
    for doc in sorted(training, key=lambda d: (d["shard"], d["row"])):
        ids = pq.read_table(published(mix_ws) / doc["shard"], columns=["input_ids"])["input_ids"][doc["row"]].as_py()
        stream += ids
    index = SequenceIndex(out / web["file"], meta["seq_len"])
    width = meta["seq_len"] + 1
    assert web["available_sequences"] == len(stream) // width
    for i in (0, 1, web["available_sequences"] // 2, len(stream) // width - 1):
        tokens = []
        for shard, row, start, length in index.locate(i):
            ids = pq.read_table(published(mix_ws) / shard, columns=["input_ids"])["input_ids"][row].as_py()
            tokens += ids[start : start + length]
        assert tokens == stream[i * width : (i + 1) * width]


def test_a_schedule_built_on_other_data_is_refused(built, mix_ws, tmp_path):
    out, _ = built
    layout = Workspace(mix_ws)
    assert load_schedule(out, layout)[0].steps > 0
    changed = tmp_path / "ws"
    shutil.copytree(mix_ws, changed)
    shards = pq.read_table(published(changed) / "manifest" / "shards.parquet")
    fingerprints = pa.array([f + "x" for f in shards["fingerprint"].to_pylist()])
    pq.write_table(shards.set_column(shards.schema.get_field_index("fingerprint"), "fingerprint", fingerprints),
                   published(changed) / "manifest" / "shards.parquet")
    with pytest.raises(UserError, match="built on other curated data"):
        load_schedule(compiled(changed, "good"), Workspace(changed))


ERRORS = [
    ("epochs", GOOD_SPEC.replace("total_tokens = 60_000", "total_tokens = 6_000_000"), "over max_epochs = 8"),
    ("negative", GOOD_SPEC.replace("web = 0.4", "web = -0.4"), "the weight of 'web' is negative"),
    ("zeros", GOOD_SPEC.replace('docs = 0.5\n"web:lang=de" = 0.5', 'docs = 0\n"web:lang=de" = 0'), "every weight is zero"),
    ("fractions", "seq_len = 64\nglobal_batch = 8\ntotal_tokens = 60_000\n[[phase]]\nname = \"a\"\nfraction = 0.7\n"
                  "weights = { web = 1 }\n[[phase]]\nname = \"b\"\nfraction = 0.2\nweights = { docs = 1 }\n",
     "phase fractions sum to 0.9, not 1"),
    ("nomatch", GOOD_SPEC.replace('"web:lang=de"', '"web:lang=xx"'), "weight key 'web:lang=xx' matches no documents"),
    ("unknownkey", GOOD_SPEC.replace('"web:lang=de"', '"blog"'), "weight key 'blog' is not a source, a tag or a slice"),
    ("tokenizer", 'tokenizer = "other.json"\n' + GOOD_SPEC, "differs from the one the data was curated with"),
    ("badspec", "seq_len = 64\nglobal_batch = 8\n[weights]\nweb = 1\n", "give exactly one of `total_tokens` or `steps`"),
    ("licences", 'allow_licenses = ["psf-2.0", "CC-BY-SA-3.0"]\n' + GOOD_SPEC,  # web's is an OR: CC-BY-SA-3.0 does
     "allow_licenses (PSF-2.0, CC-BY-SA-3.0) does not allow source 'code' (unknown); drop it from the weights"),
]


@pytest.mark.parametrize("name, body, message", ERRORS, ids=[e[0] for e in ERRORS])
def test_each_bad_mixture_is_refused_with_one_line(mix_ws, name, body, message, tmp_path):
    if name == "tokenizer":
        from curation.tokenizer import train_tokenizer

        train_tokenizer(["another tokenizer, trained on other text"] * 50, mix_ws / "other.json", vocab_size=300)
    write_spec(mix_ws, name, body)
    result = run_loom("-w", mix_ws, "mix", "build", name, check=False)
    lines = result.stderr.strip().splitlines()
    assert result.returncode == 2 and len(lines) == 1 and message in lines[0], result.stderr
    assert not (mix_ws / "mixtures" / name / "current.json").exists()
    assert not list((mix_ws / "mixtures" / name).glob("builds/*"))


def test_an_unknown_mixture_name_lists_the_known_ones(mix_ws):
    result = run_loom("-w", mix_ws, "mix", "build", "nosuch", check=False)
    assert result.returncode == 2 and "no mixture named 'nosuch'; known:" in result.stderr and "sample" in result.stderr


def test_a_spec_named_other_than_its_file_is_refused_and_one_without_a_name_takes_its_file_s(tmp_path):
    ws = tmp_path / "ws"
    ws.mkdir()
    write_spec(ws, "bad", "seq_len = 64\nsteps = 4\n[weights]\nweb = 1\n").write_text(
        'name = "bad2"\nseq_len = 64\nsteps = 4\n[weights]\nweb = 1\n')
    result = run_loom("-w", ws, "mix", "build", "bad", check=False)
    assert result.returncode == 2 and result.stderr.startswith(
        f"error: mixture spec {ws / 'mixtures' / 'bad.toml'} is named 'bad2', not 'bad' as its file: rename the file "
        'to bad2.toml, set name = "bad", or drop `name`'), result.stderr
    assert not (ws / "mixtures" / "bad2").exists()
    (ws / "mixtures" / "unnamed.toml").write_text("seq_len = 64\nsteps = 4\n[weights]\nweb = 1\n")
    assert load_spec(ws / "mixtures" / "unnamed.toml").name == "unnamed"
    (tmp_path / "elsewhere.toml").write_text('name = "other"\nseq_len = 64\nsteps = 4\n[weights]\nweb = 1\n')
    assert load_spec(tmp_path / "elsewhere.toml").name == "other"  # a path given outside mixtures/ names itself


def test_a_mixture_compiled_before_builds_is_read_as_it_is_then_rebuilt_as_a_build(built, mix_ws):
    write_spec(mix_ws, "legacy", GOOD_SPEC)
    folder = mix_ws / "mixtures" / "legacy"
    compile_mixture(load_spec(mix_ws / "mixtures" / "legacy.toml"), Workspace(mix_ws), folder)  # the old layout
    assert current_build(folder).id == "" and load_schedule(folder, Workspace(mix_ws))[0].steps > 0
    assert "Plan of legacy" in run_loom("-w", mix_ws, "mix", "show", "legacy").stdout
    query = "SELECT DISTINCT p.mixture FROM mixture_plan p JOIN mixture_documents d USING (mixture) ORDER BY 1"
    assert run_loom("-w", mix_ws, "sql", query, "--format", "csv").stdout.split() == ["mixture", "good", "legacy"]
    run_loom("-w", mix_ws, "mix", "build", "legacy")
    build = current_build(folder)
    assert build.id and build.schedule.is_file() and not (folder / "schedule.json").exists()


def test_allow_licenses_is_spelt_as_spdx_and_kept_in_the_resolved_spec(tmp_path):
    from mixtures.spec import to_toml

    spec = parse_spec({"name": "m", "steps": 4, "weights": {"web": 1}, "allow_licenses": ["mit", "Unknown", "MIT"]},
                      "m.toml")
    assert spec.allow_licenses == ("MIT", "unknown")
    (tmp_path / "m.toml").write_text(to_toml(spec, {"steps": 4}, "test"))
    assert load_spec(tmp_path / "m.toml").allow_licenses == ("MIT", "unknown")
    with pytest.raises(UserError, match=r"m.toml: `allow_licenses` = 'BSD': 'BSD' is no SPDX licence id"):
        parse_spec({"name": "m", "steps": 4, "weights": {"web": 1}, "allow_licenses": ["BSD"]}, "m.toml")


def test_a_components_tokens_split_over_its_licences_add_up_to_the_plans():
    from mixtures.licenses import license_rows

    plan = [{"phase": "a", "component": "tag:docs", "tokens": 1001}, {"phase": "a", "component": "web", "tokens": 7}]
    recorded = {"docs": {"license": "PSF-2.0"}, "reference": {"license": "GPL-2.0-or-later"}}  # web: none recorded
    rows = license_rows(plan, {"tag:docs": {"docs": 2, "reference": 1}, "web": {"web": 5}}, recorded)
    assert sorted((r["license"], r["tokens"], r["sources"]) for r in rows) == [
        ("GPL-2.0-or-later", 334, "reference"), ("PSF-2.0", 667, "docs"), ("unknown", 7, "web")]
