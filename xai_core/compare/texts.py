"""Texts across hardware: the same token attributions on each backend, and the tokens that move.

:func:`~xai_core.compare_backends` hands texts (``tokenizer=``, or token ids for a network
read by an :class:`~xai_core.nn.Embedding`) to :func:`compare_texts`, which explains them on
every backend through :func:`xai_core.explain`, the one text path
(:func:`xai_core.text.explain_text`): the reference backend first, its predicted classes
the target of every other. :func:`token_shifts` lists, per backend and text, the tokens
whose attribution moved most from the reference's.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from xai_core.attribution.explainer import explain
from xai_core.backends.base import Backend
from xai_core.compare import agreement as _agreement
from xai_core.compare import metrics
from xai_core.compare.results import BackendComparison
from xai_core.errors import CapabilityError, ValidationError

__all__ = ["compare_texts", "token_shifts"]

#: Options of :func:`~xai_core.compare_backends` that image and table rows take but texts do not.
_NOT_FOR_TEXTS = ("executor", "chunk_size", "calibration", "quantized")


def compare_texts(
    model: Any,
    X: Any,
    method: Any,
    pairs: list[tuple[str, Backend]],
    skipped: dict[str, str],
    *,
    target: Any = None,
    k: int = 10,
    n_seeds: int = 1,
    refused: dict[str, Any] | None = None,
    **options: Any,
) -> BackendComparison:
    """Explain texts (or token ids) on each backend of ``pairs`` and compare with the first.

    Parameters
    ----------
    model : Model, torch.nn.Module, transformers classifier...
        As :func:`xai_core.explain` takes it with texts.
    X : str, sequence of str, or ndarray of int of shape (n_texts, seq_len)
    method : str
        A text method (``"ig"``, ``"saliency"``, ``"gradient_x_input"``, ``"smoothgrad"``);
        ``"auto"`` is ``"ig"``.
    pairs : list of (str, Backend)
        The reference first.
    skipped : dict of str to str
        Filled with the backends that cannot run the method (inference only), and why.
    target, k, n_seeds
        As :func:`~xai_core.compare_backends`.
    refused : dict of str to object, optional
        Arguments given that texts do not take; any not None is an error naming it.
    **options
        ``tokenizer=`` and the method's options (:func:`xai_core.text.explain_text`).

    Returns
    -------
    BackendComparison
        Its explanations carry the tokens (``meta["tokens"]``, ``meta["mask"]``).
    """
    for name, given in (refused or {}).items():
        if given is not None:
            raise ValidationError(
                f"{name}= is not taken when comparing texts: the texts run whole on each "
                "backend that computes gradients (int8-only backends are inference only)."
            )
    if not isinstance(method, str):
        raise ValidationError(
            "method must be a text method's name (ig, saliency, gradient_x_input, smoothgrad) "
            f"for texts; got {method!r}."
        )
    name = "ig" if method == "auto" else method
    ref_label, ref_backend = pairs[0]
    if not ref_backend.supports_gradients:
        raise CapabilityError(
            f"the reference backend {ref_label!r} is inference only; text attributions need "
            "gradients (use reference='cpu')."
        )
    runs: dict[str, Any] = {}
    for label, backend in pairs:
        if not backend.supports_gradients:
            skipped[label] = f"the method needs gradients and {backend.name} is inference only"
            continue
        e = explain(model, X, method=name, backend=backend, target=target, **options)
        if target is None:
            target = np.asarray(e.target)  # every backend explains the reference's class
        counted = e.meta["counters"]
        runs[label] = _agreement._Run(
            e,
            np.asarray(e.meta["prediction"]),
            {
                "inference": counted["inference"],
                "explanation": counted["explanation"],
                "power_w": _agreement._power_watts(backend),
            },
        )
    ref = runs[ref_label].explanation
    noise = spread = None
    if n_seeds > 1 and ref.method == "smoothgrad":
        noise = _seed_noise(model, X, ref, ref_backend, target, k, n_seeds, options)
        spread = _agreement._seed_spread(noise)
    formats = {label: backend.number_format for label, backend in pairs if label in runs}
    rows = _agreement._agreement_rows(runs, ref_label, k, spread, formats)
    shown = {key: _shown(v) for key, v in options.items()}
    return BackendComparison(
        method=ref.method,
        reference=ref_label,
        explanations={label: run.explanation for label, run in runs.items()},
        rows=rows,
        summary=_agreement._summary(rows, runs),
        skipped=skipped,
        noise=noise,
        options={"k": k, "n_seeds": n_seeds, **shown},
        formats=formats,
    )


def _shown(value: Any) -> Any:
    """An option as the comparison records it: a tokenizer by its class name."""
    if isinstance(value, (str, int, float, bool, type(None))):
        return value
    return type(value).__name__


def _seed_noise(
    model: Any,
    X: Any,
    ref: Any,
    backend: Backend,
    target: np.ndarray,
    k: int,
    n_seeds: int,
    options: dict[str, Any],
) -> Any:
    """The reference's agreement with itself under other seeds, one row per (seed, text)."""
    import pandas as pd

    seed0 = int(options.get("seed", 0) or 0)
    tables = []
    for j in range(1, n_seeds):
        rerun = explain(
            model,
            X,
            method=ref.method,
            backend=backend,
            target=target,
            **{**options, "seed": seed0 + j},
        )
        tables.append(
            metrics.agreement(ref.values, rerun.values, k).assign(
                seed=seed0 + j, row=np.arange(len(ref))
            )
        )
    return pd.concat(tables, ignore_index=True)


