"""The trainer on CPU: real gloo process groups (2 ranks, one thread each), real DCP checkpoints, real runs of
`loom train` on a mixture of the curated slice."""

import json

import pytest
import torch
import torch.nn.functional as F

import loom

from helpers import (
    Interrupt, compiled, LOOM_SCRIPT, TINY_MODEL, copy_curated, on_two_gloo_ranks, run_loom, training_spec, write_spec,
)
from base.workspace import Workspace
from mixtures import load_schedule
from base.errors import UserError
from trainer.config import LRSchedule, TrainConfig, cooldown_plan, lr_schedule, model_config
from trainer.cooldowns import budget_switch, stream_step
from trainer.data import RankLoader, SequenceReader
from trainer.distributed import Ranks, local, wrap
from trainer.metrics import keep_metrics_before, read_metrics_counted
from trainer.model import Transformer
from trainer.norms import GroupNorms

SPEC = training_spec(12)
SMALL = [*TINY_MODEL, "--checkpoint-every", 6, "--eval-every", 4,
         "--report-every", 4, "--warmup-steps", 2]


@pytest.fixture(scope="module")
def train_ws(tmp_path_factory, curated_slice, slice_tokenizer):
    ws = copy_curated(curated_slice, slice_tokenizer, tmp_path_factory.mktemp("trainws") / "ws")
    write_spec(ws, "tinymix", SPEC)
    run_loom("-w", ws, "mix", "build", "tinymix")
    return ws


def metrics(ws, run: str) -> list[dict]:
    return [json.loads(line) for line in (ws / "runs" / run / "metrics.jsonl").read_text().splitlines()]


def train(ws, run: str, *args, check=True, **kwargs):
    return run_loom("-w", ws, "train", "--mixture", "tinymix", "--run-name", run, *SMALL, *args, check=check, **kwargs)


@pytest.fixture(scope="module")
def runs(train_ws):
    """One run straight, the same on 2 ranks (DDP, and FSDP2 for 6 steps), and stopped at step 6 then resumed."""
    train(train_ws, "one")
    # started from inside the workspace, with the `loom` script, as a user would: its mixtures/ folder must not be
    # taken for the package by the ranks
    train(train_ws, "two", "--nproc", 2, cwd=train_ws, command=LOOM_SCRIPT)
    train(train_ws, "fsdp", "--nproc", 2, "--fsdp", "--max-steps", 6)
    train(train_ws, "resumed", "--max-steps", 6)
    first_half = metrics(train_ws, "resumed")
    train(train_ws, "resumed", "--resume")
    return train_ws, first_half


# ---- gradients under DDP and FSDP2 against one process ------------------------------------------------


def _compare_gradients(ranks: Ranks):
    ids = torch.randint(0, 300, (8, 17), generator=torch.Generator().manual_seed(5))
    mine = ids.chunk(ranks.world_size)[ranks.rank]
    for size in ("tiny", "tiny-moe"):
        config = model_config(size, 300, d_model=32)

        def fresh():
            torch.manual_seed(0)
            return Transformer(config, 16)

        def loss(model, batch):
            logits = model(batch[:, :-1])
            return F.cross_entropy(logits.reshape(-1, 300), batch[:, 1:].reshape(-1))

        reference = fresh()
        loss(reference, ids).backward()
        expected = {n: p.grad for n, p in reference.named_parameters()}
        reference_norms = GroupNorms(reference, sharded=False)
        expected_norms = reference_norms.named(reference_norms.gradients())
        for fsdp in (False, True):
            model = fresh()
            wrapped = wrap(model, ranks, fsdp)
            loss(wrapped, mine).backward()
            norms = GroupNorms(model, sharded=fsdp)  # the group norms the metrics report, from shards
            assert norms.named(norms.gradients()) == pytest.approx(expected_norms, rel=1e-4)
            for name, p in model.named_parameters():
                grad = p.grad.full_tensor() if hasattr(p.grad, "full_tensor") else p.grad
                assert torch.allclose(grad, expected[name], rtol=1e-4, atol=1e-6), \
                    (size, "fsdp" if fsdp else "ddp", name, (grad - expected[name]).abs().max().item())


def test_ddp_and_fsdp2_gradients_equal_one_process_on_the_whole_batch(tmp_path):
    on_two_gloo_ranks(_compare_gradients, tmp_path)


