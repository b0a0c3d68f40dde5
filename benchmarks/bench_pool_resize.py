"""Pooling by gathered windows and Resize by interpolation matrices, against onnxruntime.

Run from the repository root::

    python benchmarks/bench_pool_resize.py [--rows 2] [--repeats 7]

The converters of ``MaxPool`` / ``AveragePool`` beyond the native layers (dilations, 3-D
kernels: one ``Gather`` of every window's taps, then a reduction) and of ``Resize`` (bicubic:
two products by constant matrices) at a ResNet stem's sizes, ``--rows`` samples per call,
against onnxruntime running the same one-node model (the anchor) at 1 and 2 threads,
interleaved, medians of ``--repeats``. The floor is the memory traffic no implementation
avoids: one copy of the input and one of the output.
"""

from __future__ import annotations

import argparse

import numpy as np
from _pinning import THREADS, headline_header, headline_row, interleaved, pinned
from onnx import TensorProto, helper, numpy_helper

import xai_core as xai

CASES = {
    "MaxPool 2-D k3 dilations 2, (64, 56, 56)": (
        "MaxPool",
        (64, 56, 56),
        {"kernel_shape": [3, 3], "dilations": [2, 2], "pads": [2] * 4},
        None,
    ),
    "AveragePool 3-D k3 s2, (32, 8, 28, 28)": (
        "AveragePool",
        (32, 8, 28, 28),
        {"kernel_shape": [3] * 3, "strides": [2] * 3, "pads": [1] * 6},
        None,
    ),
    "Resize bicubic x2, (64, 56, 56)": ("Resize", (64, 56, 56), {"mode": "cubic"}, [1, 1, 2, 2]),
}


def one_node(op: str, shape: tuple, attrs: dict, scales) -> bytes:
    inputs, inits = ["x"], []
    if scales is not None:
        inputs += ["", "scales"]
        inits.append(numpy_helper.from_array(np.float32(scales), "scales"))
    graph = helper.make_graph(
        [helper.make_node(op, inputs, ["y"], **attrs)],
        "bench",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["n", *shape])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)],
        inits,
    )
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 19)]).SerializeToString()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=2)
    parser.add_argument("--repeats", type=int, default=7)
    args = parser.parse_args()
    import onnxruntime as ort

    headline_header("ONNX pooling and resizing converters against onnxruntime (the anchor)")
    for work, (op, shape, attrs, scales) in CASES.items():
        data = one_node(op, shape, attrs, scales)
        X = np.random.default_rng(0).standard_normal((args.rows, *shape)).astype(np.float32)
        net = xai.from_onnx(data)
        for threads in THREADS:
            options = ort.SessionOptions()
            options.intra_op_num_threads, options.inter_op_num_threads = threads, 1
            session = ort.InferenceSession(data, options, providers=["CPUExecutionProvider"])
            want = session.run(None, {"x": X})[0]
            source, target = np.empty_like(X), np.empty_like(want)

            def floor(source=source, target=target, want=want, X=X):
                np.copyto(source, X)
                np.copyto(target, want)

            calls = [
                lambda s=session, X=X: s.run(None, {"x": X})[0],
                lambda net=net, X=X: net.predict(X),
                floor,
            ]
            with pinned(threads):
                (anchor, ref), (ours, got), (least, _) = interleaved(*calls, repeats=args.repeats)
            diff = np.abs(got - ref.reshape(len(X), -1)).max() / np.abs(ref).max()
            headline_row(work, threads, anchor, ours, least, f"max |diff| {diff:.1e}")


if __name__ == "__main__":
    main()
