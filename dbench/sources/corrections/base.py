"""What every correction shares: the node's own version's schema, its named outputs, float64 math."""

from __future__ import annotations

from typing import Any

import numpy as np
import onnx
from onnx.reference.op_run import OpRun


class VersionedOpRun(OpRun):
    """An OpRun whose omitted attributes take the defaults of the node's own op version: onnx.reference
    takes them from the newest schema of the op's name (Softmax-11's `axis` defaults to 1, not to
    Softmax-13's -1)."""

    def __init__(
        self, onnx_node: onnx.NodeProto, run_params: dict[str, Any], schema: onnx.defs.OpSchema | None = None
    ) -> None:
        domain = "" if onnx_node.domain == "ai.onnx" else onnx_node.domain
        exact = onnx.defs.get_schema(onnx_node.op_type, run_params["opsets"][domain], domain)
        super().__init__(onnx_node, run_params, schema or exact)

    @property
    def version(self) -> int:
        """The op version of the node (its schema's since_version)."""
        return self._schema.since_version

    def outputs_wanted(self) -> int:
        """How many outputs the node names (optional outputs left out at the end are not counted)."""
        named = list(self.onnx_node.output)
        while named and not named[-1]:
            named.pop()
        return len(named)


def wide(array: np.ndarray) -> np.ndarray:
    """`array` in float64, the precision every correction computes in (cast back to the input's type)."""
    return np.asarray(array).astype(np.float64)


def text(value: Any) -> str:
    """An attribute's string value (onnx.reference gives STRING attributes as bytes or str)."""
    return value.decode() if isinstance(value, bytes) else str(value)