# ---- whole runs ---------------------------------------------------------------------------------------


def test_two_ranks_give_the_losses_of_one(runs):
    ws, _ = runs
    one, two = metrics(ws, "one"), metrics(ws, "two")
    assert [r["step"] for r in one] == [r["step"] for r in two] == list(range(12))
    # not bitwise: the mean over two ranks' gradients sums in another order than one process's mean
    for a, b in zip(one, two):
        assert a["loss"] == pytest.approx(b["loss"], rel=1e-5)
        assert a["tokens_by_source"] == b["tokens_by_source"]
    assert one[-1]["val_loss"] == pytest.approx(two[-1]["val_loss"], rel=1e-5)
    for a, b in zip(one, metrics(ws, "fsdp"), strict=False):  # FSDP2: sharded weights, the same run
        assert a["loss"] == pytest.approx(b["loss"], rel=1e-5)
        assert a["grad_norm"] == pytest.approx(b["grad_norm"], rel=1e-4)
        assert a["update_norm_by_group"] == pytest.approx(b["update_norm_by_group"], rel=1e-3)
    assert one[-1]["loss"] < one[0]["loss"] - 0.2  # it learns


def test_stopping_and_resuming_gives_the_same_run_bitwise(runs):
    ws, first_half = runs
    straight, resumed = metrics(ws, "one"), metrics(ws, "resumed")
    assert [r["step"] for r in first_half] == list(range(6))
    assert [r["step"] for r in resumed] == list(range(12))  # no step twice in the metrics file
    for key in ("loss", "lr", "grad_norm", "loss_by_source", "update_norm_by_group", "tokens_seen"):
        assert [r[key] for r in resumed] == [r[key] for r in straight], key
    assert resumed[-1]["val_loss_by_source"] == straight[-1]["val_loss_by_source"]
    run = json.loads((ws / "runs" / "resumed" / "run.json").read_text())
    assert run["status"] == "finished"


def test_the_phase_switch_and_the_lr_decay_start_at_the_mixtures_step(runs):
    ws, _ = runs
    meta = json.loads((compiled(ws, "tinymix") / "schedule.json").read_text())
    switch = meta["phases"][1]["start_step"]
    assert switch == round(0.8 * 12)
    records = metrics(ws, "one")
    assert [r["phase"] for r in records] == ["pretrain"] * switch + ["midtrain"] * (12 - switch)
    lrs = [r["lr"] for r in records]
    assert lrs[1] == lrs[switch - 1] == 3e-3  # warmup over, flat until the switch
    assert all(a > b for a, b in zip(lrs[switch - 1:], lrs[switch:]))  # decaying from the switch on
    assert lrs[-1] == pytest.approx(3e-4)
    midtrain = [r for r in records if r["phase"] == "midtrain"]
    assert all(set(r["tokens_by_source"]) == {"docs", "code"} for r in midtrain)
    assert all(r["share_by_component"]["web"] == 0 and r["target_share_by_component"]["docs"] == 0.6 for r in midtrain)


def test_per_source_losses_average_back_to_the_loss(runs):
    ws, _ = runs
    records = metrics(ws, "one")
    for r in records:
        tokens = r["tokens_by_source"]
        assert sum(tokens.values()) == 8 * 32
        weighted = sum(r["loss_by_source"][s] * n for s, n in tokens.items()) / sum(tokens.values())
        assert weighted == pytest.approx(r["loss"], rel=1e-9)
    validated = [r for r in records if "val_loss" in r]
    assert [r["step"] for r in validated] == [3, 7, 11]
    assert set(validated[-1]["val_loss_by_source"]) == {"web", "docs", "code", "fortunes"}


def test_every_step_reports_norms_throughput_and_mfu(runs):
    ws, _ = runs
    record = metrics(ws, "two")[5]
    groups = {"embed", "norm", "layers.0.attn", "layers.0.ffn", "layers.1.attn", "layers.1.ffn"}
    assert groups <= set(record["param_norm_by_group"]) and groups <= set(record["update_norm_by_group"])
    assert record["grad_norm"] == pytest.approx(sum(v**2 for v in record["grad_norm_by_group"].values()) ** 0.5)
    assert record["tokens_per_second"] > 0 and record["flops_per_second"] > 0 and 0 <= record["data_wait_fraction"] < 1
    assert record["mfu"] is None  # no known peak on CPU without --peak-tflops (tests/trainer/test_throughput.py)


