"""Where is onnx.reference wrong? Every standard op at every version onnx.defs defines, run as small
one-op graphs on onnx.reference as it is, on dbench's corrected foreign reference, on ONNX Runtime CPU
(optimizations off), on OpenVINO CPU (f32 pinned) and, where the case has them, against the spec's
numpy outputs; every (op, version) classified.

    PYTHONPATH=. python benchmarks/reference_sweep.py                  # writes docs/reference-ops.csv and the table
    PYTHONPATH=. python benchmarks/reference_sweep.py --ops Softmax,BatchNormalization --no-write --show

Cases come from benchmarks/reference_cases.py (onnx's node tests, taken down to older versions) and
benchmarks/reference_generators.py (dbench's generators); each runs in a forked worker process, so a
runtime that crashes or hangs on a graph costs that implementation of that graph only. Disagreements
a person has judged (which implementation the spec supports, or that the spec is ambiguous) are data:
benchmarks/reference_notes.csv. The result is docs/reference-ops.csv and the generated table in
docs/foreign-reference.md (between its `sweep:begin` and `sweep:end` markers).
"""

from __future__ import annotations

import argparse
import csv
import fnmatch
import json
import multiprocessing
import os
import signal
import sys
import time
from collections import Counter, defaultdict
from dataclasses import dataclass, field
from datetime import datetime, timezone
from importlib.metadata import version as package_version
from multiprocessing.connection import wait
from pathlib import Path
from typing import Any

from benchmarks.reference_cases import RANDOM_OPS, Case, deprecated, node_cases, older_cases, versions
from benchmarks.reference_run import WITNESSES, run_case

ROOT = Path(__file__).resolve().parent.parent
CSV_OUT = ROOT / "docs" / "reference-ops.csv"
PAGE = ROOT / "docs" / "foreign-reference.md"
NOTES = Path(__file__).with_name("reference_notes.csv")
RESULTS = ROOT / "build" / "reference-sweep" / "results.json"
BEGIN, END = "<!-- sweep:begin -->", "<!-- sweep:end -->"
STATUSES = ("unresolved", "runtime differs", "spec ambiguous", "corrected", "agree", "not covered")
"""An (op, version)'s status, the first that one of its cases has: `unresolved` is a disagreement no
correction and no note explains (the sweep's alarm: there should be none)."""
CODES = {
    "agree": "A",
    "corrected": "C",
    "runtime differs": "R",
    "spec ambiguous": "S",
    "not covered": "N",
    "unresolved": "U",
}


@dataclass
class Note:
    """A person's judgement of a disagreement: cases of `op` at `versions` whose id matches `case` and
    whose verdict matches `verdict` get `status`, and `text` says why."""

    op: str
    versions: str
    case: str
    verdict: str
    status: str
    text: str
    used: int = 0

    def matches(self, case: Case, verdict: str) -> bool:
        return (
            self.op == case.op
            and _in_versions(case.version, self.versions)
            and fnmatch.fnmatchcase(case.id, self.case)
            and fnmatch.fnmatchcase(verdict, self.verdict)
        )


def _in_versions(version: int, spec: str) -> bool:
    if spec == "*":
        return True
    for part in spec.split(" "):
        low, _, high = part.partition("-")
        if int(low) <= version <= int(high or low):
            return True
    return False


def read_notes(path: Path) -> list[Note]:
    with path.open() as f:
        return [
            Note(r["op"], r["versions"], r["case"], r["verdict"], r["status"], r["note"]) for r in csv.DictReader(f)
        ]


# ---------------------------------------------------------------- running the cases in worker processes


def _serve(conn: Any, cases: list[Case], indices: list[int], skips: dict[int, dict[str, str]]) -> None:
    os.setpgrp()
    for index in indices:
        case = cases[index]
        conn.send(("start", index))
        result = run_case(
            case.model,
            case.inputs,
            case.expected,
            skips.get(index, {}),
            started=lambda name, i=index: conn.send(("impl", i, name)),
        )
        conn.send(("done", index, result))
    conn.send(("end",))


@dataclass
class _Worker:
    process: Any
    conn: Any
    pending: list[int]
    current: int | None = None
    impl: str = ""
    since: float = field(default_factory=time.monotonic)


