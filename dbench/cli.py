"""The `dbench` command: a thin typer app that parses options, calls the library and prints."""

from __future__ import annotations

import dataclasses
import functools
import inspect
import json
import math
import signal
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Annotated, Any, TypeVar

import typer
from rich.console import Console
from rich.markup import escape

from dbench.cli_group import DbenchGroup, error_line, given, given_path, path_error
from dbench.errors import DbenchError, InputError, UsageError
from dbench.option_values import gen_fields, ids, only_model, pairs, split
from dbench.run_options import RUN_OPTIONS, Opt, option
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


def _python_type(opt: Opt) -> Any:
    """The Python type typer reads an option as: optional unless it has a default."""
    base = {"text": str, "texts": list[str], "path": Path, "int": int, "float": float, "flag": bool}[opt.kind]
    return base if opt.kind == "flag" or opt.default is not None else base | None


def _default(opt: Opt) -> Any:
    if opt.kind == "flag":
        return bool(opt.default)
    return Path(opt.default) if opt.kind == "path" and opt.default is not None else opt.default


def annotated(opt: Opt, **changes: Any) -> Any:
    """The typer annotation of an option of dbench.run_options (`changes`: its help or metavar as another
    command says it)."""
    opt = dataclasses.replace(opt, **changes)
    parser = {"text": given, "texts": given, "path": given_path}.get(opt.kind)
    return Annotated[_python_type(opt), typer.Option(*opt.flags, metavar=opt.metavar, parser=parser, help=opt.help)]


def with_options(options: tuple[Opt, ...]) -> Callable[[Callable[[dict[str, Any]], None]], Callable[..., None]]:
    """Make `body(values)` a typer command taking `options` (dbench.run_options) as its parameters, in
    their order, and handing it their values by name."""

    def decorate(body: Callable[[dict[str, Any]], None]) -> Callable[..., None]:
        @functools.wraps(body)
        def command(**values: Any) -> None:
            return body(values)

        command.__signature__ = inspect.Signature(
            [
                inspect.Parameter(o.name, inspect.Parameter.KEYWORD_ONLY, default=_default(o), annotation=annotated(o))
                for o in options
            ]
        )
        return command

    return decorate


# The options other commands share with `dbench run`, as dbench.run_options declares them.
SuiteOpt = annotated(option("suite"))
OpsOpt = annotated(option("ops"))
AppOpt = annotated(option("app_"))
IdOpt = annotated(option("pattern"))
KernelsOpt = annotated(option("kernels"))
PrecisionOpt = annotated(option("precision"))
PassesOpt = annotated(option("passes"))
GemmFormOpt = annotated(option("gemm_form"))
RnnFormOpt = annotated(option("rnn_form"))
AttentionFormOpt = annotated(option("attention_form"))
GruActOpt = annotated(option("gru_activation"))
Int8FormOpt = annotated(option("int8_form"))
DimOpt = annotated(option("dim"))
BatchOpt = annotated(option("batch"))
NoPadOpt = annotated(option("no_pad"))
Int4FormOpt = annotated(option("int4_form"))
Int4BlockOpt = annotated(option("int4_block"))
Int4TypeOpt = annotated(option("int4_type"))
QuickOpt = annotated(option("quick"))
MinTimeOpt = annotated(option("min_time"))
MaxTimeOpt = annotated(option("max_time"))
WarmupOpt = annotated(option("warmup"))
GraphOptOpt = annotated(option("graph_opt"))
RuntimePrecisionOpt = annotated(option("allow_runtime_precision"))
WaitOpt = annotated(option("wait"))
OverlapOpt = annotated(option("overlap"))
FromModelOpt = Annotated[
    Path | None,
    typer.Option(
        "--from-model",
        metavar="MODEL.onnx",
        parser=given_path,
        help="An ONNX model: its compute nodes become kernels (identical nodes counted once, with 'copies').",
    ),
]


def _lock_policy(wait: bool, overlap: bool) -> str:
    """refuse (the default), wait or overlap: what to do when another dbench is timing on this machine."""
    if wait and overlap:
        raise UsageError("--wait and --overlap contradict each other; give one of them")
    return "wait" if wait else "overlap" if overlap else "refuse"


