"""Array plumbing of the gknn package: what an argument is, how it reaches C++, what the results come back as.

Host arrays (numpy, anything with the buffer protocol or ``__array__``, CPU torch tensors) reach C++ as numpy
arrays viewed in place when they are float32 or uint8 with contiguous rows (a row stride is fine); otherwise
they are converted once to a C-contiguous float32 copy. Device arrays (``__cuda_array_interface__`` or
``__dlpack__`` on a CUDA device) are described by a dict of raw pointer, shape, row stride and device.
"""
import numpy as np

from . import _gknn

_KDL_CUDA = 2  # DLPack's device type of CUDA memory


def _module_of(x):
    return type(x).__module__.split(".", 1)[0]


def is_torch(x):
    return _module_of(x) == "torch" and hasattr(x, "detach")


def is_device_array(x):
    """True for CUDA tensors (torch, cupy, ...): they are searched where they are, never copied to the host."""
    if is_torch(x):
        return bool(x.is_cuda)
    if hasattr(x, "__cuda_array_interface__"):
        return True
    if hasattr(x, "__dlpack_device__") and not isinstance(x, np.ndarray):
        return x.__dlpack_device__()[0] == _KDL_CUDA
    return False


def host_matrix(x, name, allow_uint8=True):
    """A 2-D float32 (or uint8) numpy array with contiguous rows, sharing memory with `x` when it can.

    Converted once (a copy) when `x` has another dtype (float64, float16, integers, bool) or its rows are not
    contiguous; rejected with TypeError/ValueError when it is not numeric or not 2-D.
    """
    if is_device_array(x):
        raise NotImplementedError(f"{name}: a CUDA array; gknn.search, gknn.select_k and gknn.Index take those, here "
                                  "pass a host array (x.cpu())")
    if is_torch(x):
        x = x.detach().numpy()  # a CPU tensor's memory, no copy
    array = np.asarray(x)
    if array.ndim != 2:
        raise ValueError(f"{name}: expected a 2-D array (rows x dimension), got {array.ndim} dimension(s) "
                         f"with shape {array.shape}; a single vector is x[None, :]")
    if array.dtype == np.uint8 and allow_uint8:
        dtype = np.uint8
    elif array.dtype.kind in "fiub":
        dtype = np.float32
    else:
        raise TypeError(f"{name}: element type {array.dtype} is not a real number type "
                        "(float32, float64, uint8, integers)")
    item = np.dtype(dtype).itemsize
    rows_contiguous = array.shape[1] <= 1 or array.strides[1] == item
    row_stride_ok = array.shape[0] <= 1 or (array.strides[0] >= array.shape[1] * item and array.strides[0] % item == 0)
    if array.dtype != dtype or not rows_contiguous or not row_stride_ok:
        array = np.ascontiguousarray(array, dtype=dtype)
    return array


def int64_vector(x, name, size):
    """A contiguous 1-D int64 numpy array of `size` entries (converted once from other integer types)."""
    if is_torch(x):
        x = x.detach().cpu().numpy()
    elif _module_of(x) == "cupy":
        x = x.get()  # ids are read on the host
    array = np.asarray(x)
    if array.ndim != 1 or array.shape[0] != size:
        raise ValueError(f"{name}: expected a 1-D array of {size} entries, got shape {array.shape}")
    if array.dtype.kind not in "iu":
        raise TypeError(f"{name}: expected integers, got {array.dtype}")
    return np.ascontiguousarray(array, dtype=np.int64)


def like_input(template, distances, indices):
    """Results as the caller's kind of array: torch in -> torch out, numpy (or any host array) -> numpy."""
    if is_torch(template):
        import torch

        return torch.from_numpy(distances), torch.from_numpy(indices)
    return distances, indices


