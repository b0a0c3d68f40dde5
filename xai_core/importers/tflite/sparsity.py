"""TFLite's sparse constant tensors, decoded to dense arrays as ``DENSIFY`` would.

A sparse tensor stores only its non-zero values, with ``SparsityParameters``: a traversal
order of its dimensions (the original ones, then any block dimensions), a block map (which
original dimension each block dimension splits) and one ``DimensionMetadata`` per traversed
dimension: ``DENSE`` (every index ``0..dense_size-1``) or ``SPARSE_CSR`` (the indices of
``array_indices[array_segments[p]:array_segments[p + 1]]`` under parent position ``p``).
This is TFLite's ``FormatConverter::Populate`` (``tensorflow/lite/kernels/internal/utils/
sparsity_format_converter.cc``), walked one level at a time for every path at once.

Every declared size is checked before anything is allocated from it: the dense sizes and
block sizes must multiply to the tensor's declared shape, the segments must rise and stay
inside the index arrays, every index must lie inside its dimension and the paths must
number exactly the values the buffer holds.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from xai_core.errors import ModelFormatError

__all__ = ["densify"]

_DENSE, _SPARSE_CSR = 0, 1
#: Largest dense array a sparse tensor may expand to (the flatbuffer format's own limit).
MAX_DENSE_BYTES = 2**31
_INDEX_VECTORS = {1: "Int32Vector", 2: "Uint16Vector", 3: "Uint8Vector"}


def _index_vector(kind: int, table: Any, fail) -> np.ndarray:
    import tflite

    name = _INDEX_VECTORS.get(int(kind))
    if name is None or table is None:
        raise fail(f"a SPARSE_CSR dimension stores its indices as type {kind}; expected 1..3.")
    vec = getattr(tflite, name)()
    vec.Init(table.Bytes, table.Pos)
    if vec.ValuesLength() == 0:
        return np.zeros(0, np.int64)
    return np.asarray(vec.ValuesAsNumpy(), dtype=np.int64)


def densify(
    sparsity: Any, values: np.ndarray, shape: tuple[int, ...], label: str, where: str
) -> np.ndarray:
    """The dense array of a sparse constant tensor.

    Parameters
    ----------
    sparsity : tflite.SparsityParameters
        The tensor's ``sparsity`` table.
    values : ndarray, shape (k,)
        The stored (non-zero) values, in traversal order.
    shape : tuple of int
        The tensor's declared (dense) shape.
    label, where : str
        The tensor and the file, for messages.

    Returns
    -------
    ndarray of values' dtype, shape ``shape``

    Raises
    ------
    ModelFormatError
        Sizes that do not multiply to ``shape``, segments or indices out of range, or a
        number of values other than the paths the metadata describes.
    """

    def fail(message: str) -> ModelFormatError:
        return ModelFormatError(f"{where}: the sparse {label}: {message}")

    rank = len(shape)
    order = (
        [int(d) for d in sparsity.TraversalOrderAsNumpy()]
        if sparsity.TraversalOrderLength()
        else []
    )
    block_map = [int(d) for d in sparsity.BlockMapAsNumpy()] if sparsity.BlockMapLength() else []
    levels = rank + len(block_map)
    if sorted(order) != list(range(levels)):
        raise fail(
            f"traversal order {order} is not a permutation of its {levels} dimensions "
            f"({rank} of shape {shape} and {len(block_map)} block dimensions)."
        )
    if sorted(order[:rank]) != list(range(rank)):
        raise fail(f"traversal order {order} does not list the {rank} dimensions first.")
    dense_bytes = values.dtype.itemsize
    for d in shape:
        dense_bytes *= d
    if dense_bytes > MAX_DENSE_BYTES:
        raise fail(
            f"its shape {shape} makes {dense_bytes:,} bytes dense, over the 2 GB a .tflite "
            "file can hold."
        )
    if sparsity.DimMetadataLength() != levels:
        raise fail(f"has {sparsity.DimMetadataLength()} dimension metadata; expected {levels}.")
    if any(not 0 <= b < rank for b in block_map) or len(set(block_map)) != len(block_map):
        raise fail(f"block map {block_map} does not name distinct dimensions of {shape}.")
    meta = [sparsity.DimMetadata(k) for k in range(levels)]
    # the size of each traversed dimension: a dense size, or (sparse) what the shape implies
    sizes = [0] * levels  # by dimension (original 0..rank-1, then blocks)
    for k, dim in enumerate(order):
        if meta[k].Format() == _DENSE:
            sizes[dim] = int(meta[k].DenseSize())
    block = {b: sizes[rank + j] for j, b in enumerate(block_map)}
    for j, b in enumerate(block_map):
        if block[b] < 1 or shape[b] % block[b]:
            raise fail(
                f"block dimension {rank + j} has size {block[b]}, which does not divide "
                f"dimension {b} of {shape} (a block dimension must be dense)."
            )
    for d in range(rank):
        whole = shape[d] // block.get(d, 1)
        k = order.index(d)
        if meta[k].Format() == _DENSE and sizes[d] != whole:
            raise fail(
                f"dimension {d} is dense with size {sizes[d]}; the shape {shape} makes it {whole}."
            )
        sizes[d] = whole
    n_values = int(values.shape[0])
    # walk the levels: one row per path, its parent position and its index at each level
    position = np.zeros(1, np.int64)
    indices = np.zeros((1, 0), np.int64)
    for k, dim in enumerate(order):
        m = meta[k]
        size = sizes[dim]
        if m.Format() == _DENSE:
            child = np.repeat(position * size, size) + np.tile(np.arange(size), len(position))
            idx = np.tile(np.arange(size), len(position))
            indices = np.repeat(indices, size, axis=0)
        elif m.Format() == _SPARSE_CSR:
            segments = _index_vector(m.ArraySegmentsType(), m.ArraySegments(), fail)
            cols = _index_vector(m.ArrayIndicesType(), m.ArrayIndices(), fail)
            top = int(position.max()) if len(position) else -1
            if len(segments) < top + 2:
                raise fail(
                    f"dimension {dim} has {len(segments)} segment offsets for parent positions "
                    f"up to {top}."
                )
            if np.any(np.diff(segments) < 0) or segments[0] < 0 or segments[-1] > len(cols):
                raise fail(
                    f"dimension {dim}'s segment offsets do not rise from 0 to at most "
                    f"{len(cols)} (its number of indices)."
                )
            if np.any((cols < 0) | (cols >= size)):
                raise fail(f"dimension {dim} holds an index outside 0..{size - 1}.")
            start, stop = segments[position], segments[position + 1]
            counts = stop - start
            total = int(counts.sum())
            if total > n_values:
                raise fail(f"its indices describe more than the {n_values:,} values stored.")
            parent = np.repeat(np.arange(len(position)), counts)
            offsets = np.arange(total) - np.repeat(np.cumsum(counts) - counts, counts)
            child = np.repeat(start, counts) + offsets
            idx = cols[child]
            indices = indices[parent]
        else:
            raise fail(f"dimension {dim} has format {m.Format()}; expected DENSE or SPARSE_CSR.")
        position = child
        indices = np.concatenate([indices, idx[:, None]], axis=1)
    if len(indices) != n_values:
        raise fail(
            f"its metadata describes {len(indices):,} values but the buffer holds {n_values:,}."
        )
    coords = [None] * rank
    for k, dim in enumerate(order[:rank]):
        coords[dim] = indices[:, k]
    for k in range(rank, levels):
        b = block_map[order[k] - rank]
        coords[b] = coords[b] * block[b] + indices[:, k]
    dense = np.zeros(shape, values.dtype)
    dense[tuple(coords)] = values
    return dense
