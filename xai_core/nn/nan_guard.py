"""ReplaceNaN: NaN entries replaced by a constant (``where(isnan(x), value, x)``).

PyTorch exports ``scaled_dot_product_attention`` with a boolean mask as a softmax
followed by ``Where(IsNaN(p), 0, p)``, so that a query whose every key is masked gets
zero weights instead of NaN. This layer is that guard: the identity on finite values.
"""

from __future__ import annotations

from typing import ClassVar

import numpy as np

from xai_core.nn.activations import UnaryFunction
from xai_core.validation import check_number

__all__ = ["ReplaceNaN"]


class ReplaceNaN(UnaryFunction):
    """``value`` where ``x`` is NaN, else ``x``; the derivative is 1 where ``x`` is not NaN.

    Parameters
    ----------
    value : float, default=0.0
    name : str, optional
    """

    kind: ClassVar[str] = "replace_nan"
    ops: ClassVar[int] = 1
    grad_ops: ClassVar[int] = 1

    def __init__(self, value: float = 0.0, name: str | None = None) -> None:
        super().__init__(name)
        self.value = check_number(value, "value")

    def fn(self, x):
        return np.where(np.isnan(x), x.dtype.type(self.value), x)

    def dfn(self, g, x):
        return np.where(np.isnan(x), g.dtype.type(0), g)

    def get_config(self):
        return {"value": self.value}
