"""Terminal rendering for the CLI: progress, per-graph lines, tables and warnings."""
