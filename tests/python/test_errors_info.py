"""Bad input is a clear Python exception; gknn.info(); Ctrl-C stops a long search; device arrays on the CPU."""
import os
import signal
import threading
import time

import numpy as np
import pytest

from conftest import gknn, small_integers


@pytest.fixture
def data(rng):
    return small_integers(rng, 20, 4), small_integers(rng, 3, 4)


def test_wrong_ndim(data):
    base, queries = data
    with pytest.raises(ValueError, match="base: expected a 2-D array"):
        gknn.search(base[0], queries, 2)
    with pytest.raises(ValueError, match="queries: expected a 2-D array"):
        gknn.search(base, queries[None], 2)


def test_wrong_dtype(data):
    base, queries = data
    with pytest.raises(TypeError, match="not a real number type"):
        gknn.search(base.astype(np.complex64), queries, 2)
    with pytest.raises(TypeError, match="not a real number type"):
        gknn.search(np.array([["a", "b"]]), queries, 2)
    with pytest.raises(TypeError, match="k: expected an integer"):
        gknn.search(base, queries, 2.5)


def test_dimension_mismatch_and_bad_k(data):
    base, queries = data
    with pytest.raises(ValueError, match="dimension"):
        gknn.search(base, queries[:, :3], 2)
    for k in (0, -3):
        with pytest.raises(ValueError, match="k must be positive"):
            gknn.search(base, queries, k)
    with pytest.raises(ValueError, match="empty"):
        gknn.search(np.zeros((0, 4), np.float32), queries, 2)


@pytest.mark.parametrize("bad", [np.nan, np.inf, -np.inf])
def test_nan_and_inf_are_rejected_naming_the_row(data, bad):
    base, queries = data
    base = base.copy()
    base[7, 2] = bad
    with pytest.raises(ValueError, match="row 7"):
        gknn.search(base, queries, 2, backend="cpu")


def test_bad_names(data):
    base, queries = data
    with pytest.raises(ValueError, match="metric"):
        gknn.search(base, queries, 2, metric="hamming")
    with pytest.raises(ValueError, match="backend"):
        gknn.search(base, queries, 2, backend="tpu")
    with pytest.raises(ValueError, match="select"):
        gknn.search(base, queries, 2, select="bogus")
    with pytest.raises(ValueError, match="p="):
        gknn.search(base, queries, 2, metric="l1", p=3)
    with pytest.raises(ValueError, match="p"):
        gknn.search(base, queries, 2, metric="minkowski", p=-1)


def test_unsupported_requests_raise_not_implemented(data):
    base, queries = data
    with pytest.raises(NotImplementedError):
        gknn.search(base, queries, 2, metric="l1", backend="cpu", distance="gemm")
    if not gknn.info()["backends"]["cuda"]["compiled"]:
        with pytest.raises(NotImplementedError, match="CUDA"):
            gknn.search(base, queries, 2, backend="cuda")


def test_info_lists_every_compiled_algorithm():
    info = gknn.info()
    assert info["version"] == gknn.__version__
    cpu = info["backends"]["cpu"]
    assert cpu["compiled"] and cpu["available"]
    assert set(cpu["select"]) >= {"heap", "quickselect", "sort"}
    assert set(cpu["distance"]["squared_l2"]) >= {"reference", "direct", "gemm"}
    assert set(cpu["distance"]) == {"squared_l2", "l2", "inner_product", "cosine", "l1", "linf", "lp"}
    cuda = info["backends"]["cuda"]
    assert cuda["compiled"] == info["build"]["cuda"]
    # A CUDA build lists its algorithms whether or not a device is visible.
    assert bool(cuda["select"]) == cuda["compiled"]
    assert bool(cuda["distance"]["squared_l2"]) == cuda["compiled"]
    assert cuda["available"] == (len(info["cuda_devices"]) > 0)


class FakeCudaArray:
    """Speaks __cuda_array_interface__ with a pointer no one may read: a host copy would crash or be caught."""

    def __init__(self, shape, typestr="<f4"):
        self.__cuda_array_interface__ = {"shape": shape, "typestr": typestr, "data": (0xDEAD0000, False),
                                         "version": 3, "strides": None}


def test_cuda_arrays_are_never_copied_to_the_host(data):
    base, queries = data
    with pytest.raises(TypeError, match="both be CUDA tensors"):
        gknn.search(FakeCudaArray((20, 4)), queries, 2)
    with pytest.raises(TypeError, match="float32"):
        gknn.search(FakeCudaArray((20, 4), "<f8"), FakeCudaArray((3, 4), "<f8"), 2)
    with pytest.raises(ValueError, match="2-D"):
        gknn.search(FakeCudaArray((20,)), FakeCudaArray((3, 4)), 2)
    with pytest.raises(TypeError, match="allocate results"):  # no torch/cupy to allocate device outputs with
        gknn.search(FakeCudaArray((20, 4)), FakeCudaArray((3, 4)), 2)
    index = gknn.Index(4, backend="cpu")  # a CUDA array needs a cuda index: refused before its pointer is read
    for call in (lambda: index.add(FakeCudaArray((20, 4))), lambda: index.search(FakeCudaArray((3, 4)), 2),
                 lambda: index.add_with_ids(FakeCudaArray((20, 4)), np.arange(20))):
        with pytest.raises(ValueError, match="cuda backend"):
            call()
    with pytest.raises(ValueError, match="backend 'cuda'"):  # refused before the pointer is read
        gknn.NearestNeighbors(backend="cpu").fit(FakeCudaArray((20, 4)))
    # select_k takes CUDA arrays on their device: refused here before the pointer is read (no torch/cupy to
    # allocate device outputs with, a wrong dtype, or labels and values in different memories).
    with pytest.raises(TypeError, match="allocate results"):
        gknn.select_k(FakeCudaArray((2, 4)), 1)
    with pytest.raises(TypeError, match="float32"):
        gknn.select_k(FakeCudaArray((2, 4), "<f8"), 1)
    with pytest.raises(TypeError, match="int64"):
        gknn.select_k(FakeCudaArray((2, 4)), 1, labels=FakeCudaArray((2, 4), "<i4"))
    with pytest.raises(TypeError, match="host array"):
        gknn.select_k(FakeCudaArray((2, 4)), 1, labels=np.zeros((2, 4), np.int64))
    with pytest.raises(TypeError, match="values is not"):
        gknn.select_k(np.zeros((2, 4), np.float32), 1, labels=FakeCudaArray((2, 4), "<i8"))
    with pytest.raises(ValueError, match="shape"):
        gknn.select_k(FakeCudaArray((2, 4)), 1, labels=FakeCudaArray((2, 5), "<i8"))


