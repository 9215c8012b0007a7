"""Cooldown branches of a warmup-stable-decay run (Hagele et al. 2024, arXiv 2405.18392): the run trains once
through its stable phase, and each shorter token budget is a short run of its own that starts from the stable
phase's checkpoint at that budget's decay start and decays to the budget's end. A budget's cooldown is the same
computation as a separate WSD run stopped there with the same decay, at a fraction of its cost.

Budgets are fractions of the run's own steps; the run itself is the longest budget. Every budget keeps the
mixture's phases in proportion: a budget of B steps reads the pre-training stream up to its own switch (the
mixture's switch scaled to B, `budget_switch`), then the mid-training phase's batches from that phase's first
(`stream_step`), so the 80/20 split holds at every budget and, with the default decay fraction (the mixture's
mid-training share), a cooldown's decay is its mid-training phase, as the longest budget's is. A cooldown
branches where its run first differs from the main run's: its decay start or its switch, whichever is first
(`branch_step`). This module is pure arithmetic and names: no torch."""

from base.errors import UserError

COOLDOWN_INFIX = "-cooldown-"  # a cooldown's run is RUN-cooldown-STEPS


def budget_steps(steps: int, fractions) -> list[int]:
    """Each fraction of `steps` as a whole number of steps, ascending, without the run's own budget (`steps`);
    a fraction must leave at least one stable step and one decay step (checked by `decay_start`)."""
    budgets = sorted({round(f * steps) for f in fractions})
    return [b for b in budgets if 0 < b < steps]


def decay_start(budget: int, decay_fraction: float) -> int:
    """The step a budget's LR decay begins: its branch point from the stable phase."""
    start = budget - max(1, round(decay_fraction * budget))
    if start < 1:
        raise UserError(f"a budget of {budget} steps with decay fraction {decay_fraction} leaves no stable step to "
                        "branch from; give longer budgets (larger --cooldowns fractions) or a smaller "
                        "--decay-fraction")
    return start


def budget_switch(budget: int, steps: int, midtrain_start: int) -> int:
    """The step a budget of `steps`-step mixture begins its mid-training phase: the mixture's own switch for the
    whole run; for a shorter budget the same share of it (rounded as `decay_start` rounds, so that the default
    decay and the switch coincide). A one-phase mixture (midtrain_start 0: its one phase is its last) has none to
    scale: 0, every step read as it is."""
    if budget == steps or midtrain_start == 0:
        return midtrain_start
    return decay_start(budget, (steps - midtrain_start) / steps)


def stream_step(step: int, switch: int, midtrain_start: int) -> int:
    """The mixture step a budget's `step` reads: its own up to its switch, then the mid-training phase's in order
    from that phase's first."""
    return step if step < switch else midtrain_start + (step - switch)


def branch_step(lr_decay_start: int, switch: int) -> int:
    """Where a budget's run first differs from the whole run's: its LR decay or its data switch, the earlier."""
    return min(lr_decay_start, switch) if switch else lr_decay_start


def cooldown_run_name(run: str, budget: int) -> str:
    return f"{run}{COOLDOWN_INFIX}{budget}"


def check_fractions(fractions) -> tuple[float, ...]:
    """The --cooldowns fractions as given: each in (0, 1), distinct; one line naming the fix otherwise."""
    values = tuple(fractions)
    for value in values:
        if isinstance(value, bool) or not isinstance(value, (int, float)) or not 0 < value < 1:
            raise UserError(f"--cooldowns {value!r}: each cooldown is a fraction of the run's steps, between 0 and 1 "
                            "(e.g. --cooldowns 0.25,0.5; the run itself is the longest budget)")
    if len(set(values)) != len(values):
        raise UserError(f"--cooldowns {','.join(map(str, values))} repeats a budget; give each fraction once")
    return values
