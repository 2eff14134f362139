"""Terminal rendering for the CLI (rich tables, progress, per-graph lines, warnings), and the number formats
(`numbers`) the report's tables share."""
