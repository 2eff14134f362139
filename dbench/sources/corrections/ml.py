"""LabelEncoder-1 (ai.onnx.ml)."""

from __future__ import annotations

import numpy as np

from dbench.sources.corrections.base import VersionedOpRun, text


class LabelEncoderByIndex(VersionedOpRun):
    """ai.onnx.ml LabelEncoder-1: strings become their index in `classes_strings` (default_int64, -1,
    where absent), integers the string at that index (default_string where out of range).
    onnx.reference runs version 2's keys/values rule, which version 1's attributes cannot feed."""

    def _run(self, x, classes_strings=None, default_int64=-1, default_string="_Unused"):  # noqa: ANN001, ANN202
        classes = [text(c) for c in classes_strings or []]
        if x.dtype.kind in "OUS":
            lookup = {name: i for i, name in enumerate(classes)}
            return (np.array([lookup.get(text(v), default_int64) for v in x.ravel()], dtype=np.int64).reshape(x.shape),)
        fallback = text(default_string)
        return (
            np.array(
                [classes[v] if 0 <= v < len(classes) else fallback for v in x.ravel().tolist()], dtype=object
            ).reshape(x.shape),
        )