def _waiting(line: str) -> None:
    err.print(f"[yellow]{escape(line)}[/]", highlight=False, soft_wrap=True)


def _kernels(command: str, suite: str | None, ops, apps, pattern, kernels_file: Path | None):
    from dbench.catalog import Selection, load_catalog, load_kernel_file, select
    from dbench.catalog.select import suite_for

    source = load_kernel_file(kernels_file) if kernels_file else load_catalog()
    selection = Selection(
        suite_for(command, suite, from_catalog=not kernels_file),
        split(ops, "--ops"),
        split(apps, "--app"),
        ids(pattern),
    )
    return selection, select(source, selection)


def _planned(command: str, suite, ops, apps, pattern, kernels: Path | None, fields: dict):
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
    fmt: Annotated[
        str, typer.Option("--format", "-f", metavar="table|csv|json", parser=given, help="table | csv | json.")
    ] = "table",
    from_model: FromModelOpt = None,
    dim: DimOpt = None,
) -> None:
    """List the kernels a selection holds (DeepBench's duplicates are one kernel with several copies)."""
    from dbench.catalog.batch import parse_batches, with_batches
    from dbench.catalog.listing import kernel_rows, suite_counts, to_csv
    from dbench.render.tables import kernels_table, suite_counts_table

    if from_model:
        only_model("--from-model", suite=suite, ops=ops, app=app_, id=pattern, kernels=kernels, batch=batch)
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
        if any("source" in row for row in rows):
            out.print(suite_counts_table(suite_counts(selected, selection.suite_tags)))
    else:
        raise typer.BadParameter(f"unknown format {fmt!r}; valid: table, csv, json", param_hint="--format")


def _only_with_model(dim: list[str] | None) -> None:
    """--dim sizes a model's inputs: without --from-model it would be ignored without a word."""
    if dim:
        raise UsageError("--dim sizes the inputs of a model; give --from-model MODEL.onnx too, or drop --dim")


def _list_model(path: Path, dim: list[str] | None, fmt: str) -> None:
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
        sys.stdout.write(
            json.dumps({"kernels": kernel_rows(extraction), "not_kernels": skipped_rows(extraction)}, indent=1) + "\n"
        )
    elif fmt == "csv":
        sys.stdout.write(kernels_csv(extraction))
    else:
        out.print(kernels_table(extraction))
        if extraction.skipped:
            out.print(not_expressed_table(extraction))