def run_all(cases: list[Case], jobs: int, timeout: float, progress: bool) -> dict[int, dict[str, Any]]:
    """Every case's result (run_case's), in `jobs` forked workers; a worker that dies or hangs on an
    implementation is replaced, and the case is run again without that implementation."""
    context = multiprocessing.get_context("fork")
    skips: dict[int, dict[str, str]] = defaultdict(dict)
    results: dict[int, dict[str, Any]] = {}
    queues = [list(range(j, len(cases), jobs)) for j in range(jobs)]
    workers: list[_Worker] = []

    def start(pending: list[int]) -> None:
        if not pending:
            return
        parent, child = context.Pipe()
        process = context.Process(target=_serve, args=(child, cases, pending, dict(skips)), daemon=True)
        process.start()
        child.close()
        workers.append(_Worker(process, parent, list(pending)))

    def end(worker: _Worker, why: str) -> None:
        workers.remove(worker)
        try:
            os.killpg(worker.process.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        worker.process.join()
        worker.conn.close()
        if worker.current is not None and worker.impl:
            skips[worker.current][worker.impl] = why
        rest = [i for i in worker.pending if i not in results]
        start(rest)

    for queue in queues:
        start(queue)
    done_before, began = 0, time.monotonic()
    while workers:
        ready = wait([w.conn for w in workers], timeout=1.0)
        for worker in list(workers):
            if worker.conn in ready:
                try:
                    message = worker.conn.recv()
                except EOFError:
                    worker.process.join(5)
                    end(worker, f"crashed (exit {worker.process.exitcode})")
                    continue
                worker.since = time.monotonic()
                if message[0] == "start":
                    worker.current, worker.impl = message[1], ""
                elif message[0] == "impl":
                    worker.impl = message[2]
                elif message[0] == "done":
                    results[message[1]] = message[2]
                    worker.current, worker.impl = None, ""
                elif message[0] == "end":
                    workers.remove(worker)
                    worker.process.join()
                    worker.conn.close()
            elif time.monotonic() - worker.since > timeout:
                end(worker, f"timed out after {timeout:g} s")
        if progress and len(results) - done_before >= 200:
            done_before = len(results)
            print(f"  {len(results)}/{len(cases)} cases, {time.monotonic() - began:.0f} s", file=sys.stderr, flush=True)
    return results


# ---------------------------------------------------------------- classifying


def _agrees(result: dict[str, Any], a: str, b: str) -> bool | None:
    pair = result["pairs"].get(f"{a}|{b}", result["pairs"].get(f"{b}|{a}"))
    return None if pair is None else pair == ""


def verdict(case: Case, result: dict[str, Any]) -> str:
    """What one case says about the reference: agree, corrected, runtime differs: X, formula differs,
    reference differs (from witnesses that agree among themselves), all differ, or not covered: why."""
    ran, errors = set(result["ran"]), result["errors"]
    if case.op in RANDOM_OPS:
        return "not covered: the op draws random numbers"
    witnesses = [w for w in WITNESSES if w in ran]
    runtimes = [w for w in witnesses if w != "spec"]
    if (
        case.source == "converted"
        and len(runtimes) > 1
        and _agrees(result, *runtimes)
        and not any(_agrees(result, "spec", w) for w in runtimes)
    ):
        witnesses = runtimes  # onnx.version_converter changed the graph's meaning: its expected outputs do not hold
    if "corrected" not in ran:
        if witnesses:
            return f"not covered: onnx.reference cannot run it ({errors.get('corrected', '?')})"
        return "not covered: nothing runs it"
    if not witnesses:
        refusals = "; ".join(f"{w}: {errors[w]}" for w in ("ort", "openvino") if w in errors)
        return f"not covered: no runtime runs it ({refusals})"
    support = [w for w in witnesses if _agrees(result, "corrected", w)]
    dissent = [w for w in witnesses if w not in support]
    if not dissent:
        raw_right = "reference" in ran and all(_agrees(result, "reference", w) for w in witnesses)
        return "agree" if raw_right else "corrected"
    if support:
        runtimes = [w for w in dissent if w != "spec"]
        return f"runtime differs: {', '.join(runtimes)}" if runtimes else "formula differs"
    if len(witnesses) == 1:
        return f"reference differs from {witnesses[0]} (the only witness)"
    together = all(_agrees(result, a, b) for i, a in enumerate(witnesses) for b in witnesses[i + 1 :])
    return "reference differs" if together else "all differ"


def case_status(case: Case, found: str, notes: list[Note]) -> tuple[str, str]:
    """(status, the note that explains it) of one case."""
    if found == "agree" or found == "corrected":
        return found, ""
    if found.startswith("not covered"):
        return "not covered", ""
    for note in notes:
        if note.matches(case, found):
            note.used += 1
            return note.status, note.text
    if found.startswith("runtime differs"):
        return "runtime differs", ""
    return "unresolved", ""


@dataclass
class Row:
    domain: str
    op: str
    version: int
    deprecated: bool
    cases: list[tuple[Case, str, str, str]] = field(default_factory=list)
    """(case, verdict, status, note) of each case."""
    ort_ran: int = 0
    openvino_ran: int = 0
    formula: int = 0
    spec_sides: int = 0
    """Of the runtime-differs graphs, those whose spec outputs side with the reference."""
    defaults: str = ""

    @property
    def status(self) -> str:
        found = {status for _, _, status, _ in self.cases}
        if not found:
            return "not covered"
        return next(s for s in STATUSES if s in found)

    def codes(self) -> str:
        """The letters of every status its graphs have (agreement only where nothing else)."""
        found = {status for _, _, status, _ in self.cases} or {"not covered"}
        shown = [s for s in STATUSES if s in found and (s != "agree" or found == {"agree"})]
        return "".join(CODES[s] for s in shown)

    def detail(self) -> str:
        if not self.cases:
            if self.op in RANDOM_OPS:
                return "the op draws random numbers: no two implementations agree on its values"
            return "no graph: no node test reaches this version and no generator makes it"
        parts = []
        by_status: dict[str, list[tuple[Case, str, str]]] = defaultdict(list)
        for case, found, status, note in self.cases:
            by_status[status].append((case, found, note))
        for status in STATUSES:
            entries = by_status.get(status, [])
            if not entries or status in ("agree",):
                continue
            if status == "corrected":
                parts.append(
                    f"onnx.reference wrong on {len(entries)} of {len(self.cases)} graphs, dbench's correction agrees"
                )
            elif status == "not covered":
                reasons = Counter(note or found.split(": ", 1)[-1] for _, found, note in entries)
                parts.append("; ".join(f"{n} not covered: {why}" for why, n in reasons.most_common(2)))
            else:
                verdicts = Counter(found for _, found, _ in entries)
                notes = sorted({note for _, _, note in entries if note})
                text = ", ".join(f"{n} x {v}" for v, n in verdicts.most_common())
                spec = (
                    f"; the spec's outputs side with the reference on {self.spec_sides}"
                    if status == "runtime differs" and self.spec_sides
                    else ""
                )
                parts.append(
                    f"{status}: {text}{spec}"
                    + (f" ({' '.join(notes)})" if notes else "")
                    + f" [e.g. {entries[0][0].id}]"
                )
        return "; ".join(parts)


def reference_defaults() -> dict[tuple[str, int], str]:
    """(op, version) -> the attributes whose default onnx.reference takes from another version's schema
    (it reads defaults from the schema of its implementation's class name, the newest by default)."""
    import onnx.defs
    from onnx import helper
    from onnx.reference.op_run import _schemas
    from onnx.reference.ops import _op_list

    def default(attribute: Any) -> Any:
        if not attribute.default_value or attribute.default_value.type == 0:
            return None
        return helper.get_attribute_value(attribute.default_value)

    found = {}
    for schema in onnx.defs.get_all_schemas_with_history():
        if schema.domain != "":
            continue
        try:
            implementation = _op_list.load_op("", schema.name, schema.since_version)
        except Exception:  # no implementation, or a function body: nothing to compare
            continue
        used = getattr(implementation, "op_schema", None) or _schemas.get(getattr(implementation, "__name__", ""), None)
        if used is None:
            continue
        wrong = [
            f"{name} (spec {default(a)!r}, onnx.reference {default(used.attributes[name])!r})"
            for name, a in schema.attributes.items()
            if name in used.attributes and default(a) != default(used.attributes[name])
        ]
        wrong += [
            f"{name} (absent from the schema onnx.reference takes defaults from)"
            for name in schema.attributes
            if name not in used.attributes
        ]
        if wrong:
            found[(schema.name, schema.since_version)] = ", ".join(wrong)
    return found


def classify(
    cases: list[Case], results: dict[int, dict[str, Any]], notes: list[Note], only: set[str] | None
) -> list[Row]:
    history, old = versions(), deprecated()
    defaults = reference_defaults()
    rows = {
        (d, op, v): Row(d, op, v, (d, op, v) in old, defaults=defaults.get((op, v), "") if d == "" else "")
        for (d, op), vs in history.items()
        for v in vs
        if only is None or op in only
    }
    for index, case in enumerate(cases):
        row = rows.get((case.domain, case.op, case.version))
        if row is None or index not in results:
            continue
        result = results[index]
        found = verdict(case, result)
        status, note = case_status(case, found, notes)
        row.cases.append((case, found, status, note))
        row.spec_sides += status == "runtime differs" and _agrees(result, "corrected", "spec") is True
        row.ort_ran += "ort" in result["ran"]
        row.openvino_ran += "openvino" in result["ran"]
        row.formula += case.expected is not None
    return list(rows.values())


# ---------------------------------------------------------------- writing


COLUMNS = (
    "domain",
    "op",
    "version",
    "deprecated",
    "status",
    "cases",
    "agree",
    "corrected",
    "runtime_differs",
    "spec_ambiguous",
    "unresolved",
    "not_covered",
    "ort_ran",
    "openvino_ran",
    "with_spec_outputs",
    "sources",
    "reference_defaults",
    "detail",
)


def write_csv(rows: list[Row], path: Path) -> None:
    with path.open("w", newline="") as f:
        writer = csv.writer(f, lineterminator="\n")
        writer.writerow(COLUMNS)
        for row in rows:
            statuses = Counter(status for _, _, status, _ in row.cases)
            sources = Counter(case.source for case, _, _, _ in row.cases)
            writer.writerow(
                [
                    row.domain or "ai.onnx",
                    row.op,
                    row.version,
                    int(row.deprecated),
                    row.status,
                    len(row.cases),
                    statuses["agree"],
                    statuses["corrected"],
                    statuses["runtime differs"],
                    statuses["spec ambiguous"],
                    statuses["unresolved"],
                    statuses["not covered"],
                    row.ort_ran,
                    row.openvino_ran,
                    row.formula,
                    " ".join(f"{k}:{v}" for k, v in sorted(sources.items())),
                    row.defaults,
                    row.detail(),
                ]
            )


def _versions_text() -> str:
    return ", ".join(f"{name} {package_version(name)}" for name in ("onnx", "onnxruntime", "openvino", "numpy"))


def corrections_table() -> list[str]:
    """dbench's corrections, from the table in dbench/sources/reference_corrections.py: each op, the
    versions it serves, and the rule onnx.reference breaks (the implementation's docstring)."""
    from dbench.sources.reference_corrections import CORRECTIONS

    served: dict[type, list[str]] = {}
    for correction in CORRECTIONS:
        served.setdefault(correction.implementation, []).append(
            f"{correction.op_type} {', '.join(map(str, correction.versions))}"
        )
    lines = [
        "dbench's corrections (`dbench/sources/reference_corrections.py`):",
        "",
        "| op versions | implementation | dbench computes, from the spec |",
        "|---|---|---|",
    ]
    for implementation, ops in served.items():
        doc = " ".join((implementation.__doc__ or "").split()).replace("|", "\\|")
        lines.append(
            f"| {'; '.join(ops)} | `{implementation.__module__.rsplit('.', 1)[-1]}.{implementation.__name__}` | {doc} |"
        )
    return lines + [""]


def table(rows: list[Row], cases: int) -> str:
    """The generated part of docs/foreign-reference.md."""
    by_op: dict[tuple[str, str], list[Row]] = defaultdict(list)
    for row in rows:
        by_op[(row.domain, row.op)].append(row)
    totals = Counter(row.status for row in rows)
    both = [key for key, rs in by_op.items() if any(r.ort_ran and r.openvino_ran for r in rs)]
    lines = corrections_table() + [
        f"Made with {_versions_text()} on {datetime.now(timezone.utc):%Y-%m-%d}: {cases} graphs, "
        f"{len(rows)} (op, version) pairs of {len(by_op)} ops. ONNX Runtime and OpenVINO both ran some version of "
        f"{len(both)} of these ops.",
        "",
        "| status | (op, version) pairs |",
        "|---|---:|",
    ]
    lines += [f"| {status} | {totals[status]} |" for status in STATUSES if totals[status]]
    lines += [
        "",
        "Each version of each op, by the statuses of its graphs: "
        + ", ".join(f"**{c}** {s}" for s, c in CODES.items())
        + " (a deprecated version is in italics). The count above is by each version's first status.",
        "",
        "| op | versions |",
        "|---|---|",
    ]
    for (domain, op), rs in by_op.items():
        cells = " · ".join((f"*{r.version}*" if r.deprecated else str(r.version)) + f" {r.codes()}" for r in rs)
        lines.append(f"| {op if not domain else domain + '.' + op} | {cells} |")
    lines += [
        "",
        "Every version that is not a plain agreement, and why:",
        "",
        "| op | version | status | graphs | why |",
        "|---|---:|---|---:|---|",
    ]
    for row in rows:
        if row.status != "agree":
            detail = row.detail().replace("|", "\\|")
            lines.append(
                f"| {row.op if not row.domain else row.domain + '.' + row.op} | {row.version} | {row.status} | "
                f"{len(row.cases)} | {detail} |"
            )
    return "\n".join(lines)


def write_page(text: str, path: Path) -> None:
    page = path.read_text()
    head, _, rest = page.partition(BEGIN)
    _, _, tail = rest.partition(END)
    path.write_text(f"{head}{BEGIN}\n{text}\n{END}{tail}")


# ---------------------------------------------------------------- main


def build_cases(seed: int, only: set[str] | None) -> list[Case]:
    from benchmarks.reference_generators import generated_cases

    history = versions()
    cases = [c for c in node_cases(seed) if only is None or c.op in only]
    older = [o for c in cases for o in older_cases(c, history[(c.domain, c.op)])]
    generated, refused = generated_cases(seed)
    for line in refused:
        print(f"generator made an invalid graph: {line}", file=sys.stderr)
    return cases + older + [c for c in generated if only is None or c.op in only]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--ops", help="comma-separated op types (default: every op)")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--jobs", type=int, default=1, help="worker processes (default 1)")
    parser.add_argument("--timeout", type=float, default=120.0, help="seconds one implementation may take on one graph")
    parser.add_argument("--csv", type=Path, default=CSV_OUT)
    parser.add_argument("--page", type=Path, default=PAGE)
    parser.add_argument("--no-write", action="store_true", help="write neither the CSV nor the page")
    parser.add_argument("--show", action="store_true", help="print every case that is not an agreement")
    parser.add_argument(
        "--explain", metavar="GLOB", help="run only the cases whose id matches GLOB and print every result"
    )
    parser.add_argument(
        "--results",
        type=Path,
        default=RESULTS,
        help=f"where every graph's results are saved (default {RESULTS.relative_to(ROOT)})",
    )
    parser.add_argument(
        "--reuse", action="store_true", help="classify the saved results again instead of running the graphs"
    )
    args = parser.parse_args()
    only = set(args.ops.split(",")) if args.ops else None
    began = time.monotonic()
    cases = build_cases(args.seed, only)
    if args.explain:
        cases = [c for c in cases if fnmatch.fnmatchcase(c.id, args.explain)]
    print(f"{len(cases)} graphs built in {time.monotonic() - began:.0f} s", file=sys.stderr, flush=True)
    if args.reuse:
        saved = json.loads(args.results.read_text())
        results = {i: saved["results"][c.id] for i, c in enumerate(cases) if c.id in saved["results"]}
        seconds = saved["seconds"]
    else:
        results = run_all(cases, args.jobs, args.timeout, progress=True)
        seconds = time.monotonic() - began
        if not args.explain:
            args.results.parent.mkdir(parents=True, exist_ok=True)
            args.results.write_text(
                json.dumps({"seconds": seconds, "results": {cases[i].id: r for i, r in results.items()}})
            )
    notes = read_notes(NOTES)
    rows = classify(cases, results, notes, only)
    if args.explain:
        for index, case in enumerate(cases):
            print(case.id, verdict(case, results[index]), results[index]["errors"])
            for pair, found in results[index]["pairs"].items():
                print(f"    {pair:22s} {found or 'same'}")
    for row in rows:
        if args.show:
            for case, found, status, note in row.cases:
                if status != "agree":
                    print(f"{case.id:70s} {status:16s} {found} {note}")
    totals = Counter(row.status for row in rows)
    print(", ".join(f"{status}: {totals[status]}" for status in STATUSES), f"({seconds:.0f} s)")
    if only is None:
        for note in notes:
            if not note.used:
                print(f"note matched no case: {note.op} {note.versions} {note.case} {note.verdict}")
    if not args.no_write:
        write_csv(rows, args.csv)
        if only is None:
            write_page(table(rows, len(cases)), args.page)


if __name__ == "__main__":
    main()
