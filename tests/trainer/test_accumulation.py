"""Gradient accumulation, update norms without a copy of the model, the spike detector across a resume, and
resuming a run with nothing left to train: real `loom train` runs, real gloo groups, real DCP checkpoints."""

import json

import pytest
import torch
import torch.nn.functional as F

from helpers import TINY_MODEL, copy_curated, on_two_gloo_ranks, run_loom, training_spec, write_spec
from trainer.accumulation import accumulate_gradients
from trainer.config import TrainConfig, model_config
from trainer.data import Batch
from trainer.distributed import Ranks, all_reduce_sum, wrap
from trainer.evaluation import StepMetrics
from trainer.loop import make_optimizer
from trainer.model import Transformer
from trainer.norms import GroupNorms, clip_gradients

STEPS = 24
SPEC = training_spec(STEPS)
RESUME_AT = 12
# A low spike factor, so that this short run flags steps (a flag needs 10 steps of history): its grad norms fall
# from ~0.6 to ~0.5, and at 0.95 of the running median the straight run flags steps 11, 16, 20 and 23; a
# detector that forgot its history at the resume would flag nothing in the 10 steps after it.
OPTIONS = [*TINY_MODEL, "--checkpoint-every", RESUME_AT, "--eval-every", 100, "--report-every", 100,
           "--warmup-steps", 2, "--spike-factor", 0.95]
# Accumulation changes the order of float sums (a mean over 4 sequences then scaled, against one over 8): per-step
# losses and grad norms agree to this relative tolerance (measured over 6-8 steps, 2 and 4 micro-batches, 1 and 2
# ranks: losses to 4.2e-9, grad norms to 1.3e-7, update norms to 5.5e-7).
ACCUMULATION_RTOL = 1e-5


def train(ws, run: str, *args, check=True):
    return run_loom("-w", ws, "train", "--mixture", "accmix", "--run-name", run, *OPTIONS, *args, check=check)


def metrics_file(ws, run: str):
    return ws / "runs" / run / "metrics.jsonl"


def metrics(ws, run: str) -> list[dict]:
    return [json.loads(line) for line in metrics_file(ws, run).read_text().splitlines()]


@pytest.fixture(scope="module")
def acc_ws(tmp_path_factory, curated_slice, slice_tokenizer):
    ws = copy_curated(curated_slice, slice_tokenizer, tmp_path_factory.mktemp("accws") / "ws")
    write_spec(ws, "accmix", SPEC)
    run_loom("-w", ws, "mix", "build", "accmix")
    train(ws, "straight")
    return ws


# ---- gradient accumulation ----------------------------------------------------------------------------


@pytest.mark.parametrize("parts", [2, pytest.param(4, marks=pytest.mark.slow)])
def test_micro_batches_give_the_steps_of_the_whole_batch(acc_ws, parts):
    train(acc_ws, f"micro{parts}", "--micro-batches", parts, "--max-steps", 8)
    whole, micro = metrics(acc_ws, "straight")[:8], metrics(acc_ws, f"micro{parts}")
    assert [r["step"] for r in micro] == list(range(8))
    for a, b in zip(whole, micro):
        assert a["tokens_by_source"] == b["tokens_by_source"] and a["tokens_seen"] == b["tokens_seen"]
        assert b["loss"] == pytest.approx(a["loss"], rel=ACCUMULATION_RTOL)
        assert b["grad_norm"] == pytest.approx(a["grad_norm"], rel=ACCUMULATION_RTOL)
        assert b["loss_by_source"] == pytest.approx(a["loss_by_source"], rel=ACCUMULATION_RTOL)
    assert micro[-1]["loss"] < micro[0]["loss"]


def test_a_micro_batch_count_that_does_not_divide_the_share_is_refused(acc_ws):
    refused = train(acc_ws, "bad", "--micro-batches", 3, check=False)
    assert refused.returncode == 2 and "Traceback" not in refused.stderr
    assert "--micro-batches 3 does not divide the 8 sequences" in refused.stderr
    assert not (acc_ws / "runs" / "bad").exists()


def _batch(ids: torch.Tensor) -> Batch:
    return Batch(0, ids[:, :-1], ids[:, 1:], torch.zeros_like(ids[:, 1:]), torch.zeros(len(ids), dtype=torch.int64))


