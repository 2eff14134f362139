"""Read kernel CSVs (the shipped DeepBench lists or a user's file) into Kernel objects, row by row validated."""

from __future__ import annotations

import csv
import dataclasses
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from functools import cache
from importlib import resources
from pathlib import Path

from dbench.catalog.kernels import (
    KERNEL_TYPES,
    NORM_KINDS,
    RNN_CELLS,
    AttentionKernel,
    ConvKernel,
    EmbeddingKernel,
    GatedKernel,
    GeluKernel,
    GemmKernel,
    Kernel,
    NormKernel,
    Origin,
    RnnKernel,
    RotaryKernel,
    SparseKernel,
)
from dbench.catalog.transformer import DECODE, KERNELS_FILE, PREFILL
from dbench.errors import InputError, KernelFileError

KNOWN_SUITES = ("train", "inference_server", "inference_device", PREFILL, DECODE)
USER_SUITE = "user"


@dataclass(frozen=True)
class Column:
    """One required column: its name and the parser that validates a cell."""

    name: str
    parse: Callable[[str], object]


def _positive(text: str) -> int:
    value = int(text)
    if value <= 0:
        raise ValueError(f"must be a positive integer, got {text!r}")
    return value


def _non_negative(text: str) -> int:
    value = int(text)
    if value < 0:
        raise ValueError(f"must be a non-negative integer, got {text!r}")
    return value


def _flag(text: str) -> bool:
    if text.strip().lower() in ("0", "false"):
        return False
    if text.strip().lower() in ("1", "true"):
        return True
    raise ValueError(f"must be 0 or 1, got {text!r}")


def _cell(text: str) -> str:
    if text not in RNN_CELLS:
        raise ValueError(f"unknown cell {text!r}; valid cells: {', '.join(RNN_CELLS)}")
    return text


def _norm_kind(text: str) -> str:
    if text not in NORM_KINDS:
        raise ValueError(f"unknown norm kind {text!r}; valid kinds: {', '.join(NORM_KINDS)}")
    return text


def _fraction(text: str) -> float:
    value = float(text)
    if not 0.0 < value < 1.0:
        raise ValueError(f"must be a fraction of zeros strictly between 0 and 1, got {text!r}")
    return value


def _int_parser(check: Callable[[str], int]) -> Callable[[str], int]:
    def parse(text: str) -> int:
        try:
            return check(text.strip())
        except ValueError as err:
            if "must be" in str(err):
                raise
            raise ValueError(f"must be an integer, got {text!r}") from None

    return parse


POS = _int_parser(_positive)
NONNEG = _int_parser(_non_negative)

SCHEMAS: dict[type[Kernel], tuple[Column, ...]] = {
    GemmKernel: tuple(Column(c, p) for c, p in [("m", POS), ("n", POS), ("k", POS), ("a_t", _flag), ("b_t", _flag)]),
    SparseKernel: tuple(
        Column(c, p)
        for c, p in [("m", POS), ("n", POS), ("k", POS), ("a_t", _flag), ("b_t", _flag), ("sparsity", _fraction)]
    ),
    ConvKernel: tuple(
        Column(c, p)
        for c, p in [
            ("w", POS),
            ("h", POS),
            ("c", POS),
            ("n", POS),
            ("k", POS),
            ("s", POS),
            ("r", POS),
            ("pad_w", NONNEG),
            ("pad_h", NONNEG),
            ("wstride", POS),
            ("hstride", POS),
        ]
    ),
    RnnKernel: tuple(Column(c, p) for c, p in [("cell", _cell), ("hidden", POS), ("batch", POS), ("timesteps", POS)]),
    AttentionKernel: tuple(
        Column(c, p)
        for c, p in [
            ("batch", POS),
            ("q_len", POS),
            ("past", NONNEG),
            ("heads", POS),
            ("kv_heads", POS),
            ("head_dim", POS),
            ("causal", _flag),
        ]
    ),
    NormKernel: tuple(Column(c, p) for c, p in [("kind", _norm_kind), ("batch", POS), ("seq", POS), ("hidden", POS)]),
    GeluKernel: tuple(Column(c, p) for c, p in [("batch", POS), ("seq", POS), ("width", POS)]),
    GatedKernel: tuple(Column(c, p) for c, p in [("batch", POS), ("seq", POS), ("width", POS)]),
    RotaryKernel: tuple(Column(c, p) for c, p in [("batch", POS), ("seq", POS), ("heads", POS), ("head_dim", POS)]),
    EmbeddingKernel: tuple(Column(c, p) for c, p in [("batch", POS), ("seq", POS), ("vocab", POS), ("hidden", POS)]),
}

