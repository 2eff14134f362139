"""Verification checks: which check a graph gets (the full reference, randomized projections of a
linear output, recurrent steps from the runtime's own states), each with its stated false-accept
probability, and the cached references they share (docs/method.md, "Verification")."""
