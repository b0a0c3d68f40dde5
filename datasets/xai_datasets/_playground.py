"""The six problems of the TensorFlow Playground, vectorised with numpy.

The generators follow ``src/dataset.ts`` of https://github.com/tensorflow/playground
(Apache-2.0): same shapes, radii, paddings, noise scales and label rules. Only the random
stream differs (a seeded numpy Generator instead of the browser's ``Math.random``).
"""

from __future__ import annotations

import numbers

import numpy as np

from xai_core.attribution.cost import Cost, check_cost
from xai_core.errors import UnknownNameError, ValidationError

from ._dataset import Dataset

__all__ = ["playground", "PLAYGROUND_PROBLEMS"]

_CANONICAL = ("circle", "xor", "gauss", "spiral", "reg-plane", "reg-gauss")
_ALIASES = {
    "gaussian": "gauss",
    "plane": "reg-plane",
    "multi-gaussian": "reg-gauss",
    "multi-gauss": "reg-gauss",
}
#: Problem name -> task.
PLAYGROUND_PROBLEMS = {
    "circle": "classification",
    "xor": "classification",
    "gauss": "classification",
    "spiral": "classification",
    "reg-plane": "regression",
    "reg-gauss": "regression",
}
_TITLES = {
    "circle": "a disc inside a ring",
    "xor": "the four quadrants, XOR of the coordinates' signs",
    "gauss": "two Gaussian blobs",
    "spiral": "two interleaved spirals",
    "reg-plane": "a tilted plane, label (x1 + x2) / 10",
    "reg-gauss": "six signed Gaussian bumps",
}


def _uniform(rng: np.random.Generator, a: float, b: float, n: int) -> np.ndarray:
    return rng.uniform(a, b, n)


def _circle(rng: np.random.Generator, n: int, noise: float) -> tuple[np.ndarray, np.ndarray]:
    radius = 5.0
    n_pos = (n + 1) // 2
    r = np.concatenate(
        [_uniform(rng, 0, radius * 0.5, n_pos), _uniform(rng, radius * 0.7, radius, n - n_pos)]
    )
    angle = _uniform(rng, 0, 2 * np.pi, n)
    x, y = r * np.sin(angle), r * np.cos(angle)
    nx = _uniform(rng, -radius, radius, n) * noise
    ny = _uniform(rng, -radius, radius, n) * noise
    # The label comes from the noisy point; the point itself is stored without noise.
    label = np.hypot(x + nx, y + ny) < radius * 0.5
    return np.stack([x, y], axis=1), label.astype(np.float64)


def _xor(rng: np.random.Generator, n: int, noise: float) -> tuple[np.ndarray, np.ndarray]:
    padding = 0.3
    x = _uniform(rng, -5, 5, n)
    x += np.where(x > 0, padding, -padding)
    y = _uniform(rng, -5, 5, n)
    y += np.where(y > 0, padding, -padding)
    nx = _uniform(rng, -5, 5, n) * noise
    ny = _uniform(rng, -5, 5, n) * noise
    label = (x + nx) * (y + ny) >= 0
    return np.stack([x, y], axis=1), label.astype(np.float64)


def _gauss(rng: np.random.Generator, n: int, noise: float) -> tuple[np.ndarray, np.ndarray]:
    variance = 0.5 + noise * (4.0 - 0.5) / 0.5  # d3 linear scale [0, .5] -> [0.5, 4]
    n_pos = (n + 1) // 2
    centre = np.where(np.arange(n) < n_pos, 2.0, -2.0)
    pts = centre[:, None] + rng.normal(0.0, np.sqrt(variance), (n, 2))
    return pts, (centre > 0).astype(np.float64)


