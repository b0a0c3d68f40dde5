"""Matplotlib figures of an explanation, for notebooks and papers: ``e.plot.bar()`` and friends.

``bar`` (mean |attribution|, or one row's signed values), ``waterfall`` (one row from the
base value to the output), ``beeswarm`` (every row's attribution per feature, coloured by
the feature's value), ``image`` (each image beside its attribution overlay, with a
colour bar) and ``series`` (each channel of a series as a line over its steps, the
attribution of every step shaded behind it); ``spectrogram`` and ``skeleton`` for sound and
pose inputs (:mod:`xai_core.attribution.plot_signals`). Colours are the report's: red
raises the explained output, blue lowers it.
Needs matplotlib (``pip install 'xai-core[plot]'``).
"""

from __future__ import annotations

import io
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

import numpy as np

from xai_core.errors import ValidationError
from xai_core.optional import require
from xai_core.report import NEGATIVE, POSITIVE, swarm_offsets

if TYPE_CHECKING:
    from matplotlib.axes import Axes
    from matplotlib.figure import Figure

    from xai_core.attribution.explanation import Explanation

__all__ = ["IMAGE_MODES", "ExplanationPlots", "summary_png"]

#: The ``mode`` of :meth:`ExplanationPlots.image`.
IMAGE_MODES = ("signed", "positive", "negative", "absolute")
_RED, _BLUE = tuple(POSITIVE / 255), tuple(NEGATIVE / 255)
_MAX_IMAGE_ROWS = 16
_MAX_SERIES_CHANNELS = 16


def _matplotlib() -> Any:
    return require("matplotlib", extra="plot", need="plots")


def _axes(ax: Axes | None, size: tuple[float, float]) -> Axes:
    if ax is not None:
        return ax
    _matplotlib()
    import matplotlib.pyplot as plt

    return plt.subplots(figsize=size)[1]


def _cmap(mode: str) -> Any:
    from matplotlib.colors import LinearSegmentedColormap

    colours = {
        "signed": [_BLUE, (1, 1, 1), _RED],
        "positive": [(1, 1, 1), _RED],
        "negative": [(1, 1, 1), _BLUE],
        "absolute": [(1, 1, 1), (0.25, 0.0, 0.35)],
    }[mode]
    return LinearSegmentedColormap.from_list(f"xai-{mode}", colours)