def _gen_model(path: Path, dim: list[str] | None, out_dir: Path) -> None:
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
    out.print(
        f"{folder}: {len(extraction.kernels)} graphs, {KERNELS_FILE} (for --kernels), "
        f"{len(extraction.not_expressed)} nodes not expressed ({NOT_EXPRESSED_FILE})",
        highlight=False,
    )


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
    attention_form: AttentionFormOpt = "all",
    gru_activation: GruActOpt = "tanh",
    int8_form: Int8FormOpt = None,
    no_pad: NoPadOpt = False,
    batch: BatchOpt = None,
    int4_form: Int4FormOpt = None,
    int4_block: Int4BlockOpt = None,
    int4_type: Int4TypeOpt = None,
    out_dir: annotated(option("out_dir"), default="graphs", help="Output folder; graphs go to <out>/<suite>/.") = Path(
        "graphs"
    ),
    force: Annotated[bool, typer.Option("--force", help="Rewrite every graph file even when unchanged.")] = False,
    from_model: FromModelOpt = None,
    dim: DimOpt = None,
) -> None:
    """Write one small .onnx per kernel (no weight data inside) plus a manifest to run it anywhere."""
    if from_model:
        only_model(
            "--from-model", suite=suite, ops=ops, app=app_, id=pattern, kernels=kernels, passes=passes, batch=batch
        )
        return _gen_model(from_model, dim, out_dir)
    _only_with_model(dim)
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

    from dbench.gen.writer import prepare_folder, write_graphs

    selection, requests = _planned(
        "gen",
        suite,
        ops,
        app_,
        pattern,
        kernels,
        gen_fields(
            precision,
            passes,
            gemm_form,
            rnn_form,
            gru_activation,
            int8_form,
            no_pad,
            batch,
            attention_form,
            int4_form,
            int4_block,
            int4_type,
        ),
    )
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
    out_path: Annotated[
        Path,
        typer.Option(
            "--out",
            metavar="BUNDLE",
            parser=given_path,
            help="bundle.tar.gz (or .tgz) for an archive; any other name is a new folder.",
        ),
    ],
    suite: SuiteOpt = None,
    ops: OpsOpt = None,
    app_: AppOpt = None,
    pattern: IdOpt = None,
    kernels: KernelsOpt = None,
    precision: PrecisionOpt = "fp32",
    passes: PassesOpt = None,
    gemm_form: GemmFormOpt = "gemm",
    rnn_form: RnnFormOpt = "op",
    attention_form: AttentionFormOpt = "all",
    gru_activation: GruActOpt = "tanh",
    int8_form: Int8FormOpt = None,
    no_pad: NoPadOpt = False,
    batch: BatchOpt = None,
    int4_form: Int4FormOpt = None,
    int4_block: Int4BlockOpt = None,
    int4_type: Int4TypeOpt = None,
    units: Annotated[
        Path | None,
        typer.Option(
            "--units",
            metavar="MODEL",
            parser=given_path,
            help="Export MODEL's execution units as --runtime cuts them here (with an empty graph), for dbench "
            "predict --units-run.",
        ),
    ] = None,
    dim: DimOpt = None,
    runtime: annotated(
        option("runtime"), metavar="RUNTIME", help="With --units: the runtime whose layers cut the model."
    ) = "ort-cpu",
    threads: annotated(
        option("threads"),
        kind="int",
        metavar="N",
        help="With --units: the intra-op threads the board will run them with.",
    ) = None,
    device: annotated(option("device"), help="With --units: the runtime device.") = None,
    graph_opt: annotated(option("graph_opt"), help="With --units: graph optimisation level.") = "all",
    option: Annotated[
        list[str] | None,
        typer.Option(
            "--option", metavar="KEY=VALUE", parser=given, help="With --units: runtime option KEY=VALUE; repeatable."
        ),
    ] = None,
) -> None:
    """Pack graphs, manifest, checksums and a README into a bundle for another machine (an ARM board);
    with --units, a model's execution units instead of DeepBench kernels."""
    from dbench.bundle.export import export_bundle

    if units:
        only_model("--units", suite=suite, ops=ops, app=app_, id=pattern, kernels=kernels, passes=passes)
        return _export_units(units, dim, runtime, threads, device, graph_opt, option, out_path)
    if dim or runtime != "ort-cpu" or threads is not None or device or graph_opt != "all" or option:
        raise UsageError(
            "--dim, --runtime, --threads, --device, --graph-opt and --option apply to --units MODEL; "
            "DeepBench's kernels are exported for any runtime"
        )

    selection, requests = _planned(
        "export",
        suite,
        ops,
        app_,
        pattern,
        kernels,
        gen_fields(
            precision,
            passes,
            gemm_form,
            rnn_form,
            gru_activation,
            int8_form,
            no_pad,
            batch,
            attention_form,
            int4_form,
            int4_block,
            int4_type,
        ),
    )
    exported = export_bundle(requests, selection.suite, out_path)
    out.print(
        f"{exported.path}: {exported.graphs} graphs + manifest, SHA256SUMS, README.txt; run with: dbench run "
        f"--graphs {exported.path.name}",
        highlight=False,
    )
    for reason, n in exported.skipped.items():
        out.print(f"[yellow]skipped {n}:[/] {escape(reason)}")


