"""Forms of weight tensors made once per explanation instead of once per call.

A convolution's products read its weight in another layout than the layer keeps (each
tap's (channels, filters) matrix, :func:`~xai_core.kernels.conv_taps.conv2d_taps`). Made on
every call, that is a copy of every weight per forward and per backward pass: for
resnet18, 47 MB per pass. Within
:func:`weights_fixed` (which :func:`xai_core.explain` enters around each method, whose
weights do not change while it runs), :func:`derived` keeps each form, keyed by the weight
array's identity and the form's name; outside it, every call makes the form anew, so
training, which changes weights in place between calls, always reads them fresh.

The forms are kept per thread (a thread that did not enter :func:`weights_fixed` makes
its own) with a weak reference to the weight array: a form dies with its array, so a
temporary array (a weight cast to another dtype for one call) leaves nothing behind, and
an identity reused by a new array never finds the old form. Leaving the outermost
:func:`weights_fixed` drops them all. A network trained in place by another thread while
it is explained would be read with the weights its convolutions first saw.
"""

from __future__ import annotations

import threading
import weakref
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

import numpy as np

__all__ = ["derived", "weights_fixed"]


class _Local(threading.local):
    def __init__(self) -> None:
        self.forms: dict[tuple[int, str], tuple[weakref.ref, Any]] | None = None


_local = _Local()


@contextmanager
def weights_fixed() -> Iterator[None]:
    """A scope in which no weight array is changed: :func:`derived` forms are kept in it.

    A nested scope starts its own forms and gives the outer ones back when it ends.
    """
    outer = _local.forms
    _local.forms = {}
    try:
        yield
    finally:
        _local.forms = outer


def derived(weight: np.ndarray, form: str, make: Callable[[np.ndarray], Any]) -> Any:
    """``make(weight)``, made once per :func:`weights_fixed` scope for this array and ``form``.

    Parameters
    ----------
    weight : ndarray
        A weight tensor (the array object itself: its identity is the key).
    form : str
        What ``make`` computes (``"taps"``, ``"bf16"``); one array may have several forms.
    make : callable
        ``weight -> form``; its result must not be written to by the caller.
    """
    forms = _local.forms
    if forms is None:
        return make(weight)
    key = (id(weight), form)
    kept = forms.get(key)
    if kept is not None and kept[0]() is weight:
        return kept[1]
    value = make(weight)

    def forget(ref: weakref.ref) -> None:  # the array died: its form goes with it
        if forms.get(key, (None,))[0] is ref:
            del forms[key]

    forms[key] = (weakref.ref(weight, forget), value)
    return value
