"""LIME for texts: lime's ``LimeTextExplainer`` on the words (or tokens) of each text.

lime (``lime.lime_text``) explains a text by removing words at random: for each of
``num_samples - 1`` perturbed copies it draws how many words to remove, uniformly in
``1 ... n_words``, then which ones (without replacement); sample 0 is the text itself.
The surrogate's inputs are the 1/0 "word kept" vectors, the distances their cosine
distances to the all-kept vector times 100, the weights lime's kernel
``sqrt(exp(-d**2 / 25**2))``, and the surrogate lime's (:mod:`xai_lime.surrogate`).

The features (:func:`text_units`):

- a **string model** is explained per word (the tokenizer's words, whose character spans
  its offsets give); a removed word's characters are deleted from the string (``bow=True``,
  lime's default) or replaced by ``mask_string`` (``bow=False``; lime's ``"UNKWORDZ"``),
  the text between words kept, as lime's ``IndexedString.inverse_removing`` does;
- a **network** is explained per token (``merge="words"``: per word, its pieces removed
  together); a removed token's id is replaced by ``mask_token``'s (default the pad id, so
  that a removed token reads as padding; ``mask_token="[MASK]"`` for a masked-language
  model), the length of the text unchanged. Special tokens (``[CLS]``, ``[SEP]``) are never
  removed and get 0.

With ``bow=True`` a feature is a distinct word (or token): removing it removes every
occurrence, and each occurrence shows its weight. Row ``i`` draws from
``numpy.random.RandomState(seed + i)`` exactly as lime draws from its ``random_state``,
so ``seed=s`` on one text gives ``LimeTextExplainer(random_state=s)``'s samples.
"""

from __future__ import annotations

import time
from typing import Any

import numpy as np
from sklearn.metrics.pairwise import pairwise_distances

from xai_core import ValidationError
from xai_core.attribution.seeds import resolve_seed
from xai_core.text.perturb import TextModel, text_model, token_explanation
from xai_core.validation import check_int
from xai_lime.surrogate import FEATURE_SELECTIONS, fit_surrogates

__all__ = ["TEXT_OPTIONS", "explain_lime_texts", "lime_distances", "sample_removals", "text_units"]

#: Options of LIME on texts, with their defaults (lime's ``LimeTextExplainer``'s).
TEXT_OPTIONS: dict[str, Any] = {
    "n_samples": 5000,
    "max_features": 10,
    "kernel_width": 25.0,
    "feature_selection": "auto",
    "bow": True,
    "mask_string": None,
    "mask_token": None,
    "neighbourhood": "per_row",
    "solver": "batched",
    "seed": 0,
    "merge": None,
    "max_length": None,
    "truncation": False,
    "pad_id": None,
}
_ALIASES = {"num_samples": "n_samples", "num_features": "max_features", "random_state": "seed"}


def text_units(tm: TextModel, i: int, words: bool) -> tuple[list[np.ndarray], list[str]]:
    """The removable units of text ``i``: their token positions and their text.

    A unit is a word (``words=True``) or a token; special tokens are none.
    """
    enc = tm.encoded
    m = enc.mask[i]
    special = enc.special[i] if enc.special is not None else np.zeros_like(m)
    keep = m & ~special
    if words:
        out, names = [], []
        for w in range(int(enc.words[i].max()) + 1):
            pos = np.flatnonzero((enc.words[i] == w) & keep)
            if len(pos):
                out.append(pos)
                names.append(enc.word_text[i][w])
        return out, names
    pos = np.flatnonzero(keep)
    return [np.array([p]) for p in pos], [str(enc.tokens[i, p]) for p in pos]


def sample_removals(d: int, n_samples: int, rs: np.random.RandomState) -> np.ndarray:
    """lime's text neighbourhood: 1/0 "feature kept" rows of shape (n_samples, d).

    Row 0 keeps every feature; each other row removes ``rs.randint(1, d + 1)`` features
    chosen by ``rs.choice(range(d), size, replace=False)``, drawn in lime's order (all the
    counts first, then the choices), so the same ``RandomState`` gives lime's rows.
    """
    sizes = rs.randint(1, d + 1, n_samples - 1)
    data = np.ones((n_samples, d))
    features = range(d)
    for i, size in enumerate(sizes, start=1):  # lime's stream: one choice per sample
        data[i, rs.choice(features, size, replace=False)] = 0
    return data


def lime_distances(data: np.ndarray) -> np.ndarray:
    """lime's text distances: cosine distance of each row to row 0, times 100."""
    import scipy.sparse as sp

    sparse = sp.csr_matrix(data)
    return pairwise_distances(sparse, sparse[0], metric="cosine").ravel() * 100


