"""The judge judged: how often `dbench compare` calls identical runs different, how often a re-run's
median lands inside a row's interval, how often a real change is found, and whether `dbench calibrate`
predicts what `run --resolve` then needs. A thin use of dbench itself: the runs are `dbench calibrate`
and `dbench run` as a user types them, and the figures come from dbench's own library (compare's tests,
dbench.stats.coverage for the intervals' coverage, dbench.calibrate.analyse for the A/A noise, the stored
calibration for the predicted rounds).

Runs, in this order, on this machine (as a user would, through the `dbench` command), each step on its
own with --only (so that each piece fits in a short exclusive hold of the machine):
* `calibrate`: `dbench calibrate` at its defaults (its wall time is the goal's < 3 minutes);
* `runs`: N identical runs of a selection (default: the default run of `--suite inference-device`), with
  one `--rounds 1` run after the first and after the last, for the wall-time cost of rounds;
* `threads`: one interleaved run `--threads 1,2` of the selection's GEMMs of 1 ms or more (by the
  calibration's times; else the largest), and two separate runs (`--threads 1`, then `--threads 2`);
* `aa`: one A/A run of the selection: the runtime named twice (`--runtime ort-cpu,ort-cpu`), interleaved;
* `resolve`: `run --resolve X` of the GEMMs of 1 ms or more with the runtime named three times, the third
  copy slowed by a real 10 % (DBENCH_BENCHMARK_SLOWDOWN), so one run holds an A/B and its A/A twin.
Then prints, from the stored rows:
* A-vs-A, over all pairs of identical runs: per-kernel verdicts (same / faster / slower / too few)
  and the share of whole tables with 0 changed kernels;
* calibration: for every row and every later run, whether the later median falls inside the row's
  re-run interval (and inside its interval of the median, for contrast);
* power: a synthetic 5 % and 10 % slowdown applied to the round medians of the second run of each
  pair (kernels >= 0.1 ms), and --threads 1 vs 2 on the large GEMMs, interleaved and as separate runs;
* the power on the same 10 % slowdown as the rounds a side grow (several runs' rounds merged a side);
* the A/A run compared with itself by the paired test (every verdict should be `same`), and that
  test's power on a synthetic 5 % and 10 % slowdown of the second copy: what an interleaved
  comparison on this machine can see;
* the wall time of a default run against a one-round run, as measured and net of verification;
* the --resolve run: the A/B pair's verdicts (the 10 % found?), the A/A twin's (same?), each graph's rounds
  against the rounds the calibration predicted, and whether they are within a factor of 2.

    python benchmarks/judge.py --runs 5 --out /tmp/judge            # every step: about 40 min on a 2-core VM
    python benchmarks/judge.py --only calibrate --out /tmp/judge      # one step (calibrate, runs, threads, aa, resolve)
    python benchmarks/judge.py --only resolve --resolve 5% --out /tmp/judge
    python benchmarks/judge.py --runs 2 --args "--quick --ops gemm" --out /tmp/judge-smoke
    python benchmarks/judge.py --reuse --out /tmp/judge       # the figures again from the runs kept there
    python benchmarks/judge.py --aa-rounds 5,10 --repeat 2 --out /tmp/judge-aa   # only A/A runs: power by rounds

With --aa-rounds only the interleaved A/A runs are made, at each rounds count in turn (the order
alternating between repetitions), each judged by the paired test with its wall time: what more rounds
buy an interleaved comparison on this machine, and what they cost.

Rows carry the drift between runs that the earlier runs in --out measured (`dbench run --history`):
a fresh --out gives the first two runs none; a folder holding earlier runs of this machine gives
every run the machine's measured drift, as a user's results folder does.
"""

from __future__ import annotations

import argparse
import itertools
import json
import math
import os
import shlex
import subprocess
import sys
import time
from datetime import datetime
from pathlib import Path

from dbench.calibrate.analyse import kernel_noise
from dbench.orchestrator.slowdown import VARIABLE
from dbench.stats.coverage import coverage, ratios
from dbench.stats.interleave import rotated
from dbench.store.calibration import read_calibration
from dbench.store.compare import Side, compare_sides

MIN_POWER_US = 100.0
"""Kernels at least this slow count for the power figures (the goal speaks of kernels >= 0.1 ms)."""
MIN_THREADS_US = 1000.0
"""Kernels at least this slow are the threads and --resolve selection (the goal's GEMMs of 1 ms or more)."""
STEPS = ("calibrate", "runs", "threads", "aa", "resolve")


