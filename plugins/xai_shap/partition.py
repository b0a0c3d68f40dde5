"""Partition SHAP: Owen values over a binary hierarchy, as shap's ``PartitionExplainer`` computes them.

For one row, the walk starts at the root of the hierarchy with the coalition ``m00``
(nothing shown, value ``f00``: the fully masked input) and ``f11`` (everything shown,
``f(x)``). Expanding a node evaluates its two children shown on top of ``m00`` (``f10``:
the left child, ``f01``: the right) and queues four halves of the node's weight: each
child in the context of the other child hidden (``m00``) and shown (``m01``/``m10``);
with ``fixed_context`` 0 or 1 only one context, at the full weight, the interaction
``f11 - f10 - f01 + f00`` kept on the node. A leaf reached gets ``(f11 - f00) * weight``.
The queue is ordered by ``-max |f_shown - f_hidden| * weight`` over every output, ties
broken by a normal draw per queued node (shap draws them from numpy's global generator;
here row ``r`` draws from ``RandomState(seed_r)``, so seeding shap's generator with the
same seed before the row gives the same order). Nodes are taken from the queue five
internal nodes (ten model inputs) at a time, as shap's default batch; when the budget
``max_evals - 2`` masked inputs is spent, every node still queued keeps
``(f11 - f00) * weight``. Finally each node's value is spread over its leaves in
proportion to their counts (shap's ``lower_credit``), so the values add up:
``sum(values) = f(x) - f00``.

What differs from shap is only how it is computed: every row of a chunk walks its own
queue in lockstep with the others, the queues are arrays (one sort per step over all
rows, no Python loop per node or per masked sample), the masked inputs of a step of all
rows go to the model in one call, and nothing is compiled first. Masks are kept in the
hierarchy's depth-first leaf order, where every node is one range of leaves.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from xai_core import ValidationError
from xai_core.progress import progress_bar
from xai_shap.hierarchy import Hierarchy

__all__ = [
    "BATCH_NODES",
    "DEFAULT_MAX_EVALS",
    "MAX_BANK_ELEMENTS",
    "check_partition",
    "owen_values",
    "row_bytes",
]

#: shap's default budget per row of its Partition explainer.
DEFAULT_MAX_EVALS = 500
#: Internal nodes expanded per step of a row's queue (shap's default batch of 10 masks).
BATCH_NODES = 5
#: Bytes of masks and node values kept per chunk of rows (about rows x max_evals x leaves).
MAX_BANK_ELEMENTS = 1 << 26


def check_partition(max_evals: int | None) -> int:
    """The budget per row (``max_evals``, default 500 as shap); raise below 4."""
    budget = DEFAULT_MAX_EVALS if max_evals is None else int(max_evals)
    if budget < 4:
        raise ValidationError(
            "algorithm='partition' needs max_evals >= 4 per row (f(x), the fully masked "
            f"input and one split of the root); got max_evals={max_evals}."
        )
    return budget


def row_bytes(max_evals: int, n_players: int, n_outputs: int, n_explained: int) -> int:
    """Bytes one row holds during its walk: its masks, every output of its masked inputs,
    and its explained outputs' node values (twice, in the credit pass) and leaf values."""
    m = max(n_players, 1)
    return (max_evals + 4) * (m + 8 * max(n_outputs, 1)) + 24 * m * max(n_explained, 1)


Evaluate = Callable[[np.ndarray, np.ndarray], np.ndarray]