class ExplanationPlots:
    """The figures of one explanation; ``e.plot`` returns one."""

    def __init__(self, explanation: Explanation) -> None:
        self._e = explanation

    # -- helpers ------------------------------------------------------------------------
    def _flat(self) -> tuple[np.ndarray, np.ndarray | None, tuple[str, ...]]:
        from xai_core.attribution.views import feature_names_of

        e = self._e
        n = len(e)
        values = np.nan_to_num(e.values.reshape(n, -1).astype(np.float64))
        data = None if e.data is None else e.data.reshape(n, -1).astype(np.float64)
        return values, data, feature_names_of(e)

    def _row(self, row: int) -> int:
        n = len(self._e)
        if isinstance(row, bool) or not isinstance(row, (int, np.integer)) or not -n <= row < n:
            raise ValidationError(f"row must be an int in [-{n}, {n}); got {row!r}.")
        return int(row) % n

    # -- text ---------------------------------------------------------------------------
    def text(self, scale: str = "row", max_rows: int = 20) -> Any:
        """A text explanation's tokens highlighted (red raises, blue lowers), as a figure.

        The matplotlib rendering of what notebooks show as HTML
        (:func:`xai_core.text.text_html`); ``scale`` is ``"row"`` (one colour scale per
        text) or ``"shared"``.
        """
        from xai_core.text.render import text_png

        return text_png(self._e, scale=scale, max_rows=max_rows)

    # -- bar ----------------------------------------------------------------------------
    def bar(self, max_display: int = 10, ax: Axes | None = None) -> Axes:
        """Mean |attribution| per feature over the rows, largest on top (one row: its signed values).

        The features beyond ``max_display`` are summed into one last bar, as shap does.

        Returns
        -------
        matplotlib.axes.Axes
        """
        values, data, names = self._flat()
        single = len(values) == 1
        score = values[0] if single else np.abs(values).mean(axis=0)
        order = np.argsort(-np.abs(score), kind="stable")
        shown, rest = order[:max_display], order[max_display:]
        heights = list(score[shown])
        labels = [
            names[j] if not single or data is None else f"{names[j]} = {data[0, j]:.4g}"
            for j in shown
        ]
        if rest.size:
            heights.append(float(score[rest].sum()))
            labels.append(f"sum of {rest.size} other features")
        ax = _axes(ax, (7, 0.45 * len(heights) + 1))
        y = np.arange(len(heights))[::-1]
        colours = [_RED if h >= 0 else _BLUE for h in heights] if single else [_RED] * len(heights)
        ax.barh(y, heights, color=colours, height=0.7)
        ax.set_yticks(y, labels)
        for yi, h in zip(y, heights):
            ax.text(
                h,
                yi,
                f" {h:+.3g} " if single else f" {h:.3g}",
                va="center",
                ha="left" if h >= 0 else "right",
                fontsize=9,
            )
        ax.axvline(0, color="#888", lw=0.8)
        ax.set_xlabel("attribution" if single else "mean |attribution|")
        ax.spines[["top", "right"]].set_visible(False)
        ax.margins(x=0.15)
        return ax

    # -- waterfall ----------------------------------------------------------------------
    def waterfall(self, row: int = 0, max_display: int = 10, ax: Axes | None = None) -> Axes:
        """One row from its base value to its output: each feature a step, largest at the top.

        The last bar sums the features beyond ``max_display``; the steps end at
        ``base value + sum of attributions`` (``f(x)`` for additive methods).
        """
        i = self._row(row)
        values, data, names = self._flat()
        v = values[i]
        order = np.argsort(-np.abs(v), kind="stable")
        shown, rest = order[:max_display], order[max_display:]
        steps = list(v[shown])
        labels = [names[j] if data is None else f"{names[j]} = {data[i, j]:.4g}" for j in shown]
        if rest.size:
            steps.append(float(v[rest].sum()))
            labels.append(f"{rest.size} other features")
        base = float(self._e.base_values[i])
        # drawn bottom-up: the last step (smallest) at the bottom, starting from the base value
        steps, labels = steps[::-1], labels[::-1]
        starts = base + np.concatenate([[0.0], np.cumsum(steps)[:-1]])
        ax = _axes(ax, (7, 0.45 * len(steps) + 1.4))
        y = np.arange(len(steps))
        ax.barh(y, steps, left=starts, color=[_RED if s >= 0 else _BLUE for s in steps], height=0.7)
        for yi, s0, s in zip(y, starts, steps):
            ax.text(
                s0 + s, yi, f" {s:+.3g} ", va="center", ha="left" if s >= 0 else "right", fontsize=9
            )
        end = base + float(np.sum(steps))
        ax.axvline(base, color="#888", lw=0.8, ls="--")
        ax.axvline(end, color="#333", lw=0.8)
        ax.set_yticks(y, labels)
        ax.set_xlabel(f"base value {base:.4g}  →  output {end:.4g}")
        ax.set_title(self._heading(i), fontsize=10)
        ax.spines[["top", "right"]].set_visible(False)
        ax.margins(x=0.3)
        return ax

    def _heading(self, i: int) -> str:
        """Row ``i``'s title: its outcomes when known (:mod:`xai_core.attribution.outcomes`)."""
        from xai_core.attribution.outcomes import row_heading

        return row_heading(self._e, i)

    # -- beeswarm -----------------------------------------------------------------------
    def beeswarm(self, max_display: int = 10, ax: Axes | None = None) -> Axes:
        """Every row's attribution of the top features (by mean |attribution|), one line each.

        Points are coloured by the feature's value, low blue to high red (5th to 95th
        percentile of that feature), grey without data; rows that overlap are spread
        vertically by their rank within a bin.
        """
        values, data, names = self._flat()
        n = len(values)
        order = np.argsort(-np.abs(values).mean(axis=0), kind="stable")[:max_display]
        ax = _axes(ax, (7, 0.5 * len(order) + 1.2))
        cmap = _cmap("signed")
        points = None
        for pos, j in enumerate(order):
            y = len(order) - 1 - pos
            v = values[:, j]
            jitter = swarm_offsets(v) * 0.35
            if data is not None:
                lo, hi = np.nanpercentile(data[:, j], [5, 95])
                c = np.clip((data[:, j] - lo) / (hi - lo if hi > lo else 1.0), 0, 1)
                points = ax.scatter(v, y + jitter, c=c, cmap=cmap, vmin=0, vmax=1, s=12, lw=0)
            else:
                ax.scatter(v, y + jitter, color="#777", s=12, lw=0)
        ax.set_yticks(np.arange(len(order))[::-1], [names[j] for j in order])
        ax.axvline(0, color="#888", lw=0.8)
        ax.set_xlabel(f"attribution ({n} rows)")
        ax.spines[["top", "right"]].set_visible(False)
        if points is not None:
            bar = ax.figure.colorbar(
                points, ax=ax, ticks=[0, 1], fraction=0.04, aspect=40, pad=0.02
            )
            bar.ax.set_yticklabels(["low", "high"])
            bar.set_label("feature value")
        return ax

    # -- images -------------------------------------------------------------------------
    def image(
        self,
        rows: int | Sequence[int] = 0,
        mode: str = "signed",
        scale: str = "row",
        fig: Figure | None = None,
    ) -> Figure:
        """Each image beside its attribution overlay, with a colour bar.

        Parameters
        ----------
        rows : int or sequence of int
            The rows drawn (at most 16), one line of the figure each.
        mode : {"signed", "positive", "negative", "absolute"}
            ``signed``: blue below zero, red above, on ``[-vmax, vmax]``; ``positive`` /
            ``negative``: only that sign, from 0; ``absolute``: ``|attribution|``.
        scale : {"row", "shared"}
            One symmetric scale per row, or one for all the drawn rows.

        Returns
        -------
        matplotlib.figure.Figure
        """
        from xai_core.attribution.views import explanation_layout

        if mode not in IMAGE_MODES:
            raise ValidationError(f"mode must be one of {IMAGE_MODES}; got {mode!r}.")
        if scale not in ("row", "shared"):
            raise ValidationError(f"scale must be 'row' or 'shared'; got {scale!r}.")
        e = self._e
        layout = explanation_layout(e)
        if layout is None:
            raise ValidationError(
                "image plots need image rows: values of an image shape, or meta['image_shape']; "
                f"got values of shape {e.values.shape}."
            )
        picked = [self._row(r) for r in ([rows] if np.ndim(rows) == 0 else rows)]
        if not picked or len(picked) > _MAX_IMAGE_ROWS:
            raise ValidationError(f"rows must name 1 to {_MAX_IMAGE_ROWS} rows; got {len(picked)}.")
        heat = layout.grey(e.values[picked])
        heat = {
            "signed": heat,
            "positive": np.clip(heat, 0, None),
            "negative": np.clip(-heat, 0, None),
            "absolute": np.abs(heat),
        }[mode]
        heat = np.nan_to_num(heat)
        per_row = np.abs(heat).reshape(len(picked), -1).max(axis=1)
        vmax = per_row if scale == "row" else np.full(len(picked), per_row.max())
        vmax = np.where(vmax > 0, vmax, 1.0)
        if fig is None:
            _matplotlib()
            import matplotlib.pyplot as plt

            fig = plt.figure(figsize=(6.4, 3.0 * len(picked)))
        axes = fig.subplots(len(picked), 2, squeeze=False)
        pictures = None if e.data is None else layout.to_hwc(e.data[picked]).astype(np.float64)
        cmap = _cmap(mode)
        for k, i in enumerate(picked):
            left, right = axes[k]
            if pictures is not None:
                img = pictures[k]
                lo, hi = float(img.min()), float(img.max())
                img = (img - lo) / (hi - lo if hi > lo else 1.0)
                left.imshow(
                    img[..., 0] if img.shape[-1] == 1 else img[..., :3],
                    cmap="gray",
                    vmin=0,
                    vmax=1,
                    interpolation="nearest",
                )
            left.set_title(self._heading(i), fontsize=9)
            low = -vmax[k] if mode == "signed" else 0.0
            shown = right.imshow(
                heat[k], cmap=cmap, vmin=low, vmax=vmax[k], interpolation="nearest"
            )
            if pictures is not None:  # the input as dark ink over the map, as in the report
                ink = layout.grey(e.data[[i]])[0].astype(np.float64)
                right.imshow(ink, cmap="Greys", alpha=0.35, interpolation="nearest")
            right.set_title(f"{mode} attribution ({e.method or 'unnamed'})", fontsize=9)
            for a in (left, right):
                a.set_xticks([])
                a.set_yticks([])
            if scale == "row" or k == len(picked) - 1:
                fig.colorbar(
                    shown,
                    ax=right if scale == "row" else axes[:, 1].tolist(),
                    fraction=0.046,
                    pad=0.04,
                )
        return fig

    # -- sound and poses -----------------------------------------------------------------
    def spectrogram(
        self,
        row: int = 0,
        sample_rate: float = 44100,
        fft_size: int = 1024,
        fig: Figure | None = None,
    ) -> Figure:
        """One row's attribution on its spectrogram (time x frequency), and summed per frame.

        For rows of shape (frames, bins) or (frames, bins, 1), as a Teachable Machine sound
        model takes them (:func:`~xai_core.importers.teachable_sound.prepare_audio`).

        Parameters
        ----------
        row : int
        sample_rate : float, default=44100
            Hz; with ``fft_size`` it sets the axes: a frame every ``fft_size / sample_rate``
            seconds, bin ``k`` at ``k * sample_rate / (2 * fft_size)`` Hz (speech-commands'
            analyser window is ``2 * fft_size``).
        fft_size : int, default=1024
        fig : Figure, optional

        Returns
        -------
        matplotlib.figure.Figure
            Two axes: the heatmap over the (grey) input, and the bar chart of
            :func:`~xai_core.attribution.plot_signals.frame_totals`.
        """
        from xai_core.attribution.plot_signals import spectrogram_plot

        return spectrogram_plot(self._e, self, row, sample_rate, fft_size, fig)

    def skeleton(
        self,
        row: int = 0,
        keypoints: Any = None,
        grid: tuple[int, int] | None = None,
        output_stride: int = 16,
        ax: Axes | None = None,
    ) -> Axes:
        """Attributions summed per PoseNet keypoint, on PoseNet's skeleton.

        For rows of PoseNet's outputs as a Teachable Machine pose model takes them
        (:mod:`xai_core.pose`): each keypoint's total over its score, dy and dx channels
        and every grid cell (:func:`~xai_core.pose.keypoint_totals`); a joint's size is
        its |total|, its colour the sign.

        Parameters
        ----------
        row : int
        keypoints : array_like of shape (17, 2 | 3) or DataFrame, optional
            Where to draw the joints: ``(x, y[, score])`` in PoseNet's part order, or a
            DataFrame with ``x``, ``y`` (and ``part``) columns. By default decoded from the
            row as PoseNet's single-pose decoder does.
        grid : (int, int), optional
            PoseNet's output grid; inferred for a square one (17 x 17 at 257 px, stride 16).
        output_stride : int, default=16
        ax : Axes, optional

        Returns
        -------
        matplotlib.axes.Axes
        """
        from xai_core.attribution.plot_signals import skeleton_plot

        return skeleton_plot(self._e, self, row, grid, output_stride, keypoints, ax)

    # -- series -------------------------------------------------------------------------
    def series(
        self,
        row: int = 0,
        order: str | None = None,
        channels: Sequence[int] | None = None,
        mode: str = "signed",
        fig: Figure | None = None,
    ) -> Figure:
        """One row of a series: each channel's values over the steps, its attribution shaded.

        Parameters
        ----------
        row : int
        order : {"t", "tc", "ct"}, optional
            The sample's axis order; by default the one the network declared
            (``meta["series_order"]``), else the rule of :mod:`xai_core.series` (the
            channel axis is the shorter end).
        channels : sequence of int, optional
            The channels drawn (at most 16), one panel each; by default the first 16.
        mode : {"signed", "positive", "negative", "absolute"}
            As for :meth:`image`; one symmetric scale for the whole row.

        Returns
        -------
        matplotlib.figure.Figure
            One panel per channel sharing the step axis, and a colour bar.
        """
        from xai_core.series import recorded_layout, series_layout

        if mode not in IMAGE_MODES:
            raise ValidationError(f"mode must be one of {IMAGE_MODES}; got {mode!r}.")
        e = self._e
        i = self._row(row)
        if order is None:
            layout = recorded_layout(e.values.shape[1:], e.meta.get("series_order"))
        else:
            layout = series_layout(e.values.shape[1:], order=order)
        values = np.nan_to_num(layout.to_tc(e.values[[i]])[0].astype(np.float64))
        data = None if e.data is None else layout.to_tc(e.data[[i]])[0].astype(np.float64)
        picked = list(range(min(layout.channels, _MAX_SERIES_CHANNELS)))
        if channels is not None:
            picked = [int(c) for c in channels]
            bad = [c for c in picked if not 0 <= c < layout.channels]
            if bad or not picked or len(picked) > _MAX_SERIES_CHANNELS:
                raise ValidationError(
                    f"channels must name 1 to {_MAX_SERIES_CHANNELS} of the {layout.channels} "
                    f"channels; got {list(channels)}."
                )
        heat = {
            "signed": values,
            "positive": np.clip(values, 0, None),
            "negative": np.clip(-values, 0, None),
            "absolute": np.abs(values),
        }[mode]
        vmax = float(np.abs(heat[:, picked]).max()) or 1.0
        low = -vmax if mode == "signed" else 0.0
        if fig is None:
            _matplotlib()
            import matplotlib.pyplot as plt

            fig = plt.figure(figsize=(7.5, 1.3 + 1.5 * len(picked)))
        axes = fig.subplots(len(picked), 1, squeeze=False, sharex=True)[:, 0]
        steps = np.arange(layout.steps)
        cmap, shown = _cmap(mode), None
        for ax, c in zip(axes, picked):
            line = values[:, c] if data is None else data[:, c]
            lo, hi = float(line.min()), float(line.max())
            pad = (hi - lo) * 0.08 or 0.5
            shown = ax.imshow(
                heat[None, :, c],
                cmap=cmap,
                vmin=low,
                vmax=vmax,
                aspect="auto",
                interpolation="nearest",
                extent=(-0.5, layout.steps - 0.5, lo - pad, hi + pad),
            )
            ax.plot(steps, line, color="#222", lw=1.2)
            ax.set_ylim(lo - pad, hi + pad)
            ax.set_ylabel(f"channel {c}", fontsize=9)
            ax.spines[["top", "right"]].set_visible(False)
        axes[-1].set_xlabel("step")
        what = "input" if data is not None else "attribution"
        axes[0].set_title(
            f"{self._heading(i)}; {what} over the steps, {mode} attribution "
            f"({e.method or 'unnamed'}) shaded",
            fontsize=9,
        )
        fig.colorbar(shown, ax=axes.tolist(), fraction=0.03, pad=0.02)
        return fig


