"""``transformers`` classifiers (``input_ids``, ``attention_mask``) as networks of token ids.

A sequence classifier of the ``transformers`` library takes the ids and an attention
mask and returns an output object with ``logits``. Its mask arithmetic is imported only
on constants, so the texts of one length share one network: the module is traced with
that length's mask (ones on the text's tokens, zeros on the padding) held as a constant,
``logits`` as the output, attention in its eager form (the mask a finite minimum, not
``-inf``), and the network is kept for the next call while the weights are unchanged.
"""

from __future__ import annotations

import contextlib
import threading
import weakref
from collections.abc import Iterator
from typing import Any

import numpy as np

__all__ = ["is_transformers_classifier", "network_for_length"]

_cache: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()
_lock = threading.Lock()


def is_transformers_classifier(model: Any) -> bool:
    """Whether ``model`` is a ``transformers`` module taking ``input_ids`` and ``attention_mask``."""
    import inspect

    from xai_core.model.frameworks import is_torch_module

    if not is_torch_module(model) or getattr(model, "config", None) is None:
        return False
    try:
        params = inspect.signature(model.forward).parameters
    except (TypeError, ValueError):
        return False
    return "input_ids" in params and "attention_mask" in params


@contextlib.contextmanager
def _eager(model: Any) -> Iterator[None]:
    """Eager attention while tracing (restored after): its mask is finite."""
    configs = [
        m.config
        for m in model.modules()
        if hasattr(getattr(m, "config", None), "_attn_implementation")
    ]
    before = [c._attn_implementation for c in configs]
    try:
        for c in configs:
            c._attn_implementation = "eager"
        yield
    finally:
        for c, b in zip(configs, before):
            c._attn_implementation = b


def _wrapper(model: Any, mask: np.ndarray) -> Any:
    import torch

    class OnIds(torch.nn.Module):
        """The classifier's logits as a function of the ids, with a constant mask."""

        def __init__(self) -> None:
            super().__init__()
            self.model = model
            self.register_buffer("mask", torch.from_numpy(mask[None].astype(np.int64)))

        def forward(self, ids: Any) -> Any:
            out = self.model(input_ids=ids, attention_mask=self.mask.expand(ids.shape[0], -1))
            return out.logits if hasattr(out, "logits") else out[0]

    return OnIds().eval()


def _weights_key(model: Any) -> tuple:
    return tuple((t.data_ptr(), t._version) for t in model.parameters())


def network_for_length(
    model: Any, seq_len: int, n_tokens: int, example: np.ndarray, dtype: str
) -> Any:
    """The network of ``model`` for rows of ``seq_len`` ids whose first ``n_tokens`` are text.

    Parameters
    ----------
    model : transformers model
    seq_len, n_tokens : int
    example : ndarray of int64 of shape (n, seq_len)
        Rows it is traced and checked on.
    dtype : {"float32", "float64"}

    Returns
    -------
    xai_core.nn.Graph
    """
    from xai_core.importers.torch_import import from_torch

    key = (seq_len, n_tokens, dtype)
    weights = _weights_key(model)
    with _lock:
        nets = _cache.setdefault(model, {})
        hit = nets.get(key)
    if hit is not None and hit[0] == weights:
        return hit[1]
    mask = np.zeros(seq_len, dtype=np.int64)
    mask[:n_tokens] = 1
    labels = getattr(model.config, "id2label", None)
    names = [labels[i] for i in sorted(labels)] if isinstance(labels, dict) and labels else None
    with _eager(model):
        net = from_torch(_wrapper(model, mask), example, dtype=dtype, output_names=names)
    with _lock:
        nets[key] = (weights, net)
    return net