@pytest.mark.slow  # a rebuilt mixture and three runs (~32 s)
def test_a_run_is_not_overwritten_and_a_changed_mixture_is_not_resumed(runs):
    ws, _ = runs
    again = train(ws, "one", check=False)
    assert again.returncode == 2 and "already exists" in again.stderr and "--resume" in again.stderr
    rebuilt = run_loom("-w", ws, "mix", "build", "tinymix", "--steps", 14)
    orphaned = next(line for line in rebuilt.stdout.splitlines() if line.startswith("note: runs "))
    assert "one" in orphaned and "cannot be resumed" in orphaned and "under another name" in orphaned
    changed = train(ws, "one", "--resume", check=False)
    assert changed.returncode == 2 and "schedule fingerprint" in changed.stderr
    assert "Traceback" not in changed.stderr
    missing = run_loom("-w", ws, "train", "--mixture", "nosuch", check=False)
    assert missing.returncode == 2 and "loom mix build nosuch" in missing.stderr
    unnamed = run_loom("-w", ws, "train", check=False)
    assert unnamed.returncode == 2 and "Missing option '--mixture'" in unnamed.stderr
    assert "Traceback" not in unnamed.stderr
    for bad, says in ((["--nproc", 3], "does not split over 3 ranks"), (["--n-heads", 3], "into 3 heads")):
        refused = train(ws, "bad", *bad, check=False)
        assert refused.returncode == 2 and says in refused.stderr and "Traceback" not in refused.stderr
    assert not (ws / "runs" / "bad").exists()


# ---- pieces -------------------------------------------------------------------------------------------


def test_ranks_read_disjoint_halves_of_the_one_rank_batch(train_ws):
    schedule, data = load_schedule(compiled(train_ws, "tinymix"), Workspace(train_ws))
    sources = sorted({s for c in schedule.meta["components"] for s in c["sources"]})
    reader = SequenceReader(schedule, compiled(train_ws, "tinymix"), data, sources)
    whole = list(RankLoader(schedule, reader, 0, 1, 3, 5))
    halves = [list(RankLoader(schedule, reader, r, 2, 3, 5)) for r in (0, 1)]
    for step, batch in enumerate(whole):
        assert torch.equal(torch.cat([halves[0][step].inputs, halves[1][step].inputs]), batch.inputs)
        assert torch.equal(batch.inputs[:, 1:], batch.targets[:, :-1])
        assert batch.inputs.shape == (8, 32)
        for row, (key, _) in enumerate(schedule.batch(batch.step)):
            component_sources = {sources.index(s) for s in schedule.meta["components"][schedule.components.index(key)]["sources"]}
            assert set(batch.sources[row].tolist()) <= component_sources


def test_wsd_schedule_decays_from_the_given_step():
    lr = lr_schedule(TrainConfig(workspace=".", mixture="m", lr=1.0, warmup_steps=4, min_lr_ratio=0.1), 100, 80)
    assert lr == LRSchedule(1.0, 100, 4, 80, 0.1)
    assert [lr(s) for s in range(4)] == [0.25, 0.5, 0.75, 1.0]
    assert lr(79) == 1.0 and lr(80) < 1.0 and lr(99) == pytest.approx(0.1)