def _compare_accumulated(ranks: Ranks):
    """On 2 ranks, DDP and FSDP2: 4 micro-batches of each rank's share give the gradients of one pass over the
    whole batch in one process (cross-entropy and the MoE's sequence-wise balance loss), so do the experts' loads, and the update norms from AdamW's state equal those
    from a copy of the model."""
    ids = torch.randint(0, 300, (16, 17), generator=torch.Generator().manual_seed(5))
    mine = _batch(ids.chunk(ranks.world_size)[ranks.rank])
    config = model_config("tiny-moe", 300, d_model=32, sequence_aux_coeff=0.1)  # the balance loss weighed in too
    train_config = TrainConfig(workspace=".", mixture="m")

    def fresh():
        torch.manual_seed(0)
        return Transformer(config, 16)

    reference = fresh()
    F.cross_entropy(reference(ids[:, :-1]).reshape(-1, 300), ids[:, 1:].reshape(-1)).backward()
    expected = {n: p.grad for n, p in reference.named_parameters()}
    expected_load = torch.stack([layer.load for layer in reference.moe_layers()])
    for fsdp in (False, True):
        model = fresh()
        wrapped = wrap(model, ranks, fsdp)
        sums = StepMetrics(1, 1, ranks.device)
        accumulate_gradients(wrapped, mine, 4, sums, ranks.device, autocast=False)
        for name, p in model.named_parameters():
            grad = p.grad.full_tensor() if hasattr(p.grad, "full_tensor") else p.grad
            assert torch.allclose(grad, expected[name], rtol=1e-4, atol=1e-6), \
                ("fsdp" if fsdp else "ddp", name, (grad - expected[name]).abs().max().item())
        # the experts' load adds up over the micro-batches until the step's router-bias update, as over one pass
        assert torch.equal(all_reduce_sum(torch.stack([layer.load for layer in model.moe_layers()])), expected_load)
        norms = GroupNorms(model, sharded=fsdp)
        optimizer = make_optimizer(wrapped, train_config)
        before = norms.snapshot()
        optimizer.step()
        new = norms.named(norms.step_updates(optimizer))
        # float32 weights rounded after the update: see the one-process test below for the tolerance
        assert new == pytest.approx(norms.named(norms.updates(before)), rel=1e-4, abs=1e-12)


def test_micro_batches_under_ddp_and_fsdp2_give_the_whole_batch_gradients(tmp_path):
    on_two_gloo_ranks(_compare_accumulated, tmp_path)


@pytest.mark.slow
def test_two_ranks_with_micro_batches_give_the_losses_of_one(acc_ws):
    train(acc_ws, "two-micro", "--nproc", 2, "--micro-batches", 2, "--max-steps", 6)
    train(acc_ws, "fsdp-micro", "--nproc", 2, "--fsdp", "--micro-batches", 2, "--max-steps", 6)
    whole = metrics(acc_ws, "straight")[:6]
    for run in ("two-micro", "fsdp-micro"):
        for a, b in zip(whole, metrics(acc_ws, run), strict=True):
            assert b["loss"] == pytest.approx(a["loss"], rel=ACCUMULATION_RTOL), run
            assert b["grad_norm"] == pytest.approx(a["grad_norm"], rel=1e-4), run
            assert b["update_norm_by_group"] == pytest.approx(a["update_norm_by_group"], rel=1e-3), run


# ---- update norms without a copy of the model ---------------------------------------------------------


@pytest.fixture
def one_thread():
    """A tiny model gains nothing from more threads, and on a shared machine loses much to them."""
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(threads)


