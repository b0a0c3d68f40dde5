"""Word embeddings: a network's embedding table and the words of its rows.

``project(model, layer=..., vocabulary=...)`` projects the table of an embedding layer
(one row per token id) with the words as labels. The table comes from

- a native network (``xai.nn``, or a model imported as one): its
  :class:`~xai_core.nn.Embedding` nodes, named as the network names them;
- a torch module: its ``torch.nn.Embedding`` submodules, named by their path
  (``"embeddings.word_embeddings"``); a ``transformers`` model's default is its input
  embeddings (``get_input_embeddings()``);
- a Keras model: its ``Embedding`` layers, by layer name.

``layer`` is a name, an int (the position among the model's embedding layers, in the
order above: ``0`` is the first) or None (the only embedding layer, or a ``transformers``
model's input embeddings). The vocabulary is a list of words (row i is word i), a dict
word -> id, or a ``tokenizers`` / ``transformers`` tokenizer (its vocabulary).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

import xai_core as xai
from xai_core import CapabilityError, ShapeError, UnknownNameError, ValidationError

__all__ = ["embedding_tables", "is_embedding_model", "table_of", "vocabulary_words"]


def _native_tables(net: Any) -> list[tuple[str, Any]]:
    from xai_core.nn.embedding import Embedding

    return [
        (n.name, lambda layer=n.layer: np.asarray(layer.weight))
        for n in net.nodes
        if isinstance(n.layer, Embedding)
    ]


def _torch_tables(module: Any) -> list[tuple[str, Any]]:
    import torch

    return [
        (name, lambda m=m: m.weight.detach().cpu().numpy())
        for name, m in module.named_modules()
        if isinstance(m, torch.nn.Embedding)
    ]


def _keras_tables(model: Any) -> list[tuple[str, Any]]:
    return [
        (layer.name, lambda layer=layer: np.asarray(layer.get_weights()[0]))
        for layer in getattr(model, "layers", ())
        if type(layer).__name__ == "Embedding" and hasattr(layer, "get_weights")
    ]


def embedding_tables(model: Any) -> list[tuple[str, Any]]:
    """``(name, read)`` per embedding layer of ``model``; ``read()`` returns its table.

    Raises
    ------
    CapabilityError
        ``model`` is none of a native network, a torch module or a Keras model.
    """
    from xai_core.model.frameworks import is_torch_module

    if isinstance(model, xai.ModelRunner):
        model = model.model
    if getattr(model, "nodes", None) is not None:
        return _native_tables(model)
    if is_torch_module(model):
        return _torch_tables(model)
    if hasattr(model, "layers") and hasattr(model, "get_weights"):
        return _keras_tables(model)
    raise CapabilityError(
        "the embedding table is read from a native network (xai.nn, or an imported model), "
        f"a torch module or a Keras model; got {type(model).__name__}."
    )


def is_embedding_model(obj: Any) -> bool:
    """Whether ``obj`` is a model (not array-like) whose embedding table could be read."""
    if hasattr(obj, "__array__") or isinstance(obj, (list, tuple)):
        return False
    try:
        embedding_tables(obj)
    except CapabilityError:
        return False
    return True


def _transformers_input(model: Any, tables: list[tuple[str, Any]]) -> str | None:
    """The name of a ``transformers`` model's input embeddings among ``tables``, if it has them."""
    get = getattr(model, "get_input_embeddings", None)
    if get is None or getattr(model, "config", None) is None:
        return None
    try:
        target = get()
    except (NotImplementedError, AttributeError):
        return None
    for name, m in model.named_modules():
        if m is target and any(n == name for n, _ in tables):
            return name
    return None