def _strings(text: str, spans: list[tuple[int, int]], data: np.ndarray, fill: str) -> list[str]:
    """``text`` with the units whose column of ``data`` is 0 replaced by ``fill``."""
    order = np.argsort([s for s, _ in spans], kind="stable")
    cuts = [spans[k] for k in order]
    gaps = []
    last = 0
    for s, e in cuts:
        gaps.append(text[last:s])
        last = e
    tail = text[last:]
    pieces = [text[s:e] for s, e in cuts]
    out = []
    for row in data[:, order]:
        parts = []
        for gap, piece, kept in zip(gaps, pieces, row):
            parts.append(gap)
            parts.append(piece if kept else fill)
        parts.append(tail)
        out.append("".join(parts))
    return out


def _check(options: dict[str, Any]) -> dict[str, Any]:
    resolved = dict(TEXT_OPTIONS)
    for key, value in options.items():
        name = _ALIASES.get(key, key)
        if name not in TEXT_OPTIONS:
            raise ValidationError(
                f"unknown option {key!r} of method 'lime' on texts; valid: "
                f"{', '.join(sorted(TEXT_OPTIONS))} (aliases {', '.join(sorted(_ALIASES))})."
            )
        resolved[name] = value
    resolved["n_samples"] = check_int(resolved["n_samples"], "n_samples", 2)
    resolved["max_features"] = check_int(resolved["max_features"], "max_features", 1)
    width = resolved["kernel_width"]
    if isinstance(width, bool) or not isinstance(width, (int, float)) or not width > 0:
        raise ValidationError(f"kernel_width must be a positive number; got {width!r}.")
    if resolved["feature_selection"] not in FEATURE_SELECTIONS:
        raise ValidationError(
            f"feature_selection must be one of {FEATURE_SELECTIONS}; got "
            f"{resolved['feature_selection']!r}."
        )
    if resolved["neighbourhood"] != "per_row":
        raise ValidationError(
            "neighbourhood must be 'per_row' for texts (each text has its own words, so each "
            f"draws its own neighbourhood, as lime does); got {resolved['neighbourhood']!r}."
        )
    if resolved["solver"] not in ("batched", "lime"):
        raise ValidationError(f"solver must be 'batched' or 'lime'; got {resolved['solver']!r}.")
    if resolved["merge"] not in (None, "words"):
        raise ValidationError(f"merge must be None or 'words'; got {resolved['merge']!r}.")
    if not isinstance(resolved["bow"], bool):
        raise ValidationError(f"bow must be True or False; got {resolved['bow']!r}.")
    return resolved


