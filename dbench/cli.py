"""The `dbench` command: a thin typer app that parses options, calls the library and prints."""

from __future__ import annotations

import functools
import json
import math
import signal
import sys
from pathlib import Path
from typing import Annotated, Callable, Optional, TypeVar

import typer
from rich.console import Console
from rich.markup import escape

from dbench.cli_group import DbenchGroup, error_line, given, given_path, path_error
from dbench.errors import DbenchError, InputError, UsageError
from dbench.terminal import console

app = typer.Typer(
    cls=DbenchGroup,
    help="DeepBench's kernels as tiny ONNX graphs, timed per op on every inference runtime.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
)
out = console()  # COLUMNS, else the terminal's width, else dbench.terminal.PIPE_WIDTH
err = console(stderr=True)

F = TypeVar("F", bound=Callable)


def friendly(func: F) -> F:
    """Turn a DbenchError into one red line on stderr and its exit code, with no traceback."""

    @functools.wraps(func)
    def wrapper(*args, **kwargs):
        try:
            return func(*args, **kwargs)
        except DbenchError as error:
            error_line(str(error))
            raise typer.Exit(error.exit_code) from None
        except OSError as error:  # a path the command line names that cannot be read (too long, not allowed)
            message = path_error(error)
            if message is None:
                raise
            error_line(message)
            raise typer.Exit(InputError.exit_code) from None

    return wrapper  # type: ignore[return-value]


SuiteOpt = Annotated[
    Optional[str],
    typer.Option("--suite", "-s", metavar="SUITE", parser=given, help="train | inference | inference-server | inference-device | all (user: rows of --kernels without a suite)."),
]
OpsOpt = Annotated[
    Optional[list[str]],
    typer.Option("--ops", "-o", metavar="OP[,OP]", parser=given, help="Op family or RNN cell: gemm, conv, rnn, sparse, vanilla, lstm, gru (repeat or comma-separate)."),
]
AppOpt = Annotated[Optional[list[str]], typer.Option("--app", metavar="APP", parser=given, help="Only kernels from this application (e.g. DeepSpeech).")]
IdOpt = Annotated[Optional[list[str]], typer.Option("--id", metavar="GLOB[,GLOB]", parser=given, help="Only kernel ids matching this glob, e.g. 'gemm_m1760_*' (repeat or comma-separate for several).")]
KernelsOpt = Annotated[
    Optional[Path],
    typer.Option("--kernels", "-k", metavar="FILE.csv", parser=given_path, help="Your own kernel CSV in the catalog's columns; replaces the DeepBench lists."),
]
PrecisionOpt = Annotated[str, typer.Option("--precision", "-p", metavar="PRECISION", parser=given, help="fp32 | fp16 | bf16 | int8.")]
PassesOpt = Annotated[
    Optional[list[str]],
    typer.Option("--pass", metavar="PASS[,PASS]", parser=given, help="Only these passes: fwd, bwd_data, bwd_filter (conv), bwd_weights (rnn). Default: all the suite has."),
]
GemmFormOpt = Annotated[str, typer.Option("--gemm-form", metavar="FORM", parser=given, help="gemm (ONNX Gemm with transposes and C) | matmul.")]
RnnFormOpt = Annotated[str, typer.Option("--rnn-form", metavar="FORM", parser=given, help="op (ONNX RNN/LSTM/GRU) | recurrence (DeepBench's: no W·x_t).")]
GruActOpt = Annotated[str, typer.Option("--gru-activation", metavar="tanh|relu", parser=given, help="GRU output non-linearity: tanh (what DeepBench's code ran) | relu (its README).")]
Int8FormOpt = Annotated[
    Optional[str],
    typer.Option("--int8-form", metavar="FORM", parser=given, help="qlinear | qdq | integer. Default: the runtime's preferred form (gen: qdq)."),
]
FromModelOpt = Annotated[
    Optional[Path],
    typer.Option("--from-model", metavar="MODEL.onnx", parser=given_path, help="An ONNX model: its compute nodes become kernels (identical nodes counted once, with 'copies')."),
]
DimOpt = Annotated[
    Optional[list[str]],
    typer.Option("--dim", metavar="NAME=N[,NAME=N]", parser=given, help="Symbolic dimension sizes of the model's inputs: NAME=N, comma-separated or repeated (e.g. batch=1,seq=128)."),
]
BatchOpt = Annotated[
    Optional[list[str]],
    typer.Option("--batch", "-b", metavar="N[,N]", parser=given, help="Each kernel at these batch sizes (GEMM and sparse N, conv n, RNN batch), e.g. 1,8,32; repeat or comma-separate."),
]
NoPadOpt = Annotated[bool, typer.Option("--no-pad", help="int8: do not round dims up to multiples of 4 (DeepBench pads by default).")]
QuickOpt = Annotated[bool, typer.Option("--quick", help="Smoke run: minimal warm-up and sampling; more rounds and a per-node profile only where they cost no more than the sampling.")]
MinTimeOpt = Annotated[Optional[float], typer.Option("--min-time", metavar="SECONDS", help="Minimum sampling time per graph, all rounds together, seconds (default 2); a round after the first pays its own work (inputs, preparing, warm-up) out of its share.")]
MaxTimeOpt = Annotated[Optional[float], typer.Option("--max-time", metavar="SECONDS", help="Maximum sampling time per graph, seconds (default 10).")]
WarmupOpt = Annotated[Optional[float], typer.Option("--warmup", metavar="SECONDS", help="Minimum warm-up time per graph and round, seconds (default 0.05).")]
GraphOptOpt = Annotated[str, typer.Option("--graph-opt", metavar="LEVEL", parser=given, help="Graph optimisation level: disable | basic | extended | all.")]
RuntimePrecisionOpt = Annotated[bool, typer.Option("--allow-runtime-precision", help="Let the runtime pick its execution precision (recorded as such).")]
WaitOpt = Annotated[bool, typer.Option("--wait", help="When another dbench is timing on this machine, wait for it to finish (default: refuse, naming it).")]
OverlapOpt = Annotated[bool, typer.Option("--overlap", help="When another dbench is timing on this machine, time beside it anyway: every row of both runs timed meanwhile says so (overlapped).")]


def _lock_policy(wait: bool, overlap: bool) -> str:
    """refuse (the default), wait or overlap: what to do when another dbench is timing on this machine."""
    if wait and overlap:
        raise UsageError("--wait and --overlap contradict each other; give one of them")
    return "wait" if wait else "overlap" if overlap else "refuse"


def _waiting(line: str) -> None:
    err.print(f"[yellow]{escape(line)}[/]", highlight=False, soft_wrap=True)


def _fraction(text: str, flag: str) -> float:
    """`5%` or `0.05` as 0.05; one line naming the fix otherwise (a bare `5` is ambiguous)."""
    value = text.strip()
    percent = value.endswith("%")
    try:
        number = float(value.rstrip("%"))
    except ValueError:
        number = math.nan
    if not math.isfinite(number) or (not percent and number > 1):
        raise UsageError(f"{flag} {text!r} is not a change; write a percentage or a fraction, e.g. {flag} 5% or {flag} 0.05")
    return number / 100 if percent else number


