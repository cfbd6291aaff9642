"""gknn: exact k-nearest-neighbour search and k-selection on the CPU and CUDA GPUs.

Functions return ``(distances, indices)`` as arrays of the caller's kind (numpy in -> numpy out, torch in ->
torch out), each ``rows x k``, in gknn's one total order: ascending distance (descending similarity for
``inner_product`` and ``cosine``), ties by the smaller index; when k exceeds the number of base rows the tail
of each row is index -1 with distance +inf (-inf for similarities).

Inputs: 2-D arrays (rows x dimension). float32 and uint8 arrays with contiguous rows are used in place (no
copy, a row stride is fine); float64, float16, integer and bool arrays, and arrays whose rows are not
contiguous, are converted once to a float32 copy. NaN or infinite values are rejected (ValueError naming the
row). The GIL is released while a search runs, and Ctrl-C stops it between batches (KeyboardInterrupt).

Errors: gknn's error codes map to ValueError (bad argument, malformed file), OSError (I/O), MemoryError,
NotImplementedError (not in this build, e.g. backend="cuda" without CUDA) and RuntimeError (CUDA failure).

Metric names: gknn's own (``squared_l2``, ``l2``, ``inner_product``, ``cosine``, ``l1``, ``linf``, ``lp``) and the
scipy / scikit-learn spellings (``sqeuclidean``, ``euclidean``, ``cityblock``, ``manhattan``, ``chebyshev``,
``minkowski`` with ``p``, ``ip``). ``cosine`` here is gknn's cosine *similarity* (largest first);
:class:`NearestNeighbors` returns scikit-learn's cosine *distance* 1 - similarity instead.
"""
import numpy as np

from . import _arrays, _gknn
from ._neighbors import NearestNeighbors

__all__ = ["search", "explain", "select_k", "Index", "NearestNeighbors", "info", "metric_name", "__version__"]

__version__ = _gknn.__version__

_METRIC_ALIASES = {
    "sqeuclidean": "squared_l2", "euclidean": "l2", "cityblock": "l1", "manhattan": "l1", "chebyshev": "linf",
    "minkowski": "lp", "ip": "inner_product", "dot": "inner_product",
}


def metric_name(metric, p=None):
    """(gknn metric name, p) for a gknn or scipy/scikit-learn metric name; minkowski's p 1, 2, inf become l1, l2,
    linf. p defaults to 2 for lp/minkowski and must be None (or 2) for every other metric."""
    if not isinstance(metric, str):
        raise TypeError(f"metric: expected a name, got {type(metric).__name__}")
    name = _METRIC_ALIASES.get(metric.lower(), metric.lower())
    if name == "lp":
        p = 2.0 if p is None else float(p)
        special = {1.0: "l1", 2.0: "l2", float("inf"): "linf"}
        return special.get(p, "lp"), p
    if p is not None and float(p) != 2.0:
        raise ValueError(f"p={p} is only meaningful with metric 'minkowski' or 'lp' (got metric {metric!r})")
    return name, 2.0


def _options(distance, select, threads, memory_budget, device=0, guard="auto"):
    options = _gknn._Options()
    options.distance, options.select, options.guard = distance, select, guard
    options.threads, options.memory_budget, options.device = int(threads), int(memory_budget), int(device)
    return options


def _check_k(k):
    if isinstance(k, bool) or not isinstance(k, (int, np.integer)):
        raise TypeError(f"k: expected an integer, got {type(k).__name__}")
    return int(k)


