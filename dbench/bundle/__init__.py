"""Bundles: a graph folder packed with checksums and a README for another machine (an ARM board),
exported deterministically and verified before anything in it runs."""