def table_of(model: Any, layer: int | str | None) -> tuple[np.ndarray, str]:
    """The table of ``model``'s embedding layer ``layer`` and that layer's name.

    Returns
    -------
    (ndarray of shape (vocab_size, dim), str)

    Raises
    ------
    CapabilityError
        The model has no embedding layer, or several and ``layer`` is None.
    UnknownNameError
        ``layer`` names no embedding layer (the message lists them).
    ValidationError
        ``layer`` is an int out of range, or neither a name nor an int.
    """
    if isinstance(model, xai.ModelRunner):
        model = model.model
    tables = embedding_tables(model)
    names = [n for n, _ in tables]
    if not tables:
        raise CapabilityError(
            f"the model ({type(model).__name__}) has no Embedding layer: project(model, "
            "vocabulary=...) shows an embedding table; for another layer's activations pass "
            "inputs: project(model, X, layer=...)."
        )
    if layer is None:
        default = _transformers_input(model, tables)
        if default is not None:
            layer = default
        elif len(tables) > 1:
            raise CapabilityError(
                f"the model has {len(tables)} Embedding layers ({', '.join(names)}); pass "
                "layer= (a name, or an index among them)."
            )
        else:
            layer = 0
    if isinstance(layer, (int, np.integer)) and not isinstance(layer, bool):
        if not -len(tables) <= int(layer) < len(tables):
            raise ValidationError(
                f"layer={int(layer)} is out of range: the model has {len(tables)} Embedding "
                f"layer(s) ({', '.join(names)}); an int indexes them."
            )
        name, read = tables[int(layer)]
    elif isinstance(layer, str):
        found = [t for t in tables if t[0] == layer]
        if not found:
            raise UnknownNameError("Embedding layer", layer, names)
        name, read = found[0]
    else:
        raise ValidationError(
            f"layer must be an Embedding layer's name or index; got {type(layer).__name__}."
        )
    table = np.asarray(read())
    if table.ndim != 2:
        raise ShapeError(
            f"Embedding layer {name!r} has a table of shape {table.shape}; expected "
            "(vocab_size, dim)."
        )
    return table, name


def _tokenizer_vocab(vocabulary: Any) -> Mapping[str, int] | None:
    """A ``tokenizers`` / ``transformers`` tokenizer's vocabulary (added tokens included)."""
    module = type(vocabulary).__module__
    if module.startswith("tokenizers"):
        return vocabulary.get_vocab(with_added_tokens=True)
    if hasattr(vocabulary, "convert_ids_to_tokens") and hasattr(vocabulary, "get_vocab"):
        return vocabulary.get_vocab()
    return None


def vocabulary_words(vocabulary: Any, n: int) -> np.ndarray:
    """The word of each of the ``n`` table rows.

    Parameters
    ----------
    vocabulary : sequence of str, mapping of str to int, or a tokenizer
        A sequence gives row i the word i; a mapping (or a tokenizer's vocabulary) gives
        each id its word, ids covering ``0 .. n - 1`` once each.
    n : int
        Rows of the table.

    Returns
    -------
    ndarray of shape (n,) of object (str)

    Raises
    ------
    ShapeError
        The vocabulary's size is not ``n`` (both sizes named).
    ValidationError
        A mapping's ids are not each of ``0 .. n - 1`` once, or ``vocabulary`` is of no
        accepted kind.
    """
    vocab = _tokenizer_vocab(vocabulary)
    kind = "tokenizer's vocabulary" if vocab is not None else "vocabulary"
    if vocab is None and isinstance(vocabulary, Mapping):
        vocab = vocabulary
    if vocab is not None:
        if len(vocab) != n:
            raise ShapeError(
                f"the {kind} has {len(vocab)} words; the embedding table has {n} rows: they "
                "must be the same size (one word per row)."
            )
        words = list(vocab)
        try:
            ids = np.asarray([int(vocab[w]) for w in words], dtype=np.int64)
        except (TypeError, ValueError) as exc:
            raise ValidationError(f"the {kind} must map words to int ids: {exc}") from None
        seen = np.zeros(n, dtype=np.int64)
        inside = (ids >= 0) & (ids < n)
        np.add.at(seen, ids[inside], 1)
        if not inside.all() or (seen != 1).any():
            bad = ids[~inside][:3].tolist() or np.flatnonzero(seen != 1)[:3].tolist()
            raise ValidationError(
                f"the {kind}'s ids must be each of 0 .. {n - 1} once (one word per table "
                f"row); these are not: {bad}."
            )
        out = np.empty(n, dtype=object)
        out[ids] = [str(w) for w in words]
        return out
    if isinstance(vocabulary, (str, bytes)) or not isinstance(vocabulary, Sequence | np.ndarray):
        raise ValidationError(
            "vocabulary must be a list of words, a dict word -> id, or a tokenizers / "
            f"transformers tokenizer; got {type(vocabulary).__name__}."
        )
    if len(vocabulary) != n:
        raise ShapeError(
            f"the vocabulary has {len(vocabulary)} words; the embedding table has {n} rows: "
            "they must be the same size (one word per row)."
        )
    return np.array(["" if w is None else str(w) for w in vocabulary], dtype=object)
