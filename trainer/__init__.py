"""A small distributed PyTorch trainer that reads a compiled mixture schedule.

Names are imported on first use, so that `loom` commands that do not train never pay for importing torch."""

import importlib

PUBLIC = {
    "TrainConfig": "trainer.config", "LRSchedule": "trainer.config", "lr_schedule": "trainer.config",
    "SIZES": "trainer.config", "ModelConfig": "trainer.config", "Transformer": "trainer.model",
    "model_config": "trainer.config", "Run": "trainer.loop", "train": "trainer.loop",
    "launch_ranks": "trainer.launch",
}
__all__ = sorted(PUBLIC)


def __getattr__(name: str):
    if name not in PUBLIC:
        raise AttributeError(f"module 'trainer' has no attribute '{name}'")
    return getattr(importlib.import_module(PUBLIC[name]), name)