def _series_channels(e: Explanation) -> int:
    from xai_core.series import recorded_layout

    return recorded_layout(e.values.shape[1:], e.meta.get("series_order")).channels


def summary_png(e: Explanation, dpi: int = 80) -> bytes | None:
    """A static PNG of the explanation for viewers that show no HTML; None without matplotlib.

    Images: the first rows beside their overlays; texts: the first five with their tokens
    highlighted; tabular rows: the waterfall of a single row, else the mean |attribution|
    bar chart. Drawn on a figure of its own (no pyplot),
    so a notebook does not show it twice.
    """
    try:
        from matplotlib.figure import Figure
    except ImportError:
        return None
    from xai_core.attribution.views import explanation_layout

    if len(e) == 0:
        return None
    plots = ExplanationPlots(e)
    if "tokens" in e.meta:  # a text explanation: its tokens highlighted
        from xai_core.text.render import text_png

        fig = text_png(e, max_rows=5, fig=Figure())
        buf = io.BytesIO()
        fig.savefig(buf, format="png", dpi=dpi, metadata={"Software": None})
        return buf.getvalue()
    if e.meta.get("series_order") is not None and explanation_layout(e) is None:
        fig = Figure(figsize=(7.5, 4.5))
        plots.series(0, channels=range(min(_series_channels(e), 4)), fig=fig)
    elif explanation_layout(e) is not None:
        rows = list(range(min(len(e), 3)))
        fig = Figure(figsize=(6.4, 2.6 * len(rows)))
        plots.image(rows, fig=fig)
    else:
        fig = Figure(figsize=(7, 4.5))
        ax = fig.subplots()
        plots.waterfall(0, ax=ax) if len(e) == 1 else plots.bar(ax=ax)
    if explanation_layout(e) is None and e.meta.get("series_order") is None:
        fig.tight_layout()
    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=dpi, metadata={"Software": None})
    return buf.getvalue()