def search(base, queries, k, metric="sqeuclidean", backend="auto", distance="auto", select="auto", p=None, *,
           threads=0, memory_budget=0, guard="auto"):
    """Exact k nearest neighbours of every row of `queries` among the rows of `base`.

    Args:
        base: (n, d) array: numpy (float32/uint8 in place, other types converted once), a CPU torch tensor, or
            a CUDA tensor (torch/cupy; searched on its device, see gknn.info()["build"]).
        queries: (q, d) array of the same kind (and, for CUDA tensors, on the same device).
        k: neighbours per query (k > n pads with index -1 and distance +inf).
        metric: a gknn or scipy/scikit-learn metric name (see the module docstring); p for minkowski/lp.
        backend: "auto" (CUDA when a device is visible), "cpu" or "cuda".
        distance, select: algorithm names of gknn (gknn.info() lists them; "auto" picks the fastest).
        threads: CPU threads (0 = all). memory_budget: bytes of working memory (0 = automatic).
        guard: the exactness guard: "auto" re-ranks float data's float32/TF32 keys on float64 distances so that
            the neighbours are the float64 oracle's (squared L2, L2, inner product, cosine); "always"; "off".

    Returns:
        (distances float32 (q, k), indices int64 (q, k)) of the caller's array kind.
    """
    k = _check_k(k)
    metric, p = metric_name(metric, p)
    if _arrays.is_device_array(base) or _arrays.is_device_array(queries):
        return _search_device(base, queries, k, metric, p, backend,
                              _options(distance, select, threads, memory_budget, guard=guard))
    base_host = _arrays.host_matrix(base, "base")
    queries_host = _arrays.host_matrix(queries, "queries")
    if base_host.dtype != queries_host.dtype:  # uint8 with float: compute in float32
        base_host = _arrays.host_matrix(base_host, "base", allow_uint8=False)
        queries_host = _arrays.host_matrix(queries_host, "queries", allow_uint8=False)
    distances, indices = _gknn.search(base_host, queries_host, k, metric, p, backend,
                                      _options(distance, select, threads, memory_budget, guard=guard))
    return _arrays.like_input(queries, distances, indices)


def explain(base, queries, k, metric="sqeuclidean", backend="auto", distance="auto", select="auto", p=None):
    """What gknn.search(base, queries, k, ...) would run and why, without searching: a dict with "backend",
    "distance" and "select" (gknn's algorithm names) and a "..._reason" for each (e.g. "auto: integer data in
    fp16_mma's exact range: fp16 tensor cores, exact", or a row of the measured plan table). The inputs are
    validated as search validates them (the value facts that decide exact fast paths come from that pass).
    Host arrays only."""
    k = _check_k(k)
    metric, p = metric_name(metric, p)
    if _arrays.is_device_array(base) or _arrays.is_device_array(queries):
        raise NotImplementedError("explain: pass host arrays (the plan depends on the values, read on the host)")
    base_host = _arrays.host_matrix(base, "base", allow_uint8=False)
    queries_host = _arrays.host_matrix(queries, "queries", allow_uint8=False)
    return _gknn.explain(base_host, queries_host, k, metric, p, backend, _options(distance, select, 0, 0))


def _search_device(base, queries, k, metric, p, backend, options):
    """CUDA tensors searched on their device (gknn's device-memory overload); results allocated like `queries`."""
    if not (_arrays.is_device_array(base) and _arrays.is_device_array(queries)):
        raise TypeError("base and queries must both be CUDA tensors or both host arrays (got one of each)")
    if metric == "cosine":  # the library takes cosine on the device as inner product of unit rows
        base, queries, metric = _arrays.unit_rows(base), _arrays.unit_rows(queries), "inner_product"
    base_desc, base_owner = _arrays.device_matrix(base, "base")
    query_desc, query_owner = _arrays.device_matrix(queries, "queries")
    if base_desc["device_id"] != query_desc["device_id"]:
        raise ValueError(f"base is on cuda:{base_desc['device_id']}, queries on cuda:{query_desc['device_id']}")
    options.device = base_desc["device_id"]
    out = _arrays.search_on_device(queries, query_desc, k, lambda d, i: _gknn.search_device(
        base_desc, query_desc, k, metric, p, backend, options, d, i))
    del base_owner, query_owner  # the search is synchronous: its outputs are complete here
    return out


