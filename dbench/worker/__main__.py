"""`python -m dbench.worker FD PARENT_PID [MEMORY_LIMIT [CPUS]]`: serve jobs on the inherited socket FD
(memory limit 0: none; CPUS as `0,1,2`)."""

from dbench.worker.main import main

main()
