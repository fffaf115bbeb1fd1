"""A label incidence matrix whose values are one shared ``1.0`` (issue #30): the EM kernels
multiply its pattern in C without the values, and give scipy's bits on the same matrix with
an array of ``1.0`` (every sum adds its terms in scipy's order)."""

from __future__ import annotations

import numpy as np
import pytest
import scipy.sparse as sp

from marketsim.aggregation import _numeric
from marketsim.aggregation._numeric import (
    column_products,
    log_odds_posterior,
    log_posterior,
    transposed_product,
    transposed_products,
)
from marketsim.aggregation._ones import is_shared_ones, shared_ones

#: The C extension (built by setup.py where a compiler is; without it nothing is shared).
native = pytest.importorskip("marketsim.aggregation._native.ones_products")


def _pair(rng: np.random.Generator, n: int, m: int, dtype: type) -> tuple[sp.csr_matrix, ...]:
    """A random 0/1 CSR matrix with an array of 1.0, and the same with shared values."""
    dense = rng.random((n, m)) < 0.3
    plain = sp.csr_matrix(dense.astype(np.float64))
    plain.indices, plain.indptr = plain.indices.astype(dtype), plain.indptr.astype(dtype)
    shared = sp.csr_matrix((shared_ones(plain.nnz), plain.indices, plain.indptr),
                           shape=plain.shape, copy=False)
    return plain, shared


def _bits(a: np.ndarray) -> bytes:
    return np.ascontiguousarray(a).tobytes()


@pytest.mark.parametrize("dtype", [np.int32, np.int64])
@pytest.mark.parametrize("threads", [1, 3])
def test_shared_values_give_scipys_bits(dtype: type, threads: int,
                                        monkeypatch: pytest.MonkeyPatch) -> None:
    rng = np.random.default_rng(3)
    plain, shared = _pair(rng, 700, 90, dtype)
    assert is_shared_ones(shared) and not is_shared_ones(plain)
    assert shared.data.strides == (0,)  # no values array
    monkeypatch.setattr(_numeric, "CHUNK_ROWS", 64)  # chunks and thread blocks at odd places
    x = rng.normal(size=(90, 3)) * 1e3  # magnitudes where the order of additions shows
    y = rng.normal(size=(700, 3))
    odds = rng.normal(size=90) * 50
    for got, want in [
        (column_products(shared, x, threads), column_products(plain, x, threads)),
        (log_posterior(shared, x, np.log([0.2, 0.3, 0.5]), threads)[0],
         log_posterior(plain, x, np.log([0.2, 0.3, 0.5]), threads)[0]),
        (log_odds_posterior(shared, odds, 0.4, threads)[0],
         log_odds_posterior(plain, odds, 0.4, threads)[0]),
        (transposed_products(shared, y, threads), transposed_products(plain, y, threads)),
        (transposed_product(shared, y[:, 0]), transposed_product(plain, y[:, 0])),
    ]:
        assert got.shape == want.shape and _bits(got) == _bits(want)
    # and those are scipy's own products
    assert _bits(column_products(shared, x)) == _bits(np.stack(
        [plain @ np.ascontiguousarray(x[:, c]) for c in range(3)], axis=1))
    assert _bits(transposed_products(shared, y)) == _bits(plain.T @ y)
    lik = log_odds_posterior(shared, odds, 0.4)[1], log_odds_posterior(plain, odds, 0.4)[1]
    assert lik[0] == lik[1]


def test_the_log_odds_chunks_do_not_change_a_bit(monkeypatch: pytest.MonkeyPatch) -> None:
    rng = np.random.default_rng(4)
    plain, _ = _pair(rng, 500, 40, np.int32)
    odds = rng.normal(size=40) * 20
    whole = log_odds_posterior(plain, odds, -0.3)
    monkeypatch.setattr(_numeric, "CHUNK_ROWS", 7)
    chunked = log_odds_posterior(plain, odds, -0.3)
    assert _bits(whole[0]) == _bits(chunked[0]) and whole[1] == chunked[1]


def test_other_readers_see_an_ordinary_matrix() -> None:
    rng = np.random.default_rng(5)
    plain, shared = _pair(rng, 50, 20, np.int32)
    assert (shared != plain).nnz == 0
    assert np.array_equal(shared.sum(axis=0), plain.sum(axis=0))
    assert np.array_equal((shared.T @ shared).toarray(), (plain.T @ plain).toarray())


def test_the_kernels_refuse_indices_out_of_range() -> None:
    row_sums, scatter_sums = native.row_sums, native.scatter_sums
    indptr, indices = np.array([0, 2], dtype=np.int32), np.array([0, 5], dtype=np.int32)
    with pytest.raises(ValueError, match="out of range"):
        row_sums(indptr, indices, np.ones(3), np.zeros(1))
    with pytest.raises(ValueError, match="out of range"):
        scatter_sums(indptr, indices, np.ones(1), np.zeros(3))
    with pytest.raises(ValueError, match="row pointers"):
        row_sums(np.array([0, 3], dtype=np.int32), indices, np.ones(9), np.zeros(1))
    with pytest.raises(ValueError, match="int32 or int64"):
        row_sums(indptr, indices.astype(np.int64), np.ones(9), np.zeros(1))
