"""dbench's generators for the ai.onnx.ml ops benchmarks/reference_sweep.py covers: small graphs with a
numpy formula where the spec's is unambiguous (OpenVINO runs none of these ops: ONNX Runtime and the
formula are the witnesses)."""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from benchmarks.reference_generators import F32, Made, _normal

TREE = {
    "nodes_treeids": [0, 0, 0],
    "nodes_nodeids": [0, 1, 2],
    "nodes_featureids": [1, 0, 0],
    "nodes_modes": ["BRANCH_LEQ", "LEAF", "LEAF"],
    "nodes_values": [0.25, 0.0, 0.0],
    "nodes_truenodeids": [1, 0, 0],
    "nodes_falsenodeids": [2, 0, 0],
}
"""One tree: feature 1 <= 0.25 goes to leaf 1, else leaf 2."""


def scaler(rng: np.random.Generator, version: int) -> list[Made]:
    x = _normal(rng, (4, 3))
    offset, scale = [float(v) for v in rng.normal(size=3)], [float(v) for v in rng.uniform(0.5, 2, 3)]
    y = (x.astype(np.float64) - np.array(offset)) * np.array(scale)
    return [Made([("x", x)], {"offset": offset, "scale": scale}, expected=[y.astype(F32)])]


def normalizer(rng: np.random.Generator, version: int) -> list[Made]:
    return [Made([("x", _normal(rng, (4, 3)))], {"norm": norm}, label=norm) for norm in ("MAX", "L1", "L2")]


def linear_regressor(rng: np.random.Generator, version: int) -> list[Made]:
    made = []
    for targets in (1, 2):
        x = _normal(rng, (4, 3))
        coefficients, intercepts = rng.normal(size=3 * targets), rng.normal(size=targets)
        y = x.astype(np.float64) @ coefficients.reshape(targets, 3).T + intercepts
        made.append(
            Made(
                [("x", x)],
                {
                    "coefficients": [float(c) for c in coefficients],
                    "intercepts": [float(c) for c in intercepts],
                    "targets": targets,
                },
                expected=[y.astype(F32)],
                label=f"{targets} targets",
            )
        )
    return made


def linear_classifier(rng: np.random.Generator, version: int) -> list[Made]:
    x = _normal(rng, (4, 3))
    return [
        Made(
            [("x", x)],
            {
                "coefficients": [float(c) for c in rng.normal(size=9)],
                "intercepts": [float(c) for c in rng.normal(size=3)],
                "classlabels_ints": [0, 1, 2],
                "post_transform": transform,
            },
            2,
            label=transform,
        )
        for transform in ("NONE", "SOFTMAX")
    ]


def imputer(rng: np.random.Generator, version: int) -> list[Made]:
    x = _normal(rng, (4, 3))
    x[rng.random((4, 3)) < 0.4] = np.nan
    values = [float(v) for v in rng.normal(size=3)]
    y = np.where(np.isnan(x), np.array(values, dtype=F32), x)
    return [
        Made(
            [("x", x)], {"imputed_value_floats": values, "replaced_value_float": float("nan")}, expected=[y.astype(F32)]
        )
    ]


def feature_vectorizer(rng: np.random.Generator, version: int) -> list[Made]:
    a, b = _normal(rng, (2, 3)), _normal(rng, (2, 2))
    return [Made([("a", a), ("b", b)], {"inputdimensions": [3, 2]}, expected=[np.concatenate([a, b], axis=1)])]


def one_hot_encoder(rng: np.random.Generator, version: int) -> list[Made]:
    categories = [3, 7, 11]
    x = rng.choice(categories, size=(5,)).astype(np.int64)
    y = (x[:, None] == np.array(categories)[None, :]).astype(F32)
    return [Made([("x", x)], {"cats_int64s": categories, "zeros": 1}, expected=[y])]


def category_mapper(rng: np.random.Generator, version: int) -> list[Made]:
    names = ["cat", "dog", "emu"]
    x = np.array(rng.choice(names + ["yak"], size=6), dtype=object)
    y = np.array([names.index(v) if v in names else -1 for v in x], dtype=np.int64)
    return [Made([("x", x)], {"cats_strings": names, "cats_int64s": [0, 1, 2], "default_int64": -1}, expected=[y])]


def label_encoder(rng: np.random.Generator, version: int) -> list[Made]:
    names = ["cat", "dog", "emu"]
    x = np.array(rng.choice(names + ["yak"], size=6), dtype=object)
    y = np.array([names.index(v) if v in names else -7 for v in x], dtype=np.int64)
    if version == 1:
        return [Made([("x", x)], {"classes_strings": names, "default_int64": -7}, expected=[y])]
    return [Made([("x", x)], {"keys_strings": names, "values_int64s": [0, 1, 2], "default_int64": -7}, expected=[y])]


def svm_regressor(rng: np.random.Generator, version: int) -> list[Made]:
    x, support = _normal(rng, (4, 3)), _normal(rng, (2, 3))
    coefficients, rho, gamma, coef0 = rng.normal(size=2), float(rng.normal()), 0.5, 0.25
    kernel = (
        x.astype(np.float64) @ support.astype(np.float64).T
    )  # LINEAR: the dot product (gamma and coef0 serve POLY and SIGMOID)
    y = (kernel @ coefficients + rho)[:, None]
    return [
        Made(
            [("x", x)],
            {
                "coefficients": [float(c) for c in coefficients],
                "support_vectors": [float(v) for v in support.ravel()],
                "n_supports": 2,
                "kernel_type": "LINEAR",
                "kernel_params": [gamma, coef0, 1.0],
                "rho": [rho],
            },
            expected=[y.astype(F32)],
        )
    ]


def tree_regressor(rng: np.random.Generator, version: int) -> list[Made]:
    x = _normal(rng, (6, 2))
    weights = [1.5, -2.0]
    y = np.where(x[:, 1] <= 0.25, weights[0], weights[1])[:, None] + 0.5
    attributes = {
        **TREE,
        "target_treeids": [0, 0],
        "target_nodeids": [1, 2],
        "target_ids": [0, 0],
        "target_weights": weights,
        "n_targets": 1,
        "base_values": [0.5],
    }
    return [Made([("x", x)], attributes, expected=[y.astype(F32)])]


ML_GENERATORS: dict[str, Callable[[np.random.Generator, int], list[Made]]] = {
    "Scaler": scaler,
    "Normalizer": normalizer,
    "LinearRegressor": linear_regressor,
    "LinearClassifier": linear_classifier,
    "Imputer": imputer,
    "FeatureVectorizer": feature_vectorizer,
    "OneHotEncoder": one_hot_encoder,
    "CategoryMapper": category_mapper,
    "LabelEncoder": label_encoder,
    "SVMRegressor": svm_regressor,
    "TreeEnsembleRegressor": tree_regressor,
}
"""The ai.onnx.ml ops dbench generates graphs for."""
