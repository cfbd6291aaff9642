"""gknn.search against the float64 oracle and against the C++ command-line tool, on the CPU backend."""
import os
import subprocess

import numpy as np
import pytest

from conftest import METRICS, SIMILARITIES, assert_matches_oracle, gknn, oracle_knn, small_integers

INEXACT = {"cosine", "lp"}  # float32 rounding may reorder near-equal distances of these on integer data


@pytest.mark.parametrize("metric,p", METRICS)
@pytest.mark.parametrize("distance", ["auto", "reference", "direct"])
def test_every_metric_matches_the_float64_oracle(rng, metric, p, distance):
    base, queries = small_integers(rng, 203, 19), small_integers(rng, 37, 19)
    k = 11
    D, I = gknn.search(base, queries, k, metric=metric, p=p, backend="cpu", distance=distance)
    assert_matches_oracle(D, I, base, queries, k, metric, p or 2.0, exact_indices=metric not in INEXACT)


@pytest.mark.parametrize("select", ["heap", "quickselect", "sort"])
@pytest.mark.parametrize("metric", ["squared_l2", "inner_product", "l1"])
def test_every_selection_gives_identical_indices(rng, select, metric):
    base, queries = small_integers(rng, 300, 8, high=3), small_integers(rng, 20, 8, high=3)  # many ties
    D, I = gknn.search(base, queries, 25, metric=metric, backend="cpu", select=select)
    d_ref, i_ref = oracle_knn(base, queries, 25, metric)
    np.testing.assert_array_equal(I, i_ref)
    np.testing.assert_array_equal(D, d_ref.astype(np.float32))


def test_gemm_distances_on_random_floats(rng):
    """Float data: the exactness guard (guard="auto") gives the float64 oracle's ids on squared L2, L2 and inner
    product (cosine is guarded on the rows as normalised in float32); guard="off" leaves float32-level ids."""
    base = rng.standard_normal((500, 64)).astype(np.float32)
    queries = rng.standard_normal((30, 64)).astype(np.float32)
    for metric in ("squared_l2", "l2", "inner_product", "cosine"):
        D, I = gknn.search(base, queries, 10, metric=metric, backend="cpu", distance="gemm")
        assert_matches_oracle(D, I, base, queries, 10, metric, exact_indices=metric != "cosine", rtol=1e-4)
        D, I = gknn.search(base, queries, 10, metric=metric, backend="cpu", distance="gemm", guard="off")
        assert_matches_oracle(D, I, base, queries, 10, metric, exact_indices=False, rtol=1e-4)
    with pytest.raises(ValueError, match="guard"):
        gknn.search(base, queries, 10, guard="sometimes")
    index = gknn.Index(64, backend="cpu")
    index.add(base)
    D, I = index.search(queries, 10, guard="always")
    assert_matches_oracle(D, I, base, queries, 10, "squared_l2", rtol=1e-4)


@pytest.mark.parametrize("alias,name,p", [("sqeuclidean", "squared_l2", None), ("euclidean", "l2", None),
                                          ("cityblock", "l1", None), ("manhattan", "l1", None),
                                          ("chebyshev", "linf", None), ("ip", "inner_product", None),
                                          ("minkowski", "lp", 3.0), ("minkowski", "l1", 1),
                                          ("minkowski", "l2", None), ("minkowski", "linf", np.inf),
                                          ("COSINE", "cosine", None)])
def test_scipy_and_sklearn_spellings_are_gknn_metrics(rng, alias, name, p):
    base, queries = small_integers(rng, 50, 5), small_integers(rng, 6, 5)
    got = gknn.search(base, queries, 7, metric=alias, p=p, backend="cpu")
    want = gknn.search(base, queries, 7, metric=name, p=p if name == "lp" else None, backend="cpu")
    np.testing.assert_array_equal(got[0], want[0])
    np.testing.assert_array_equal(got[1], want[1])


def test_ties_go_to_the_smaller_index():
    base = np.zeros((10, 3), np.float32)  # all equal
    D, I = gknn.search(base, np.ones((2, 3), np.float32), 4, backend="cpu")
    np.testing.assert_array_equal(I, [[0, 1, 2, 3]] * 2)
    np.testing.assert_array_equal(D, np.full((2, 4), 3.0, np.float32))


