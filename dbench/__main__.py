"""`python -m dbench` runs the CLI."""

from dbench.cli import main

main()
