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
                **fields,
                "passes": tuple(fields["passes"]) or ALL_PASSES,
                "int8_form": fields["int8_form"] or int8_form,
                "batch": tuple(fields.get("batch") or ()),
            }
        )  # runs made before --batch have none
        given = (["--int8-form"] if fields.get("int8_form") else []) + (
            [] if fields.get("int8_pad", True) else ["--no-pad"]
        )
        if given and options.precision != "int8":
            flags = " and ".join(given)
            raise UsageError(
                f"{flags} {'apply' if len(given) > 1 else 'applies'} to int8 graphs only, not {options.precision}; "
                f"add --precision int8 or drop {flags}"
            )
        return options