@pytest.mark.parametrize("metric", ["squared_l2", "inner_product"])
def test_k_larger_than_n_is_padded(rng, metric):
    base, queries = small_integers(rng, 5, 4), small_integers(rng, 3, 4)
    D, I = gknn.search(base, queries, 8, metric=metric, backend="cpu")
    assert_matches_oracle(D, I, base, queries, 8, metric)
    assert (I[:, 5:] == -1).all()
    assert (D[:, 5:] == (-np.inf if metric in SIMILARITIES else np.inf)).all()


def test_k_equal_n_one_row_one_dimension(rng):
    base = small_integers(rng, 1, 1)
    D, I = gknn.search(base, base, 1, backend="cpu")
    np.testing.assert_array_equal(I, [[0]])
    base = small_integers(rng, 40, 1, high=100)
    D, I = gknn.search(base, base[:3], 40, backend="cpu")
    assert_matches_oracle(D, I, base, base[:3], 40, "squared_l2")


def test_tile_edges_and_large_dimension(rng):
    base, queries = small_integers(rng, 1031, 515), small_integers(rng, 65, 515)
    D, I = gknn.search(base, queries, 33, backend="cpu", distance="direct")
    assert_matches_oracle(D, I, base, queries, 33, "squared_l2")


def test_uint8_input_uses_the_byte_overload(rng):
    base = rng.integers(0, 256, (120, 16), dtype=np.uint8)
    queries = rng.integers(0, 256, (9, 16), dtype=np.uint8)
    D, I = gknn.search(base, queries, 6, backend="cpu")
    assert_matches_oracle(D, I, base, queries, 6, "squared_l2")
    D2, I2 = gknn.search(base.astype(np.float32), queries, 6, backend="cpu")  # mixed: converted to float32
    np.testing.assert_array_equal(I, I2)
    np.testing.assert_array_equal(D, D2)


def test_float64_strided_and_fortran_inputs_give_the_float32_result(rng):
    base, queries = small_integers(rng, 80, 12), small_integers(rng, 10, 12)
    want = gknn.search(base, queries, 5, backend="cpu")
    wide = np.zeros((80, 20), np.float32)
    wide[:, :12] = base
    for b in (base.astype(np.float64), np.asfortranarray(base), wide[:, :12], base.astype(np.int32),
              base.tolist()):
        got = gknn.search(b, queries, 5, backend="cpu")
        np.testing.assert_array_equal(got[1], want[1])
        np.testing.assert_array_equal(got[0], want[0])


def test_empty_queries_give_empty_results(rng):
    D, I = gknn.search(small_integers(rng, 10, 3), np.zeros((0, 3), np.float32), 4, backend="cpu")
    assert D.shape == I.shape == (0, 4)


def test_results_are_writable_arrays_that_own_their_memory(rng):
    D, I = gknn.search(small_integers(rng, 10, 3), small_integers(rng, 2, 3), 4, backend="cpu")
    D[0, 0] = -1.0  # the capsule-owned buffer is an ordinary writable array
    assert D.flags.c_contiguous and I.flags.c_contiguous


def test_identical_to_the_cpp_command_line_tool(rng, tmp_path):
    cli = os.environ.get("GKNN_CLI")
    if not cli:
        pytest.skip("GKNN_CLI is not set (CTest sets it to the built gknn tool)")
    base = rng.standard_normal((400, 24)).astype(np.float32)
    queries = rng.standard_normal((25, 24)).astype(np.float32)
    np.save(tmp_path / "base.npy", base)
    np.save(tmp_path / "queries.npy", queries)
    for metric, distance, select in [("squared_l2", "gemm", "heap"), ("l1", "direct", "quickselect"),
                                     ("cosine", "auto", "auto")]:
        subprocess.run([cli, "search", "--base", str(tmp_path / "base.npy"), "--query",
                        str(tmp_path / "queries.npy"), "-k", "13", "--metric", metric, "--backend", "cpu",
                        "--distance", distance, "--select", select, "--no-progress", "-o", str(tmp_path / "i.npy"),
                        "--distances-out", str(tmp_path / "d.npy")], check=True, capture_output=True)
        D, I = gknn.search(base, queries, 13, metric=metric, backend="cpu", distance=distance, select=select)
        np.testing.assert_array_equal(I, np.load(tmp_path / "i.npy"))
        np.testing.assert_array_equal(D, np.load(tmp_path / "d.npy"))
