"""Results: versioned row schema, append-only run logs, host metadata, exports, tables, compare."""
