"""The training loop: a compiled mixture in, a metrics line per step and checkpoints out.

Every rank reads its slice of each global batch from the schedule, so the data of step s is the same whatever
the number of ranks and whether the run was resumed. Losses are means over the rank's tokens; as every rank has
the same number of tokens, the mean of the ranks' gradients (DDP, FSDP2) is the gradient of the global mean."""

import json
import time
from pathlib import Path
from typing import Callable

import torch

from base.errors import UserError
from base.store import as_path
from base.workspace import Workspace
from mixtures import Build, SequenceReader, load_schedule, reading, schedule_fingerprint, target_shares
from trainer import checkpoint, metrics
from trainer.accumulation import accumulate_gradients
from trainer.config import TrainConfig, cooldown_plan, count_parameters, flops_per_token, lr_schedule, model_config
from trainer.cooldowns import branch_step, budget_switch, stream_step
from trainer.data import RankLoader, eval_set_batches, validation_batches
from trainer.distributed import BF16_AUTOCAST, Ranks, precision, setup, teardown, wrap
from trainer.evaluation import StepMetrics, evaluate, per_source
from trainer.model import Transformer
from trainer.moe import update_router_biases
from trainer.norms import GroupNorms, clip_gradients
from trainer.recorded_inputs import record_run_inputs
from trainer.spikes import SpikeDetector
from trainer.throughput import Throughput, device_peak

ReportHook = Callable[[Path], object]