def _split(values: Optional[list[str]], flag: str = "--option") -> tuple[str, ...]:
    """Repeated or comma-separated values; a flag given only empty values (`--ops ''`) is an error,
    not a silent "all"."""
    split = tuple(v.strip() for value in values or [] for v in value.split(",") if v.strip())
    if values and not split:
        raise UsageError(f"{flag} was given no value; name one (see --help) or leave {flag} out for all")
    return split


def _ids(values: Optional[list[str]]) -> Optional[str]:
    """Repeated or comma-separated --id globs as one comma-separated selector (kernel ids hold no comma)."""
    return ",".join(_split(values, "--id")) or None


def _kernels(command: str, suite: Optional[str], ops, apps, pattern, kernels_file: Optional[Path]):
    from dbench.catalog import Selection, load_catalog, load_kernel_file, select
    from dbench.catalog.select import suite_for

    source = load_kernel_file(kernels_file) if kernels_file else load_catalog()
    selection = Selection(suite_for(command, suite, from_catalog=not kernels_file), _split(ops, "--ops"), _split(apps, "--app"), _ids(pattern))
    return selection, select(source, selection)


def _gen_fields(precision: str, passes, gemm_form: str, rnn_form: str, gru_activation: str, int8_form, no_pad: bool,
                batch: Optional[list[str]] = None) -> dict:
    """The generation options as JSON-ready fields (int8_form None: the runtime's preferred form)."""
    from dbench.catalog.batch import parse_batches

    return dict(precision=precision, passes=list(_split(passes, "--pass")), gemm_form=gemm_form, rnn_form=rnn_form,
                gru_activation=gru_activation, int8_form=int8_form, int8_pad=not no_pad, batch=list(parse_batches(batch or [])))


def _planned(command: str, suite, ops, apps, pattern, kernels: Optional[Path], fields: dict):
    """The selection and the graphs it yields (gen, export), or one line when it selects no kernel."""
    from dbench.gen.options import GenOptions
    from dbench.gen.plan import plan

    selection, selected = _kernels(command, suite, ops, apps, pattern, kernels)
    options = GenOptions.from_fields(fields, "qdq")
    if not selected:
        raise UsageError(selection.nothing_matches(f"--kernels {kernels}" if kernels else "the DeepBench catalog"))
    return selection, plan(selected, selection.suite_tags, options)


@app.command("list")
@friendly
def list_kernels(
    suite: SuiteOpt = None,
    ops: OpsOpt = None,
    app_: AppOpt = None,
    pattern: IdOpt = None,
    kernels: KernelsOpt = None,
    batch: BatchOpt = None,
    fmt: Annotated[str, typer.Option("--format", "-f", metavar="table|csv|json", parser=given, help="table | csv | json.")] = "table",
    from_model: FromModelOpt = None,
    dim: DimOpt = None,
) -> None:
    """List the kernels a selection holds (DeepBench's duplicates are one kernel with several copies)."""
    from dbench.catalog.batch import parse_batches, with_batches
    from dbench.catalog.listing import kernel_rows, to_csv
    from dbench.render.tables import kernels_table

    if from_model:
        _only_model("--from-model", suite=suite, ops=ops, app=app_, id=pattern, kernels=kernels, batch=batch)
        return _list_model(from_model, dim, fmt)
    _only_with_model(dim)
    selection, selected = _kernels("list", suite, ops, app_, pattern, kernels)
    selected = with_batches(selected, parse_batches(batch or []))
    if not selected:  # as gen, export and run: an empty selection is a mistyped selector, not an answer
        raise UsageError(selection.nothing_matches(f"--kernels {kernels}" if kernels else "the DeepBench catalog"))
    rows = kernel_rows(selected, selection.suite_tags)
    if fmt == "json":
        sys.stdout.write(json.dumps(rows, indent=1) + "\n")
    elif fmt == "csv":
        sys.stdout.write(to_csv(rows))
    elif fmt == "table":
        out.print(kernels_table(rows, selection))
    else:
        raise typer.BadParameter(f"unknown format {fmt!r}; valid: table, csv, json", param_hint="--format")


def _only_model(option: str, **selectors) -> None:
    """A model brings its own kernels: a catalog selector beside it would be silently ignored, so refuse it."""
    given = [name for name, value in selectors.items() if value]
    if given:
        raise UsageError(f"{option} takes its kernels from the model; drop --{given[0].replace('_', '-')}")


def _only_with_model(dim: Optional[list[str]]) -> None:
    """--dim sizes a model's inputs: without --from-model it would be ignored without a word."""
    if dim:
        raise UsageError("--dim sizes the inputs of a model; give --from-model MODEL.onnx too, or drop --dim")


def _list_model(path: Path, dim: Optional[list[str]], fmt: str) -> None:
    """`dbench list --from-model`: the model's kernels and the nodes that are not kernels."""
    from dbench.frommodel.dims import parse_dims
    from dbench.frommodel.output import kernel_rows, kernels_csv, no_kernel_nodes, skipped_rows
    from dbench.frommodel.walk import model_kernels
    from dbench.render.frommodel import kernels_table, not_expressed_table

    if fmt not in ("table", "csv", "json"):
        raise typer.BadParameter(f"unknown format {fmt!r}; valid: table, csv, json", param_hint="--format")
    extraction = model_kernels(path, parse_dims(dim or []))
    if not extraction.kernels:  # as an empty selection anywhere else: an error, with the reasons shown
        out.print(not_expressed_table(extraction))
        raise UsageError(no_kernel_nodes(path, extraction))
    if fmt == "json":
        sys.stdout.write(json.dumps({"kernels": kernel_rows(extraction), "not_kernels": skipped_rows(extraction)}, indent=1) + "\n")
    elif fmt == "csv":
        sys.stdout.write(kernels_csv(extraction))
    else:
        out.print(kernels_table(extraction))
        if extraction.skipped:
            out.print(not_expressed_table(extraction))


def _gen_model(path: Path, dim: Optional[list[str]], out_dir: Path) -> None:
    """`dbench gen --from-model`: kernels CSV, not-expressed sidecar and one graph per kernel in <out>/<model>/."""
    from dbench.frommodel.dims import parse_dims
    from dbench.frommodel.output import KERNELS_FILE, NOT_EXPRESSED_FILE, build_graphs, no_kernel_nodes, write_outputs
    from dbench.frommodel.walk import model_kernels
    from dbench.render.frommodel import kernels_table, not_expressed_table

    dims = parse_dims(dim or [])
    extraction = model_kernels(path, dims)
    if not extraction.kernels:
        raise UsageError(no_kernel_nodes(path, extraction))
    folder = write_outputs(extraction, build_graphs(extraction, dims), out_dir / extraction.model)
    out.print(kernels_table(extraction))
    if extraction.skipped:
        out.print(not_expressed_table(extraction, f"every node is listed in {folder / NOT_EXPRESSED_FILE}"))
    out.print(f"{folder}: {len(extraction.kernels)} graphs, {KERNELS_FILE} (for --kernels), "
              f"{len(extraction.not_expressed)} nodes not expressed ({NOT_EXPRESSED_FILE})", highlight=False)


