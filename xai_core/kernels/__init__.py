"""The convolution kernels: plain functions on arrays that layers and backends both call.

What it holds:

- :mod:`~xai_core.kernels.im2col`: im2col, col2im, sliding windows and the padding and
  output-size arithmetic of convolutions and pools;
- :mod:`~xai_core.kernels.conv_ops`: :class:`~xai_core.kernels.conv_ops.ConvGeometry` (a
  convolution's kernel, strides, pads, dilation, groups) and the im2col lowering every
  backend runs by default, through the backend object it is handed;
- :mod:`~xai_core.kernels.conv_taps`: the cpu backend's convolutions without im2col (forward
  and backward);
- :mod:`~xai_core.kernels.conv_forward`: its channels-last inference kernels, with
  :mod:`~xai_core.kernels.depthwise` (a compiled depthwise loop) and
  :mod:`~xai_core.kernels.epilogue` (the compiled bias, residual and clamp pass);
- :mod:`~xai_core.kernels.scratch`: the per-thread pool of reused, aligned blocks they
  allocate from.

What it may import: numpy, numba, scipy and the leaf utilities (:mod:`xai_core.errors`,
:mod:`xai_core.validation`); nothing from ``xai_core.nn``, ``xai_core.backends``, ``xai_core.int8``,
``xai_core.importers`` or any package above them (``tests/core/test_layering.py`` checks it).
What a kernel needs from a layer comes in as plain values (an activation's clamp bounds, a
:class:`~xai_core.kernels.conv_ops.ConvGeometry`), and a backend comes in as an argument.
"""
