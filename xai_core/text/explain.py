"""``xai.explain(model, texts, tokenizer=...)``: texts tokenized, explained at the embedding.

The texts become one batch of token ids (:class:`~xai_core.text.TextTokenizer`), padded
on the right with the pad id to the model's sequence length (a native network's
``input_shape``; for a torch module, ``max_length`` or the longest text, the length it is
traced at). The model is imported as :func:`xai_core.explain` imports it, the ids are
checked against its :class:`~xai_core.nn.Embedding` (whole, in the vocabulary), and the
gradient methods of :mod:`xai_core.text.attribute` attribute each token.
"""

from __future__ import annotations

import time
from typing import Any

import numpy as np

from xai_core.attribution.blas import blas_threads as limit_blas
from xai_core.attribution.explanation import Explanation
from xai_core.errors import CapabilityError, ValidationError
from xai_core.nn.embedding import check_token_ids
from xai_core.text.attribute import TEXT_METHODS, attribute, embedding_node
from xai_core.text.tokenize import Encoded, TextTokenizer
from xai_core.text.transformers_models import is_transformers_classifier
from xai_core.validation import check_int

__all__ = ["encode_ids", "explain_text", "is_texts", "merge_words", "reads_ids"]


def is_texts(X: Any) -> bool:
    """Whether ``X`` is a string or a list or tuple of strings."""
    return isinstance(X, str) or (
        isinstance(X, (list, tuple)) and len(X) > 0 and all(isinstance(t, str) for t in X)
    )


def reads_ids(model: Any) -> bool:
    """Whether ``model`` is a native network whose input is read by an Embedding."""
    try:
        embedding_node(model)
    except CapabilityError:
        return False
    return True


def encode_ids(ids: Any, pad_id: int = 0) -> Encoded:
    """Token ids given as they are: an integer array of shape (n_texts, seq_len).

    Positions holding ``pad_id`` are padding; tokens are the ids written out.
    """
    arr = np.asarray(ids)
    if arr.dtype.kind not in "iu":
        raise ValidationError(
            f"X holds token ids for the model's Embedding: it must be an integer array; got "
            f"dtype {arr.dtype} (float ids are refused: a fraction is no token)."
        )
    if arr.ndim != 2:
        raise ValidationError(
            f"token ids must have shape (n_texts, seq_len); got an array of shape {arr.shape}."
        )
    arr = arr.astype(np.int64)
    mask = arr != pad_id
    tokens = np.where(mask, arr.astype(str).astype(object), "").astype(object)
    L = arr.shape[1]
    words = np.where(mask, np.arange(L)[None], -1)
    word_text = [list(tokens[i]) for i in range(len(arr))]
    return Encoded(arr, mask, tokens, words, word_text, int(pad_id), ())


def _torch_limit(model: Any) -> int | None:
    from xai_core.model.frameworks import is_torch_module

    if not is_torch_module(model):
        return None
    from xai_core.importers.torch_import import max_positions

    return max_positions(model)


def _model_length(model: Any) -> int | None:
    shape = getattr(model, "input_shape", None)
    if getattr(model, "nodes", None) is not None and shape is not None and len(shape) == 1:
        return int(shape[0])
    return None


