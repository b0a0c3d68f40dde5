"""Model parameter randomisation (Adebayo et al., 2018; Quantus's ``ModelParameterRandomisation``).

A sanity check: an explanation that describes the model must change when the model's weights
are destroyed. The layers that have parameters are randomised cumulatively from the output
down ("top_down", Quantus's default order): at step ``j`` the last ``j + 1`` of them hold
random weights. After each step the rows are explained again (same method, options and
target) and compared with the original attribution:

- ``spearman``: Spearman rank correlation of the flattened |attribution| (Quantus's default
  ``similarity_func=correlation_spearman`` with ``abs=True``; normalising by the maximum, its
  other default, leaves ranks alone);
- ``ssim``: for images, the structural similarity (``skimage.metrics.structural_similarity``,
  as Quantus's ``ssim``) of the channel-summed |attribution| maps, each scaled to [0, 1] by its
  maximum, with ``data_range=1``.

A method that passes falls towards 0 as layers are randomised. Random weights: each
parameter is replaced by normal draws of its own mean and standard deviation (a constant
parameter, such as a zero bias, by ``N(0, 0.01**2)`` about its value), from
``numpy.random.default_rng([seed, j])``. Only native networks (``xai_core.nn``, or what an
importer made of a torch / Keras / ONNX network) can be randomised; the original is not
modified (a copy is).
"""

from __future__ import annotations

import copy
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import numpy as np

from xai_core.compare.metrics import spearman
from xai_core.errors import CapabilityError

if TYPE_CHECKING:
    import pandas as pd

__all__ = [
    "Randomisation",
    "attribution_ssim",
    "model_parameter_randomisation",
    "randomised_layers",
    "randomised_networks",
]


@dataclass(frozen=True, eq=False)
class Randomisation:
    """Similarity of the attribution to the original as layers are randomised from the top.

    Attributes
    ----------
    layers : list of str
        The randomised nodes in order: after step ``j`` the first ``j + 1`` are random.
    spearman : ndarray of shape (n_layers, n_samples)
    ssim : ndarray of shape (n_layers, n_samples) or None
        For image inputs only.
    method : str
    options : dict
    """

    layers: list[str]
    spearman: np.ndarray
    ssim: np.ndarray | None
    method: str
    options: dict[str, Any] = field(default_factory=dict)

    @property
    def curve(self) -> pd.DataFrame:
        """One row per randomised layer: mean (and spread) of each similarity over rows."""
        import pandas as pd

        table = pd.DataFrame(
            {
                "layer": self.layers,
                "spearman": self.spearman.mean(axis=1),
                "spearman_std": self.spearman.std(axis=1),
            }
        )
        if self.ssim is not None:
            table["ssim"] = self.ssim.mean(axis=1)
        return table

    def __repr__(self) -> str:
        return (
            f"Randomisation(method={self.method!r}, layers={len(self.layers)}, "
            f"spearman {np.round(self.spearman.mean(axis=1), 3).tolist()})"
        )


def randomised_layers(network: Any) -> list[str]:
    """Names of the nodes with parameters, output first (the order they are randomised in)."""
    return [node.name for node in reversed(network.nodes) if node.layer.params]


def randomised_networks(network: Any, seed: int = 0) -> Iterator[tuple[str, Any]]:
    """Copies of ``network`` with its layers randomised cumulatively from the output down.

    Parameters
    ----------
    network : Network
        Not modified.
    seed : int, default=0
        Step ``j`` draws from ``numpy.random.default_rng([seed, j])``.

    Yields
    ------
    (str, Network)
        The layer randomised at this step and the network with it and every layer before
        it (in :func:`randomised_layers` order) random. The same copy is modified in place
        from one step to the next: copy it to keep a step.
    """
    work = copy.deepcopy(network)
    for j, name in enumerate(randomised_layers(network)):
        _randomise(work, name, np.random.default_rng([seed, j]))
        yield name, work


def _randomise(network: Any, name: str, rng: np.random.Generator) -> None:
    layer = network.node(name).layer
    new = {}
    for key, p in layer.params.items():
        std = float(p.std())
        scale, centre = (std, float(p.mean())) if std > 0 else (0.01, p)
        new[key] = (centre + scale * rng.standard_normal(p.shape)).astype(p.dtype)
    layer.set_params(**new)
    network.clear_cache()