def test_a_config_of_before_wsd_keeps_every_lr_and_budgets_share_the_warmup():
    def before(step, peak=3e-3, steps=1000, warmup=50, decay_start=800, floor=0.1):  # the schedule as it was
        if step < warmup:
            return peak * (step + 1) / warmup
        if step < decay_start:
            return peak
        return peak * (1 - (1 - floor) * min(1.0, (step - decay_start + 1) / max(1, steps - decay_start)))

    lr = lr_schedule(TrainConfig(workspace=".", mixture="m"), 1000, 800)
    assert [lr(s) for s in range(1000)] == [before(s) for s in range(1000)]
    budget = lr_schedule(TrainConfig(workspace=".", mixture="m", budget_steps=500), 1000, 800)
    assert budget == LRSchedule(3e-3, 500, 50, 400, 0.1)  # the mixture's warmup, its mid-training share (20%)
    assert budget(499) == pytest.approx(3e-4)
    quarter = lr_schedule(TrainConfig(workspace=".", mixture="m", decay_fraction=0.25), 1000, 800)
    assert quarter.decay_start == 750 and quarter(749) == 3e-3 and quarter(999) == pytest.approx(3e-4)
    cosine = lr_schedule(TrainConfig(workspace=".", mixture="m", schedule="cosine", lr=1.0, warmup_steps=10), 110, 80)
    assert cosine(9) == 1.0 and cosine(59) == pytest.approx(0.55) and cosine(109) == pytest.approx(0.1)
    assert all(a > b for a, b in zip(map(cosine, range(10, 109)), map(cosine, range(11, 110))))
    plan = cooldown_plan(TrainConfig(workspace=".", mixture="m", cooldowns=(0.5, 0.25)), 1000, 800)
    assert [(c.budget, c.branch_step, c.config.name) for c in plan] == [(250, 200, "m-tiny-cooldown-250"),
                                                                       (500, 400, "m-tiny-cooldown-500")]
    assert lr_schedule(plan[1].config, 1000, 800) == budget
    # every budget keeps the mixture's 80/20 split: its last 20% reads the mid-training phase from its first batch
    assert budget_switch(500, 1000, 800) == 400 and budget_switch(1000, 1000, 800) == 800
    assert [stream_step(s, 400, 800) for s in (0, 399, 400, 499)] == [0, 399, 800, 899]
    assert budget_switch(500, 1000, 0) == 0 and stream_step(499, 0, 0) == 499  # one phase: read as it is
    early = cooldown_plan(TrainConfig(workspace=".", mixture="m", cooldowns=(0.5,), decay_fraction=0.1), 1000, 800)
    assert early[0].branch_step == 400  # its switch (step 400) comes before its decay (step 450)
    with pytest.raises(UserError, match="^mixture 'm' has one phase, so its LR decays over the whole run"):
        cooldown_plan(TrainConfig(workspace=".", mixture="m", cooldowns=(0.5,)), 1000, 0)
    with pytest.raises(UserError, match="^--budget-steps 1001 is above the 1000 steps of mixture 'm'"):
        lr_schedule(TrainConfig(workspace=".", mixture="m", budget_steps=1001), 1000, 800)
    with pytest.raises(UserError, match="^--cooldowns 0.5,0.5004 of 1000 steps gives 1 distinct budget"):
        cooldown_plan(TrainConfig(workspace=".", mixture="m", cooldowns=(0.5, 0.5004)), 1000, 800)


def test_router_bias_moves_without_gradients_and_shows_in_the_group_norms():
    torch.manual_seed(0)
    model = Transformer(model_config("tiny-moe", 300, d_model=32), 16)
    moe = model.moe_layers()[0]
    assert "router_bias" not in dict(moe.named_parameters()) and not moe.router_bias.requires_grad
    norms = GroupNorms(model, sharded=False)
    assert "layers.0.ffn.router_bias" in norms.groups
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-2)
    ids = torch.randint(0, 300, (4, 17))
    before = norms.snapshot()
    F.cross_entropy(model(ids[:, :-1]).reshape(-1, 300), ids[:, 1:].reshape(-1)).backward()
    optimizer.step()
    assert torch.equal(moe.router_bias, torch.zeros_like(moe.router_bias))  # the optimizer cannot move it
    load = moe.load.clone()
    assert load.sum() == 4 * 16 * 2  # every token went to top_k = 2 experts
    moe.update_router_bias(load)
    step = 1e-2 * torch.sign(load.mean() - load)
    assert torch.equal(moe.router_bias, step - step.mean())  # centred, as torchtitan's update
    updates = norms.named(norms.updates(before))
    assert updates["layers.0.ffn.router_bias"] == pytest.approx(float(local(moe.router_bias).norm()))
    assert updates["layers.0.ffn"] > 0 and updates["embed"] > 0


