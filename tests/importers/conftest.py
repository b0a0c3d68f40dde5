"""Shared fixtures of the importer tests: small PyTorch models and onnxruntime as the oracle."""

from __future__ import annotations

import os

os.environ.setdefault("KERAS_BACKEND", "torch")  # Keras 3 on PyTorch; never TensorFlow

import numpy as np
import pytest
import torch
from torch import nn as tnn


def randomize_batchnorm(module: tnn.Module, seed: int = 0) -> tnn.Module:
    """Give every batch norm non-trivial statistics and affine parameters, in eval mode."""
    g = torch.Generator().manual_seed(seed)
    for m in module.modules():
        if isinstance(m, tnn.BatchNorm2d):
            with torch.no_grad():
                m.running_mean.copy_(torch.rand(m.num_features, generator=g) - 0.5)
                m.running_var.copy_(torch.rand(m.num_features, generator=g) + 0.5)
                m.weight.copy_(torch.rand(m.num_features, generator=g) + 0.5)
                m.bias.copy_(torch.rand(m.num_features, generator=g) - 0.5)
    return module.eval()


class BasicBlock(tnn.Module):
    """ResNet's basic block: two 3x3 convolutions with batch norm and a residual addition."""

    def __init__(self, cin: int, cout: int, stride: int) -> None:
        super().__init__()
        self.conv1 = tnn.Conv2d(cin, cout, 3, stride, 1, bias=False)
        self.bn1 = tnn.BatchNorm2d(cout)
        self.conv2 = tnn.Conv2d(cout, cout, 3, 1, 1, bias=False)
        self.bn2 = tnn.BatchNorm2d(cout)
        self.short = None
        if stride != 1 or cin != cout:
            self.short = tnn.Sequential(
                tnn.Conv2d(cin, cout, 1, stride, bias=False), tnn.BatchNorm2d(cout)
            )

    def forward(self, x):
        y = torch.relu(self.bn1(self.conv1(x)))
        y = self.bn2(self.conv2(y))
        return torch.relu(y + (x if self.short is None else self.short(x)))


class ResNetCNN(tnn.Module):
    """A small ResNet: stem, two basic blocks (one strided), global pooling, softmax."""

    def __init__(self, channels: int = 1, classes: int = 10) -> None:
        super().__init__()
        self.stem = tnn.Sequential(
            tnn.Conv2d(channels, 8, 3, 1, 1, bias=False), tnn.BatchNorm2d(8), tnn.ReLU()
        )
        self.layer1 = BasicBlock(8, 8, 1)
        self.layer2 = BasicBlock(8, 16, 2)
        self.pool = tnn.AdaptiveAvgPool2d(1)
        self.fc = tnn.Linear(16, classes)

    def forward(self, x):
        x = self.layer2(self.layer1(self.stem(x)))
        return torch.softmax(self.fc(torch.flatten(self.pool(x), 1)), dim=1)


class InvertedResidual(tnn.Module):
    """MobileNetV2's block: 1x1 expansion, 3x3 depthwise, 1x1 projection, ReLU6, residual."""

    def __init__(self, cin: int, cout: int, stride: int, expand: int = 4) -> None:
        super().__init__()
        hidden = cin * expand
        self.use_res = stride == 1 and cin == cout
        self.block = tnn.Sequential(
            tnn.Conv2d(cin, hidden, 1, bias=False),
            tnn.BatchNorm2d(hidden),
            tnn.ReLU6(),
            tnn.Conv2d(hidden, hidden, 3, stride, 1, groups=hidden, bias=False),
            tnn.BatchNorm2d(hidden),
            tnn.ReLU6(),
            tnn.Conv2d(hidden, cout, 1, bias=False),
            tnn.BatchNorm2d(cout),
        )

    def forward(self, x):
        y = self.block(x)
        return x + y if self.use_res else y