@pytest.mark.usefixtures("one_thread")
@pytest.mark.parametrize("size, dtype, rtol", [("tiny-moe", torch.float64, 1e-9), ("tiny", torch.float32, 1e-3)])
def test_update_norms_from_adamw_state_equal_those_from_a_copy(size, dtype, rtol):
    """Over steps with small and large LRs, clipping and weight decay (and, with experts, parameters that got no
    gradient in a step, and idle experts with zero ones): the norms from the optimizer's state are the differences a copy measures. In float64
    to 1e-9; in float32 the weights themselves are rounded after each update (a norm weight near 1 moved by
    1e-4 lands on a multiple of 6e-8), so the realized change differs from AdamW's by up to ~1e-3 of it."""
    torch.manual_seed(0)
    model = Transformer(model_config(size, 300, d_model=32, n_experts=8 if size == "tiny-moe" else None,
                                     top_k=1 if size == "tiny-moe" else None), 16).to(dtype)
    norms = GroupNorms(model, sharded=False)
    optimizer = make_optimizer(model, TrainConfig(workspace=".", mixture="m"))
    ids = torch.randint(0, 300, (4, 17), generator=torch.Generator().manual_seed(1))
    skipped = 0
    for step, lr in enumerate([1e-4, 3e-3, 3e-3, 1e-2, 3e-4]):
        for group in optimizer.param_groups:
            group["lr"] = lr
        loss = F.cross_entropy(model(ids[:, :-1]).reshape(-1, 300), ids[:, 1:].reshape(-1))
        loss.backward()
        grads = norms.gradients()
        clip_gradients(model, float(grads.sum()) ** 0.5, 1.0)
        if size == "tiny-moe" and step % 2:
            # a parameter outside a step's graph is not stepped (Loom's idle experts get zero gradients instead)
            for p in model.layers[0].ffn.experts[0].parameters():
                p.grad = None
        skipped += sum(p.grad is None for p in model.parameters())
        before = norms.snapshot()
        optimizer.step()
        new = norms.named(norms.step_updates(optimizer))
        old = norms.named(norms.updates(before))
        optimizer.zero_grad(set_to_none=True)
        assert new == pytest.approx(old, rel=rtol, abs=1e-12), step
        assert all(v > 0 for g, v in new.items() if not g.endswith("router_bias"))
        ids = ids.roll(1)
    if size == "tiny-moe":
        assert skipped > 0


# ---- spike flags across a resume, and resuming a run with nothing left to train --------------------------


@pytest.fixture(scope="module")
def resumed(acc_ws):
    """Stopped at RESUME_AT, resumed with no more steps to take (nothing happens), then resumed to the end."""
    train(acc_ws, "resumed", "--max-steps", RESUME_AT)
    stopped = metrics_file(acc_ws, "resumed").read_bytes()
    idle = train(acc_ws, "resumed", "--resume", "--max-steps", RESUME_AT)
    unchanged = metrics_file(acc_ws, "resumed").read_bytes() == stopped
    train(acc_ws, "resumed", "--resume", "--max-steps", STEPS)
    return idle, unchanged


def test_a_resumed_run_flags_the_spikes_of_the_straight_run(acc_ws, resumed):
    straight, again = metrics(acc_ws, "straight"), metrics(acc_ws, "resumed")
    assert [r["grad_norm"] for r in again] == [r["grad_norm"] for r in straight]
    flags = [r.get("spike") for r in straight]
    assert [r.get("spike") for r in again] == flags
    # the test can fail: steps after the resume point are flagged, within the 10 a fresh detector would skip
    assert any(flags[RESUME_AT:RESUME_AT + 10]) and not all(flags[10:])


def test_resuming_a_stopped_run_goes_on_only_with_more_steps(acc_ws, resumed):
    idle, unchanged = resumed
    assert idle.returncode == 0 and unchanged
    assert (f"run 'resumed' is at step {RESUME_AT} already and --max-steps {RESUME_AT} asks for no more; "
            "nothing to train") in idle.stdout
    assert [r["step"] for r in metrics(acc_ws, "resumed")] == list(range(STEPS))  # --max-steps 24 went on


def test_resuming_a_finished_run_says_so_and_leaves_it_alone(acc_ws):
    run_dir = acc_ws / "runs" / "straight"
    before = {name: (run_dir / name).read_bytes() for name in ("metrics.jsonl", "run.json")}
    again = train(acc_ws, "straight", "--resume")
    assert again.returncode == 0
    assert f"run 'straight' already finished all {STEPS} steps; nothing to train" in again.stdout
    assert "Training straight" not in again.stdout
    assert {name: (run_dir / name).read_bytes() for name in before} == before
