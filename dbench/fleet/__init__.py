"""`dbench run --fleet ADDRESS`: one run on every machine of a Dask cluster, one timing job per machine,
rows streamed into the caller's results folder under each machine's key (docs/fleet.md)."""
