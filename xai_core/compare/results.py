"""The results of :func:`~xai_core.compare_backends` and :func:`~xai_core.compare_methods`."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from xai_core.attribution.explanation import Explanation

if TYPE_CHECKING:
    import pandas as pd

    from xai_core.compare.verdict import Verdict

__all__ = ["BackendComparison", "MethodComparison"]


@dataclass(frozen=True, eq=False)
class BackendComparison:
    """One explanation on several backends, against a reference backend.

    Attributes
    ----------
    method : str
    reference : str
        The backend every other is compared with (``"cpu"``, fp32).
    explanations : dict of str to Explanation
        One per backend that ran.
    rows : pandas.DataFrame
        One row per (backend, sample): ``cosine``, ``top_k_overlap``, ``spearman``,
        ``max_abs_diff``, ``max_rel_diff``, ``prediction``, ``reference_prediction``,
        ``flipped``, ``delta`` (convergence delta or additivity error), ``threshold`` (the
        noise, relative to the attribution scale) and ``beyond_noise``
        (``max_rel_diff > threshold``). The rank figures (``spearman``,
        ``top_k_overlap``) of a row within noise are NaN: not meaningful
        (:mod:`xai_core.compare.verdict`).
    summary : pandas.DataFrame
        One row per backend: mean and minimum agreement (the rank figures over the rows
        beyond noise, NaN when none is), the largest differences, flipped predictions,
        rows beyond noise, and the cost counters of the inference pass and of the
        explanation (cycles, estimated seconds, energy).
    skipped : dict of str to str
        Backends that could not run this method, with the reason.
    noise : pandas.DataFrame or None
        For stochastic methods, the agreement of the reference with itself across seeds.
    notes : dict of str to str
        Backends whose gradients were estimates, with what kind
        (``"straight-through (fake-quantised float backward)"`` for an int8 model on
        ``edgetpu``): the explanation's ``meta["gradient"]``.
    formats : dict of str to str
        Each backend's number format (``Backend.number_format``: ``"fp32"``, ``"bf16"``,
        ``"int8"``), whose rounding is the noise of a deterministic method.
    verdict : Verdict
        In plain language: which backend changes the explanation, by how much, beyond
        noise or not, and whether predictions flip
        (:func:`xai_core.compare.verdict.backend_verdict`).
    """

    method: str
    reference: str
    explanations: dict[str, Explanation]
    rows: pd.DataFrame
    summary: pd.DataFrame
    skipped: dict[str, str] = field(default_factory=dict)
    noise: pd.DataFrame | None = None
    options: dict[str, Any] = field(default_factory=dict)
    notes: dict[str, str] = field(default_factory=dict)
    formats: dict[str, str] = field(default_factory=dict)

    @property
    def verdict(self) -> Verdict:
        """Which backend changes the explanation, by how much, beyond noise, and flips."""
        from xai_core.compare.verdict import backend_verdict

        return backend_verdict(self)

    @property
    def flipped_rows(self) -> pd.DataFrame:
        """The (backend, row) pairs whose predicted class differs from the reference's."""
        return self.rows[self.rows["flipped"]]

    def token_shifts(self, top: int = 5) -> pd.DataFrame:
        """Texts only: per backend and text, the ``top`` tokens whose attribution moved most.

        See :func:`xai_core.compare.texts.token_shifts`.
        """
        from xai_core.compare.texts import token_shifts

        return token_shifts(self, top)

    def __repr__(self) -> str:
        ran = ", ".join(self.explanations)
        return (
            f"{self.verdict}\n"
            f"BackendComparison(method={self.method!r}, reference={self.reference!r}, "
            f"backends=[{ran}], skipped={sorted(self.skipped)})"
        )

    def _repr_html_(self) -> str:
        from xai_core.report import render_fragment

        return render_fragment(self)


@dataclass(frozen=True, eq=False)
class MethodComparison:
    """Several methods on the same rows, compared pairwise.

    Attributes
    ----------
    explanations : dict of str to Explanation
    rows : pandas.DataFrame
        One row per (method_a, method_b, sample) with the agreement figures.
    matrices : dict of str to pandas.DataFrame
        ``cosine``, ``top_k_overlap`` and ``spearman``: methods x methods, mean over rows.
    skipped : dict of str to str
    quality : pandas.DataFrame or None
        With ``quality=True``: one row per method, each quality figure beside its spread over
        seeds (:func:`xai_core.compare.scorecard.quality_table`).
    randomisation : dict of str to Randomisation
        With ``quality=True`` on a native network: each method's model parameter
        randomisation curve.
    verdict : Verdict
        In plain language: which methods agree (a mean cosine of at least 0.9,
        :func:`xai_core.compare.verdict.method_verdict`).
    """

    backend: str
    explanations: dict[str, Explanation]
    rows: pd.DataFrame
    matrices: dict[str, pd.DataFrame]
    skipped: dict[str, str] = field(default_factory=dict)
    quality: pd.DataFrame | None = None
    randomisation: dict[str, Any] = field(default_factory=dict)

    @property
    def verdict(self) -> Verdict:
        """Which methods agree: a mean cosine of at least 0.9."""
        from xai_core.compare.verdict import method_verdict

        return method_verdict(self)

    def __repr__(self) -> str:
        return (
            f"{self.verdict}\n"
            f"MethodComparison(methods={list(self.explanations)}, backend={self.backend!r})"
        )

    def _repr_html_(self) -> str:
        from xai_core.report import render_fragment

        return render_fragment(self)
