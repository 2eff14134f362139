"""The reference cache: what verification computes from a graph and its seeded inputs alone (reference
outputs, reference projections, a verified recurrent trajectory), stored once on disk under a content
address and shared by every runtime, run and resume on this machine (`dbench cache`)."""
