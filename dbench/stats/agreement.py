"""How far a quantized model's outputs stand from its fp32 twin's on the same inputs: the relative error
of an output over a set of inputs, and the top-1 agreement of a classifier's output with its Wilson
interval (a binomial proportion's interval that stays inside [0, 1] and keeps its level near 1, where
a quantized classifier's agreement lies: the normal approximation's would pass 100 %)."""

from __future__ import annotations

import math
from dataclasses import dataclass
from statistics import NormalDist

import numpy as np

CONFIDENCE = 0.95


def wilson(agree: int, total: int, confidence: float = CONFIDENCE) -> tuple[float, float]:
    """The Wilson score interval of the proportion agree/total."""
    if total <= 0:
        raise ValueError("a proportion over no trials has no interval")
    z = NormalDist().inv_cdf(0.5 + confidence / 2)
    p = agree / total
    centre = (p + z * z / (2 * total)) / (1 + z * z / total)
    half = z * math.sqrt(p * (1 - p) / total + z * z / (4 * total * total)) / (1 + z * z / total)
    return max(0.0, centre - half), min(1.0, centre + half)


def is_classifier(shape: tuple[int, ...]) -> bool:
    """A [batch, classes] output with more than one class: its arg-max along the last axis is a prediction."""
    return len(shape) == 2 and shape[1] > 1


@dataclass
class ErrorTally:
    """One output's error accumulated over inputs: the squared norms of the difference and of the fp32
    output, the worst single input's relative error, and (`classify`: a model's [batch, classes] output)
    the rows whose top-1 class agrees."""

    classify: bool = False
    squared_error: float = 0.0
    squared_reference: float = 0.0
    worst: float = 0.0
    agree: int = 0
    rows: int = 0
    inputs: int = 0

    def add(self, reference: np.ndarray, quantized: np.ndarray) -> None:
        """One input's outputs: fp32 (`reference`) and the quantized twin's."""
        ref = np.asarray(reference, dtype=np.float64)
        got = np.asarray(quantized, dtype=np.float64)
        if ref.shape != got.shape:
            raise ValueError(f"shapes differ: fp32 {ref.shape}, quantized {got.shape}")
        error, norm = float(np.sum((got - ref) ** 2)), float(np.sum(ref**2))
        self.squared_error += error
        self.squared_reference += norm
        self.worst = max(self.worst, math.sqrt(error / norm) if norm else (math.inf if error else 0.0))
        self.inputs += 1
        if self.classify and is_classifier(ref.shape):
            self.agree += int(np.sum(np.argmax(ref, axis=-1) == np.argmax(got, axis=-1)))
            self.rows += ref.shape[0]

    @property
    def relative_error(self) -> float:
        """‖quantized - fp32‖ / ‖fp32‖ over every input together (inf when fp32's output is all zero)."""
        if not self.squared_reference:
            return math.inf if self.squared_error else 0.0
        return math.sqrt(self.squared_error / self.squared_reference)

    @property
    def agreement(self) -> float | None:
        """The share of classifier rows whose top-1 class is the fp32 model's (None: not a classifier)."""
        return self.agree / self.rows if self.rows else None

    def agreement_interval(self, confidence: float = CONFIDENCE) -> tuple[float, float] | None:
        """The Wilson interval of the agreement (None: not a classifier)."""
        return wilson(self.agree, self.rows, confidence) if self.rows else None