def explain_text(
    model: Any,
    texts: Any,
    *,
    tokenizer: Any = None,
    method: str = "ig",
    backend: Any = "cpu",
    target: Any = None,
    max_length: int | None = None,
    truncation: bool = False,
    baseline_token: str | int | None = None,
    pad_id: int | None = None,
    merge: str | None = None,
    steps: int = 50,
    integration: str = "gausslegendre",
    samples: int = 25,
    stdev: float = 0.1,
    seed: int | None = 0,
    internal_batch_size: int | None = None,
    batch_size: int = 4096,
    output_names: Any = None,
    blas_threads: int | None = 1,
) -> Explanation:
    """Attribute ``model``'s output ``target`` on each text to its tokens.

    Parameters
    ----------
    model : Model, torch.nn.Module, model file...
        As :func:`xai_core.explain` takes it; once imported, a native network whose input
        is token ids of shape (seq_len,) read by one :class:`~xai_core.nn.Embedding`.
    texts : str or sequence of str, or ndarray of int of shape (n_texts, seq_len)
        Non-empty texts; or token ids (then ``tokenizer=None``; ``pad_id``, default 0,
        marks the padding).
    tokenizer : tokenizers.Tokenizer, transformers tokenizer, callable, TextTokenizer or None
        A callable maps one string to a list of int ids.
    method : {"ig", "saliency", "gradient_x_input", "smoothgrad"}, default="ig"
        Aliases: ``integrated_gradients``, ``input_x_gradient``.
    target : int or array-like of shape (n_texts,), optional
        Output per text; default the predicted class.
    max_length : int, optional
        Tokens per row. Default: a native network's sequence length, else the longest
        text's (a ``transformers`` module's ``config.max_position_embeddings`` is the
        most it may be). A text with more tokens is refused, naming it and both lengths, unless
        ``truncation=True`` (its first tokens kept, and a final special token).
    baseline_token : str or int, optional
        The token (or id) the ``ig`` baseline puts at every position of a text, e.g.
        ``"[MASK]"``; default the pad token. Padding stays padding.
    pad_id : int, optional
        The padding id; default the tokenizer's pad token (0 for a callable).
    merge : {None, "words"}, default=None
        ``"words"``: sum the attributions of the pieces of each word (``play ##ing``, or
        the tokenizer's word ids) into one per word.
    steps, integration : ``ig``'s quadrature (Captum's ``n_steps`` and ``method``).
    samples, stdev, seed : ``smoothgrad``'s noisy copies, noise level and seed.
    internal_batch_size : int, optional
        Path points (or noisy copies) per backward pass; default ``batch_size``.
    batch_size : int, default=4096
    output_names : sequence of str, optional
    blas_threads : int or None, default=1
        BLAS threads during the computation (:mod:`xai_core.attribution.blas`).

    Returns
    -------
    Explanation
        ``values`` of shape (n_texts, seq_len) (or (n_texts, max_words) merged), zero at
        padding; ``data`` the ids (merged: the word index); ``meta["tokens"]`` an object
        array of shape (n_texts, seq_len) of token strings (``""`` at padding),
        ``meta["mask"]`` True at the texts' own tokens, ``meta["texts"]``,
        ``meta["prediction"]`` the predicted class per text, ``meta["counters"]`` what the
        backend counted (``inference``: the prediction pass; ``explanation``), and per method
        ``output``, ``base_values``, ``convergence_delta`` (``ig``). ``feature_names`` are
        the tokens of a single text, else the positions (``"token 0"``...).
    """
    from xai_core.attribution.explainer import resolve_target
    from xai_core.importers.direct import import_model
    from xai_core.model.runner import ModelRunner
    from xai_core.plugin.resolve import get_backend

    if method not in TEXT_METHODS:
        from xai_core.errors import UnknownNameError

        raise UnknownNameError("method", method, sorted(TEXT_METHODS))
    name = TEXT_METHODS[method]
    if merge not in (None, "words"):
        raise ValidationError(f"merge must be None or 'words'; got {merge!r}.")
    steps = check_int(steps, "steps", 1)
    samples = check_int(samples, "samples", 1)
    length = _model_length(model)
    if max_length is not None:
        max_length = check_int(max_length, "max_length", 1)
        if length is not None and max_length != length:
            raise ValidationError(
                f"max_length must be the model's sequence length {length}; got {max_length}."
            )
    tok = None
    if tokenizer is None:
        enc = encode_ids(texts, 0 if pad_id is None else int(pad_id))
    else:
        tok = TextTokenizer(tokenizer, pad_id=pad_id)
        enc = tok.encode(texts, max_length or length, truncation=truncation)
        limit = _torch_limit(model) if length is None else None
        if limit is not None and enc.ids.shape[1] > limit:  # named per text, or truncated
            enc = tok.encode(texts, limit, truncation=truncation)
    be = get_backend(backend)
    if is_transformers_classifier(model):  # one network per text length (the mask a constant)
        from xai_core.text.transformers_models import network_for_length

        dtype = "float64" if getattr(be, "dtype", None) == np.float64 else "float32"
        lengths = enc.mask.sum(axis=1)
        groups = [
            (
                network_for_length(model, enc.ids.shape[1], int(k), enc.ids[lengths == k], dtype),
                np.flatnonzero(lengths == k),
            )
            for k in np.unique(lengths)
        ]
    else:
        net = import_model(model, enc.ids, output_names=output_names)
        groups = _mask_groups(net, enc)
    the_model = groups[0][0]
    value, layer = embedding_node(the_model)
    seq = _model_length(the_model)
    if seq is not None and seq != enc.ids.shape[1]:
        raise ValidationError(
            f"the model takes {seq} tokens per text; the texts were padded to "
            f"{enc.ids.shape[1]}: pass max_length={seq}."
        )
    if tok is not None:
        tok.check_fits(layer)
    check_token_ids(enc.ids, layer.vocab_size, "the texts' token ids")
    if baseline_token is None:
        base_id = enc.pad_id
    elif tok is None:
        base_id = check_int(baseline_token, "baseline_token", 0)
    else:
        base_id = tok.token_id(baseline_token)
    check_token_ids(np.array([base_id]), layer.vocab_size, "baseline_token")
    baseline = np.where(enc.mask, base_id, enc.pad_id)
    n, L = enc.ids.shape
    if target is not None:
        from xai_core.validation import check_target

        target = check_target(target, n, 2**62)  # the range is checked per network below
    options = {
        "steps": steps,
        "integration": integration,
        "baseline_token": baseline_token,
        "merge": merge,
        "truncation": truncation,
    }
    if name == "smoothgrad":
        options.update(samples=samples, stdev=stdev, seed=seed)
    elif name != "ig":
        options = {"merge": merge, "truncation": truncation}
    start = time.perf_counter()
    values = np.zeros((n, L))
    targets = np.zeros(n, np.int64)
    predictions = np.zeros(n, np.int64)
    counters: dict[str, dict[str, float]] = {"inference": {}, "explanation": {}}
    arrays: dict[str, np.ndarray] = {}
    meta: dict[str, Any] = {}
    for net, rows in groups:
        runner = ModelRunner(net, be, batch_size=batch_size)
        runner.require("gradient")
        X = enc.ids[rows].astype(runner.input_dtype)
        runner.reset_counters()
        predictions[rows] = resolve_target(runner, X, None, method=name)
        _add_counters(counters["inference"], runner.counters)
        runner.reset_counters()
        t = (
            predictions[rows]
            if target is None
            else resolve_target(runner, X, target[rows], method=name)
        )
        node = runner.layer_value(embedding_node(net)[0], replaced=True)
        with limit_blas(blas_threads):
            per_dim, part = attribute(
                runner,
                X,
                baseline[rows],
                t,
                node,
                name,
                steps=steps,
                integration=integration,
                samples=samples,
                stdev=stdev,
                seed=0 if seed is None else int(seed),
                internal_batch_size=internal_batch_size,
            )
        _add_counters(counters["explanation"], runner.counters)
        values[rows] = per_dim.sum(axis=-1)
        targets[rows] = t
        for k, v in part.items():
            if isinstance(v, np.ndarray) and v.shape[:1] == (len(rows),):
                arrays.setdefault(k, np.zeros(n, v.dtype))[rows] = v
            else:
                meta[k] = v
        meta["layer"] = node
    values *= enc.mask
    target = targets
    meta.update(arrays)
    base = meta.pop("base_values", meta["output"])
    meta.update(
        seconds=time.perf_counter() - start,
        options=options,
        tokens=enc.tokens,
        mask=enc.mask,
        texts=enc.texts,
        prediction=predictions,
        counters=counters,
        attribution="embedding output, summed over its dimension",
    )
    if len(groups) > 1:
        meta["networks"] = len(groups)
    if name == "ig":
        meta["baseline_token"] = int(base_id)
    n, L = values.shape
    names = (
        tuple(t or "[pad]" for t in enc.tokens[0])
        if n == 1
        else tuple(f"token {i}" for i in range(L))
    )
    e = Explanation(
        values=values,
        base_values=base,
        target=target,
        data=enc.ids,
        feature_names=names,
        output_names=the_model.output_names,
        method=name,
        backend=be.name,
        meta=meta,
    )
    return merge_words(e, enc) if merge == "words" else e


