"""Exact products of int8 matrices through float32 BLAS.

A product of two int8 values has magnitude at most ``128 * 128 = 2**14``, so every partial
sum of a K-term dot product is an integer of magnitude at most ``K * 2**14``: for
``K <= EXACT_K = 1024`` at most ``2**24``, where float32 holds every integer. A float32
GEMM of such a slice is exact in any summation order BLAS picks (fused multiply-adds
included), and the slices' sums are exact in float64 (below ``2**53`` for any K a
model has). float32 BLAS runs at twice float64's rate on half its bytes.
"""

from __future__ import annotations

import numpy as np

__all__ = ["EXACT_K", "exact_int8_product"]

#: Largest K slice whose int8 partial sums stay exact in fp32: 1024 * 128 * 128 = 2**24.
EXACT_K = 1024


def exact_int8_product(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """The exact ``a @ b`` of int8 matrices.

    Parameters
    ----------
    a : ndarray of int8, shape (M, K)
    b : ndarray of int8, shape (K, N)

    Returns
    -------
    ndarray of float64, shape (M, N)
        Integers, exact.
    """
    k = a.shape[1]
    if k <= EXACT_K:
        return (a.astype(np.float32) @ b.astype(np.float32)).astype(np.float64)
    out = np.zeros((a.shape[0], b.shape[1]), np.float64)
    for k0 in range(0, k, EXACT_K):
        out += a[:, k0 : k0 + EXACT_K].astype(np.float32) @ b[k0 : k0 + EXACT_K].astype(np.float32)
    return out
