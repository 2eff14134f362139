"""The worker process of `dbench run`: loads, times, verifies and profiles one graph at a time."""
