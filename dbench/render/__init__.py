"""Terminal rendering (rich tables, progress, per-graph lines, warnings) used only by the CLI."""
