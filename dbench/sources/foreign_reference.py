"""dbench's reference for every graph a user brings (`--model`, foreign `--graphs`, `predict`'s units):
onnx.reference's ReferenceEvaluator with dbench's own implementation wherever onnx.reference is wrong
for the op version a node has (dbench.sources.reference_corrections), and the ONNX Runtime contrib ops
dbench itself puts into unit graphs (dbench.sources.contrib_reference). Imported only where a
reference is computed (it imports onnx.reference)."""

from __future__ import annotations

from typing import Any

import onnx
from onnx.reference import ReferenceEvaluator
from onnx.reference.op_run import OpRun

from dbench.sources.contrib_reference import contrib_ops
from dbench.sources.reference_corrections import correction_for


class ForeignReference(ReferenceEvaluator):
    """ReferenceEvaluator that takes dbench's correction for a node whose op version onnx.reference
    gets wrong. onnx.reference builds every nested evaluator (If/Loop/Scan bodies, model-local
    functions, function bodies of ops) from the evaluator's own class, so they are corrected too."""

    def _load_impl(self, node: onnx.NodeProto, input_types: Any = None) -> Any:  # noqa: ANN401 (onnx.reference's hook)
        domain = "" if node.domain == "ai.onnx" else node.domain
        if domain in self.opsets:
            corrected = correction_for(domain, node.op_type, self.opsets[domain])
            if corrected is not None:
                return corrected
        return super()._load_impl(node, input_types)


def foreign_evaluator(model: onnx.ModelProto, new_ops: list[type[OpRun]] | None = None) -> ReferenceEvaluator:
    """The evaluator dbench verifies a foreign graph against: onnx.reference, corrected, with the
    contrib ops dbench puts into unit graphs that `model` may hold (and any `new_ops` a caller adds)."""
    return ForeignReference(model, new_ops=[*(new_ops or []), *contrib_ops(model)])
