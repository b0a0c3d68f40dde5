"""Reused convolution memory: a block is handed out again only once nothing made from it is alive."""

from __future__ import annotations

import threading

import numpy as np

from xai_core.nn import scratch


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
    addresses = {view.base.__array_interface__["data"][0], b.base.__array_interface__["data"][0]}
    del view, b
    c = scratch.empty((256, 256), np.float64)  # the same bytes, another dtype and shape
    assert c.__array_interface__["data"][0] in addresses  # an idle block, reused
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