def select_k(values, k, *, largest=False, labels=None, backend="auto", algorithm="auto", threads=0):
    """The k smallest (or, with largest=True, largest) values of every row, sorted, ties by the smaller label.

    Args:
        values: (rows, cols) array: numpy (converted once to float32 unless it is float32 with contiguous rows), a
            CPU torch tensor, or a float32 CUDA tensor (torch/cupy; selected where it is, on its device, any row
            stride, no host copy; other dtypes are a TypeError). NaN is rejected (ValueError naming the row and
            column); +-inf are valid values.
        labels: optional int64 (rows, cols) array returned (and used for ties) instead of the column index; with
            CUDA values, an int64 CUDA tensor on the same device with the values' row stride.
        backend: "auto", "cpu" or "cuda" (CUDA values need "auto" or "cuda").
        algorithm: a gknn selection name ("auto", "heap", "quickselect", "sort", and on CUDA "warp_select", ...).
        threads: CPU threads (0 = all); unused on CUDA.

    Returns:
        (values float32 (rows, k), indices int64 (rows, k)) of the caller's array kind (CUDA tensors: of its kind
        on its device); k > cols pads with -1 and +inf (-inf if largest).
    """
    k = _check_k(k)
    if _arrays.is_device_array(values) or (labels is not None and _arrays.is_device_array(labels)):
        return _select_k_device(values, labels, k, largest, backend, algorithm)
    host = _arrays.host_matrix(values, "values", allow_uint8=False)
    label_array = None
    if labels is not None:
        label_array = np.asarray(labels.detach().cpu().numpy() if _arrays.is_torch(labels) else labels)
        if label_array.shape != host.shape:
            raise ValueError(f"labels: shape {label_array.shape} differs from values' {host.shape}")
        label_array = np.ascontiguousarray(label_array, dtype=np.int64)
        host = np.ascontiguousarray(host)  # labels are read with the values' row stride
    out = _gknn.select_k(host, label_array, k, bool(largest), backend, algorithm, int(threads))
    return _arrays.like_input(values, *out)


def _select_k_device(values, labels, k, largest, backend, algorithm):
    """select_k of a CUDA tensor on its device (gknn's device-memory overload); results allocated like `values`."""
    if not _arrays.is_device_array(values):
        raise TypeError("labels is a CUDA array but values is not: pass both on one device, or both on the host")
    desc, owner = _arrays.device_matrix(values, "values")
    label_desc = label_owner = None
    if labels is not None:
        if not _arrays.is_device_array(labels):
            raise TypeError("labels: values is a CUDA array, so labels must be an int64 CUDA array on its device "
                            "(got a host array)")
        label_desc, label_owner = _arrays.device_matrix(labels, "labels", element="int64")
        if tuple(label_desc["shape"]) != tuple(desc["shape"]):
            raise ValueError(f"labels: shape {tuple(label_desc['shape'])} differs from values' {tuple(desc['shape'])}")
        if label_desc["device_id"] != desc["device_id"]:
            raise ValueError(f"labels are on cuda:{label_desc['device_id']}, values on cuda:{desc['device_id']}")
        if desc["shape"][0] > 1 and label_desc["row_stride"] != desc["row_stride"]:
            raise ValueError(f"labels: must have the row stride of values ({desc['row_stride']} elements, got "
                             f"{label_desc['row_stride']}); use .contiguous() on both")
    out = _arrays.search_on_device(values, desc, k, lambda d, i: _gknn.select_k_device(
        desc, label_desc, k, bool(largest), backend, algorithm, d, i))
    del owner, label_owner  # the selection is synchronous: its outputs are complete here
    return out