def _export_units(model: Path, dim, runtime: str, threads, device, graph_opt: str, option, out_path: Path) -> None:
    """`dbench export --units MODEL`: the units as the runtime cuts them here, as a bundle."""
    from dbench.frommodel.dims import parse_dims
    from dbench.orchestrator.predict import export_units
    from dbench.orchestrator.request import RunRequest

    request = RunRequest(
        graphs=str(model),
        runtime=runtime,
        threads=threads,
        device=device,
        graph_optimization=graph_opt,
        extra=pairs(option),
        dims=parse_dims(dim or []),
    )
    exported, left_out = export_units(request, out_path)
    out.print(
        f"{exported.path}: {exported.graphs} graphs (the units of {model.name} and an empty graph) + manifest, "
        f"SHA256SUMS, README.txt; run with: dbench run --graphs {exported.path.name} --runtime {runtime}",
        highlight=False,
    )
    for unit, reason in left_out.items():
        out.print(f"[yellow]left out {escape(unit)}:[/] {escape(reason)}")


@app.command()
@friendly
def runtimes() -> None:
    """List every known runtime, whether it is usable here, its version, and why not."""
    from dbench.render.tables import runtimes_table
    from dbench.runtimes.registry import RUNTIMES, status

    out.print(runtimes_table([status(name) for name in RUNTIMES]))


def _stop_as_on_ctrl_c(signum: int, frame: object) -> None:
    """SIGTERM (a scheduler, `kill`, a job started in the background where Ctrl-C is ignored) stops a
    run as Ctrl-C does: finished rows kept, the worker's group killed, the resume command printed."""
    raise KeyboardInterrupt


@app.command()
@friendly
@with_options(RUN_OPTIONS)
def run(values: dict[str, Any]) -> None:
    """Time every selected graph on a runtime, verify it, and log one row per graph as it finishes.

    Exit status: 0 when every row is ok, disputed or unsupported, 3 when any is mismatch, failed, crashed,
    timeout or oom, 2 for bad input, 1 for other errors, 130 on Ctrl-C or SIGTERM."""
    from dbench.orchestrator.request import request_from_options
    from dbench.orchestrator.run import execute_run, plan_run
    from dbench.render.run import RunProgress, print_run
    from dbench.store.compare import open_run

    request = request_from_options(values)
    model, kernels_run, out_dir, resume = values["model"], values["kernels_run"], values["out_dir"], values["resume"]
    if kernels_run and not model:
        raise UsageError("--kernels-run compares a whole model's run with its kernels; give --model too")
    kernels_log = open_run(out_dir, kernels_run) if kernels_run else None  # a bad run id fails before timing
    if values["fleet"] is not None:
        return _run_fleet(
            request,
            values["fleet"],
            values["fleet_wait"],
            out_dir,
            resume,
            **{
                "--model": model,
                "--kernels-run": kernels_run,
                "--json": values["json_summary"],
                "--show-profile": values["show_profile"],
            },
        )
    if values["fleet_wait"] is not None:
        raise UsageError(
            "--fleet-wait is how long a fleet waits for machines that left; add --fleet ADDRESS, or drop it"
        )
    if resume and resume.startswith("fleet-"):
        raise UsageError(f"{resume} is a fleet; finish it with: dbench run --fleet ADDRESS --resume {resume}")
    if kernels_log is not None:
        from dbench.frommodel.predict import check_kernels_run

        kernel_rows = kernels_log.rows()
        check_kernels_run(model, request, kernels_log.header(), kernel_rows)
    planned = plan_run(request, out_dir, resume, _lock_policy(values["wait"], values["overlap"]), _waiting)
    before = signal.signal(signal.SIGTERM, _stop_as_on_ctrl_c)
    try:
        with RunProgress(err, planned) as progress:
            result = execute_run(planned, progress)
    finally:
        signal.signal(signal.SIGTERM, before)
    tables = err if values["json_summary"] else out  # with --json, stdout holds the JSON alone
    print_run(tables, result)
    if values["show_profile"]:
        _print_profiles(tables, result.rows)
    if kernels_log is not None:
        from dbench.frommodel.predict import model_vs_kernels
        from dbench.render.frommodel import prediction_table

        tables.print(prediction_table(model_vs_kernels(result.rows, kernel_rows)))
    if values["json_summary"]:
        from dbench.render.summary import run_summary

        sys.stdout.write(json.dumps(run_summary(result), indent=1, allow_nan=False, default=str) + "\n")
    raise typer.Exit(result.exit_code)


