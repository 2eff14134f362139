"""ConvTranspose, every version."""

from __future__ import annotations

import numpy as np

from dbench.sources.corrections.base import VersionedOpRun, text, wide


def transposed_pads(sizes, kernel, strides, dilations, output_padding, pads, auto_pad, output_shape):  # noqa: ANN001, ANN201
    """The padding to crop at the start and end of each axis: given by `pads`, or, where output_shape
    (or SAME_UPPER/SAME_LOWER: input size x stride) sets the output, total_padding = stride * (in - 1)
    + output_padding + ((kernel - 1) * dilation + 1) - output, split "pads[start] = total/2,
    pads[end] = total - total/2" for SAME_UPPER and the other way round otherwise, with floor division
    (a negative total, an output longer than the transposed convolution reaches, grows the end
    without auto_pad, as onnx's own output_shape test and both runtimes have it)."""
    nd = len(kernel)
    if output_shape is None and auto_pad in ("SAME_UPPER", "SAME_LOWER"):
        output_shape = [sizes[i] * strides[i] for i in range(nd)]
    if output_shape is None:
        return list(pads) if pads else [0] * (2 * nd)
    target = list(output_shape)[-nd:]
    total = [
        strides[i] * (sizes[i] - 1) + output_padding[i] + (kernel[i] - 1) * dilations[i] + 1 - target[i]
        for i in range(nd)
    ]
    half = [t // 2 for t in total]
    first = half if auto_pad == "SAME_UPPER" else [t - h for t, h in zip(total, half)]
    return first + [t - f for t, f in zip(total, first)]


class ConvTransposeSpec(VersionedOpRun):
    """ConvTranspose, every version: each input position scatters its product with the kernel into
    the output at position * stride + tap * dilation, output_padding extends the end, the padding
    (pads, or from output_shape and auto_pad by the spec's total_padding rule) is cropped, B added.
    onnx.reference fails on every graph with more than one group and on some output_shape cases."""

    def _run(
        self,
        x,
        w,
        b=None,
        auto_pad="NOTSET",
        dilations=None,
        group=1,
        kernel_shape=None,
        output_padding=None,  # noqa: ANN001, ANN202
        output_shape=None,
        pads=None,
        strides=None,
    ):
        nd = x.ndim - 2
        kernel = list(kernel_shape or w.shape[2:])
        strides, dilations = list(strides or [1] * nd), list(dilations or [1] * nd)
        output_padding = list(output_padding or [0] * nd)
        sizes = x.shape[2:]
        crop = transposed_pads(sizes, kernel, strides, dilations, output_padding, pads, text(auto_pad), output_shape)
        if text(auto_pad) == "VALID":
            crop = [0] * (2 * nd)
        channels, maps = x.shape[1] // group, w.shape[1]
        full = [(sizes[i] - 1) * strides[i] + (kernel[i] - 1) * dilations[i] + 1 + output_padding[i] for i in range(nd)]
        y = np.zeros((x.shape[0], maps * group, *full))
        x64, w64 = wide(x), wide(w)
        for g in range(group):
            inputs, weights = x64[:, g * channels : (g + 1) * channels], w64[g * channels : (g + 1) * channels]
            for k in np.ndindex(*kernel):
                part = np.einsum("nc...,cm->nm...", inputs, weights[(slice(None), slice(None), *k)])
                at = tuple(
                    slice(k[i] * dilations[i], k[i] * dilations[i] + strides[i] * (sizes[i] - 1) + 1, strides[i])
                    for i in range(nd)
                )
                y[(slice(None), slice(g * maps, (g + 1) * maps), *at)] += part
        grow = [(0, 0), (0, 0)] + [(max(0, -crop[i]), max(0, -crop[i + nd])) for i in range(nd)]
        y = np.pad(y, grow)
        y = y[
            (
                slice(None),
                slice(None),
                *(slice(max(0, crop[i]), y.shape[2 + i] - max(0, crop[i + nd])) for i in range(nd)),
            )
        ]
        if b is not None:
            y = y + wide(b).reshape(1, -1, *([1] * nd))
        return (y.astype(x.dtype),)
