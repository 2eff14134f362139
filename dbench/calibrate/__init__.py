"""`dbench calibrate`: this machine's noise, measured the way `compare` and `run --resolve` meet it."""
