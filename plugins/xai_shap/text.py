"""SHAP for texts: shap's Partition explainer with its ``Text`` masker.

``shap.Explainer(f, shap.maskers.Text(tokenizer))`` splits each text into the tokenizer's
tokens, builds a hierarchy over them from the tokens' text (shap's ``partition_tree``:
pieces of a word first, then words, then phrases) and computes Owen values over that
tree with at most ``max_evals`` model calls per text: a masked token is replaced by the
tokenizer's mask token (``[MASK]``; ``"..."`` when it has none, runs of them collapsed
into one) and the model is called on the masked strings. Special tokens (``[CLS]``,
``[SEP]``) are never masked. The computation here is shap's own; what this module adds
is the model (:func:`xai_core.text.perturb.text_model`: a string model as it is, a network
on the masked strings tokenized again and padded), the tokenizer shap needs (a
``tokenizers.Tokenizer`` is wrapped as a ``transformers`` fast tokenizer with its special
tokens named) and the explanation's token meta.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from xai_core import CapabilityError, ValidationError
from xai_core.text.perturb import TextModel, text_model, token_explanation
from xai_core.text.tokenize import TextTokenizer
from xai_core.validation import check_int

__all__ = ["TEXT_OPTIONS", "explain_shap_texts", "shap_tokenizer"]

#: Options of SHAP on texts, with their defaults (shap's).
TEXT_OPTIONS: dict[str, Any] = {
    "max_evals": 500,
    "fixed_context": None,
    "merge": None,
    "max_length": None,
    "truncation": False,
    "pad_id": None,
}
_ALIASES = {"nsamples": "max_evals"}
_SPECIAL = {
    "unk_token": ("[UNK]", "<unk>"),
    "sep_token": ("[SEP]", "</s>"),
    "cls_token": ("[CLS]", "<s>"),
    "pad_token": ("[PAD]", "<pad>"),
    "mask_token": ("[MASK]", "<mask>"),
}


def shap_tokenizer(tok: TextTokenizer) -> Any:
    """The tokenizer in the form ``shap.maskers.Text`` takes (a ``transformers`` one).

    A ``tokenizers.Tokenizer`` becomes ``transformers.PreTrainedTokenizerFast`` over it,
    its special tokens (``[UNK] [SEP] [CLS] [PAD] [MASK]`` or ``<unk> </s> <s> <pad>
    <mask>``) named when the vocabulary holds them.

    Raises
    ------
    CapabilityError
        A callable tokenizer: shap's masker needs the tokens' character offsets.
    """
    if tok.kind == "transformers":
        return tok.tokenizer
    if tok.kind == "callable":
        raise CapabilityError(
            "tokenizer: method 'shap' on texts needs a tokenizers.Tokenizer or a transformers "
            "tokenizer (shap's Text masker cuts the text at the tokens' character offsets); "
            "got a callable."
        )
    from transformers import PreTrainedTokenizerFast

    named = {}
    for role, candidates in _SPECIAL.items():
        for name in candidates:
            if tok.tokenizer.token_to_id(name) is not None:
                named[role] = name
                break
    return PreTrainedTokenizerFast(tokenizer_object=tok.tokenizer, **named)


def _check(options: dict[str, Any]) -> dict[str, Any]:
    resolved = dict(TEXT_OPTIONS)
    for key, value in options.items():
        name = _ALIASES.get(key, key)
        if name not in TEXT_OPTIONS:
            raise ValidationError(
                f"unknown option {key!r} of method 'shap' on texts; valid: "
                f"{', '.join(sorted(TEXT_OPTIONS))} (alias nsamples)."
            )
        resolved[name] = value
    resolved["max_evals"] = check_int(resolved["max_evals"], "max_evals", 2)
    if resolved["merge"] not in (None, "words"):
        raise ValidationError(f"merge must be None or 'words'; got {resolved['merge']!r}.")
    return resolved


def explain_shap_texts(
    model: Any,
    texts: Any,
    *,
    tokenizer: Any,
    backend: Any = "cpu",
    target: Any = None,
    batch_size: int = 4096,
    output_names: Any = None,
    blas_threads: int | None = 1,
    **options: Any,
):
    """shap's Partition values of ``model``'s output ``target`` per token of each text.

    Parameters
    ----------
    model : callable list[str] -> ndarray of shape (n, n_outputs), or a network of ids
    texts : str or sequence of str
    tokenizer : tokenizers.Tokenizer or transformers tokenizer (or a TextTokenizer of one)
    target : int or array-like of shape (n_texts,), optional
        Output per text; default the model's largest output on the text.
    **options
        ``max_evals=500`` (``nsamples``), ``fixed_context`` (shap's), ``merge="words"``
        (the pieces of a word summed), ``max_length``, ``truncation``, ``pad_id``.

    Returns
    -------
    Explanation
        ``values`` of shape (n_texts, seq_len) (merged: (n_texts, max_words)), 0 at
        padding; ``base_values`` shap's (the model on the fully masked text), so
        ``base_values + values.sum(1)`` is the model's output on the text;
        ``meta["tokens"]``, ``meta["mask"]``, ``meta["texts"]`` as the gradient methods
        give, ``meta["output"]``, ``meta["max_evals"]``, ``meta["mask_token"]``.
    """
    import shap

    from xai_core.attribution.blas import blas_threads as limit_blas
    from xai_core.text.explain import merge_words
    from xai_core.validation import check_target

    opts = _check(options)
    tm: TextModel = text_model(
        model,
        texts,
        tokenizer,
        backend=backend,
        max_length=opts["max_length"],
        truncation=opts["truncation"],
        pad_id=opts["pad_id"],
        batch_size=batch_size,
        output_names=output_names,
    )
    masker = shap.maskers.Text(shap_tokenizer(tm.tokenizer))
    enc = tm.encoded
    n, L = enc.ids.shape

    def f(strings: Any) -> np.ndarray:
        return tm.predict_strings(list(np.asarray(strings, dtype=object).reshape(-1)))

    with limit_blas(blas_threads):
        originals = f(list(enc.texts))
        explainer = shap.Explainer(f, masker, algorithm="partition")
        sv = explainer(
            list(enc.texts),
            max_evals=opts["max_evals"],
            fixed_context=opts["fixed_context"],
            silent=True,
        )
    target = (
        originals.argmax(axis=1) if target is None else check_target(target, n, originals.shape[1])
    ).astype(np.int64)
    values = np.zeros((n, L))
    base = np.zeros(n)
    for i in range(n):
        row = np.asarray(sv.values[i], dtype=np.float64)
        m = int(enc.mask[i].sum())
        if len(row) != m:
            raise ValidationError(
                f"texts[{i}] {enc.texts[i][:40]!r}: shap's masker found {len(row)} tokens and "
                f"the tokenizer {m} (a text cut by truncation, or a tokenizer shap reads "
                "differently); shorten the text."
            )
        values[i, :m] = row[:, target[i]] if row.ndim == 2 else row
        b = np.asarray(sv.base_values[i], dtype=np.float64).reshape(-1)
        base[i] = b[target[i]] if b.size > 1 else b[0]
    meta = {
        "output": originals[np.arange(n), target],
        "max_evals": opts["max_evals"],
        "mask_token": masker.mask_token,
        "algorithm": "partition",
        "options": dict(opts),
    }
    e = token_explanation(
        values, tm, target=target, base_values=base, method="shap", meta=meta, words=False
    )
    return merge_words(e, enc) if opts["merge"] == "words" else e
