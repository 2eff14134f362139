"""Values of command-line options read as dbench's requests need them: repeated or comma-separated lists,
kernel-id globs, counts, numbers, KEY=VALUE pairs, changes written as 5% or 0.05, and the generation
fields. Each bad value, or a selector a model makes meaningless, is one UsageError line naming the flag and the fix."""

from __future__ import annotations

import math
from typing import Any

from dbench.errors import UsageError


def split(values: list[str] | None, flag: str = "--option") -> tuple[str, ...]:
    """Repeated or comma-separated values; a flag given only empty values (`--ops ''`) is an error,
    not a silent "all"."""
    parts = tuple(v.strip() for value in values or [] for v in value.split(",") if v.strip())
    if values and not parts:
        raise UsageError(f"{flag} was given no value; name one (see --help) or leave {flag} out for all")
    return parts


def ids(values: list[str] | None) -> str | None:
    """Repeated or comma-separated --id globs as one comma-separated selector (kernel ids hold no comma)."""
    return ",".join(split(values, "--id")) or None


def numbers(text: str, flag: str) -> tuple[float, ...]:
    """Comma-separated numbers (`50,90,99.9`), or one line naming the bad one."""
    values = []
    for part in text.split(","):
        try:
            values.append(float(part))
        except ValueError:
            raise UsageError(
                f"{flag} {text!r}: {part.strip()!r} is not a number; write numbers separated by commas"
            ) from None
    return tuple(values)


def counts(text: str | None, flag: str) -> int | list[int] | None:
    """--threads, --streams: one count, or several comma-separated (interleaved as variants)."""
    if text is None:
        return None
    found = []
    for part in text.split(","):
        try:
            found.append(int(part))
        except ValueError:
            raise UsageError(
                f"{flag} {text!r}: {part.strip()!r} is not a whole number; write e.g. {flag} 2 or {flag} 1,2"
            ) from None
    return found[0] if len(found) == 1 else found


def pairs(values: list[str] | None) -> dict[str, str]:
    """--option KEY=VALUE, repeated, as a dict."""
    found = {}
    for value in values or []:
        key, sep, val = value.partition("=")
        if not sep or not key:
            raise UsageError(f"--option {value!r} is not KEY=VALUE; write it as --option KEY=VALUE")
        found[key.strip()] = val.strip()
    return found


def fraction(text: str, flag: str) -> float:
    """`5%` or `0.05` as 0.05; one line naming the fix otherwise (a bare `5` is ambiguous)."""
    value = text.strip()
    percent = value.endswith("%")
    try:
        number = float(value.rstrip("%"))
    except ValueError:
        number = math.nan
    if not math.isfinite(number) or (not percent and number > 1):
        raise UsageError(
            f"{flag} {text!r} is not a change; write a percentage or a fraction, e.g. {flag} 5% or {flag} 0.05"
        )
    return number / 100 if percent else number


def only_model(option: str, **selectors: Any) -> None:
    """A model brings its own kernels: a catalog selector beside it would be silently ignored, so refuse it."""
    given = [name for name, value in selectors.items() if value]
    if given:
        raise UsageError(f"{option} takes its kernels from the model; drop --{given[0].replace('_', '-')}")


def gen_fields(
    precision: str,
    passes: list[str] | None,
    gemm_form: str,
    rnn_form: str,
    gru_activation: str,
    int8_form: str | None,
    no_pad: bool,
    batch: list[str] | None = None,
    attention_form: str = "all",
    int4_form: list[str] | None = None,
    int4_block: list[str] | None = None,
    int4_type: str | None = None,
) -> dict[str, Any]:
    """The generation options as JSON-ready fields (int8_form None: the runtime's preferred form; the
    int4 ones empty or None: their defaults)."""
    from dbench.catalog.batch import parse_batches

    return dict(
        precision=precision,
        passes=list(split(passes, "--pass")),
        gemm_form=gemm_form,
        rnn_form=rnn_form,
        gru_activation=gru_activation,
        int8_form=int8_form,
        int8_pad=not no_pad,
        batch=list(parse_batches(batch or [])),
        attention_form=attention_form,
        int4_form=list(split(int4_form, "--int4-form")),
        int4_block=list(split(int4_block, "--int4-block")),
        int4_type=int4_type,
    )
