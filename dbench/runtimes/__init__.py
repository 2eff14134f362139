"""Runtime adapters: one module per runtime family, its heavy imports inside that module only."""