def attribution_ssim(a: np.ndarray, b: np.ndarray, layout: Any) -> np.ndarray:
    """SSIM per row of the channel-summed |attribution| maps, each scaled to [0, 1] by its maximum.

    Parameters
    ----------
    a, b : ndarray of shape (n_samples, *image_shape)
    layout : ImageLayout
        The rows' layout (:func:`xai_core.images.sample_layout`).

    Returns
    -------
    ndarray of shape (n_samples,)
        ``skimage.metrics.structural_similarity`` with ``data_range=1`` and a 7-pixel window
        (the largest odd side that fits, on smaller maps).
    """
    from skimage.metrics import structural_similarity

    def maps(v: np.ndarray) -> np.ndarray:
        m = np.abs(layout.to_chw(v)).sum(axis=1)
        peak = m.reshape(len(m), -1).max(axis=1)
        return m / np.where(peak > 0, peak, 1.0)[:, None, None]

    ma, mb = maps(a), maps(b)
    side = min(7, *ma.shape[1:])
    win = side if side % 2 else side - 1
    return np.array(
        [structural_similarity(x, y, data_range=1.0, win_size=win) for x, y in zip(ma, mb)]
    )


def model_parameter_randomisation(
    model: Any,
    X: Any,
    method: Any = "ig",
    *,
    target: Any = None,
    backend: Any = "cpu",
    seed: int | None = 0,
    explanation: Any = None,
    method_options: Mapping[str, Any] | None = None,
) -> Randomisation:
    """Re-explain ``X`` as the network's layers are randomised cumulatively from the output.

    Parameters
    ----------
    model : native network, torch.nn.Module, keras.Model, ONNX path ...
        Imported as :func:`xai_core.import_model` imports it; it must become a native network.
    X : array-like of shape (n_samples, *input_shape)
    method : str or Explainer subclass, default="ig"
    target : int or array-like of shape (n_samples,), optional
        By default the original network's predicted class; every step explains that output.
    backend : str or Backend, default="cpu"
    seed : int or None, default=0
        Seeds the random weights (``None`` draws one, recorded in ``options``).
    explanation : Explanation, optional
        The original attribution, if already computed with the same method and options.
    method_options : mapping, optional
        Options of the method (its own ``seed`` among them, apart from ``seed`` here).

    Returns
    -------
    Randomisation
    """
    from xai_core.attribution.explainer import explain, resolve_target
    from xai_core.attribution.seeds import resolve_seed
    from xai_core.images import sample_layout
    from xai_core.importers.direct import import_model
    from xai_core.model.runner import ModelRunner
    from xai_core.nn.network import Network
    from xai_core.plugin.resolve import explainer_class

    seed = resolve_seed(seed)
    network = import_model(model, X)
    if not isinstance(network, Network):
        raise CapabilityError(
            f"model must be a native network (or import as one) to randomise its layers; "
            f"got {type(network).__name__}."
        )
    cls = explainer_class(method)
    options = dict(method_options or {})
    if "progress" in cls.option_names():
        options.setdefault("progress", False)
    runner = ModelRunner(network, backend)
    X = runner.check_X(X)
    target = resolve_target(runner, X, target)
    if explanation is None:
        explanation = explain(runner, X, method=cls, target=target, **options)
    original = np.asarray(explanation.values, dtype=np.float64)
    layout = sample_layout(X.shape[1:], strict=False) if X.ndim > 2 else None
    names = randomised_layers(network)
    rho, ssim = [], []
    for _, work in randomised_networks(network, seed):
        values = explain(ModelRunner(work, backend), X, method=cls, target=target, **options).values
        values = np.asarray(values, dtype=np.float64)
        rho.append(spearman(np.abs(original), np.abs(values)))
        if layout is not None:
            ssim.append(attribution_ssim(original, values, layout))
    return Randomisation(
        layers=names,
        spearman=np.array(rho).reshape(len(names), len(X)),
        ssim=np.array(ssim) if layout is not None else None,
        method=cls.name,
        options={"seed": seed, "method_options": options},
    )
