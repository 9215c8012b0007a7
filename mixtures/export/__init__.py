"""`loom mix export`: a compiled mixture's training sequences, in schedule order, as Megatron-LM's indexed
dataset, a flat numpy token file, or Parquet parts (one module per format; runner.py plans, streams and
resumes)."""

from mixtures.export.runner import FORMATS, ExportPlan, ExportResult, is_finished, plan_export, run_export

__all__ = ["FORMATS", "ExportPlan", "ExportResult", "is_finished", "plan_export", "run_export"]
