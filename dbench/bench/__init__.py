"""Timing, statistics, verification, the worker process and the run loop."""