def dbench(command: str, args: list[str], out: Path, env: dict | None = None) -> tuple[Path, float]:
    """Run `dbench COMMAND ARGS --out OUT`; return its new log and wall seconds."""
    before = set(out.glob("*/*.jsonl"))
    start = time.perf_counter()
    done = subprocess.run(
        [sys.executable, "-m", "dbench", command, *args, "--out", str(out)],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
        env={**os.environ, **(env or {})},
    )
    wall = time.perf_counter() - start
    if done.returncode not in (0, 3):
        sys.exit(f"dbench {command} {' '.join(args)} failed: {done.stderr.strip().splitlines()[-1:]}")
    (log,) = set(out.glob("*/*.jsonl")) - before
    return log, wall


def dbench_run(args: list[str], out: Path) -> tuple[Path, float]:
    return dbench("run", args, out)


def rows(log: Path) -> list[dict]:
    return [r for r in map(json.loads, log.read_text().splitlines()) if r.get("type") == "result"]


def verifying_s(log: Path) -> float:
    """Seconds a run spent verifying. The first run after any change to dbench computes every reference
    anew (the cache keys on the code version), so wall times are compared net of it too."""
    return sum(r.get("verify_s") or 0.0 for r in rows(log))


def side(label: str, *logs_rows: list[dict]) -> Side:
    return Side(label, [{r["graph_id"]: r for r in run} for run in logs_rows], [label], ["here"])


def slowed(run: list[dict], factor: float) -> list[dict]:
    """A run's rows with every round median and median multiplied by `factor` (a known change)."""
    return [
        {**r, "median_us": r["median_us"] * factor, "round_medians_us": [m * factor for m in r["round_medians_us"]]}
        if r.get("round_medians_us")
        else r
        for r in run
    ]


def a_vs_a(runs: list[list[dict]]) -> None:
    verdicts: dict[str, int] = {}
    clean_tables = tables = 0
    for a, b in itertools.combinations(runs, 2):
        comparison = compare_sides(side("a", a), side("b", b))
        tables += 1
        changed = 0
        for pair in comparison.pairs:
            verdicts[pair.verdict] = verdicts.get(pair.verdict, 0) + 1
            changed += pair.verdict in ("faster", "slower")
        clean_tables += changed == 0
    judged = sum(verdicts.values())
    print(
        f"A-vs-A over {tables} pairs of identical runs: " + ", ".join(f"{n} {v}" for v, n in sorted(verdicts.items()))
    )
    print(
        f"  per-kernel verdicts 'same': {verdicts.get('same', 0) / judged:.1%}; tables with 0 changed: "
        f"{clean_tables}/{tables}"
    )


def calibration(runs: list[list[dict]]) -> None:
    """For every row and every later run: is the later median inside the row's re-run interval (and its
    interval of the median)? The same (row, later run) pairs dbench's own history check judges
    (dbench.stats.coverage), split by whether the row carried a drift between runs, and how many rows
    dbench widened because their configuration's history asked it to."""
    pairs = {True: [], False: []}  # carried drift -> [(inside re-run, inside median's, ratio as made)]
    drifts, widened = [], []
    for i, earlier in enumerate(runs):
        drifts += [r["drift_sd"] for r in earlier if r.get("drift_sd") is not None]
        widened += [
            r["history_factor"] for r in earlier if r.get("history_factor") and abs(r["history_factor"] - 1) >= 0.005
        ]
        for later in runs[i + 1 :]:
            by_id = {r["graph_id"]: r for r in later if r.get("median_us")}
            for row in earlier:
                other = by_id.get(row["graph_id"])
                if not other or row.get("rerun_low_us") is None:
                    continue
                half = math.log(row["rerun_high_us"] / row["median_us"])
                (found,) = ratios([(row["median_us"], half), (other["median_us"], None)])
                pairs[row.get("drift_sd") is not None].append(
                    (found <= 1.0, row["ci_low_us"] <= other["median_us"] <= row["ci_high_us"], found)
                )
    every = pairs[True] + pairs[False]
    if every:
        held = coverage([f for *_, f in every])
        print(
            f"calibration over {held.pairs} (row, later run) pairs: a later median inside the row's re-run interval "
            f"{held.inside / held.pairs:.1%}, inside its interval of the median "
            f"{sum(p[1] for p in every) / len(every):.1%}; "
            f"the factor that would have made 95 % hold: {held.factor:.2f}"
        )
    for carried, found in pairs.items():
        if found:
            print(
                f"  rows {'with the drift between runs' if carried else 'from their rounds alone'}: {len(found)} "
                "pairs, "
                f"re-run interval {sum(p[0] for p in found) / len(found):.1%}, interval of the median "
                f"{sum(p[1] for p in found) / len(found):.1%}"
            )
    if drifts:
        drifts.sort()
        print(
            f"  the drift between runs the rows carried: median SD {drifts[len(drifts) // 2]:.1%}, "
            f"range {drifts[0]:.1%}-{drifts[-1]:.1%}"
        )
    rows_with_interval = sum(1 for run in runs for r in run if r.get("rerun_low_us") is not None)
    if widened:
        widened.sort()
        print(
            f"  rows whose intervals this machine's history scaled: {len(widened)} of {rows_with_interval}, by "
            f"x{widened[0]:.2f}-{widened[-1]:.2f} (median x{widened[len(widened) // 2]:.2f})"
        )
    if every:
        needed = sorted(f for *_, f in every)
        print(
            f"  the factor each interval needed to hold its later median: median {needed[len(needed) // 2]:.2f}, "
            f"95th percentile {needed[int(0.95 * (len(needed) - 1))]:.2f} (below 1: wider than a 95 % interval needs)"
        )