class MobileNetV2ish(tnn.Module):
    """A stack of inverted residual blocks with depthwise convolutions and ReLU6."""

    def __init__(self, channels: int = 3, classes: int = 5) -> None:
        super().__init__()
        self.stem = tnn.Sequential(
            tnn.Conv2d(channels, 8, 3, 2, 1, bias=False), tnn.BatchNorm2d(8), tnn.ReLU6()
        )
        self.blocks = tnn.Sequential(
            InvertedResidual(8, 8, 1), InvertedResidual(8, 12, 2), InvertedResidual(12, 12, 1)
        )
        self.head = tnn.Sequential(tnn.Conv2d(12, 24, 1), tnn.Hardswish())
        self.fc = tnn.Linear(24, classes)

    def forward(self, x):
        x = self.head(self.blocks(self.stem(x)))
        return torch.softmax(self.fc(x.mean(dim=(2, 3))), dim=1)


class MLP(tnn.Module):
    """Dense layers with ReLU, tanh and leaky ReLU, softmax output."""

    def __init__(self, n_in: int = 10, classes: int = 4) -> None:
        super().__init__()
        self.net = tnn.Sequential(
            tnn.Linear(n_in, 32),
            tnn.ReLU(),
            tnn.Linear(32, 16),
            tnn.Tanh(),
            tnn.Linear(16, 16),
            tnn.LeakyReLU(0.1),
            tnn.Dropout(0.5),
            tnn.Linear(16, classes),
        )

    def forward(self, x):
        return torch.softmax(self.net(x), dim=1)


#: name -> (constructor, per-sample input shape)
TORCH_MODELS = {
    "resnet": (lambda: ResNetCNN(1, 10), (1, 12, 12)),
    "mobilenetv2": (lambda: MobileNetV2ish(3, 5), (3, 16, 16)),
    "mlp": (lambda: MLP(10, 4), (10,)),
}


@pytest.fixture(params=sorted(TORCH_MODELS), ids=sorted(TORCH_MODELS))
def torch_model(request):
    """(name, eval-mode module with random batch-norm statistics, per-sample input shape)."""
    torch.manual_seed(0)
    make, shape = TORCH_MODELS[request.param]
    return request.param, randomize_batchnorm(make()), shape


def ort_run(model_bytes: bytes, X: np.ndarray) -> np.ndarray:
    """onnxruntime's output of the model's only output, on the CPU, one thread."""
    import onnxruntime as ort

    opts = ort.SessionOptions()
    opts.intra_op_num_threads = 1
    sess = ort.InferenceSession(model_bytes, opts, providers=["CPUExecutionProvider"])
    (out,) = sess.run(None, {sess.get_inputs()[0].name: X.astype(np.float32)})
    return out


def one_node_model(
    op, attrs=None, inits=None, shape=(4,), inputs=None, nodes=(), opset=17, outputs=None
) -> bytes:
    """The bytes of a model of one ``op`` node reading the input ``x`` (of per-sample
    ``shape``, batch axis dynamic) and the constants ``inits``, after ``nodes``, at ``opset``."""
    from onnx import TensorProto, helper, numpy_helper

    inits = inits or {}
    node = helper.make_node(
        op, inputs or ["x", *inits], outputs or ["y"], name=f"the_{op.lower()}", **(attrs or {})
    )
    graph = helper.make_graph(
        [*nodes, node],
        f"{op}_alone",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["n", *shape])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)],
        [numpy_helper.from_array(np.asarray(v), k) for k, v in inits.items()],
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)])
    model.ir_version = 8
    return model.SerializeToString()


def input_gradient(net, feeds: dict, name: str, seed: np.ndarray, backend) -> np.ndarray:
    """The backward pass of ``seed`` to the input ``name`` of a network of several inputs:
    per row, the others fixed to that row's values (``net.with_inputs``)."""
    from xai_core.nn import Record

    rows = []
    for i in range(len(seed)):
        single = net.with_inputs(**{k: v[i] for k, v in feeds.items() if k != name})
        record = Record()
        single.forward(feeds[name][i : i + 1], backend, record=record)
        gx, _ = single.vjp(seed[i : i + 1], backend, record, param_grads=False)
        rows.append(gx[0])
    return np.stack(rows)