OPTIONAL: dict[type[Kernel], tuple[Column, ...]] = {
    GemmKernel: (Column("batch", POS),),
    ConvKernel: (Column("groups", POS), Column("dil_w", POS), Column("dil_h", POS)),
}
"""Columns beyond DeepBench's (default 1 when absent or empty), so older files stay valid."""

FAMILY_COLUMN = "family"
"""A file with this column mixes families (one per row, e.g. the kernels of a model); each row needs
only its family's columns."""

ROW_COLUMNS = ("suite", "app", "copies", "role", "config")
"""Columns any kernel file may hold besides its family's parameters (`role` and `config`: what the kernel
is in its model and the configuration fields its sizes come from, as the transformer suite's rows say)."""
NOTE_COLUMNS = ("app_match", "upstream_line", "id", "gflop", "nodes", "precision", "pass", "form")
"""Columns dbench itself writes for the reader (the shipped lists' provenance; `gen --from-model`'s
kernels.csv: the model's id, GFLOP, nodes, and the precision, pass and form it runs them in), read
back and ignored: the command line's --precision and forms apply."""

SHIPPED_FILES = {GemmKernel: "gemm.csv", ConvKernel: "conv.csv", RnnKernel: "rnn.csv", SparseKernel: "sparse.csv"}


def _detect_family(header: list[str], path: str) -> type[Kernel]:
    """Tell the family from the columns (rnn has `cell`, sparse `sparsity`, conv `wstride`)."""
    cols = set(header)
    if "cell" in cols:
        return RnnKernel
    if "sparsity" in cols:
        return SparseKernel
    if {"wstride", "hstride", "s", "r"} & cols:
        return ConvKernel
    if {"m", "n", "k"} & cols:
        return GemmKernel
    families = "; ".join(f"{cls.family}: {','.join(c.name for c in cols_)}" for cls, cols_ in SCHEMAS.items())
    raise KernelFileError(
        path, 1, ",".join(header), f"cannot tell the kernel family from the header; expected columns {families}"
    )


def _check_fits(kernel: ConvKernel, path: str, row: int) -> None:
    if kernel.extent_w > kernel.w + 2 * kernel.pad_w:
        raise KernelFileError(
            path,
            row,
            "s",
            f"filter width {kernel.extent_w} (dilated) is larger than the padded input width "
            f"{kernel.w + 2 * kernel.pad_w}",
        )
    if kernel.extent_h > kernel.h + 2 * kernel.pad_h:
        raise KernelFileError(
            path,
            row,
            "r",
            f"filter height {kernel.extent_h} (dilated) is larger than the padded input height "
            f"{kernel.h + 2 * kernel.pad_h}",
        )
    for column, channels in (("c", kernel.c), ("k", kernel.k)):
        if channels % kernel.groups:
            raise KernelFileError(
                path, row, "groups", f"{column}={channels} is not a multiple of groups={kernel.groups}"
            )


def _row_family(row: dict[str, str], header: list[str], path: str, row_number: int) -> type[Kernel]:
    """The row's family: its `family` cell in a mixed file, else the one the header tells."""
    if FAMILY_COLUMN not in header:
        return _detect_family(header, path)
    name = (row.get(FAMILY_COLUMN) or "").strip()
    if name not in KERNEL_TYPES:
        raise KernelFileError(
            path, row_number, FAMILY_COLUMN, f"unknown family {name!r}; valid: {', '.join(KERNEL_TYPES)}"
        )
    return KERNEL_TYPES[name]


def _values(cls: type[Kernel], row: dict[str, str], path: str, row_number: int) -> dict[str, object]:
    """The row's parameters for `cls`: every required column, and the optional ones that are filled."""
    values = {}
    for column in SCHEMAS[cls] + OPTIONAL.get(cls, ()):
        text = (row.get(column.name) or "").strip()
        if not text:
            if column in OPTIONAL.get(cls, ()):
                continue
            raise KernelFileError(path, row_number, column.name, "empty value")
        try:
            values[column.name] = column.parse(text)
        except ValueError as err:
            raise KernelFileError(path, row_number, column.name, str(err)) from None
    return values


def _copies(row: dict[str, str], path: str, row_number: int) -> int:
    """How many times the row's kernel occurs (optional `copies` column, e.g. identical nodes of a model)."""
    text = (row.get("copies") or "").strip()
    try:
        return POS(text) if text else 1
    except ValueError as err:
        raise KernelFileError(path, row_number, "copies", str(err)) from None


