"""How a graph's outputs are checked against its reference: shared by generation (which picks the
rule per graph) and verification (which applies it)."""

from __future__ import annotations

import json
import math
from dataclasses import asdict, dataclass


@dataclass(frozen=True)
class OutputRule:
    """One output's own rule, where outputs of one graph need different ones (a quantized model's,
    derived by dbench.check.quantized). metric `steps`: the output compared in quantization steps,
    |out - ref| / `scale` (1 for an integer output, whose units are steps), at most `bound` anywhere,
    at most `rms` in root mean square and at most `bias` on average (a shift of the whole output is no
    rounding); with `grid`, every value must be (q - `zero_point`) · `scale` for an integer q.
    metric `rel` or `abs`: as Tolerance. `why` says how the bound was derived."""

    name: str
    metric: str
    bound: float
    scale: float = 1.0
    zero_point: float = 0.0
    bias: float = math.inf
    rms: float = math.inf
    grid: bool = False
    why: str = ""


@dataclass(frozen=True)
class Tolerance:
    """How outputs are checked against the reference.

    metric `rel`: max|out - ref| / max|ref| <= bound (floating point; robust to near-zero elements).
    metric `abs`: max|out - ref| <= bound (integer outputs: 0 = exact; one quantisation step for Q/DQ).
    `outputs`: the outputs with a rule of their own (OutputRule); the others follow metric and bound."""

    metric: str
    bound: float
    outputs: tuple[OutputRule, ...] = ()

    def rule_for(self, name: str) -> OutputRule:
        """The rule output `name` is checked by."""
        for rule in self.outputs:
            if rule.name == name:
                return rule
        return OutputRule(name, self.metric, self.bound)

    def to_json(self) -> str:
        """The rule as JSON (how the reference cache stores it beside the expected outputs)."""
        return json.dumps({"metric": self.metric, "bound": self.bound, "outputs": [asdict(r) for r in self.outputs]})

    @classmethod
    def from_json(cls, text: str) -> Tolerance:
        data = json.loads(text)
        return cls(data["metric"], data["bound"], tuple(OutputRule(**r) for r in data["outputs"]))
