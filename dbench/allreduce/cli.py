"""The `allreduce` command (registered by dbench.cli, also `python -m dbench.allreduce`): parses, then
runs as the launcher (`--np N`) or as one rank of a running MPI job; user errors as one line."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Annotated

import typer

from dbench.allreduce.options import Arguments
from dbench.cli_group import given, given_path
from dbench.errors import DbenchError

DEFAULT = Arguments()


def command(
    np_: Annotated[
        int | None,
        typer.Option(
            "--np",
            metavar="N",
            help="Start this many ranks (2 or more) with the mpiexec of this environment. Leave out when already "
            "started by mpiexec/srun.",
        ),
    ] = None,
    sizes: Annotated[
        str | None,
        typer.Option(
            "--sizes",
            metavar="SIZES",
            parser=given,
            help="deepbench (its 7 sizes, the default) or element counts, e.g. 100000,4M (K/M/G = 2^10/2^20/2^30).",
        ),
    ] = DEFAULT.sizes,
    begin: Annotated[
        str | None,
        typer.Option(
            "-b",
            "--minbytes",
            metavar="BYTES",
            parser=given,
            help="Sweep like nccl-tests: first message size in bytes (e.g. 8, 1K, 1M).",
        ),
    ] = DEFAULT.begin,
    end: Annotated[
        str | None,
        typer.Option("-e", "--maxbytes", metavar="BYTES", parser=given, help="Sweep: last message size in bytes."),
    ] = DEFAULT.end,
    factor: Annotated[
        int, typer.Option("-f", "--stepfactor", metavar="FACTOR", help="Sweep: multiply the size by this each step.")
    ] = DEFAULT.factor,
    dtype: Annotated[
        str, typer.Option("--dtype", metavar="DTYPE", parser=given, help="float32 | float64 | int32.")
    ] = DEFAULT.dtype,
    impl: Annotated[
        str,
        typer.Option(
            "--impl",
            metavar="IMPL[,IMPL]",
            parser=given,
            help="Comma list of mpi (MPI_Allreduce), ring (baidu-allreduce's ring), nccl (GPU, CuPy).",
        ),
    ] = DEFAULT.impl,
    iters: Annotated[
        str,
        typer.Option(
            "--iters",
            metavar="N|auto|deepbench",
            parser=given,
            help="Timed calls per size: auto (~256 MiB of traffic, 5 to 1000), deepbench (its num_repeats) or a count.",
        ),
    ] = DEFAULT.iters,
    warmup: Annotated[
        int | None,
        typer.Option(
            "--warmup",
            metavar="N",
            help="Untimed calls before the timed block (default: a tenth of the timed calls, at least 2).",
        ),
    ] = DEFAULT.warmup,
    check_repeat: Annotated[
        bool,
        typer.Option("--check-repeat", help="Repeat the checked call 3 more times; the result must be bit-identical."),
    ] = DEFAULT.check_repeat,
    out: Annotated[
        Path,
        typer.Option(
            "--out", metavar="FOLDER", parser=given_path, help="Results folder; the run goes to <out>/<machine>/."
        ),
    ] = DEFAULT.out,
    device: Annotated[
        str,
        typer.Option(
            "--device",
            metavar="cpu|gpu",
            parser=given,
            help="Buffers for mpi and ring: cpu | gpu (needs a CUDA-aware MPI). nccl always uses the GPU.",
        ),
    ] = DEFAULT.device,
    status_dir: Annotated[
        Path | None,
        typer.Option(
            "--status-dir",
            metavar="FOLDER",
            parser=given_path,
            hidden=True,
            help="Set by the launcher: where ranks report.",
        ),
    ] = None,
) -> None:
    """All-reduce (sum) over DeepBench's message sizes with mpi4py, checked exactly (--np N starts mpiexec).

    Exit status: 0 every result is exact; 3 any result is a mismatch (the rule of `dbench run`);
    2 a usage error; 1 the run could not finish (no mpiexec, a rank failed or died, too little memory);
    130 Ctrl-C, which stops mpiexec and every rank."""
    args = Arguments(sizes, begin, end, factor, dtype, impl, iters, warmup, check_repeat, out, device)
    raise typer.Exit(run(np_, args, status_dir))


def run(ranks: int | None, args: Arguments, status_dir: Path | None = None) -> int:
    """With `ranks`, start that many ranks with mpiexec; without, be one rank of the current MPI job.
    Returns the exit code."""
    from dbench.allreduce.launch import launch
    from dbench.allreduce.rank import INTERRUPTED, run_ranks
    from dbench.allreduce.results import print_error

    try:
        if ranks is not None:
            return launch(ranks, args, sys.argv)
        return run_ranks(args, status_dir)
    except DbenchError as error:
        print_error(error)
        return error.exit_code
    except KeyboardInterrupt:  # before mpiexec started, or before MPI was up in a rank
        print_error("interrupted")
        return INTERRUPTED
