"""The options of `dbench run`, as data: how each is written (its flags), read (its kind), described (its
help) and what it fills (the RunRequest field, `gen.<key>` for a generation field, or none for what only
the command line uses). The typer command is built from this table (dbench.cli), the request is made from
the values it parsed (dbench.orchestrator.request.request_from_options), and every one-line refusal that
names a flag finds it here: one specification, no second list of the options anywhere."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class Opt:
    """One option: its parameter name, flags, kind, the request field it fills, default, metavar and help."""

    name: str
    flags: tuple[str, ...]
    kind: str
    """text: one string; texts: repeated or comma-separated strings; path: a file or folder; int, float: a
    number; flag: a switch."""
    field: str | None = None
    """The RunRequest field it fills (`gen.<key>`: a generation field); None: the command line's own."""
    default: Any = None
    metavar: str | None = None
    help: str = ""

    @property
    def flag(self) -> str:
        """The long flag that names it in messages."""
        return self.flags[0]


RUN_OPTIONS: tuple[Opt, ...] = (
    Opt(
        "suite",
        ("--suite", "-s"),
        "text",
        field="suite",
        metavar="SUITE",
        help=(
            "train | inference | inference-server | inference-device | all (user: rows of --kernels without a suite)."
        ),
    ),
    Opt(
        "ops",
        ("--ops", "-o"),
        "texts",
        field="ops",
        metavar="OP[,OP]",
        help="Op family or RNN cell: gemm, conv, rnn, sparse, vanilla, lstm, gru (repeat or comma-separate).",
    ),
    Opt(
        "app_",
        ("--app",),
        "texts",
        field="apps",
        metavar="APP",
        help="Only kernels from this application (e.g. DeepSpeech).",
    ),
    Opt(
        "pattern",
        ("--id",),
        "texts",
        field="pattern",
        metavar="GLOB[,GLOB]",
        help="Only kernel ids matching this glob, e.g. 'gemm_m1760_*' (repeat or comma-separate for several).",
    ),
    Opt(
        "kernels",
        ("--kernels", "-k"),
        "path",
        field="kernels",
        metavar="FILE.csv",
        help="Your own kernel CSV in the catalog's columns; replaces the DeepBench lists.",
    ),
    Opt(
        "precision",
        ("--precision", "-p"),
        "text",
        field="gen.precision",
        default="fp32",
        metavar="PRECISION",
        help="fp32 | fp16 | bf16 | int8 | int4 (weight-only, GEMM).",
    ),
    Opt(
        "passes",
        ("--pass",),
        "texts",
        field="gen.passes",
        metavar="PASS[,PASS]",
        help=("Only these passes: fwd, bwd_data, bwd_filter (conv), bwd_weights (rnn). Default: all the suite has."),
    ),
    Opt(
        "gemm_form",
        ("--gemm-form",),
        "text",
        field="gen.gemm_form",
        default="gemm",
        metavar="FORM",
        help="gemm (ONNX Gemm with transposes and C) | matmul.",
    ),
    Opt(
        "rnn_form",
        ("--rnn-form",),
        "text",
        field="gen.rnn_form",
        default="op",
        metavar="FORM",
        help="op (ONNX RNN/LSTM/GRU) | recurrence (DeepBench's: no W·x_t).",
    ),
    Opt(
        "attention_form",
        ("--attention-form",),
        "text",
        field="gen.attention_form",
        default="all",
        metavar="FORM",
        help=(
            "all (every form that expresses the kernel) | subgraph (an exporter's MatMul-Softmax-MatMul) | op "
            "(ONNX Attention, opset 23) | mha (ORT MultiHeadAttention) | gqa (ORT GroupQueryAttention)."
        ),
    ),
    Opt(
        "gru_activation",
        ("--gru-activation",),
        "text",
        field="gen.gru_activation",
        default="tanh",
        metavar="tanh|relu",
        help="GRU output non-linearity: tanh (what DeepBench's code ran) | relu (its README).",
    ),
    Opt(
        "int8_form",
        ("--int8-form",),
        "text",
        field="gen.int8_form",
        metavar="FORM",
        help="qlinear | qdq | integer. Default: the runtime's preferred form (gen: qdq).",
    ),
    Opt(
        "no_pad",
        ("--no-pad",),
        "flag",
        field="gen.int8_pad",
        help="int8: do not round dims up to multiples of 4 (DeepBench pads by default).",
    ),
    Opt(
        "int4_form",
        ("--int4-form",),
        "texts",
        field="gen.int4_form",
        metavar="FORM[,FORM]",
        help="int4: nbits (ONNX Runtime's MatMulNBits) | dq (DequantizeLinear-21, then MatMul). Default: both.",
    ),
    Opt(
        "int4_block",
        ("--int4-block",),
        "texts",
        field="gen.int4_block",
        metavar="N[,N]",
        help="int4: weight block length along k, 32 | 64 | 128; several give a graph each. Default: 32.",
    ),
    Opt(
        "int4_type",
        ("--int4-type",),
        "text",
        field="gen.int4_type",
        metavar="int4|uint4",
        help="int4: symmetric int4 codes, or uint4 codes with a zero point per block. Default: int4.",
    ),
    Opt(
        "batch",
        ("--batch", "-b"),
        "texts",
        field="gen.batch",
        metavar="N[,N]",
        help=(
            "Each kernel at these batch sizes (GEMM and sparse N, conv n, RNN batch), e.g. 1,8,32; repeat or "
            "comma-separate."
        ),
    ),
    Opt(
        "graphs",
        ("--graphs", "-g"),
        "path",
        field="graphs",
        metavar="FOLDER|BUNDLE",
        help="Run the graphs of a folder made by dbench gen (its manifest) instead of generating in memory.",
    ),
    Opt(
        "runtime",
        ("--runtime", "-r"),
        "text",
        field="runtime",
        default="ort-cpu",
        metavar="RUNTIME[,RUNTIME]",
        help=(
            "Runtime name, see `dbench runtimes`; several comma-separated are interleaved graph by graph in "
            "every round (compare them with dbench compare RUN); one named twice is an A/A run, the machine's"
            " noise for such a comparison."
        ),
    ),
    Opt(
        "device",
        ("--device",),
        "text",
        field="device",
        metavar="DEVICE",
        help="Runtime device (OpenVINO: CPU, GPU, NPU, AUTO; CUDA: device index).",
    ),
    Opt(
        "threads",
        ("--threads", "-t"),
        "text",
        field="threads",
        metavar="N[,N]",
        help=(
            "Intra-op threads (default: every core; with --streams, threads per stream, default its share of "
            "the cores); several comma-separated are interleaved like runtimes."
        ),
    ),
    Opt(
        "weights",
        ("--weights",),
        "text",
        field="weights",
        default="auto",
        metavar="auto|const|input",
        help="auto (const for inference, input for training graphs) | const | input.",
    ),
    Opt(
        "graph_opt",
        ("--graph-opt",),
        "text",
        field="graph_optimization",
        default="all",
        metavar="LEVEL",
        help="Graph optimisation level: disable | basic | extended | all.",
    ),
    Opt(
        "allow_runtime_precision",
        ("--allow-runtime-precision",),
        "flag",
        field="allow_runtime_precision",
        help="Let the runtime pick its execution precision (recorded as such).",
    ),
    Opt(
        "option",
        ("--option",),
        "texts",
        field="extra",
        metavar="KEY=VALUE",
        help="Runtime option KEY=VALUE (provider options, config keys); repeatable.",
    ),
    Opt(
        "quick",
        ("--quick",),
        "flag",
        field="quick",
        help=(
            "Smoke run: minimal warm-up and sampling; more rounds and a per-node profile only where they cost"
            " no more than the sampling."
        ),
    ),
    Opt(
        "min_time",
        ("--min-time",),
        "float",
        field="min_time",
        metavar="SECONDS",
        help=(
            "Minimum sampling time per graph, all rounds together, seconds (default 2); a round after the "
            "first pays its own work (inputs, preparing, warm-up) out of its share."
        ),
    ),
    Opt(
        "max_time",
        ("--max-time",),
        "float",
        field="max_time",
        metavar="SECONDS",
        help="Maximum sampling time per graph, seconds (default 10).",
    ),
    Opt(
        "warmup",
        ("--warmup",),
        "float",
        field="warmup",
        metavar="SECONDS",
        help="Minimum warm-up time per graph and round, seconds (default 0.05).",
    ),
    Opt(
        "warmup_calls",
        ("--warmup-calls",),
        "int",
        field="warmup_calls",
        metavar="N",
        help="Minimum warm-up calls per graph and round (default 1).",
    ),
    Opt(
        "rounds",
        ("--rounds",),
        "int",
        field="rounds",
        metavar="N",
        help=(
            "Rounds per graph, each in a fresh worker process and session at another moment of the run; the "
            "sampling time is divided among them (default 3; 5 when the run interleaves variants, e.g. "
            "--runtime a,b or --threads 1,2)."
        ),
    ),
    Opt(
        "iterations",
        ("--iterations", "-n"),
        "int",
        field="iterations",
        metavar="N",
        help="Time exactly N calls per graph (divided among the rounds) instead of stopping by time.",
    ),
    Opt(
        "history",
        ("--history",),
        "int",
        field="history",
        metavar="N",
        help=(
            "Earlier runs per graph in this machine's results folder whose spread measures the drift between "
            "runs that every row's interval carries (default 10; 0: the rounds alone)."
        ),
    ),
    Opt(
        "percentiles",
        ("--percentiles",),
        "text",
        field="percentiles",
        metavar="P[,P]",
        help="Latency percentiles to record per row, e.g. 50,90,99,99.9 (default 50,90,99).",
    ),
    Opt("no_verify", ("--no-verify",), "flag", field="verify", help="Skip the comparison with the numpy reference."),
    Opt(
        "profile_runs",
        ("--profile-runs",),
        "int",
        field="profile_runs",
        metavar="N",
        help=(
            "Most runs the untimed per-node profiling pass times (default 10; it times about 0.05 s of calls,"
            " at least one, after a warm-up in its own session); 0 = no pass."
        ),
    ),
    Opt(
        "no_profile",
        ("--no-profile",),
        "flag",
        help=(
            "No per-node profiling pass: saves a second session per graph (building it again, pre-packing "
            "included) and its calls; rows then have no per-node times, kernel names or executed precision "
            "(unknown)."
        ),
    ),
    Opt(
        "timeout",
        ("--timeout",),
        "float",
        field="timeout",
        default=600.0,
        metavar="SECONDS",
        help=(
            "Seconds a graph may spend in one phase (preparing, timing, verifying, profiling...) before its "
            "worker is killed as hung."
        ),
    ),
    Opt(
        "cpus",
        ("--cpus",),
        "text",
        field="cpus",
        metavar="CPUS",
        help="Pin the worker to these CPUs, e.g. 4-7 (a board's big cluster); default threads = their count.",
    ),
    Opt(
        "memory_limit",
        ("--memory-limit",),
        "float",
        field="memory_limit",
        metavar="GiB",
        help="Address-space limit of the worker in GiB (out-of-memory becomes an `oom` row).",
    ),
    Opt(
        "out_dir",
        ("--out",),
        "path",
        default="results",
        metavar="FOLDER",
        help="Results folder; the run goes to <out>/<machine>/<run-id>.jsonl.",
    ),
    Opt(
        "resume",
        ("--resume",),
        "text",
        metavar="RUN-ID",
        help=(
            "Complete an interrupted run by its id; it takes every selection, runtime and timing option from "
            "the run (giving one is an error); only --out applies."
        ),
    ),
    Opt(
        "model",
        ("--model",),
        "path",
        metavar="MODEL.onnx",
        help="Time a whole ONNX model (inputs from its declared shapes, --dim for symbolic ones).",
    ),
    Opt(
        "dim",
        ("--dim",),
        "texts",
        field="dims",
        metavar="NAME=N[,NAME=N]",
        help=(
            "Symbolic dimension sizes of the model's inputs: NAME=N, comma-separated or repeated (e.g. "
            "batch=1,seq=128)."
        ),
    ),
    Opt(
        "kernels_run",
        ("--kernels-run",),
        "text",
        metavar="RUN-ID",
        help="With --model: a run of its `gen --from-model` kernels to print the model beside their sum.",
    ),
    Opt(
        "json_summary",
        ("--json",),
        "flag",
        help=(
            "Print the finished run as JSON on stdout (rows, statuses, files, warnings) for scripts; tables "
            "go to stderr."
        ),
    ),
    Opt(
        "scenario",
        ("--scenario",),
        "text",
        field="scenario",
        metavar="SCENARIO",
        help=(
            "latency (one request at a time, the default) | throughput (every stream kept busy) | server "
            "(Poisson arrivals at --rate)."
        ),
    ),
    Opt(
        "streams",
        ("--streams",),
        "text",
        field="streams",
        metavar="N[,N]",
        help=(
            "Requests in flight on one compiled graph, each with its share of the cores (or --threads each); "
            "several comma-separated are swept as variants. Implies --scenario throughput."
        ),
    ),
    Opt(
        "rate",
        ("--rate",),
        "float",
        field="rate",
        metavar="RATE",
        help="Server scenario: Poisson arrivals per second (seeded schedule).",
    ),
    Opt(
        "latency_bound",
        ("--latency-bound",),
        "float",
        field="latency_bound",
        metavar="MS",
        help=(
            "Server scenario: p99 latency bound in ms: the share over it, and a search for the highest rate "
            "that keeps it."
        ),
    ),
    Opt(
        "search_time",
        ("--search-time",),
        "float",
        field="search_time",
        metavar="SECONDS",
        help="Server scenario: seconds the max-rate search may take per graph (default 20; 0: no search).",
    ),
    Opt(
        "show_profile",
        ("--show-profile",),
        "flag",
        help=(
            "Print every row's per-node profile after the run (layer, op, kernel, precision, time, share), as"
            " benchmark_app -pc."
        ),
    ),
    Opt(
        "budget",
        ("--budget",),
        "text",
        field="budget",
        metavar="DURATION",
        help=(
            "Fit the run in this time (600, 90s, 10m, 1.5h): sampling, then the profiling pass, are cut "
            "before it starts, and the plan line says what was given up; with --resolve, no round starts that"
            " would overrun it."
        ),
    ),
    Opt(
        "resolve",
        ("--resolve",),
        "text",
        field="resolve",
        metavar="X%",
        help=(
            "Rounds per graph until its anytime-valid 95% interval (paired against the first variant when "
            "several are interleaved) is within ±X (e.g. 5%), at most --rounds (default 60) a graph and "
            "--budget in all; graphs that cannot get there say so."
        ),
    ),
    Opt(
        "wait",
        ("--wait",),
        "flag",
        help=("When another dbench is timing on this machine, wait for it to finish (default: refuse, naming it)."),
    ),
    Opt(
        "overlap",
        ("--overlap",),
        "flag",
        help=(
            "When another dbench is timing on this machine, time beside it anyway: every row of both runs "
            "timed meanwhile says so (overlapped)."
        ),
    ),
    Opt(
        "shard",
        ("--shard",),
        "text",
        field="shard",
        metavar="I/N",
        help=(
            "Run part I of N disjoint parts of the selection, balanced by estimated time (a Slurm array, a "
            "Kubernetes indexed job); report and compare merge the parts."
        ),
    ),
    Opt(
        "shard_label",
        ("--shard-label",),
        "text",
        field="shard_label",
        metavar="LABEL",
        help=(
            "With --shard: the run the parts share (default: Slurm's array job id, else the selection's fingerprint)."
        ),
    ),
    Opt(
        "fleet",
        ("--fleet",),
        "text",
        metavar="ADDRESS",
        help=(
            "Run on every machine of a Dask cluster (tcp://HOST:8786 or a scheduler file), one timing job per"
            " machine; rows stream into --out under each machine's key (docs/fleet.md; needs the fleet "
            "extra)."
        ),
    ),
    Opt(
        "fleet_wait",
        ("--fleet-wait",),
        "float",
        metavar="SECONDS",
        help=(
            "With --fleet: how long to wait, once the others are done, for machines that left to come back "
            "(default 120)."
        ),
    ),
)
"""Every option of `dbench run`, in the order `dbench run --help` lists them."""


def option(name: str) -> Opt:
    """The option of `dbench run` with this parameter name."""
    return next(o for o in RUN_OPTIONS if o.name == name)


def _flags(generation: bool) -> dict[str, str]:
    """Field -> the first option that fills it, in --help's order (messages list flags in that order)."""
    flags: dict[str, str] = {}
    for o in RUN_OPTIONS:
        if o.field and o.field.startswith("gen.") == generation:
            flags.setdefault(o.field.removeprefix("gen."), o.flag)
    return flags


REQUEST_FLAGS: dict[str, str] = _flags(generation=False)
"""RunRequest field -> the flag that sets it (generation fields apart)."""
GEN_FLAGS: dict[str, str] = _flags(generation=True)
"""Generation field -> the flag that sets it."""
