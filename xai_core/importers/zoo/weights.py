"""Random weights for the zoo's models: batch norms away from the identity."""

from __future__ import annotations

from typing import Any

__all__ = ["randomize_batch_norms"]


def randomize_batch_norms(module: Any, seed: int = 0) -> Any:
    """Every ``BatchNorm2d`` of ``module`` given statistics and affine parameters near
    (but not at) the identity, drawn from ``seed``; the module returned in eval mode."""
    import torch

    g = torch.Generator().manual_seed(seed)
    for m in module.modules():
        if isinstance(m, torch.nn.BatchNorm2d) and m.running_mean is not None:
            n = m.num_features
            with torch.no_grad():
                m.running_mean.copy_((torch.rand(n, generator=g) - 0.5) * 0.2)
                m.running_var.copy_(torch.rand(n, generator=g) * 0.5 + 0.75)
                if m.affine:
                    m.weight.copy_(torch.rand(n, generator=g) * 0.5 + 0.75)
                    m.bias.copy_((torch.rand(n, generator=g) - 0.5) * 0.2)
    return module.eval()
