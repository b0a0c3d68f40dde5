"""What a hidden pixel becomes in Partition SHAP on images: shap's ``Image`` masker's values.

``mask_value`` is one of

- ``"blur(kw,kh)"``: the image blurred by a normalised ``kw`` x ``kh`` box filter
  (``cv2.blur``: kernel width, then height; borders reflected about the edge pixel,
  OpenCV's ``BORDER_REFLECT_101``), here ``scipy.ndimage.uniform_filter`` in ``mode="mirror"``,
  so OpenCV is not needed (equal to ``cv2.blur`` to rounding: tests/plugins/test_shap_partition.py);
- a number, or an array of one image's shape: hidden values take it;
- ``"inpaint_telea"`` or ``"inpaint_ns"``: OpenCV's inpainting of the hidden pixels
  (``cv2.inpaint``, radius 3), as shap calls it: on the image cast to 8 bits, a pixel
  hidden when any of its channels is, the image's channel means when every pixel is.
  Needs the ``inpaint`` extra (``pip install 'xai-core[inpaint]'``, opencv-python-headless).

Blur and constants build the masked images of any number of masks at once (one
``where``); inpainting runs OpenCV once per mask, as shap does.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

import numpy as np

from xai_core import CapabilityError, ShapeError, ValidationError, XaiWarning

__all__ = ["INPAINT", "ImageMasker", "image_masker"]

#: The inpainting mask values and their OpenCV flag names.
INPAINT = {"inpaint_telea": "INPAINT_TELEA", "inpaint_ns": "INPAINT_NS"}
_BLUR = re.compile(r"^blur\(\s*(\d+)\s*,\s*(\d+)\s*\)$")
_EXPECT = (
    "'blur(kw,kh)' (kernel width and height, positive integers), 'inpaint_telea', "
    "'inpaint_ns', a number or an array of one image's shape"
)


def _cv2() -> Any:
    try:
        import cv2
    except ImportError:
        raise CapabilityError(
            "mask_value='inpaint_telea' / 'inpaint_ns' inpaints with OpenCV, which is not "
            "installed: pip install 'xai-core[inpaint]' (opencv-python-headless), or use "
            "mask_value='blur(k,k)' or a number, which need no OpenCV."
        ) from None
    return cv2


@dataclass(frozen=True)
class ImageMasker:
    """Masked images of ``(H, W, C)`` images.

    Attributes
    ----------
    kind : {"blur", "constant", "inpaint"}
    shape : (int, int, int)
        ``(H, W, C)``.
    kernel : (int, int) or None
        ``(kw, kh)`` of a blur.
    value : ndarray of float64 of shape (H W C,) or None
        The hidden values of a constant masker.
    flag : str or None
        OpenCV's inpainting flag name.
    description : str
    """

    kind: str
    shape: tuple[int, int, int]
    kernel: tuple[int, int] | None = None
    value: np.ndarray | None = None
    flag: str | None = None
    description: str = ""

    def hidden_values(self, images: np.ndarray) -> np.ndarray | None:
        """What hidden values become, per row: ndarray of float64 of shape (n, H W C); None for inpainting.

        Parameters
        ----------
        images : ndarray of shape (n, H, W, C)
        """
        n = len(images)
        if self.kind == "blur":
            from scipy.ndimage import uniform_filter

            kw, kh = self.kernel
            out = uniform_filter(
                np.asarray(images, dtype=np.float64), size=(1, kh, kw, 1), mode="mirror"
            )
            return out.reshape(n, -1)
        if self.kind == "constant":
            return np.broadcast_to(self.value, (n, self.value.size))
        return None

    def masked(
        self, images: np.ndarray, hidden: np.ndarray | None, rows: np.ndarray, masks: np.ndarray
    ) -> np.ndarray:
        """The masked images: ``masks[k]`` (True: shown) applied to image ``rows[k]``.

        Parameters
        ----------
        images : ndarray of shape (n, H, W, C)
        hidden : ndarray of shape (n, H W C) or None
            :meth:`hidden_values` of ``images``.
        rows : ndarray of int of shape (k,)
        masks : ndarray of bool of shape (k, H W C)

        Returns
        -------
        ndarray of float64 of shape (k, H W C)
        """
        flat = images.reshape(len(images), -1)
        if hidden is not None:
            return np.where(masks, flat[rows], hidden[rows])
        cv2 = _cv2()
        flag = getattr(cv2, self.flag)
        h, w, c = self.shape
        out = np.empty(masks.shape, dtype=np.float64)
        for k in range(len(masks)):  # OpenCV inpaints one image at a time
            image = images[rows[k]].astype(np.float64)
            off = (~masks[k]).reshape(self.shape).astype(np.uint8).max(axis=2)
            if off.sum() == h * w:
                filled = image.copy()
                filled[:] = filled.mean((0, 1))
            else:
                filled = cv2.inpaint(image.astype(np.uint8), off, inpaintRadius=3, flags=flag)
            out[k] = np.asarray(filled, dtype=np.float64).reshape(-1)
        return out


def image_masker(mask_value: Any, shape: tuple[int, int, int], X_hwc: np.ndarray) -> ImageMasker:
    """The masker for ``mask_value`` on ``(H, W, C)`` images, checked before any model call.

    Parameters
    ----------
    mask_value : str, number or array-like of one image's shape
    shape : (int, int, int)
        ``(H, W, C)``.
    X_hwc : ndarray of shape (n, H, W, C)
        The images, to check inpainting's value range.
    """
    if isinstance(mask_value, str):
        blur = _BLUR.match(mask_value.strip())
        if blur:
            kw, kh = int(blur.group(1)), int(blur.group(2))
            if kw < 1 or kh < 1:
                raise ValidationError(f"mask_value must be {_EXPECT}; got {mask_value!r}.")
            return ImageMasker("blur", shape, kernel=(kw, kh), description=f"blur({kw},{kh})")
        if mask_value in INPAINT:
            _cv2()
            if shape[2] not in (1, 3):
                raise ValidationError(
                    f"mask_value={mask_value!r}: OpenCV inpaints images of 1 or 3 channels; "
                    f"got images of shape {shape} (H, W, C)."
                )
            lo, hi = float(np.min(X_hwc)), float(np.max(X_hwc))
            if lo < 0 or hi > 255:
                raise ValidationError(
                    f"mask_value={mask_value!r} inpaints the image cast to 8 bits (as shap's "
                    f"masker), so values must lie in [0, 255]; got values in [{lo:g}, {hi:g}]."
                )
            if hi <= 1:
                import warnings

                warnings.warn(
                    f"mask_value={mask_value!r} inpaints the image cast to 8 bits, as shap's "
                    "masker does; these images lie in [0, 1], so every value becomes 0 or 1. "
                    "Scale them to [0, 255] or use mask_value='blur(k,k)'.",
                    XaiWarning,
                    stacklevel=6,
                )
            return ImageMasker("inpaint", shape, flag=INPAINT[mask_value], description=mask_value)
        raise ValidationError(f"mask_value must be {_EXPECT}; got {mask_value!r}.")
    if isinstance(mask_value, bool):
        raise ValidationError(f"mask_value must be {_EXPECT}; got {mask_value!r}.")
    if isinstance(mask_value, (int, float, np.integer, np.floating)):
        if not np.isfinite(mask_value):
            raise ValidationError(f"mask_value must be finite; got {mask_value!r}.")
        value = np.full(int(np.prod(shape)), float(mask_value))
        return ImageMasker("constant", shape, value=value, description=f"constant {mask_value:g}")
    arr = np.asarray(mask_value)
    if arr.dtype.kind not in "fiu":
        raise ValidationError(f"mask_value must be {_EXPECT}; got {type(mask_value).__name__}.")
    if arr.size != int(np.prod(shape)):
        raise ShapeError(
            f"mask_value as an array must hold one image's {int(np.prod(shape))} values "
            f"(shape {shape}, H W C); got shape {arr.shape}."
        )
    if not np.all(np.isfinite(arr)):
        raise ValidationError("mask_value must be finite; got an array with NaN or infinity.")
    return ImageMasker(
        "constant", shape, value=arr.astype(np.float64).reshape(-1), description="an image"
    )