def _run_fleet(request, address: str, wait: float | None, out_dir: Path, resume: str | None, **others) -> None:
    """`dbench run --fleet ADDRESS`: the run on every machine of the cluster, a table per machine at the end."""
    from dbench.fleet.driver import WAIT_S, execute_fleet, plan_fleet
    from dbench.render.fleet import FleetProgress, machines_table, result_lines

    given = [flag for flag, value in others.items() if value]
    if given:
        raise UsageError(
            f"{given[0]} does not apply to a fleet run; drop it (report and compare read the fleet's rows)"
        )
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
    address: Annotated[
        str,
        typer.Argument(
            metavar="ADDRESS",
            parser=given,
            help="The Dask scheduler's address (tcp://HOST:8786) or its scheduler file.",
        ),
    ],
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
        raise InputError(
            f"the cluster at {address} has no worker that can serve; join a machine with: "
            f"dask worker {address} --nthreads 1"
        )


@app.command()
@friendly
def predict(
    model: Annotated[
        Path | None,
        typer.Argument(
            metavar="MODEL", parser=given_path, help="The ONNX model to predict (not needed with --resume)."
        ),
    ] = None,
    dim: DimOpt = None,
    runtime: annotated(
        option("runtime"), metavar="RUNTIME", help="The runtime whose layers cut the model: ort-cpu or openvino."
    ) = "ort-cpu",
    device: annotated(option("device"), help="Runtime device (OpenVINO: CPU, GPU, NPU, AUTO).") = None,
    threads: annotated(
        option("threads"), kind="int", metavar="N", help="Intra-op threads (default: every core)."
    ) = None,
    graph_opt: GraphOptOpt = "all",
    allow_runtime_precision: RuntimePrecisionOpt = False,
    option: Annotated[
        list[str] | None,
        typer.Option("--option", metavar="KEY=VALUE", parser=given, help="Runtime option KEY=VALUE; repeatable."),
    ] = None,
    quick: QuickOpt = False,
    min_time: MinTimeOpt = None,
    max_time: MaxTimeOpt = None,
    warmup: WarmupOpt = None,
    rounds: annotated(
        option("rounds"),
        help="Rounds per graph; the model, its units and the empty graph share them, so the error gets a "
        "paired interval (default 3).",
    ) = None,
    no_verify: annotated(
        option("no_verify"), help="Skip verifying the model and its units against onnx.reference."
    ) = False,
    profile_runs: annotated(
        option("profile_runs"),
        default=10,
        help="Runs of the profiling pass (the units' times inside the model come from the model's).",
    ) = 10,
    timeout: annotated(
        option("timeout"), help="Seconds a graph may spend in one phase before its worker is killed as hung."
    ) = 600.0,
    cpus: annotated(option("cpus"), help="Pin the workers to these CPUs, e.g. 4-7.") = None,
    memory_limit: annotated(option("memory_limit"), help="Address-space limit of the worker in GiB.") = None,
    out_dir: annotated(option("out_dir")) = Path("results"),
    resume: annotated(option("resume"), help="Complete an interrupted prediction run by its id.") = None,
    units_run: Annotated[
        str | None,
        typer.Option(
            "--units-run",
            metavar="RUN-ID",
            parser=given,
            help="Predict from a run of the model's exported units (dbench export --units) on another machine, "
            "without running the model there.",
        ),
    ] = None,
    wait: WaitOpt = False,
    overlap: OverlapOpt = False,
    fresh: Annotated[
        bool,
        typer.Option(
            "--fresh",
            help="Time every unit again, even those this machine timed before with the same settings (unit cache).",
        ),
    ] = False,
    top: Annotated[
        int, typer.Option("--top", metavar="N", help="Units shown, by their time inside the model (0: all).")
    ] = 20,
    fmt: Annotated[
        str,
        typer.Option(
            "--format", "-f", metavar="table|json", parser=given, help="table | json (the prediction and every unit)."
        ),
    ] = "table",
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
        graphs=str(model) if model else None,
        runtime=runtime,
        device=device,
        threads=threads,
        graph_optimization=graph_opt,
        allow_runtime_precision=allow_runtime_precision,
        extra=pairs(option),
        quick=quick,
        min_time=min_time,
        max_time=max_time,
        warmup=warmup,
        verify=not no_verify,
        profile_runs=profile_runs,
        timeout=timeout,
        memory_limit=memory_limit_bytes(memory_limit),
        dims=parse_dims(dim or []),
        cpus=cpus,
        rounds=rounds,
    )
    if units_run:
        from dbench.orchestrator.predict import units_run_predictions
        from dbench.store.compare import open_run

        _print_predictions(units_run_predictions(model, request, open_run(out_dir, units_run)), top, fmt)
        return
    from dbench.orchestrator.predict import execute_predict, plan_predict
    from dbench.render.run import RunProgress, print_run
    from dbench.units.prediction import predictions

    planned, _ = plan_predict(
        RunRequest() if resume else request, out_dir, resume, _lock_policy(wait, overlap), _waiting, fresh
    )
    from dbench.orchestrator.predict import cache_line

    err.print(cache_line(planned), highlight=False, soft_wrap=True)
    before = signal.signal(signal.SIGTERM, _stop_as_on_ctrl_c)
    try:
        with RunProgress(err, planned) as progress:
            result = execute_predict(planned, progress)
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
            target.print(
                f"no profile for {escape(row['graph_id'])} ({row['status']}; --profile-runs 0 profiles nothing)",
                highlight=False,
            )
        else:
            target.print(table)


