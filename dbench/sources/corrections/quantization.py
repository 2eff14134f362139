"""DequantizeLinear-10 and -13."""

from __future__ import annotations

import numpy as np

from dbench.sources.corrections.base import VersionedOpRun, wide


class DequantizeLinearEarly(VersionedOpRun):
    """DequantizeLinear-10 and -13: y = (x - x_zero_point) * x_scale, per tensor, or (13) per slice
    along `axis` (default 1) with 1-D scale and zero point. onnx.reference implements only version 19
    and later: every QDQ model of opsets 10 to 18 fails in it."""

    def _run(self, x, x_scale, x_zero_point=None, axis=1):  # noqa: ANN001, ANN202
        scale = np.asarray(x_scale)
        zero = (
            np.zeros_like(scale, dtype=np.int64) if x_zero_point is None else np.asarray(x_zero_point).astype(np.int64)
        )
        if scale.ndim == 1 and x.ndim > 0:
            axis = axis % x.ndim
            view = [1] * x.ndim
            view[axis] = -1
            scale, zero = scale.reshape(view), zero.reshape(view)
        y = (x.astype(np.int64) - zero) * wide(scale)
        return (y.astype(scale.dtype),)
