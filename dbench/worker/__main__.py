"""`python -m dbench.worker FD [MEMORY_LIMIT [CPUS]]`: serve jobs on the inherited socket FD."""

from dbench.worker.main import main

main()