@app.command()
@friendly
def gen(
    suite: SuiteOpt = None,
    ops: OpsOpt = None,
    app_: AppOpt = None,
    pattern: IdOpt = None,
    kernels: KernelsOpt = None,
    precision: PrecisionOpt = "fp32",
    passes: PassesOpt = None,
    gemm_form: GemmFormOpt = "gemm",
    rnn_form: RnnFormOpt = "op",
    gru_activation: GruActOpt = "tanh",
    int8_form: Int8FormOpt = None,
    no_pad: NoPadOpt = False,
    batch: BatchOpt = None,
    out_dir: Annotated[Path, typer.Option("--out", metavar="FOLDER", parser=given_path, help="Output folder; graphs go to <out>/<suite>/.")] = Path("graphs"),
    force: Annotated[bool, typer.Option("--force", help="Rewrite every graph file even when unchanged.")] = False,
    from_model: FromModelOpt = None,
    dim: DimOpt = None,
) -> None:
    """Write one small .onnx per kernel (no weight data inside) plus a manifest to run it anywhere."""
    if from_model:
        _only_model("--from-model", suite=suite, ops=ops, app=app_, id=pattern, kernels=kernels, passes=passes, batch=batch)
        return _gen_model(from_model, dim, out_dir)
    _only_with_model(dim)
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

    from dbench.gen.writer import prepare_folder, write_graphs

    selection, requests = _planned("gen", suite, ops, app_, pattern, kernels,
                                   _gen_fields(precision, passes, gemm_form, rnn_form, gru_activation, int8_form, no_pad, batch))
    folder = prepare_folder(out_dir / selection.suite)
    counts: dict[str, int] = {}
    skipped: dict[str, str] = {}
    columns = (TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn())
    with Progress(*columns, console=err, transient=True) as progress:
        task = progress.add_task("generating", total=len(requests))
        for written in write_graphs(requests, folder, force):
            counts[written.status] = counts.get(written.status, 0) + 1
            if written.reason:
                skipped[written.reason] = skipped.get(written.reason, 0) + 1
            progress.advance(task)
    summary = ", ".join(f"{n} {status}" for status, n in sorted(counts.items())) or "nothing selected"
    out.print(f"{folder}: {summary}")
    for reason, n in skipped.items():
        out.print(f"[yellow]skipped {n}:[/] {escape(reason)}")


@app.command()
@friendly
def export(
    out_path: Annotated[Path, typer.Option("--out", metavar="BUNDLE", parser=given_path, help="bundle.tar.gz (or .tgz) for an archive; any other name is a new folder.")],
    suite: SuiteOpt = None,
    ops: OpsOpt = None,
    app_: AppOpt = None,
    pattern: IdOpt = None,
    kernels: KernelsOpt = None,
    precision: PrecisionOpt = "fp32",
    passes: PassesOpt = None,
    gemm_form: GemmFormOpt = "gemm",
    rnn_form: RnnFormOpt = "op",
    gru_activation: GruActOpt = "tanh",
    int8_form: Int8FormOpt = None,
    no_pad: NoPadOpt = False,
    batch: BatchOpt = None,
    units: Annotated[Optional[Path], typer.Option("--units", metavar="MODEL", parser=given_path, help="Export MODEL's execution units as --runtime cuts them here (with an empty graph), for dbench predict --units-run.")] = None,
    dim: DimOpt = None,
    runtime: Annotated[str, typer.Option("--runtime", "-r", metavar="RUNTIME", parser=given, help="With --units: the runtime whose layers cut the model.")] = "ort-cpu",
    threads: Annotated[Optional[int], typer.Option("--threads", "-t", metavar="N", help="With --units: the intra-op threads the board will run them with.")] = None,
    device: Annotated[Optional[str], typer.Option("--device", metavar="DEVICE", parser=given, help="With --units: the runtime device.")] = None,
    graph_opt: Annotated[str, typer.Option("--graph-opt", metavar="LEVEL", parser=given, help="With --units: graph optimisation level.")] = "all",
    option: Annotated[Optional[list[str]], typer.Option("--option", metavar="KEY=VALUE", parser=given, help="With --units: runtime option KEY=VALUE; repeatable.")] = None,
) -> None:
    """Pack graphs, manifest, checksums and a README into a bundle for another machine (an ARM board);
    with --units, a model's execution units instead of DeepBench kernels."""
    from dbench.bundle.export import export_bundle

    if units:
        _only_model("--units", suite=suite, ops=ops, app=app_, id=pattern, kernels=kernels, passes=passes)
        return _export_units(units, dim, runtime, threads, device, graph_opt, option, out_path)
    if dim or runtime != "ort-cpu" or threads is not None or device or graph_opt != "all" or option:
        raise UsageError("--dim, --runtime, --threads, --device, --graph-opt and --option apply to --units MODEL; "
                         "DeepBench's kernels are exported for any runtime")

    selection, requests = _planned("export", suite, ops, app_, pattern, kernels,
                                   _gen_fields(precision, passes, gemm_form, rnn_form, gru_activation, int8_form, no_pad, batch))
    exported = export_bundle(requests, selection.suite, out_path)
    out.print(f"{exported.path}: {exported.graphs} graphs + manifest, SHA256SUMS, README.txt; run with: dbench run --graphs {exported.path.name}", highlight=False)
    for reason, n in exported.skipped.items():
        out.print(f"[yellow]skipped {n}:[/] {escape(reason)}")


def _export_units(model: Path, dim, runtime: str, threads, device, graph_opt: str, option, out_path: Path) -> None:
    """`dbench export --units MODEL`: the units as the runtime cuts them here, as a bundle."""
    from dbench.frommodel.dims import parse_dims
    from dbench.orchestrator.predict import export_units
    from dbench.orchestrator.request import RunRequest

    request = RunRequest(graphs=str(model), runtime=runtime, threads=threads, device=device, graph_optimization=graph_opt,
                         extra=_pairs(option), dims=parse_dims(dim or []))
    exported, left_out = export_units(request, out_path)
    out.print(f"{exported.path}: {exported.graphs} graphs (the units of {model.name} and an empty graph) + manifest, "
              f"SHA256SUMS, README.txt; run with: dbench run --graphs {exported.path.name} --runtime {runtime}", highlight=False)
    for unit, reason in left_out.items():
        out.print(f"[yellow]left out {escape(unit)}:[/] {escape(reason)}")


@app.command()
@friendly
def runtimes() -> None:
    """List every known runtime, whether it is usable here, its version, and why not."""
    from dbench.runtimes.registry import RUNTIMES, status
    from dbench.render.tables import runtimes_table

    out.print(runtimes_table([status(name) for name in RUNTIMES]))


def _stop_as_on_ctrl_c(signum: int, frame: object) -> None:
    """SIGTERM (a scheduler, `kill`, a job started in the background where Ctrl-C is ignored) stops a
    run as Ctrl-C does: finished rows kept, the worker's group killed, the resume command printed."""
    raise KeyboardInterrupt


