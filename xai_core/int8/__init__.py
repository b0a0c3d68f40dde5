"""The int8 runtime: TFLite-style graphs, their kernels, and post-training quantisation.

What it holds:

- the graph: :mod:`~xai_core.int8.graph` (:class:`~xai_core.int8.graph.TFLiteGraph`, its
  tensors and operators), the one structure the reader, the writer, the converter and the
  runtime share;
- the runtime: :mod:`~xai_core.int8.model` (:class:`~xai_core.int8.model.TFLiteModel`, a graph
  run operator by operator on any backend), TFLite's kernels (:mod:`~xai_core.int8.kernels_int8`,
  bit-exact with LiteRT, and :mod:`~xai_core.int8.kernels_float`), their arithmetic
  (:mod:`~xai_core.int8.numerics`, :mod:`~xai_core.int8.fixedpoint`,
  :mod:`~xai_core.int8.softmax`), where the Edge TPU compiler would put each operator
  (:mod:`~xai_core.int8.edgetpu_map`), and the quantised model with its saved format
  (:mod:`~xai_core.int8.quantized`);
- the converter from a native network: :mod:`~xai_core.int8.convert` (one converter per layer
  class, registered with :func:`~xai_core.int8.convert.add_converter`) and
  :mod:`~xai_core.int8.quantize` (calibration and :func:`xai_core.quantize`).

What it may import: the kernels, the backends (the runtime's products go through
``backend.matmul``), :mod:`xai_core.model.base` and the leaf utilities; the two converter
modules (``convert``, ``quantize``) also read :mod:`xai_core.nn`'s layers. Nothing here imports
``xai_core.importers`` (the TFLite reader and writer turn files into graphs and back, above
it), and the runtime modules import nothing from ``xai_core.nn``, so :mod:`xai_core.nn` may load
a saved int8 model (``tests/core/test_layering.py`` checks both).
"""
