"""The model of a perturbation method on texts: called on token ids or on strings.

Perturbation methods (LIME, SHAP's Partition explainer) change the texts and call the
model on the changed texts. :func:`text_model` gives them one object for the two kinds
of model ``xai.explain(model, texts, tokenizer=...)`` takes:

- a **string model**: a callable ``list[str] -> array of shape (n_texts, n_outputs)``
  (probabilities, scores), called on changed strings; the tokenizer only names the
  tokens and words;
- a **network** reading token ids (a torch module starting with ``nn.Embedding``, a
  native network, an ONNX or Keras model, a ``transformers`` sequence classifier): the
  texts are tokenized and padded as the gradient methods do
  (:func:`xai_core.text.explain_text`) and the network is called on changed ids, or on
  changed strings tokenized again.

:func:`token_explanation` builds the explanation with the token meta the gradient
methods give (``meta["tokens"]``, ``meta["mask"]``, ``meta["texts"]``), so
``e.plot.text()``, ``_repr_html_`` and ``to_shap()`` work alike.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from xai_core.attribution.explanation import Explanation
from xai_core.errors import ShapeError, ValidationError
from xai_core.text.tokenize import Encoded, TextTokenizer

__all__ = ["TextModel", "is_string_model", "text_model", "token_explanation"]


def is_string_model(model: Any) -> bool:
    """Whether ``model`` is a plain callable (of strings), not a network or model file."""
    from xai_core.model.base import Model
    from xai_core.model.frameworks import is_keras_model, is_torch_module
    from xai_core.model.runner import ModelRunner

    if isinstance(model, (str, bytes, Model, ModelRunner)) or not callable(model):
        return False
    if is_torch_module(model) or is_keras_model(model):
        return False
    return getattr(model, "nodes", None) is None and not hasattr(model, "predict")


@dataclass
class TextModel:
    """A model and the tokenized texts it explains.

    Attributes
    ----------
    encoded : Encoded
        The texts, padded to ``encoded.ids.shape[1]`` tokens.
    tokenizer : TextTokenizer
    strings : bool
        Whether the model takes strings (a string model) rather than ids.
    """

    encoded: Encoded
    tokenizer: TextTokenizer
    strings: bool
    _on_strings: Callable[[list[str]], np.ndarray]
    _on_ids: Callable[[np.ndarray, np.ndarray], np.ndarray] | None
    output_names: Any = None

    def predict_strings(self, texts: Sequence[str]) -> np.ndarray:
        """Outputs of shape (n_texts, n_outputs) on ``texts`` (any strings, even empty)."""
        return self._on_strings([str(t) for t in texts])

    def predict_ids(self, ids: np.ndarray, mask: np.ndarray) -> np.ndarray:
        """Outputs of shape (n, n_outputs) on token ids of shape (n, seq_len) and their
        attention mask (True at text tokens); a network only."""
        if self._on_ids is None:
            raise ValidationError("a string model is called on strings, not token ids.")
        return self._on_ids(ids, mask)


def _outputs(out: Any, n: int, what: str) -> np.ndarray:
    arr = np.asarray(out, dtype=np.float64)
    if arr.ndim == 1:
        arr = arr[:, None]
    if arr.ndim != 2 or len(arr) != n:
        raise ShapeError(
            f"{what} must return an array of shape (n_texts, n_outputs), here ({n}, k); got "
            f"shape {arr.shape}."
        )
    if not np.isfinite(arr).all():
        rows = np.flatnonzero(~np.isfinite(arr).all(axis=1))
        raise ValidationError(f"{what} returned NaN or infinity for rows {rows[:5].tolist()}.")
    return arr


def text_model(
    model: Any,
    texts: Any,
    tokenizer: Any,
    *,
    backend: Any = "cpu",
    max_length: int | None = None,
    truncation: bool = False,
    pad_id: int | None = None,
    batch_size: int = 4096,
    output_names: Any = None,
) -> TextModel:
    """``model`` and ``texts`` ready for a perturbation method.

    Parameters
    ----------
    model : callable list[str] -> ndarray, or a network reading token ids
        See the module docstring.
    texts : str or sequence of str
        Non-empty texts (:func:`~xai_core.text.check_texts`).
    tokenizer : tokenizers.Tokenizer, transformers tokenizer, callable or TextTokenizer
    max_length, truncation, pad_id : as :func:`xai_core.text.explain_text` takes them.
    batch_size : int, default=4096
        Rows per call of a network.

    Returns
    -------
    TextModel
    """
    from xai_core.text.explain import _model_length, _torch_limit
    from xai_core.text.transformers_models import is_transformers_classifier
    from xai_core.validation import check_int

    if tokenizer is None:
        raise ValidationError(
            "tokenizer= is needed: a tokenizers.Tokenizer, a transformers tokenizer or a "
            "callable str -> list[int] (it names the tokens the values are given to)."
        )
    tok = TextTokenizer(tokenizer, pad_id=pad_id)
    if max_length is not None:
        max_length = check_int(max_length, "max_length", 1)
    if is_string_model(model):
        enc = tok.encode(texts, max_length, truncation=truncation)

        def on_strings(strings: list[str]) -> np.ndarray:
            return _outputs(model(strings), len(strings), "the model")

        return TextModel(enc, tok, True, on_strings, None, output_names)
    length = _model_length(model)
    enc = tok.encode(texts, max_length or length, truncation=truncation)
    limit = _torch_limit(model) if length is None else None
    if limit is not None and enc.ids.shape[1] > limit:
        enc = tok.encode(texts, limit, truncation=truncation)
    L = enc.ids.shape[1]
    if is_transformers_classifier(model):
        on_ids = _transformers_call(model, batch_size)
        names = output_names
    else:
        from xai_core.importers.direct import import_model
        from xai_core.model.runner import ModelRunner
        from xai_core.nn.embedding import check_token_ids
        from xai_core.plugin.resolve import get_backend
        from xai_core.text.attribute import TextInputs, embedding_node

        net = import_model(model, enc.ids, output_names=output_names)
        seq = _model_length(net)
        if seq is not None and seq != L:
            raise ValidationError(
                f"the model takes {seq} tokens per text; the texts were padded to {L}: pass "
                f"max_length={seq}."
            )
        _, layer = embedding_node(net)
        tok.check_fits(layer)
        check_token_ids(enc.ids, layer.vocab_size, "the texts' token ids")
        runner = ModelRunner(net, get_backend(backend), batch_size=batch_size)
        names = net.output_names
        inputs = TextInputs.of(net) if len(getattr(net, "inputs", ()) or ()) > 1 else None

        def on_ids(ids: np.ndarray, mask: np.ndarray) -> np.ndarray:
            check_token_ids(ids, layer.vocab_size, "the perturbed token ids")
            ids = np.asarray(ids).astype(runner.input_dtype)
            if inputs is None:
                return _outputs(runner.predict_validated(ids), len(ids), "the network")
            others = inputs.values(np.asarray(mask, bool))  # each copy its text's mask
            feeds = {inputs.ids: ids, **{k: v.astype(ids.dtype) for k, v in others.items()}}
            out = net.predict_outputs(feeds, runner.backend, batch_size=batch_size)
            return _outputs(out[net.outputs[0]], len(ids), "the network")

    def on_strings(strings: list[str]) -> np.ndarray:
        if not strings:
            return np.zeros((0, 0))
        safe = [s if s.strip() else " " for s in strings]
        parts = tok._encode(safe)
        ids = np.full((len(safe), L), enc.pad_id, dtype=np.int64)
        mask = np.zeros((len(safe), L), dtype=bool)
        for i, p in enumerate(parts):
            row = p[0]
            if len(row) > L:  # a text grown by its mask tokens: keep the first and a final one
                row = [*row[: L - 1], row[-1]]
            ids[i, : len(row)] = row
            mask[i, : len(row)] = True
        return on_ids(ids, mask)

    return TextModel(enc, tok, False, on_strings, on_ids, names)


def _transformers_call(
    model: Any, batch_size: int
) -> Callable[[np.ndarray, np.ndarray], np.ndarray]:
    """A ``transformers`` classifier called in torch on ids and their attention mask."""
    import torch

    def call(ids: np.ndarray, mask: np.ndarray) -> np.ndarray:
        outs = []
        with torch.no_grad():
            for start in range(0, len(ids), batch_size):
                part = slice(start, start + batch_size)
                res = model(
                    input_ids=torch.as_tensor(ids[part], dtype=torch.int64),
                    attention_mask=torch.as_tensor(mask[part], dtype=torch.int64),
                )
                outs.append(res.logits.double().numpy())
        return _outputs(np.concatenate(outs), len(ids), "the transformers model")

    return call


def token_explanation(
    values: np.ndarray,
    tm: TextModel,
    *,
    target: np.ndarray,
    base_values: np.ndarray,
    method: str,
    meta: dict[str, Any],
    words: bool,
    backend: str = "cpu",
) -> Explanation:
    """An explanation over the tokens (or, ``words=True``, the words) of ``tm``'s texts.

    Parameters
    ----------
    values : ndarray of float64 of shape (n_texts, seq_len) or (n_texts, max_words)
        Zero at padding.
    words : bool
        ``values`` are per word (``meta["merge"] = "words"``, tokens the words' text).

    Returns
    -------
    Explanation
        As :func:`xai_core.text.explain_text`'s.
    """
    enc = tm.encoded
    n = len(values)
    meta = {**meta, "texts": enc.texts}
    if words:
        W = values.shape[1]
        mask = np.arange(W)[None] <= enc.words.max(axis=1)[:, None]
        tokens = np.full((n, W), "", dtype=object)
        for i, row in enumerate(enc.word_text):
            tokens[i, : len(row)] = row
        data = np.where(mask, np.arange(W)[None], -1)
        meta.update(tokens=tokens, mask=mask, merge="words")
        names = (
            tuple(t or "[pad]" for t in tokens[0])
            if n == 1
            else tuple(f"word {i}" for i in range(W))
        )
    else:
        L = values.shape[1]
        meta.update(tokens=enc.tokens, mask=enc.mask)
        data = enc.ids
        names = (
            tuple(t or "[pad]" for t in enc.tokens[0])
            if n == 1
            else tuple(f"token {i}" for i in range(L))
        )
    return Explanation(
        values=values,
        base_values=base_values,
        target=target,
        data=data,
        feature_names=names,
        output_names=tm.output_names,
        method=method,
        backend=backend,
        meta=meta,
    )