def found_slower(comparison) -> tuple[int, int]:
    """(kernels >= MIN_POWER_US found slower, kernels >= MIN_POWER_US judged) in a comparison."""
    judged = [
        p
        for p in comparison.pairs
        if p.a and p.a[0].get("median_us", 0) >= MIN_POWER_US and p.verdict not in ("", "only in a", "only in b")
    ]
    return sum(p.verdict == "slower" for p in judged), len(judged)


def power(runs: list[list[dict]]) -> None:
    for factor in (1.05, 1.10):
        found = total = 0
        for a, b in itertools.combinations(runs, 2):
            slower, judged = found_slower(compare_sides(side("a", a), side("b", slowed(b, factor))))
            found, total = found + slower, total + judged
        if total:
            print(
                f"power, a synthetic {factor - 1:.0%} slowdown on kernels >= {MIN_POWER_US:g} µs: {found}/{total} "
                f"({found / total:.0%}) found slower"
            )


def merged(runs: list[list[dict]]) -> list[dict]:
    """One run's worth of rows whose rounds are those of every run in `runs`, graph by graph: rounds of
    separate runs are as independent as a run's own (what the calibration above checks), so this is a
    run with that many more rounds, made of real stored ones (whose spread holds the drift between runs,
    so none is added)."""
    by_id = [{r["graph_id"]: r for r in run} for run in runs]
    return [
        {
            **row,
            "round_medians_us": [m for run in by_id for m in run[row["graph_id"]].get("round_medians_us") or []],
            "drift_sd": None,
        }  # rounds of several runs hold the drift between them already
        for row in runs[0]
        if row.get("round_medians_us") and all(row["graph_id"] in run for run in by_id)
    ]


