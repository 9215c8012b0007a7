"""Loss-spike flags: a grad norm far above its running median, attributed to the parameter group that moved."""

from collections import deque

import numpy as np


class SpikeDetector:
    """A grad norm above `factor` times the median of the last `window` steps is a spike; it is attributed
    to the group whose update moved most against its own recent median."""

    def __init__(self, factor: float, window: int = 50):
        self.factor = factor
        self.grad_norms: deque = deque(maxlen=window)
        self.updates: dict[str, deque] = {}

    def check(self, grad_norm: float, update_norms: dict[str, float]) -> str | None:
        ratios = {}
        for group, value in update_norms.items():
            history = self.updates.setdefault(group, deque(maxlen=self.grad_norms.maxlen))
            if history:
                ratios[group] = value / (float(np.median(history)) + 1e-12)
            history.append(value)
        spike = len(self.grad_norms) >= 10 and grad_norm > self.factor * float(np.median(self.grad_norms))
        self.grad_norms.append(grad_norm)
        if not spike:
            return None
        return max(ratios, key=ratios.get) if ratios else "unknown"

    def state(self) -> dict:
        """The running history, for a checkpoint: a resumed run flags the steps the straight run flags."""
        return {"grad_norms": list(self.grad_norms), "updates": {g: list(h) for g, h in self.updates.items()}}

    def load_state(self, state: dict) -> None:
        window = self.grad_norms.maxlen
        self.grad_norms = deque(state["grad_norms"], maxlen=window)
        self.updates = {g: deque(h, maxlen=window) for g, h in state["updates"].items()}
