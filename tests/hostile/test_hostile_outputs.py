"""Hostile models: NaN and infinite outputs, and non-finite weights, at every entry point.

``MODELS`` says how each hostile model misbehaves (NaN on some of the explained rows, NaN
only away from them, infinity); ``ENTRIES`` is one row per entry point that hands model
outputs to a method. Every pair must raise :class:`xai_core.ModelOutputError` naming the
method and the rows, at the first bad output (a counting model shows the work stopped),
never return NaN values or a target silently taken as output 0.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import numpy as np
import pytest

import xai_core as xai
from xai_core.errors import ModelFormatError, ModelOutputError, ValidationError

RNG = np.random.default_rng(0)
X = RNG.uniform(0.0, 0.5, size=(12, 4))
X[[2, 7], 0] = 2.0  # the rows a hostile model fails on
BACKGROUND = RNG.uniform(0.0, 1.0, size=(30, 4))  # reaches where X does not (x1 > 0.9)


class Counting:
    """A black box ``f(x) = (x @ w, -x @ w)`` that spoils some outputs, counting its calls."""

    def __init__(self, spoil: Callable[[np.ndarray], np.ndarray], value: float) -> None:
        self.spoil, self.value, self.calls = spoil, value, 0
        self.first_bad: int | None = None  # the call that first returned a bad output

    def __call__(self, Z: np.ndarray) -> np.ndarray:
        self.calls += 1
        Z = np.asarray(Z, dtype=np.float64)
        s = Z @ np.array([1.0, -2.0, 0.5, 3.0])
        out = np.stack([s, -s], axis=1)
        bad = self.spoil(Z)
        out[bad] = self.value
        if bad.any() and self.first_bad is None:
            self.first_bad = self.calls
        return out


#: name -> (the rows it spoils, the value, whether the explained rows 2 and 7 are named)
MODELS: dict[str, tuple[Callable[[np.ndarray], np.ndarray], float, bool]] = {
    "nan-on-explained-rows": (lambda Z: Z[:, 0] > 1.5, np.nan, True),
    "inf-on-explained-rows": (lambda Z: Z[:, 0] > 1.5, np.inf, True),
    "nan-away-from-the-rows": (lambda Z: Z[:, 1] > 0.9, np.nan, False),
}

#: entry point -> call it with the black box
ENTRIES: dict[str, Callable[[Counting], object]] = {
    "shap-exact": lambda f: xai.explain(f, X, method="shap", background=BACKGROUND),
    "shap-kernel": lambda f: xai.explain(
        f, X, method="shap", algorithm="kernel", background=BACKGROUND, target=0
    ),
    "shap-permutation": lambda f: xai.explain(
        f, X, method="shap", algorithm="permutation", background=BACKGROUND, target=0
    ),
    "lime": lambda f: xai.explain(f, X, method="lime", background=BACKGROUND, n_samples=200),
    "lime-with-target": lambda f: xai.explain(
        f, X, method="lime", background=BACKGROUND, n_samples=200, target=1
    ),
    "chunked": lambda f: xai.explain(
        f, X, method="shap", background=BACKGROUND, chunk_size=5, target=0
    ),
}


@pytest.mark.parametrize("model", list(MODELS))
@pytest.mark.parametrize("entry", list(ENTRIES))
def test_hostile_outputs(entry: str, model: str) -> None:
    """A NaN or infinite output is an error naming the method and the rows, raised at once."""
    spoil, value, on_rows = MODELS[model]
    f = Counting(spoil, value)
    with pytest.raises(ModelOutputError) as info:
        ENTRIES[entry](f)
    message = str(info.value)
    method = "lime" if entry.startswith("lime") else "shap"
    assert info.value.method == method and repr(method) in message
    assert "NaN or infinite outputs" in message
    if entry == "chunked":  # the failing chunk's rows, as rows of X; the chunks all ran
        if on_rows:
            assert set(info.value.rows) in ({2}, {7}) and "of X)" in message
        return
    if on_rows:  # the caller's rows are named, as indices of X
        assert "(rows 2, 7 of X)" in message and list(info.value.rows) == [2, 7]
    else:
        assert "inputs it was given" in message and len(info.value.rows) > 0
    assert f.first_bad is not None
    assert f.calls <= f.first_bad + 1  # stopped at the first bad output (and one look at X)


def _nan_net() -> xai.nn.Sequential:
    net = xai.nn.Sequential([xai.nn.Dense(3), xai.nn.Tanh(), xai.nn.Dense(2)], input_shape=(4,))
    net.layers[0].weight[1, 2] = np.nan
    return net


#: gradient methods on a network with one NaN weight: outputs NaN on every row
@pytest.mark.parametrize("target", [None, 1])
@pytest.mark.parametrize("method", ["ig", "saliency", "gradient_x_input", "smoothgrad"])
def test_nan_network_is_named_not_explained(method: str, target: int | None) -> None:
    """IG and the gradient methods refuse NaN outputs instead of setting the target to 0."""
    runner = xai.ModelRunner(_nan_net())
    with pytest.raises(ModelOutputError, match=f"method '{method}'.*rows 0, 1, 2"):
        xai.explain(runner, X[:3], method=method, target=target)
    assert runner.counters["matmuls"] <= 2 * 2  # one forward pass (and its recheck) at most


def test_what_if_refuses_nan_outputs() -> None:
    """The what-if tool names the rows of X whose outputs are NaN, at construction."""
    f = Counting(MODELS["nan-on-explained-rows"][0], np.nan)
    with pytest.raises(ModelOutputError, match=r"what_if.*rows 2, 7 of X"):
        xai.what_if(f, X)


def test_what_if_counterfactual_refuses_nan_candidates() -> None:
    """A search whose candidates give NaN stops with the error instead of ignoring them."""
    f = Counting(lambda Z: Z[:, 3] > 0.45, np.nan)
    data = X.clip(0.0, 0.45)  # the model is finite on the data, NaN past 0.45 in column 3
    w = xai.what_if(f, data, (data[:, 0] > 0.25).astype(int))
    with pytest.raises(ModelOutputError, match="what_if.*edited or searched rows"):
        w.counterfactual(0, ranges={3: (0.0, 1.0)})


#: non-finite weights at the doors a network comes in by
WEIGHTS: dict[str, tuple[Callable[[Path], object], type[Exception], str]] = {
    "load_model": (
        lambda tmp: (_nan_net().save(tmp / "m.npz"), xai.load_model(tmp / "m.npz")),
        ModelFormatError,
        "NaN or infinite",
    ),
    "quantize": (
        lambda tmp: xai.quantize(_nan_net(), RNG.uniform(size=(20, 4))),
        ValidationError,
        "non-finite weights",
    ),
}


@pytest.mark.parametrize("door", list(WEIGHTS))
def test_non_finite_weights_are_refused(tmp_path: Path, door: str) -> None:
    """A NaN weight is refused when the network is loaded or quantised."""
    call, error, words = WEIGHTS[door]
    with pytest.raises(error, match=words):
        call(tmp_path)