def test_a_moe_run_logs_router_bias_norms_and_expert_load(train_ws):
    train(train_ws, "moe", "--model", "tiny-moe", "--max-steps", 4)
    records = metrics(train_ws, "moe")
    assert all(r["update_norm_by_group"]["layers.1.ffn.router_bias"] > 0 for r in records)
    # the centred +-0.01 moves can cancel (a bias back at 0 after an even step): it has moved, not stayed moved
    assert any(r["param_norm_by_group"]["layers.1.ffn.router_bias"] > 0 for r in records)
    for r in records:  # tiny-moe: 4 experts, top 2, so a max violation of at most 4 / 2 - 1
        assert 0 <= r["expert_max_violation"] <= 1
        assert r["expert_max_violation"] == max(r["expert_max_violation_by_layer"].values())
        assert set(r["expert_load_by_layer"]) == {"layers.0.ffn", "layers.1.ffn"}
        assert all(sum(shares) == pytest.approx(1) for shares in r["expert_load_by_layer"].values())


@pytest.mark.slow  # three runs and a report (~20 s); resume itself: test_stopping_and_resuming_...
def test_a_torn_last_metrics_line_is_skipped_by_readers_and_repaired_by_resume(train_ws):
    """A killed writer leaves `{"step": 6, "lo` without a newline: the report and `loom sql` skip it and say so,
    `--resume` drops it before appending, and the file is whole again with each step once."""
    train(train_ws, "torn", "--max-steps", 6)
    path = train_ws / "runs" / "torn" / "metrics.jsonl"
    with path.open("a") as fh:
        fh.write('{"step": 6, "lo')
    reported = run_loom("-w", train_ws, "report", "run", "torn")
    assert "Traceback" not in reported.stderr
    page = (train_ws / "runs" / "torn" / "report.html").read_text()
    assert 'id="unreadable-metrics">1 unreadable line(s) of metrics.jsonl skipped' in page
    queried = run_loom("-w", train_ws, "sql", "SELECT count(*) AS n, max(step) AS last FROM metrics WHERE run = 'torn'",
                       "--format", "csv")
    assert queried.stdout.split() == ["n,last", "6,5"]
    resumed = train(train_ws, "torn", "--resume")
    warnings = [line for line in resumed.stderr.splitlines() if "unreadable" in line]
    assert len(warnings) == 1 and "dropped 1 unreadable line(s)" in warnings[0], resumed.stderr
    end = json.loads((train_ws / "runs" / "torn" / "run.json").read_text())["end_step"]  # 12, or 14 once rebuilt
    assert [r["step"] for r in metrics(train_ws, "torn")] == list(range(end))  # every line parses, each step once
    assert path.read_text().endswith("}\n")
    run_loom("-w", train_ws, "report", "run", "torn")
    assert "unreadable-metrics" not in (train_ws / "runs" / "torn" / "report.html").read_text()


def test_an_unreadable_metrics_line_anywhere_is_skipped_counted_and_dropped_on_resume(tmp_path):
    lines = ['{"step": 0, "loss": 1.0}', '{"step": 1, "lo', "[1, 2]", "", '{"step": 2, "loss": 0.5}', '{"step": 3, "lo']
    (tmp_path / "metrics.jsonl").write_text("\n".join(lines))
    records, unreadable = read_metrics_counted(tmp_path)
    assert [r["step"] for r in records] == [0, 2] and unreadable == 3
    assert keep_metrics_before(tmp_path, 2) == 3
    assert (tmp_path / "metrics.jsonl").read_text() == '{"step": 0, "loss": 1.0}\n'


# ---- WSD budgets and cooldowns ------------------------------------------------------------------------

WSD_RUN = dict(model="tiny", checkpoint_every=4, eval_every=4, report_every=4, warmup_steps=2, decay_fraction=0.5)


@pytest.fixture(scope="module")
def cooldown_runs(train_ws):
    """Run 'wsd' (12 steps, decaying over half of them) with a cooldown at 6 steps, branched at step 3 and
    interrupted once its step-4 checkpoint is written, then resumed; and run 'budget6', 6 steps with that decay.
    The run's budget is given: the slow test above rebuilds the mixture with 14 steps."""
    ws = loom.open(train_ws)
    interrupt = Interrupt("step      4/6")  # the cooldown's report line, after its checkpoint of step 4
    with pytest.raises(KeyboardInterrupt):
        ws.train("tinymix", run_name="wsd", budget_steps=12, cooldowns=(0.5,), log=interrupt, **WSD_RUN)
    resumed = Interrupt("")
    trained = ws.train("tinymix", run_name="wsd", budget_steps=12, cooldowns=(0.5,), resume=True, log=resumed,
                       **WSD_RUN)
    ws.train("tinymix", run_name="budget6", budget_steps=6, log=lambda _: None, **WSD_RUN)
    return train_ws, trained, interrupt.lines + resumed.lines


