"""`python -m dbench.worker FD [MEMORY_LIMIT]`: serve jobs on the inherited socket FD."""

from dbench.worker.main import main

main()
