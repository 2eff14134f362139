"""The report's section on each machine's noise: the calibration `dbench calibrate` stored beside its runs
(dbench.store.calibration), one line per runtime configuration and size class, with its one-line answer."""

from __future__ import annotations

import pandas as pd

from dbench.store.calibration import FIXED_ROUNDS, TARGETS, class_name


def calibration_frame(calibrations: dict[str, list]) -> pd.DataFrame:
    """Rows: machine · runtime · threads · class; the noise figures and the rounds --resolve needs."""
    records = []
    for machine, entries in calibrations.items():
        for entry in entries:
            for c in sorted(entry.classes, key=lambda c: c.class_us):
                records.append(
                    {
                        "calibrated": f"{machine} · {entry.runtime} {entry.version} · {entry.threads} threads · "
                        f"{entry.taken_at}",
                        "class": class_name(c.class_us),
                        "kernels": len(c.kernels),
                        "pair SD": f"{c.pair_sd:.1%}",
                        "round SD": f"{c.round_sd:.1%}",
                        "drift": "" if c.drift_sd is None else f"{c.drift_sd:.1%}",
                        **{f"finds @{n}": f"{c.finds(n):.1%}" for n in FIXED_ROUNDS},
                        **{f"±{t:.0%} rounds": str(c.resolve_rounds(t) or ">1000") for t in TARGETS},
                    }
                )
    return pd.DataFrame(records).set_index("calibrated") if records else pd.DataFrame()


def calibration_answers(calibrations: dict[str, list]) -> list[str]:
    """Each calibration's one-line answer, named by its machine and runtime."""
    return [
        f"{machine} · {entry.runtime} at {entry.threads} threads: {entry.answer()}"
        for machine, entries in calibrations.items()
        for entry in entries
    ]


SECTION = "This machine's noise (dbench calibrate)"
CAPTION = (
    "pair SD: one round's log ratio between two copies timed back to back; round SD: one copy's round; drift: a "
    "run's time beyond its rounds, between runs; finds @N: the change a fixed interleaved run of N rounds finds 80% "
    "of the time; ±X rounds: what --resolve X needs"
)