class Run:
    """Everything a run needs before its first step, checked before any compute is spent."""

    def __init__(self, config: TrainConfig, build: Build):
        """`build`: the mixture's build the run reads, every file of it (see mixtures.reading)."""
        self.config = config
        self.build = build
        folder = build.root
        try:
            self.schedule, self.data = load_schedule(folder, Workspace(as_path(config.workspace)))
        except FileNotFoundError as err:  # the published generation is incomplete (on a store: no _SUCCESS) or gone
            raise UserError(f"cannot read the curated data of mixture '{config.mixture}': {err}; run `loom curate` "
                            f"and `loom mix build {config.mixture}` again") from None
        meta = self.schedule.meta
        self.sources = sorted({s for c in meta["components"] for s in c["sources"]})
        try:
            self.model_config = model_config(config.model, meta["vocab_size"], d_model=config.d_model,
                                             n_layers=config.n_layers, n_heads=config.n_heads,
                                             n_experts=config.n_experts, top_k=config.top_k,
                                             sequence_aux_coeff=config.moe_sequence_aux_coeff)
        except ValueError as err:
            raise UserError(f"{err}; change --model or the size options") from None
        self.midtrain_start = self.schedule.phases[-1].start_step
        self.lr = lr_schedule(config, self.schedule.steps, self.midtrain_start)
        # a shorter budget reads the pre-training stream to its own switch, then the mid-training phase's batches
        self.switch = budget_switch(self.lr.steps, self.schedule.steps, self.midtrain_start)
        self.budget = self.lr.steps
        self.end_step = min(self.budget, config.max_steps or self.budget)
        self.cooldowns = cooldown_plan(config, self.schedule.steps, self.midtrain_start)
        self.fingerprint = schedule_fingerprint(meta)
        self.target_shares = target_shares(folder, self.schedule)
        self.resume_step = 0  # the step of the checkpoint resumed from
        self.branched = False  # whether it starts from another run's branch checkpoint (a cooldown's first start)
        self.resume_from = self._check_run_folder()
        self._check_cooldowns()

    def _check_run_folder(self) -> Path | None:
        run_dir = self.config.run_dir
        found = checkpoint.latest(run_dir)
        if not self.config.resume:
            if found or (run_dir / metrics.METRICS_FILE).exists():
                raise UserError(f"run '{self.config.name}' already exists in {run_dir.parent}; pass --resume "
                                "to continue it, or --run-name NAME for a new one")
            return self._branch()
        if found is None:
            return self._branch()  # stopped before its first checkpoint: resuming it is starting it again
        state = checkpoint.read_state(found)
        if state["schedule_fingerprint"] != self.fingerprint:
            raise UserError(f"run '{self.config.name}' was trained on another build of mixture "
                            f"'{self.config.mixture}' (schedule fingerprint {state['schedule_fingerprint']}, now "
                            f"{self.fingerprint}); start a new --run-name instead of resuming")
        if state["model_config"] != self.model_config.__dict__:
            raise UserError(f"run '{self.config.name}' was trained with another model ({state['model_config']}); "
                            "resume it with the same --model and sizes")
        self.resume_step = state["step"]
        return found

    def _branch(self) -> Path | None:
        """A cooldown's first start: the branch checkpoint of the run it branches from, at its branch step."""
        source = self.config.branch_from
        if source is None:
            return None
        path = checkpoint.branch_dir(self.branch_source_dir, self.branch_step)
        if not checkpoint.is_complete(path):
            raise UserError(f"run '{source}' has no branch checkpoint at step {self.branch_step} ({path}); "
                            f"train run '{source}' with --cooldowns for this budget first")
        state = checkpoint.read_state(path)
        if state["schedule_fingerprint"] != self.fingerprint:
            raise UserError(f"the branch checkpoint {path} is of another build of mixture '{self.config.mixture}' "
                            f"(schedule fingerprint {state['schedule_fingerprint']}, now {self.fingerprint}); "
                            f"train run '{source}' and its cooldowns on one build")
        if state["model_config"] != self.model_config.__dict__:
            raise UserError(f"the branch checkpoint {path} has another model ({state['model_config']}); give "
                            f"the cooldown run '{source}'s --model and sizes")
        self.resume_step, self.branched = state["step"], True
        return path

    @property
    def branch_step(self) -> int:
        """A branched run's first step of its own: where its LR decay or its data switch first differs from the
        run it branches from."""
        return branch_step(self.lr.decay_start, self.switch)

    def stream_step(self, step: int) -> int:
        """The mixture step the run's `step` reads (trainer.cooldowns.stream_step)."""
        return stream_step(step, self.switch, self.midtrain_start)

    @property
    def branch_source_dir(self) -> Path:
        return Workspace(as_path(self.config.workspace)).run_dir(self.config.branch_from)

    def _check_cooldowns(self) -> None:
        """Before any compute: a new run's cooldowns are new too, and a resumed run past a branch step still has
        that branch checkpoint for a cooldown that has not started."""
        for cooldown in self.cooldowns:
            own_dir = cooldown.config.run_dir
            if not self.config.resume and (checkpoint.latest(own_dir) or (own_dir / metrics.METRICS_FILE).exists()):
                raise UserError(f"run '{cooldown.config.name}' already exists in {own_dir.parent}; pass --resume "
                                "to continue it and its run, or --run-name NAME for a new one")
            missing = (self.resume_step >= cooldown.branch_step and checkpoint.latest(own_dir) is None
                       and not checkpoint.is_complete(checkpoint.branch_dir(self.config.run_dir, cooldown.branch_step)))
            if missing:
                raise UserError(f"run '{self.config.name}' is past step {cooldown.branch_step} without its branch "
                                f"checkpoint there, so the cooldown at {cooldown.budget} steps cannot start; train "
                                "the run again from scratch (a new --run-name) or drop that budget from --cooldowns")

    def check_world_size(self, world_size: int) -> None:
        """The global batch splits over the ranks, and each rank's share into its micro-batches."""
        if self.schedule.global_batch % world_size:
            raise UserError(f"global_batch {self.schedule.global_batch} of mixture '{self.config.mixture}' does not "
                            f"split over {world_size} ranks; pick a number of ranks that divides it")
        share, parts = self.schedule.global_batch // world_size, self.config.micro_batches
        if share % parts:
            raise UserError(f"--micro-batches {parts} does not divide the {share} sequences of each rank's share "
                            f"of global_batch {self.schedule.global_batch} ({world_size} rank(s)); "
                            f"pick a divisor of {share}")

    def nothing_to_train(self) -> str | None:
        """The line to say when a resumed run's checkpoint is already at its end step, else None."""
        if self.resume_step >= self.budget:
            return (f"run '{self.config.name}' already finished all {self.budget} steps; nothing to train "
                    "(start a new --run-name to train again)")
        if self.resume_step >= self.end_step:
            return (f"run '{self.config.name}' is at step {self.resume_step} already and --max-steps "
                    f"{self.config.max_steps} asks for no more; nothing to train (raise --max-steps to go on)")
        return None

    def describe(self) -> dict:
        counts = count_parameters(self.model_config)
        branching = {}
        if self.config.branch_from:
            branching[metrics.BRANCH] = {metrics.RUN: self.config.branch_from, metrics.STEP: self.branch_step}
        if self.cooldowns:
            branching[metrics.COOLDOWNS] = [{metrics.RUN: c.config.name, metrics.STEPS: c.budget,
                                             metrics.BRANCH_STEP: c.branch_step} for c in self.cooldowns]
        return {
            metrics.RUN: self.config.name, metrics.MIXTURE: self.config.mixture, metrics.STEPS: self.schedule.steps,
            metrics.BUDGET_STEPS: self.budget, metrics.END_STEP: self.end_step,
            metrics.SEQ_LEN: self.schedule.meta["seq_len"],
            metrics.GLOBAL_BATCH: self.schedule.global_batch, metrics.MODEL: self.model_config.__dict__,
            metrics.PARAMETERS: counts["total"], metrics.ACTIVE_PARAMETERS: counts["active_matmul"],
            metrics.PHASES: self.schedule.meta["phases"], metrics.MIDTRAIN_START: self.switch,
            metrics.DECAY_START: self.lr.decay_start, metrics.WARMUP_STEPS: self.lr.warmup,
            metrics.SOURCES: self.sources, metrics.COMPONENTS: self.schedule.components,
            metrics.TARGET_SHARES: self.target_shares, metrics.SCHEDULE_FINGERPRINT: self.fingerprint,
            metrics.BUILD: self.build.id,
            metrics.CONFIG: json.loads(self.config.to_json()), **branching,
        }