@app.command()
@friendly
def run(
    suite: SuiteOpt = None,
    ops: OpsOpt = None,
    app_: AppOpt = None,
    pattern: IdOpt = None,
    kernels: KernelsOpt = None,
    precision: PrecisionOpt = "fp32",
    passes: PassesOpt = None,
    gemm_form: GemmFormOpt = "gemm",
    rnn_form: RnnFormOpt = "op",
    gru_activation: GruActOpt = "tanh",
    int8_form: Int8FormOpt = None,
    no_pad: NoPadOpt = False,
    batch: BatchOpt = None,
    graphs: Annotated[Optional[Path], typer.Option("--graphs", "-g", metavar="FOLDER|BUNDLE", parser=given_path, help="Run the graphs of a folder made by dbench gen (its manifest) instead of generating in memory.")] = None,
    runtime: Annotated[str, typer.Option("--runtime", "-r", metavar="RUNTIME[,RUNTIME]", parser=given, help="Runtime name, see `dbench runtimes`; several comma-separated are interleaved graph by graph in every round (compare them with dbench compare RUN); one named twice is an A/A run, the machine's noise for such a comparison.")] = "ort-cpu",
    device: Annotated[Optional[str], typer.Option("--device", metavar="DEVICE", parser=given, help="Runtime device (OpenVINO: CPU, GPU, NPU, AUTO; CUDA: device index).")] = None,
    threads: Annotated[Optional[str], typer.Option("--threads", "-t", metavar="N[,N]", parser=given, help="Intra-op threads (default: every core; with --streams, threads per stream, default its share of the cores); several comma-separated are interleaved like runtimes.")] = None,
    weights: Annotated[str, typer.Option("--weights", metavar="auto|const|input", parser=given, help="auto (const for inference, input for training graphs) | const | input.")] = "auto",
    graph_opt: GraphOptOpt = "all",
    allow_runtime_precision: RuntimePrecisionOpt = False,
    option: Annotated[Optional[list[str]], typer.Option("--option", metavar="KEY=VALUE", parser=given, help="Runtime option KEY=VALUE (provider options, config keys); repeatable.")] = None,
    quick: QuickOpt = False,
    min_time: MinTimeOpt = None,
    max_time: MaxTimeOpt = None,
    warmup: WarmupOpt = None,
    warmup_calls: Annotated[Optional[int], typer.Option("--warmup-calls", metavar="N", help="Minimum warm-up calls per graph and round (default 1).")] = None,
    rounds: Annotated[Optional[int], typer.Option("--rounds", metavar="N", help="Rounds per graph, each in a fresh worker process and session at another moment of the run; the sampling time is divided among them (default 3; 5 when the run interleaves variants, e.g. --runtime a,b or --threads 1,2).")] = None,
    iterations: Annotated[Optional[int], typer.Option("--iterations", "-n", metavar="N", help="Time exactly N calls per graph (divided among the rounds) instead of stopping by time.")] = None,
    history: Annotated[Optional[int], typer.Option("--history", metavar="N", help="Earlier runs per graph in this machine's results folder whose spread measures the drift between runs that every row's interval carries (default 10; 0: the rounds alone).")] = None,
    percentiles: Annotated[Optional[str], typer.Option("--percentiles", metavar="P[,P]", parser=given, help="Latency percentiles to record per row, e.g. 50,90,99,99.9 (default 50,90,99).")] = None,
    no_verify: Annotated[bool, typer.Option("--no-verify", help="Skip the comparison with the numpy reference.")] = False,
    profile_runs: Annotated[Optional[int], typer.Option("--profile-runs", metavar="N", help="Most runs the untimed per-node profiling pass times (default 10; it times about 0.05 s of calls, at least one, after a warm-up in its own session); 0 = no pass.")] = None,
    no_profile: Annotated[bool, typer.Option("--no-profile", help="No per-node profiling pass: saves a second session per graph (building it again, pre-packing included) and its calls; rows then have no per-node times, kernel names or executed precision (unknown).")] = False,
    timeout: Annotated[float, typer.Option("--timeout", metavar="SECONDS", help="Seconds a graph may spend in one phase (preparing, timing, verifying, profiling...) before its worker is killed as hung.")] = 600.0,
    cpus: Annotated[Optional[str], typer.Option("--cpus", metavar="CPUS", parser=given, help="Pin the worker to these CPUs, e.g. 4-7 (a board's big cluster); default threads = their count.")] = None,
    memory_limit: Annotated[Optional[float], typer.Option("--memory-limit", metavar="GiB", help="Address-space limit of the worker in GiB (out-of-memory becomes an `oom` row).")] = None,
    out_dir: Annotated[Path, typer.Option("--out", metavar="FOLDER", parser=given_path, help="Results folder; the run goes to <out>/<machine>/<run-id>.jsonl.")] = Path("results"),
    resume: Annotated[Optional[str], typer.Option("--resume", metavar="RUN-ID", parser=given, help="Complete an interrupted run by its id; it takes every selection, runtime and timing option from the run (giving one is an error); only --out applies.")] = None,
    model: Annotated[Optional[Path], typer.Option("--model", metavar="MODEL.onnx", parser=given_path, help="Time a whole ONNX model (inputs from its declared shapes, --dim for symbolic ones).")] = None,
    dim: DimOpt = None,
    kernels_run: Annotated[Optional[str], typer.Option("--kernels-run", metavar="RUN-ID", parser=given, help="With --model: a run of its `gen --from-model` kernels to print the model beside their sum.")] = None,
    json_summary: Annotated[bool, typer.Option("--json", help="Print the finished run as JSON on stdout (rows, statuses, files, warnings) for scripts; tables go to stderr.")] = False,
    scenario: Annotated[Optional[str], typer.Option("--scenario", metavar="SCENARIO", parser=given, help="latency (one request at a time, the default) | throughput (every stream kept busy) | server (Poisson arrivals at --rate).")] = None,
    streams: Annotated[Optional[str], typer.Option("--streams", metavar="N[,N]", parser=given, help="Requests in flight on one compiled graph, each with its share of the cores (or --threads each); several comma-separated are swept as variants. Implies --scenario throughput.")] = None,
    rate: Annotated[Optional[float], typer.Option("--rate", metavar="RATE", help="Server scenario: Poisson arrivals per second (seeded schedule).")] = None,
    latency_bound: Annotated[Optional[float], typer.Option("--latency-bound", metavar="MS", help="Server scenario: p99 latency bound in ms: the share over it, and a search for the highest rate that keeps it.")] = None,
    search_time: Annotated[Optional[float], typer.Option("--search-time", metavar="SECONDS", help="Server scenario: seconds the max-rate search may take per graph (default 20; 0: no search).")] = None,
    show_profile: Annotated[bool, typer.Option("--show-profile", help="Print every row's per-node profile after the run (layer, op, kernel, precision, time, share), as benchmark_app -pc.")] = False,
    budget: Annotated[Optional[str], typer.Option("--budget", metavar="DURATION", parser=given, help="Fit the run in this time (600, 90s, 10m, 1.5h): sampling, then the profiling pass, are cut before it starts, and the plan line says what was given up; with --resolve, no round starts that would overrun it.")] = None,
    resolve: Annotated[Optional[str], typer.Option("--resolve", metavar="X%", parser=given, help="Rounds per graph until its anytime-valid 95% interval (paired against the first variant when several are interleaved) is within ±X (e.g. 5%), at most --rounds (default 60) a graph and --budget in all; graphs that cannot get there say so.")] = None,
    wait: WaitOpt = False,
    overlap: OverlapOpt = False,
    shard: Annotated[Optional[str], typer.Option("--shard", metavar="I/N", parser=given, help="Run part I of N disjoint parts of the selection, balanced by estimated time (a Slurm array, a Kubernetes indexed job); report and compare merge the parts.")] = None,
    shard_label: Annotated[Optional[str], typer.Option("--shard-label", metavar="LABEL", parser=given, help="With --shard: the run the parts share (default: Slurm's array job id, else the selection's fingerprint).")] = None,
    fleet: Annotated[Optional[str], typer.Option("--fleet", metavar="ADDRESS", parser=given, help="Run on every machine of a Dask cluster (tcp://HOST:8786 or a scheduler file), one timing job per machine; rows stream into --out under each machine's key (docs/fleet.md; needs the fleet extra).")] = None,
    fleet_wait: Annotated[Optional[float], typer.Option("--fleet-wait", metavar="SECONDS", help="With --fleet: how long to wait, once the others are done, for machines that left to come back (default 120).")] = None,
) -> None:
    """Time every selected graph on a runtime, verify it, and log one row per graph as it finishes.

    Exit status: 0 when every row is ok, disputed or unsupported, 3 when any is mismatch, failed, crashed,
    timeout or oom, 2 for bad input, 1 for other errors, 130 on Ctrl-C or SIGTERM."""
    from dbench.orchestrator.estimate import parse_duration
    from dbench.orchestrator.request import RunRequest, memory_limit_bytes
    from dbench.orchestrator.run import execute_run, plan_run
    from dbench.frommodel.dims import parse_dims
    from dbench.render.run import RunProgress, print_run
    from dbench.store.compare import open_run

    if model and graphs:
        raise UsageError("--model runs one model file and --graphs a folder; give one of them")
    if model:
        _only_model("--model", suite=suite, ops=ops, app=app_, id=pattern, kernels=kernels, batch=batch)
    if kernels_run and not model:
        raise UsageError("--kernels-run compares a whole model's run with its kernels; give --model too")
    kernels_log = open_run(out_dir, kernels_run) if kernels_run else None  # a bad run id fails before timing
    if no_profile and profile_runs:
        raise UsageError(f"--no-profile and --profile-runs {profile_runs} contradict each other; give one of them")
    graphs = model or graphs
    request = RunRequest(
        suite=suite, ops=_split(ops, "--ops"), apps=_split(app_, "--app"), pattern=_ids(pattern),
        kernels=str(kernels) if kernels else None, graphs=str(graphs) if graphs else None,
        gen=_gen_fields(precision, passes, gemm_form, rnn_form, gru_activation, int8_form, no_pad, batch),
        runtime=runtime, device=device, threads=_counts(threads, "--threads"), weights=weights, graph_optimization=graph_opt,
        allow_runtime_precision=allow_runtime_precision, extra=_pairs(option), quick=quick, min_time=min_time,
        max_time=max_time, warmup=warmup, verify=not no_verify, timeout=timeout,
        memory_limit=memory_limit_bytes(memory_limit), dims=parse_dims(dim or []),
        cpus=cpus, rounds=rounds, iterations=iterations, warmup_calls=warmup_calls, history=history,
        percentiles=_numbers(percentiles, "--percentiles") if percentiles is not None else None,
        scenario=scenario, streams=_counts(streams, "--streams"), rate=rate, latency_bound=latency_bound,
        search_time=search_time, budget=parse_duration(budget) if budget is not None else None,
        resolve=_fraction(resolve, "--resolve") if resolve is not None else None,
        **({"profile_runs": 0} if no_profile else {} if profile_runs is None else {"profile_runs": profile_runs}),
        shard=shard, shard_label=shard_label,
    )
    if fleet is not None:
        return _run_fleet(request, fleet, fleet_wait, out_dir, resume, **{"--model": model, "--kernels-run": kernels_run,
                          "--json": json_summary, "--show-profile": show_profile})
    if fleet_wait is not None:
        raise UsageError("--fleet-wait is how long a fleet waits for machines that left; add --fleet ADDRESS, or drop it")
    if resume and resume.startswith("fleet-"):
        raise UsageError(f"{resume} is a fleet; finish it with: dbench run --fleet ADDRESS --resume {resume}")
    if kernels_log is not None:
        from dbench.frommodel.predict import check_kernels_run

        kernel_rows = kernels_log.rows()
        check_kernels_run(model, request, kernels_log.header(), kernel_rows)
    planned = plan_run(request, out_dir, resume, _lock_policy(wait, overlap), _waiting)
    before = signal.signal(signal.SIGTERM, _stop_as_on_ctrl_c)
    try:
        with RunProgress(err, planned) as progress:
            result = execute_run(planned, progress)
    finally:
        signal.signal(signal.SIGTERM, before)
    tables = err if json_summary else out  # with --json, stdout holds the JSON alone
    print_run(tables, result)
    if show_profile:
        _print_profiles(tables, result.rows)
    if kernels_log is not None:
        from dbench.frommodel.predict import model_vs_kernels
        from dbench.render.frommodel import prediction_table

        tables.print(prediction_table(model_vs_kernels(result.rows, kernel_rows)))
    if json_summary:
        from dbench.render.summary import run_summary

        sys.stdout.write(json.dumps(run_summary(result), indent=1, allow_nan=False, default=str) + "\n")
    raise typer.Exit(result.exit_code)


