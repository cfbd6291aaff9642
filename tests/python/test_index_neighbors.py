"""gknn.Index (FAISS-style), gknn.NearestNeighbors (scikit-learn-style) and gknn.select_k."""
import numpy as np
import pytest

from conftest import assert_matches_oracle, gknn, oracle_knn, oracle_matrix, small_integers


def test_index_add_search_reset(rng):
    base, queries = small_integers(rng, 150, 10), small_integers(rng, 12, 10)
    index = gknn.Index(10, backend="cpu")
    assert index.ntotal == 0 and index.d == 10 and index.metric == "squared_l2" and index.backend == "cpu"
    index.add(base[:100])
    index.add(base[100:].astype(np.float64))  # converted once
    assert index.ntotal == len(index) == 150
    D, I = index.search(queries, 9)
    assert_matches_oracle(D, I, base, queries, 9, "squared_l2")
    np.testing.assert_array_equal(I, gknn.search(base, queries, 9, backend="cpu")[1])
    index.reset()
    assert index.ntotal == 0
    with pytest.raises(ValueError, match="empty"):
        index.search(queries, 3)


def test_index_adds_uint8_rows_as_their_values(rng):
    base, queries = small_integers(rng, 120, 7), small_integers(rng, 9, 7)
    as_bytes = np.ascontiguousarray(base, dtype=np.uint8)
    floats, ints, with_ids = (gknn.Index(7, backend="cpu") for _ in range(3))
    floats.add(base)
    ints.add(as_bytes[:50])
    ints.add(as_bytes[50:])
    with_ids.add_with_ids(as_bytes, np.arange(120))  # ids equal to the positions: the same answer
    D, I = floats.search(queries, 6)
    for index in (ints, with_ids):
        D2, I2 = index.search(queries, 6)
        np.testing.assert_array_equal(I2, I)
        np.testing.assert_array_equal(D2, D)


@pytest.mark.parametrize("metric,p", [("cosine", None), ("inner_product", None), ("minkowski", 3.0),
                                      ("chebyshev", None)])
def test_index_metrics_equal_search(rng, metric, p):
    base, queries = small_integers(rng, 90, 6), small_integers(rng, 8, 6)
    index = gknn.Index(6, metric=metric, p=p, backend="cpu")
    index.add(base)
    D, I = index.search(queries, 5)
    D2, I2 = gknn.search(base, queries, 5, metric=metric, p=p, backend="cpu")
    np.testing.assert_array_equal(I, I2)
    np.testing.assert_array_equal(D, D2)


def test_index_add_with_ids_returns_ids(rng):
    base, queries = small_integers(rng, 40, 4), small_integers(rng, 5, 4)
    ids = np.arange(1000, 1040, dtype=np.int32)  # converted to int64
    index = gknn.Index(4, backend="cpu")
    index.add_with_ids(base, ids)
    _, I = index.search(queries, 50)  # k > n: padding stays -1
    _, want = oracle_knn(base, queries, 50, "squared_l2")
    np.testing.assert_array_equal(I, np.where(want >= 0, want + 1000, -1))
    with pytest.raises(ValueError, match="ids"):
        index.add(base)
    with pytest.raises(ValueError, match="entries"):
        index.add_with_ids(base, ids[:3])


def test_index_rejects_bad_input(rng):
    index = gknn.Index(4, backend="cpu")
    with pytest.raises(ValueError, match="dimension"):
        index.add(np.zeros((3, 5), np.float32))
    with pytest.raises(ValueError, match="dimension must be positive"):
        gknn.Index(0)
    index.add(np.zeros((3, 4), np.float32))
    with pytest.raises(ValueError, match="k must be positive"):
        index.search(np.zeros((1, 4), np.float32), 0)


@pytest.mark.parametrize("metric,p,scipy_metric", [("minkowski", 2, "euclidean"), ("minkowski", 1, "cityblock"),
                                                   ("minkowski", 3, "minkowski3"), ("euclidean", 2, "euclidean"),
                                                   ("cosine", 2, "cosine"), ("chebyshev", 2, "chebyshev")])