def _mask_groups(net: Any, enc: Encoded) -> list[tuple[Any, np.ndarray]]:
    """``net`` and every row, or, for a network that also takes an attention mask (and
    token types), one network per distinct mask with those inputs fixed, and its rows."""
    from xai_core.text.attribute import TextInputs

    if len(getattr(net, "inputs", ()) or ()) < 2:
        return [(net, np.arange(len(enc.ids)))]
    others = TextInputs.of(net).values(enc.mask)
    rows = np.concatenate([v.reshape(len(enc.ids), -1) for v in others.values()], axis=1)
    distinct, which = np.unique(rows, axis=0, return_inverse=True)
    groups = []
    for g in range(len(distinct)):
        members = np.flatnonzero(which.reshape(-1) == g)
        fixed = {k: v[members[0]] for k, v in others.items()}
        groups.append((net.with_inputs(fixed), members))
    return groups


def _add_counters(total: dict[str, float], counted: dict[str, Any]) -> None:
    """Add the additive counters of one network's run (texts of one length) to ``total``."""
    from xai_core.backends.base import Backend

    for key in Backend.COMMON_COUNTERS:
        if key in counted:
            total[key] = total.get(key, 0.0) + float(counted[key])


def merge_words(e: Explanation, enc: Encoded) -> Explanation:
    """``e`` with the attributions of each word's pieces summed (one value per word).

    Returns
    -------
    Explanation
        ``values`` of shape (n_texts, max_words), ``meta["tokens"]`` the words' text,
        ``meta["mask"]`` True at the texts' words, ``data`` the word index.
    """
    n = len(e)
    W = int(enc.words.max()) + 1
    values = np.zeros((n, W))
    rows = np.repeat(np.arange(n), enc.words.shape[1])
    w = enc.words.reshape(-1)
    keep = w >= 0
    np.add.at(values, (rows[keep], w[keep]), np.asarray(e.values).reshape(-1)[keep])
    mask = np.arange(W)[None] <= enc.words.max(axis=1)[:, None]
    tokens = np.full((n, W), "", dtype=object)
    for i, words in enumerate(enc.word_text):
        tokens[i, : len(words)] = words
    meta = {**e.meta, "tokens": tokens, "mask": mask, "merge": "words"}
    names = (
        tuple(t or "[pad]" for t in tokens[0]) if n == 1 else tuple(f"word {i}" for i in range(W))
    )
    data = np.where(mask, np.arange(W)[None], -1)
    return Explanation(
        values=values,
        base_values=e.base_values,
        target=e.target,
        data=data,
        feature_names=names,
        output_names=e.output_names,
        method=e.method,
        backend=e.backend,
        meta=meta,
    )