def _run_fleet(request, address: str, wait: Optional[float], out_dir: Path, resume: Optional[str], **others) -> None:
    """`dbench run --fleet ADDRESS`: the run on every machine of the cluster, a table per machine at the end."""
    from dbench.fleet.driver import WAIT_S, execute_fleet, plan_fleet
    from dbench.render.fleet import FleetProgress, machines_table, result_lines

    given = [flag for flag, value in others.items() if value]
    if given:
        raise UsageError(f"{given[0]} does not apply to a fleet run; drop it (report and compare read the fleet's rows)")
    plan = plan_fleet(request, address, out_dir, resume, WAIT_S if wait is None else wait)
    before = signal.signal(signal.SIGTERM, _stop_as_on_ctrl_c)
    try:
        with FleetProgress(err, plan) as progress:
            result = execute_fleet(plan, progress)
    finally:
        signal.signal(signal.SIGTERM, before)
    out.print(machines_table(result))
    for line in result_lines(result):
        out.print(escape(line), highlight=False, soft_wrap=True)
    raise typer.Exit(130 if result.interrupted else result.exit_code)


@app.command("fleet")
@friendly
def fleet_members(
    address: Annotated[str, typer.Argument(metavar="ADDRESS", parser=given, help="The Dask scheduler's address (tcp://HOST:8786) or its scheduler file.")],
) -> None:
    """The machines a Dask cluster holds, as `dbench run --fleet ADDRESS` would use them: one per machine
    key, its workers, and whether it can serve this dbench (needs the fleet extra)."""
    from dbench.fleet.engine import connect
    from dbench.fleet.machines import members, one_per_machine, refusal
    from dbench.render.fleet import members_table

    client = connect(address)
    try:
        found = members(client, {})
    finally:
        client.close()
    chosen = one_per_machine(found)
    out.print(members_table(found, chosen, {key: refusal(member) for key, member in chosen.items()}))
    if not chosen:
        raise InputError(f"the cluster at {address} has no worker that can serve; join a machine with: "
                         f"dask worker {address} --nthreads 1")


