"""Small valid model files, and the mutations the fuzz tests make of them.

The fuzz tests (``test_fuzzed_*``) run :data:`FUZZ` in a child process: it builds one
valid file, caps the child's address space a fixed headroom above what it uses after its
imports (``resource.setrlimit(RLIMIT_AS)``), lowers xai-core's own memory limit below that
cap, and lets hypothesis mutate the file: truncation, bit flips and 32-bit fields
overwritten with sizes that break readers (0, 1, 2**31 - 1, 2**32 - 1 ...). Each mutant is
read and, if a model comes out, run on two rows. Anything but an
:class:`~xai_core.errors.XaiError` (a raw ``IndexError``, a ``MemoryError`` at the cap)
fails the run with hypothesis's smallest failing mutation; the parent's ``timeout`` bounds
a hang. Examples are few and derandomised, so CI replays the same ones in seconds.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
FIXTURES = HERE.parent / "fixtures" / "tflite"

#: 32-bit values that break size fields: empty, one, the int32 and uint32 extremes, large.
SIZES = (0, 1, 2, 255, 2**16, 2**24, 2**31 - 1, 2**31, 2**32 - 1)


def assert_refused(read, path: Path, error: type[Exception], words: tuple[str, ...]) -> None:
    """``read(path)`` raises ``error`` with a message naming the file and holding ``words``."""
    import pytest

    with pytest.raises(error) as raised:
        read(path)
    text = str(raised.value)
    assert path.name in text, text
    for w in words:
        assert w in text, (w, text)


def mutations(n_bytes: int):
    """A hypothesis strategy of 1-4 changes to a file of ``n_bytes`` bytes."""
    from hypothesis import strategies as st

    pos = st.integers(0, max(n_bytes - 1, 0))
    change = st.one_of(
        st.tuples(st.just("truncate"), pos),
        st.tuples(st.just("flip"), pos, st.integers(0, 7)),
        st.tuples(st.just("byte"), pos, st.integers(0, 255)),
        st.tuples(
            st.just("int32"),
            pos,
            st.one_of(st.sampled_from(SIZES), st.integers(0, 2**32 - 1)),
        ),
    )
    return st.lists(change, min_size=1, max_size=4)


def mutate(base: bytes, changes: list[tuple]) -> bytes:
    """``base`` with ``changes`` applied in order."""
    data = bytearray(base)
    for kind, at, *arg in changes:
        at = min(at, max(len(data) - 1, 0))
        if kind == "truncate":
            del data[at:]
        elif not data:
            continue
        elif kind == "flip":
            data[at] ^= 1 << arg[0]
        elif kind == "byte":
            data[at] = arg[0]
        else:  # a little-endian 32-bit field, aligned as flatbuffers align them
            at &= ~3
            data[at : at + 4] = arg[0].to_bytes(4, "little")[: len(data) - at]
    return bytes(data)


def memory_cap(headroom: int) -> None:
    """Cap this process's address space ``headroom`` bytes above its present size."""
    import resource

    with open("/proc/self/status") as fh:
        size = next(int(line.split()[1]) * 1024 for line in fh if line.startswith("VmSize:"))
    resource.setrlimit(resource.RLIMIT_AS, (size + headroom, resource.RLIM_INFINITY))


#: The child's program: build a file, cap memory, mutate and read it.
FUZZ = """
import sys
import numpy as np
from hypothesis import given, settings
sys.path.insert(0, {here!r})
import xai_core as xai
from xai_core.errors import XaiError
from hostile_files import memory_cap, mutate, mutations, {make}

BASE = {make}()
xai.set_resource_limits(max_bytes={limit})
memory_cap({headroom})


@settings(max_examples={n}, deadline=None, derandomize=True, database=None)
@given(mutations(len(BASE)))
def fuzz(changes):
    try:
        model = xai.{reader}(mutate(BASE, changes))
        rows = np.random.default_rng(0).uniform(0, 1, (2, *model.input_shape))
        assert model.predict(rows.astype(np.float32)).shape[0] == 2
    except XaiError:
        pass


fuzz()
print("fuzzed", {n}, "mutants of", len(BASE), "bytes")
"""


