"""Scaled dot-product attention in float64 numpy, independent of every ONNX op: the reference all the
attention forms (dbench.gen.attention) are checked against."""

from __future__ import annotations

import math

import numpy as np


def default_scale(head_dim: int) -> float:
    """1/sqrt(head_dim): the scale of every form here (and the default of every ONNX attention op)."""
    return 1.0 / math.sqrt(head_dim)


def causal_visible(q_len: int, past: int) -> np.ndarray:
    """[q_len, past + q_len] booleans: query i, at absolute position past + i, sees keys 0..past + i."""
    keys = np.arange(past + q_len)
    return keys[None, :] <= (past + np.arange(q_len))[:, None]


def attention(q: np.ndarray, k: np.ndarray, v: np.ndarray, causal: bool, scale: float) -> np.ndarray:
    """softmax(Q·Kᵀ·scale + mask)·V in float64, per batch and query head.

    q [B, H, q_len, d]; k, v [B, G, kv_len, d] with the cached keys first (kv_len = past + q_len); query
    head h reads key/value head h // (H / G) (grouped-query heads, as ONNX's Attention, ORT's
    GroupQueryAttention and an exporter's repeat of K/V heads all group them). One head at a time, so a
    prefill of 2048 tokens holds one [q_len, kv_len] score matrix, not all heads'."""
    batch, heads, q_len, _ = q.shape
    kv_heads, kv_len = k.shape[1], k.shape[2]
    if heads % kv_heads:
        raise ValueError(f"{heads} query heads cannot share {kv_heads} key/value heads evenly")
    group = heads // kv_heads
    visible = causal_visible(q_len, kv_len - q_len) if causal else None
    out = np.empty(q.shape, dtype=np.float64)
    for b in range(batch):
        for h in range(heads):
            kh, vh = (np.asarray(t[b, h // group], dtype=np.float64) for t in (k, v))
            scores = np.asarray(q[b, h], dtype=np.float64) @ kh.T * scale
            if visible is not None:
                scores = np.where(visible, scores, -np.inf)
            scores -= scores.max(axis=-1, keepdims=True)
            weights = np.exp(scores)
            weights /= weights.sum(axis=-1, keepdims=True)
            out[b, h] = weights @ vh
    return out


def heads_first(x: np.ndarray, heads: int) -> np.ndarray:
    """[B, S, heads·d] -> [B, heads, S, d]: ONNX Runtime's contrib ops take Q, K, V with the heads packed
    into the last axis; the reference works head by head."""
    batch, seq, width = x.shape
    return x.reshape(batch, seq, heads, width // heads).transpose(0, 2, 1, 3)


def heads_last(x: np.ndarray) -> np.ndarray:
    """[B, heads, S, d] -> [B, S, heads·d]: the contrib ops' output layout."""
    batch, heads, seq, dim = x.shape
    return x.transpose(0, 2, 1, 3).reshape(batch, seq, heads * dim)