class Index:
    """A FAISS-style exact (flat) index: add vectors once, search many times.

    With backend "cuda" (or "auto" with a visible device) the vectors stay in device memory between searches.
    Vectors are copied into the index (float64 and other types are converted to float32 on the way).

    >>> index = gknn.Index(128)          # squared L2, like faiss.IndexFlatL2
    >>> index.add(xb)
    >>> D, I = index.search(xq, 10)
    """

    def __init__(self, dim, metric="sqeuclidean", backend="auto", p=None):
        name, p = metric_name(metric, p)
        self._index = _gknn.Index(int(dim), name, p, backend)

    def add(self, x):
        """Appends rows; their ids are their insertion positions 0, 1, ... (FAISS's add). A CUDA tensor (torch,
        cupy; float32) is copied device to device into a "cuda" index, never through the host; uint8 rows are
        uploaded as bytes and widened on the device."""
        if _arrays.is_device_array(x):
            return self._add_device(x, None)
        self._index.add(_arrays.host_matrix(x, "vectors"))

    def add_with_ids(self, x, ids):
        """Appends rows with int64 user ids, returned by search instead of positions (all rows or none)."""
        if _arrays.is_device_array(x):
            return self._add_device(x, ids)
        host = _arrays.host_matrix(x, "vectors")
        self._index.add_with_ids(host, _arrays.int64_vector(ids, "ids", host.shape[0]))

    def _require_cuda(self, name):
        """Refuses a CUDA array for an index on the CPU before anything reads its pointer."""
        if self.backend != "cuda":
            raise ValueError(f"{name}: a CUDA array needs an index on the cuda backend (gknn.Index(d, "
                             f"backend='cuda')); this index is on the {self.backend} backend")

    def _add_device(self, x, ids):
        """A CUDA array's rows (and, when ids is not None, their user ids, read on the host) into the index."""
        self._require_cuda("vectors")
        desc, owner = _arrays.device_matrix(x, "vectors")
        if ids is not None:
            ids = _arrays.int64_vector(ids, "ids", desc["shape"][0])
        _arrays.synchronize_current_stream(x)  # the producer's kernels are done before gknn reads
        self._index.add_device(desc, ids)
        del owner  # the copy into the index is complete when add_device returns

    def search(self, x, k, *, distance="auto", select="auto", threads=0, memory_budget=0, guard="auto"):
        """(distances, indices) of the k nearest stored vectors of each query row, as gknn.search returns them.
        CUDA tensor queries (of a "cuda" index) are searched on the device; the results are tensors of their
        kind on their device."""
        k = _check_k(k)
        options = _options(distance, select, threads, memory_budget, guard=guard)
        if _arrays.is_device_array(x):
            self._require_cuda("queries")
            desc, owner = _arrays.device_matrix(x, "queries")
            out = _arrays.search_on_device(x, desc, k, lambda d, i: self._index.search_device(desc, k, options, d, i))
            del owner  # the search is synchronous: its outputs are complete here
            return out
        queries = _arrays.host_matrix(x, "queries", allow_uint8=False)
        out = self._index.search(queries, k, options)
        return _arrays.like_input(x, *out)

    def reset(self):
        """Removes every vector (and id)."""
        self._index.reset()

    @property
    def ntotal(self):
        """Number of vectors stored."""
        return self._index.ntotal

    @property
    def d(self):
        """Dimension of the vectors."""
        return self._index.d

    @property
    def metric(self):
        """gknn's name of the index metric."""
        return self._index.metric

    @property
    def backend(self):
        """"cpu" or "cuda": where the vectors live."""
        return self._index.backend

    def __len__(self):
        return self.ntotal

    def __repr__(self):
        return f"gknn.Index(d={self.d}, metric={self.metric!r}, backend={self.backend!r}, ntotal={self.ntotal})"


def info():
    """What this build and machine offer: version, build options, CPU, CUDA devices, and for each backend
    whether it is compiled in and available now, with its distance algorithms per metric and its selection
    algorithms (name -> largest k). A CUDA build lists its algorithms even where no GPU is visible."""
    return _gknn.info()
