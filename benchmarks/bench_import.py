"""Imported networks: the forward pass against onnxruntime, IG against Captum on the original.

Run from the repository root::

    python benchmarks/bench_import.py [--repeats 7] [--rows 64] [--steps 32] [--only import]

1. A MobileNetV2-style PyTorch network (inverted residual blocks: 1x1 expansion, 3x3
   depthwise, 1x1 projection, batch norm, ReLU6) is exported to ONNX and imported with
   ``xai.from_onnx``; its forward pass on ``--rows`` random 3x32x32 images on the ``cpu``
   backend is timed against onnxruntime running the same ONNX bytes on the same inputs.
   Goal: within 2x of onnxruntime.
2. A ResNet-style CNN (basic blocks with batch norm and residual additions) is imported
   with ``xai.from_torch``; integrated gradients on ``--rows`` 1x28x28 inputs with
   ``--steps`` Gauss-Legendre nodes is timed against Captum's ``IntegratedGradients`` on
   the original module at the same nodes. Goal: not slower than Captum.
3. ResNet-50 (bottleneck blocks [3, 4, 6, 3], 25.6 M parameters, the standard layout)
   and ResNet-18 (basic blocks [2, 2, 2, 2], 11.7 M) at 3x224x224, random weights and
   batch-norm statistics, are imported: ``xai.from_onnx`` on the exported bytes and
   ``xai.from_torch`` on the module (one example image), each split by stage (torch
   export, ONNX parse, reading initialisers, shape inference, schema checks, building
   with the weights, declared-shape checks, batch-norm folding, from_torch's faithfulness
   checks), and the first ``predict`` of the imported network on that image. The anchor
   is onnxruntime creating an ``InferenceSession`` from the same bytes. Goal: either
   import of ResNet-50 under 3 s. ``--only import`` runs this part alone.

Both at 1 and 2 threads: torch (``torch.set_num_threads``), onnxruntime
(``intra_op_num_threads``) and numpy's BLAS (threadpoolctl) are pinned alike. Each time
is the median of ``--repeats`` interleaved rounds (every contender once per round, in a shuffled order), so a
change of machine load touches all alike; idle threads wait passively (``OMP_WAIT_POLICY``,
onnxruntime's ``allow_spinning=0``) so that no library's spinning workers slow the next. Ratios are ours / theirs (below 1: faster).

The floor, timed in the same rounds, is the products the work cannot avoid: every
convolution's and dense layer's matrix products at their im2col shapes (``groups``
products of ``(n * oh * ow, in / groups * kh * kw)`` by ``(in / groups * kh * kw,
out / groups)``), float32 numpy into preallocated outputs on cache-line boundaries, with
the column matrices already built; for IG at the ``rows * steps`` path points, forward and the backward
input-gradient products. A depthwise layer's forward products are whichever numpy runs
faster of those and the same convolution as banded products (more multiply-adds, at
matrix-product speed; see :func:`banded_shapes`). ``ours / floor`` is how far the whole
computation is from them.
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from collections.abc import Callable
from typing import Any

# Idle threads of one library must not spin on the cores another is timed on: passive
# OpenMP waits for torch, no spinning in onnxruntime (set below), before anything loads.
os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")

import numpy as np  # noqa: E402
from _pinning import interleaved, machine_note  # noqa: E402

import xai_core as xai  # noqa: E402


def torch_models():
    """The MobileNetV2-style and ResNet-style modules, eval mode, non-trivial batch norm."""
    import torch
    from torch import nn

    def block(cin, cout, stride, expand=4):
        hidden = cin * expand
        return nn.Sequential(
            nn.Conv2d(cin, hidden, 1, bias=False),
            nn.BatchNorm2d(hidden),
            nn.ReLU6(),
            nn.Conv2d(hidden, hidden, 3, stride, 1, groups=hidden, bias=False),
            nn.BatchNorm2d(hidden),
            nn.ReLU6(),
            nn.Conv2d(hidden, cout, 1, bias=False),
            nn.BatchNorm2d(cout),
        )

    class Residual(nn.Module):
        def __init__(self, body, short=None):
            super().__init__()
            self.body, self.short = body, short

        def forward(self, x):
            return self.body(x) + (x if self.short is None else self.short(x))

    class Head(nn.Module):
        def __init__(self, cin, classes):
            super().__init__()
            self.pool, self.fc = nn.AdaptiveAvgPool2d(1), nn.Linear(cin, classes)

        def forward(self, x):
            return torch.softmax(self.fc(torch.flatten(self.pool(x), 1)), dim=1)

    torch.manual_seed(0)
    mobilenet = nn.Sequential(
        nn.Conv2d(3, 16, 3, 2, 1, bias=False),
        nn.BatchNorm2d(16),
        nn.ReLU6(),
        Residual(block(16, 16, 1)),
        block(16, 24, 2),
        Residual(block(24, 24, 1)),
        block(24, 32, 2),
        Residual(block(32, 32, 1)),
        Head(32, 10),
    )

    def basic(cin, cout, stride):
        body = nn.Sequential(
            nn.Conv2d(cin, cout, 3, stride, 1, bias=False),
            nn.BatchNorm2d(cout),
            nn.ReLU(),
            nn.Conv2d(cout, cout, 3, 1, 1, bias=False),
            nn.BatchNorm2d(cout),
        )
        short = None
        if stride != 1 or cin != cout:
            short = nn.Sequential(nn.Conv2d(cin, cout, 1, stride, bias=False), nn.BatchNorm2d(cout))
        return nn.Sequential(Residual(body, short), nn.ReLU())

    resnet = nn.Sequential(
        nn.Conv2d(1, 8, 3, 1, 1, bias=False),
        nn.BatchNorm2d(8),
        nn.ReLU(),
        basic(8, 8, 1),
        basic(8, 16, 2),
        Head(16, 10),
    )
    g = torch.Generator().manual_seed(0)
    for model in (mobilenet, resnet):
        for m in model.modules():
            if isinstance(m, nn.BatchNorm2d):
                with torch.no_grad():
                    m.running_mean.copy_(torch.rand(m.num_features, generator=g) - 0.5)
                    m.running_var.copy_(torch.rand(m.num_features, generator=g) + 0.5)
        model.eval()
    return mobilenet, resnet


#: Up to this many (input pixels) x (output pixels), one band of the whole image per channel.
WHOLE_IMAGE = 2048


def banded_shapes(layer, rows: int) -> list[tuple[int, int, int, int]]:
    """A depthwise layer's products as banded (Toeplitz) matrices.

    Per channel, the input rows a kernel row reads times that row's ``(width, out_width)``
    band (the row's taps on its diagonals), one stacked product per kernel row; small
    images one product by the band of the whole image. The same sum as the im2col
    products, with the band's zeros multiplied too.
    """
    c, h, w = layer.input_shape
    oh, ow = layer.output_shape[1:]
    if h * w * oh * ow <= WHOLE_IMAGE:
        return [(c, rows, h * w, oh * ow)]
    (kh, _), (sh, _), (dh, _), top = layer.kernel_size, layer.strides, layer.dilation, layer.pads[0]
    return [(c, rows * len(range((i * dh - top) % sh, h, sh)), w, ow) for i in range(kh)]


def _cache_aligned(values: np.ndarray) -> np.ndarray:
    """A copy of the 1-D ``values`` starting on a 64-byte cache line, as the network's activations do."""
    slack = 64 // values.itemsize
    buf = np.empty(values.size + slack, values.dtype)
    start = (-buf.ctypes.data % 64) // values.itemsize
    out = buf[start : start + values.size]
    out[...] = values
    return out


def _products(shapes) -> Callable[[], None]:
    """Stacked float32 products ``(g, m, k) @ (g, k, n)`` into preallocated outputs."""
    size_a = max(g * m * k for g, m, k, _ in shapes)
    size_out = max(g * m * n for g, m, _, n in shapes)
    rng = np.random.default_rng(0)
    scratch_a = _cache_aligned(rng.random(size_a, dtype=np.float32))
    scratch_b = _cache_aligned(
        rng.random(max(g * k * n for g, _, k, n in shapes), dtype=np.float32)
    )
    scratch_out = _cache_aligned(np.empty(size_out, dtype=np.float32))
    jobs = [
        (
            scratch_a[: g * m * k].reshape(g, m, k),
            scratch_b[: g * k * n].reshape(g, k, n),
            scratch_out[: g * m * n].reshape(g, m, n),
        )
        for g, m, k, n in shapes
    ]

    def run() -> None:
        for a, b, out in jobs:
            if a.shape[0] == 1:
                np.matmul(a[0], b[0], out=out[0])
            else:
                np.matmul(a, b, out=out)

    return run


def _median_time(fn: Callable[[], None], repeats: int = 5) -> float:
    """Median wall time of ``fn`` over ``repeats`` calls after one warm-up."""
    fn()
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return float(np.median(times))


def floor_products(net, rows: int, *, backward: bool) -> Callable[[], None]:
    """The network's unavoidable products at ``rows`` samples (see the module docstring).

    Operands are views of shared scratch buffers (their values do not matter), so the
    floor of a large batch does not hold one column matrix per layer. A depthwise layer's
    products (forward only) are whichever of its im2col-shape products and its banded
    products (:func:`banded_shapes`) numpy runs faster here, timed once before the rounds.
    """
    shapes = []
    for node in net.nodes:
        layer = node.layer
        if isinstance(layer, xai.nn.Conv2D):
            g, f = layer.groups, layer.filters
            k = layer.weight[0].size
            shape = layer.output_shape
            pixels = shape[1] * shape[2] if layer.layout == "NCHW" else shape[0] * shape[1]
            m = rows * pixels
            products = [(g, m, k, f // g)]  # at the im2col shapes
            depthwise = g == f == layer.input_shape[0] > 1 and layer.layout == "NCHW"
            if depthwise and not backward:
                banded = banded_shapes(layer, rows)
                if _median_time(_products(banded)) < _median_time(_products(products)):
                    products = banded
            shapes.extend(products)
            if backward:
                shapes.append((g, m, f // g, k))
        elif isinstance(layer, xai.nn.Dense):
            n_in, units = layer.weight.shape
            shapes.append((1, rows, n_in, units))
            if backward:
                shapes.append((1, rows, units, n_in))
    return _products(shapes)


def forward_section(mobilenet, X: np.ndarray, threads: int, repeats: int) -> float:
    import onnxruntime as ort
    import torch

    from xai_core.importers.torch_import import export_onnx

    data = export_onnx(mobilenet, torch.from_numpy(X[:2]))
    net = xai.from_onnx(data)
    opts = ort.SessionOptions()
    opts.intra_op_num_threads = threads
    opts.inter_op_num_threads = 1
    opts.add_session_config_entry("session.intra_op.allow_spinning", "0")
    sess = ort.InferenceSession(data, opts, providers=["CPUExecutionProvider"])
    name = sess.get_inputs()[0].name
    backend = xai.get_backend("cpu")
    (ours, got), (theirs, want), (floor, _) = interleaved(
        lambda: net.predict(X, backend),
        lambda: sess.run(None, {name: X})[0],
        floor_products(net, len(X), backward=False),
        repeats=repeats,
    )
    diff = float(np.abs(got - want).max())
    print(
        f"  forward  MobileNetV2-style {len(X)} x 3x32x32: xai-core cpu {ours * 1e3:8.1f} ms, "
        f"onnxruntime {theirs * 1e3:8.1f} ms, ratio {ours / theirs:5.2f} (goal <= 2), "
        f"floor {floor * 1e3:6.1f} ms (ours / floor {ours / floor:4.1f}), max |diff| {diff:.1e}"
    )
    return ours / theirs


def ig_section(resnet, X: np.ndarray, steps: int, threads: int, repeats: int) -> float:
    import torch
    from captum.attr import IntegratedGradients

    net = xai.from_torch(resnet, torch.from_numpy(X[:2]))
    target = np.arange(len(X)) % 10
    x_t, t_t = torch.from_numpy(X), torch.from_numpy(target)
    captum = IntegratedGradients(resnet)

    def ours_fn():
        e = xai.explain(
            net,
            X,
            method="ig",
            target=target,
            steps=steps,
            integration="gausslegendre",
            progress=False,
        )
        return e.values

    def theirs_fn():
        return (
            captum.attribute(
                x_t,
                target=t_t,
                n_steps=steps,
                method="gausslegendre",
                internal_batch_size=len(X) * steps,
            )
            .detach()
            .numpy()
        )

    (ours, got), (theirs, want), (floor, _) = interleaved(
        ours_fn, theirs_fn, floor_products(net, len(X) * steps, backward=True), repeats=repeats
    )
    rel = float(np.abs(got - want).max() / np.abs(want).max())
    print(
        f"  IG       ResNet-style {len(X)} x 1x28x28, {steps} steps: xai-core cpu {ours * 1e3:8.1f} ms, "
        f"Captum {theirs * 1e3:8.1f} ms, ratio {ours / theirs:5.2f} (goal <= 1), "
        f"floor {floor * 1e3:6.1f} ms (ours / floor {ours / floor:4.1f}), max rel diff {rel:.1e}"
    )
    return ours / theirs


def resnet(depth: int):
    """ResNet-50 or ResNet-18 in torchvision's layout, eval mode, random batch-norm statistics."""
    import torch
    from torch import nn

    class Block(nn.Module):
        def __init__(self, cin: int, width: int, stride: int, bottleneck: bool) -> None:
            super().__init__()
            cout = width * 4 if bottleneck else width
            if bottleneck:  # 1x1 reduce, 3x3 (strided), 1x1 expand
                shapes = [(cin, width, 1, 1), (width, width, 3, stride), (width, cout, 1, 1)]
            else:
                shapes = [(cin, width, 3, stride), (width, width, 3, 1)]
            layers: list = []
            for i, (a, b, k, st) in enumerate(shapes):
                layers += [nn.Conv2d(a, b, k, st, k // 2, bias=False), nn.BatchNorm2d(b)]
                if i < len(shapes) - 1:
                    layers.append(nn.ReLU(inplace=True))
            self.body = nn.Sequential(*layers)
            self.downsample = None
            if stride != 1 or cin != cout:
                self.downsample = nn.Sequential(
                    nn.Conv2d(cin, cout, 1, stride, bias=False), nn.BatchNorm2d(cout)
                )

        def forward(self, x):
            short = x if self.downsample is None else self.downsample(x)
            return torch.relu(self.body(x) + short)

    bottleneck = depth == 50
    counts = [3, 4, 6, 3] if bottleneck else [2, 2, 2, 2]
    torch.manual_seed(0)
    layers: list = [
        nn.Conv2d(3, 64, 7, 2, 3, bias=False),
        nn.BatchNorm2d(64),
        nn.ReLU(inplace=True),
        nn.MaxPool2d(3, 2, 1),
    ]
    cin = 64
    for stage, n in enumerate(counts):
        width = 64 * 2**stage
        for j in range(n):
            layers.append(Block(cin, width, 2 if j == 0 and stage > 0 else 1, bottleneck))
            cin = width * 4 if bottleneck else width
    layers += [nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.Linear(cin, 1000)]
    model = nn.Sequential(*layers)
    g = torch.Generator().manual_seed(0)
    for m in model.modules():
        if isinstance(m, nn.BatchNorm2d):
            with torch.no_grad():
                m.running_mean.copy_(torch.rand(m.num_features, generator=g) - 0.5)
                m.running_var.copy_(torch.rand(m.num_features, generator=g) + 0.5)
    return model.eval()


def _stage_points():
    """(stage, owner, attribute) of each importer step timed: where the work happens.

    The steps do not call each other, so their times add up (the rest is the converters'
    own work: attributes, node order, constants).
    """
    import onnx.shape_inference

    from xai_core.importers import onnx_import, onnx_reader, torch_import

    return [
        ("torch export", torch_import, "_trace"),
        ("ONNX parse", onnx_reader, "load_onnx_model"),
        ("initializers", onnx_reader, "_tensor"),
        ("shape inference", onnx.shape_inference, "infer_shapes"),
        ("schema checks", onnx_reader, "_check_schema"),
        ("build (Graph.add)", xai.nn.Graph, "add"),
        ("set_params", xai.nn.Graph, "set_params"),  # after add, where a converter sets weights
        ("declared shapes", onnx_import, "check_declared"),
        ("fold batch norms", onnx_import, "fold"),
        ("fold batch norms", xai.nn.Graph, "fold_batch_norm"),  # a copying fold, if used
        ("faithful checks", torch_import, "_check_faithful"),
    ]


class StageClock:
    """Wall and CPU time spent in each importer stage while active (the functions are
    wrapped). CPU time (of the process, every thread) is what a loaded machine blurs least."""

    def __init__(self) -> None:
        self.spent: dict[str, float] = {}
        self._saved: list = []

    def __enter__(self) -> StageClock:
        for stage, owner, attr in _stage_points():
            original = getattr(owner, attr, None)
            if original is None:  # not a step of this version of the importer
                continue
            self._saved.append((owner, attr, original))
            setattr(owner, attr, self._timed(stage, original))
        return self

    def __exit__(self, *exc) -> None:
        for owner, attr, original in reversed(self._saved):
            setattr(owner, attr, original)
        self._saved.clear()

    def _timed(self, stage: str, fn: Callable) -> Callable:
        def timed(*args, **kwargs):
            start, cpu = time.perf_counter(), time.process_time()
            try:
                return fn(*args, **kwargs)
            finally:
                wall, cpu = time.perf_counter() - start, time.process_time() - cpu
                self.spent[stage] = self.spent.get(stage, 0.0) + wall
                self.spent[f"{stage} CPU"] = self.spent.get(f"{stage} CPU", 0.0) + cpu

        return timed

    def take(self) -> dict[str, float]:
        spent, self.spent = self.spent, {}
        return spent


def import_section(depth: int, threads: int, repeats: int) -> dict[str, float]:
    """ResNet-``depth`` import times by stage against onnxruntime's session creation."""
    import statistics

    import onnxruntime as ort
    import torch

    from xai_core.importers.torch_import import export_onnx

    module = resnet(depth)
    example = torch.from_numpy(
        np.random.default_rng(0).standard_normal((1, 3, 224, 224)).astype(np.float32)
    )
    data = export_onnx(module, example)
    opts = ort.SessionOptions()
    opts.intra_op_num_threads = threads
    opts.inter_op_num_threads = 1
    opts.add_session_config_entry("session.intra_op.allow_spinning", "0")
    clock = StageClock()
    rows: dict[str, list[dict[str, float]]] = {"from_onnx": [], "from_torch": []}

    def timed(fn: Callable, *args) -> tuple[Any, dict[str, float]]:
        start, cpu = time.perf_counter(), time.process_time()
        out = fn(*args)
        return out, {"": time.perf_counter() - start, " CPU": time.process_time() - cpu}

    def ours_onnx():
        with clock:
            net, total = timed(xai.from_onnx, data)
            _, first = timed(net.predict, example.numpy())
        rows["from_onnx"].append(
            {
                **clock.take(),
                **{f"total{k}": v for k, v in total.items()},
                **{f"first predict{k}": v for k, v in first.items()},
            }
        )

    def ours_torch():
        with clock:
            _, total = timed(xai.from_torch, module, example)
        rows["from_torch"].append({**clock.take(), **{f"total{k}": v for k, v in total.items()}})

    (_, _), (_, _), (theirs, _) = interleaved(
        ours_onnx,
        ours_torch,
        lambda: ort.InferenceSession(data, opts, providers=["CPUExecutionProvider"]),
        repeats=repeats,
    )
    params = sum(p.numel() for p in module.parameters()) / 1e6
    print(
        f"  import   ResNet-{depth} ({params:.1f} M parameters, {len(data) / 1e6:.0f} MB) "
        f"3x224x224: onnxruntime InferenceSession {theirs:6.2f} s"
    )
    out = {}
    for what, kept in rows.items():
        kept = kept[1:]  # the warm-up round of interleaved is not timed either
        median = {k: statistics.median(r.get(k, 0.0) for r in kept) for k in kept[0]}
        total, total_cpu = median.pop("total"), median.pop("total CPU")
        first, first_cpu = median.pop("first predict", None), median.pop("first predict CPU", 0)
        verdict = "meets" if total < 3.0 else "misses"
        tail = f"; then first predict {first:5.2f} s (CPU {first_cpu:5.2f} s)" if first else ""
        print(
            f"    {what:10s} {total:6.2f} s (CPU {total_cpu:5.2f} s), ratio {total / theirs:5.2f} "
            f"({verdict} the goal of < 3 s){tail}"
        )
        for kind, suffix, whole in (("wall", "", total), ("CPU", " CPU", total_cpu)):
            stages = {k[: len(k) - len(suffix)]: v for k, v in median.items() if k.endswith(suffix)}
            stages = {k: v for k, v in stages.items() if not k.endswith(" CPU")}
            rest = whole - sum(stages.values())  # the stages do not nest: converters' own work
            shown = ", ".join(f"{k} {v:.3f}" for k, v in stages.items() if v >= 0.0005)
            print(f"      {kind:4s} stages (s): {shown}, other {max(rest, 0.0):.3f}")
        out[what] = total / theirs
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--repeats", type=int, default=7)
    parser.add_argument("--rows", type=int, default=64)
    parser.add_argument("--steps", type=int, default=32)
    parser.add_argument("--only", choices=("forward", "ig", "import"), default=None)
    args = parser.parse_args(argv)
    try:
        import captum  # noqa: F401
        import onnxruntime  # noqa: F401
        import torch
    except ImportError as exc:
        print(f"skipped: {exc}. Install the import extra: pip install 'xai-core[import]'.")
        return 0
    from threadpoolctl import threadpool_limits

    mobilenet, small_resnet = torch_models()
    rng = np.random.default_rng(0)
    images = rng.standard_normal((args.rows, 3, 32, 32)).astype(np.float32)
    digits = rng.uniform(0, 1, (max(args.rows // 8, 2), 1, 28, 28)).astype(np.float32)
    print(f"bench_import: medians of {args.repeats} interleaved rounds; {machine_note()}")
    ratios = {}
    for threads in (1, 2):
        torch.set_num_threads(threads)
        with threadpool_limits(threads):
            print(f"threads = {threads}")
            if args.only in (None, "forward"):
                ratios[("forward", threads)] = forward_section(
                    mobilenet, images, threads, args.repeats
                )
            if args.only in (None, "ig"):
                ratios[("ig", threads)] = ig_section(
                    small_resnet, digits, args.steps, threads, args.repeats
                )
            if args.only in (None, "import"):
                for depth in (50, 18):
                    for what, r in import_section(depth, threads, args.repeats).items():
                        ratios[(f"ResNet-{depth} {what}", threads)] = r
    print("summary (ours / theirs):")
    for (what, threads), r in ratios.items():
        if what.startswith("ResNet"):  # the goal is absolute (3 s); the ratio is the anchor
            print(f"  {what:21s} threads={threads}: {r:5.2f}  (to onnxruntime's session)")
            continue
        goal = 2.0 if what == "forward" else 1.0
        verdict = "meets" if r <= goal else "misses"
        print(f"  {what:21s} threads={threads}: {r:5.2f}  {verdict} the goal of <= {goal:g}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
