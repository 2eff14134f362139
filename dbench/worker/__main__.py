"""`python -m dbench.worker FD PARENT_PID [MEMORY_LIMIT]`: serve jobs on the inherited socket FD."""

from dbench.worker.main import main

main()
