"""`python -m dbench.allreduce [options]`: one rank of an all-reduce run started by mpiexec/srun (or,
with --np N, the launcher itself)."""

import typer

from dbench.allreduce.cli import command

app = typer.Typer(add_completion=False, pretty_exceptions_enable=False)
app.command()(command)
app(prog_name="python -m dbench.allreduce")