def _print_predictions(found, top: int, fmt: str) -> None:
    """The predictions as tables (with the units and where isolation disagrees) or as JSON."""
    from dbench.render.predict import disagreements, gap_lines, predictions_table, units_table

    if fmt == "json":
        import dataclasses

        sys.stdout.write(
            json.dumps(
                [{**p.to_dict(), "units": [dataclasses.asdict(u) for u in p.units]} for p in found],
                indent=1,
                default=float,
            )
            + "\n"
        )
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
    runtime: annotated(
        option("runtime"),
        help="The runtimes to calibrate, one after the other, each timed twice interleaved (an A/A run) for --budget.",
    ) = "ort-cpu",
    threads: annotated(
        option("threads"),
        kind="int",
        metavar="N",
        help="Intra-op threads (default: every core), as the runs it speaks for will use.",
    ) = None,
    budget: annotated(
        option("budget"),
        default="150s",
        help="How long to measure each runtime (150, 90s, 3m): rounds are given until it is spent.",
    ) = "150s",
    pattern: IdOpt = None,
    out_dir: annotated(
        option("out_dir"), help="Results folder; the calibration goes to <out>/<machine>/calibration.json."
    ) = Path("results"),
    json_summary: annotated(option("json_summary"), help="Print the calibration as JSON on stdout.") = False,
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
    for name in split([runtime], "--runtime"):
        planned = plan_calibration(name, threads, seconds, out_dir, ids(pattern), policy, _waiting)
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
    runs: Annotated[
        list[str],
        typer.Argument(
            metavar="RUN...",
            parser=given,
            help="Runs by id (globs like 'run-20261125-*' work) or .jsonl path: one interleaved run, two runs, or "
            "side a before --vs.",
        ),
    ],
    versus: Annotated[
        list[str] | None,
        typer.Option(
            "--vs",
            metavar="RUN",
            parser=given,
            help="Side b: runs to compare side a with (repeat, or glob); several a side use the runs' spread.",
        ),
    ] = None,
    fmt: Annotated[
        str,
        typer.Option(
            "--format",
            "-f",
            metavar="table|csv|json",
            parser=given,
            help="table | csv | json (one row per kernel: ratio, interval, verdict, rounds, resolvable change).",
        ),
    ] = "table",
    fdr: Annotated[
        float, typer.Option("--fdr", metavar="RATE", help="False-discovery rate the table's verdicts control.")
    ] = 0.05,
    resolution: Annotated[
        float,
        typer.Option(
            "--resolution",
            metavar="FRACTION",
            help="A 'same' kernel that cannot resolve a change this large is counted too noisy to say.",
        ),
    ] = 0.10,
    out_dir: annotated(option("out_dir"), help="Results folder to look run ids up in.") = Path("results"),
    quantized: Annotated[
        bool,
        typer.Option(
            "--quantized",
            help="A is an fp32 model's run, B its quantized twin's (dbench predict or run --model, one runtime), "
            "or one run of a folder of both: speedup and accuracy cost, whole model and unit by unit.",
        ),
    ] = False,
    inputs: Annotated[
        int | None,
        typer.Option(
            "--inputs",
            metavar="N",
            help="With --quantized: seeded inputs the accuracy cost is measured over (default 200).",
        ),
    ] = None,
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
    if inputs is not None:
        from dbench.orchestrator.quantized import check_inputs

        check_inputs(inputs)
        if not quantized:
            raise UsageError(
                "--inputs counts the inputs of --quantized's accuracy cost: give --quantized, or drop --inputs"
            )
    if quantized:
        _compare_quantized(out_dir, runs, versus, inputs, fmt, fdr, resolution)
        return
    comparisons = [
        compare_sides(a, b, interleaved, fdr, resolution)
        for a, b, interleaved in plan_comparisons(out_dir, runs, list(versus or []))
    ]
    for comparison in comparisons:
        if not any(p.ratio for p in comparison.pairs):
            raise UsageError(
                f"{comparison.a.label} and {comparison.b.label} have no graph verified on both sides: "
                "nothing to compare; check their statuses with dbench report"
            )
    if fmt == "json":
        sys.stdout.write(
            json.dumps(
                [{**c.summary(), "kernels": [p.to_dict() for p in c.pairs]} for c in comparisons],
                indent=1,
                default=float,
            )
            + "\n"
        )
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
            err.print(
                f"[bold red]warning: the runs are from different machines ({', '.join(sorted(machines))}): "
                "the ratios include the hardware, not only the software[/]",
                highlight=False,
            )