def test_nearest_neighbors_matches_sklearn_semantics(rng, metric, p, scipy_metric):
    X, Q = small_integers(rng, 60, 5) + 1, small_integers(rng, 7, 5)
    nn = gknn.NearestNeighbors(n_neighbors=4, metric=metric, p=p, backend="cpu").fit(X)
    assert nn.n_samples_fit_ == 60 and nn.n_features_in_ == 5
    D, I = nn.kneighbors(Q)
    gknn_metric = {"euclidean": "l2", "cityblock": "l1", "minkowski3": "lp", "cosine": "cosine",
                   "chebyshev": "linf"}[scipy_metric]
    full = oracle_matrix(X, Q, gknn_metric, 3.0)
    if scipy_metric == "cosine":
        full = 1.0 - full  # scikit-learn's cosine distance
    np.testing.assert_allclose(np.take_along_axis(full, I, axis=1), D, rtol=1e-5, atol=1e-5)
    assert (np.diff(D, axis=1) >= -1e-6).all()  # ascending distances, as scikit-learn returns them
    np.testing.assert_allclose(np.sort(full, axis=1)[:, :4], D, rtol=1e-5, atol=1e-5)
    np.testing.assert_array_equal(nn.kneighbors(Q, return_distance=False), I)


def test_nearest_neighbors_without_x_excludes_each_point_itself(rng):
    X = small_integers(rng, 30, 3, high=3)
    X[5] = X[6]  # a duplicate tied with row 5 itself
    nn = gknn.NearestNeighbors(n_neighbors=3, metric="euclidean", backend="cpu").fit(X)
    D, I = nn.kneighbors()
    assert I.shape == (30, 3)
    assert not (I == np.arange(30)[:, None]).any()
    assert I[5, 0] == 6 and D[5, 0] == 0.0 and I[6, 0] == 5
    with pytest.raises(ValueError, match="n_neighbors <= n_samples_fit"):
        nn.kneighbors(n_neighbors=30)
    with pytest.raises(ValueError, match="n_neighbors > 0"):
        nn.kneighbors(X, n_neighbors=0)
    with pytest.raises(ValueError, match="fit"):
        gknn.NearestNeighbors().kneighbors(X)
    with pytest.raises(ValueError, match="similarity"):
        gknn.NearestNeighbors(metric="ip").fit(X)


@pytest.mark.parametrize("largest", [False, True])
@pytest.mark.parametrize("algorithm", ["auto", "heap", "quickselect", "sort"])
def test_select_k_matches_a_stable_sort(rng, largest, algorithm):
    values = rng.integers(0, 6, (9, 70)).astype(np.float32)  # many ties
    V, I = gknn.select_k(values, 12, largest=largest, backend="cpu", algorithm=algorithm)
    cols = np.broadcast_to(np.arange(70), values.shape)
    order = np.lexsort((cols, -values if largest else values), axis=-1)[:, :12]
    np.testing.assert_array_equal(I, order)
    np.testing.assert_array_equal(V, np.take_along_axis(values, order, axis=1))


def test_select_k_labels_and_padding(rng):
    values = rng.standard_normal((3, 5)).astype(np.float64)  # converted once
    labels = np.arange(15, dtype=np.int64).reshape(3, 5) * 10
    V, I = gknn.select_k(values, 7, labels=labels)
    order = np.argsort(values, axis=1, kind="stable")
    np.testing.assert_array_equal(I[:, :5], np.take_along_axis(labels, order, axis=1))
    assert (I[:, 5:] == -1).all() and np.isinf(V[:, 5:]).all()
    with pytest.raises(ValueError, match="NaN"):
        gknn.select_k(np.array([[1.0, np.nan]], np.float32), 1)
    with pytest.raises(ValueError, match="shape"):
        gknn.select_k(values, 2, labels=labels[:2])