def make_optimizer(model, config: TrainConfig) -> torch.optim.Optimizer:
    decay = [p for p in model.parameters() if p.ndim >= 2]
    no_decay = [p for p in model.parameters() if p.ndim < 2]
    return torch.optim.AdamW([{"params": decay, "weight_decay": config.weight_decay},
                              {"params": no_decay, "weight_decay": 0.0}],
                             lr=config.lr, betas=(0.9, config.beta2), eps=1e-8)


def train(config: TrainConfig, report: ReportHook | None = None, log=print, build_id: str | None = None) -> Path:
    """Runs (or resumes) a training run; joins torchrun's process group when started by torchrun. It reads the
    mixture's current build (or build `build_id`, the one torchrun's launcher holds), held for the run's length so
    that a rebuild neither changes nor removes it."""
    ranks = setup(config.device)
    try:
        if ranks.device.type == "cpu" and ranks.world_size > 1:
            torch.set_num_threads(1)
        with reading(config.mixture_dir, build_id) as build:
            run = Run(config, build)
            if finished := run.nothing_to_train():
                if ranks.is_main:
                    log(finished)
                return config.run_dir
            return _train(run, ranks, report, log)
    finally:
        teardown()


def _train(run: Run, ranks: Ranks, report: ReportHook | None, log) -> Path:
    config, schedule = run.config, run.schedule
    run.check_world_size(ranks.world_size)
    run_dir = config.run_dir
    torch.manual_seed(config.seed)
    model = Transformer(run.model_config, schedule.meta["seq_len"]).to(ranks.device)
    moe_layers = model.named_moe_layers()
    wrapped = wrap(model, ranks, config.fsdp, config.compile)
    norms = GroupNorms(model, sharded=config.fsdp and ranks.distributed)  # after wrapping: FSDP2 swaps parameters
    optimizer = make_optimizer(wrapped, config)
    spikes = SpikeDetector(config.spike_factor)
    start_step, tokens_seen = 0, 0
    if run.resume_from is not None:
        state = checkpoint.load(wrapped, optimizer, run.resume_from)
        start_step, tokens_seen = state["step"], state["tokens_seen"]
        if checkpoint.SPIKES in state:  # checkpoints written before it was saved start the detector afresh
            spikes.load_state(state[checkpoint.SPIKES])
    meta = schedule.meta
    reader = SequenceReader(schedule, run.build.root, run.data, run.sources)
    per_rank = schedule.global_batch // ranks.world_size
    validation = validation_batches(schedule, reader, ranks.rank, ranks.world_size, per_rank)
    evals = eval_set_batches(schedule, run.build.root, ranks.rank, ranks.world_size, per_rank)
    loader = RankLoader(schedule, reader, ranks.rank, ranks.world_size, start_step, run.end_step, run.stream_step)
    if ranks.is_main:  # after the data is read: a failure before the first step leaves run.json as it was
        metrics.write_run(run_dir, {**run.describe(), metrics.STATUS: metrics.RUNNING,
                                    metrics.WORLD_SIZE: ranks.world_size, metrics.DEVICE: str(ranks.device),
                                    metrics.PRECISION: precision(ranks, config.fsdp),
                                    metrics.STARTED_AT: time.time()})
        record_run_inputs(run, ranks.world_size)
        if run.branched:
            metrics.copy_metrics_before(run.branch_source_dir, run_dir, start_step)
        else:
            metrics.keep_metrics_before(run_dir, start_step)
    autocast = precision(ranks, config.fsdp) == BF16_AUTOCAST
    throughput = Throughput(flops_per_token(run.model_config, meta["seq_len"]), ranks.world_size,
                            device_peak(ranks.device, config.peak_tflops), log if ranks.is_main else lambda _: None)
    tokens_per_step = schedule.global_batch * meta["seq_len"]
    branch_steps = {cooldown.branch_step for cooldown in run.cooldowns}
    if ranks.is_main:
        log(f"Training {config.name}: {count_parameters(run.model_config)['total']:,} parameters, steps "
            f"{start_step}..{run.end_step} of {run.budget}, {ranks.world_size} rank(s) on {ranks.device}, "
            f"mid-training from step {run.switch}")
    metrics_log = metrics.MetricsLog(run_dir) if ranks.is_main else None
    step_began = time.perf_counter()
    waited_before = loader.wait_seconds
    try:
        for batch in loader:
            step = batch.step
            phase = schedule.phases[schedule.phase_of(run.stream_step(step))].name
            lr = run.lr(step)
            for group in optimizer.param_groups:
                group["lr"] = lr
            wrapped.train()
            sums = StepMetrics(len(run.sources), len(schedule.components), ranks.device)
            accumulate_gradients(wrapped, batch, config.micro_batches, sums, ranks.device, autocast)
            grad_squares = norms.gradients()
            grad_norm = float(grad_squares.sum()) ** 0.5
            clip_gradients(wrapped, grad_norm, config.grad_clip)
            buffers_before = norms.buffer_snapshot()
            optimizer.step()
            update_squares = norms.step_updates(optimizer)  # before zero_grad: which parameters had a gradient
            optimizer.zero_grad(set_to_none=True)
            expert_load = update_router_biases(moe_layers)
            loss_sums, counts, sequences = sums.reduce()
            updates = norms.named(update_squares + norms.buffer_updates(buffers_before))
            tokens_seen += tokens_per_step
            record = {
                metrics.STEP: step, metrics.PHASE: phase, metrics.LR: lr,
                metrics.LOSS: float(loss_sums.sum() / counts.sum()),
                metrics.LOSS_BY_SOURCE: per_source(run.sources, loss_sums, counts),
                metrics.TOKENS_BY_SOURCE: {s: int(c) for s, c in zip(run.sources, counts) if c},
                metrics.SHARE_BY_COMPONENT: dict(zip(schedule.components, (sequences / sequences.sum()).tolist())),
                metrics.TARGET_SHARE_BY_COMPONENT: dict(zip(schedule.components, run.target_shares[phase])),
                metrics.GRAD_NORM: grad_norm, metrics.GRAD_NORM_BY_GROUP: norms.named(grad_squares),
                metrics.PARAM_NORM_BY_GROUP: norms.named(norms.weights()), metrics.UPDATE_NORM_BY_GROUP: updates,
                metrics.TOKENS_SEEN: tokens_seen,
            }
            record.update(expert_load)
            spike = spikes.check(grad_norm, updates)
            if spike:
                record[metrics.SPIKE] = spike
            if ranks.device.type == "cuda":
                torch.cuda.synchronize()
            seconds = time.perf_counter() - step_began
            waited = loader.wait_seconds - waited_before
            if (step + 1) % config.eval_every == 0 or step + 1 == run.end_step:
                record.update(evaluate(wrapped, model, validation, evals, run, ranks, autocast))
            record.update({metrics.STEP_SECONDS: seconds, metrics.DATA_WAIT_FRACTION: waited / seconds,
                           **throughput.of_step(tokens_per_step, seconds)})
            if ranks.is_main:
                metrics_log.write(record)
            done = step + 1
            due = done % config.checkpoint_every == 0 or done == run.end_step
            if due or done in branch_steps:
                state = {"step": done, "tokens_seen": tokens_seen, "schedule_fingerprint": run.fingerprint,
                         "model_config": run.model_config.__dict__, checkpoint.SPIKES: spikes.state()}
            if done in branch_steps:
                if ranks.is_main:
                    metrics_log.publish()  # the cooldowns copy the lines before their branch step
                checkpoint.save_branch(wrapped, optimizer, checkpoint.branch_dir(run_dir, done), state, ranks.is_main)
            if due:
                if ranks.is_main:
                    metrics_log.publish()  # on a store, before the checkpoint commits: see MetricsLog
                checkpoint.save(wrapped, optimizer, checkpoint.checkpoint_dir(run_dir, done), state, ranks.is_main)
            if ranks.is_main and (done % config.report_every == 0 or done == run.end_step):
                metrics_log.publish()
                log(f"step {done:>6}/{run.end_step}  loss {record[metrics.LOSS]:.4f}  lr {lr:.2e}  "
                    f"grad {grad_norm:.3f}  {record[metrics.TOKENS_PER_SECOND]:,.0f} tok/s  "
                    f"{record[metrics.FLOPS_PER_SECOND] / 1e12:.3g} TFLOP/s  "
                    f"mfu {'-' if record[metrics.MFU] is None else format(record[metrics.MFU], '.1%')}")
                if done < run.end_step:
                    write_report(report, run_dir, log)
            step_began, waited_before = time.perf_counter(), loader.wait_seconds  # eval, checkpoints, reports: not step time
    except BaseException:
        if ranks.is_main:
            metrics_log.publish()
            metrics.finish(run_dir, metrics.FAILED)
            write_report(report, run_dir, log)
        raise
    finally:
        if metrics_log:
            metrics_log.close()
    if ranks.is_main:
        metrics.finish(run_dir, metrics.FINISHED if run.end_step == run.budget else metrics.STOPPED)
        write_report(report, run_dir, log)
    return run_dir


def write_report(report: ReportHook | None, run_dir: Path, log) -> None:
    """A failing report must not stop a long run: it says so and training goes on."""
    if report is None:
        return
    try:
        report(run_dir)
    except Exception as err:  # noqa: BLE001 - any report bug is reported, not fatal
        log(f"warning: could not write the run report ({type(err).__name__}: {err})")
