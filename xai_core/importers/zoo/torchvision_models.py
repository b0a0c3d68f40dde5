"""Every classification builder of ``torchvision.models``, with random weights, in the zoo.

The list is torchvision's own (``list_models(module=torchvision.models)``), so a builder
added by a new torchvision is checked without a change here. Each is built at the
smallest input its architecture accepts in the 64-128 px range; those whose head fixes a
larger one (AlexNet's and VGG's adaptive pooling to 6x6 and 7x7, MaxViT's 7x7 windows)
at 224 px. Vision transformers are built for 64 px images (torchvision's ``image_size``).
Batch norms get non-trivial statistics so that folding them is checked too.
"""

from __future__ import annotations

from functools import partial
from typing import Any

from xai_core.importers.zoo import register
from xai_core.importers.zoo.weights import randomize_batch_norms
from xai_core.optional import require

__all__ = ["SIZES", "SLOW", "build"]

#: Input side (pixels) by builder, where the default of 64 does not fit.
SIZES: dict[str, int] = {
    "alexnet": 224,  # adaptive pooling to 6x6 exports only from a multiple of 6
    "inception_v3": 80,  # at least 75 px
    "maxvit_t": 224,  # 7x7 windows at every stage
    **{f"vgg{d}{bn}": 224 for d in (11, 13, 16, 19) for bn in ("", "_bn")},  # 7x7 pooling
    "vit_h_14": 70,  # 14 px patches
}

#: Builders built with torchvision's ``image_size`` for the input side.
IMAGE_SIZE_ARG = ("vit_b_16", "vit_b_32", "vit_l_16", "vit_l_32", "vit_h_14")

#: Builders whose check takes long: over ~30M parameters or very deep, or a 224 px input.
SLOW = frozenset(
    {
        "alexnet",
        "maxvit_t",
        *(n for n in SIZES if n.startswith("vgg")),
        "vit_b_16",
        "vit_b_32",
        "vit_l_16",
        "vit_l_32",
        "vit_h_14",
        "regnet_y_16gf",
        "regnet_y_32gf",
        "regnet_y_128gf",
        "regnet_x_16gf",
        "regnet_x_8gf",
        "regnet_y_8gf",
        "efficientnet_b3",
        "efficientnet_b4",
        "efficientnet_v2_s",
        "convnext_tiny",
        "convnext_small",
        "swin_s",
        "swin_v2_s",
        "wide_resnet50_2",
        "resnet34",
        "resnet101",
        "inception_v3",
        "densenet169",
        "regnet_x_32gf",
        "efficientnet_b5",
        "efficientnet_b6",
        "efficientnet_b7",
        "efficientnet_v2_m",
        "efficientnet_v2_l",
        "convnext_base",
        "convnext_large",
        "swin_b",
        "swin_v2_b",
        "wide_resnet101_2",
        "resnext101_32x8d",
        "resnext101_64x4d",
        "resnet152",
        "densenet161",
        "densenet201",
    }
)


def _torchvision() -> Any:
    return require("torchvision", extra="zoo", need="the torchvision models of the zoo")


def build(name: str, seed: int = 0) -> Any:
    """torchvision's ``name`` with random weights (``seed``), in eval mode."""
    import torch

    tv = _torchvision()
    torch.manual_seed(seed)
    kwargs: dict[str, Any] = {"weights": None}
    if name in IMAGE_SIZE_ARG:
        kwargs["image_size"] = SIZES.get(name, 64)
    if name == "maxvit_t":
        kwargs["input_size"] = (224, 224)
    if name in ("inception_v3", "googlenet"):
        kwargs["init_weights"] = False  # scipy's truncated normal is slow; torch's init is kept
    return randomize_batch_norms(tv.models.get_model(name, **kwargs), seed)


def _register() -> None:
    tv = _torchvision()
    for name in tv.models.list_models(module=tv.models):
        side = SIZES.get(name, 64)
        register(
            "torchvision",
            name,
            "torch",
            partial(build, name),
            (3, side, side),
            slow=name in SLOW,
        )


_register()