def token_shifts(c: BackendComparison, top: int = 5) -> Any:
    """Per backend and text, the ``top`` tokens whose attribution moved most from the reference's.

    Parameters
    ----------
    c : BackendComparison
        Of text explanations (``meta["tokens"]``).
    top : int, default=5
        Tokens per (backend, text), largest ``|value - reference|`` first.

    Returns
    -------
    pandas.DataFrame
        Columns ``backend, row, position, token, reference, value, difference, relative``
        (the difference over the text's largest absolute reference value) and
        ``rank_reference``, ``rank`` (the token's rank by absolute value in its text, 1 the
        largest).
    """
    import pandas as pd

    ref = c.explanations[c.reference]
    tokens = ref.meta.get("tokens")
    if tokens is None:
        raise ValidationError(
            "token_shifts needs text explanations (meta['tokens']): compare_backends on texts."
        )
    tokens = np.asarray(tokens, dtype=object)
    mask = np.asarray(ref.meta.get("mask", tokens != ""), dtype=bool)
    base = np.asarray(ref.values, np.float64)
    scale = np.abs(np.where(mask, base, 0.0)).max(axis=1)
    scale[scale == 0] = 1.0

    def ranks(v: np.ndarray) -> np.ndarray:
        a = np.where(mask, np.abs(v), -np.inf)
        order = np.argsort(-a, axis=1, kind="stable")
        out = np.empty_like(order)
        np.put_along_axis(out, order, np.arange(1, v.shape[1] + 1)[None], axis=1)
        return out

    ref_rank = ranks(base)
    frames = []
    for label, e in c.explanations.items():
        if label == c.reference:
            continue
        v = np.asarray(e.values, np.float64)
        diff = np.where(mask, v - base, 0.0)
        key = np.where(mask, np.abs(diff), -np.inf)
        n_top = min(int(top), diff.shape[1])
        pos = np.argsort(-key, axis=1, kind="stable")[:, :n_top]
        rows = np.repeat(np.arange(len(v)), n_top)
        cols = pos.reshape(-1)
        keep = mask[rows, cols]
        rows, cols = rows[keep], cols[keep]
        frames.append(
            pd.DataFrame(
                {
                    "backend": label,
                    "row": rows,
                    "position": cols,
                    "token": tokens[rows, cols],
                    "reference": base[rows, cols],
                    "value": v[rows, cols],
                    "difference": diff[rows, cols],
                    "relative": diff[rows, cols] / scale[rows],
                    "rank_reference": ref_rank[rows, cols],
                    "rank": ranks(v)[rows, cols],
                }
            )
        )
    if not frames:
        return pd.DataFrame(
            columns=[
                "backend",
                "row",
                "position",
                "token",
                "reference",
                "value",
                "difference",
                "relative",
                "rank_reference",
                "rank",
            ]
        )
    return pd.concat(frames, ignore_index=True)
