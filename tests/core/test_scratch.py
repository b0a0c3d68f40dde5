"""Reused convolution memory: a block is handed out again only once nothing made from it is alive."""

from __future__ import annotations

import threading

import numpy as np

from xai_core.kernels import scratch


def test_live_arrays_are_never_handed_out_again():
    """While an array (or a view of it) lives, new arrays get other memory; after, it is reused."""
    scratch.release()
    a = scratch.empty((512, 256), np.float32)
    a.fill(1.0)
    view = a[::2].T
    del a
    b = scratch.empty((512, 256), np.float32)
    assert not np.shares_memory(b, view)
    assert np.all(view == 1.0)
    b.fill(2.0)
    assert np.all(view == 1.0)
    blocks = {id(view.base), id(b.base)}  # (ids: a reference would keep them busy)
    del view, b
    c = scratch.empty((256, 256), np.float64)  # the same bytes, another dtype and shape
    assert id(c.base) in blocks  # an idle block, reused
    assert c.dtype == np.float64 and c.flags.c_contiguous
    z = scratch.zeros((300, 300), np.float32)
    assert not z.any()


def test_small_arrays_and_threads_have_their_own_memory():
    """Small arrays come from numpy; another thread never gets this thread's live blocks."""
    scratch.release()
    small = scratch.empty((3, 4), np.float64)
    assert small.base is None
    mine = scratch.empty((1 << 16,), np.float64)
    theirs = []
    thread = threading.Thread(target=lambda: theirs.append(scratch.empty((1 << 16,), np.float64)))
    thread.start()
    thread.join()
    assert not np.shares_memory(mine, theirs[0])


def test_pooled_arrays_start_on_cache_lines():
    """Every pooled array, of any dtype and shape, starts on an ALIGNMENT boundary."""
    scratch.release()
    arrays = [
        scratch.empty(shape, dtype)
        for shape, dtype in [
            ((1 << 16,), np.float32),
            ((333, 777), np.float64),
            ((5, 70001), np.int8),
        ]
    ]
    arrays.append(scratch.empty((1 << 16,), np.float32))  # an idle block again, after `del`
    for a in arrays:
        assert a.ctypes.data % scratch.ALIGNMENT == 0
        assert a.flags.c_contiguous