@app.command()
@friendly
def predict(
    model: Annotated[Optional[Path], typer.Argument(metavar="MODEL", parser=given_path, help="The ONNX model to predict (not needed with --resume).")] = None,
    dim: DimOpt = None,
    runtime: Annotated[str, typer.Option("--runtime", "-r", metavar="RUNTIME", parser=given, help="The runtime whose layers cut the model: ort-cpu or openvino.")] = "ort-cpu",
    device: Annotated[Optional[str], typer.Option("--device", metavar="DEVICE", parser=given, help="Runtime device (OpenVINO: CPU, GPU, NPU, AUTO).")] = None,
    threads: Annotated[Optional[int], typer.Option("--threads", "-t", metavar="N", help="Intra-op threads (default: every core).")] = None,
    graph_opt: GraphOptOpt = "all",
    allow_runtime_precision: RuntimePrecisionOpt = False,
    option: Annotated[Optional[list[str]], typer.Option("--option", metavar="KEY=VALUE", parser=given, help="Runtime option KEY=VALUE; repeatable.")] = None,
    quick: QuickOpt = False,
    min_time: MinTimeOpt = None,
    max_time: MaxTimeOpt = None,
    warmup: WarmupOpt = None,
    rounds: Annotated[Optional[int], typer.Option("--rounds", metavar="N", help="Rounds per graph; the model, its units and the empty graph share them, so the error gets a paired interval (default 3).")] = None,
    no_verify: Annotated[bool, typer.Option("--no-verify", help="Skip verifying the model and its units against onnx.reference.")] = False,
    profile_runs: Annotated[int, typer.Option("--profile-runs", metavar="N", help="Runs of the profiling pass (the units' times inside the model come from the model's).")] = 10,
    timeout: Annotated[float, typer.Option("--timeout", metavar="SECONDS", help="Seconds a graph may spend in one phase before its worker is killed as hung.")] = 600.0,
    cpus: Annotated[Optional[str], typer.Option("--cpus", metavar="CPUS", parser=given, help="Pin the workers to these CPUs, e.g. 4-7.")] = None,
    memory_limit: Annotated[Optional[float], typer.Option("--memory-limit", metavar="GiB", help="Address-space limit of the worker in GiB.")] = None,
    out_dir: Annotated[Path, typer.Option("--out", metavar="FOLDER", parser=given_path, help="Results folder; the run goes to <out>/<machine>/<run-id>.jsonl.")] = Path("results"),
    resume: Annotated[Optional[str], typer.Option("--resume", metavar="RUN-ID", parser=given, help="Complete an interrupted prediction run by its id.")] = None,
    units_run: Annotated[Optional[str], typer.Option("--units-run", metavar="RUN-ID", parser=given, help="Predict from a run of the model's exported units (dbench export --units) on another machine, without running the model there.")] = None,
    wait: WaitOpt = False,
    overlap: OverlapOpt = False,
    top: Annotated[int, typer.Option("--top", metavar="N", help="Units shown, by their time inside the model (0: all).")] = 20,
    fmt: Annotated[str, typer.Option("--format", "-f", metavar="table|json", parser=given, help="table | json (the prediction and every unit).")] = "table",
) -> None:
    """A model's latency from the units its runtime executes: cut the model where the runtime fuses
    (its own optimized graph or runtime model), time every distinct unit, the whole model and an
    empty graph in one run, in rounds, and set the prediction beside the measurement.

    Exit status: 0 when every row is ok, disputed or unsupported, 3 when any is mismatch, failed, crashed,
    timeout or oom, 2 for bad input, 130 on Ctrl-C or SIGTERM."""
    from dbench.frommodel.dims import parse_dims
    from dbench.orchestrator.request import RunRequest, memory_limit_bytes

    if fmt not in ("table", "json"):
        raise UsageError(f"unknown format {fmt!r}; valid: table, json")
    if not 0 <= top <= MAX_TOP:
        raise UsageError(f"--top {top} must be 0 (every unit) to {MAX_TOP:,}")
    if model is None and not resume:
        raise UsageError("give the model to predict (dbench predict MODEL.onnx), or --resume RUN")
    if model is not None and not model.exists():
        raise InputError(f"no model file at {model}; give the path of an .onnx model")
    if resume and units_run:
        raise UsageError("--units-run predicts from a finished run; drop --resume")
    request = RunRequest(
        graphs=str(model) if model else None, runtime=runtime, device=device, threads=threads, graph_optimization=graph_opt,
        allow_runtime_precision=allow_runtime_precision, extra=_pairs(option), quick=quick, min_time=min_time,
        max_time=max_time, warmup=warmup, verify=not no_verify, profile_runs=profile_runs, timeout=timeout,
        memory_limit=memory_limit_bytes(memory_limit), dims=parse_dims(dim or []), cpus=cpus, rounds=rounds)
    if units_run:
        from dbench.orchestrator.predict import units_run_predictions
        from dbench.store.compare import open_run

        _print_predictions(units_run_predictions(model, request, open_run(out_dir, units_run)), top, fmt)
        return
    from dbench.orchestrator.predict import plan_predict
    from dbench.orchestrator.run import execute_run
    from dbench.render.run import RunProgress, print_run
    from dbench.units.prediction import predictions

    planned, _ = plan_predict(RunRequest() if resume else request, out_dir, resume, _lock_policy(wait, overlap), _waiting)
    before = signal.signal(signal.SIGTERM, _stop_as_on_ctrl_c)
    try:
        with RunProgress(err, planned) as progress:
            result = execute_run(planned, progress)
    finally:
        signal.signal(signal.SIGTERM, before)
    if fmt == "table":
        print_run(out, result)
    _print_predictions(predictions(result.rows), top, fmt)
    raise typer.Exit(result.exit_code)


MAX_TOP = 100_000
"""--top's ceiling: more units than any model has, and a number a typo cannot overflow."""


def _print_profiles(target: Console, rows: list[dict]) -> None:
    """Each row's per-node profile; one line for rows without one."""
    from dbench.render.profile import profile_table

    for row in rows:
        table = profile_table(row)
        if table is None:
            target.print(f"no profile for {escape(row['graph_id'])} ({row['status']}; --profile-runs 0 profiles nothing)", highlight=False)
        else:
            target.print(table)