def device_matrix(x, name, element="float32"):
    """(description dict, owner) of a 2-D CUDA array of element type `element` (TypeError otherwise: gknn does not
    convert on the device); the owner must stay alive while the pointer is used."""
    if is_torch(x):
        x = x.detach()
    if hasattr(x, "__cuda_array_interface__"):
        cai = x.__cuda_array_interface__
        shape, typestr, strides = tuple(cai["shape"]), cai["typestr"], cai.get("strides")
        dtype = np.dtype(typestr)
        desc = {"data": int(cai["data"][0]), "shape": shape, "dtype": dtype.name,
                "strides": None if strides is None else tuple(s // dtype.itemsize for s in strides),
                "device_id": _cuda_device_of(x)}
        owner = x
    elif hasattr(x, "__dlpack__"):
        capsule = x.__dlpack__()
        desc = dict(_gknn.describe_dlpack(capsule))
        owner = (x, capsule)
    else:
        raise TypeError(f"{name}: a CUDA array without __cuda_array_interface__ or __dlpack__")
    if len(desc["shape"]) != 2:
        raise ValueError(f"{name}: expected a 2-D tensor, got shape {desc['shape']}")
    rows, cols = desc["shape"]
    strides = desc["strides"] or (cols, 1)
    if cols > 1 and strides[1] != 1:
        raise ValueError(f"{name}: the elements of a row are not contiguous on the device (strides {strides}); "
                         "use .contiguous()")
    desc["row_stride"] = strides[0] if rows > 1 else cols
    if desc["dtype"] != element:
        convert = ".float() / .astype('float32')" if element == "float32" else f".long() / .astype('{element}')"
        raise TypeError(f"{name}: device tensors must be {element} (got {desc['dtype']}); convert on the device "
                        f"with {convert}")
    return desc, owner


def _cuda_device_of(x):
    if is_torch(x):
        return x.device.index or 0
    device = getattr(x, "device", None)
    return int(getattr(device, "id", 0) or 0)


def empty_like_device(template, rows, k):
    """Uninitialised (distances float32, indices int64) outputs on the device of `template`, of its kind."""
    if is_torch(template):
        import torch

        return (torch.empty((rows, k), dtype=torch.float32, device=template.device),
                torch.empty((rows, k), dtype=torch.int64, device=template.device))
    if _module_of(template) == "cupy":
        import cupy

        with template.device:
            return cupy.empty((rows, k), dtype=cupy.float32), cupy.empty((rows, k), dtype=cupy.int64)
    raise TypeError(f"cannot allocate results like a {type(template).__name__} (torch and cupy are supported)")


def arange_like(template, n):
    """0..n-1 as int64 on the device of `template` (torch or cupy), or as numpy for host arrays."""
    if is_torch(template):
        import torch

        return torch.arange(n, dtype=torch.int64, device=template.device)
    if _module_of(template) == "cupy":
        import cupy

        with template.device:
            return cupy.arange(n, dtype=cupy.int64)
    return np.arange(n)


def search_on_device(queries, query_desc, k, run):
    """Allocates (distances, indices) like `queries` on its device, waits for the producer's stream, and calls
    run(distances_pointer, indices_pointer): a synchronous gknn search (or select_k) that fills them. Returns the
    outputs."""
    distances, indices = empty_like_device(queries, query_desc["shape"][0], k)
    synchronize_current_stream(queries)  # the producer's kernels are done before gknn's streams read
    run(device_pointer(distances), device_pointer(indices))
    return distances, indices


def synchronize_current_stream(template):
    """Waits for the caller's current CUDA stream (torch or cupy) on the template's device."""
    if is_torch(template):
        import torch

        torch.cuda.current_stream(template.device).synchronize()
    elif _module_of(template) == "cupy":
        import cupy

        with template.device:
            cupy.cuda.get_current_stream().synchronize()


def unit_rows(x):
    """Rows scaled to unit length on the device (a zero row stays zero): cosine becomes inner product."""
    if is_torch(x):
        import torch

        wide = x.detach().to(torch.float64)  # in double, like the library's own normalisation
        return (wide / torch.linalg.vector_norm(wide, dim=1, keepdim=True).clamp_min(1e-300)).to(x.dtype)
    if _module_of(x) == "cupy":
        import cupy

        wide = x.astype(cupy.float64)
        return (wide / cupy.maximum(cupy.sqrt((wide * wide).sum(axis=1, keepdims=True)), 1e-300)).astype(x.dtype)
    raise NotImplementedError("metric cosine on this kind of CUDA array: normalise the rows and use inner_product")


def device_pointer(array):
    if is_torch(array):
        return array.data_ptr()
    return int(array.__cuda_array_interface__["data"][0])
