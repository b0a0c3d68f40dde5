"""Figures of attributions on sound and pose inputs: ``e.plot.spectrogram()`` and ``e.plot.skeleton()``.

``spectrogram``: one row's attribution as a time x frequency heatmap over the input
spectrogram, and summed per frame (per 23.2 ms window of speech-commands' front end)
beneath it. ``skeleton``: attributions summed per PoseNet keypoint, drawn as coloured
joints on PoseNet's skeleton, the keypoints decoded from the row itself or given.
Colours are the report's: red raises the explained output, blue lowers it.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import numpy as np

from xai_core.errors import ShapeError, ValidationError

if TYPE_CHECKING:
    from matplotlib.axes import Axes
    from matplotlib.figure import Figure

    from xai_core.attribution.explanation import Explanation

__all__ = ["frame_totals", "skeleton_plot", "spectrogram_plot"]


def _grid_of(e: Explanation) -> np.ndarray:
    """Each row's values as (frames, bins): inputs of shape (frames, bins) or (frames, bins, 1)."""
    v = np.asarray(e.values)
    if v.ndim == 4 and v.shape[-1] == 1:
        v = v[..., 0]
    if v.ndim != 3:
        raise ShapeError(
            "spectrogram plots need rows of shape (frames, bins) or (frames, bins, 1); got values "
            f"of shape {e.values.shape}."
        )
    return np.nan_to_num(v.astype(np.float64))


def frame_totals(e: Explanation) -> np.ndarray:
    """Attributions summed over the frequency bins of each frame.

    Returns
    -------
    ndarray of float64, shape (n, frames)
    """
    return _grid_of(e).sum(axis=2)


def spectrogram_plot(
    e: Explanation, plots: Any, row: int, sample_rate: float, fft_size: int, fig: Figure | None
) -> Figure:
    from xai_core.attribution.plot import _cmap, _matplotlib

    i = plots._row(row)
    heat = _grid_of(e)[i]
    frames, bins = heat.shape
    if fig is None:
        _matplotlib()
        import matplotlib.pyplot as plt

        fig = plt.figure(figsize=(7.0, 5.2))
    top, bottom = fig.subplots(
        2, 1, gridspec_kw={"height_ratios": [3, 1.2]}, sharex=True, squeeze=True
    )
    hop = fft_size / sample_rate
    extent = (0.0, frames * hop, 0.0, bins * sample_rate / (2 * fft_size))
    vmax = float(np.abs(heat).max()) or 1.0
    if e.data is not None:
        spec = np.asarray(e.data, dtype=np.float64)[i].reshape(frames, bins)
        top.imshow(spec.T, origin="lower", aspect="auto", extent=extent, cmap="Greys")
    shown = top.imshow(
        heat.T,
        origin="lower",
        aspect="auto",
        extent=extent,
        cmap=_cmap("signed"),
        vmin=-vmax,
        vmax=vmax,
        alpha=0.75 if e.data is not None else 1.0,
    )
    top.set_ylabel("frequency (Hz)")
    top.set_title(f"{plots._heading(i)} ({e.method or 'unnamed'})", fontsize=9)
    fig.colorbar(shown, ax=[top, bottom], fraction=0.046, pad=0.02, label="attribution")
    totals = heat.sum(axis=1)
    from xai_core.attribution.plot import _BLUE, _RED

    starts = np.arange(frames) * hop
    bottom.bar(
        starts, totals, width=hop, align="edge", color=[_RED if t >= 0 else _BLUE for t in totals]
    )
    bottom.axhline(0, color="black", lw=0.6)
    bottom.set_xlabel(f"time (s), {frames} frames of {hop * 1e3:.1f} ms")
    bottom.set_ylabel("sum per frame")
    return fig


def skeleton_plot(
    e: Explanation,
    plots: Any,
    row: int,
    grid: tuple[int, int] | None,
    output_stride: int,
    keypoints: Any,
    ax: Axes | None,
) -> Axes:
    from xai_core.attribution.plot import _BLUE, _RED, _axes
    from xai_core.pose import (
        CHANNELS,
        CONNECTED_PARTS,
        PART_NAMES,
        decode_single_pose,
        keypoint_totals,
    )

    i = plots._row(row)
    n_features = int(np.prod(e.values.shape[1:]))
    if grid is None:
        side = int(round(np.sqrt(n_features / CHANNELS)))
        if side * side * CHANNELS != n_features:
            raise ShapeError(
                f"skeleton plots need PoseNet-output rows (h * w * {CHANNELS} numbers); got "
                f"{n_features} features. Pass grid=(h, w)."
            )
        grid = (side, side)
    values = np.nan_to_num(np.asarray(e.values, dtype=np.float64).reshape(len(e), -1))
    totals = keypoint_totals(values[[i]], grid)[0]
    if keypoints is None:
        if e.data is None:
            raise ValidationError("skeleton plots need the rows' data or keypoints=.")
        yx = decode_single_pose(np.asarray(e.data).reshape(len(e), -1)[[i]], grid, output_stride)[
            0, :, :2
        ]
    else:
        yx = _keypoint_table(keypoints)
    ax = _axes(ax, (4.8, 5.6))
    pos = {name: yx[k] for k, name in enumerate(PART_NAMES)}
    for a, b in CONNECTED_PARTS:
        ax.plot([pos[a][1], pos[b][1]], [pos[a][0], pos[b][0]], color="0.55", lw=2, zorder=1)
    vmax = float(np.abs(totals).max()) or 1.0
    sizes = 40 + 360 * np.abs(totals) / vmax
    colours = [_RED if t >= 0 else _BLUE for t in totals]
    ax.scatter(yx[:, 1], yx[:, 0], s=sizes, c=colours, edgecolors="black", zorder=2)
    for k, name in enumerate(PART_NAMES):
        ax.annotate(
            f"{name} {totals[k]:+.2g}",
            (yx[k, 1], yx[k, 0]),
            fontsize=7,
            xytext=(4, 3),
            textcoords="offset points",
        )
    ax.invert_yaxis()  # image coordinates: y grows downwards
    ax.set_aspect("equal", adjustable="datalim")
    ax.set_title(
        f"{plots._heading(i)}, attribution per keypoint ({e.method or 'unnamed'})",
        fontsize=9,
    )
    return ax


def _keypoint_table(keypoints: Any) -> np.ndarray:
    """(17, 2) ``(y, x)`` from an array (17, 2 | 3) of (x, y[, score]) or a DataFrame."""
    from xai_core.pose import PART_NAMES

    if hasattr(keypoints, "columns"):
        cols = set(keypoints.columns)
        if not {"x", "y"} <= cols:
            raise ValidationError(
                f"keypoints as a DataFrame need columns 'x' and 'y'; got {sorted(map(str, cols))}."
            )
        if "part" in cols:
            keypoints = keypoints.set_index("part")
        try:
            keypoints = keypoints.loc[list(PART_NAMES)] if "part" in cols else keypoints
        except KeyError as exc:
            raise ValidationError(f"keypoints must name every PoseNet part; {exc}") from None
        arr = keypoints[["x", "y"]].to_numpy(dtype=np.float64)
    else:
        arr = np.asarray(keypoints, dtype=np.float64)
        if arr.ndim == 2 and arr.shape[1] == 3:
            arr = arr[:, :2]
    if arr.shape != (len(PART_NAMES), 2) or not np.isfinite(arr).all():
        raise ShapeError(
            f"keypoints must be 17 finite (x, y[, score]) rows in PoseNet's part order; got "
            f"shape {np.shape(arr)}."
        )
    return arr[:, ::-1]