def _spiral(rng: np.random.Generator, n: int, noise: float) -> tuple[np.ndarray, np.ndarray]:
    parts, labels = [], []
    for count, delta, label in (((n + 1) // 2, 0.0, 1.0), (n // 2, np.pi, 0.0)):
        i = np.arange(count) / max(count, 1)
        r = i * 5
        t = 1.75 * i * 2 * np.pi + delta
        x = r * np.sin(t) + _uniform(rng, -1, 1, count) * noise
        y = r * np.cos(t) + _uniform(rng, -1, 1, count) * noise
        parts.append(np.stack([x, y], axis=1))
        labels.append(np.full(count, label))
    return np.concatenate(parts), np.concatenate(labels)


def _reg_points(rng: np.random.Generator, n: int, noise: float) -> tuple[np.ndarray, ...]:
    """Points in [-6, 6]^2 and their label noise, drawn in the Playground's order."""
    radius = 6.0
    x = _uniform(rng, -radius, radius, n)
    y = _uniform(rng, -radius, radius, n)
    nx = _uniform(rng, -radius, radius, n) * noise
    ny = _uniform(rng, -radius, radius, n) * noise
    return x, y, nx, ny


def _reg_plane(rng: np.random.Generator, n: int, noise: float) -> tuple[np.ndarray, np.ndarray]:
    x, y, nx, ny = _reg_points(rng, n, noise)
    return np.stack([x, y], axis=1), (x + nx + y + ny) / 10.0  # scale [-10, 10] -> [-1, 1]


_GAUSSIANS = np.array(
    [[-4, 2.5, 1], [0, 2.5, -1], [4, 2.5, 1], [-4, -2.5, -1], [0, -2.5, 1], [4, -2.5, -1]],
    dtype=np.float64,
)


def _reg_gauss_label(x: np.ndarray, y: np.ndarray) -> np.ndarray:
    """The signed bump value with the largest magnitude (first one on ties), per point."""
    d = np.hypot(x[:, None] - _GAUSSIANS[:, 0], y[:, None] - _GAUSSIANS[:, 1])
    values = _GAUSSIANS[:, 2] * np.clip(1.0 - d / 2.0, 0.0, 1.0)  # clamped [0, 2] -> [1, 0]
    pick = np.argmax(np.abs(values), axis=1)
    return values[np.arange(len(x)), pick] + 0.0  # + 0.0 turns -0.0 into 0.0


def _reg_gauss(rng: np.random.Generator, n: int, noise: float) -> tuple[np.ndarray, np.ndarray]:
    x, y, nx, ny = _reg_points(rng, n, noise)
    return np.stack([x, y], axis=1), _reg_gauss_label(x + nx, y + ny)


_GENERATORS = {
    "circle": _circle,
    "xor": _xor,
    "gauss": _gauss,
    "spiral": _spiral,
    "reg-plane": _reg_plane,
    "reg-gauss": _reg_gauss,
}


def playground(
    name: str, n_samples: int = 500, noise: float = 0.0, seed: int | None = 0
) -> Dataset:
    """Generate one of the TensorFlow Playground's six 2-D problems.

    Parameters
    ----------
    name : str
        Classification: ``"circle"``, ``"xor"``, ``"gauss"`` (alias ``"gaussian"``),
        ``"spiral"``. Regression: ``"reg-plane"`` (alias ``"plane"``), ``"reg-gauss"``
        (aliases ``"multi-gaussian"``, ``"multi-gauss"``). Case and ``_`` vs ``-`` are
        ignored.
    n_samples : int
        Number of points, at least 1. Classification problems give ``ceil(n/2)``
        positive and ``floor(n/2)`` negative points.
    noise : float
        The Playground's noise slider, in percent: 0 to 50.
    seed : int or None
        Seed of the numpy Generator; the same seed gives the same points.

    Returns
    -------
    Dataset
        ``X`` float32 of shape ``(n_samples, 2)`` with ``feature_names=("x1", "x2")``,
        rows shuffled. Classification: ``y`` int64, 1 where the Playground's label is
        +1 (blue) and 0 where it is -1 (orange), ``class_names=("negative",
        "positive")``. Regression: ``y`` float32 (the Playground's label, about
        [-1, 1]).

    Raises
    ------
    UnknownNameError
        For an unknown problem name; the message lists the known ones.
    ValidationError
        If ``n_samples`` or ``noise`` is out of range.
    """
    key = str(name).strip().lower().replace("_", "-").replace(" ", "-")
    key = _ALIASES.get(key, key)
    if key not in _GENERATORS:
        raise UnknownNameError("playground problem", name, (*_CANONICAL, *_ALIASES))
    if isinstance(n_samples, bool) or not isinstance(n_samples, numbers.Integral):
        raise ValidationError(f"n_samples must be an int >= 1; got {n_samples!r}")
    if n_samples < 1:
        raise ValidationError(f"n_samples must be an int >= 1; got {n_samples}")
    # the generators hold a few float64 copies of the points and labels: ~96 bytes a point
    check_cost(
        Cost(0, 96 * int(n_samples), f"{n_samples:,} points"),
        "playground",
        advice="lower n_samples",
    )
    if isinstance(noise, bool) or not isinstance(noise, numbers.Real) or not 0 <= noise <= 50:
        raise ValidationError(f"noise must be a number in [0, 50] (percent); got {noise!r}")
    if seed is not None and (isinstance(seed, bool) or not isinstance(seed, numbers.Integral)):
        raise ValidationError(f"seed must be an int or None; got {seed!r}")
    rng = np.random.default_rng(seed)
    X, label = _GENERATORS[key](rng, int(n_samples), float(noise) / 100.0)
    order = rng.permutation(len(X))
    X, label = X[order], label[order]
    task = PLAYGROUND_PROBLEMS[key]
    return Dataset(
        X=X.astype(np.float32),
        y=label.astype(np.int64) if task == "classification" else label.astype(np.float32),
        feature_names=("x1", "x2"),
        class_names=("negative", "positive") if task == "classification" else (),
        task=task,
        name=f"playground-{key}",
        description=(
            f"TensorFlow Playground problem {key!r}: {_TITLES[key]}; {n_samples} points, "
            f"noise {noise}%, seed {seed}. Synthetic; generator after tensorflow/playground "
            "src/dataset.ts (Apache-2.0), https://playground.tensorflow.org."
        ),
        source="https://github.com/tensorflow/playground (src/dataset.ts)",
        license="Apache-2.0 (generator); the points are synthetic",
        target_name="label",
    )
