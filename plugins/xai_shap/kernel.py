"""Kernel SHAP, vectorised: coalition matrices drawn at once, batched model calls, one constrained solve.

The estimator is the one of shap's ``KernelExplainer`` (Lundberg & Lee, 2017): coalitions
``z`` are drawn with the Shapley kernel, the smallest coalition sizes (and their
complements) enumerated in full while the budget allows, the rest sampled in pairs
(``z`` and its complement), repeated draws adding weight instead of model calls; then
``phi`` minimises ``sum_k w_k (v(z_k) - v(0) - z_k . phi)^2`` subject to
``sum(phi) = f(x) - v(0)``. With a budget of ``2**M - 2`` coalitions every size is
enumerated and the result is the exact Shapley value.

What differs from shap's implementation is only how it is computed: shap builds each
coalition with a Python call per sample (``addsample``) and solves per row and output;
here the coalitions of a whole chunk of rows are drawn at once (independently per row,
as shap does; each subset by selection sampling, one pass per player over all draws),
the masked inputs of many (row, coalition) pairs against every background row are
selected bit for bit into one reused, cache-sized buffer and go to the model in one
call, and the equality-constrained least squares is solved for all rows and outputs at
once (its KKT system, batched). Features that equal every
background row (in all of a group's features) cannot change the output; they get
exactly 0, as in shap.
"""

from __future__ import annotations

import itertools
import math
import warnings
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from xai_core import XaiWarning
from xai_core.progress import LONG_WORK_UNITS, progress_bar

__all__ = [
    "MAX_CHUNK_ELEMENTS",
    "MAX_DESIGN_ELEMENTS",
    "auto_n_samples",
    "coalition_values",
    "shapley_kernel_design",
    "solve_constrained_wls",
    "varying_groups",
]

#: Input elements (rows x features) built for one model call: about 8,000 rows of 30
#: features, so the inputs and the model's activations stay in cache (larger calls measured
#: slower, for the model as much as for building its inputs).
MAX_CHUNK_ELEMENTS = 1 << 18
#: Elements of the batched KKT systems solved at once.
MAX_SOLVE_ELEMENTS = 1 << 24
#: Draws x players sampled at once (rows of the design are drawn in chunks of this size).
MAX_DESIGN_ELEMENTS = 1 << 24


def auto_n_samples(n_players: int) -> int:
    """shap's default budget: ``2 * M + 2048`` coalitions."""
    return 2 * n_players + 2048


def _size_weights(m: int) -> tuple[np.ndarray, int, int]:
    """Shapley-kernel probability of each coalition size 1..ceil((m-1)/2) (paired sizes doubled)."""
    n_sizes = math.ceil((m - 1) / 2)
    n_paired = (m - 1) // 2
    sizes = np.arange(1, n_sizes + 1, dtype=np.float64)
    weights = (m - 1) / (sizes * (m - sizes))
    weights[:n_paired] *= 2
    return weights / weights.sum(), n_sizes, n_paired


def _all_subsets(m: int, size: int) -> np.ndarray:
    """Every coalition of ``size`` of ``m`` players, as a bool matrix of shape (comb(m, size), m)."""
    count = math.comb(m, size)
    flat = np.fromiter(
        itertools.chain.from_iterable(itertools.combinations(range(m), size)),
        dtype=np.int64,
        count=count * size,
    )
    out = np.zeros((count, m), dtype=bool)
    out[np.repeat(np.arange(count), size), flat] = True
    return out


def _full_sizes(m: int, budget: int) -> tuple[np.ndarray, np.ndarray, int, int]:
    """The coalitions of the sizes the budget enumerates in full (smallest first, with complements).

    Returns
    -------
    coalitions : ndarray of bool of shape (n_full_coalitions, m)
    weights : ndarray of shape (n_full_coalitions,)
    n_full_sizes : int
    left : int
        The budget left for sampled coalitions.
    """
    size_w, n_sizes, n_paired = _size_weights(m)
    masks = [np.zeros((0, m), dtype=bool)]
    weights = [np.zeros(0)]
    left = budget
    remaining = size_w.copy()
    n_full = 0
    for size in range(1, n_sizes + 1):  # a loop over sizes; each size is built at once
        paired = size <= n_paired
        n_subsets = math.comb(m, size) * (2 if paired else 1)
        if left * remaining[size - 1] / n_subsets < 1.0 - 1e-8:
            break
        n_full += 1
        left -= n_subsets
        if remaining[size - 1] < 1.0:
            remaining /= 1.0 - remaining[size - 1]
        subsets = _all_subsets(m, size)
        block = np.concatenate([subsets, ~subsets]) if paired else subsets
        masks.append(block)
        weights.append(np.full(len(block), size_w[size - 1] / len(block)))
    return np.concatenate(masks), np.concatenate(weights), n_full, left


