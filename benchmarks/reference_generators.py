"""dbench's graph generators for benchmarks/reference_sweep.py: the ops real CNN, transformer and RNN
models use, at every version onnx.defs defines, with random shapes and attributes (omitted ones too,
so that each version's own defaults are tested), and a numpy formula of that version's spec where it
is simple to write (the case's expected outputs; None where the runtimes are the only witnesses).

A generator is `(rng, version) -> [Made, ...]`: what the version accepts is its business (an attribute
a version lacks is left out, a version it cannot express yields nothing)."""

from __future__ import annotations

import itertools
import math
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import onnx.defs

from benchmarks.reference_cases import Case, deprecated, one_node_model, versions

F32 = np.float32


@dataclass
class Made:
    """One generated graph: its inputs in order (None: an omitted optional input), attributes, how many
    outputs, the expected outputs (None: no formula), and which inputs are stored in the model."""

    inputs: list[tuple[str, np.ndarray | None]]
    attributes: dict[str, Any]
    outputs: int = 1
    expected: list[np.ndarray] | None = None
    stored: tuple[str, ...] = ()
    label: str = ""
    extra: dict[str, Any] = field(default_factory=dict)


def _has(op: str, version: int, attribute: str) -> bool:
    return attribute in onnx.defs.get_schema(op, version, "").attributes


def _normal(rng: np.random.Generator, shape: tuple[int, ...], dtype: Any = F32) -> np.ndarray:
    return rng.standard_normal(shape).astype(dtype)


def _keep(attributes: dict[str, Any]) -> dict[str, Any]:
    """The attributes that are set (None: leave it out, its default applies)."""
    return {k: v for k, v in attributes.items() if v is not None}


# ---------------------------------------------------------------- softmax family


def _softmax_rows(x: np.ndarray, axis: int, op: str, coerced: bool) -> np.ndarray:
    x64 = x.astype(np.float64)
    if coerced:
        axis = axis % x.ndim if x.ndim else 0
        rows = x64.reshape(math.prod(x.shape[:axis]), -1)
        out = _softmax_last(rows, op)
        return out.reshape(x.shape).astype(x.dtype)
    moved = np.moveaxis(x64, axis, -1)
    return np.moveaxis(_softmax_last(moved, op), -1, axis).astype(x.dtype)


def _softmax_last(a: np.ndarray, op: str) -> np.ndarray:
    shifted = a - a.max(axis=-1, keepdims=True)
    if op == "Softmax":
        e = np.exp(shifted)
        return e / e.sum(axis=-1, keepdims=True)
    if op == "LogSoftmax":
        return shifted - np.log(np.exp(shifted).sum(axis=-1, keepdims=True))
    hard = np.zeros_like(a)
    np.put_along_axis(hard, a.argmax(axis=-1)[..., None], 1, axis=-1)
    return hard


def softmax_family(op: str) -> Callable[[np.random.Generator, int], list[Made]]:
    def generate(rng: np.random.Generator, version: int) -> list[Made]:
        made = []
        for rank, axis in [(2, None), (4, None), (4, 1), (3, 2), (4, 2), (3, -1), (4, 0), (1, 0)]:
            if axis is not None and axis < 0 and version < 11:
                continue
            x = _normal(rng, tuple(int(d) for d in rng.integers(1, 5, size=rank)))
            used = (1 if version < 13 else -1) if axis is None else axis
            expected = _softmax_rows(x, used, op, coerced=version < 13)
            made.append(Made([("x", x)], _keep({"axis": axis}), expected=[expected]))
        return made

    return generate


# ---------------------------------------------------------------- normalization


def _bn_test(x, scale, bias, mean, var, epsilon, shape):  # noqa: ANN001, ANN202
    s, b, m, v = (a.astype(np.float64).reshape(shape) for a in (scale, bias, mean, var))
    return s * (x.astype(np.float64) - m) / np.sqrt(v + epsilon) + b


def batch_normalization(rng: np.random.Generator, version: int) -> list[Made]:
    if version == 1:
        return []  # consumed_inputs is required: an in-place training op of Caffe2's era
    made = []
    for rank in (2, 3, 4):
        for spatial in (None, 0) if version < 9 else (None,):
            for mode in ("test", "train"):
                shape = tuple(int(d) for d in rng.integers(2, 5, size=rank))
                channels = shape[1]
                stat = (channels,) if spatial is None else shape[1:]
                x = _normal(rng, shape)
                scale, bias, mean = _normal(rng, stat), _normal(rng, stat), _normal(rng, stat)
                var = rng.uniform(0.5, 2.0, size=stat).astype(F32)
                epsilon = float(rng.choice([1e-5, 1e-3, 0.1]))
                momentum = float(rng.choice([0.9, 0.7]))
                attributes: dict[str, Any] = {"epsilon": epsilon, "momentum": momentum}
                if version < 9 and spatial is not None:
                    attributes["spatial"] = spatial
                outputs = 1
                if version < 7:
                    attributes["is_test"] = 1 if mode == "test" else 0
                elif mode == "train":
                    outputs = 5 if version < 14 else 3
                    if version >= 14:
                        attributes["training_mode"] = 1
                view = (-1, *([1] * (rank - 2))) if spatial is None else stat
                if mode == "test":
                    expected = [_bn_test(x, scale, bias, mean, var, epsilon, view).astype(F32)]
                else:
                    axes = tuple(a for a in range(rank) if a != 1) if spatial is None else (0,)
                    x64 = x.astype(np.float64)
                    bm, bv = x64.mean(axis=axes), x64.var(axis=axes)
                    y = _bn_test(x, scale, bias, bm, bv, epsilon, view)
                    rm, rv = mean * momentum + bm * (1 - momentum), var * momentum + bv * (1 - momentum)
                    expected = [a.astype(F32) for a in (y, rm, rv, bm, bv)[:outputs]]
                made.append(
                    Made(
                        [("x", x), ("scale", scale), ("bias", bias), ("mean", mean), ("var", var)],
                        attributes,
                        outputs,
                        expected,
                        stored=("scale", "bias", "mean", "var"),
                        label=f"{mode}",
                    )
                )
    return made


def instance_normalization(rng: np.random.Generator, version: int) -> list[Made]:
    made = []
    for rank in (3, 4):
        shape = tuple(int(d) for d in rng.integers(2, 5, size=rank))
        x, scale, bias = _normal(rng, shape), _normal(rng, shape[1:2]), _normal(rng, shape[1:2])
        epsilon = float(rng.choice([1e-5, 0.1]))
        axes = tuple(range(2, rank))
        x64 = x.astype(np.float64)
        view = (1, -1, *([1] * (rank - 2)))
        y = scale.reshape(view) * (x64 - x64.mean(axis=axes, keepdims=True)) / np.sqrt(
            x64.var(axis=axes, keepdims=True) + epsilon
        ) + bias.reshape(view)
        made.append(
            Made(
                [("x", x), ("scale", scale), ("bias", bias)],
                {"epsilon": epsilon},
                expected=[y.astype(F32)],
                stored=("scale", "bias"),
            )
        )
    return made


