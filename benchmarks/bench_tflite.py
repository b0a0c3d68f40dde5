"""int8 inference of the depthwise-separable .tflite fixture: the edgetpu backend against LiteRT.

The same 1,000 int8 inputs (12 x 12 x 3) run through ``tests/fixtures/tflite/separable_int8.tflite``:

- ours: ``TFLiteModel.run`` on the ``edgetpu`` backend (and on ``cpu``), one batch, TFLite's
  int8 kernels with every product through the backend (which counts cycles);
- LiteRT with its reference kernels (``BUILTIN_REF``) and with its default optimised kernels,
  one ``invoke`` per row (the file has batch size 1, as deployed).

Outputs are compared (identical to the reference kernels by construction; the default kernels
may differ by one on FULLY_CONNECTED near-ties). Timings are medians of interleaved repeats,
with BLAS and LiteRT at 1 thread and again at 2. The floor is the int8 products alone: the
model's MACs through one numpy int64 product per GEMM operator.

Run: ``python benchmarks/bench_tflite.py [--rows 1000] [--repeats 7]``.
"""

from __future__ import annotations

import argparse
import os
from pathlib import Path

import numpy as np
from _pinning import interleaved
from threadpoolctl import threadpool_info, threadpool_limits

import xai_core as xai

FIXTURE = (
    Path(__file__).resolve().parents[1] / "tests" / "fixtures" / "tflite" / "separable_int8.tflite"
)


def interpreter(kind: str, threads: int):
    from ai_edge_litert.interpreter import Interpreter, OpResolverType

    resolver = OpResolverType.BUILTIN_REF if kind == "reference" else OpResolverType.AUTO
    it = Interpreter(str(FIXTURE), experimental_op_resolver_type=resolver, num_threads=threads)
    it.allocate_tensors()
    return it


def run_litert(it, Q: np.ndarray) -> np.ndarray:
    inp, out = it.get_input_details()[0]["index"], it.get_output_details()[0]["index"]
    rows = []
    for row in Q:
        it.set_tensor(inp, row[None])
        it.invoke()
        rows.append(it.get_tensor(out).copy())
    return np.concatenate(rows)


def floor_products(model, Q: np.ndarray) -> None:
    """The unavoidable arithmetic: each GEMM operator's int8 products, as one numpy product."""
    n = len(Q)
    for op in model.graph.operators:
        if op.op in ("CONV_2D", "FULLY_CONNECTED", "DEPTHWISE_CONV_2D"):
            w = model.graph.tensors[op.inputs[1]]
            out = model.graph.tensors[op.outputs[0]].shape
            m = n * int(np.prod(out[1:-1])) if len(out) == 4 else n
            k = (
                int(np.prod(w.shape[1:]))
                if op.op != "DEPTHWISE_CONV_2D"
                else w.shape[1] * w.shape[2]
            )
            cols = np.ones((m, k), np.int64)
            if op.op == "DEPTHWISE_CONV_2D":
                np.einsum("mk,kc->mc", cols, np.ones((k, w.shape[-1]), np.int64))
            else:
                cols @ np.ones((k, w.shape[0]), np.int64)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=1000)
    parser.add_argument("--repeats", type=int, default=7)
    args = parser.parse_args()
    model = xai.from_tflite(FIXTURE)
    Q = np.random.default_rng(0).integers(-128, 128, (args.rows, 12, 12, 3)).astype(np.int8)
    edgetpu = xai.get_backend("edgetpu")
    out = model.graph.outputs[0]
    ours = model.run(Q, edgetpu)[out]
    ref = run_litert(interpreter("reference", 1), Q)
    default = run_litert(interpreter("default", 1), Q)
    print(f"{FIXTURE.name}: {args.rows} rows, operators {model.operators}")
    print(f"ours == LiteRT reference kernels on every value: {np.array_equal(ours, ref)}")
    diff = np.abs(ours.astype(int) - default.astype(int))
    print(
        f"ours vs LiteRT default kernels: max |diff| {diff.max()}, {int((diff > 0).sum())} values differ"
    )
    blas = ", ".join(
        sorted({f"{i['internal_api']} {i.get('architecture', '')}" for i in threadpool_info()})
    )
    load = os.getloadavg()[0]
    print(f"BLAS: {blas}; load average {load:.2f}; medians of {args.repeats} interleaved repeats")
    for threads in (1, 2):
        ref_it, default_it = interpreter("reference", threads), interpreter("default", threads)
        with threadpool_limits(threads):
            fns = {
                "edgetpu": lambda: model.run(Q, edgetpu),
                "cpu": lambda: model.run(Q, "cpu"),
                "litert_ref": lambda it=ref_it: run_litert(it, Q),
                "litert_default": lambda it=default_it: run_litert(it, Q),
                "floor": lambda: floor_products(model, Q),
            }
            timed = interleaved(*fns.values(), repeats=args.repeats)
            t = {name: seconds for name, (seconds, _) in zip(fns, timed)}
        print(f"\n{threads} thread(s):")
        print(f"  ours on edgetpu          {t['edgetpu'] * 1e3:8.1f} ms")
        print(f"  ours on cpu              {t['cpu'] * 1e3:8.1f} ms")
        print(
            f"  LiteRT reference kernels {t['litert_ref'] * 1e3:8.1f} ms   (LiteRT / ours on edgetpu: {t['litert_ref'] / t['edgetpu']:.2f}x)"
        )
        print(
            f"  LiteRT default kernels   {t['litert_default'] * 1e3:8.1f} ms   (LiteRT / ours on edgetpu: {t['litert_default'] / t['edgetpu']:.2f}x)"
        )
        print(
            f"  floor (the int8 products){t['floor'] * 1e3:8.1f} ms   (ours / floor: {t['edgetpu'] / t['floor']:.1f}x)"
        )
    c = model.placement_table()
    print(
        "\nEdge TPU placement:",
        c.device.value_counts().to_dict(),
        "first on host:",
        c.op[c.device == "host"].iloc[0],
    )


if __name__ == "__main__":
    main()