def explain_lime_texts(
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
    """LIME weights of ``model``'s output ``target`` on each text, per word or token.

    Parameters
    ----------
    model : callable list[str] -> ndarray of shape (n, n_outputs), or a network of ids
    texts : str or sequence of str
    tokenizer : tokenizers.Tokenizer, transformers tokenizer, callable or TextTokenizer
    target : int or array-like of shape (n_texts,), optional
        Output per text; default the model's largest output on the text.
    **options
        ``n_samples=5000`` (``num_samples``), ``max_features=10`` (``num_features``),
        ``kernel_width=25``, ``feature_selection="auto"``, ``bow=True``,
        ``mask_string`` (``bow=False``, string models; default ``"UNKWORDZ"``),
        ``mask_token`` (networks; default the pad token), ``neighbourhood="per_row"``,
        ``solver="batched"`` or ``"lime"``, ``seed=0`` (``random_state``), ``merge``,
        ``max_length``, ``truncation``, ``pad_id``.

    Returns
    -------
    Explanation
        ``values`` of shape (n_texts, seq_len) (per word: (n_texts, max_words)), the
        feature's surrogate weight at each of its tokens (0 at special tokens, padding and
        features not selected); ``meta`` holds the token meta of
        :func:`xai_core.text.explain_text` and per text ``features`` (their text),
        ``feature_weights``, ``score``, ``local_pred``, ``intercept``, ``prediction``.
    """
    from xai_core.attribution.blas import blas_threads as limit_blas
    from xai_core.validation import check_target

    opts = _check(options)
    seed = resolve_seed(opts["seed"])
    tm = text_model(
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
    enc = tm.encoded
    words = tm.strings or opts["merge"] == "words"
    if tm.strings and enc.spans is None:
        raise ValidationError(
            "tokenizer must give character offsets for a model of strings (a "
            "tokenizers.Tokenizer or a fast transformers tokenizer): the words removed are "
            "cut from the text at their offsets."
        )
    mask_id = enc.pad_id
    if opts["mask_token"] is not None:
        if tm.strings:
            raise ValidationError(
                "mask_token= replaces token ids for a network; a model of strings takes "
                "mask_string= (with bow=False)."
            )
        mask_id = tm.tokenizer.token_id(opts["mask_token"])
    fill = (
        "" if opts["bow"] else ("UNKWORDZ" if opts["mask_string"] is None else opts["mask_string"])
    )
    n, L = enc.ids.shape
    originals = (
        tm.predict_strings(list(enc.texts)) if tm.strings else tm.predict_ids(enc.ids, enc.mask)
    )
    target = (
        originals.argmax(axis=1) if target is None else check_target(target, n, originals.shape[1])
    ).astype(np.int64)
    timings = {"sampling": 0.0, "model": 0.0, "surrogate": 0.0}
    n_samples = opts["n_samples"]
    per_text = []
    for i in range(n):  # one neighbourhood per text: its own words and its own draws
        t0 = time.perf_counter()
        units, names = text_units(tm, i, words)
        if opts["bow"]:
            keys = list(dict.fromkeys(names))
            feature_of = np.array([keys.index(k) for k in names], dtype=np.int64)
        else:
            keys = list(names)
            feature_of = np.arange(len(units))
        d = len(keys)
        if d == 0:
            raise ValidationError(f"texts[{i}] {enc.texts[i][:40]!r} has no word to remove.")
        rs = np.random.RandomState((seed + i) % 2**32)
        data = sample_removals(d, n_samples, rs)
        kept = data[:, feature_of]  # (n_samples, n_units)
        t1 = time.perf_counter()
        if tm.strings:
            spans = [(int(enc.spans[i, u, 0].min()), int(enc.spans[i, u, 1].max())) for u in units]
            out = tm.predict_strings(_strings(enc.texts[i], spans, kept, fill))
        else:
            removed = np.zeros((n_samples, L), dtype=bool)
            removed[:, np.concatenate(units)] = np.repeat(
                kept == 0, [len(u) for u in units], axis=1
            )
            ids = np.where(removed, mask_id, enc.ids[i][None])
            out = tm.predict_ids(ids, np.repeat(enc.mask[i][None], n_samples, axis=0))
        t2 = time.perf_counter()
        per_text.append((units, keys, feature_of, data, out[:, target[i]]))
        timings["sampling"] += t1 - t0
        timings["model"] += t2 - t1
    t3 = time.perf_counter()
    width = float(opts["kernel_width"])
    W = int(enc.words.max()) + 1 if words else L
    values = np.zeros((n, W))
    weights: list[np.ndarray] = [np.zeros(0)] * n
    intercept, score, local_pred = np.zeros(n), np.zeros(n), np.zeros(n)
    sizes = np.array([len(p[1]) for p in per_text])
    n_selected = 0
    with limit_blas(blas_threads):
        for d in np.unique(sizes):  # texts of as many features are fitted together
            group = np.flatnonzero(sizes == d)
            data = np.stack([per_text[g][3] for g in group])
            labels = np.stack([per_text[g][4] for g in group])
            distances = np.stack([lime_distances(per_text[g][3]) for g in group])
            fit = fit_surrogates(
                data,
                labels,
                distances,
                kernel_width=width,
                n_features=opts["max_features"],
                feature_selection=opts["feature_selection"],
                solver=opts["solver"],
                random_state=np.random.RandomState(seed % 2**32),
            )
            n_selected = max(n_selected, fit.n_selected)
            for j, g in enumerate(group):
                units, _, feature_of, _, _ = per_text[g]
                weights[g] = fit.coef[j]
                intercept[g], score[g], local_pred[g] = (
                    fit.intercept[j],
                    fit.score[j],
                    fit.local_pred[j],
                )
                for k, u in enumerate(units):
                    at = enc.words[g, u[0]] if words else u[0]
                    values[g, at] = fit.coef[j, feature_of[k]]
    timings["surrogate"] = time.perf_counter() - t3
    meta = {
        "n_samples": n_samples,
        "seed": seed,
        "kernel_width": width,
        "feature_selection": opts["feature_selection"],
        "solver": opts["solver"],
        "neighbourhood": "per_row",
        "bow": opts["bow"],
        "features": [p[1] for p in per_text],
        "feature_weights": weights,
        "score": score,
        "local_pred": local_pred,
        "intercept": intercept,
        "prediction": originals[np.arange(n), target],
        "output": originals[np.arange(n), target],
        "n_selected": n_selected,
        "removal": "characters cut"
        if tm.strings and opts["bow"]
        else (f"replaced by {fill!r}" if tm.strings else f"token id {mask_id}"),
        "timings": timings,
        "options": {k: v for k, v in opts.items() if k != "seed"},
    }
    return token_explanation(
        values,
        tm,
        target=target,
        base_values=intercept,
        method="lime",
        meta=meta,
        words=words,
    )