def lrn(rng: np.random.Generator, version: int) -> list[Made]:
    made = []
    for size in (1, 2, 3, 5):
        x = _normal(rng, (2, 6, 3, 3))
        alpha, beta, bias = float(rng.uniform(1e-4, 0.5)), float(rng.uniform(0.5, 1.0)), float(rng.uniform(0.5, 2.0))
        x64 = x.astype(np.float64)
        square = np.zeros_like(x64)
        for c in range(x.shape[1]):
            low, high = max(0, c - (size - 1) // 2), min(x.shape[1] - 1, c + math.ceil((size - 1) / 2))
            square[:, c] = (x64[:, low : high + 1] ** 2).sum(axis=1)
        y = x64 / (bias + alpha / size * square) ** beta
        made.append(
            Made([("x", x)], {"size": size, "alpha": alpha, "beta": beta, "bias": bias}, expected=[y.astype(F32)])
        )
    return made


# ---------------------------------------------------------------- convolution and pooling


def _same_pads(sizes, kernel, strides, dilations, mode):  # noqa: ANN001, ANN202
    begin, end = [], []
    for size, k, s, d in zip(sizes, kernel, strides, dilations):
        out = -(-size // s)
        total = max(0, (out - 1) * s + (k - 1) * d + 1 - size)
        small, large = total // 2, total - total // 2
        begin.append(small if mode == "SAME_UPPER" else large)
        end.append(large if mode == "SAME_UPPER" else small)
    return begin + end


def conv_formula(x, w, b, strides, pads, dilations, group):  # noqa: ANN001, ANN202
    nd = w.ndim - 2
    kernel = w.shape[2:]
    x64, w64 = x.astype(np.float64), w.astype(np.float64)
    xp = np.pad(x64, [(0, 0), (0, 0)] + [(pads[i], pads[i + nd]) for i in range(nd)])
    out = [(xp.shape[2 + i] - ((kernel[i] - 1) * dilations[i] + 1)) // strides[i] + 1 for i in range(nd)]
    channels, maps = x.shape[1] // group, w.shape[0] // group
    y = np.zeros((x.shape[0], w.shape[0], *out))
    for g in range(group):
        for k in np.ndindex(*kernel):
            window = tuple(
                slice(k[i] * dilations[i], k[i] * dilations[i] + strides[i] * (out[i] - 1) + 1, strides[i])
                for i in range(nd)
            )
            patch = xp[(slice(None), slice(g * channels, (g + 1) * channels), *window)]
            y[:, g * maps : (g + 1) * maps] += np.einsum(
                "nc...,mc->nm...", patch, w64[(slice(g * maps, (g + 1) * maps), slice(None), *k)]
            )
    if b is not None:
        y += b.astype(np.float64).reshape(1, -1, *([1] * nd))
    return y


def conv(rng: np.random.Generator, version: int) -> list[Made]:
    made = []
    for nd, group, auto_pad, bias in itertools.product(
        (1, 2), (1, 2), ("NOTSET", "SAME_UPPER", "SAME_LOWER", "VALID", None), (True, False)
    ):
        if rng.random() < 0.5:
            continue
        kernel = [int(k) for k in rng.integers(1, 4, size=nd)]
        strides = [int(s) for s in rng.integers(1, 3, size=nd)]
        dilations = [int(d) for d in rng.integers(1, 3, size=nd)]
        sizes = [int(s) for s in rng.integers(5, 9, size=nd)]
        channels, maps = 2 * group, 2 * group
        x = _normal(rng, (2, channels, *sizes))
        w = _normal(rng, (maps, channels // group, *kernel))
        b = _normal(rng, (maps,)) if bias else None
        attributes: dict[str, Any] = {
            "kernel_shape": kernel if rng.random() < 0.5 else None,
            "strides": strides,
            "dilations": dilations,
            "group": group if group > 1 or rng.random() < 0.5 else None,
        }
        if auto_pad in (None, "NOTSET"):
            pads = [int(p) for p in rng.integers(0, 3, size=2 * nd)]
            pads = [
                min(p, kernel[i % nd] - 1) for i, p in enumerate(pads)
            ]  # a pad beyond the kernel: undefined windows of padding only
            attributes["pads"] = pads if any(pads) or rng.random() < 0.5 else None
            attributes["auto_pad"] = auto_pad
        elif auto_pad == "VALID":
            pads = [0] * 2 * nd
            attributes["auto_pad"] = auto_pad
        else:
            pads = _same_pads(sizes, kernel, strides, dilations, auto_pad)
            attributes["auto_pad"] = auto_pad
        y = conv_formula(x, w, b, strides, pads, dilations, group)
        made.append(
            Made(
                [("x", x), ("w", w), ("b", b)],
                _keep(attributes),
                expected=[y.astype(F32)],
                stored=("w", "b"),
                label=f"{nd}d",
            )
        )
    return made


def conv_transpose_formula(x, w, b, strides, pads, dilations, group, output_padding):  # noqa: ANN001, ANN202
    nd = w.ndim - 2
    kernel, sizes = w.shape[2:], x.shape[2:]
    channels, maps = x.shape[1] // group, w.shape[1]
    full = [(sizes[i] - 1) * strides[i] + (kernel[i] - 1) * dilations[i] + 1 + output_padding[i] for i in range(nd)]
    y = np.zeros((x.shape[0], maps * group, *full))
    x64, w64 = x.astype(np.float64), w.astype(np.float64)
    for g in range(group):
        for k in np.ndindex(*kernel):
            part = np.einsum(
                "nc...,cm->nm...",
                x64[:, g * channels : (g + 1) * channels],
                w64[(slice(g * channels, (g + 1) * channels), slice(None), *k)],
            )
            window = tuple(
                slice(k[i] * dilations[i], k[i] * dilations[i] + strides[i] * (sizes[i] - 1) + 1, strides[i])
                for i in range(nd)
            )
            y[(slice(None), slice(g * maps, (g + 1) * maps), *window)] += part
    y = np.pad(y, [(0, 0), (0, 0)] + [(max(0, -pads[i]), max(0, -pads[i + nd])) for i in range(nd)])
    y = y[
        (slice(None), slice(None), *(slice(max(0, pads[i]), y.shape[2 + i] - max(0, pads[i + nd])) for i in range(nd)))
    ]
    if b is not None:
        y = y + b.astype(np.float64).reshape(1, -1, *([1] * nd))
    return y


def conv_transpose(rng: np.random.Generator, version: int) -> list[Made]:
    made = []
    for nd, group, way in itertools.product(
        (1, 2), (1, 2), ("pads", "output_padding", "output_shape", "SAME_UPPER", "SAME_LOWER", "VALID")
    ):
        kernel = [int(k) for k in rng.integers(1, 4, size=nd)]
        strides = [int(s) for s in rng.integers(1, 3, size=nd)]
        dilations = [int(d) for d in rng.integers(1, 3, size=nd)] if way in ("pads", "output_padding") else [1] * nd
        sizes = [int(s) for s in rng.integers(3, 6, size=nd)]
        channels, maps = 2 * group, 2
        x = _normal(rng, (1, channels, *sizes))
        w = _normal(rng, (channels, maps, *kernel))
        b = _normal(rng, (maps * group,)) if rng.random() < 0.5 else None
        attributes: dict[str, Any] = {
            "strides": strides,
            "dilations": dilations if any(d > 1 for d in dilations) else None,
            "group": group if group > 1 else None,
            "kernel_shape": kernel if rng.random() < 0.5 else None,
        }
        output_padding = [0] * nd
        natural = [(sizes[i] - 1) * strides[i] + (kernel[i] - 1) * dilations[i] + 1 for i in range(nd)]
        if way == "pads":
            pads = [int(rng.integers(0, kernel[i % nd])) for i in range(2 * nd)]
            attributes["pads"] = pads
        elif way == "output_padding":
            pads = [int(rng.integers(0, kernel[i % nd])) for i in range(2 * nd)]
            output_padding = [int(rng.integers(0, max(strides[i], dilations[i]))) for i in range(nd)]
            attributes.update(pads=pads, output_padding=output_padding)
        elif way == "output_shape":
            target = [natural[i] - int(rng.integers(0, 2)) for i in range(nd)]
            total = [natural[i] - target[i] for i in range(nd)]
            pads = [t - t // 2 for t in total] + [t // 2 for t in total]
            attributes["output_shape"] = target
        elif way == "VALID":
            pads = [0] * 2 * nd
            attributes["auto_pad"] = "VALID"
        else:
            target = [sizes[i] * strides[i] for i in range(nd)]  # "output_shape[i] = input_shape[i] * strides[i]"
            total = [natural[i] - target[i] for i in range(nd)]
            half = [
                t // 2 for t in total
            ]  # floor division, as onnx's own output_shape test: a negative total grows the output
            first = half if way == "SAME_UPPER" else [t - h for t, h in zip(total, half)]
            pads = first + [t - f for t, f in zip(total, first)]
            attributes["auto_pad"] = way
        y = conv_transpose_formula(x, w, b, strides, pads, dilations, group, output_padding)
        made.append(
            Made(
                [("x", x), ("w", w), ("b", b)],
                _keep(attributes),
                expected=[y.astype(F32)],
                stored=("w", "b"),
                label=f"{nd}d {way}",
            )
        )
    return made


def pool_formula(x, kind, kernel, strides, pads, dilations, ceil_mode, count_include_pad=0, p=2, storage_order=0):  # noqa: ANN001, ANN202
    """(Y, Indices) of a pooling op; a window that would start in the right padding (ceil_mode) is dropped."""
    nd = len(kernel)
    sizes = x.shape[2:]
    out = []
    for i in range(nd):
        span = sizes[i] + pads[i] + pads[i + nd] - ((kernel[i] - 1) * dilations[i] + 1)
        n = (-(-span // strides[i]) if ceil_mode else span // strides[i]) + 1
        if ceil_mode and (n - 1) * strides[i] >= sizes[i] + pads[i]:
            n -= 1
        out.append(n)
    x64 = x.astype(np.float64)
    y = np.zeros((*x.shape[:2], *out))
    indices = np.zeros((*x.shape[:2], *out), dtype=np.int64)
    for o in np.ndindex(*out):
        taps = [[o[i] * strides[i] - pads[i] + k * dilations[i] for k in range(kernel[i])] for i in range(nd)]
        inside = [[t for t in tap if 0 <= t < sizes[i]] for i, tap in enumerate(taps)]
        padded = math.prod(
            len([t for t in tap if -pads[i] <= t < sizes[i] + pads[i + nd]]) for i, tap in enumerate(taps)
        )
        window = x64[(slice(None), slice(None), *np.ix_(*inside))].reshape(*x.shape[:2], -1)
        if kind == "max":
            y[(slice(None), slice(None), *o)] = window.max(axis=-1)
            flat = window.argmax(axis=-1)
            position = np.unravel_index(flat, [len(t) for t in inside])
            coordinates = [np.asarray(inside[i])[position[i]] for i in range(nd)]
            if storage_order:
                local = coordinates[0] + coordinates[1] * sizes[0]
            else:
                local = np.ravel_multi_index(coordinates, sizes)
            base = (np.arange(x.shape[0])[:, None] * x.shape[1] + np.arange(x.shape[1])[None, :]) * math.prod(sizes)
            indices[(slice(None), slice(None), *o)] = base + local
        elif kind == "avg":
            count = padded if count_include_pad else window.shape[-1]
            y[(slice(None), slice(None), *o)] = window.sum(axis=-1) / count
        else:
            y[(slice(None), slice(None), *o)] = (np.abs(window) ** p).sum(axis=-1) ** (1.0 / p)
    return y.astype(x.dtype), indices


def pool(op: str) -> Callable[[np.random.Generator, int], list[Made]]:
    kind = {"MaxPool": "max", "AveragePool": "avg", "LpPool": "lp"}[op]

    def generate(rng: np.random.Generator, version: int) -> list[Made]:
        made = []
        dilated, ceiled = _has(op, version, "dilations"), _has(op, version, "ceil_mode")
        for nd, auto_pad, extra in itertools.product((1, 2), ("NOTSET", "SAME_UPPER", "SAME_LOWER", "VALID"), range(3)):
            if auto_pad != "NOTSET" and extra > 0:
                continue
            kernel = [int(k) for k in rng.integers(2, 4, size=nd)]
            strides = [int(s) for s in rng.integers(1, 3, size=nd)] if extra != 2 or rng.random() < 0.5 else None
            dilations = [int(d) for d in rng.integers(1, 3, size=nd)] if dilated and extra == 1 else None
            ceil_mode = int(extra == 2) if ceiled else None
            sizes = [int(s) for s in rng.integers(4, 8, size=nd)]
            dtype = F32 if not (op == "MaxPool" and version >= 12 and extra == 1) else np.int8
            x = (
                _normal(rng, (2, 3, *sizes))
                if dtype == F32
                else rng.integers(-100, 100, size=(2, 3, *sizes)).astype(np.int8)
            )
            s, d = strides or [1] * nd, dilations or [1] * nd
            if auto_pad == "NOTSET":
                pads = [int(rng.integers(0, kernel[i % nd])) for i in range(2 * nd)]
            elif auto_pad == "VALID":
                pads = [0] * 2 * nd
            else:
                pads = _same_pads(sizes, kernel, s, d, auto_pad)
            attributes = {
                "kernel_shape": kernel,
                "strides": strides,
                "dilations": dilations,
                "ceil_mode": ceil_mode,
                "auto_pad": auto_pad if auto_pad != "NOTSET" or rng.random() < 0.5 else None,
                "pads": pads if auto_pad == "NOTSET" and (any(pads) or rng.random() < 0.5) else None,
            }
            outputs, p, count, order = 1, 2, 0, 0
            if op == "AveragePool" and _has(op, version, "count_include_pad"):
                count = int(rng.integers(0, 2))
                attributes["count_include_pad"] = count if count or rng.random() < 0.5 else None
            if op == "LpPool":
                p = int(rng.integers(1, 4))
                attributes["p"] = float(p) if version == 1 else p
            if op == "MaxPool" and version >= 8 and nd == 2 and dilations is None and not ceil_mode:
                outputs = 2
                order = int(rng.integers(0, 2))
                attributes["storage_order"] = order if order or rng.random() < 0.5 else None
            y, indices = pool_formula(x, kind, kernel, s, pads, d, bool(ceil_mode), count, p, order)
            made.append(Made([("x", x)], _keep(attributes), outputs, [y, indices][:outputs], label=f"{nd}d {auto_pad}"))
        return made

    return generate


def global_pool(op: str) -> Callable[[np.random.Generator, int], list[Made]]:
    def generate(rng: np.random.Generator, version: int) -> list[Made]:
        made = []
        for rank in (3, 4, 5):
            x = _normal(rng, tuple(int(d) for d in rng.integers(2, 5, size=rank)))
            axes = tuple(range(2, rank))
            attributes: dict[str, Any] = {}
            x64 = x.astype(np.float64)
            if op == "GlobalAveragePool":
                y = x64.mean(axis=axes, keepdims=True)
            elif op == "GlobalMaxPool":
                y = x64.max(axis=axes, keepdims=True)
            else:
                p = int(rng.integers(1, 4)) if rank != 3 else None
                attributes = _keep({"p": None if p is None else (float(p) if version == 1 else p)})
                y = (np.abs(x64) ** (p or 2)).sum(axis=axes, keepdims=True) ** (1.0 / (p or 2))
            made.append(Made([("x", x)], attributes, expected=[y.astype(F32)]))
        return made

    return generate


# ---------------------------------------------------------------- matrix products


def gemm(rng: np.random.Generator, version: int) -> list[Made]:
    made = []
    for trans_a, trans_b, c_shape in itertools.product((0, 1), (0, 1), ("MN", "N", "1N", "M1", "1", "scalar", "none")):
        if c_shape == "none" and version < 11:
            continue
        if c_shape == "scalar" and version < 7:
            continue
        m, k, n = (int(d) for d in rng.integers(1, 6, size=3))
        a = _normal(rng, (k, m) if trans_a else (m, k))
        b = _normal(rng, (n, k) if trans_b else (k, n))
        shapes = {"MN": (m, n), "N": (n,), "1N": (1, n), "M1": (m, 1), "1": (1,), "scalar": ()}
        c = _normal(rng, shapes[c_shape]) if c_shape != "none" else None
        alpha, beta = float(rng.choice([1.0, 0.5, -2.0])), float(rng.choice([1.0, 0.25]))
        attributes = {
            "transA": trans_a or None,
            "transB": trans_b or None,
            "alpha": alpha if alpha != 1.0 else None,
            "beta": beta if beta != 1.0 else None,
        }
        if version < 7 and c_shape != "MN":
            attributes["broadcast"] = 1
        a64, b64 = a.astype(np.float64), b.astype(np.float64)
        y = alpha * (a64.T if trans_a else a64) @ (b64.T if trans_b else b64)
        if c is not None:
            y = y + beta * c.astype(np.float64)
        made.append(
            Made(
                [("a", a), ("b", b), ("c", c)],
                _keep(attributes),
                expected=[y.astype(F32)],
                stored=("b", "c"),
                label=c_shape,
            )
        )
    return made


def matmul(rng: np.random.Generator, version: int) -> list[Made]:
    made = []
    for a_shape, b_shape in [
        ((3,), (3,)),
        ((3,), (3, 4)),
        ((2, 3), (3,)),
        ((2, 3), (3, 4)),
        ((2, 2, 3), (3, 4)),
        ((2, 1, 2, 3), (1, 3, 3, 4)),
        ((2, 3), (2, 3, 4)),
    ]:
        a, b = _normal(rng, a_shape), _normal(rng, b_shape)
        made.append(
            Made([("a", a), ("b", b)], {}, expected=[(a.astype(np.float64) @ b.astype(np.float64)).astype(F32)])
        )
    return made


# ---------------------------------------------------------------- shapes and data movement


def reshape(rng: np.random.Generator, version: int) -> list[Made]:
    made = []
    x = _normal(rng, (2, 3, 4))
    for target, zero in [((6, 4), 0), ((0, -1), 0), ((-1,), 0), ((4, 0, 2), 0), ((2, 3, 4, 1), 0), ((1, 24), 0)]:
        shape = np.array(target, dtype=np.int64)
        out = [x.shape[i] if t == 0 and not zero else t for i, t in enumerate(target)]
        y = x.reshape(out)
        if version == 1:
            made.append(Made([("x", x)], {"shape": list(target)}, expected=[y]))
        else:
            made.append(Made([("x", x), ("shape", shape)], {}, expected=[y], stored=("shape",)))
    if version >= 14:
        empty = np.zeros((0, 3), dtype=F32)
        made.append(
            Made(
                [("x", empty), ("shape", np.array([3, 0], dtype=np.int64))],
                {"allowzero": 1},
                expected=[empty.reshape(3, 0)],
                stored=("shape",),
            )
        )
    return made


def flatten(rng: np.random.Generator, version: int) -> list[Made]:
    made = []
    x = _normal(rng, (2, 3, 4, 2))
    for axis in (None, 0, 1, 2, 4, -1, -3):
        if axis is not None and axis < 0 and version < 11:
            continue
        a = 1 if axis is None else axis + x.ndim if axis < 0 else axis
        made.append(Made([("x", x)], _keep({"axis": axis}), expected=[x.reshape(math.prod(x.shape[:a]), -1)]))
    return made


def squeeze(op: str) -> Callable[[np.random.Generator, int], list[Made]]:
    def generate(rng: np.random.Generator, version: int) -> list[Made]:
        made = []
        if op == "Squeeze":
            x = _normal(rng, (1, 3, 1, 2, 1))
            choices = [None, [0], [2, 4], [-1], [0, -3]]
        else:
            x = _normal(rng, (3, 2))
            choices = [[0], [1], [0, 3], [-1], [-1, 0], [1, 2]]
        for axes in choices:
            if axes is None and op == "Unsqueeze":
                continue
            if axes is not None and min(axes) < 0 and version < 11:
                continue
            if op == "Squeeze":
                y = np.squeeze(x, axis=tuple(axes)) if axes is not None else np.squeeze(x)
            else:
                rank = x.ndim + len(axes)
                y = x.reshape(_unsqueezed(x.shape, [a % rank for a in axes]))
            if version < 13:
                made.append(Made([("x", x)], _keep({"axes": axes}), expected=[y]))
            else:
                given = np.array(axes, dtype=np.int64) if axes is not None else None
                made.append(Made([("x", x), ("axes", given)], {}, expected=[y], stored=("axes",)))
        return made

    return generate


def _unsqueezed(shape: tuple[int, ...], axes: list[int]) -> list[int]:
    rest = iter(shape)
    return [1 if i in axes else next(rest) for i in range(len(shape) + len(axes))]


def transpose(rng: np.random.Generator, version: int) -> list[Made]:
    x = _normal(rng, (2, 3, 4))
    return [
        Made([("x", x)], _keep({"perm": perm}), expected=[np.transpose(x, perm)])
        for perm in (None, [0, 2, 1], [2, 0, 1], [1, 0, 2])
    ]


def concat(rng: np.random.Generator, version: int) -> list[Made]:
    made = []
    for axis in (None, 0, 1, 2, -1):
        if (axis is None and version > 1) or (axis is not None and axis < 0 and version < 11):
            continue
        a = 1 if axis is None else axis
        shapes = [[2, 3, 4], [2, 3, 4]]
        shapes[1][a] = 2
        x, y = _normal(rng, tuple(shapes[0])), _normal(rng, tuple(shapes[1]))
        made.append(Made([("x", x), ("y", y)], _keep({"axis": axis}), expected=[np.concatenate([x, y], axis=a)]))
    return made


def split(rng: np.random.Generator, version: int) -> list[Made]:
    made = []
    x = _normal(rng, (4, 6, 3))
    for axis, sizes, count in [
        (None, None, 2),
        (1, [2, 4], 2),
        (1, None, 3),
        (-1, [1, 2], 2),
        (0, [1, 1, 2], 3),
        (1, "uneven", 4),
    ]:
        if axis is not None and axis < 0 and version < 11:
            continue
        if sizes == "uneven" and version < 18:
            continue
        a = 0 if axis is None else axis
        if sizes == "uneven":
            step = -(-x.shape[a] // count)  # "the last chunk will be smaller" (here: empty)
            expected = np.split(x, [min(step * i, x.shape[a]) for i in range(1, count)], axis=a)
            made.append(Made([("x", x)], {"axis": axis, "num_outputs": count}, count, expected))
            continue
        given = sizes or [x.shape[a] // count] * count
        expected = np.split(x, np.cumsum(given)[:-1], axis=a)
        attributes = _keep({"axis": axis})
        if version >= 18 and sizes is None:
            attributes["num_outputs"] = count
        if version < 13 and sizes is not None:
            attributes["split"] = sizes
            made.append(Made([("x", x)], attributes, count, expected))
        elif sizes is not None:
            made.append(
                Made(
                    [("x", x), ("split", np.array(sizes, dtype=np.int64))],
                    attributes,
                    count,
                    expected,
                    stored=("split",),
                )
            )
        else:
            made.append(Made([("x", x)], attributes, count, expected))
    return made


def _slice_formula(x, starts, ends, axes, steps):  # noqa: ANN001, ANN202
    index = [slice(None)] * x.ndim
    for start, end, axis, step in zip(starts, ends, axes, steps):
        size = x.shape[axis]
        start = start + size if start < 0 else start
        end = end + size if end < 0 else end
        if step > 0:
            start, end = min(max(start, 0), size), min(max(end, 0), size)
        else:
            start, end = min(max(start, 0), size - 1), min(max(end, -1), size - 1)
        index[axis] = np.arange(start, end, step, dtype=np.int64)
    y = x
    for axis, which in enumerate(index):
        if not isinstance(which, slice):
            y = np.take(y, which, axis=axis)
    return y


def slice_op(rng: np.random.Generator, version: int) -> list[Made]:
    made = []
    x = _normal(rng, (4, 5, 6))
    big = 2**62
    for starts, ends, axes, steps in [
        ([1], [3], [0], None),
        ([0, 1], [-1, big], [1, 2], None),
        ([1], [1000], None, None),
        ([-3, 0], [-1, 3], [2, 0], [1, 2]),
        ([4], [-big], [1], [-1]),
        ([-1, 5], [0, 1], [0, 2], [-2, -3]),
        ([2], [0], [-1], None),
    ]:
        if version < 10 and steps is not None:
            continue
        if version < 11 and axes is not None and min(axes) < 0:
            continue
        used_axes = axes if axes is not None else list(range(len(starts)))
        y = _slice_formula(x, starts, ends, [a % x.ndim for a in used_axes], steps or [1] * len(starts))
        if version < 10:
            made.append(Made([("x", x)], _keep({"starts": starts, "ends": ends, "axes": axes}), expected=[y]))
        else:
            inputs = [
                ("x", x),
                ("starts", np.array(starts, dtype=np.int64)),
                ("ends", np.array(ends, dtype=np.int64)),
                ("axes", None if axes is None and steps is None else np.array(used_axes, dtype=np.int64)),
                ("steps", None if steps is None else np.array(steps, dtype=np.int64)),
            ]
            made.append(Made(inputs, {}, expected=[y], stored=("starts", "ends", "axes", "steps")))
    return made


def pad(rng: np.random.Generator, version: int) -> list[Made]:
    made = []
    x = _normal(rng, (1, 2, 4, 5))
    modes = [None, "constant", "reflect", "edge"] + (["wrap"] if version >= 19 else [])
    for mode in modes:
        pads = [
            0,
            0,
            int(rng.integers(0, 3)),
            int(rng.integers(0, 3)),
            0,
            0,
            int(rng.integers(0, 3)),
            int(rng.integers(0, 3)),
        ]
        value = float(rng.uniform(-2, 2)) if mode in (None, "constant") and rng.random() < 0.7 else None
        nd = x.ndim
        widths = [(pads[i], pads[i + nd]) for i in range(nd)]
        y = np.pad(
            x,
            widths,
            mode=mode or "constant",
            **({"constant_values": np.float32(value or 0.0)} if mode in (None, "constant") else {}),
        )
        attributes = _keep({"mode": mode})
        if version < 11:
            attributes["paddings" if version == 1 else "pads"] = pads
            if value is not None:
                attributes["value"] = value
            made.append(Made([("x", x)], attributes, expected=[y]))
        else:
            inputs = [
                ("x", x),
                ("pads", np.array(pads, dtype=np.int64)),
                ("value", None if value is None else np.array(value, dtype=F32)),
            ]
            made.append(Made(inputs, attributes, expected=[y], stored=("pads", "value")))
    if version >= 11:
        crop = [0, 0, -1, 0, 0, 0, 1, -2]
        y = np.pad(x, [(0, 0), (0, 0), (0, 1), (0, 0)])[:, :, 1:, :-2]
        made.append(
            Made(
                [("x", x), ("pads", np.array(crop, dtype=np.int64))],
                {},
                expected=[y],
                stored=("pads",),
                label="negative",
            )
        )
    if version >= 18:
        y = np.pad(x, [(0, 0), (0, 0), (0, 0), (2, 1)])
        made.append(
            Made(
                [
                    ("x", x),
                    ("pads", np.array([2, 1], dtype=np.int64)),
                    ("value", None),
                    ("axes", np.array([-1], dtype=np.int64)),
                ],
                {},
                expected=[y],
                stored=("pads", "axes"),
                label="axes",
            )
        )
    return made


def _nearest_upsample(x: np.ndarray, scales: list[float]) -> np.ndarray:
    y = x
    for axis, scale in enumerate(scales):
        size = int(math.floor(x.shape[axis] * scale))
        picks = np.minimum(np.floor(np.arange(size) / scale).astype(np.int64), x.shape[axis] - 1)
        y = np.take(y, picks, axis=axis)
    return y


def upsample(rng: np.random.Generator, version: int) -> list[Made]:
    if version == 1:
        return []  # experimental: height_scale/width_scale on 4-D input; neither runtime registers it
    made = []
    for mode, scales in itertools.product(
        (None, "nearest", "linear"), ([1.0, 1.0, 2.0, 2.0], [1.0, 1.0, 2.0, 3.0], [1.0, 1.0, 1.5, 2.5])
    ):
        x = _normal(rng, (1, 2, 3, 4))
        expected = [_nearest_upsample(x, scales)] if mode != "linear" else None
        if version == 7:
            made.append(Made([("x", x)], _keep({"mode": mode, "scales": scales}), expected=expected, label=str(mode)))
        else:
            made.append(
                Made(
                    [("x", x), ("scales", np.array(scales, dtype=F32))],
                    _keep({"mode": mode}),
                    expected=expected,
                    stored=("scales",),
                    label=str(mode),
                )
            )
    return made


def resize(rng: np.random.Generator, version: int) -> list[Made]:
    made = []
    modes = ["nearest", "linear", "cubic"]
    transforms = [None, "half_pixel", "asymmetric", "align_corners", "pytorch_half_pixel", "tf_half_pixel_for_nearest"]
    if version >= 19:
        transforms.append("half_pixel_symmetric")
    nearest_modes = [None, "round_prefer_floor", "round_prefer_ceil", "floor", "ceil"]
    for mode, transform, scales in itertools.product(
        modes + [None], transforms, ([1.0, 1.0, 2.0, 2.0], [1.0, 1.0, 0.6, 1.7], "sizes")
    ):
        if version == 10 and (transform is not None or scales == "sizes" or mode == "cubic"):
            continue
        if transform == "tf_half_pixel_for_nearest" and (mode != "nearest" or version >= 13):
            continue
        x = _normal(rng, (1, 2, 4, 5))
        attributes: dict[str, Any] = {"mode": mode, "coordinate_transformation_mode": transform}
        if version >= 11 and mode in (None, "nearest"):
            attributes["nearest_mode"] = nearest_modes[int(rng.integers(0, len(nearest_modes)))]
        if version >= 11 and mode == "cubic":
            attributes["cubic_coeff_a"] = float(rng.choice([-0.75, -0.5]))
            attributes["exclude_outside"] = int(rng.integers(0, 2))
        if version == 10:
            made.append(
                Made(
                    [("x", x), ("scales", np.array(scales, dtype=F32))],
                    _keep(attributes),
                    stored=("scales",),
                    label=str(mode),
                )
            )
            continue
        roi = np.array([], dtype=F32) if version < 13 else None
        if scales == "sizes":
            inputs = [
                ("x", x),
                ("roi", roi),
                ("scales", np.array([], dtype=F32) if version < 13 else None),
                ("sizes", np.array([1, 2, 7, 3], dtype=np.int64)),
            ]
        else:
            inputs = [("x", x), ("roi", roi), ("scales", np.array(scales, dtype=F32))]
        made.append(Made(inputs, _keep(attributes), stored=("roi", "scales", "sizes"), label=f"{mode} {transform}"))
    return made


def gather(rng: np.random.Generator, version: int) -> list[Made]:
    made = []
    x = _normal(rng, (3, 4, 5))
    for axis in (None, 0, 1, 2, -1):
        if axis is not None and axis < 0 and version < 11:
            continue
        a = 0 if axis is None else axis
        size = x.shape[a]
        for shape in ((), (2,), (2, 3)):
            low = -size if version >= 11 else 0
            indices = rng.integers(low, size, size=shape).astype(np.int64)
            made.append(
                Made([("x", x), ("indices", indices)], _keep({"axis": axis}), expected=[np.take(x, indices, axis=a)])
            )
    return made


def tile(rng: np.random.Generator, version: int) -> list[Made]:
    x = _normal(rng, (2, 3))
    if version == 1:
        return [
            Made(
                [("x", x), ("tiles", np.array(3, dtype=F32)), ("axis", np.array(axis, dtype=F32))],
                {},  # both typed T in version 1
                expected=[np.concatenate([x] * 3, axis=axis)],
                stored=("tiles", "axis"),
            )
            for axis in (0, 1)
        ]
    return [
        Made([("x", x), ("repeats", np.array(r, dtype=np.int64))], {}, expected=[np.tile(x, r)], stored=("repeats",))
        for r in ([1, 2], [3, 1], [2, 2])
    ]


def depth_to_space(op: str) -> Callable[[np.random.Generator, int], list[Made]]:
    def generate(rng: np.random.Generator, version: int) -> list[Made]:
        made = []
        for block, mode in itertools.product((2, 3), (None, "DCR", "CRD")):
            if mode is not None and not _has(op, version, "mode"):
                continue
            n, c, h, w = 1, 2, 2, 3
            if op == "DepthToSpace":
                x = _normal(rng, (n, c * block * block, h, w))
                if mode == "CRD":
                    y = (
                        x.reshape(n, c, block, block, h, w)
                        .transpose(0, 1, 4, 2, 5, 3)
                        .reshape(n, c, h * block, w * block)
                    )
                else:
                    y = (
                        x.reshape(n, block, block, c, h, w)
                        .transpose(0, 3, 4, 1, 5, 2)
                        .reshape(n, c, h * block, w * block)
                    )
            else:
                x = _normal(rng, (n, c, h * block, w * block))
                y = x.reshape(n, c, h, block, w, block).transpose(0, 3, 5, 1, 2, 4).reshape(n, c * block * block, h, w)
            made.append(Made([("x", x)], _keep({"blocksize": block, "mode": mode}), expected=[y]))
        return made

    return generate


# ---------------------------------------------------------------- element-wise


UNARY: dict[str, Callable[[np.ndarray], np.ndarray]] = {
    "Relu": lambda x: np.maximum(x, 0),
    "Sigmoid": lambda x: 1 / (1 + np.exp(-x)),
    "Tanh": np.tanh,
    "Exp": np.exp,
    "Log": np.log,
    "Sqrt": np.sqrt,
    "Reciprocal": lambda x: 1 / x,
    "Abs": np.abs,
    "Neg": np.negative,
    "Floor": np.floor,
    "Ceil": np.ceil,
    "Softplus": lambda x: np.log1p(np.exp(x)),
    "Softsign": lambda x: x / (1 + np.abs(x)),
    "Erf": np.vectorize(math.erf),
    "Sin": np.sin,
    "Cos": np.cos,
    "Tan": np.tan,
    "Asin": np.arcsin,
    "Acos": np.arccos,
    "Atan": np.arctan,
    "Sinh": np.sinh,
    "Cosh": np.cosh,
    "Asinh": np.arcsinh,
    "Acosh": np.arccosh,
    "Atanh": np.arctanh,
    "Sign": np.sign,
    "Round": np.round,
}
POSITIVE = {"Log", "Sqrt", "Reciprocal"}
UNIT = {"Asin", "Acos", "Atanh"}


def unary(op: str) -> Callable[[np.random.Generator, int], list[Made]]:
    def generate(rng: np.random.Generator, version: int) -> list[Made]:
        made = []
        for shape in ((3, 4), (2, 3, 2, 2)):
            x = _normal(rng, shape) * 2
            if op in POSITIVE:
                x = np.abs(x) + 0.1
            elif op in UNIT:
                x = np.tanh(x) * 0.9
            elif op == "Acosh":
                x = np.abs(x) + 1.1
            elif op in ("Floor", "Ceil", "Round"):
                x = (np.round(x * 4) / 4 + 0.01 * np.sign(x)).astype(F32)  # away from the .5 ties
            x = x.astype(F32)
            made.append(Made([("x", x)], {}, expected=[UNARY[op](x.astype(np.float64)).astype(F32)]))
        return made

    return generate


def activation(op: str) -> Callable[[np.random.Generator, int], list[Made]]:
    def generate(rng: np.random.Generator, version: int) -> list[Made]:
        made = []
        for given in (False, True):
            x = (_normal(rng, (3, 4, 2)) * 2).astype(F32)
            x64 = x.astype(np.float64)
            schema = onnx.defs.get_schema(op, version, "")
            defaults = {
                k: float(a.default_value.f)
                for k, a in schema.attributes.items()
                if a.default_value.type == onnx.AttributeProto.FLOAT
            }
            values = {k: float(rng.uniform(0.1, 2.0)) for k in defaults} if given else {}
            v = {**defaults, **values}
            if op == "Elu":
                y = np.where(x64 > 0, x64, v["alpha"] * (np.exp(x64) - 1))
            elif op == "Selu":
                y = np.where(x64 > 0, v["gamma"] * x64, v["gamma"] * v["alpha"] * (np.exp(x64) - 1))
            elif op == "LeakyRelu":
                y = np.where(x64 >= 0, x64, v["alpha"] * x64)
            elif op == "HardSigmoid":
                y = np.clip(v["alpha"] * x64 + v["beta"], 0, 1)
            elif op == "ThresholdedRelu":
                y = np.where(x64 > v["alpha"], x64, 0)
            elif op == "Celu":
                y = np.maximum(0, x64) + np.minimum(0, v["alpha"] * (np.exp(x64 / v["alpha"]) - 1))
            else:
                raise ValueError(op)
            made.append(Made([("x", x)], values, expected=[y.astype(F32)]))
        return made

    return generate


def prelu(rng: np.random.Generator, version: int) -> list[Made]:
    made = []
    x = _normal(rng, (2, 3, 4, 2))
    shapes = [(1,), x.shape] if version < 7 else [(1,), (3, 1, 1), (2,), (4, 2), x.shape]
    for shape in shapes:
        slope = _normal(rng, shape)
        y = np.where(x >= 0, x, x * slope)
        made.append(Made([("x", x), ("slope", slope)], {}, expected=[y.astype(F32)], stored=("slope",)))
    return made


BINARY: dict[str, Callable[[np.ndarray, np.ndarray], np.ndarray]] = {
    "Add": np.add,
    "Sub": np.subtract,
    "Mul": np.multiply,
    "Div": np.divide,
    "Pow": np.power,
    "Equal": np.equal,
    "Greater": np.greater,
    "Less": np.less,
    "GreaterOrEqual": np.greater_equal,
    "LessOrEqual": np.less_equal,
    "And": np.logical_and,
    "Or": np.logical_or,
    "Xor": np.logical_xor,
    "Max": np.maximum,
    "Min": np.minimum,
}
LOGICAL = {"And", "Or", "Xor"}
COMPARISONS = {"Equal", "Greater", "Less", "GreaterOrEqual", "LessOrEqual"}


def binary(op: str) -> Callable[[np.random.Generator, int], list[Made]]:
    def generate(rng: np.random.Generator, version: int) -> list[Made]:
        made = []
        legacy = _has(op, version, "broadcast")
        cases = (
            [
                ((2, 3, 4, 5), (2, 3, 4, 5), None),
                ((2, 3, 4, 5), (5,), None),
                ((2, 3, 4, 5), (4, 5), None),
                ((2, 3, 4, 5), (3, 4), 1),
                ((2, 3, 4, 5), (3,), 1),
                ((2, 3, 4, 5), (2,), 0),
                ((2, 3, 4, 5), (), None),
            ]
            if legacy
            else [
                ((2, 3, 4), (2, 3, 4), None),
                ((2, 3, 4), (4,), None),
                ((2, 1, 4), (3, 1), None),
                ((1,), (2, 3), None),
                ((), (2, 2), None),
            ]
        )
        for a_shape, b_shape, axis in cases:
            if op in LOGICAL:
                a, b = rng.random(a_shape) < 0.5, rng.random(b_shape) < 0.5
            elif op in COMPARISONS:
                kind = np.int32 if op == "Equal" and version < 11 else F32  # Equal takes floats from version 11
                a, b = (
                    rng.integers(0, 3, size=a_shape).astype(kind),
                    rng.integers(0, 3, size=b_shape).astype(kind),
                )  # ties
            else:
                a, b = _normal(rng, a_shape), _normal(rng, b_shape)
                if op == "Pow":
                    a = (np.abs(a) + 0.5).astype(F32)
                if op == "Div":
                    b = np.where(np.abs(b) < 0.2, 0.5, b).astype(F32)
            attributes: dict[str, Any] = {}
            b_view = b
            if legacy and b_shape != a_shape:
                attributes["broadcast"] = 1
                if axis is not None:
                    attributes["axis"] = axis
                    b_view = b.reshape((1,) * axis + b_shape + (1,) * (len(a_shape) - axis - len(b_shape)))
            formula = BINARY[op]
            with np.errstate(all="ignore"):
                y = formula(
                    a.astype(np.float64) if a.dtype != bool else a,
                    b_view.astype(np.float64) if b.dtype != bool else b_view,
                )
            out = y if y.dtype == bool else y.astype(F32)
            made.append(Made([("a", a), ("b", b)], attributes, expected=[out], label=f"{a_shape} {b_shape}"))
        return made

    return generate


def variadic(op: str) -> Callable[[np.random.Generator, int], list[Made]]:
    def generate(rng: np.random.Generator, version: int) -> list[Made]:
        made = []
        broadcasting = version >= 8
        shape_sets = [[(2, 3)], [(2, 3), (2, 3)], [(2, 3), (2, 3), (2, 3)]]
        if broadcasting:
            shape_sets += [[(2, 3), (3,)], [(2, 1, 3), (4, 1), (1,)]]
        for shapes in shape_sets:
            arrays = [_normal(rng, s) for s in shapes]
            wide = [a.astype(np.float64) for a in arrays]
            if op == "Sum":
                y = sum(np.broadcast_arrays(*wide))
            elif op == "Mean":
                y = sum(np.broadcast_arrays(*wide)) / len(wide)
            elif op == "Max":
                y = np.maximum.reduce(np.broadcast_arrays(*wide))
            else:
                y = np.minimum.reduce(np.broadcast_arrays(*wide))
            made.append(Made([(f"x{i}", a) for i, a in enumerate(arrays)], {}, expected=[np.asarray(y).astype(F32)]))
        return made

    return generate


def clip(rng: np.random.Generator, version: int) -> list[Made]:
    made = []
    for low, high in [(-0.5, 0.5), (None, 0.3), (-0.2, None), (None, None), (0.0, 6.0)]:
        x = (_normal(rng, (3, 4)) * 2).astype(F32)
        y = np.clip(x, -np.inf if low is None else low, np.inf if high is None else high).astype(F32)
        if version < 11:
            made.append(Made([("x", x)], _keep({"min": low, "max": high}), expected=[y]))
        else:
            made.append(
                Made(
                    [
                        ("x", x),
                        ("min", None if low is None else np.array(low, dtype=F32)),
                        ("max", None if high is None else np.array(high, dtype=F32)),
                    ],
                    {},
                    expected=[y],
                    stored=("min", "max"),
                )
            )
    if version >= 12:
        x = rng.integers(-50, 50, size=(3, 4)).astype(np.int32)
        made.append(
            Made(
                [("x", x), ("min", np.array(-10, dtype=np.int32)), ("max", np.array(20, dtype=np.int32))],
                {},
                expected=[np.clip(x, -10, 20)],
                stored=("min", "max"),
                label="int32",
            )
        )
    return made


def dropout(rng: np.random.Generator, version: int) -> list[Made]:
    made = []
    for outputs in (1, 2):
        x = _normal(rng, (3, 4))
        ratio = float(rng.uniform(0.1, 0.9))
        mask = np.ones(x.shape, dtype=bool if version >= 10 else F32)
        expected = [x, mask][:outputs]
        if version < 7:
            made.append(Made([("x", x)], {"is_test": 1, "ratio": ratio}, outputs, expected))
        elif version < 12:
            made.append(Made([("x", x)], {"ratio": ratio}, outputs, expected))
        else:
            made.append(
                Made(
                    [("x", x), ("ratio", np.array(ratio, dtype=F32)), ("training_mode", np.array(False))],
                    {},
                    outputs,
                    expected,
                    stored=("ratio", "training_mode"),
                )
            )
            made.append(Made([("x", x)], {}, outputs, expected, label="defaults"))
    return made


# ---------------------------------------------------------------- reductions


REDUCE: dict[str, Callable[..., np.ndarray]] = {
    "ReduceSum": np.sum,
    "ReduceMean": np.mean,
    "ReduceMax": np.max,
    "ReduceMin": np.min,
    "ReduceProd": np.prod,
    "ReduceL1": lambda x, axis, keepdims: np.sum(np.abs(x), axis=axis, keepdims=keepdims),
    "ReduceL2": lambda x, axis, keepdims: np.sqrt(np.sum(x * x, axis=axis, keepdims=keepdims)),
    "ReduceLogSum": lambda x, axis, keepdims: np.log(np.sum(x, axis=axis, keepdims=keepdims)),
    "ReduceLogSumExp": lambda x, axis, keepdims: np.log(np.sum(np.exp(x), axis=axis, keepdims=keepdims)),
    "ReduceSumSquare": lambda x, axis, keepdims: np.sum(x * x, axis=axis, keepdims=keepdims),
}


def reduce(op: str) -> Callable[[np.random.Generator, int], list[Made]]:
    def generate(rng: np.random.Generator, version: int) -> list[Made]:
        made = []
        as_input = version >= 18 or (op == "ReduceSum" and version >= 13)
        for axes, keepdims, noop in [
            (None, None, None),
            ([1], 0, None),
            ([0, 2], 1, None),
            ([-1], None, None),
            ([], 0, 1),
            ([], 1, 0),
        ]:
            if axes is not None and axes and min(axes) < 0 and version < 11:
                continue
            if noop is not None and not as_input:
                continue
            x = _normal(rng, (2, 3, 4))
            if op in ("ReduceLogSum",):
                x = np.abs(x) + 0.1
            x64 = x.astype(np.float64)
            if noop and not axes:
                y = REDUCE[op](x64, axis=(), keepdims=True)  # "no reduction is applied, but other operations will be"
            else:
                axis = tuple(a % x.ndim for a in axes) if axes else None
                y = REDUCE[op](x64, axis=axis, keepdims=bool(1 if keepdims is None else keepdims))
            attributes = _keep({"keepdims": keepdims, "noop_with_empty_axes": noop})
            if as_input:
                given = None if axes is None else np.array(axes, dtype=np.int64)
                made.append(
                    Made(
                        [("x", x), ("axes", given)], attributes, expected=[np.asarray(y).astype(F32)], stored=("axes",)
                    )
                )
            else:
                made.append(
                    Made([("x", x)], _keep({**attributes, "axes": axes or None}), expected=[np.asarray(y).astype(F32)])
                )
        return made

    return generate


def arg_reduce(op: str) -> Callable[[np.random.Generator, int], list[Made]]:
    def generate(rng: np.random.Generator, version: int) -> list[Made]:
        made = []
        for axis, keepdims, last in [
            (None, None, None),
            (1, 0, None),
            (-1, 1, None),
            (2, None, 1),
            (0, 0, 1),
            (1, 1, 0),
        ]:
            if axis is not None and axis < 0 and version < 11:
                continue
            if last is not None and version < 12:
                continue
            x = rng.integers(0, 4, size=(3, 4, 5)).astype(F32)  # ties: which index wins is what select_last_index says
            a = 0 if axis is None else axis % x.ndim
            pick = np.argmax if op == "ArgMax" else np.argmin
            if last:
                y = x.shape[a] - 1 - pick(np.flip(x, axis=a), axis=a)
            else:
                y = pick(x, axis=a)
            if keepdims is None or keepdims:
                y = np.expand_dims(y, a)
            made.append(
                Made(
                    [("x", x)],
                    _keep({"axis": axis, "keepdims": keepdims, "select_last_index": last}),
                    expected=[y.astype(np.int64)],
                )
            )
        return made

    return generate


def top_k(rng: np.random.Generator, version: int) -> list[Made]:
    made = []
    for axis, k, largest in [(None, 2, None), (0, 1, None), (1, 3, 0), (-1, 4, 1)]:
        if largest is not None and version < 11:
            continue
        x = rng.permutation(60).reshape(3, 4, 5).astype(F32)
        a = -1 if axis is None else axis
        order = np.argsort(-x if largest in (None, 1) else x, axis=a, kind="stable")
        indices = np.take(order, np.arange(k), axis=a)
        values = np.take_along_axis(x, indices, axis=a)
        attributes = _keep({"axis": axis, "largest": largest})
        if version == 1:
            made.append(Made([("x", x)], {**attributes, "k": k}, 2, [values, indices.astype(np.int64)]))
        else:
            made.append(
                Made(
                    [("x", x), ("k", np.array([k], dtype=np.int64))],
                    attributes,
                    2,
                    [values, indices.astype(np.int64)],
                    stored=("k",),
                )
            )
    return made


# ---------------------------------------------------------------- casts


CASTS = [
    (F32, np.int32),
    (F32, np.int64),
    (F32, np.float16),
    (F32, np.float64),
    (F32, bool),
    (F32, np.uint8),
    (F32, np.int8),
    (np.int64, F32),
    (np.int32, np.int64),
    (bool, F32),
    (np.float16, F32),
    (np.float64, F32),
    (np.int64, np.int32),
]


def cast(rng: np.random.Generator, version: int) -> list[Made]:
    made = []
    for source, target in CASTS:
        if source is bool:
            x = rng.random((3, 4)) < 0.5
        elif np.dtype(source).kind == "f":
            x = (
                rng.uniform(-100, 100, size=(3, 4))
                if np.dtype(target).kind in "fi"
                else rng.uniform(0, 200, size=(3, 4))
            ).astype(source)
            if target is bool:
                x[0, 0] = 0
        else:
            x = rng.integers(-1000, 1000, size=(3, 4)).astype(source)
        element = onnx.helper.np_dtype_to_tensor_dtype(np.dtype(target))
        to = onnx.TensorProto.DataType.Name(element) if version == 1 else element
        expected = x.astype(target)
        made.append(
            Made(
                [("x", x)], {"to": to}, expected=[expected], label=f"{np.dtype(source).name} to {np.dtype(target).name}"
            )
        )
    return made


# ---------------------------------------------------------------- recurrent


def _sigmoid(x: np.ndarray) -> np.ndarray:
    return 1 / (1 + np.exp(-x))


def recurrent_formula(op, x, w, r, b, lens, h0, c0, p, hidden, direction, clip, linear_before_reset, input_forget):  # noqa: ANN001, ANN202, PLR0913
    """(Y [seq, dirs, batch, hidden], Y_h, Y_c) of RNN, GRU or LSTM with the default activations."""
    seq, batch = x.shape[:2]
    dirs = 2 if direction == "bidirectional" else 1
    gates = {"RNN": 1, "GRU": 3, "LSTM": 4}[op]
    y = np.zeros((seq, dirs, batch, hidden))
    y_h, y_c = np.zeros((dirs, batch, hidden)), np.zeros((dirs, batch, hidden))
    lens = np.full(batch, seq) if lens is None else lens
    for d in range(dirs):
        reverse = direction == "reverse" or d == 1
        wd, rd = w[d].astype(np.float64), r[d].astype(np.float64)
        bd = b[d].astype(np.float64) if b is not None else np.zeros(2 * gates * hidden)
        wb, rb = bd[: gates * hidden], bd[gates * hidden :]
        pd = p[d].astype(np.float64) if p is not None else np.zeros(3 * hidden)
        for n in range(batch):
            h = h0[d, n].astype(np.float64) if h0 is not None else np.zeros(hidden)
            c = c0[d, n].astype(np.float64) if c0 is not None else np.zeros(hidden)
            steps = range(lens[n] - 1, -1, -1) if reverse else range(lens[n])
            for t in steps:
                xt = x[t, n].astype(np.float64)

                def cut(v):  # noqa: ANN001, ANN202
                    return np.clip(v, -clip, clip) if clip is not None else v

                if op == "RNN":
                    h = np.tanh(cut(wd @ xt + rd @ h + wb + rb))
                elif op == "GRU":
                    wz, wr, wh = np.split(wd, 3)
                    rz, rr, rh = np.split(rd, 3)
                    wbz, wbr, wbh = np.split(wb, 3)
                    rbz, rbr, rbh = np.split(rb, 3)
                    z = _sigmoid(cut(wz @ xt + rz @ h + wbz + rbz))
                    rt = _sigmoid(cut(wr @ xt + rr @ h + wbr + rbr))
                    if linear_before_reset:
                        candidate = np.tanh(cut(wh @ xt + rt * (rh @ h + rbh) + wbh))
                    else:
                        candidate = np.tanh(cut(wh @ xt + rh @ (rt * h) + rbh + wbh))
                    h = (1 - z) * candidate + z * h
                else:
                    wi, wo, wf, wc = np.split(wd, 4)
                    ri, ro, rf, rc = np.split(rd, 4)
                    bi, bo, bf, bc = np.split(wb + rb, 4)
                    pi, po, pf = np.split(pd, 3)
                    i = _sigmoid(cut(wi @ xt + ri @ h + pi * c + bi))
                    f = 1 - i if input_forget else _sigmoid(cut(wf @ xt + rf @ h + pf * c + bf))
                    candidate = np.tanh(cut(wc @ xt + rc @ h + bc))
                    c = f * c + i * candidate
                    o = _sigmoid(cut(wo @ xt + ro @ h + po * c + bo))
                    h = o * np.tanh(c)
                y[t, d, n] = h
            y_h[d, n], y_c[d, n] = h, c
    return y, y_h, y_c


def recurrent(op: str) -> Callable[[np.random.Generator, int], list[Made]]:
    def generate(rng: np.random.Generator, version: int) -> list[Made]:
        made = []
        gates = {"RNN": 1, "GRU": 3, "LSTM": 4}[op]
        for direction, extra in itertools.product((None, "forward", "reverse", "bidirectional"), range(3)):
            if direction is None and extra:
                continue
            seq, batch, size, hidden = 4, 3, 3, 2
            dirs = 2 if direction == "bidirectional" else 1
            x = _normal(rng, (seq, batch, size))
            w, r = _normal(rng, (dirs, gates * hidden, size)) * 0.7, _normal(rng, (dirs, gates * hidden, hidden)) * 0.7
            b = _normal(rng, (dirs, 2 * gates * hidden)) if extra != 0 else None
            lens = np.array([4, 2, 3], dtype=np.int32) if extra == 2 else None
            h0 = _normal(rng, (dirs, batch, hidden)) if extra >= 1 else None
            c0 = _normal(rng, (dirs, batch, hidden)) if extra >= 1 and op == "LSTM" else None
            p = _normal(rng, (dirs, 3 * hidden)) if extra == 2 and op == "LSTM" else None
            clip = 1.5 if extra == 1 else None
            lbr = int(extra == 1) if op == "GRU" and _has(op, version, "linear_before_reset") else None
            forget = 1 if op == "LSTM" and extra == 1 and direction == "forward" else None
            attributes = _keep(
                {
                    "hidden_size": hidden,
                    "direction": direction,
                    "clip": clip,
                    "linear_before_reset": lbr,
                    "input_forget": forget,
                }
            )
            layout = int(extra == 2 and _has(op, version, "layout"))
            y, y_h, y_c = recurrent_formula(
                op, x, w, r, b, lens, h0, c0, p, hidden, direction or "forward", clip, lbr, forget
            )
            if lens is not None:
                for n, length in enumerate(lens):
                    y[length:, :, n] = 0
            feeds_x, feeds_h0, feeds_c0 = x, h0, c0
            if layout:
                attributes["layout"] = 1
                feeds_x = np.ascontiguousarray(x.transpose(1, 0, 2))
                feeds_h0 = None if h0 is None else np.ascontiguousarray(h0.transpose(1, 0, 2))
                feeds_c0 = None if c0 is None else np.ascontiguousarray(c0.transpose(1, 0, 2))
                y, y_h, y_c = y.transpose(2, 0, 1, 3), y_h.transpose(1, 0, 2), y_c.transpose(1, 0, 2)
            inputs = [("x", feeds_x), ("w", w), ("r", r), ("b", b), ("lens", lens), ("h0", feeds_h0)]
            outputs = 2
            expected = [y.astype(F32), y_h.astype(F32)]
            if op == "LSTM":
                inputs += [("c0", feeds_c0), ("p", p)]
                outputs = 3
                expected.append(y_c.astype(F32))
            made.append(
                Made(inputs, attributes, outputs, expected, stored=("w", "r", "b", "p"), label=f"{direction} {extra}")
            )
        return made

    return generate


# ---------------------------------------------------------------- control flow, detection, group normalization


def _body(nodes: list, inputs: list, outputs: list, name: str) -> onnx.GraphProto:
    return onnx.helper.make_graph(nodes, name, inputs, outputs)


def _float_info(name: str, shape: Any = None) -> onnx.ValueInfoProto:
    return onnx.helper.make_tensor_value_info(name, onnx.TensorProto.FLOAT, shape)


def if_op(rng: np.random.Generator, version: int) -> list[Made]:
    """If over an outer-scope tensor: the then branch negates it, the else branch takes its absolute value."""
    from onnx import helper

    made = []
    x = _normal(rng, (2, 3))
    then_branch = _body([helper.make_node("Neg", ["x"], ["t"])], [], [_float_info("t", [2, 3])], "then")
    else_branch = _body([helper.make_node("Abs", ["x"], ["e"])], [], [_float_info("e", [2, 3])], "else")
    for cond in (True, False):
        expected = -x if cond else np.abs(x)
        made.append(
            Made(
                [("c", np.array(cond)), ("x", x)],
                {"then_branch": then_branch, "else_branch": else_branch},
                expected=[expected],
                extra={"outer": ["x"]},
                label=str(cond),
            )
        )
    return made


def loop(rng: np.random.Generator, version: int) -> list[Made]:
    """Loop adding an outer-scope tensor to its carried value M times, emitting each step's value."""
    from onnx import helper

    x, start = _normal(rng, (3,)), _normal(rng, (3,))
    body = _body(
        [
            helper.make_node("Identity", ["cond_in"], ["cond_out"]),
            helper.make_node("Add", ["v_in", "x"], ["v_out"]),
            helper.make_node("Identity", ["v_out"], ["scan"]),
        ],
        [
            helper.make_tensor_value_info("i", onnx.TensorProto.INT64, []),
            helper.make_tensor_value_info("cond_in", onnx.TensorProto.BOOL, []),
            _float_info("v_in", [3]),
        ],
        [
            helper.make_tensor_value_info("cond_out", onnx.TensorProto.BOOL, []),
            _float_info("v_out", [3]),
            _float_info("scan", [3]),
        ],
        "body",
    )
    made = []
    for trips in (1, 4):
        steps = np.stack([start + x * (k + 1) for k in range(trips)]).astype(F32)
        made.append(
            Made(
                [("m", np.array(trips, dtype=np.int64)), ("cond", np.array(True)), ("v", start), ("x", x)],
                {"body": body},
                2,
                [steps[-1], steps],
                extra={"outer": ["x"]},
                label=f"{trips} trips",
            )
        )
    return made


def scan(rng: np.random.Generator, version: int) -> list[Made]:
    """Scan (9+) summing its sequence into a state, emitting the running sum."""
    from onnx import helper

    if version < 9:
        return []  # Scan-8 has a batch axis and sequence_lens: another op
    body = _body(
        [helper.make_node("Add", ["s_in", "x_t"], ["s_out"]), helper.make_node("Identity", ["s_out"], ["y_t"])],
        [_float_info("s_in", [2]), _float_info("x_t", [2])],
        [_float_info("s_out", [2]), _float_info("y_t", [2])],
        "body",
    )
    made = []
    for reverse in (0, 1):
        sequence, state = _normal(rng, (4, 2)), _normal(rng, (2,))
        order = sequence[::-1] if reverse else sequence
        running = (state + np.cumsum(order.astype(np.float64), axis=0)).astype(F32)
        emitted = running[::-1] if reverse else running
        attributes = {"body": body, "num_scan_inputs": 1, "scan_input_directions": [reverse] if reverse else None}
        made.append(
            Made(
                [("s", state), ("seq", sequence)],
                _keep(attributes),
                2,
                [running[-1], emitted],
                label=f"reverse {reverse}",
            )
        )
    return made


def roi_align_formula(x, rois, batch, bins, ratio, scale, mode, offset):  # noqa: ANN001, ANN201
    """RoiAlign by its spec, sample by sample: each bin's grid of bilinearly interpolated samples, averaged or
    maxed (the max mode is not used as a witness: see the note on RoiAlign in benchmarks/reference_notes.csv)."""
    channels, height, width = x.shape[1:]
    out = np.zeros((len(rois), channels, *bins))
    for r, (x1, y1, x2, y2) in enumerate(rois.astype(np.float64)):
        start_w, start_h = x1 * scale - offset, y1 * scale - offset
        roi_w, roi_h = x2 * scale - offset - start_w, y2 * scale - offset - start_h
        if offset == 0:
            roi_w, roi_h = max(roi_w, 1.0), max(roi_h, 1.0)
        bin_h, bin_w = roi_h / bins[0], roi_w / bins[1]
        grid_h, grid_w = ratio or math.ceil(roi_h / bins[0]), ratio or math.ceil(roi_w / bins[1])
        image = x[int(batch[r])].astype(np.float64)
        for i, j in np.ndindex(*bins):
            samples = []
            for iy, ix in np.ndindex(grid_h, grid_w):
                y = start_h + i * bin_h + (iy + 0.5) * bin_h / grid_h
                xx = start_w + j * bin_w + (ix + 0.5) * bin_w / grid_w
                if y < -1 or y > height or xx < -1 or xx > width:
                    samples.append(np.zeros(channels))
                    continue
                y, xx = max(y, 0.0), max(xx, 0.0)
                y_low, x_low = int(y), int(xx)
                y_high, x_high = (y_low + 1, x_low + 1)
                if y_low >= height - 1:
                    y_low = y_high = height - 1
                    y = float(y_low)
                if x_low >= width - 1:
                    x_low = x_high = width - 1
                    xx = float(x_low)
                ly, lx = y - y_low, xx - x_low
                samples.append(
                    (1 - ly) * (1 - lx) * image[:, y_low, x_low]
                    + (1 - ly) * lx * image[:, y_low, x_high]
                    + ly * (1 - lx) * image[:, y_high, x_low]
                    + ly * lx * image[:, y_high, x_high]
                )
            out[r, :, i, j] = np.max(samples, axis=0) if mode == "max" else np.mean(samples, axis=0)
    return out


def roi_align(rng: np.random.Generator, version: int) -> list[Made]:
    made = []
    transforms = [None, "half_pixel", "output_half_pixel"] if version >= 16 else [None]
    for mode, transform in itertools.product((None, "avg", "max"), transforms):
        x = _normal(rng, (2, 3, 8, 8))
        rois = np.sort(rng.uniform(0, 14, size=(4, 2, 2)), axis=1).reshape(4, 4).astype(F32)  # [x1, y1, x2, y2]
        indices = rng.integers(0, 2, size=4).astype(np.int64)
        ratio = int(rng.integers(0, 3))
        attributes = {
            "mode": mode,
            "coordinate_transformation_mode": transform,
            "output_height": 3,
            "output_width": 2,
            "sampling_ratio": ratio,
            "spatial_scale": 0.5,
        }
        offset = (
            0.0 if version < 16 or transform == "output_half_pixel" else 0.5
        )  # version 10 has only output_half_pixel
        expected = (
            None
            if mode == "max"
            else [roi_align_formula(x, rois, indices, (3, 2), ratio, 0.5, "avg", offset).astype(F32)]
        )
        made.append(
            Made(
                [("x", x), ("rois", rois), ("batch", indices)],
                _keep(attributes),
                expected=expected,
                stored=("rois", "batch"),
                label=f"{mode} {transform}",
            )
        )
    return made


def group_normalization(rng: np.random.Generator, version: int) -> list[Made]:
    made = []
    for groups in (1, 2, 4):
        x = _normal(rng, (2, 4, 3, 3))
        scale_shape = (groups,) if version < 21 else (4,)  # version 18: per group; 21: per channel
        scale, bias = _normal(rng, scale_shape), _normal(rng, scale_shape)
        epsilon = 1e-3
        grouped = x.astype(np.float64).reshape(2, groups, -1)
        normal = (
            (grouped - grouped.mean(axis=2, keepdims=True)) / np.sqrt(grouped.var(axis=2, keepdims=True) + epsilon)
        ).reshape(x.shape)
        per_channel = np.repeat(scale, 4 // groups) if version < 21 else scale
        shift = np.repeat(bias, 4 // groups) if version < 21 else bias
        y = normal * per_channel.reshape(1, 4, 1, 1) + shift.reshape(1, 4, 1, 1)
        made.append(
            Made(
                [("x", x), ("scale", scale), ("bias", bias)],
                {"num_groups": groups, "epsilon": epsilon},
                expected=[y.astype(F32)],
                stored=("scale", "bias"),
                label=f"{groups} groups",
            )
        )
    return made


def scatter(rng: np.random.Generator, version: int) -> list[Made]:
    made = []
    for axis in (None, 0, 1, -1):
        if axis is not None and axis < 0 and version < 11:
            continue
        data, updates = _normal(rng, (3, 4)), _normal(rng, (2, 3))
        a = 0 if axis is None else axis % 2
        size = data.shape[a]
        chosen = np.stack([rng.permutation(size)[: updates.shape[a]] for _ in range(updates.shape[1 - a])], axis=1 - a)
        indices = chosen - (size if version >= 11 else 0) * (rng.random(chosen.shape) < 0.5)
        expected = data.copy()
        for position in np.ndindex(*chosen.shape):
            target = list(position)
            target[a] = chosen[position]
            expected[tuple(target)] = updates[position]
        made.append(
            Made(
                [("data", data), ("indices", indices.astype(np.int64)), ("updates", updates)],
                _keep({"axis": axis}),
                expected=[expected],
                stored=("indices",),
            )
        )
    return made


# ---------------------------------------------------------------- the registry and the cases


def _generators() -> dict[str, Callable[[np.random.Generator, int], list[Made]]]:
    found: dict[str, Callable[[np.random.Generator, int], list[Made]]] = {
        "BatchNormalization": batch_normalization,
        "InstanceNormalization": instance_normalization,
        "LRN": lrn,
        "Conv": conv,
        "ConvTranspose": conv_transpose,
        "Gemm": gemm,
        "MatMul": matmul,
        "Reshape": reshape,
        "Flatten": flatten,
        "Transpose": transpose,
        "Concat": concat,
        "Split": split,
        "Slice": slice_op,
        "Pad": pad,
        "Upsample": upsample,
        "Resize": resize,
        "Gather": gather,
        "Tile": tile,
        "Clip": clip,
        "Dropout": dropout,
        "PRelu": prelu,
        "TopK": top_k,
        "Cast": cast,
        "If": if_op,
        "Loop": loop,
        "Scan": scan,
        "RoiAlign": roi_align,
        "GroupNormalization": group_normalization,
        "Scatter": scatter,
    }
    found.update({op: softmax_family(op) for op in ("Softmax", "LogSoftmax", "Hardmax")})
    found.update({op: pool(op) for op in ("MaxPool", "AveragePool", "LpPool")})
    found.update({op: global_pool(op) for op in ("GlobalAveragePool", "GlobalMaxPool", "GlobalLpPool")})
    found.update({op: squeeze(op) for op in ("Squeeze", "Unsqueeze")})
    found.update({op: depth_to_space(op) for op in ("DepthToSpace", "SpaceToDepth")})
    found.update({op: unary(op) for op in UNARY})
    found.update({op: activation(op) for op in ("Elu", "Selu", "LeakyRelu", "HardSigmoid", "ThresholdedRelu", "Celu")})
    found.update({op: binary(op) for op in BINARY if op not in ("Max", "Min")})
    found.update({op: variadic(op) for op in ("Sum", "Mean", "Max", "Min")})
    found.update({op: reduce(op) for op in REDUCE})
    found.update({op: arg_reduce(op) for op in ("ArgMax", "ArgMin")})
    found.update({op: recurrent(op) for op in ("RNN", "GRU", "LSTM")})
    return found


def generated_cases(seed: int) -> tuple[list[Case], list[str]]:
    """Every generator's graphs at every version of its op, and a line for each graph a generator made
    that onnx's checker refuses (a generator's mistake, said rather than hidden)."""
    rng = np.random.default_rng(seed)
    history = versions()
    cases, refused = [], []
    from benchmarks.reference_generators_ml import ML_GENERATORS

    old = deprecated()
    registry = {
        **{("", op): g for op, g in _generators().items()},
        **{("ai.onnx.ml", op): g for op, g in ML_GENERATORS.items()},
    }
    for (domain, op), generator in registry.items():
        for version in history.get((domain, op), []):
            for number, made in enumerate(generator(rng, version)):
                case_id = f"{op}-{version}:generated{number}" + (f" {made.label}" if made.label else "")
                stored = {name: array for name, array in made.inputs if name in made.stored and array is not None}
                try:
                    model = one_node_model(
                        op,
                        version,
                        made.inputs,
                        made.outputs,
                        domain=domain,
                        initializers=stored,
                        expected=made.expected,
                        outer=made.extra.get("outer", ()),
                        **made.attributes,
                    )
                    if (domain, op, version) not in old:  # the checker refuses every deprecated version outright
                        onnx.checker.check_model(model, full_check=True)
                except Exception as err:  # the checker's or shape inference's refusal: the generator's mistake
                    refused.append(f"{case_id}: {str(err).strip().splitlines()[0][:200]}")
                    continue
                feeds = {name: array for name, array in made.inputs if array is not None and name not in stored}
                cases.append(Case(case_id, domain, op, version, "generated", model, feeds, made.expected))
    return cases, refused