def run_fuzz(make: str, reader: str, n: int, *, headroom: int = 768 * 2**20) -> str:
    """Fuzz ``xai.<reader>`` on mutants of ``hostile_files.<make>()`` in a child; its stdout.

    The child's xai-core memory limit is a quarter of the address-space headroom, so a
    declared size the library accepts always fits under the cap.
    """
    code = FUZZ.format(
        here=str(HERE), make=make, reader=reader, n=n, headroom=headroom, limit=headroom // 4
    )
    env = {**os.environ, "OPENBLAS_NUM_THREADS": "1", "OMP_NUM_THREADS": "1"}
    env.pop("CI", None)  # the settings above are the whole of the child's profile
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=600, env=env
    )
    assert out.returncode == 0, out.stderr[-6000:]
    return out.stdout


# -- small valid files ------------------------------------------------------------------------


def small_onnx() -> bytes:
    """A 1x4x4 CNN as ONNX: Conv, Relu, MaxPool, Add of a constant, Reshape, Gemm, Softmax."""
    from onnx import TensorProto, helper, numpy_helper

    rng = np.random.default_rng(0)

    def const(name, value):
        return numpy_helper.from_array(np.asarray(value), name)

    nodes = [
        helper.make_node(
            "Conv", ["x", "K", "B"], ["h1"], name="conv", kernel_shape=[3, 3], pads=[1, 1, 1, 1]
        ),
        helper.make_node("Relu", ["h1"], ["h2"], name="relu"),
        helper.make_node(
            "MaxPool", ["h2"], ["h3"], name="pool", kernel_shape=[2, 2], strides=[2, 2]
        ),
        helper.make_node("Add", ["h3", "c"], ["h4"], name="add"),
        helper.make_node("Reshape", ["h4", "shape"], ["h5"], name="flatten"),
        helper.make_node("Gemm", ["h5", "G"], ["h6"], name="fc", transB=1),
        helper.make_node("Softmax", ["h6"], ["y"], name="softmax", axis=1),
    ]
    inits = [
        const("K", rng.standard_normal((4, 1, 3, 3)).astype(np.float32)),
        const("B", rng.standard_normal(4).astype(np.float32)),
        const("G", rng.standard_normal((3, 16)).astype(np.float32)),
        const("c", np.array([0.5], np.float32)),
        const("shape", np.array([0, -1], np.int64)),
    ]
    graph = helper.make_graph(
        nodes,
        "small",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["n", 1, 4, 4])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, ["n", 3])],
        inits,
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])
    model.ir_version = 8
    return model.SerializeToString()


def chain(n: int):
    """An ONNX model of ``n`` nodes alternating Relu and Add, each Add reading one constant."""
    from onnx import TensorProto, helper, numpy_helper

    nodes, prev = [], "x"
    for i in range(n):
        out = "y" if i == n - 1 else f"t{i}"
        if i % 2:
            nodes.append(helper.make_node("Add", [prev, "c"], [out], name=f"add{i}"))
        else:
            nodes.append(helper.make_node("Relu", [prev], [out], name=f"relu{i}"))
        prev = out
    graph = helper.make_graph(
        nodes,
        "chain",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["n", 4])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)],
        [numpy_helper.from_array(np.full(4, 0.5, np.float32), "c")],
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    return model


def small_tflite() -> bytes:
    """A small int8 CNN written by xai-core: ``xai.to_tflite(xai.quantize(net, X), path)``."""
    import tempfile

    import xai_core as xai
    from xai_core import nn

    net = nn.Sequential(
        [
            nn.Conv2D(4, 3, padding="same"),
            nn.ReLU(),
            nn.MaxPool2D(2),
            nn.Flatten(),
            nn.Dense(3),
            nn.Softmax(),
        ],
        input_shape=(1, 6, 6),
        seed=0,
    )
    X = np.random.default_rng(0).uniform(0, 1, (32, 1, 6, 6)).astype(np.float32)
    with tempfile.TemporaryDirectory() as tmp:
        path = xai.to_tflite(xai.quantize(net, X, progress=False), Path(tmp) / "small.tflite")
        return path.read_bytes()


def converter_tflite() -> bytes:
    """TensorFlow's converter's int8 CNN (``tests/fixtures/tflite/cnn_int8.tflite``)."""
    return (FIXTURES / "cnn_int8.tflite").read_bytes()
