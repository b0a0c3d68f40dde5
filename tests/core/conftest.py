"""Fixtures shared by the core's tests."""

from __future__ import annotations

import concurrent.futures as cf
import multiprocessing

import pytest

from xai_core.attribution import parallel


@pytest.fixture(scope="session")
def process_pool():
    """Two worker processes, started as ``explain(executor="processes")`` starts them."""
    context = multiprocessing.get_context(parallel.START_METHOD)
    with cf.ProcessPoolExecutor(2, mp_context=context) as pool:
        yield pool
