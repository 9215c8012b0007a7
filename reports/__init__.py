"""What users look at: SQL views over a workspace (and, with their issue, self-contained HTML reports)."""