def _compare_quantized(
    out_dir: Path,
    runs: list[str],
    versus: list[str] | None,
    inputs: int | None,
    fmt: str,
    fdr: float,
    resolution: float,
) -> None:
    """`dbench compare FP32 QUANTIZED --quantized`: speed and accuracy cost side by side."""
    from dbench.orchestrator.quantized import INPUTS, compare_quantized
    from dbench.render.quantized import quantized_lines, quantized_table

    named = list(runs) + list(versus or [])
    if len(named) not in (1, 2):
        raise UsageError(
            f"--quantized takes two runs, the fp32 model's then its quantized twin's, or one run of both "
            f"({len(named)} given): dbench compare FP32-RUN INT8-RUN --quantized"
        )
    if fmt == "csv":
        raise UsageError("--quantized prints a table or json; give --format table or --format json")
    result = compare_quantized(
        out_dir, named[0], named[1] if len(named) == 2 else None, INPUTS if inputs is None else inputs, fdr, resolution
    )
    if fmt == "json":
        sys.stdout.write(json.dumps(result.to_dict(), indent=1, default=float) + "\n")
        return
    out.print(quantized_table(result))
    for line in quantized_lines(result):
        out.print(escape(line), highlight=False, soft_wrap=True)
    for line in result.warnings:
        err.print(f"[yellow]warning:[/] {escape(line)}", highlight=False, soft_wrap=True)


