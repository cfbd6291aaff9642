"""Shared helpers of the gknn pytest suite: the float64 oracle and fixed-seed data.

The suite runs against the built package: CTest sets PYTHONPATH to <build>/python and GKNN_CLI to the built
command-line tool (tests/python.cmake).
"""
import numpy as np
import pytest

import gknn

SIMILARITIES = {"inner_product", "cosine"}
# (gknn metric, p) pairs covering every metric of the library.
METRICS = [("squared_l2", None), ("l2", None), ("inner_product", None), ("cosine", None), ("l1", None),
           ("linf", None), ("lp", 3.0), ("lp", 0.5)]


def oracle_matrix(base, queries, metric, p=2.0):
    """Full q x n float64 distance (or similarity) matrix."""
    b, q = np.asarray(base, np.float64), np.asarray(queries, np.float64)
    diff = q[:, None, :] - b[None, :, :]
    if metric == "squared_l2":
        return (diff ** 2).sum(-1)
    if metric == "l2":
        return np.sqrt((diff ** 2).sum(-1))
    if metric == "inner_product":
        return q @ b.T
    if metric == "cosine":
        nb, nq = np.linalg.norm(b, axis=1), np.linalg.norm(q, axis=1)
        with np.errstate(invalid="ignore", divide="ignore"):
            s = (q @ b.T) / np.outer(nq, nb)
        return np.nan_to_num(s, nan=0.0)  # a zero vector has similarity 0 to everything
    if metric == "l1":
        return np.abs(diff).sum(-1)
    if metric == "linf":
        return np.abs(diff).max(-1)
    if metric == "lp":
        return (np.abs(diff) ** p).sum(-1) ** (1.0 / p)
    raise ValueError(metric)


def oracle_knn(base, queries, k, metric, p=2.0):
    """(distances, indices) in gknn's total order: ascending (descending for similarities), ties by index,
    padded with -1 and +inf/-inf when k > n."""
    full = oracle_matrix(base, queries, metric, p)
    similarity = metric in SIMILARITIES
    keys = -full if similarity else full
    q, n = full.shape
    idx = np.broadcast_to(np.arange(n), (q, n))
    order = np.lexsort((idx, keys), axis=-1)[:, :k]
    dist = np.take_along_axis(full, order, axis=1)
    if k > n:
        pad = k - n
        dist = np.concatenate([dist, np.full((q, pad), -np.inf if similarity else np.inf)], axis=1)
        order = np.concatenate([order, np.full((q, pad), -1)], axis=1)
    return dist, order


def assert_matches_oracle(distances, indices, base, queries, k, metric, p=2.0, exact_indices=True, rtol=1e-5):
    """distances within float32 rounding of the oracle's; indices identical (exact data) or, where float32 may
    reorder near-equal distances, each returned index has the returned distance."""
    d_ref, i_ref = oracle_knn(base, queries, k, metric, p)
    distances, indices = np.asarray(distances), np.asarray(indices)
    assert distances.shape == indices.shape == (np.shape(queries)[0], k)
    assert distances.dtype == np.float32 and indices.dtype == np.int64
    np.testing.assert_allclose(distances, d_ref, rtol=rtol, atol=1e-4)
    if exact_indices:
        np.testing.assert_array_equal(indices, i_ref)
    else:
        full = oracle_matrix(base, queries, metric, p)
        valid = indices >= 0
        own = np.take_along_axis(full, np.where(valid, indices, 0), axis=1)
        np.testing.assert_allclose(own[valid], np.asarray(distances, np.float64)[valid], rtol=rtol, atol=1e-4)
        assert all(len(set(row[row >= 0])) == (row >= 0).sum() for row in indices)


@pytest.fixture
def rng():
    return np.random.default_rng(20261123)


def small_integers(rng, rows, dim, high=4):
    """Small integer coordinates: exact in float32, so every algorithm and the oracle agree bit for bit, and
    many distances tie (the tie order is tested with them)."""
    return rng.integers(0, high, size=(rows, dim)).astype(np.float32)


__all__ = ["gknn", "METRICS", "SIMILARITIES", "oracle_knn", "oracle_matrix", "assert_matches_oracle",
           "small_integers"]