def _print_predictions(found, top: int, fmt: str) -> None:
    """The predictions as tables (with the units and where isolation disagrees) or as JSON."""
    from dbench.render.predict import disagreements, gap_lines, predictions_table, units_table

    if fmt == "json":
        import dataclasses

        sys.stdout.write(json.dumps([{**p.to_dict(), "units": [dataclasses.asdict(u) for u in p.units]} for p in found],
                                    indent=1, default=float) + "\n")
        return
    out.print(predictions_table(found))
    for p in found:
        out.print(units_table(p, top or None))
        for line in (*p.notes, *([f"error interval: {p.interval_note}"] if p.interval_note else [])):
            err.print(f"[yellow]note:[/] {escape(line)}", highlight=False, soft_wrap=True)
        for line in gap_lines(p):
            out.print(f"isolation to model, by cause: {escape(line)}", highlight=False, soft_wrap=True)
        for line in disagreements(p):
            out.print(f"isolation vs model: {escape(line)}", highlight=False, soft_wrap=True)


@app.command()
@friendly
def calibrate(
    runtime: Annotated[str, typer.Option("--runtime", "-r", metavar="RUNTIME[,RUNTIME]", parser=given, help="The runtimes to calibrate, one after the other, each timed twice interleaved (an A/A run) for --budget.")] = "ort-cpu",
    threads: Annotated[Optional[int], typer.Option("--threads", "-t", metavar="N", help="Intra-op threads (default: every core), as the runs it speaks for will use.")] = None,
    budget: Annotated[str, typer.Option("--budget", metavar="DURATION", parser=given, help="How long to measure each runtime (150, 90s, 3m): rounds are given until it is spent.")] = "150s",
    pattern: IdOpt = None,
    out_dir: Annotated[Path, typer.Option("--out", metavar="FOLDER", parser=given_path, help="Results folder; the calibration goes to <out>/<machine>/calibration.json.")] = Path("results"),
    json_summary: Annotated[bool, typer.Option("--json", help="Print the calibration as JSON on stdout.")] = False,
    wait: WaitOpt = False,
    overlap: OverlapOpt = False,
) -> None:
    """Measure this machine's noise as compare and run --resolve meet it: interleaved A/A rounds over the
    device suite's GEMMs (or --id), per runtime, then per size class the SD of a round, the change a fixed
    run resolves at 3, 10 and 30 rounds, the rounds --resolve needs for 2, 5 and 10 %, and a one-line answer."""
    from dbench.calibrate.measure import describe, finish_calibration, plan_calibration
    from dbench.orchestrator.estimate import parse_duration
    from dbench.render.calibrate import calibration_lines, calibration_table
    from dbench.render.run import RunProgress

    seconds, policy = parse_duration(budget), _lock_policy(wait, overlap)
    found = []
    for name in _split([runtime], "--runtime"):
        planned = plan_calibration(name, threads, seconds, out_dir, _ids(pattern), policy, _waiting)
        before = signal.signal(signal.SIGTERM, _stop_as_on_ctrl_c)
        try:
            with RunProgress(err, planned) as progress:
                done = finish_calibration(planned, progress)
        finally:
            signal.signal(signal.SIGTERM, before)
        found.append(done)
        if not json_summary:
            out.print(calibration_table(done.entry))
            for line in calibration_lines(done.entry, done.path, done.entry.wall_s, done.result.header.get("host")):
                out.print(line, highlight=False, soft_wrap=True)
    if json_summary:
        sys.stdout.write(json.dumps([describe(done.entry) for done in found], indent=1, default=float) + "\n")


@app.command()
@friendly
def compare(
    runs: Annotated[list[str], typer.Argument(metavar="RUN...", parser=given, help="Runs by id (globs like 'run-20261125-*' work) or .jsonl path: one interleaved run, two runs, or side a before --vs.")],
    versus: Annotated[Optional[list[str]], typer.Option("--vs", metavar="RUN", parser=given, help="Side b: runs to compare side a with (repeat, or glob); several a side use the runs' spread.")] = None,
    fmt: Annotated[str, typer.Option("--format", "-f", metavar="table|csv|json", parser=given, help="table | csv | json (one row per kernel: ratio, interval, verdict, rounds, resolvable change).")] = "table",
    fdr: Annotated[float, typer.Option("--fdr", metavar="RATE", help="False-discovery rate the table's verdicts control.")] = 0.05,
    resolution: Annotated[float, typer.Option("--resolution", metavar="FRACTION", help="A 'same' kernel that cannot resolve a change this large is counted too noisy to say.")] = 0.10,
    out_dir: Annotated[Path, typer.Option("--out", metavar="FOLDER", parser=given_path, help="Results folder to look run ids up in.")] = Path("results"),
) -> None:
    """Kernel by kernel: time ratio b/a with its 95% interval, the change each kernel can resolve, and
    faster/slower/same verdicts whose false-discovery rate is controlled over the table.

    `dbench compare RUN` reads an interleaved run (--runtime a,b or --threads 1,2): the fairest
    comparison. `dbench compare A B` compares two runs; `dbench compare A1 A2 --vs B1 B2` several a side."""
    from dbench.render.tables import compare_summary, compare_table
    from dbench.store.compare import compare_sides, plan_comparisons

    if fmt not in ("table", "csv", "json"):
        raise UsageError(f"unknown format {fmt!r}; valid: table, csv, json")
    if not (math.isfinite(fdr) and 0 < fdr < 1):
        raise UsageError(f"--fdr {fdr:g} must be a rate between 0 and 1, e.g. 0.05")
    if not (math.isfinite(resolution) and 0 < resolution <= 10):
        raise UsageError(f"--resolution {resolution:g} must be a positive fraction up to 10 (1000%), e.g. 0.10 for 10%")
    comparisons = [compare_sides(a, b, interleaved, fdr, resolution)
                   for a, b, interleaved in plan_comparisons(out_dir, runs, list(versus or []))]
    for comparison in comparisons:
        if not any(p.ratio for p in comparison.pairs):
            raise UsageError(f"{comparison.a.label} and {comparison.b.label} have no graph verified on both sides: "
                             "nothing to compare; check their statuses with dbench report")
    if fmt == "json":
        sys.stdout.write(json.dumps([{**c.summary(), "kernels": [p.to_dict() for p in c.pairs]} for c in comparisons],
                                    indent=1, default=float) + "\n")
    elif fmt == "csv":
        import csv

        writer = csv.writer(sys.stdout, lineterminator="\n")
        header = ["a", "b", *comparisons[0].pairs[0].to_dict()]
        writer.writerow(header)
        for c in comparisons:
            for p in c.pairs:
                writer.writerow([c.a.label, c.b.label, *p.to_dict().values()])
    else:
        for comparison in comparisons:
            out.print(compare_table(comparison, out.width))
            for line in compare_summary(comparison):
                out.print(line, highlight=False)
    for comparison in comparisons:
        for line in dict.fromkeys(comparison.a.warnings + comparison.b.warnings):
            err.print(f"[yellow]warning:[/] {escape(line)}", highlight=False, soft_wrap=True)
        machines = set(comparison.a.machines + comparison.b.machines)
        if len(machines) > 1:
            err.print(f"[bold red]warning: the runs are from different machines ({', '.join(sorted(machines))}): "
                      "the ratios include the hardware, not only the software[/]", highlight=False)