@app.command()
@friendly
def report(
    results: Annotated[
        list[Path],
        typer.Argument(
            metavar="RESULTS",
            parser=given_path,
            help="Run logs (.jsonl) or folders of them: any runs, runtimes, machines.",
        ),
    ],
    out_dir: annotated(
        option("out_dir"), default="report", help="Folder for report.md/.html/.xlsx, CSVs and PNGs."
    ) = Path("report"),
    baseline: Annotated[
        str | None,
        typer.Option(
            "--baseline",
            metavar="GROUP",
            parser=given,
            help="Column group (or runtime name) speedups are relative to; default the first group measured on "
            "this machine (your own runs), else the first.",
        ),
    ] = None,
    profile: Annotated[
        bool,
        typer.Option(
            "--profile",
            help="Also every row's per-node profile (layer, op, kernel, precision, time, share), as benchmark_app -pc.",
        ),
    ] = False,
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
    out.print(
        f"wrote {written.html}, {written.markdown.name}, {written.xlsx.name}, "
        f"{len(written.csv)} CSV and {len(written.images)} PNG files in {out_dir}",
        highlight=False,
    )


@app.command()
@friendly
def peak(
    runtime: Annotated[
        list[str] | None,
        typer.Option(
            "--runtime",
            "-r",
            metavar="RUNTIME[,RUNTIME]",
            parser=given,
            help="Runtimes to measure GEMM on (default: every usable one).",
        ),
    ] = None,
    precision: Annotated[
        list[str] | None,
        typer.Option(
            "--precision", "-p", metavar="PRECISION[,PRECISION]", parser=given, help="Precisions to try (default fp32)."
        ),
    ] = None,
    out_dir: annotated(option("out_dir"), help="Results folder; writes <out>/<machine key>/peak.json.") = Path(
        "results"
    ),
) -> None:
    """Measure this machine's ceilings (memory bandwidth, best GEMM rate per runtime and precision, on the
    shapes that reach it, in rounds) for rooflines; peak.json keeps the highest of every measurement."""
    from dbench.peak.ceilings import save_peaks
    from dbench.peak.measure import check_choices, measure_peaks
    from dbench.runtimes.registry import RUNTIMES, status
    from dbench.store.log import ensure_writable
    from dbench.store.metadata import machine_name

    names = list(split(runtime, "--runtime")) or [n for n in RUNTIMES if status(n).available]
    check_choices(names, list(split(precision, "--precision")) or ["fp32"])
    ensure_writable(out_dir / machine_name())  # an --out that cannot be written is refused before measuring
    peaks = measure_peaks(
        names,
        list(split(precision, "--precision")) or ["fp32"],
        log=lambda line: err.print(escape(line), highlight=False, soft_wrap=True),
    )
    out.print(f"wrote {save_peaks(peaks, out_dir)}", highlight=False)


@app.command()
@friendly
def env() -> None:
    """Print what dbench records about this machine: host metadata, machine key, usable runtimes."""
    from dbench.runtimes.registry import RUNTIMES, status
    from dbench.store.metadata import host_metadata

    host = host_metadata()
    host["cpu_flags"] = " ".join(host["cpu_flags"])
    host["runtimes"] = {
        name: (s.version if s.available else f"unusable: {s.reason}") for name in RUNTIMES for s in [status(name)]
    }
    sys.stdout.write(json.dumps(host, indent=1, default=str) + "\n")


@app.command()
@friendly
def cache(
    clear: Annotated[
        bool, typer.Option("--clear", help="Remove every entry (references are recomputed when next needed).")
    ] = False,
    max_size: Annotated[
        float | None,
        typer.Option(
            "--max-size",
            metavar="GiB",
            help="Set the size cap in GiB (least recently used entries go first); 0 turns the cache off.",
        ),
    ] = None,
) -> None:
    """Where the reference cache is and how big: references computed once per graph and shared by every
    runtime, run and resume. Location: $DBENCH_CACHE_DIR, else $XDG_CACHE_HOME/dbench, else ~/.cache/dbench."""
    from dbench.cache.store import open_cache

    store = open_cache()
    if max_size is not None:
        if not (math.isfinite(max_size) and 0 <= max_size <= MAX_CACHE_GIB):
            raise UsageError(
                f"--max-size {max_size:g} must be a size in GiB from 0 (turns the cache off) to {MAX_CACHE_GIB}"
            )
        store.set_max_bytes(int(max_size * 2**30))
    if clear:
        entries, size = store.clear()
        out.print(f"removed {entries} entries, {size / 2**30:.2f} GiB", highlight=False)
    out.print(store.info().describe(), highlight=False, soft_wrap=True)


MAX_CACHE_GIB = 1 << 20
"""--max-size above a pebibyte is a typo, not a cache."""


def _register_allreduce() -> None:
    """`dbench allreduce`: the all-reduce module's own thin command (it prints its errors itself)."""
    from dbench.allreduce.cli import command

    app.command("allreduce")(command)  # its help, exit statuses included, is the command's docstring


_register_allreduce()


def main() -> None:
    app()
