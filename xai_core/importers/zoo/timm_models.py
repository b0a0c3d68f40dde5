"""A spread of timm's CNN families, the smallest variant of each, and its two smallest
vision transformers (ViT-Tiny, DeiT-Tiny at 64 px: 16 patches and a class token), with
random weights.

One model per family (two where the family has variants that export differently:
``resnet18`` and ``resnet18d``'s average-pool shortcut, ``efficientnet_b0`` and
``tf_efficientnet_b0``'s TensorFlow "same" padding), at 64 px unless the architecture
needs more. Batch norms get non-trivial statistics, as for torchvision's models.
"""

from __future__ import annotations

from functools import partial
from typing import Any

from xai_core.importers.zoo import register
from xai_core.importers.zoo.weights import randomize_batch_norms
from xai_core.optional import require

__all__ = ["MODELS", "build"]

#: timm's name -> (family, input side in pixels, slow).
MODELS: dict[str, tuple[str, int, bool]] = {
    "resnet18": ("resnet", 64, False),
    "resnet18d": ("resnet", 64, False),
    "resnet10t": ("resnet", 64, False),
    "seresnet18": ("senet", 64, False),
    "skresnet18": ("sknet", 64, False),
    "resnest14d": ("resnest", 64, False),
    "res2net50_14w_8s": ("res2net", 64, True),
    "efficientnet_b0": ("efficientnet", 64, False),
    "tf_efficientnet_b0": ("efficientnet", 64, False),
    "efficientnet_lite0": ("efficientnet", 64, False),
    "tinynet_e": ("efficientnet", 64, False),
    "mixnet_s": ("mixnet", 64, False),
    "mnasnet_small": ("mnasnet", 64, False),
    "mobilenetv2_050": ("mobilenetv2", 64, False),
    "mobilenetv3_small_050": ("mobilenetv3", 64, False),
    "mobilenetv4_conv_small_035": ("mobilenetv4", 64, False),
    "lcnet_050": ("lcnet", 64, False),
    "ghostnet_050": ("ghostnet", 64, False),
    "rexnet_100": ("rexnet", 64, False),
    "regnetx_002": ("regnet", 64, False),
    "regnety_002": ("regnet", 64, False),
    "convnext_atto": ("convnext", 64, False),
    "densenet121": ("densenet", 64, True),
    "inception_v3": ("inception", 80, True),
    "repvgg_a0": ("repvgg", 64, False),
    "mobileone_s0": ("mobileone", 64, False),
    "dla34": ("dla", 64, False),
    "hrnet_w18_small": ("hrnet", 64, True),
    "ese_vovnet19b_slim_dw": ("vovnet", 64, False),
    "cs3darknet_focus_s": ("cspnet", 64, False),
    "gernet_s": ("byobnet", 64, False),
    "selecsls42b": ("selecsls", 64, True),
    "dpn48b": ("dpn", 64, True),
    "xception41": ("xception", 64, True),
    "vit_tiny_patch16_224": ("vit", 64, False),
    "deit_tiny_patch16_224": ("deit", 64, False),
}

#: Families whose position embeddings are built for the input side: ``img_size=`` is passed.
SIZED_FAMILIES = ("vit", "deit")


def _timm() -> Any:
    return require("timm", extra="zoo", need="the timm models of the zoo")


def build(name: str, seed: int = 0) -> Any:
    """timm's ``name`` with random weights (``seed``), in eval mode."""
    import torch

    timm = _timm()
    torch.manual_seed(seed)
    family, side, _slow = MODELS.get(name, ("", 0, False))
    kwargs = {"img_size": side} if family in SIZED_FAMILIES else {}
    return randomize_batch_norms(timm.create_model(name, pretrained=False, **kwargs), seed)


def _register() -> None:
    _timm()
    for name, (_family, side, slow) in MODELS.items():
        register("timm", name, "torch", partial(build, name), (3, side, side), slow=slow)


_register()