def owen_values(
    evaluate: Evaluate,
    n_rows: int,
    tree: Hierarchy,
    *,
    max_evals: int,
    seeds: np.ndarray,
    fixed_context: int | None = None,
    progress: bool | None = None,
    n_outputs: int = 1,
    outputs: np.ndarray | None = None,
) -> tuple[np.ndarray, np.ndarray]:
    """Owen values of the explained outputs for ``n_rows`` rows over ``tree``.

    Parameters
    ----------
    evaluate : callable (rows, masks) -> ndarray of float64 of shape (k, n_outputs)
        The value of coalition ``masks[j]`` (bool of shape (k, M), True: shown, leaves in
        their own order) for row ``rows[j]`` (int of shape (k,)).
    n_rows : int
    tree : Hierarchy
        Over the ``M`` players.
    max_evals : int
        Budget per row, as shap's: ``max_evals - 2`` masked inputs besides ``f00`` and ``f11``.
    seeds : ndarray of uint32 of shape (n_rows,)
        The tie-breaking draws of row ``r`` come from ``RandomState(seeds[r])``.
    fixed_context : {None, 0, 1}
    progress : bool or None
    n_outputs : int, default=1
        The model's outputs, to size the chunks of rows (each row holds its masks and the
        outputs of its masked inputs).
    outputs : ndarray of int of shape (n_rows, k) or None
        The outputs explained per row (None: all ``n_outputs``). The queue is still
        ordered over every output, as shap's explainer called without ``outputs=``, so the
        values of an output do not depend on which others are explained; only the
        explained outputs' values are kept per node and spread over the leaves.

    Returns
    -------
    values : ndarray of float64 of shape (n_rows, M, k)
        ``k = n_outputs`` when ``outputs`` is None; column ``j`` of row ``r`` is output
        ``outputs[r, j]``.
    base : ndarray of float64 of shape (n_rows, n_outputs)
        ``f00`` per row, every output.
    """
    m = tree.n_leaves
    n_out = max(n_outputs, 1)
    if outputs is None:
        outputs = np.broadcast_to(np.arange(n_out), (n_rows, n_out))
    outputs = np.asarray(outputs, dtype=np.int64)
    k = outputs.shape[1]
    rows_per_chunk = max(1, MAX_BANK_ELEMENTS // row_bytes(max_evals, m, n_out, k))
    values, bases = [], []
    with progress_bar(n_rows, progress=progress, desc="Partition SHAP", unit="row") as bar:
        for start in range(0, n_rows, rows_per_chunk):
            rows = np.arange(start, min(start + rows_per_chunk, n_rows))
            v, b = _walk(evaluate, rows, tree, max_evals, seeds[rows], fixed_context, outputs[rows])
            values.append(v)
            bases.append(b)
            bar.update(len(rows))
    return np.concatenate(values), np.concatenate(bases)


def _walk(
    evaluate: Evaluate,
    rows: np.ndarray,
    tree: Hierarchy,
    max_evals: int,
    seeds: np.ndarray,
    fixed_context: int | None,
    outputs: np.ndarray,
) -> tuple[np.ndarray, np.ndarray]:
    """The walk of a chunk of rows, in lockstep; see :func:`owen_values`.

    A queued node refers to the outputs of its two coalitions (``f00``, ``f11``) by their
    slots in ``f_bank`` (every output of every masked input of the row): the priority
    reads every output, the credits only the explained ones (``outputs``).
    """
    m, n = tree.n_leaves, len(rows)
    budget = max_evals - 2
    leaf_pos = tree.start[:m]  # position of each leaf in the depth-first order
    pos = np.arange(m)
    ends = np.zeros((n, 2, m), dtype=bool)
    ends[:, 1] = True
    f_ends = evaluate(np.repeat(rows, 2), ends.reshape(2 * n, m)).reshape(n, 2, -1)
    f00 = f_ends[:, 0]
    n_out = f00.shape[1]
    k_out = outputs.shape[1]
    per_node = 4 if fixed_context is None else 2
    max_expand = budget // 2 + 2
    # tie-breaking draws, as shap's np.random.randn() per queued node, in push order
    ties = np.stack([np.random.RandomState(int(s)).randn(per_node * max_expand) for s in seeds])
    bank = np.zeros((n, 2 * max_expand + 1, m), dtype=bool)  # masks, depth-first order
    # the outputs of mask j of the bank in slot j (slot 0: nothing shown), f(x) in the last
    full = 2 * max_expand + 1
    f_bank = np.zeros((n, full + 1, n_out))
    f_bank[:, 0], f_bank[:, full] = f_ends[:, 0], f_ends[:, 1]
    cap = n * (per_node * max_expand + 1)
    q_row = np.zeros(cap, dtype=np.int64)
    q_node = np.zeros(cap, dtype=np.int64)
    q_mask = np.zeros(cap, dtype=np.int64)
    q_lo = np.zeros(cap, dtype=np.int64)  # f_bank slot of the node's f00
    q_hi = np.zeros(cap, dtype=np.int64)  # f_bank slot of the node's f11
    q_w = np.zeros(cap)
    q_prio = np.zeros(cap)
    q_tie = np.zeros(cap)
    alive = np.zeros(cap, dtype=bool)
    q_row[:n] = np.arange(n)
    q_node[:n] = 2 * m - 2
    q_hi[:n] = full
    q_w[:n] = 1.0
    alive[:n] = True
    size = n
    evals = np.zeros(n, dtype=np.int64)
    next_mask = np.ones(n, dtype=np.int64)
    next_tie = np.zeros(n, dtype=np.int64)
    dv = np.zeros((n, 2 * m - 1, k_out))  # the explained outputs' value of every node

    def explained(r: np.ndarray, slot: np.ndarray) -> np.ndarray:
        """The explained outputs of bank slots ``slot`` of rows ``r``, shape (len(r), k)."""
        return f_bank[r[:, None], slot[:, None], outputs[r]]

    def credit(idx: np.ndarray) -> None:
        """Nodes leaving the queue without expansion keep ``(f11 - f00) * weight``, in queue order."""
        r = q_row[idx]
        gain = explained(r, q_hi[idx]) - explained(r, q_lo[idx])
        np.add.at(dv, (r, q_node[idx]), gain * q_w[idx][:, None])

    while True:
        live = np.flatnonzero(alive[:size])
        if not len(live):
            break
        order = np.lexsort((q_tie[live], q_prio[live], q_row[live]))
        live = live[order]
        r = q_row[live]
        spent = evals[r] >= budget  # rows whose budget is spent: everything queued stays
        if spent.any():
            credit(live[spent])
            alive[live[spent]] = False
            live, r = live[~spent], r[~spent]
            if not len(live):
                break
        inner = q_node[live] >= m
        before = np.cumsum(inner) - inner
        first = np.flatnonzero(np.r_[True, r[1:] != r[:-1]])
        before -= np.repeat(before[first], np.diff(np.r_[first, len(r)]))
        room = np.minimum(BATCH_NODES, (budget - evals[r] + 1) // 2)
        popped = before < room
        alive[live[popped]] = False
        credit(live[popped & ~inner])
        e = live[popped & inner]
        if not len(e):
            continue
        re, node, w = q_row[e], q_node[e], q_w[e]
        lo, hi = tree.left[node], tree.right[node]
        first = np.flatnonzero(np.r_[True, re[1:] != re[:-1]])
        counts = np.diff(np.r_[first, len(re)])
        rank = np.arange(len(re)) - np.repeat(first, counts)
        m00 = bank[re, q_mask[e]]
        m10 = m00 | (
            (pos >= tree.start[lo][:, None]) & (pos < (tree.start[lo] + tree.size[lo])[:, None])
        )
        m01 = m00 | (
            (pos >= tree.start[hi][:, None]) & (pos < (tree.start[hi] + tree.size[hi])[:, None])
        )
        k = len(e)
        f = evaluate(np.concatenate([rows[re], rows[re]]), np.concatenate([m10, m01])[:, leaf_pos])
        np.add.at(evals, re, 2)
        i10 = next_mask[re] + 2 * rank
        bank[re, i10] = m10
        bank[re, i10 + 1] = m01
        f_bank[re, i10] = f[:k]
        f_bank[re, i10 + 1] = f[k:]
        np.add.at(next_mask, re, 2)
        s00, s11 = q_lo[e], q_hi[e]
        new_w = w / 2 if fixed_context is None else w
        if fixed_context is not None:
            interaction = (
                explained(re, s11) - explained(re, i10) - explained(re, i10 + 1)
                + explained(re, s00)
            ) * w[:, None]  # fmt: skip
            np.add.at(dv, (re, node), interaction if fixed_context == 0 else -interaction)
        kids = []  # (mask index, f00 slot, f11 slot, node), in shap's push order
        if fixed_context in (None, 0):
            kids += [(q_mask[e], s00, i10, lo), (q_mask[e], s00, i10 + 1, hi)]
        if fixed_context in (None, 1):
            kids += [(i10 + 1, i10 + 1, s11, lo), (i10, i10, s11, hi)]
        draw = next_tie[re] + per_node * rank
        for j, (mask, lo_s, hi_s, child) in enumerate(kids):
            sl = slice(size + j * k, size + (j + 1) * k)
            q_row[sl], q_node[sl], q_mask[sl], q_w[sl] = re, child, mask, new_w
            q_lo[sl], q_hi[sl] = lo_s, hi_s
            # ranked over every output, as shap's explainer without outputs=
            gap = np.abs(f_bank[re, hi_s] - f_bank[re, lo_s])
            q_prio[sl] = -np.max(gap, axis=1) * new_w
            q_tie[sl] = ties[re, draw + j]
            alive[sl] = True
        # the queue is read in (row, priority, draw) order; slots only need to be unique
        size += len(kids) * k
        np.add.at(next_tie, re, per_node)
    return _lower_credit(dv, tree), f00


def _lower_credit(dv: np.ndarray, tree: Hierarchy) -> np.ndarray:
    """Each node's value spread over its leaves by their counts, top down, as shap's ``lower_credit``.

    One vectorised step per level of the tree (:attr:`Hierarchy.levels`), with shap's
    arithmetic per node: a child gets ``(value + passed) * size_child / size_node``.

    Parameters
    ----------
    dv : ndarray of shape (n, 2 M - 1, k)
        Only the explained outputs.

    Returns
    -------
    ndarray of shape (n, M, k)
    """
    m = tree.n_leaves
    total = dv.copy()  # a node's own value plus what its ancestors passed down
    for inner in tree.levels:
        lo, hi = tree.left[inner], tree.right[inner]
        here = total[:, inner]
        group = tree.size[inner][None, :, None]
        total[:, lo] += here * tree.size[lo][None, :, None] / group
        total[:, hi] += here * tree.size[hi][None, :, None] / group
    return total[:, :m]
