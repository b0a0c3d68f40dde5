"""The verdict of a comparison, in plain language, decided by documented thresholds.

:func:`backend_verdict` says which backend changes an explanation, by how much, whether
beyond noise, and whether predictions flip; :func:`method_verdict` says which methods
agree. ``BackendComparison.verdict`` and ``MethodComparison.verdict`` call them; reports
open with their sentences.

Thresholds
----------
Beyond noise
    A backend's difference from the reference is judged row by row on its
    ``max_rel_diff``: the largest ``|attribution - reference attribution|`` of the row over
    the row's attribution scale (its largest ``|reference attribution|``). A row is beyond
    noise when that exceeds the row's threshold:

    - **rounding**, for every method: :data:`ROUNDOFF_UNITS` (16) unit roundoffs of the
      coarser number format of the backend and the reference
      (:data:`UNIT_ROUNDOFF`: fp32 ``2**-24``, bf16 ``2**-8``, int8 ``1/254``). A
      deterministic method has no seed noise; the numerics' rounding is its noise, so a
      GPU's fp32 reordering (``1e-7`` of the scale) is within it and an int8 step is not;
    - **seed noise**, for a seeded method compared with ``n_seeds > 1``: the largest
      ``max_rel_diff`` of the reference with itself under the other seeds, when larger.

Rank statistics
    Spearman correlation and top-k overlap of a row within noise are not meaningful
    (rounding reorders features of nearly equal attribution), so they are not reported as
    disagreement: NaN in ``BackendComparison.rows``, left out of the per-backend means and
    shown as "–".

Methods agree
    Two methods agree when their mean cosine similarity over the rows is at least
    :data:`AGREE_COSINE` (0.9).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np

if TYPE_CHECKING:
    import pandas as pd

    from xai_core.compare.results import BackendComparison, MethodComparison

__all__ = [
    "AGREE_COSINE",
    "RANK_FIGURES",
    "ROUNDOFF_UNITS",
    "UNIT_ROUNDOFF",
    "BackendDecision",
    "MethodDecision",
    "Verdict",
    "backend_verdict",
    "judge_noise",
    "method_verdict",
    "rounding_threshold",
    "unit_roundoff",
]

#: The unit roundoff of each number format: half the gap between 1 and the next number
#: (``2**-(mantissa bits + 1)``); for int8, half a step of a symmetric scale of 127 steps.
UNIT_ROUNDOFF: Mapping[str, float] = {
    "fp64": 2.0**-53,
    "fp32": 2.0**-24,
    "tf32": 2.0**-11,
    "fp16": 2.0**-11,
    "bf16": 2.0**-8,
    "int8": 1.0 / 254,
}
#: Unit roundoffs of the coarser format that a difference may reach and still be rounding.
ROUNDOFF_UNITS = 16
#: The mean cosine similarity from which two methods agree.
AGREE_COSINE = 0.9
#: Figures that rank features: not meaningful for a row whose difference is within noise.
RANK_FIGURES = ("spearman", "top_k_overlap")


def unit_roundoff(number_format: str) -> float:
    """The unit roundoff of ``number_format`` (a key of :data:`UNIT_ROUNDOFF`, or a numpy
    floating dtype's name); an unknown format counts as fp32."""
    if number_format in UNIT_ROUNDOFF:
        return UNIT_ROUNDOFF[number_format]
    try:
        return float(np.finfo(np.dtype(number_format)).eps) / 2
    except (TypeError, ValueError):
        return UNIT_ROUNDOFF["fp32"]


def rounding_threshold(number_format: str, reference_format: str = "fp32") -> float:
    """The largest difference, relative to the attribution scale, that is rounding.

    :data:`ROUNDOFF_UNITS` unit roundoffs of the coarser of the two formats: ``16 * 2**-24``
    (about ``9.5e-7``) between two fp32 backends, ``16 * 2**-8`` (6.25 %) against bf16.
    """
    return ROUNDOFF_UNITS * max(unit_roundoff(number_format), unit_roundoff(reference_format))


def judge_noise(
    table: pd.DataFrame,
    number_format: str,
    reference_format: str = "fp32",
    seed_spread: Any = None,
) -> pd.DataFrame:
    """Decide which rows of an agreement table differ beyond noise.

    Parameters
    ----------
    table : pandas.DataFrame
        One row per sample with at least ``max_rel_diff`` and the :data:`RANK_FIGURES`
        (:func:`xai_core.compare.metrics.agreement`'s columns).
    number_format, reference_format : str
        The formats of the backend and of the reference (keys of :data:`UNIT_ROUNDOFF`).
    seed_spread : array-like of shape (n_samples,), optional
        The method's own ``max_rel_diff`` across seeds, per row.

    Returns
    -------
    pandas.DataFrame
        A copy of ``table`` with ``threshold`` (:func:`rounding_threshold`, or the seed
        spread when larger) and ``beyond_noise`` (``max_rel_diff > threshold``); the rank
        figures of the rows within noise are NaN.
    """
    out = table.copy()
    threshold = np.full(len(out), rounding_threshold(number_format, reference_format))
    if seed_spread is not None:
        threshold = np.maximum(threshold, np.asarray(seed_spread, dtype=np.float64))
    out["threshold"] = threshold
    out["beyond_noise"] = out["max_rel_diff"].to_numpy(dtype=np.float64) > threshold
    out.loc[~out["beyond_noise"], list(RANK_FIGURES)] = np.nan
    return out


def _relative(x: float, digits: int = 2) -> str:
    """A difference relative to the attribution scale: a percentage, or 1.0e-07 when tiny."""
    if not np.isfinite(x):
        return "unbounded (the reference is zero)"
    if x == 0:
        return "0"
    if x >= 0.995:  # two figures of a percentage from 99.5 up: no "1e+02%"
        return f"{100 * x:.0f}%"
    if x >= 1e-3:
        return f"{100 * x:.{digits}g}%"
    return f"{x:.{digits - 1}e}"


def _figure(x: float | None) -> str:
    return "–" if x is None else f"{x:.3g}"


def _names(names: Sequence[str]) -> str:
    names = list(names)
    if len(names) <= 1:
        return "".join(names)
    return ", ".join(names[:-1]) + " and " + names[-1]


def _mean_or_none(values: Any) -> float | None:
    v = np.asarray(values, dtype=np.float64)
    v = v[~np.isnan(v)]
    return float(v.mean()) if v.size else None


@dataclass(frozen=True)
class BackendDecision:
    """What one backend does to the explanation, against the reference.

    Attributes
    ----------
    backend : str
    number_format : str
        Its coarsest products' format (``Backend.number_format``).
    basis : {"rounding", "seed noise"}
        What the difference was judged against.
    threshold : float
        The largest threshold of its rows, relative to the attribution scale.
    max_rel_diff, max_abs_diff : float
        The largest difference over the rows, relative to the scale and absolute.
    rows_beyond, n_rows : int
        Rows whose difference is beyond noise, and rows compared.
    mean_cosine, min_cosine : float
    mean_spearman, mean_top_k_overlap : float or None
        Over the rows beyond noise; None when none is (not meaningful).
    flipped : int
        Rows whose predicted class differs from the reference's.
    """

    backend: str
    number_format: str
    basis: str
    threshold: float
    max_rel_diff: float
    max_abs_diff: float
    rows_beyond: int
    n_rows: int
    mean_cosine: float
    min_cosine: float
    mean_spearman: float | None
    mean_top_k_overlap: float | None
    flipped: int

    @property
    def beyond_noise(self) -> bool:
        """Whether any row's difference exceeds its threshold."""
        return self.rows_beyond > 0

    @property
    def line(self) -> str:
        """One sentence about this backend."""
        if self.basis == "seed noise":
            against = f"the method's seed spread {_relative(self.threshold, 3)}"
        else:
            threshold = _relative(self.threshold, 3)
            against = f"the {self.number_format} rounding threshold {threshold}"
        head = f"{self.backend} ({self.number_format})"
        if self.beyond_noise:
            text = (
                f"{head}: changes the attributions in {self.rows_beyond} of {self.n_rows} "
                f"rows, by up to {_relative(self.max_rel_diff)} of the attribution scale, "
                f"over {against}; cosine {self.mean_cosine:.4g} (worst {self.min_cosine:.4g}), "
                f"Spearman {_figure(self.mean_spearman)} and top-k overlap "
                f"{_figure(self.mean_top_k_overlap)} on those rows"
            )
        else:
            text = (
                f"{head}: within noise, differences up to {_relative(self.max_rel_diff)} of "
                f"the attribution scale, under {against} (rank statistics not meaningful)"
            )
        return f"{text}; {_flips(self.flipped, self.n_rows)}."


def _flips(flipped: int, n_rows: int) -> str:
    if not flipped:
        return "no prediction flips"
    verb = "flips" if flipped == 1 else "flip"
    return f"{flipped} of {n_rows} predictions {verb}"


@dataclass(frozen=True)
class MethodDecision:
    """Whether two methods agree on the same rows.

    Attributes
    ----------
    method_a, method_b : str
    mean_cosine, min_cosine : float
        Over the rows; they agree from a mean of :data:`AGREE_COSINE`.
    rows_agreeing, n_rows : int
        Rows whose cosine is at least :data:`AGREE_COSINE`, and rows compared.
    mean_spearman, mean_top_k_overlap : float
    """

    method_a: str
    method_b: str
    mean_cosine: float
    min_cosine: float
    rows_agreeing: int
    n_rows: int
    mean_spearman: float
    mean_top_k_overlap: float

    @property
    def agree(self) -> bool:
        """Whether the mean cosine reaches :data:`AGREE_COSINE`."""
        return bool(self.mean_cosine >= AGREE_COSINE)

    @property
    def pair(self) -> str:
        return f"{self.method_a}–{self.method_b}"

    @property
    def line(self) -> str:
        """One sentence about this pair."""
        word = "agree" if self.agree else "disagree"
        return (
            f"{self.method_a} and {self.method_b} {word}: mean cosine {self.mean_cosine:.3g} "
            f"(agreement from {AGREE_COSINE:g}), {self.min_cosine:.3g} at worst, "
            f"{self.rows_agreeing} of {self.n_rows} rows from {AGREE_COSINE:g}; Spearman "
            f"{self.mean_spearman:.3g}, top-k overlap {self.mean_top_k_overlap:.3g}."
        )


@dataclass(frozen=True)
class Verdict:
    """A comparison's verdict: one sentence, its lines and the decisions behind them.

    Attributes
    ----------
    sentence : str
        The verdict in one or two sentences.
    decisions : tuple of BackendDecision or MethodDecision
        One per backend compared with the reference, or per pair of methods.
    notes : tuple of str
        What was left out (skipped backends or methods, unmeasured seed noise).
    """

    sentence: str
    decisions: tuple[Any, ...]
    notes: tuple[str, ...] = ()

    @property
    def lines(self) -> tuple[str, ...]:
        """One line per decision, then the notes."""
        return (*(d.line for d in self.decisions), *self.notes)

    @property
    def changed(self) -> tuple[str, ...]:
        """Backend comparisons: the backends that change the explanation beyond noise."""
        return tuple(
            d.backend for d in self.decisions if isinstance(d, BackendDecision) and d.beyond_noise
        )

    def __str__(self) -> str:
        return "\n".join([self.sentence, *(f"  {line}" for line in self.lines)])


def _seeded(method: str) -> bool:
    """Whether the registered explainer ``method`` takes a seed (is stochastic)."""
    from xai_core.errors import XaiError
    from xai_core.plugin.resolve import explainer_class

    try:
        return "seed" in explainer_class(method).option_names()
    except XaiError:
        return False


def backend_verdict(c: BackendComparison) -> Verdict:
    """Which backend changes ``c``'s explanation, by how much, beyond noise or not, and flips.

    Reads ``c.rows`` (its ``beyond_noise`` and ``threshold``, decided by
    :func:`rounding_threshold` and the seed noise when compared) and ``c.formats``.
    """
    basis = "seed noise" if c.noise is not None else "rounding"
    decisions = []
    for name, rows in c.rows.groupby("backend", sort=False):
        if name == c.reference:
            continue
        decisions.append(
            BackendDecision(
                backend=str(name),
                number_format=c.formats.get(str(name), "fp32"),
                basis=basis,
                threshold=float(rows["threshold"].max()),
                max_rel_diff=float(rows["max_rel_diff"].max()),
                max_abs_diff=float(rows["max_abs_diff"].max()),
                rows_beyond=int(rows["beyond_noise"].sum()),
                n_rows=len(rows),
                mean_cosine=float(rows["cosine"].mean()),
                min_cosine=float(rows["cosine"].min()),
                mean_spearman=_mean_or_none(rows["spearman"]),
                mean_top_k_overlap=_mean_or_none(rows["top_k_overlap"]),
                flipped=int(rows["flipped"].sum()),
            )
        )
    notes = [f"{name}: not compared ({reason})." for name, reason in sorted(c.skipped.items())]
    if c.noise is None and _seeded(c.method):
        notes.append(
            f"Seed noise not measured (n_seeds={c.options.get('n_seeds', 1)}): {c.method}'s "
            "differences were judged against rounding alone; n_seeds=3 measures the spread "
            "of its seeded draws."
        )
    return Verdict(_backend_sentence(c, decisions), tuple(decisions), tuple(notes))


def _backend_sentence(c: BackendComparison, decisions: list[BackendDecision]) -> str:
    if not decisions:
        return f"{c.method} ran on {c.reference} only: there is no other backend to compare with."
    changed = [d for d in decisions if d.beyond_noise]
    within = [d.backend for d in decisions if not d.beyond_noise]
    noise = "the method's seed noise" if c.noise is not None else "rounding"
    parts = []
    if changed:
        moves = [
            f"{d.backend} changes the attributions beyond "
            f"{noise if c.noise is not None else d.number_format + ' rounding'} (by up to "
            f"{_relative(d.max_rel_diff)} of the attribution scale)"
            for d in changed
        ]
        parts.append("; ".join(moves))
    if within:
        verb = "agrees" if len(within) == 1 else "agree"
        parts.append(f"{_names(within)} {verb} with {c.reference} within {noise}")
    flips = [d for d in decisions if d.flipped]
    if flips:
        tail = "Predictions flip on " + _names(
            [f"{d.backend} ({d.flipped} of {d.n_rows})" for d in flips]
        )
    else:
        tail = "No prediction flips"
    return f"{c.method}: {'; '.join(parts)}. {tail}."


def method_verdict(c: MethodComparison) -> Verdict:
    """Which methods of ``c`` agree: a mean cosine of at least :data:`AGREE_COSINE`."""
    decisions = []
    for (a, b), rows in c.rows.groupby(["method_a", "method_b"], sort=False):
        cosine = rows["cosine"].to_numpy(dtype=np.float64)
        decisions.append(
            MethodDecision(
                method_a=str(a),
                method_b=str(b),
                mean_cosine=float(np.mean(cosine)),
                min_cosine=float(np.min(cosine)),
                rows_agreeing=int((cosine >= AGREE_COSINE).sum()),
                n_rows=len(rows),
                mean_spearman=float(rows["spearman"].mean()),
                mean_top_k_overlap=float(rows["top_k_overlap"].mean()),
            )
        )
    notes = tuple(f"{name}: not compared ({reason})." for name, reason in sorted(c.skipped.items()))
    return Verdict(_method_sentence(c, decisions), tuple(decisions), notes)


def _method_sentence(c: MethodComparison, decisions: list[MethodDecision]) -> str:
    methods = _names(list(c.explanations))
    agree = [d for d in decisions if d.agree]
    disagree = [d for d in decisions if not d.agree]
    if not disagree:
        low = min(decisions, key=lambda d: d.mean_cosine)
        return (
            f"{methods} agree on {c.backend}: every pair's mean cosine is at least "
            f"{AGREE_COSINE:g} (lowest {low.pair}, {low.mean_cosine:.3g})."
        )
    if not agree:
        high = max(decisions, key=lambda d: d.mean_cosine)
        return (
            f"{methods} disagree on {c.backend}: no pair reaches a mean cosine of "
            f"{AGREE_COSINE:g} (highest {high.pair}, {high.mean_cosine:.3g})."
        )
    verb = "does" if len(disagree) == 1 else "do"
    return (
        f"On {c.backend}, "
        + _names([f"{d.pair} ({d.mean_cosine:.3g})" for d in agree])
        + f" agree{'s' if len(agree) == 1 else ''} (mean cosine from {AGREE_COSINE:g}); "
        + _names([f"{d.pair} ({d.mean_cosine:.3g})" for d in disagree])
        + f" {verb} not."
    )
