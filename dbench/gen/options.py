"""The generation choices a user makes (`dbench gen` / `dbench run` options), checked once here."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from dbench.errors import UsageError
from dbench.gen.precision import ALL_PRECISIONS

ALL_PASSES = ("fwd", "bwd_data", "bwd_filter", "bwd_weights")
GEMM_FORMS = ("gemm", "matmul")
RNN_FORMS = ("op", "recurrence")
GRU_ACTIVATIONS = ("tanh", "relu")
INT8_FORMS = ("qlinear", "qdq", "integer")
ATTENTION_FORMS = ("subgraph", "op", "mha", "gqa")
"""Attention's forms (dbench.gen.attention): an exporter's MatMul-Softmax-MatMul, ONNX's Attention op,
ONNX Runtime's MultiHeadAttention and GroupQueryAttention."""
ALL_ATTENTION_FORMS = "all"
"""`--attention-form all`: every form that can express the kernel, side by side."""
INT4_FORMS = ("nbits", "dq")
INT4_BLOCKS = (32, 64, 128)
INT4_TYPES = ("int4", "uint4")


@dataclass(frozen=True)
class GenOptions:
    """Generation choices that change the graph (and are recorded in its spec)."""

    precision: str = "fp32"
    passes: tuple[str, ...] = ALL_PASSES
    gemm_form: str = "gemm"
    rnn_form: str = "op"
    gru_activation: str = "tanh"
    int8_form: str = "qdq"
    int8_pad: bool = True
    attention_form: str = ALL_ATTENTION_FORMS
    int4_forms: tuple[str, ...] = INT4_FORMS
    """int4 weight-only: the forms built (MatMulNBits `nbits`, DequantizeLinear-21 then MatMul `dq`)."""
    int4_blocks: tuple[int, ...] = (32,)
    """int4: the block lengths along k, one graph each."""
    int4_type: str = "int4"
    """int4: symmetric `int4` codes, or `uint4` codes with a zero point per block."""
    batch: tuple[int, ...] = ()
    """Batch sizes to sweep each kernel over (`--batch`); empty: the kernels' own."""

    def __post_init__(self) -> None:
        if self.precision not in ALL_PRECISIONS:
            raise UsageError(f"unknown precision {self.precision!r}; valid precisions: {', '.join(ALL_PRECISIONS)}")
        for value, valid, what in [
            (self.gemm_form, GEMM_FORMS, "gemm form"),
            (self.rnn_form, RNN_FORMS, "rnn form"),
            (self.int8_form, INT8_FORMS, "int8 form"),
            (self.gru_activation, GRU_ACTIVATIONS, "GRU activation"),
            (self.attention_form, (*ATTENTION_FORMS, ALL_ATTENTION_FORMS), "attention form"),
        ]:
            if value not in valid:
                raise UsageError(f"unknown {what} {value!r}; valid: {', '.join(valid)}")
        for form in self.int4_forms:
            if form not in INT4_FORMS:
                raise UsageError(f"unknown int4 form {form!r}; valid: {', '.join(INT4_FORMS)}")
        for block in self.int4_blocks:
            if block not in INT4_BLOCKS:
                raise UsageError(f"unsupported int4 block {block!r}; valid: {', '.join(map(str, INT4_BLOCKS))}")
        if self.int4_type not in INT4_TYPES:
            raise UsageError(f"unknown int4 type {self.int4_type!r}; valid: {', '.join(INT4_TYPES)}")
        for p in self.passes:
            if p not in ALL_PASSES:
                raise UsageError(f"unknown pass {p!r}; valid passes: {', '.join(ALL_PASSES)}")

    @classmethod
    def from_fields(cls, fields: dict[str, Any], int8_form: str) -> GenOptions:
        """From JSON-ready fields (the CLI's, or a run header's): empty `passes` means all passes,
        an empty `int8_form` means `int8_form` (the runtime's preferred form). An int8 option beside
        another precision would be ignored without a word, so it is refused."""
        options = cls(
            **{
                **{key: value for key, value in fields.items() if key not in INT4_FLAGS},
                "passes": tuple(fields["passes"]) or ALL_PASSES,
                "int8_form": fields["int8_form"] or int8_form,
                "batch": tuple(fields.get("batch") or ()),
                **int4_fields(fields),
            }
        )  # runs made before --batch (or the int4 options) have none
        given = (["--int8-form"] if fields.get("int8_form") else []) + (
            [] if fields.get("int8_pad", True) else ["--no-pad"]
        )
        int4_given = [flag for key, flag in INT4_FLAGS.items() if fields.get(key)]
        if int4_given and options.precision != "int4":
            flags = " and ".join(int4_given)
            verb = "apply" if len(int4_given) > 1 else "applies"
            raise UsageError(
                f"{flags} {verb} to int4 graphs only, not {options.precision}; add --precision int4 or drop {flags}"
            )
        if given and options.precision != "int8":
            flags = " and ".join(given)
            raise UsageError(
                f"{flags} {'apply' if len(given) > 1 else 'applies'} to int8 graphs only, not {options.precision}; "
                f"add --precision int8 or drop {flags}"
            )
        return options


INT4_FLAGS = {"int4_form": "--int4-form", "int4_block": "--int4-block", "int4_type": "--int4-type"}
"""The JSON-ready int4 fields (the CLI's lists, empty or None when not given) and their flags."""


def int4_fields(fields: dict[str, Any]) -> dict[str, Any]:
    """GenOptions' int4 fields from the JSON-ready ones; what is not given keeps its default."""
    out: dict[str, Any] = {}
    if fields.get("int4_form"):
        out["int4_forms"] = tuple(fields["int4_form"])
    if fields.get("int4_block"):
        try:
            out["int4_blocks"] = tuple(int(b) for b in fields["int4_block"])
        except ValueError:
            raise UsageError(
                f"--int4-block takes block lengths ({', '.join(map(str, INT4_BLOCKS))}), "
                f"not {','.join(fields['int4_block'])!r}"
            ) from None
    if fields.get("int4_type"):
        out["int4_type"] = fields["int4_type"]
    return out
