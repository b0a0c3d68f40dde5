"""Hostile PyTorch modules: ``from_torch`` imports each faithfully or refuses it naming why.

``CASES`` is one row per hole: a module, the example batch it is traced on and either
``None`` (the network must reproduce the module on the example and on inputs unlike it) or
the error class and the words its message must hold. A trace that silently records one
branch of data-dependent control flow is the hole this suite guards.
"""

from __future__ import annotations

import inspect
import warnings
from collections.abc import Callable
from typing import Any

import numpy as np
import pytest
import torch
from torch import nn

import xai_core as xai
from xai_core.errors import CapabilityError, ModelFormatError

torch.manual_seed(0)
POSITIVE = torch.rand(8, 4) + 0.1  # its sum > 0: the trace takes the first branch
ZEROS = torch.zeros(2, 4)


class Branch(nn.Module):
    """``l(x) if x.sum() > 0 else -l(x)``: which branch runs depends on the data."""

    def __init__(self) -> None:
        super().__init__()
        self.l = nn.Linear(4, 3)

    def forward(self, x):
        return self.l(x) if x.sum() > 0 else -self.l(x)


class ScaleByMax(nn.Module):
    """``x / float(x.abs().max())``: a tensor turned into a Python number."""

    def forward(self, x):
        return x / float(x.abs().max())


class ItemThreshold(nn.Module):
    """``.item()`` in a condition."""

    def forward(self, x):
        return torch.relu(x) if x.mean().item() > 0 else x


class DivideByBatch(nn.Module):
    """``x / x.shape[0]``: each sample's output depends on the batch size."""

    def __init__(self) -> None:
        super().__init__()
        self.l = nn.Linear(4, 3)

    def forward(self, x):
        return self.l(x) / x.shape[0]


class CenterOnBatch(nn.Module):
    """``x - x.mean(0)``: each sample's output depends on the others in its batch."""

    def forward(self, x):
        return x - x.mean(0)


class FlattenByBatch(nn.Module):
    """``x.view(x.shape[0], -1)``: the batch size used as a shape, which is fine."""

    def __init__(self) -> None:
        super().__init__()
        self.conv = nn.Conv2d(1, 2, 3, padding=1)
        self.fc = nn.Linear(2 * 4 * 4, 3)

    def forward(self, x):
        return self.fc(torch.relu(self.conv(x)).view(x.shape[0], -1))


class BeyondBothBatches(nn.Module):
    """A branch neither the example nor the second batch reaches: warned about, not refused."""

    def __init__(self) -> None:
        super().__init__()
        self.l = nn.Linear(4, 3)

    def forward(self, x):
        return -self.l(x) if x.max() > 100 else self.l(x)


class ShapeBranch(nn.Module):
    """Python control flow on a shape, not on values: the same for every input."""

    def __init__(self) -> None:
        super().__init__()
        self.l = nn.Linear(4, 3)

    def forward(self, x):
        return self.l(x) if x.shape[1] == 4 else self.l(x[:, :4])


def _line(cls: type, text: str) -> str:
    """``file:line`` of the ``return`` line of ``cls``'s source holding ``text``."""
    lines, start = inspect.getsourcelines(cls)
    k = next(i for i, line in enumerate(lines) if text in line and "return" in line)
    return f"test_hostile_torch.py:{start + k}"


def _tanh_mlp() -> nn.Module:
    return nn.Sequential(nn.Linear(4, 3), nn.Tanh())


#: name -> (module, example batch, strict_trace, None for "imports faithfully" or
#: (error, words)).
CASES: dict[str, tuple[Callable[[], nn.Module], torch.Tensor, bool, Any]] = {
    "branch-on-x-sum": (
        Branch,
        POSITIVE,
        False,
        (
            CapabilityError,
            (
                "takes another path on other inputs",
                _line(Branch, "x.sum() > 0"),
                "x.sum() > 0",
                "Python boolean",
            ),
        ),
    ),
    "branch-on-x-sum-strict": (
        Branch,
        POSITIVE,
        True,
        (CapabilityError, ("strict_trace=True refuses", _line(Branch, "x.sum() > 0"))),
    ),
    "tensor-to-python-float": (
        ScaleByMax,
        POSITIVE,
        False,
        (CapabilityError, ("another path", _line(ScaleByMax, "float(x.abs().max())"))),
    ),
    "item-in-a-condition": (
        ItemThreshold,
        POSITIVE,
        False,
        (CapabilityError, ("another path", _line(ItemThreshold, ".item()"), "Python number")),
    ),
    "divide-by-the-batch-size": (
        DivideByBatch,
        POSITIVE,
        False,
        (CapabilityError, ("Div node", "computed from the batch size", "x.shape[0]")),
    ),
    "centre-on-the-batch-mean": (
        CenterOnBatch,
        POSITIVE,
        False,
        (CapabilityError, ("ReduceMean", "axis 0", "batch axis")),
    ),
    "shape-test-strict": (
        ShapeBranch,
        POSITIVE,
        True,
        (CapabilityError, ("strict_trace=True refuses", _line(ShapeBranch, "x.shape[1] == 4"))),
    ),
    "shape-test": (ShapeBranch, POSITIVE, False, None),
    "branch-beyond-both-batches": (BeyondBothBatches, POSITIVE, False, None),
    "flatten-by-the-batch-size": (FlattenByBatch, torch.rand(3, 1, 4, 4), False, None),
    "all-zero-example": (_tanh_mlp, ZEROS, False, None),
}


@pytest.mark.parametrize("case", list(CASES), ids=list(CASES))
def test_hostile_torch(case: str) -> None:
    """Each module imports and reproduces itself on new inputs, or is refused naming the cause."""
    make, example, strict, expected = CASES[case]
    torch.manual_seed(0)
    module = make().eval()
    if expected is None:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", xai.XaiWarning)  # a shape test is warned about
            net = xai.from_torch(module, example, strict_trace=strict)
        X = np.random.default_rng(1).standard_normal((7, *net.input_shape)).astype(np.float32)
        with torch.no_grad():
            want = module(torch.from_numpy(3 * X)).numpy()
        np.testing.assert_allclose(net.predict(3 * X), want, rtol=1e-5, atol=1e-5)
        return
    error, words = expected
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", xai.XaiWarning)  # strict_trace=False warns first
        with pytest.raises(error) as raised:
            xai.from_torch(module, example, strict_trace=strict)
    text = str(raised.value)
    for w in words:
        assert w in text, (w, text)


@pytest.mark.parametrize(
    "module, text",
    [(ShapeBranch, "x.shape[1] == 4"), (BeyondBothBatches, "x.max() > 100")],
    ids=["shape-test", "branch-beyond-both-batches"],
)
def test_a_trace_the_tracer_doubts_is_imported_with_a_warning_naming_the_line(module, text):
    """The same network on both batches: imported, with an XaiWarning naming the line."""
    with pytest.warns(xai.XaiWarning, match=_line(module, text)):
        xai.from_torch(module(), POSITIVE)


def test_the_second_batch_catches_a_trace_gone_wrong_silently(monkeypatch) -> None:
    """With the tracer's warnings out of the way, the check on a second batch still refuses."""
    from xai_core.importers import torch_import

    monkeypatch.setattr(torch_import, "_check_trace", lambda *args: None)
    with pytest.raises(ModelFormatError, match="differs from the module on a second batch"):
        xai.from_torch(Branch(), POSITIVE)
