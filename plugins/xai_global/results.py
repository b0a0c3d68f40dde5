"""The results of the global methods; each renders in a notebook, a report and matplotlib."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from xai_core import UnknownNameError, ValidationError
from xai_core.optional import require

__all__ = ["AccumulatedLocalEffects", "PermutationImportance"]


class _Renders:
    def _repr_html_(self) -> str:
        from xai_core.report import render_fragment

        return render_fragment(self)


def _axes(ax: Any, size: tuple[float, float]) -> Any:
    if ax is not None:
        return ax
    require("matplotlib", extra="plot", need="plots")
    import matplotlib.pyplot as plt

    return plt.subplots(figsize=size)[1]


@dataclass(frozen=True, eq=False)
class PermutationImportance(_Renders):
    """The drop in one score when each feature is shuffled, per repeat.

    Attributes
    ----------
    feature_names : tuple of str
    scorer : str
        The scorer's name (scikit-learn's, or a callable's ``__name__``).
    baseline : float
        The score on the data as given.
    importances : ndarray of shape (n_features, n_repeats)
        ``baseline - score`` with the feature's column shuffled, per repeat
        (scikit-learn's ``importances``).
    seed : int
        scikit-learn's ``random_state``.
    n_samples : int
    """

    feature_names: tuple[str, ...]
    scorer: str
    baseline: float
    importances: np.ndarray
    seed: int
    n_samples: int

    @property
    def importances_mean(self) -> np.ndarray:
        """Mean over the repeats, shape (n_features,)."""
        return self.importances.mean(axis=1)

    @property
    def importances_std(self) -> np.ndarray:
        """Standard deviation over the repeats (``ddof=0``, as scikit-learn), shape (n_features,)."""
        return self.importances.std(axis=1)

    @property
    def n_repeats(self) -> int:
        return int(self.importances.shape[1])

    def order(self) -> np.ndarray:
        """Feature indices by decreasing mean importance (ties in feature order)."""
        return np.argsort(-self.importances_mean, kind="stable")

    def to_frame(self) -> Any:
        """One row per feature, most important first: ``importance_mean``, ``importance_std``, and each repeat.

        Returns
        -------
        pandas.DataFrame
            Indexed by feature name.
        """
        import pandas as pd

        order = self.order()
        frame = pd.DataFrame(
            {
                "importance_mean": self.importances_mean[order],
                "importance_std": self.importances_std[order],
            },
            index=pd.Index([self.feature_names[j] for j in order], name="feature"),
        )
        for r in range(self.n_repeats):
            frame[f"repeat_{r}"] = self.importances[order, r]
        return frame

    def plot(self, max_display: int = 20, ax: Any = None) -> Any:
        """A box per feature of its importances over the repeats, most important on top.

        Returns
        -------
        matplotlib.axes.Axes
        """
        order = self.order()[:max_display][::-1]
        ax = _axes(ax, (7, 0.4 * len(order) + 1.2))
        import matplotlib

        new = tuple(int(p) for p in matplotlib.__version__.split(".")[:2]) >= (3, 10)
        ax.boxplot(
            [self.importances[j] for j in order],
            **({"orientation": "horizontal"} if new else {"vert": False}),
        )
        ax.set_yticks(np.arange(1, len(order) + 1), [self.feature_names[j] for j in order])
        ax.axvline(0, color="#999", linewidth=0.8)
        ax.set_xlabel(f"decrease in {self.scorer}")
        ax.set_title("Permutation importance")
        return ax

    def __repr__(self) -> str:
        top = self.feature_names[int(self.order()[0])] if self.feature_names else "-"
        return (
            f"PermutationImportance({self.scorer}, {len(self.feature_names)} features, "
            f"{self.n_repeats} repeats; top {top!r})"
        )


@dataclass(frozen=True, eq=False)
class AccumulatedLocalEffects(_Renders):
    """First-order ALE curves of some features, for every model output.

    Attributes
    ----------
    features : tuple of str
    edges : tuple of ndarray
        Per feature, its bin edges, shape (n_bins + 1,).
    effects : tuple of ndarray
        Per feature, the centred effect at each edge, shape (n_bins + 1, n_outputs).
    counts : tuple of ndarray of int
        Per feature, the rows in each bin, shape (n_bins,).
    output_names : tuple of str
    grid_size : int
    n_samples : int
    """

    features: tuple[str, ...]
    edges: tuple[np.ndarray, ...]
    effects: tuple[np.ndarray, ...]
    counts: tuple[np.ndarray, ...]
    output_names: tuple[str, ...]
    grid_size: int
    n_samples: int

    def _feature(self, feature: Any) -> int:
        if isinstance(feature, str):
            if feature not in self.features:
                raise UnknownNameError("feature", feature, self.features)
            return self.features.index(feature)
        if isinstance(feature, (int, np.integer)) and not isinstance(feature, bool):
            if not 0 <= feature < len(self.features):
                raise ValidationError(
                    f"feature must be in [0, {len(self.features)}) or a name; got {feature}."
                )
            return int(feature)
        raise ValidationError(f"feature must be a name or an index; got {feature!r}.")

    def _output(self, output: Any) -> int:
        if output is None:
            return 0 if len(self.output_names) == 1 else -1
        if isinstance(output, str):
            if output not in self.output_names:
                raise UnknownNameError("output", output, self.output_names)
            return self.output_names.index(output)
        if isinstance(output, (int, np.integer)) and not isinstance(output, bool):
            if not 0 <= output < len(self.output_names):
                raise ValidationError(
                    f"output must be in [0, {len(self.output_names)}) or a name; got {output}."
                )
            return int(output)
        raise ValidationError(f"output must be a name or an index; got {output!r}.")

    def curve(self, feature: Any, output: Any = None) -> Any:
        """One feature's curve as PyALE returns it: ``eff`` and ``size`` indexed by the edges.

        ``size`` at an edge is the rows of the bin that ends there (0 at the lowest edge).
        Without ``output``, a model of several outputs gives one ``eff`` column per output.

        Returns
        -------
        pandas.DataFrame
        """
        import pandas as pd

        f = self._feature(feature)
        o = self._output(output)
        size = np.concatenate([[0], self.counts[f]])
        index = pd.Index(self.edges[f], name=self.features[f])
        if o >= 0:
            return pd.DataFrame({"eff": self.effects[f][:, o], "size": size}, index=index)
        frame = pd.DataFrame(self.effects[f], index=index, columns=list(self.output_names))
        frame["size"] = size
        return frame

    def to_frame(self) -> Any:
        """Every curve in long form: ``feature``, ``value`` (an edge), ``output``, ``effect``, ``size``.

        Returns
        -------
        pandas.DataFrame
        """
        import pandas as pd

        parts = []
        for f, name in enumerate(self.features):
            e = self.edges[f]
            size = np.concatenate([[0], self.counts[f]])
            for o, out in enumerate(self.output_names):
                parts.append(
                    pd.DataFrame(
                        {
                            "feature": name,
                            "value": e,
                            "output": out,
                            "effect": self.effects[f][:, o],
                            "size": size,
                        }
                    )
                )
        return pd.concat(parts, ignore_index=True)

    def plot(self, feature: Any = None, output: Any = None, ax: Any = None) -> Any:
        """One feature's curves (one line per output, or the ``output`` asked for).

        Without ``feature``, a figure with one panel per feature.

        Returns
        -------
        matplotlib.axes.Axes, or matplotlib.figure.Figure without ``feature``
        """
        if feature is None:
            require("matplotlib", extra="plot", need="plots")
            import matplotlib.pyplot as plt

            k = len(self.features)
            cols = min(3, k)
            rows = -(-k // cols)
            fig, axes = plt.subplots(rows, cols, figsize=(4 * cols, 3 * rows), squeeze=False)
            for f in range(k):
                self.plot(f, output, ax=axes.flat[f])
            for extra in axes.flat[k:]:
                extra.set_visible(False)
            fig.tight_layout()
            return fig
        f = self._feature(feature)
        o = self._output(output)
        ax = _axes(ax, (6, 3.5))
        outs = range(len(self.output_names)) if o < 0 else [o]
        for i in outs:
            ax.plot(self.edges[f], self.effects[f][:, i], marker=".", label=self.output_names[i])
        ax.axhline(0, color="#999", linewidth=0.8)
        ax.set_xlabel(self.features[f])
        ax.set_ylabel("accumulated local effect")
        if len(outs) > 1:
            ax.legend()
        return ax

    def __repr__(self) -> str:
        return (
            f"AccumulatedLocalEffects({len(self.features)} features, {len(self.output_names)} "
            f"output(s), grid_size={self.grid_size})"
        )