def _sampled(
    m: int,
    n_full: int,
    left: int,
    n_rows: int,
    rng: np.random.Generator | Sequence[np.random.Generator],
) -> tuple[np.ndarray, np.ndarray]:
    """``left`` sampled coalitions per row (see :func:`_draw`).

    ``left + 16`` draws per row usually fill the budget (most sizes come in pairs); the
    rows they do not fill (few features, many repeats) are drawn again with shap's
    allowance of ``4 * left`` draws: all rows from a shared generator, only those rows
    (continuing their own streams) with one generator per row.
    """
    coalitions, weights, filled = _draw(m, n_full, left, n_rows, rng, min(left + 16, 4 * left))
    if filled.all():
        return coalitions, weights
    if isinstance(rng, np.random.Generator):
        return _draw(m, n_full, left, n_rows, rng, 4 * left)[:2]
    redo = np.flatnonzero(~filled)
    again = _draw(m, n_full, left, len(redo), [rng[i] for i in redo], 4 * left)
    coalitions[redo], weights[redo] = again[0], again[1]
    return coalitions, weights


def _per_row(rng: Any, n_rows: int, draw: Any) -> np.ndarray:
    """``draw(generator, k)`` for all rows from a shared generator, or row by row from one each."""
    if isinstance(rng, np.random.Generator):
        return draw(rng, n_rows)
    return np.concatenate([draw(g, 1) for g in rng])


