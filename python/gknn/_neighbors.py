"""gknn.NearestNeighbors: scikit-learn's NearestNeighbors interface (fit / kneighbors) on gknn's exact search."""
import numpy as np

from . import _arrays


class NearestNeighbors:
    """Exact nearest neighbours with scikit-learn's argument names and return order.

    Args:
        n_neighbors: default k of kneighbors.
        metric: "minkowski" (with p: 2 Euclidean, 1 Manhattan, inf Chebyshev, other p > 0 Minkowski),
            "euclidean", "sqeuclidean", "manhattan"/"cityblock"/"l1", "chebyshev", "l2", "cosine" (returned as
            scikit-learn's cosine distance 1 - similarity), or any other gknn distance metric name.
        p: Minkowski exponent (scikit-learn's default 2).
        backend, distance, select: as in gknn.search.
        n_jobs: CPU threads (None or -1: all).

    Unlike scikit-learn, distances are computed in float32 (float64 input is converted once).
    """

    def __init__(self, n_neighbors=5, *, metric="minkowski", p=2, backend="auto", distance="auto", select="auto",
                 n_jobs=None):
        self.n_neighbors = n_neighbors
        self.metric = metric
        self.p = p
        self.backend = backend
        self.distance = distance
        self.select = select
        self.n_jobs = n_jobs

    def _gknn_metric(self):
        from . import metric_name

        name, p = metric_name(self.metric, self.p if self.metric in ("minkowski", "lp") else None)
        if name == "inner_product":
            raise ValueError("NearestNeighbors: inner product is a similarity, not a distance; use gknn.search")
        return name, p

    def fit(self, X, y=None):
        """Stores the training vectors (a float32 copy, in a gknn.Index). Returns self. A CUDA tensor (torch, cupy)
        stays on its device: the index is a "cuda" one, and kneighbors returns tensors of the same kind there."""
        from . import Index

        name, p = self._gknn_metric()
        if _arrays.is_device_array(X):
            if self.backend == "cpu":
                raise ValueError("NearestNeighbors: a CUDA array needs backend 'cuda' or 'auto' (got 'cpu')")
            data = X
            shape = _arrays.device_matrix(X, "X")[0]["shape"]
            self._index = Index(shape[1], name, "cuda", p if name == "lp" else None)
        else:
            data = _arrays.host_matrix(X, "X", allow_uint8=False)
            shape = data.shape
            self._index = Index(shape[1], name, self.backend, p if name == "lp" else None)
        self._index.add(data)
        self._fit_X = data
        self.n_samples_fit_ = int(shape[0])
        self.n_features_in_ = int(shape[1])
        self.effective_metric_ = name
        return self

    def kneighbors(self, X=None, n_neighbors=None, return_distance=True):
        """(distances, indices) of the n_neighbors nearest training points of each row of X, nearest first.

        X None: the neighbours of every training point, itself excluded (as scikit-learn does).
        return_distance=False returns the indices only.
        """
        if not hasattr(self, "_index"):
            raise ValueError("NearestNeighbors: call fit before kneighbors")
        k = self.n_neighbors if n_neighbors is None else n_neighbors
        if isinstance(k, bool) or not isinstance(k, (int, np.integer)) or k <= 0:
            raise ValueError(f"Expected n_neighbors > 0, got {k!r}")
        query_is_train = X is None
        k_search = k + 1 if query_is_train else k
        if k_search > self.n_samples_fit_:
            n_samples = self.n_samples_fit_ if query_is_train else (X.shape[0] if hasattr(X, "shape") else len(X))
            raise ValueError(f"Expected n_neighbors <= n_samples_fit, but n_neighbors = {k_search}, "
                             f"n_samples_fit = {self.n_samples_fit_}, n_samples = {n_samples}")
        threads = 0 if self.n_jobs in (None, -1) else int(self.n_jobs)
        queries = self._fit_X if query_is_train else X
        distances, indices = self._index.search(queries, int(k_search), distance=self.distance, select=self.select,
                                                threads=threads)
        if _arrays.is_device_array(indices):  # device results stay where they are, as tensors of their kind
            if query_is_train:
                distances, indices = _drop_self(distances, indices, _arrays.arange_like(indices, indices.shape[0]))
            return (distances, indices) if return_distance else indices
        distances, indices = np.asarray(distances), np.asarray(indices)
        if query_is_train:
            distances, indices = _drop_self(distances, indices, np.arange(indices.shape[0]))
        if self.effective_metric_ == "cosine":
            distances = (1.0 - distances).astype(np.float32)
        if not query_is_train:
            distances, indices = _arrays.like_input(X, distances, indices)
        return (distances, indices) if return_distance else indices


def _drop_self(distances, indices, positions):
    """Removes each row's own index (its position, from `positions` = 0..rows-1 of the arrays' kind) from its
    neighbour list; where it is absent (duplicates tied ahead of it), the last neighbour goes instead, so every
    row keeps k entries. numpy, torch and cupy arrays alike (positional axis arguments)."""
    rows, k1 = indices.shape
    is_self = indices == positions[:, None]
    missing = ~is_self.any(1)
    is_self[missing, k1 - 1] = True
    keep = ~is_self
    return distances[keep].reshape(rows, k1 - 1), indices[keep].reshape(rows, k1 - 1)