def test_ctrl_c_interrupts_a_long_search(rng):
    base = rng.standard_normal((6000, 96)).astype(np.float32)
    queries = rng.standard_normal((3000, 96)).astype(np.float32)

    def interrupt():
        time.sleep(0.3)
        os.kill(os.getpid(), signal.SIGINT)

    timer = threading.Thread(target=interrupt)
    start = time.monotonic()
    timer.start()
    with pytest.raises(KeyboardInterrupt):
        # the float64 reference kernel takes seconds on this shape; the interrupt lands between batches
        gknn.search(base, queries, 10, backend="cpu", distance="reference", threads=1)
        time.sleep(5)  # search finished before the signal: let it arrive so the test still reports a failure
        pytest.fail("the search ended before the interrupt could stop it")
    timer.join()
    assert time.monotonic() - start < 30


@pytest.mark.skipif(gknn.info()["backends"]["cuda"]["available"], reason="a CUDA device would read the fake pointer")
def test_device_memory_needs_a_cuda_device():
    desc = {"data": 0xDEAD0000, "shape": (20, 4), "row_stride": 4, "dtype": "float32", "device_id": 0}
    options = gknn._gknn._Options()
    with pytest.raises(NotImplementedError, match="[Cc][Uu][Dd][Aa]"):  # refused before any pointer is read
        gknn._gknn.search_device(desc, desc, 2, "squared_l2", 2.0, "auto", options, 0xDEAD1000, 0xDEAD2000)
    with pytest.raises(ValueError, match="cuda backend"):
        gknn._gknn.search_device(desc, desc, 2, "squared_l2", 2.0, "cpu", options, 0xDEAD1000, 0xDEAD2000)
    with pytest.raises(ValueError, match="float32"):
        gknn._gknn.search_device(dict(desc, dtype="float64"), desc, 2, "squared_l2", 2.0, "auto", options, 1, 2)
    with pytest.raises(NotImplementedError, match="[Cc][Uu][Dd][Aa]"):
        gknn._gknn.select_k_device(desc, None, 2, False, "auto", "auto", 0xDEAD1000, 0xDEAD2000)
    with pytest.raises(ValueError, match="cuda backend"):
        gknn._gknn.select_k_device(desc, None, 2, True, "cpu", "auto", 0xDEAD1000, 0xDEAD2000)
    labels = dict(desc, dtype="int64")
    with pytest.raises(ValueError, match="row stride"):
        gknn._gknn.select_k_device(desc, dict(labels, row_stride=8), 2, False, "auto", "auto", 1, 2)


def test_dlpack_capsules_are_read_in_place():
    if not gknn.info()["build"]["dlpack"]:
        pytest.skip("module built without the DLPack header (libdlpack-dev)")
    array = np.arange(24, dtype=np.float32).reshape(4, 6)[:, :5]  # a row stride of 6 elements
    desc = gknn._gknn.describe_dlpack(array.__dlpack__())  # numpy exports CPU memory through DLPack too
    assert desc["data"] == array.ctypes.data  # the producer's pointer itself: nothing was copied
    assert desc["shape"] == (4, 5) and desc["dtype"] == "float32" and desc["device_type"] == "cpu"
    assert desc["strides"] in (None, (6, 1))
    with pytest.raises(TypeError):
        gknn._gknn.describe_dlpack(array)  # not a capsule


def test_explain_names_the_plan_and_why(data):
    base, queries = data
    plan = gknn.explain(base, queries, 5, metric="cityblock", backend="cpu")
    assert plan["backend"] == "cpu" and plan["backend_reason"] == "requested"
    assert plan["distance"] == "direct" and plan["distance_reason"].startswith("auto: ")
    assert plan["select"] == "heap" and "k = 5" in plan["select_reason"]
    assert plan["guard"] == "none" and "l1" in plan["guard_reason"]
    floats = np.asarray(base, np.float32) + np.float32(0.25)
    plan = gknn.explain(floats, floats[:3], 5, backend="cpu")
    assert plan["guard"] == "re-rank" and "float32" in plan["guard_reason"], plan
    plan = gknn.explain(base, queries, 5, backend="cpu", distance="reference", select="quickselect")
    assert (plan["distance"], plan["distance_reason"]) == ("reference", "requested")
    assert (plan["select"], plan["select_reason"]) == ("quickselect", "requested")
    with pytest.raises(NotImplementedError):  # what search refuses, explain refuses alike
        gknn.explain(base, queries, 5, metric="l1", backend="cpu", distance="gemm")
    with pytest.raises(ValueError):
        gknn.explain(base, queries[:, :2], 5)