def power_by_rounds(runs: list[list[dict]], factor: float = 1.10) -> None:
    """The power on a synthetic change as the rounds a side grow: k runs' rounds merged on each side,
    over disjoint choices of 2k runs."""
    for k in range(1, len(runs) // 2 + 1):
        found = total = 0
        for chosen in itertools.combinations(range(len(runs)), 2 * k):
            a, b = merged([runs[i] for i in chosen[:k]]), merged([runs[i] for i in chosen[k:]])
            slower, judged = found_slower(compare_sides(side("a", a), side("b", slowed(b, factor))))
            found, total = found + slower, total + judged
        rounds = len(a[0]["round_medians_us"]) if a else 0
        if total:
            print(
                f"power, a synthetic {factor - 1:.0%} slowdown, {rounds} rounds a side ({k} run(s) merged): "
                f"{found}/{total} ({found / total:.0%}) found slower"
            )


def a_a(run: list[dict]) -> None:
    """An interleaved A/A run: its copies compared by the paired test, then with the second slowed."""
    by_variant: dict[str, list[dict]] = {}
    for r in run:
        by_variant.setdefault(r["variant"], []).append(r)
    (label1, rows1), (label2, rows2) = by_variant.items()
    comparison = compare_sides(side(label1, rows1), side(label2, rows2), interleaved=True)
    verdicts = [p.verdict for p in comparison.pairs]
    resolvable = sorted(p.difference.resolvable for p in comparison.pairs if p.difference)
    noise = sorted(k["pair_sd"] for k in kernel_noise(rows1 + rows2))
    print(
        f"A/A interleaved ({label1} vs {label2}, paired): "
        + ", ".join(f"{verdicts.count(v)} {v}" for v in sorted(set(verdicts)))
        + (f"; resolvable change median {resolvable[len(resolvable) // 2]:.1%}" if resolvable else "")
        + (
            f"; SD of a paired round's log ratio median {noise[len(noise) // 2]:.1%} ({noise[0]:.1%}-{noise[-1]:.1%})"
            if noise
            else ""
        )
    )
    for factor in (1.05, 1.10):
        found, total = found_slower(
            compare_sides(side(label1, rows1), side(label2, slowed(rows2, factor)), interleaved=True)
        )
        if total:
            print(
                f"  power of the paired test, a synthetic {factor - 1:.0%} slowdown on kernels >= {MIN_POWER_US:g} µs: "
                f"{found}/{total} ({found / total:.0%})"
            )


def a_a_by_rounds(common: list[str], runtime: str, counts: list[int], repeat: int, out: Path) -> None:
    """Interleaved A/A runs at each rounds count, the order rotated between repetitions, each judged by
    the paired test as it ends (wall time beside it)."""
    for rep in range(repeat):
        for rounds in rotated(counts, rep):
            log, wall = dbench_run([*common, "--runtime", f"{runtime},{runtime}", "--rounds", str(rounds)], out)
            print(
                f"repetition {rep + 1}, --rounds {rounds}: {log.stem}, {wall:.0f} s wall ({verifying_s(log):.0f} "
                "s verifying)"
            )
            a_a(rows(log))
            print(flush=True)


def threads(interleaved: list[dict], one: list[dict], two: list[dict]) -> None:
    """--threads 1 against 2 on each kernel, interleaved and as separate runs: found faster on how many."""
    by_variant: dict[str, list[dict]] = {}
    for r in interleaved:
        by_variant.setdefault(r["variant"], []).append(r)
    (label1, rows1), (label2, rows2) = by_variant.items()
    for name, comparison in (
        ("interleaved --threads 1,2", compare_sides(side(label1, rows1), side(label2, rows2), interleaved=True)),
        ("separate runs", compare_sides(side("threads 1", one), side("threads 2", two))),
    ):
        verdicts = [p.verdict for p in comparison.pairs]
        each = [
            f"{p.graph_id.split('.')[0]} {p.verdict} {p.ratio:.2f}"
            + (f" (resolves ±{p.difference.resolvable:.1%})" if p.difference else "")
            for p in comparison.pairs
            if p.ratio
        ]
        print(f"threads 1 vs 2, {name}: {verdicts.count('faster')}/{len(verdicts)} found faster: {'; '.join(each)}")


def resolved(run: list[dict], log: Path) -> None:
    """The --resolve run of three copies: the A/B pair (#3 slowed by a real 10 %) and its A/A twin (#2), judged
    by compare's anytime-valid test, and each graph's rounds against what the calibration predicted."""
    by_variant: dict[str, list[dict]] = {}
    for r in run:
        by_variant.setdefault(r["variant"], []).append(r)
    (label1, rows1), (label2, rows2), (label3, rows3) = by_variant.items()
    for name, (label, rows_b) in (("A/A twin", (label2, rows2)), ("A/B, B slowed 10 %", (label3, rows3))):
        comparison = compare_sides(side(label1, rows1), side(label, rows_b), interleaved=True)
        verdicts = [p.verdict for p in comparison.pairs]
        print(
            f"--resolve {name} ({label} vs {label1}): "
            + ", ".join(f"{verdicts.count(v)} {v}" for v in sorted(set(verdicts)))
            + f" of {len(verdicts)}; ratios "
            + ", ".join(f"{p.ratio:.3f}" for p in comparison.pairs if p.ratio)
        )
    entries = read_calibration(log.parent)
    first = rows1[0]
    entry = next(
        (
            e
            for e in entries
            if e.runtime == first["runtime"] and e.threads == (first.get("runtime_options") or {}).get("threads")
        ),
        None,
    )
    within = 0
    lines = []
    for row in rows1:
        predicted = (
            entry.predict_rounds(row["median_us"], row["resolve_target"], True, row["graph_id"]) if entry else None
        )
        ok = predicted is not None and row.get("resolved") and predicted / 2 <= row["rounds"] <= 2 * predicted
        within += bool(ok)
        lines.append(
            f"{row['graph_id'].split('.')[0]} {row['median_us'] / 1e3:.2f} ms: {row['rounds']} rounds "
            f"({'resolved' if row.get('resolved') else 'not resolved'}), calibrate predicted {predicted}"
        )
    print(
        f"--resolve rounds against calibrate's prediction: {within}/{len(rows1)} within a factor of 2"
        + ("" if entry else " (no calibration stored beside the run)")
    )
    for line in lines:
        print(f"  {line}")
    header = json.loads(log.read_text().split("\n", 1)[0])
    started = datetime.fromisoformat(header["host"]["taken_at"])
    ended = max(datetime.fromisoformat(r["finished_at"]) for r in run)
    print(
        f"  the run's wall time {(ended - started).total_seconds():.0f} s against its plan's "
        f"{header.get('estimate_s')} s "
        "(each graph's rounds as the calibration predicted them)"
    )


def big_gemms(out: Path, fallback: str) -> list[str]:
    """The selection of GEMMs of 1 ms or more by the calibration stored in `out` (else `fallback`)."""
    for folder in out.glob("*"):
        for entry in read_calibration(folder) if folder.is_dir() else []:
            ids = [k["graph_id"].split(".")[0] for k in entry.kernels if k["median_us"] >= MIN_THREADS_US]
            if ids:
                return ["--suite", "inference-device", "--id", ",".join(ids)]
    return shlex.split(fallback)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument(
        "--args", default="--suite inference-device", help="the selection and options of each identical run"
    )
    parser.add_argument(
        "--gemms",
        default="--suite inference-device --ops gemm --id gemm_m5124_*",
        help="the selection of the --threads 1 vs 2 runs when no calibration names the GEMMs of 1 ms or more",
    )
    parser.add_argument(
        "--runtime", default="ort-cpu", help="the runtime of the A/A and --resolve runs (named two or three times)"
    )
    parser.add_argument("--out", type=Path, required=True)
    parser.add_argument(
        "--only", choices=STEPS, action="append", help="run only these steps (repeatable), then judge what --out holds"
    )
    parser.add_argument("--resolve", default="5%", help="the --resolve step's target")
    parser.add_argument("--resolve-budget", default="14m", help="the --resolve step's --budget")
    parser.add_argument(
        "--reuse",
        action="store_true",
        help="no new runs: judge the runs already in --out (wall times are not measured)",
    )
    parser.add_argument(
        "--last", type=int, help="judge only the last N identical runs in --out (earlier ones are their history)"
    )
    parser.add_argument(
        "--aa-rounds", help="only interleaved A/A runs, at these rounds counts (comma-separated), judged one by one"
    )
    parser.add_argument(
        "--repeat", type=int, default=1, help="with --aa-rounds: repetitions of the set, order alternating"
    )
    args = parser.parse_args()
    if args.reuse:
        return judge_stored(args.out, args.last)
    if args.aa_rounds:
        counts = [int(n) for n in args.aa_rounds.split(",")]
        return a_a_by_rounds(shlex.split(args.args), args.runtime, counts, args.repeat, args.out)
    steps = args.only or list(STEPS)
    common = shlex.split(args.args)
    args.out.mkdir(parents=True, exist_ok=True)
    if "calibrate" in steps:
        log, wall = dbench("calibrate", ["--runtime", args.runtime], args.out)
        print(f"calibrate: {log.stem} {wall:.0f} s (goal: under 180 s)", flush=True)
    if "runs" in steps:
        identical_runs(common, args.runs, args.out)
    gemms = big_gemms(args.out, args.gemms)
    if "threads" in steps:
        for threads_asked in ("1,2", "1", "2"):
            log, wall = dbench_run([*gemms, "--threads", threads_asked], args.out)
            print(f"threads {threads_asked}: {log.stem} {wall:.0f} s", flush=True)
    if "aa" in steps:
        log, wall = dbench_run([*common, "--runtime", f"{args.runtime},{args.runtime}"], args.out)
        print(f"A/A: {log.stem} {wall:.0f} s", flush=True)
    if "resolve" in steps:
        copies = ",".join([args.runtime] * 3)
        log, wall = dbench(
            "run",
            [*gemms, "--runtime", copies, "--resolve", args.resolve, "--budget", args.resolve_budget],
            args.out,
            {VARIABLE: f"{args.runtime} #3=0.10"},
        )
        print(f"--resolve {args.resolve}: {log.stem} {wall:.0f} s", flush=True)
    print()
    judge_stored(args.out, args.last)


def identical_runs(common: list[str], runs: int, out: Path) -> None:
    """N identical runs, with a one-round run after the first and after the last; their wall times."""
    walls, one_round = [], []
    net: dict[str, list[float]] = {"default": [], "one-round": []}
    for i in range(runs):
        log, wall = dbench_run(common, out)
        walls.append(wall)
        verifying = verifying_s(log)
        net["default"].append(wall - verifying)
        print(f"run {i + 1}/{runs}: {log.stem} {wall:.0f} s ({verifying:.0f} s verifying)", flush=True)
        if i in (0, runs - 1):
            single, wall = dbench_run([*common, "--rounds", "1"], out)
            verifying = verifying_s(single)
            one_round.append(wall)
            net["one-round"].append(wall - verifying)
            print(f"  one-round run: {wall:.0f} s ({verifying:.0f} s verifying)", flush=True)
    mean = sum(walls) / len(walls)
    print(
        f"wall time: default runs {min(walls):.0f}-{max(walls):.0f} s (mean {mean:.0f}), one-round runs "
        f"{', '.join(f'{w:.0f}' for w in one_round)} s: rounds cost {mean / (sum(one_round) / len(one_round)) - 1:+.0%}"
    )
    means = {kind: sum(v) / len(v) for kind, v in net.items()}
    print(
        f"  net of verification (references computed anew after a change to dbench): default runs "
        f"{min(net['default']):.0f}-{max(net['default']):.0f} s, one-round runs "
        f"{', '.join(f'{w:.0f}' for w in net['one-round'])} s: rounds cost "
        f"{means['default'] / means['one-round'] - 1:+.0%}"
    )


def judge(
    runs: list[list[dict]],
    interleaved: list[dict] | None,
    one: list[dict] | None,
    two: list[dict] | None,
    twice: list[dict] | None,
    resolve_run: tuple[list[dict], Path] | None = None,
) -> None:
    if runs:
        a_vs_a(runs)
        calibration(runs)
        power(runs)
        power_by_rounds(runs)
    if interleaved and one and two:
        threads(interleaved, one, two)
    if twice:
        a_a(twice)
    if resolve_run:
        resolved(*resolve_run)


def judge_stored(out: Path, last: int | None = None) -> None:
    """The figures from the runs a judge left in `out`, told apart by their requests (the latest of each kind;
    of the identical runs, the `last` N where given)."""
    kinds: dict[str, list[Path]] = {}
    for log in sorted(out.glob("*/run-*.jsonl")):
        request = json.loads(log.read_text().split("\n", 1)[0]).get("request", {})
        threads_asked = request.get("threads")
        threads_asked = [threads_asked] if isinstance(threads_asked, int) else threads_asked
        names = str(request.get("runtime", "")).split(",")
        kind = (
            "resolve"
            if request.get("resolve") is not None
            else "interleaved"
            if threads_asked and len(threads_asked) > 1
            else f"threads {threads_asked[0]}"
            if threads_asked
            else "a/a"
            if len(names) > len(set(names))
            else "one round"
            if request.get("rounds") == 1
            else "default"
        )
        kinds.setdefault(kind, []).append(log)
    print(f"runs in {out}: " + ", ".join(f"{len(v)} {k}" for k, v in kinds.items()))

    def latest(kind: str) -> list[dict] | None:
        return rows(kinds[kind][-1]) if kind in kinds else None

    judge(
        [rows(log) for log in kinds.get("default", [])[-last if last else 0 :]],
        latest("interleaved"),
        latest("threads 1"),
        latest("threads 2"),
        latest("a/a"),
        (rows(kinds["resolve"][-1]), kinds["resolve"][-1]) if "resolve" in kinds else None,
    )


if __name__ == "__main__":
    main()