def _uniform_subsets(m: int, sizes: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    """A uniformly random subset of ``sizes[...]`` of ``m`` players for every draw.

    Selection sampling (Knuth's Algorithm S), vectorised over the draws: player ``j``
    joins with probability ``(players still needed) / (m - j)``, which gives every
    subset of the wanted size the same probability. One uniform per player and draw,
    and ``m`` passes over the draws instead of a sort of every draw's keys.

    Parameters
    ----------
    m : int
    sizes : ndarray of int of shape (n_rows, n_draws)
        Subset sizes, in [1, m - 1].

    Returns
    -------
    ndarray of bool of shape (n_rows, n_draws, m)
    """
    need = sizes.astype(np.float64)
    u = np.empty(sizes.shape)
    drawn = np.empty((m, *sizes.shape), dtype=bool)
    for j in range(m):  # a loop over players; each pass covers every draw of every row
        rng.random(out=u)
        u *= m - j
        np.less(u, need, out=drawn[j])
        need -= drawn[j]
    return np.ascontiguousarray(np.moveaxis(drawn, 0, -1))


def _draw(
    m: int,
    n_full: int,
    left: int,
    n_rows: int,
    rng: np.random.Generator | Sequence[np.random.Generator],
    n_draws: int,
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``left`` sampled coalitions per row, of the sizes not enumerated, and their weights.

    Sizes follow the Shapley kernel; a coalition of a paired size comes with its
    complement; a repeated draw adds 1 to its first occurrence's weight instead of a
    coalition. Rows whose ``n_draws`` draws give fewer coalitions are padded with empty
    coalitions of weight 0, and ``filled`` (bool of shape (n_rows,)) says which rows were
    not. Weights of a row sum to the kernel mass of the sampled sizes. ``rng``: one
    generator for all rows, or one per row.
    """
    size_w, _, n_paired = _size_weights(m)
    draw_w = size_w.copy()
    draw_w[:n_paired] /= 2  # each paired draw gives two coalitions
    draw_w = draw_w[n_full:] / draw_w[n_full:].sum()
    rows = np.arange(n_rows)[:, None]
    sizes = _per_row(rng, n_rows, lambda g, k: g.choice(len(draw_w), (k, n_draws), p=draw_w))
    sizes += n_full + 1
    if isinstance(rng, np.random.Generator):
        drawn = _uniform_subsets(m, sizes, rng)
    else:  # one generator per row: each row's subsets from its own stream
        drawn = np.concatenate(
            [_uniform_subsets(m, sizes[i : i + 1], g) for i, g in enumerate(rng)]
        )
    paired = sizes <= n_paired
    # per row: which draws are new, and the first occurrence each repeat adds weight to
    keys = _row_keys(drawn.reshape(-1, m)).reshape(n_rows, n_draws)
    by_key = np.argsort(keys, axis=1, kind="stable")
    sorted_keys = np.take_along_axis(keys, by_key, axis=1)
    starts = np.ones((n_rows, n_draws), dtype=bool)
    starts[:, 1:] = sorted_keys[:, 1:] != sorted_keys[:, :-1]
    group = np.empty((n_rows, n_draws), dtype=np.int64)
    np.put_along_axis(group, by_key, np.cumsum(starts, axis=1) - 1, axis=1)
    is_new = np.empty((n_rows, n_draws), dtype=bool)
    np.put_along_axis(is_new, by_key, starts, axis=1)
    used = np.cumsum(np.where(is_new, np.where(paired, 2, 1), 0), axis=1)
    reached = used >= left
    last = np.where(reached.any(axis=1), reached.argmax(axis=1), n_draws - 1)
    taken = np.arange(n_draws) <= last[:, None]
    counts = np.bincount((rows * n_draws + group)[taken], minlength=n_rows * n_draws).reshape(
        n_rows, n_draws
    )
    new = is_new & taken
    weight = np.take_along_axis(counts, group, axis=1).astype(np.float64)
    complement = new & paired
    over = used[np.arange(n_rows), last] > left  # the budget ran out between a pair
    complement[np.arange(n_rows), last] &= ~over
    # pack each row's coalitions: its new draws, then their complements
    n_new = new.sum(axis=1, keepdims=True)
    coalitions = np.zeros((n_rows, left, m), dtype=bool)
    weights = np.zeros((n_rows, left))
    for chosen, flip, offset in ((new, False, 0), (complement, True, n_new)):
        r, d = np.nonzero(chosen)
        slot = (np.cumsum(chosen, axis=1) - 1 + offset)[r, d]
        coalitions[r, slot] = drawn[r, d] ^ flip
        weights[r, slot] = weight[r, d]
    weights *= size_w[n_full:].sum() / weights.sum(axis=1, keepdims=True)
    return coalitions, weights, reached[:, -1]


def shapley_kernel_design(
    n_players: int,
    n_samples: int,
    rng: np.random.Generator | Sequence[np.random.Generator],
    n_rows: int = 1,
) -> tuple[np.ndarray, np.ndarray]:
    """Each row's coalitions and least-squares weights, as shap's KernelExplainer picks them.

    The sizes the budget covers are enumerated in full (the same for every row); the
    rest is sampled independently per row.

    Parameters
    ----------
    n_players : int
        ``M``, the number of features (or groups).
    n_samples : int
        Budget of distinct coalitions per row (the empty and full ones excluded); capped
        at ``2**M - 2``.
    rng : numpy.random.Generator or sequence of them
        One generator for all rows, or one per row (row ``i`` then draws from ``rng[i]``
        only, so its coalitions do not depend on the other rows).
    n_rows : int, default=1

    Returns
    -------
    coalitions : ndarray of bool of shape (n_rows, n_coalitions, n_players)
    weights : ndarray of float64 of shape (n_rows, n_coalitions)
        Each row's sum to 1.
    """
    m = int(n_players)
    if m < 2:
        return np.zeros((n_rows, 0, m), dtype=bool), np.zeros((n_rows, 0))
    budget = min(int(n_samples), 2**m - 2) if m <= 30 else int(n_samples)
    full, full_w, n_full, left = _full_sizes(m, budget)
    coalitions = np.broadcast_to(full, (n_rows, *full.shape))
    weights = np.broadcast_to(full_w, (n_rows, len(full_w)))
    if left > 0 and n_full < _size_weights(m)[1]:
        sampled, sampled_w = _sampled(m, n_full, left, n_rows, rng)
        coalitions = np.concatenate([coalitions, sampled], axis=1)
        weights = np.concatenate([weights, sampled_w], axis=1)
    return np.ascontiguousarray(coalitions), np.ascontiguousarray(weights)


def _row_keys(masks: np.ndarray) -> np.ndarray:
    """One sortable scalar per boolean row (its bits packed), for fast de-duplication."""
    packed = np.packbits(masks, axis=1)
    width = -(-packed.shape[1] // 8) * 8
    packed = np.pad(packed, ((0, 0), (0, width - packed.shape[1])))
    if width == 8:
        return packed.view(np.uint64).reshape(-1)
    return np.ascontiguousarray(packed).view(np.dtype((np.void, width))).reshape(-1)


def varying_groups(
    X: np.ndarray, background: np.ndarray, labels: np.ndarray, n_groups: int
) -> np.ndarray:
    """Which groups of each row differ from some background row in some feature.

    Parameters
    ----------
    X : ndarray of shape (n_samples, n_features)
    background : ndarray of shape (n_background, n_features)
    labels : ndarray of int of shape (n_features,)
        The group of each feature.
    n_groups : int

    Returns
    -------
    ndarray of bool of shape (n_samples, n_groups)
    """
    n, d = X.shape
    rows = max(1, MAX_CHUNK_ELEMENTS // max(1, len(background) * d))
    differs = np.empty((n, d), dtype=bool)
    for start in range(0, n, rows):  # chunks of rows, bounded memory
        block = X[start : start + rows]
        differs[start : start + rows] = (block[:, None, :] != background[None, :, :]).any(axis=1)
    if n_groups == d and np.array_equal(labels, np.arange(d)):
        return differs
    out = np.zeros((n, n_groups), dtype=np.int64)
    np.add.at(out.T, labels, differs.T)
    return out > 0


def coalition_values(
    predict: Callable[[np.ndarray], np.ndarray],
    X: np.ndarray,
    background: np.ndarray,
    coalitions: np.ndarray,
    labels: np.ndarray,
    outputs: np.ndarray,
    *,
    max_chunk_elements: int = MAX_CHUNK_ELEMENTS,
    progress: bool | None = None,
    dtype: np.dtype | type = np.float64,
) -> np.ndarray:
    """``v(S)``: the mean over background rows of the outputs with the features of ``S`` from ``x``.

    Parameters
    ----------
    predict : callable
        Maps an array of shape (n_rows, n_features) to outputs of shape (n_rows, n_outputs).
    X : ndarray of shape (n_samples, n_features)
    background : ndarray of shape (n_background, n_features)
    coalitions : ndarray of bool of shape (n_samples, n_coalitions, n_players)
        Each row's coalitions of players.
    labels : ndarray of int of shape (n_features,)
        The player of each feature.
    outputs : ndarray of int of shape (n_samples, n_kept)
        The outputs kept for each row.
    max_chunk_elements : int
        Input elements built per model call.
    progress : bool or None
        Progress bar; ``None`` shows it from 10 chunks on.
    dtype : numpy dtype, default=float64
        The dtype the masked inputs are built in (the one ``predict`` takes); they are
        written into one reused buffer.

    Returns
    -------
    ndarray of float64 of shape (n_samples, n_coalitions, n_kept)
    """
    n, d = X.shape
    k = coalitions.shape[1]
    nb = len(background)
    q = outputs.shape[1]
    ey = np.empty((n * k, q), dtype=np.float64)
    if n * k == 0:
        return ey.reshape(n, k, q)
    per_call = max(1, max_chunk_elements // (nb * d))
    n_chunks = math.ceil(n * k / per_call)
    flat = coalitions.reshape(n * k, -1)
    identity = flat.shape[1] == d and np.array_equal(labels, np.arange(d))
    # the masked inputs are selected bit for bit, background ^ ((background ^ x) & mask),
    # on the floats' bit patterns: exact, and three passes over a reused buffer laid out
    # (background row, pair, feature) so that every operand is contiguous
    bits = np.dtype(f"u{np.dtype(dtype).itemsize}")
    x_bits = np.ascontiguousarray(X, dtype=dtype).view(bits)
    bg_bits = np.ascontiguousarray(background, dtype=dtype).view(bits)[:, None, :]
    buffer = np.empty((nb, min(per_call, n * k), d), dtype=bits)
    with progress_bar(
        n_chunks,
        progress=progress,
        desc="Kernel SHAP",
        unit="batch",
        long=n_chunks >= LONG_WORK_UNITS,
    ) as bar:
        for start in range(
            0, n * k, per_call
        ):  # one model call per chunk of (row, coalition) pairs
            pairs = np.arange(start, min(start + per_call, n * k))
            r = pairs // k
            members = flat[pairs] if identity else flat[pairs][:, labels]
            mask = np.negative(members.view(np.uint8).astype(bits))  # all ones where from x
            inputs = buffer[:, : len(pairs)]
            np.bitwise_xor(x_bits[r][None], bg_bits, out=inputs)
            inputs &= mask[None]
            inputs ^= bg_bits
            out = predict(inputs.view(dtype).reshape(nb * len(pairs), d))
            out = out.reshape(nb, len(pairs), -1)
            kept = np.take_along_axis(out, outputs[r][None], axis=2)
            ey[pairs] = kept.mean(axis=0)
            bar.update(1)
    return ey.reshape(n, k, q)


def solve_constrained_wls(
    coalitions: np.ndarray,
    weights: np.ndarray,
    gains: np.ndarray,
    total: np.ndarray,
    varying: np.ndarray,
) -> np.ndarray:
    """Kernel SHAP's weighted least squares with the efficiency constraint, for all rows at once.

    Minimises ``sum_k w_ik (gains[i, k] - z_ik . phi_i)^2`` subject to
    ``sum(phi_i) = total[i]`` and ``phi_ij = 0`` where feature ``j`` does not vary for row
    ``i``, through the KKT system ``[[A_i, c_i], [c_i^T, 0]] [phi_i; lam] = [Z_i^T W_i
    gains_i; total_i]`` with ``A_i = Z_i^T W_i Z_i``.

    Parameters
    ----------
    coalitions : ndarray of bool of shape (n_samples, n_coalitions, n_players)
    weights : ndarray of shape (n_samples, n_coalitions)
    gains : ndarray of shape (n_samples, n_coalitions, n_outputs)
        ``v(z_k) - v(0)`` per row and output.
    total : ndarray of shape (n_samples, n_outputs)
        ``f(x) - v(0)``.
    varying : ndarray of bool of shape (n_samples, n_players)

    Returns
    -------
    ndarray of float64 of shape (n_samples, n_players, n_outputs)
    """
    n, m = varying.shape
    q = total.shape[1]
    k = coalitions.shape[1]
    phi = np.zeros((n, m, q))
    rows = max(1, MAX_SOLVE_ELEMENTS // ((m + 1) * (m + 1 + q) + k * m))
    singular = False
    for start in range(0, n, rows):  # chunks of rows, bounded memory
        sl = slice(start, min(start + rows, n))
        z = coalitions[sl].astype(np.float64)
        wz_t = (z * weights[sl][:, :, None]).transpose(0, 2, 1)
        gram = np.matmul(wz_t, z)
        v = varying[sl].astype(np.float64)
        none = ~varying[sl].any(axis=1)
        kkt = np.zeros((len(v), m + 1, m + 1))
        kkt[:, :m, :m] = gram * v[:, :, None] * v[:, None, :]
        diag = np.arange(m)
        kkt[:, diag, diag] += 1.0 - v
        kkt[:, :m, m] = v
        kkt[:, m, :m] = v
        kkt[none, m, m] = 1.0
        rhs = np.zeros((len(v), m + 1, q))
        rhs[:, :m] = np.matmul(wz_t, gains[sl]) * v[:, :, None]
        rhs[:, m] = np.where(none[:, None], 0.0, total[sl])
        try:
            sol = np.linalg.solve(kkt, rhs)
        except np.linalg.LinAlgError:
            singular = True
            sol = np.linalg.pinv(kkt) @ rhs
        phi[sl] = sol[:, :m]
    if singular:
        warnings.warn(
            "Kernel SHAP: the sampled coalitions do not determine every feature's value (singular "
            "least squares); a minimum-norm solution was used. Raise max_evals or group features.",
            XaiWarning,
            stacklevel=3,
        )
    return phi
