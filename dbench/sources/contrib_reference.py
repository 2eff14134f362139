"""onnx.reference implementations of the ONNX Runtime contrib ops dbench itself puts into graphs (a unit
timed as the layer ONNX Runtime executes, dbench.units.graph.executed_model): each one is the standard
op computed on the standard layout, so the layer is verified against what the model's own nodes compute.
Imported only by the reference check (it imports onnx.reference)."""

from __future__ import annotations

import numpy as np
from onnx import TensorProto, helper
from onnx.reference.op_run import OpRun

from dbench.executed import TO_CHANNELS_FIRST, TO_CHANNELS_LAST


class NhwcMaxPool(OpRun):
    """com.microsoft.NhwcMaxPool: MaxPool with the same attributes on the NCHW transpose of its NHWC
    (u)int8 input, computed in float64 (exact for 8-bit values) by dbench's foreign reference, transposed back."""

    op_domain = "com.microsoft"

    def _run(self, x, **_attributes):  # noqa: ANN001, ANN202 (onnx.reference's calling convention)
        from dbench.sources.foreign_reference import foreign_evaluator  # the standard MaxPool as dbench corrects it

        attributes = {a.name: helper.get_attribute_value(a) for a in self.onnx_node.attribute}
        node = helper.make_node("MaxPool", ["x"], ["y"], **attributes)
        graph = helper.make_graph([node], "max_pool", [helper.make_tensor_value_info("x", TensorProto.DOUBLE, None)],
                                  [helper.make_tensor_value_info("y", TensorProto.DOUBLE, None)])
        model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 12)])
        planar = np.ascontiguousarray(np.transpose(x, TO_CHANNELS_FIRST)).astype(np.float64)
        (pooled,) = foreign_evaluator(model).run(None, {"x": planar})
        return (np.ascontiguousarray(np.transpose(pooled, TO_CHANNELS_LAST)).astype(x.dtype),)


CONTRIB_OPS = (NhwcMaxPool,)
"""Every contrib op above, as ReferenceEvaluator's `new_ops` takes them."""
