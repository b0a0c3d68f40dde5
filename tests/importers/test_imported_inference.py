"""Imported CNNs' inference (the cpu backend's channel-major kernels) against onnxruntime and im2col."""

from __future__ import annotations

import numpy as np
import pytest
import torch

import xai_core as xai
from xai_core.backends.base import Backend
from xai_core.backends.cpu import CPUBackend
from xai_core.importers.torch_import import export_onnx

from .conftest import TORCH_MODELS, ort_run, randomize_batchnorm


class Im2colCPU(CPUBackend):
    """The cpu's numerics with every convolution on the im2col path."""

    name = "cpu-im2col"
    conv2d, conv2d_vjp = Backend.conv2d, Backend.conv2d_vjp


@pytest.mark.parametrize("name", ["mobilenetv2", "resnet"])
def test_inference_equals_onnxruntime_im2col_and_the_recorded_pass(name):
    """predict equals onnxruntime (<= 1e-5), the im2col path and the recorded forward; counters equal."""
    torch.manual_seed(0)
    make, shape = TORCH_MODELS[name]
    data = export_onnx(randomize_batchnorm(make()), torch.zeros(2, *shape))
    net = xai.from_onnx(data)
    X = np.random.default_rng(5).standard_normal((100, *shape)).astype(np.float32)
    fast, slow = CPUBackend(), Im2colCPU()
    got = net.predict(X, fast)
    assert np.abs(got - ort_run(data, X)).max() <= 1e-5
    np.testing.assert_allclose(got, net.predict(X, slow), rtol=0, atol=1e-6)
    assert fast.counters == slow.counters
    recorded = net.forward(X, CPUBackend(), record=xai.nn.Record()).reshape(len(X), -1)
    np.testing.assert_allclose(got, recorded, rtol=0, atol=1e-6)