def _check_known_columns(header: list[str], families: list[type[Kernel]], path: str) -> None:
    """A column dbench does not read (a typo, another tool's) would be ignored without a word: refuse it."""
    required = [c.name for cls in families for c in SCHEMAS[cls]]
    optional = [c.name for cls in families for c in OPTIONAL.get(cls, ())] + list(ROW_COLUMNS)
    known = set(required) | set(optional) | set(NOTE_COLUMNS) | {FAMILY_COLUMN}
    for column in header:
        if column not in known:
            what = (
                f"a {families[0].family} file has {', '.join(required)} and optionally {', '.join(optional)}"
                if len(families) == 1
                else "a file with a family column has each family's columns"
            )
            raise KernelFileError(path, 1, column, f"unknown column; {what}: rename or remove it (docs/catalog.md)")


def parse_rows(rows: Iterable[dict[str, str]], header: list[str], path: str, source: str) -> list[Kernel]:
    """Validate every row of one CSV and build its kernels (duplicates merged, origins kept)."""
    if FAMILY_COLUMN not in header:
        cls = _detect_family(header, path)
        for column in SCHEMAS[cls]:
            if column.name not in header:
                raise KernelFileError(
                    path,
                    1,
                    column.name,
                    f"missing column (a {cls.family} file needs {', '.join(c.name for c in SCHEMAS[cls])})",
                )
    _check_known_columns(header, [_detect_family(header, path)] if FAMILY_COLUMN not in header else list(SCHEMAS), path)
    merged: dict[str, Kernel] = {}
    for row_number, row in enumerate(rows, start=2):
        cls = _row_family(row, header, path, row_number)
        values = _values(cls, row, path, row_number)
        suite = (row.get("suite") or "").strip() or USER_SUITE
        if suite not in KNOWN_SUITES + (USER_SUITE,):
            raise KernelFileError(
                path, row_number, "suite", f"unknown suite {suite!r}; valid: {', '.join(KNOWN_SUITES + (USER_SUITE,))}"
            )
        line = int(row["upstream_line"]) if source == "deepbench" else row_number
        origin = Origin(
            suite=suite,
            app=(row.get("app") or "").strip() or "user",
            line=line,
            source=source,
            role=(row.get("role") or "").strip(),
            config=(row.get("config") or "").strip(),
        )
        kernel = cls(**values, origins=(origin,) * _copies(row, path, row_number))
        if isinstance(kernel, ConvKernel):
            _check_fits(kernel, path, row_number)
        previous = merged.get(kernel.id)
        if previous is not None:
            kernel = cls(**values, origins=previous.origins + (origin,))
        merged[kernel.id] = kernel
    return list(merged.values())


def _read_csv(text: str, path: str, source: str) -> list[Kernel]:
    reader = csv.DictReader(text.splitlines())
    header = [h.strip() for h in (reader.fieldnames or [])]
    if not header:
        raise KernelFileError(path, 1, "(header)", "the file is empty; the first line must name the columns")
    reader.fieldnames = header
    return parse_rows(reader, header, path, source)


TRANSFORMER_SOURCE = "transformer"
"""The Origin.source of the transformer suite's rows (their line is the row's line in transformer.csv)."""


@cache
def load_catalog() -> tuple[Kernel, ...]:
    """All of DeepBench's GEMM, convolution, RNN and sparse kernels, and the transformer suite's kernels,
    shipped as package data; a transformer kernel that is also a DeepBench one is one kernel with both origins."""
    data = resources.files("dbench.catalog") / "data"
    kernels: dict[str, Kernel] = {}
    for name in SHIPPED_FILES.values():
        for kernel in _read_csv((data / name).read_text(), name, "deepbench"):
            kernels[kernel.id] = kernel
    for kernel in _read_csv((data / KERNELS_FILE).read_text(), KERNELS_FILE, TRANSFORMER_SOURCE):
        known = kernels.get(kernel.id)
        merged = kernel if known is None else dataclasses.replace(known, origins=known.origins + kernel.origins)
        kernels[kernel.id] = merged
    return tuple(kernels.values())


def load_kernel_file(path: Path) -> tuple[Kernel, ...]:
    """A user's kernel CSV in the same columns as the shipped lists (`suite` and `app` optional)."""
    try:
        text = Path(path).read_text(encoding="utf-8-sig")  # a BOM (spreadsheet exports) is not a column name
    except OSError as err:
        raise InputError(f"cannot read kernel file {path}: {err.strerror}; check the --kernels path") from None
    except UnicodeDecodeError as err:
        raise InputError(f"kernel file {path} is not UTF-8 text (byte {err.start}); save it as UTF-8 CSV") from None
    return tuple(_read_csv(text, str(path), str(path)))
