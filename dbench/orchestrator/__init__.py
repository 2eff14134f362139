"""The parent process of `dbench run`: the request, the graphs to run, the run loop and the worker handle."""
