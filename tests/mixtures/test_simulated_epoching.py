"""Simulated epoching (MixtureSpec.target_tokens): a rung of a ladder reads each component from a pool cut to
its share of the target run, as many times as the target run reads all of it."""

import dataclasses
import hashlib
import json
import tomllib

import numpy as np
import pyarrow.parquet as pq
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from helpers import compiled, GOOD_SPEC, copy_curated, run_loom, write_spec
from base.errors import UserError
from base.workspace import Workspace
from mixtures import Schedule, compile_mixture, load_spec
from mixtures.spec import parse_spec

TWO_PHASES = [{"name": "pretrain", "start_step": 0, "end_step": 24, "counts": [2, 3, 3]},
              {"name": "midtrain", "start_step": 24, "end_step": 30, "counts": [4, 0, 4]}]


def three_components(pools=None) -> dict:
    """schedule.json of a 30-step schedule of three components; `pools` None leaves out the key, as a schedule
    compiled before simulated epoching does."""
    components = [{"key": k, "available_sequences": a} for k, a in (("a", 7), ("b", 50), ("c", 1000))]
    for component, pool in zip(components, pools or ()):
        component["pool_sequences"] = pool
    return {"seed": 5, "global_batch": 8, "steps": 30, "components": components, "phases": TWO_PHASES}


def every_batch(schedule: Schedule) -> list:
    return [schedule.batch(step) for step in range(schedule.steps)]


def uses_of(schedule: Schedule, key: str) -> list[int]:
    return [sequence for batch in every_batch(schedule) for k, sequence in batch if k == key]


# ---- the schedule ----------------------------------------------------------------------------------------------


def test_a_schedule_without_pools_gives_the_batches_it_gave_before_pools_existed():
    # the hash of every batch as the code before simulated epoching computed them (commit 464669f)
    before = "887342831f8b8b0abb3dbd9d70bd2081708b2bb12554ff025ab1f4fbb9be818b"
    for meta in (three_components(), three_components(pools=[7, 50, 1000])):
        batches = every_batch(Schedule(meta))
        assert hashlib.sha256(json.dumps(batches).encode()).hexdigest() == before


def test_a_pool_is_read_epoch_by_epoch_and_spread_over_the_whole_component():
    schedule = Schedule(three_components(pools=[3, 5, 20]))
    for key, pool in (("a", 3), ("b", 5), ("c", 20)):
        uses = uses_of(schedule, key)
        epochs = [uses[i : i + pool] for i in range(0, len(uses) - pool + 1, pool)]
        assert len(epochs) >= 4 and all(set(epoch) == set(epochs[0]) and len(epoch) == pool for epoch in epochs)
        assert len({tuple(epoch) for epoch in epochs}) > 1  # each epoch reshuffled
    assert max(uses_of(schedule, "c")) >= 20  # not just the first `pool` sequences