def test_a_killed_cooldown_resumes_to_the_run_a_separate_budget_trains(cooldown_runs):
    ws, trained, lines = cooldown_runs
    assert [c.name for c in trained.cooldowns] == ["wsd-cooldown-6"]
    cooldown, separate, main = metrics(ws, "wsd-cooldown-6"), metrics(ws, "budget6"), metrics(ws, "wsd")
    assert [r["step"] for r in cooldown] == list(range(6))
    assert cooldown[:3] == main[:3]  # the run's own steps before the branch, copied
    for key in ("loss", "lr", "grad_norm", "tokens_seen"):  # rtol 1e-6: the same computation, checkpoint between
        assert [r[key] for r in cooldown] == pytest.approx([r[key] for r in separate], rel=1e-6), key
    assert cooldown[-1]["val_loss"] == pytest.approx(separate[-1]["val_loss"], rel=1e-6)
    assert cooldown[-1]["lr"] == pytest.approx(3e-4) and main[3]["lr"] == 3e-3  # decayed, where the run is flat
    run = json.loads((ws / "runs" / "wsd-cooldown-6" / "run.json").read_text())
    assert run["status"] == "finished" and run["branch"] == {"run": "wsd", "step": 3} and run["budget_steps"] == 6
    switch = run["midtrain_start"]  # its own 80/20: the mid-training phase's first batches from its switch on
    assert 3 < switch < 6 and cooldown[switch - 1]["phase"] != cooldown[switch]["phase"] == main[-1]["phase"]
    main_run = json.loads((ws / "runs" / "wsd" / "run.json").read_text())
    assert main_run["cooldowns"] == [{"run": "wsd-cooldown-6", "steps": 6, "branch_step": 3}]
    assert (ws / "runs" / "wsd" / "branches" / "step-0000003" / "trainer_state.json").exists()
    page = (ws / "runs" / "wsd-cooldown-6" / "report.html").read_text()
    assert "A cooldown of run wsd to 6 steps, branched at step 3" in page and "at step 6." in page  # the LR plan's end
    assert "run 'wsd' already finished all 12 steps" in "\n".join(lines)  # and the cooldown went on after it
    summary = next(line for line in lines if line.startswith("cooldown wsd-cooldown-6 "))
    assert summary.startswith("cooldown wsd-cooldown-6 (budget 6 steps, branched at step 3): val loss ")


def test_a_budget_past_the_mixture_a_missing_branch_or_another_model_are_refused(cooldown_runs):
    ws = loom.open(cooldown_runs[0])
    with pytest.raises(UserError, match="^--budget-steps 1000 is above the 1[24] steps of mixture 'tinymix'"):
        ws.train("tinymix", run_name="toolong", budget_steps=1000)
    with pytest.raises(UserError, match="^run 'budget6' is past step 2 without its branch checkpoint there"):
        ws.train("tinymix", run_name="budget6", budget_steps=6, cooldowns=(0.5,), resume=True, **WSD_RUN)
    with pytest.raises(UserError, match="^the branch checkpoint .*step-0000003 has another model"):
        ws.train("tinymix", run_name="wider", branch_from="wsd", budget_steps=6, d_model=32, **WSD_RUN)
    assert not (cooldown_runs[0] / "runs" / "toolong").exists()


@pytest.mark.parametrize("options, says", [
    (["--schedule", "cosine", "--cooldowns", "0.5"], "--cooldowns needs --schedule wsd"),
    (["--decay-fraction", "0.2", "--decay-start", "3"], "--decay-fraction and --decay-start both place the LR decay"),
    (["--cooldowns", "0.5,1.5"], "--cooldowns 1.5: each cooldown is a fraction of the run's steps, between 0 and 1"),
])
def test_wsd_options_that_cannot_go_together_are_one_line_before_anything_is_read(tmp_path, options, says):
    refused = run_loom("-w", tmp_path / "none", "train", "--mixture", "tinymix", *options, check=False)
    assert refused.returncode == 2 and refused.stderr.startswith(f"error: {says}")
    assert not (tmp_path / "none").exists()