@app.command()
@friendly
def report(
    results: Annotated[list[Path], typer.Argument(metavar="RESULTS", parser=given_path, help="Run logs (.jsonl) or folders of them: any runs, runtimes, machines.")],
    out_dir: Annotated[Path, typer.Option("--out", metavar="FOLDER", parser=given_path, help="Folder for report.md/.html/.xlsx, CSVs and PNGs.")] = Path("report"),
    baseline: Annotated[Optional[str], typer.Option("--baseline", metavar="GROUP", parser=given, help="Column group (or runtime name) speedups are relative to; default the first group measured on this machine (your own runs), else the first.")] = None,
    profile: Annotated[bool, typer.Option("--profile", help="Also every row's per-node profile (layer, op, kernel, precision, time, share), as benchmark_app -pc.")] = False,
) -> None:
    """Side-by-side tables, summary, support matrix, predictions, plots; terminal, Markdown, CSV, xlsx and HTML."""
    from dbench.report.extras import require_extras

    require_extras()  # before any import of pandas, and before any work
    from dbench.report.build import build_report
    from dbench.report.results import load
    from dbench.report.terminal import terminal_report
    from dbench.report.write import write_report
    from dbench.store.metadata import machine_name

    built = build_report(load(results), baseline, home=machine_name(), profile=profile)
    out.print(terminal_report(built))
    written = write_report(built, out_dir)
    out.print(f"wrote {written.html}, {written.markdown.name}, {written.xlsx.name}, "
              f"{len(written.csv)} CSV and {len(written.images)} PNG files in {out_dir}", highlight=False)


@app.command()
@friendly
def peak(
    runtime: Annotated[Optional[list[str]], typer.Option("--runtime", "-r", metavar="RUNTIME[,RUNTIME]", parser=given, help="Runtimes to measure GEMM on (default: every usable one).")] = None,
    precision: Annotated[Optional[list[str]], typer.Option("--precision", "-p", metavar="PRECISION[,PRECISION]", parser=given, help="Precisions to try (default fp32).")] = None,
    out_dir: Annotated[Path, typer.Option("--out", metavar="FOLDER", parser=given_path, help="Results folder; writes <out>/<machine key>/peak.json.")] = Path("results"),
) -> None:
    """Measure this machine's ceilings (memory bandwidth, best GEMM rate per runtime and precision, on the
    shapes that reach it, in rounds) for rooflines; peak.json keeps the highest of every measurement."""
    from dbench.peak.measure import check_choices, measure_peaks
    from dbench.peak.ceilings import save_peaks
    from dbench.runtimes.registry import RUNTIMES, status
    from dbench.store.log import ensure_writable
    from dbench.store.metadata import machine_name

    names = list(_split(runtime, "--runtime")) or [n for n in RUNTIMES if status(n).available]
    check_choices(names, list(_split(precision, "--precision")) or ["fp32"])
    ensure_writable(out_dir / machine_name())  # an --out that cannot be written is refused before measuring
    peaks = measure_peaks(names, list(_split(precision, "--precision")) or ["fp32"],
                          log=lambda line: err.print(escape(line), highlight=False, soft_wrap=True))
    out.print(f"wrote {save_peaks(peaks, out_dir)}", highlight=False)


@app.command()
@friendly
def env() -> None:
    """Print what dbench records about this machine: host metadata, machine key, usable runtimes."""
    from dbench.runtimes.registry import RUNTIMES, status
    from dbench.store.metadata import host_metadata

    host = host_metadata()
    host["cpu_flags"] = " ".join(host["cpu_flags"])
    host["runtimes"] = {name: (s.version if s.available else f"unusable: {s.reason}") for name in RUNTIMES for s in [status(name)]}
    sys.stdout.write(json.dumps(host, indent=1, default=str) + "\n")


@app.command()
@friendly
def cache(
    clear: Annotated[bool, typer.Option("--clear", help="Remove every entry (references are recomputed when next needed).")] = False,
    max_size: Annotated[Optional[float], typer.Option("--max-size", metavar="GiB", help="Set the size cap in GiB (least recently used entries go first); 0 turns the cache off.")] = None,
) -> None:
    """Where the reference cache is and how big: references computed once per graph and shared by every
    runtime, run and resume. Location: $DBENCH_CACHE_DIR, else $XDG_CACHE_HOME/dbench, else ~/.cache/dbench."""
    from dbench.cache.store import open_cache

    store = open_cache()
    if max_size is not None:
        if not (math.isfinite(max_size) and 0 <= max_size <= MAX_CACHE_GIB):
            raise UsageError(f"--max-size {max_size:g} must be a size in GiB from 0 (turns the cache off) to {MAX_CACHE_GIB}")
        store.set_max_bytes(int(max_size * 2**30))
    if clear:
        entries, size = store.clear()
        out.print(f"removed {entries} entries, {size / 2**30:.2f} GiB", highlight=False)
    out.print(store.info().describe(), highlight=False, soft_wrap=True)


MAX_CACHE_GIB = 1 << 20
"""--max-size above a pebibyte is a typo, not a cache."""


def _numbers(text: str, flag: str) -> tuple[float, ...]:
    """Comma-separated numbers (`50,90,99.9`), or one line naming the bad one."""
    values = []
    for part in text.split(","):
        try:
            values.append(float(part))
        except ValueError:
            raise UsageError(f"{flag} {text!r}: {part.strip()!r} is not a number; write numbers separated by commas") from None
    return tuple(values)


def _counts(text: Optional[str], flag: str) -> int | list[int] | None:
    """--threads, --streams: one count, or several comma-separated (interleaved as variants)."""
    if text is None:
        return None
    counts = []
    for part in text.split(","):
        try:
            counts.append(int(part))
        except ValueError:
            raise UsageError(f"{flag} {text!r}: {part.strip()!r} is not a whole number; write e.g. {flag} 2 or {flag} 1,2") from None
    return counts[0] if len(counts) == 1 else counts


def _pairs(values: Optional[list[str]]) -> dict[str, str]:
    pairs = {}
    for value in values or []:
        key, sep, val = value.partition("=")
        if not sep or not key:
            raise UsageError(f"--option {value!r} is not KEY=VALUE; write it as --option KEY=VALUE")
        pairs[key.strip()] = val.strip()
    return pairs


def _register_allreduce() -> None:
    """`dbench allreduce`: the all-reduce module's own thin command (it prints its errors itself)."""
    from dbench.allreduce.cli import command

    app.command("allreduce")(command)  # its help, exit statuses included, is the command's docstring


_register_allreduce()


def main() -> None:
    app()