def test_a_pool_is_a_uniform_subset_of_its_component():
    available, pool = 100_000, 5_000
    meta = {"seed": 1, "global_batch": 100, "steps": pool // 100, "components": [
        {"key": "c", "available_sequences": available, "pool_sequences": pool}],
        "phases": [{"name": "only", "start_step": 0, "end_step": pool // 100, "counts": [100]}]}
    uses = np.array(uses_of(Schedule(meta), "c"))
    assert len(set(uses.tolist())) == pool and uses.min() >= 0 and uses.max() < available
    per_tenth = np.bincount(uses * 10 // available, minlength=10)
    assert all(abs(count - pool / 10) < 4 * np.sqrt(pool / 10) for count in per_tenth), per_tenth


@settings(max_examples=15, deadline=None)
@given(st.integers(1, 300), st.integers(0, 2**31), st.data())
def test_with_pools_random_access_equals_iteration(available, seed, data):
    pools = [data.draw(st.integers(1, available)), 7]
    meta = {"seed": seed, "global_batch": 6, "steps": 40, "components": [
        {"key": "x", "available_sequences": available, "pool_sequences": pools[0]},
        {"key": "y", "available_sequences": 50, "pool_sequences": pools[1]}],
        "phases": [{"name": "pretrain", "start_step": 0, "end_step": 32, "counts": [2, 4]},
                   {"name": "midtrain", "start_step": 32, "end_step": 40, "counts": [5, 1]}]}
    schedule = Schedule(meta)
    assert every_batch(schedule) == list(schedule.iterate())
    for key, pool in zip("xy", pools):
        assert len(set(uses_of(schedule, key))) == min(pool, len(uses_of(schedule, key)))


# ---- the spec ------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("value", [0, -5, 1.5, "1e9", True])
def test_a_bad_target_tokens_is_refused_with_one_line(value):
    raw = {"name": "t", "steps": 10, "target_tokens": value, "weights": {"web": 1}}
    with pytest.raises(UserError, match=r"^test: `target_tokens` must be a whole number of at least 1$"):
        parse_spec(raw, "test")


def test_target_tokens_cuts_the_pool_only_above_the_mixtures_own_tokens():
    spec = parse_spec({"name": "t", "steps": 10, "global_batch": 4, "seq_len": 8, "weights": {"web": 1}}, "test")
    assert spec.resolved_tokens() == 320 and spec.pool_sequences(1000) == 1000
    assert dataclasses.replace(spec, target_tokens=320).pool_sequences(1000) == 1000
    assert dataclasses.replace(spec, target_tokens=3200).pool_sequences(1000) == 100
    assert dataclasses.replace(spec, target_tokens=3300).pool_sequences(1000) == 96  # floor(1000 * 320 / 3300)
    assert dataclasses.replace(spec, target_tokens=10**9).pool_sequences(1000) == 1


# ---- compiling against a curated workspace -------------------------------------------------------------------

TARGET_STEPS, RUNG_STEPS = 500, 50  # a tenth, to the step and to the phase switch; web is read ~5 times
TARGET_TOKENS = TARGET_STEPS * 8 * 64  # GOOD_SPEC's global_batch x seq_len


@pytest.fixture(scope="module")
def pool_ws(tmp_path_factory, curated_slice, slice_tokenizer):
    return copy_curated(curated_slice, slice_tokenizer, tmp_path_factory.mktemp("poolws") / "ws")


def good_spec(steps: int, **changes):
    """helpers' GOOD_SPEC, its budget as `steps`."""
    raw = tomllib.loads('name = "good"\n' + GOOD_SPEC.replace("total_tokens = 60_000", f"steps = {steps}"))
    return dataclasses.replace(parse_spec(raw, "good"), **changes)


def compile_to(ws, spec, name: str):
    out = ws / "out" / name
    meta = compile_mixture(spec, Workspace(ws), out)
    return meta, pq.read_table(out / "plan.parquet").to_pylist(), out


def test_a_rung_reads_each_component_as_often_as_its_target(pool_ws):
    target_meta, target_plan, _ = compile_to(pool_ws, good_spec(TARGET_STEPS), "target")
    rung_meta, rung_plan, _ = compile_to(pool_ws, good_spec(RUNG_STEPS, target_tokens=TARGET_TOKENS), "rung")
    for component in rung_meta["components"]:
        assert component["pool_sequences"] == max(1, component["available_sequences"] // 10)
    pools = {c["key"]: c["pool_sequences"] for c in rung_meta["components"]}
    assert all(c["pool_sequences"] == c["available_sequences"] for c in target_meta["components"])
    assert [(r["phase"], r["component"]) for r in rung_plan] == [(r["phase"], r["component"]) for r in target_plan]
    for rung, target in zip(rung_plan, target_plan):
        assert rung["pool_sequences"] == pools[rung["component"]]
        # the same uses over a tenth of the sequences, the tenth rounded down to whole sequences
        assert rung["epochs_cumulative"] == pytest.approx(target["epochs_cumulative"], rel=1 / rung["pool_sequences"])
    schedule = Schedule(rung_meta)
    assert every_batch(schedule) == list(schedule.iterate())
    for key, pool in pools.items():
        uses = uses_of(schedule, key)
        assert len(set(uses)) == min(pool, len(uses))  # within the pool, and all of it once it is read through
        assert max(uses) >= pool  # spread over the component, not its first `pool` sequences
    assert any(len(uses_of(schedule, key)) > 2 * pool for key, pool in pools.items())


def test_a_rung_is_refused_for_too_many_epochs_exactly_when_its_target_is(pool_ws):
    _, target_plan, _ = compile_to(pool_ws, good_spec(TARGET_STEPS), "capped-target")
    most = max(r["epochs_cumulative"] for r in target_plan)
    smallest_pool = min(r["pool_sequences"] for r in target_plan) // 10
    margin = 2 / smallest_pool  # more than the rounding of a pool to whole sequences
    for max_epochs, refused in ((most * (1 + margin), False), (most * (1 - margin), True)):
        for steps, target in ((TARGET_STEPS, None), (RUNG_STEPS, TARGET_TOKENS)):
            spec = good_spec(steps, target_tokens=target, max_epochs=max_epochs)
            if refused:
                with pytest.raises(UserError, match="over max_epochs") as err:
                    compile_to(pool_ws, spec, f"capped-{steps}")
                assert (f"as in the target run of {TARGET_TOKENS:,} tokens" in str(err.value)) == (target is not None)
            else:
                compile_to(pool_ws, spec, f"capped-{steps}")


def test_a_target_of_the_mixtures_own_tokens_changes_nothing(pool_ws):
    plain_meta, plain_plan, plain = compile_to(pool_ws, good_spec(RUNG_STEPS), "plain")
    same_meta, same_plan, same = compile_to(pool_ws, good_spec(RUNG_STEPS, target_tokens=RUNG_STEPS * 8 * 64), "same")
    for meta in (plain_meta, same_meta):
        for component in meta["components"]:
            assert component.pop("pool_sequences") == component["available_sequences"]
    assert json.loads((plain / "schedule.json").read_text())["components"][0]["pool_sequences"] > 0
    assert plain_meta == same_meta and plain_plan == same_plan
    # the schedule as it was written before pools existed gives the same batches as the one written now
    assert every_batch(Schedule(plain_meta)) == every_batch(Schedule.load(plain)) == every_batch(Schedule.load(same))
    assert "target_tokens" not in (plain / "mixture.toml").read_text()
    assert load_spec(same / "mixture.toml").target_tokens == RUNG_STEPS * 8 * 64


def test_mix_build_takes_target_tokens_and_show_prints_the_pools(pool_ws):
    write_spec(pool_ws, "good", GOOD_SPEC)
    built = run_loom("-w", pool_ws, "mix", "build", "good", "--steps", RUNG_STEPS, "--target-tokens", TARGET_TOKENS)
    out = compiled(pool_ws, "good")
    meta = json.loads((out / "schedule.json").read_text())
    assert all(c["pool_sequences"] == max(1, c["available_sequences"] // 10) for c in meta["components"])
    assert load_spec(out / "mixture.toml").target_tokens == TARGET_TOKENS
    assert "Simulated epoching" in built.stdout
    web = next(c for c in meta["components"] if c["key"] == "web")
    shown = run_loom("-w", pool_ws, "mix", "show", "good").stdout
    assert f"{web['pool_sequences']:,} of {web['available_sequences']:,} seq" in shown
    plain = run_loom("-w", pool_ws, "mix", "build", "good").stdout
    assert " seq " not in plain and "Simulated" not in plain
