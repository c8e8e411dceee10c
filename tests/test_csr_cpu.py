"""CPU CSR construction (gpipe/engine/compute/cpu_csr.py): the same rows as a sort would give."""

import numpy as np
from kernel_graphs import assert_build_csr_rows, assert_owner_pieces, build_csr_cases, host_rows, in_pieces

from gpipe.engine.compute import cpu


@build_csr_cases
def test_build_csr_rows_match_numpy(index_dtype, input_dtype, weighted, symmetric):
    def build(src, dst, w, n, index_dtype, symmetric, skip_loops):
        return cpu.build_csr(src, dst, w, n, index_dtype, symmetric=symmetric, skip_loops=skip_loops)

    assert_build_csr_rows(build, index_dtype, input_dtype, weighted, symmetric)


@build_csr_cases
def test_pieces_build_the_rows_of_the_whole(index_dtype, input_dtype, weighted, symmetric):
    assert_build_csr_rows(in_pieces(cpu.build_csr_pieces), index_dtype, input_dtype, weighted, symmetric)


def test_pieces_of_an_owner_have_global_sources():
    assert_owner_pieces(cpu.build_csr_pieces, np.asarray, np.asarray)


def test_pieces_keep_the_input_order_across_pieces():
    pieces = [(np.array([1, 0]), np.array([4, 3]), np.array([0.0, 1.0])),
              (np.array([1, 0, 1]), np.array([2, 1, 0]), np.array([2.0, 3.0, 4.0]))]
    indptr, indices, weights = cpu.build_csr_pieces(pieces, 5, np.int64)
    assert indices.tolist() == [3, 1, 4, 2, 0] and weights.tolist() == [1.0, 3.0, 0.0, 2.0, 4.0]


def test_rows_keep_the_input_order():
    src = np.array([1, 0, 1, 0, 1])
    dst = np.array([4, 3, 2, 1, 0])
    indptr, indices, weights = cpu.build_csr(src, dst, np.arange(5.0), 5, np.int64)
    assert indptr.tolist() == [0, 2, 5, 5, 5, 5]
    assert indices.tolist() == [3, 1, 4, 2, 0] and weights.tolist() == [1.0, 3.0, 0.0, 2.0, 4.0]


def test_owner_rows_and_empty_input():
    # A second owner's piece: local rows, global targets beyond n_local.
    indptr, indices, weights = cpu.build_csr(np.array([2, 0, 2, 1]), np.array([900, 5, 7, 900]),
                                             np.array([1.0, 2.0, 3.0, 4.0]), 4, np.int32)
    assert indptr.tolist() == [0, 1, 2, 4, 4]
    assert host_rows(indptr, indices, weights) == [[(5, 2.0)], [(900, 4.0)], [(7, 3.0), (900, 1.0)], []]
    indptr, indices, weights = cpu.build_csr(np.empty(0, np.int64), np.empty(0, np.int64), None, 3,
                                             np.int64, symmetric=True)
    assert indptr.tolist() == [0, 0, 0, 0] and indices.size == 0 and weights is None
