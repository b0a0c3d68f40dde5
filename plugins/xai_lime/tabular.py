"""lime's tabular neighbourhood, sampled with whole-array operations.

``lime.lime_tabular.LimeTabularExplainer`` perturbs a row by drawing every feature from
the training distribution: with ``discretize_continuous`` a bin (quartile, decile or
entropy bin) with its training frequency, then a value inside the bin from a normal with
the bin's mean and standard deviation truncated to the bin; without it a continuous
feature is ``N(0, 1) * std + mean`` (or ``+ x`` around the instance). A categorical
feature is drawn with its training frequencies. The surrogate sees a 1/0 "same bin (or
category) as the row" indicator, or the standardised continuous value.

:class:`TabularSampler` draws that distribution. It keeps lime's own objects where they
hold the statistics (the discretizer's bins and per-bin means, standard deviations and
bounds; the ``StandardScaler``) and replaces lime's per-feature, per-row calls
(``RandomState.choice`` and ``scipy.stats.truncnorm.rvs``) by operations over all
features and samples of a row at once:

* the bin (or category) is where a uniform falls in the cumulative training
  frequencies, found by a few comparisons against a padded table;
* the value in the bin is a standard normal draw kept when it falls inside the bin's
  bounds and redrawn otherwise (rejection sampling, exact; quartile bins keep about 90%
  of the draws). Bins that would keep fewer than 25% of the draws, and the rare draw
  still rejected after three redraws, use the exact inverse CDF instead, with the
  uniform's relative position inside its bin's frequency interval (uniform, and
  independent of the bin and of the rejected normals) as the probability.

One deliberate difference: where a bin is a single point (equal lower and upper bound)
lime returns the bound in standard units, ``(bound - mean) / std``, that is 0; this
sampler returns the bound itself, the only value in the bin.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
from lime.discretize import (
    BaseDiscretizer,
    DecileDiscretizer,
    EntropyDiscretizer,
    QuartileDiscretizer,
)
from sklearn.preprocessing import StandardScaler

from xai_lime.truncnorm import normal_tails, truncnorm_ppf_from_tails

__all__ = ["DISCRETIZERS", "TabularSampler"]

#: The discretizers lime offers by name.
DISCRETIZERS: dict[str, type] = {
    "quartile": QuartileDiscretizer,
    "decile": DecileDiscretizer,
    "entropy": EntropyDiscretizer,
}

#: Features with at most this many values are drawn by comparisons against a padded
#: cumulative table; wider ones with one ``searchsorted`` per feature.
_NARROW = 32
#: Values drawn per chunk (see ``TabularSampler._sample_row``).
_CHUNK = 2**15
#: Bins keeping fewer normal draws than this are sampled by inversion.
_MIN_ACCEPTANCE = 0.25
#: Rounds of redraws before the remaining draws are sampled by inversion.
_MAX_ROUNDS = 3


class TabularSampler:
    """Training statistics, and lime's neighbourhood of any rows.

    Parameters
    ----------
    training_data : ndarray of float64 of shape (n_train, n_features)
        The data the statistics come from.
    categorical_features : sequence of int, default=()
        Columns whose values are categories (never discretised or scaled).
    discretize_continuous : bool, default=True
        Whether continuous features are discretised (lime's default).
    discretizer : {"quartile", "decile", "entropy"} or lime BaseDiscretizer
        The binning, when ``discretize_continuous``.
    training_labels : ndarray of shape (n_train,), optional
        Labels, for the ``"entropy"`` discretizer.
    sample_around_instance : bool, default=False
        Without discretisation, centre continuous draws on the row instead of the mean.
    random_state : numpy.random.RandomState, optional
        Given to lime's discretizer (the entropy discretizer's tree uses it).
    """

    def __init__(
        self,
        training_data: np.ndarray,
        *,
        categorical_features: Sequence[int] = (),
        discretize_continuous: bool = True,
        discretizer: str | BaseDiscretizer = "quartile",
        training_labels: np.ndarray | None = None,
        sample_around_instance: bool = False,
        random_state: np.random.RandomState | None = None,
    ) -> None:
        training = np.asarray(training_data, dtype=np.float64)
        n_features = training.shape[1]
        self.n_features = n_features
        self.categorical_features = sorted(int(c) for c in categorical_features)
        self.sample_around_instance = bool(sample_around_instance)
        self.discretizer: BaseDiscretizer | None = None
        if discretize_continuous:
            if isinstance(discretizer, BaseDiscretizer):
                self.discretizer = discretizer
            else:
                self.discretizer = DISCRETIZERS[discretizer](
                    training,
                    self.categorical_features,
                    [str(i) for i in range(n_features)],
                    labels=training_labels,
                    random_state=random_state,
                )
            drawn = list(range(n_features))
            drawn_training = self.discretizer.discretize(training)
        else:
            drawn = list(self.categorical_features)
            drawn_training = training
        scaler = StandardScaler(with_mean=False).fit(training)
        self.mean = np.array(scaler.mean_, dtype=np.float64)
        self.scale = np.array(scaler.scale_, dtype=np.float64)
        self.mean[drawn] = 0.0
        self.scale[drawn] = 1.0
        self.drawn = np.asarray(drawn, dtype=np.intp)
        self.continuous = np.setdiff1d(np.arange(n_features), self.drawn).astype(np.intp)
        binned = sorted(self.discretizer.means) if self.discretizer is not None else []
        self.binned = np.asarray(binned, dtype=np.intp)

        # Frequency tables of the drawn features, in lime's order (sorted values).
        self.values: list[np.ndarray] = []
        self.frequencies: list[np.ndarray] = []
        for f in drawn:
            vals, counts = np.unique(drawn_training[:, f], return_counts=True)
            self.values.append(vals)
            self.frequencies.append(counts / counts.sum())
        self._build_tables()

    # -- tables -------------------------------------------------------------------------
    def _build_tables(self) -> None:
        sizes = np.array([len(v) for v in self.values], dtype=np.intp)
        self._width = int(sizes.max()) if len(sizes) else 1
        narrow = sizes <= _NARROW
        self._narrow = np.flatnonzero(narrow)
        self._wide = np.flatnonzero(~narrow)
        self._all_narrow = bool(narrow.all())
        n_drawn, width = len(self.values), self._width
        # cumulative frequencies, padded with inf so padding is never passed
        self._cum = [np.cumsum(f) for f in self.frequencies]
        for c in self._cum:
            c[-1] = 1.0
        narrow_width = int(sizes[narrow].max()) if narrow.any() else 1
        self._narrow_cum = np.full((len(self._narrow), max(narrow_width - 1, 0)), np.inf)
        for row, d in enumerate(self._narrow):
            self._narrow_cum[row, : sizes[d] - 1] = self._cum[d][:-1]
        # value of each (drawn feature, value index), flattened with stride `width`
        vals = np.zeros((n_drawn, width))
        for d, v in enumerate(self.values):
            vals[d, : len(v)] = v
        self._vals = vals.ravel()
        self._offsets = np.arange(n_drawn, dtype=np.intp) * width

        # Per (binned feature, value index): the bin's truncated normal in standard units
        # [LO, HI], its value M + S * z, and for inversion the start and width of the bin's
        # interval of the choosing uniform and the bin's normal tail probabilities.
        disc = self.discretizer
        position = {int(f): d for d, f in enumerate(self.drawn)}
        self._binned_pos = np.asarray([position[int(f)] for f in self.binned], dtype=np.intp)
        shape = (len(self.binned), width)
        M, S, LO, HI = np.zeros(shape), np.zeros(shape), np.zeros(shape), np.zeros(shape)
        START, WIDTH = np.zeros(shape), np.ones(shape)
        tails = [np.full(shape, 0.5) for _ in range(4)]
        invert = np.zeros(shape, dtype=bool)
        for row, f in enumerate(self.binned):
            d = position[int(f)]
            bins = self.values[d].astype(np.intp)
            k = len(bins)
            mean = np.asarray(disc.means[f], dtype=np.float64)[bins]
            std = np.asarray(disc.stds[f], dtype=np.float64)[bins]
            lo = np.asarray(disc.mins[f], dtype=np.float64)[bins]
            hi = np.asarray(disc.maxs[f], dtype=np.float64)[bins]
            a, b = (lo - mean) / std, (hi - mean) / std
            fa, fb, sa, sb = normal_tails(a, b)
            # A bin that is a point, or so far in one tail that Phi underflows, gives its
            # bound nearest the mean: tails of 0.5 make the inverse CDF return z = 0.
            point = (lo == hi) | ((fb - fa == 0) & (sa - sb == 0))
            nearest = np.where(np.abs(lo - mean) <= np.abs(hi - mean), lo, hi)
            for table, value in zip(tails, (fa, fb, sa, sb)):
                table[row, :k] = np.where(point, 0.5, value)
            M[row, :k] = np.where(point, nearest, mean)
            S[row, :k] = np.where(point, 0.0, std)
            LO[row, :k], HI[row, :k] = a, b
            START[row, :k] = self._cum[d] - self.frequencies[d]
            WIDTH[row, :k] = self.frequencies[d]
            invert[row, :k] = point | (np.maximum(fb - fa, sa - sb) < _MIN_ACCEPTANCE)
        self._inversion_tables = tuple(t.ravel() for t in (START, WIDTH, *tails))
        self._value_tables = (M.ravel(), S.ravel())
        self._bound_tables = (LO.ravel(), HI.ravel())
        self._invert = invert.ravel()
        self._any_invert = bool(invert.any())
        self._bin_offsets = np.arange(len(self.binned), dtype=np.intp) * width
        self._cast_cache: dict[tuple[str, Any], Any] = {}

    def _tables(self, name: str, dtype: Any) -> Any:
        """The table ``name`` (or tuple of tables) in ``dtype``, cast once and kept."""
        key = (name, np.dtype(dtype))
        if key not in self._cast_cache:
            value = getattr(self, name)
            if isinstance(value, tuple):
                self._cast_cache[key] = tuple(t.astype(dtype) for t in value)
            else:
                self._cast_cache[key] = value.astype(dtype)
        return self._cast_cache[key]

    # -- sampling -----------------------------------------------------------------------
    def _draw_indices(self, u: np.ndarray) -> np.ndarray:
        """Index of the drawn value of each drawn feature, from uniforms (n, n_drawn)."""
        if self._all_narrow:
            cum = self._tables("_narrow_cum", u.dtype)
            idx = np.zeros(u.shape, dtype=np.int8)
            for k in range(cum.shape[1]):
                np.add(idx, u > cum[:, k], out=idx, casting="unsafe")
            return idx
        idx = np.empty(u.shape, dtype=np.intp)
        if len(self._narrow):
            un = u[:, self._narrow]
            part = np.zeros(un.shape, dtype=np.intp)
            for k in range(self._narrow_cum.shape[1]):
                part += un > self._narrow_cum[:, k]
            idx[:, self._narrow] = part
        for d in self._wide:
            cum = self._cum[d]
            idx[:, d] = np.minimum(np.searchsorted(cum, u[:, d], side="left"), len(cum) - 1)
        return idx

    def _row_indices(self, rows: np.ndarray) -> np.ndarray:
        """Index of each row's own value among the drawn values (-1 when unseen)."""
        first = self.discretizer.discretize(rows) if self.discretizer is not None else rows
        out = np.full((len(rows), len(self.drawn)), -1, dtype=np.intp)
        for d, f in enumerate(self.drawn):
            vals = self.values[d]
            pos = np.minimum(np.searchsorted(vals, first[:, f]), len(vals) - 1)
            out[:, d] = np.where(vals[pos] == first[:, f], pos, -1)
        return out

    def sample(
        self,
        rows: np.ndarray,
        n_samples: int,
        rngs: Sequence[np.random.Generator],
        dtype: Any = np.float64,
    ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """lime's neighbourhood of each row: what the surrogate sees and what the model sees.

        Parameters
        ----------
        rows : ndarray of float64 of shape (n_rows, n_features)
            The rows to perturb.
        n_samples : int
            Neighbourhood size per row; sample 0 is the row itself.
        rngs : sequence of numpy.random.Generator, one per row
            Row ``i``'s draws come from ``rngs[i]`` only: a uniform per drawn feature and
            sample, standard normals for the values inside bins, then a standard normal
            per continuous feature and sample.
        dtype : numpy dtype, default=float64
            Dtype of ``inverse`` (the dtype the model takes).

        Returns
        -------
        interpretable : ndarray of float64 of shape (n_rows, n_samples, n_features)
            The surrogate's inputs: 1/0 "same bin or category as the row" for drawn
            features, standardised values for continuous ones (lime's ``scaled_data``).
        inverse : ndarray of shape (n_rows, n_samples, n_features)
            The perturbed inputs the model sees (lime's ``inverse``).
        distances : ndarray of float64 of shape (n_rows, n_samples)
            Euclidean distance of each sample's interpretable vector to the row's.
        """
        rows = np.asarray(rows, dtype=np.float64)
        n_rows = rows.shape[0]
        draw = np.float32 if np.dtype(dtype) == np.float32 else np.float64
        interpretable = np.empty((n_rows, n_samples, self.n_features))
        inverse = np.empty((n_rows, n_samples, self.n_features), dtype=dtype)
        distances = np.empty((n_rows, n_samples))
        own = self._row_indices(rows)
        for i, rng in enumerate(rngs):
            distances[i] = self._sample_row(
                rows[i], own[i], n_samples, rng, interpretable[i], inverse[i], draw
            )
        return interpretable, inverse, distances

    def _sample_row(
        self,
        row: np.ndarray,
        own: np.ndarray,
        n: int,
        rng: np.random.Generator,
        interp: np.ndarray,
        inverse: np.ndarray,
        draw: Any = np.float64,
    ) -> np.ndarray:
        """Fill one row's ``interp`` and ``inverse`` (n, n_features); return its distances.

        The samples are drawn in chunks of about ``_CHUNK`` values, so the temporaries stay
        small enough to be reused by the allocator instead of being mapped afresh (page
        faults otherwise cost as much as the arithmetic). Draws are made in ``draw``
        (float32 when the model takes float32, which halves the memory traffic; the
        values the model sees have that precision either way).
        """
        interp0 = (row - self.mean) / self.scale
        squared = np.empty(n)
        step = max(1, _CHUNK // self.n_features)
        for start in range(0, n, step):
            stop = min(start + step, n)
            squared[start:stop] = self._sample_chunk(
                row, own, interp0, stop - start, rng, interp[start:stop], inverse[start:stop], draw
            )
        interp[0] = interp0
        interp[0, self.drawn] = 1.0
        inverse[0] = row
        squared[0] = 0.0
        return np.sqrt(squared)

    def _sample_chunk(
        self,
        row: np.ndarray,
        own: np.ndarray,
        interp0: np.ndarray,
        n: int,
        rng: np.random.Generator,
        interp: np.ndarray,
        inverse: np.ndarray,
        draw: Any,
    ) -> np.ndarray:
        """``n`` samples of one row into ``interp`` and ``inverse``; their squared distances."""
        squared = np.zeros(n)
        if len(self.drawn):
            u = rng.random((n, len(self.drawn)), dtype=draw)
            idx = self._draw_indices(u)
            same = idx == own
            # a drawn feature adds 1 to the squared distance where it differs from the row
            squared += len(self.drawn) - np.count_nonzero(same, axis=1)
            if len(self.drawn) == self.n_features:  # discretised: every feature drawn
                interp[...] = same
            else:
                interp[:, self.drawn] = same
            self._drawn_values(u, idx, rng, inverse)
        if len(self.continuous):
            z = rng.standard_normal((n, len(self.continuous)), dtype=draw)
            scale, mean = self.scale[self.continuous], self.mean[self.continuous]
            centre = row[self.continuous] if self.sample_around_instance else mean
            values = z + (centre - mean) / scale
            interp[:, self.continuous] = values
            values -= interp0[self.continuous]
            squared += np.einsum("nf,nf->n", values, values)
            inverse[:, self.continuous] = z * scale + centre
        return squared

    def _drawn_values(
        self, u: np.ndarray, idx: np.ndarray, rng: np.random.Generator, inverse: np.ndarray
    ) -> None:
        """The values of the drawn features (bins' truncated normals, categories) into ``inverse``."""
        flat = idx + self._offsets
        if len(self.drawn) == self.n_features and len(self.binned) == self.n_features:
            self._truncnorm(u, flat, rng, out=inverse)
            return
        inverse[:, self.drawn] = np.take(self._vals, flat)
        if len(self.binned):
            pos = self._binned_pos
            inverse[:, self.binned] = self._truncnorm(
                u[:, pos], idx[:, pos] + self._bin_offsets, rng
            )

    def _truncnorm(
        self,
        u: np.ndarray,
        flat: np.ndarray,
        rng: np.random.Generator,
        out: np.ndarray | None = None,
    ) -> np.ndarray:
        """In-bin values for the bins at table entries ``flat`` (uniforms ``u`` chose them).

        Standard normals are drawn for every entry, then redrawn where they fall outside
        their bin, round after round on the shrinking rest; bins flagged for inversion and
        draws rejected ``_MAX_ROUNDS`` times use the inverse CDF.
        """
        draw = u.dtype
        lo_t, hi_t = self._tables("_bound_tables", draw)
        z = rng.standard_normal(flat.shape, dtype=draw)
        lo = np.take(lo_t, flat)
        hi = np.take(hi_t, flat)
        outside = (z < lo) | (z > hi)
        invert = np.take(self._invert, flat) if self._any_invert else None
        if invert is not None:
            outside &= ~invert
        pending = np.flatnonzero(outside)
        z_flat, lo_flat, hi_flat = z.reshape(-1), lo.reshape(-1), hi.reshape(-1)
        for _ in range(_MAX_ROUNDS):
            if not len(pending):
                break
            redraw = rng.standard_normal(len(pending), dtype=draw)
            ok = (redraw >= lo_flat[pending]) & (redraw <= hi_flat[pending])
            z_flat[pending[ok]] = redraw[ok]
            pending = pending[~ok]
        if invert is not None or len(pending):
            todo = np.flatnonzero(invert) if invert is not None else pending
            if invert is not None and len(pending):
                todo = np.union1d(todo, pending)
            u_todo = u.reshape(-1)[todo].astype(np.float64)
            z_flat[todo] = self._inverse_cdf(u_todo, flat.reshape(-1)[todo])
        m_t, s_t = self._tables("_value_tables", draw)
        z *= np.take(s_t, flat)
        return np.add(z, np.take(m_t, flat), out=out, casting="same_kind")

    def _inverse_cdf(self, u: np.ndarray, flat: np.ndarray) -> np.ndarray:
        """Standard-unit in-bin quantiles, from the bin-choosing uniforms (1-D arrays).

        The uniform's relative position in its bin's frequency interval is itself uniform
        and independent of the bin: it is the quantile's probability.
        """
        start, width, fa, fb, sa, sb = (np.take(t, flat) for t in self._inversion_tables)
        v = np.clip((u - start) / width, 0.0, 1.0)
        return truncnorm_ppf_from_tails(v, fa, fb, sa, sb)

    def describe(self) -> dict[str, Any]:
        """Plain facts about the statistics, for ``meta``."""
        disc = self.discretizer
        return {
            "discretizer": None if disc is None else type(disc).__name__,
            "categorical_features": list(self.categorical_features),
        }
