"""Incidence matrices whose values are one shared ``1.0`` (issue #30), and the products that
skip the values.

A big market's label log hands out its incidence matrix with :func:`shared_ones` as the values:
a read-only zero-stride view of a single ``1.0``, so the 8 bytes a label of a values array are
not held. The EM kernels (:mod:`marketsim.aggregation._numeric`) multiply such a matrix through
the C extension ``_native.ones_products``, which adds the terms in the order of scipy's own
kernels, so the results are bit for bit those of the same matrix with an array of ``1.0``;
anything else that reads the matrix through scipy gets a contiguous copy of the values for
that one operation. Without the extension the log keeps an array of ``1.0`` and scipy's
kernels run (:data:`NATIVE`).
"""

from __future__ import annotations

from typing import Any

import numpy as np
from scipy.sparse import _sparsetools  # the compiled mat-vecs scipy itself calls

try:  # the package's C extension, built by setup.py; optional (see NATIVE)
    from marketsim.aggregation._native.ones_products import row_sums, scatter_sums

    #: Whether the pattern products are compiled: only then are values shared.
    NATIVE = True
except ImportError:  # not built: logs keep an array of 1.0 and scipy multiplies
    NATIVE = False

_ONE = np.ones(1)
_ONE.flags.writeable = False


def shared_ones(nnz: int) -> np.ndarray:
    """``nnz`` values of ``1.0`` held as one (a read-only zero-stride view)."""
    return np.broadcast_to(_ONE, (nnz,))


def is_shared_ones(mat: Any) -> bool:
    """Whether ``mat`` is a CSR matrix whose values are :func:`shared_ones` (and the compiled
    pattern products are there to multiply it)."""
    if not NATIVE or getattr(mat, "format", None) != "csr":
        return False
    data = mat.data
    return bool(data.ndim == 1 and data.size > 0 and data.strides[0] == 0 and data[0] == 1.0)


def csr_rows(mat: Any, a: int, b: int, x: np.ndarray, out: np.ndarray) -> None:
    """``out += (mat @ x)[a:b]`` (``out`` contiguous, of ``b - a`` rows): scipy's
    ``csr_matvec`` on rows ``a:b``, or the pattern kernel for shared values (same bits)."""
    if is_shared_ones(mat):
        row_sums(mat.indptr[a:b + 1], mat.indices, x, out)
    else:
        _sparsetools.csr_matvec(b - a, mat.shape[1], mat.indptr[a:b + 1], mat.indices,
                                mat.data, x, out)


def transposed_rows(mat: Any, x: np.ndarray, out: np.ndarray) -> None:
    """``out += mat.T @ x`` for a CSR ``mat`` and one vector ``x``: scipy's ``csc_matvec``
    on the CSR arrays, or the pattern kernel for shared values (same bits)."""
    n_rows, n_cols = mat.shape
    if is_shared_ones(mat):
        scatter_sums(mat.indptr, mat.indices, x, out)
    else:
        _sparsetools.csc_matvec(n_cols, n_rows, mat.indptr, mat.indices, mat.data, x, out)


def matvec(mat: Any, x: np.ndarray) -> np.ndarray:
    """``mat @ x`` for one contiguous float64 vector ``x``: the compiled kernel scipy's
    ``mat @ x`` calls, called directly on a float64 CSR ``mat`` (scipy's dispatch costs more
    than the product on a design curve's few thousand labels)."""
    if not _plain_csr(mat, x) or x.ndim != 1 or x.shape[0] != mat.shape[1]:
        return np.asarray(mat @ x)
    out = np.zeros(mat.shape[0])
    csr_rows(mat, 0, mat.shape[0], np.ascontiguousarray(x), out)
    return out


def transposed_matvecs(mat: Any, x: np.ndarray) -> np.ndarray:
    """``mat.T @ x`` for a C-contiguous ``(rows, K)`` (or 1-D) float64 ``x``, as scipy's
    ``csc_matvecs`` adds it (called directly on a float64 CSR ``mat``'s arrays: building the
    transposed matrix object costs more than a small product)."""
    if not _plain_csr(mat, x) or x.shape[0] != mat.shape[0] or x.ndim not in (1, 2):
        return np.asarray(mat.T @ x)
    k = 1 if x.ndim == 1 else x.shape[1]
    out = np.zeros((mat.shape[1], k) if x.ndim == 2 else mat.shape[1])
    x = np.ascontiguousarray(x)
    if is_shared_ones(mat):
        scatter_sums(mat.indptr, mat.indices, x, out, k)
    elif x.ndim == 1:
        transposed_rows(mat, x, out)
    else:
        _sparsetools.csc_matvecs(mat.shape[1], mat.shape[0], k, mat.indptr, mat.indices,
                                 mat.data, x.ravel(), out.ravel())
    return out


def _plain_csr(mat: Any, x: np.ndarray) -> bool:
    """Whether ``mat`` is a float64 CSR matrix and ``x`` a float64 array: what the compiled
    kernels take directly."""
    return bool(getattr(mat, "format", None) == "csr" and mat.data.dtype == np.float64
                and x.dtype == np.float64)
