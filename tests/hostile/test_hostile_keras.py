"""Hostile Keras files (.keras, .h5, TF.js): each loads to the right network or is one clear error.

``CASES`` is one row per hostile file: a function writing it under ``tmp`` (and returning
the path to give ``from_keras``), and what must come back: ``None`` for a network that
predicts :data:`model_files.WANT`, else the error class and words its message must hold
(the file's name among them). Nothing may be read from outside the file, and no case may
hold more than a few MiB of Python memory (large declared sizes are refused before
anything is allocated). ``test_fuzz_*`` mutate the valid files at random (truncation, bit
flips, size fields) in a subprocess with a memory cap and a time limit.
"""

from __future__ import annotations

import json
import os
import sys
import tracemalloc
from collections.abc import Callable
from pathlib import Path

import h5py
import numpy as np
import pytest

import xai_core as xai
from xai_core.errors import CapabilityError, ModelFormatError, ResourceError, ValidationError

sys.path.insert(0, str(Path(__file__).resolve().parent))  # the file builders
import model_files as mf  # noqa: E402
from model_files import DELETE, config, edit  # noqa: E402

Expect = tuple | None
GiB = 2**30


def _other_h5(tmp: Path) -> Path:
    """A second file whose values a link would read: they must never arrive."""
    with h5py.File(tmp / "other.h5", "w") as f:
        f["x"] = np.full((4, 3), 99.0, np.float32)
    return tmp / "other.h5"


def _virtual(f: h5py.File, name: str, tmp: Path) -> None:
    layout = h5py.VirtualLayout((4, 3), "f4")
    layout[:] = h5py.VirtualSource(str(_other_h5(tmp)), "x", (4, 3))
    f.create_virtual_dataset(name, layout)


def h5_kernel(tmp: Path, make: Callable[[h5py.Group, str, Path], None]) -> Path:
    """A legacy .h5 whose kernel ``dense/kernel:0`` is made by ``make(group, name, tmp)``."""
    return mf.write_h5(
        tmp, kernel=None, extra=lambda f: make(f["model_weights/dense"], "dense/kernel:0", tmp)
    )


def keras_kernel(tmp: Path, make: Callable[[h5py.Group, str, Path], None]) -> Path:
    """A .keras whose kernel ``layers/dense/vars/0`` is made by ``make(group, name, tmp)``."""
    weights = mf.keras_weights(kernel=None, extra=lambda f: make(f["layers/dense/vars"], "0", tmp))
    return mf.write_keras(tmp, weights=weights)


def _external_link(g, name, tmp):
    g[name] = h5py.ExternalLink(str(_other_h5(tmp)), "/x")


def _soft_link(g, name, tmp):
    g["real"] = mf.KERNEL
    g[name] = h5py.SoftLink(g["real"].name)


def _external_storage(g, name, tmp):
    (tmp / "raw.bin").write_bytes(np.full((4, 3), 99.0, "<f4").tobytes())
    g.create_dataset(name, (4, 3), "<f4", external=[(str(tmp / "raw.bin"), 0, 48)])


def _lzf(g, name, tmp):
    g.create_dataset(name, data=mf.KERNEL, compression="lzf")


def _unwritten_chunks(g, name, tmp):
    g.create_dataset(name, (4, 3), "f4", chunks=(2, 3), compression="gzip")


def _raw(path: Path, data: bytes) -> Path:
    path.write_bytes(data)
    return path


def _sparse(path: Path, size: int) -> Path:
    with open(path, "ab") as f:
        f.truncate(size)
    return path


def _fifo(path: Path) -> Path:
    path.unlink(missing_ok=True)
    os.mkfifo(path)
    return path


def _deep(n: int) -> str:
    return "[" * n + "]" * n


def _units(n):
    return edit(config(), "config.layers.2.config.units", n)


def _tfjs_spec(key: str, value) -> dict:
    return edit(mf.tfjs_doc(), f"weightsManifest.0.weights.0.{key}", value)


def _tfjs_quant(quant: dict) -> dict:
    return _tfjs_spec("quantization", quant)


def _with_labels(tmp: Path, text: bytes) -> Path:
    path = mf.write_h5(tmp)
    (tmp / "labels.txt").write_bytes(text)
    return path


KERAS = mf.write_keras
ZIP = mf.keras_members

#: name -> (write the file under tmp and return its path, None or (error class, *words))
# fmt: off
CASES: dict[str, tuple[Callable[[Path], Path], Expect]] = {
    # -- .keras: the archive
    "keras-valid": (lambda t: KERAS(t), None),
    "keras-valid-functional": (lambda t: KERAS(t, config(functional=True)), None),
    "keras-not-a-zip": (lambda t: _raw(t / "m.keras", b"hello"), (ModelFormatError, "m.keras", "not a .keras archive")),
    "keras-truncated": (lambda t: _raw(t / "m.keras", KERAS(t).read_bytes()[:300]), (ModelFormatError, "m.keras", "not a .keras archive")),
    "keras-bad-crc": (lambda t: _raw(t / "m.keras", mf.zip_flip_in(KERAS(t).read_bytes(), "config.json")), (ModelFormatError, "m.keras", "'config.json'", "CRC")),
    "keras-encrypted": (lambda t: _raw(t / "m.keras", mf.zip_set_encrypted(KERAS(t).read_bytes())), (ModelFormatError, "m.keras", "encrypted")),
    "keras-metadata-declares-3GiB": (lambda t: _raw(t / "m.keras", mf.zip_set_size(KERAS(t).read_bytes(), "metadata.json", 3 * GiB)), (ModelFormatError, "m.keras", "'metadata.json'", "3,221,225,472")),
    "keras-weights-declare-3GiB": (lambda t: _raw(t / "m.keras", mf.zip_set_size(KERAS(t).read_bytes(), "model.weights.h5", 3 * GiB)), (ModelFormatError, "m.keras", "model.weights.h5", "3,221,225,472")),
    "keras-member-twice": (lambda t: (KERAS(t), _twice(t))[1], (ModelFormatError, "m.keras", "'config.json' twice")),
    "keras-no-config": (lambda t: mf.write_zip(t / "m.keras", {k: v for k, v in ZIP().items() if k != "config.json"}), (ModelFormatError, "m.keras", "no config.json")),
    "keras-fifo": (lambda t: _fifo(t / "m.keras"), (ValidationError, "m.keras", "not a file")),
    # -- .keras: config.json and metadata.json
    "keras-config-not-json": (lambda t: KERAS(t, "{'class_name': 1"), (ModelFormatError, "m.keras/config.json", "not valid JSON")),
    "keras-config-latin1": (lambda t: KERAS(t, '{"name": "café"}'.encode("latin-1")), (ModelFormatError, "m.keras/config.json", "not UTF-8", "0xe9")),
    "keras-config-100k-deep": (lambda t: KERAS(t, _deep(100000)), (ModelFormatError, "m.keras/config.json", "100,000 deep")),
    "keras-config-duplicate-key": (lambda t: KERAS(t, '{"class_name": "Sequential", "class_name": "Lambda", "config": {}}'), (ModelFormatError, "m.keras/config.json", "'class_name' twice")),
    "keras-config-a-list": (lambda t: KERAS(t, []), (ModelFormatError, "m.keras/config.json", "expected an object", "a list")),
    "keras-config-no-layers": (lambda t: KERAS(t, edit(config(), "config.layers", DELETE)), (ModelFormatError, "config: missing the key 'layers'")),
    "keras-layers-a-number": (lambda t: KERAS(t, edit(config(), "config.layers", 5)), (ModelFormatError, "config.layers: expected a list", "5 (an integer)")),
    "keras-layers-empty": (lambda t: KERAS(t, edit(config(), "config.layers", [])), (ModelFormatError, "config.layers: expected a list of at least 1")),
    "keras-layer-a-string": (lambda t: KERAS(t, edit(config(), "config.layers.1", "flat")), (ModelFormatError, "config.layers[1]: expected an object")),
    "keras-layer-no-name": (lambda t: KERAS(t, edit(config(), "config.layers.2.config.name", DELETE)), (ModelFormatError, "config.layers[2].config: missing the key 'name'")),
    "keras-class-name-a-number": (lambda t: KERAS(t, edit(config(), "config.layers.2.class_name", 7)), (ModelFormatError, "config.layers[2].class_name: expected a string")),
    "keras-units-abc": (lambda t: KERAS(t, _units("abc")), (ModelFormatError, "config.layers[2].config.units", "expected an integer in 1..2147483648", "'abc'")),
    "keras-units-4.5": (lambda t: KERAS(t, _units(4.5)), (ModelFormatError, "config.layers[2].config.units", "4.5")),
    "keras-units-true": (lambda t: KERAS(t, _units(True)), (ModelFormatError, "config.layers[2].config.units", "true")),
    "keras-units-10**9": (lambda t: KERAS(t, _units(10 ** 9)), (ModelFormatError, "m.keras", "units=1000000000", "(4, 3)")),
    "keras-units-10**400": (lambda t: KERAS(t, _units(10 ** 400)), (ModelFormatError, "m.keras", "units: expected an integer in 1..2147483648", "401 digits")),
    "keras-units-5000-digits": (lambda t: KERAS(t, '{"units": ' + "9" * 5000 + "}"), (ModelFormatError, "m.keras/config.json", "not valid JSON", "4300")),
    "keras-use-bias-a-string": (lambda t: KERAS(t, edit(config(), "config.layers.2.config.use_bias", "no")), (ModelFormatError, "use_bias: expected true or false")),
    "keras-batch-shape-10**12": (lambda t: KERAS(t, edit(config(), "config.layers.0.config.batch_shape", [None, 10 ** 12])), (ModelFormatError, "m.keras", "'image'", "elements allowed")),
    "keras-batch-shape-4.5": (lambda t: KERAS(t, edit(config(), "config.layers.0.config.batch_shape", [None, 4.5, 1])), (ModelFormatError, "batch_shape[1]", "4.5")),
    "keras-batch-shape-a-string": (lambda t: KERAS(t, edit(config(), "config.layers.0.config.batch_shape", "big")), (ModelFormatError, "batch_shape: expected", "'big'")),
    "keras-kernel-size-big": (lambda t: KERAS(t, edit(config(), "config.layers.2", {"class_name": "Conv2D", "config": {"name": "c", "filters": 2, "kernel_size": "big"}})), (ModelFormatError, "config.layers[2].config.kernel_size", "'big'")),
    "keras-kernel-size-three": (lambda t: KERAS(t, edit(config(), "config.layers.2", {"class_name": "Conv2D", "config": {"name": "c", "filters": 2, "kernel_size": [3, 3, 3]}})), (ModelFormatError, "kernel_size: expected", "a list of 3 items")),
    "keras-layer-name-twice": (lambda t: KERAS(t, edit(config(), "config.layers.1.config.name", "dense")), (ModelFormatError, "layer name 'dense' appears twice")),
    "keras-functional-no-outputs": (lambda t: KERAS(t, edit(config(True), "config.output_layers", DELETE)), (ModelFormatError, "missing the key 'output_layers'")),
    "keras-functional-history-abc": (lambda t: KERAS(t, edit(config(True), "config.layers.2.inbound_nodes.0.args.0.config.keras_history.1", "abc")), (ModelFormatError, "keras_history[1]: expected an integer")),
    "keras-functional-endpoint-short": (lambda t: KERAS(t, edit(config(True), "config.input_layers", [["image", 0]])), (ModelFormatError, "input_layers[0]: expected a list of at least 3")),
    "keras-lambda-layer": (lambda t: KERAS(t, edit(config(), "config.layers.1.class_name", "Lambda")), (CapabilityError, "m.keras", "'Lambda'", "not supported")),
    "keras-top-level-lambda": (lambda t: KERAS(t, edit(config(), "class_name", "Lambda")), (CapabilityError, "m.keras", "'Lambda' model")),
    "keras-activation-unknown": (lambda t: KERAS(t, edit(config(), "config.layers.2.config.activation", "log_softmax")), (CapabilityError, "activation 'log_softmax'")),
    "keras-activation-serialised": (lambda t: KERAS(t, edit(config(), "config.layers.2.config.activation", {"module": "keras.activations", "class_name": "function", "config": "linear"})), None),
    "keras-metadata-not-an-object": (lambda t: KERAS(t, metadata="[1, 2]"), (ModelFormatError, "m.keras/metadata.json", "expected an object")),
    "keras-metadata-names-ignored": (lambda t: KERAS(t, metadata={"class_names": ["a", "b", "c"], "source": "elsewhere"}), None),
    # -- .keras: model.weights.h5
    "keras-weights-not-hdf5": (lambda t: KERAS(t, weights=b"not hdf5 at all"), (ModelFormatError, "m.keras/model.weights.h5", "HDF5")),
    "keras-weights-external-link": (lambda t: keras_kernel(t, _external_link), (ModelFormatError, "m.keras/model.weights.h5", "'layers/dense/vars/0'", "external link", "other.h5")),
    "keras-weights-soft-link": (lambda t: keras_kernel(t, _soft_link), (ModelFormatError, "m.keras/model.weights.h5", "soft link")),
    "keras-weights-virtual": (lambda t: keras_kernel(t, lambda g, n, tmp: _virtual(g, n, tmp)), (ModelFormatError, "m.keras/model.weights.h5", "virtual dataset")),
    "keras-weights-external-storage": (lambda t: keras_kernel(t, _external_storage), (ModelFormatError, "m.keras/model.weights.h5", "external file", "raw.bin")),
    "keras-weights-unallocated-2**31": (lambda t: keras_kernel(t, lambda g, n, tmp: g.create_dataset(n, (2 ** 31,), "f8")), (ModelFormatError, "m.keras/model.weights.h5", "(2147483648,)", "stores 0 bytes")),
    "keras-weights-wrong-shape": (lambda t: KERAS(t, weights=mf.keras_weights(kernel=np.zeros((5, 3), np.float32))), (ModelFormatError, "m.keras", "'dense'", "(5, 3)", "(4, 3)")),
    "keras-weights-missing-bias": (lambda t: KERAS(t, weights=mf.keras_weights(bias=None)), (ModelFormatError, "m.keras", "'dense'", "stores variables")),
    "keras-weights-nan": (lambda t: KERAS(t, weights=mf.keras_weights(kernel=np.full((4, 3), np.nan, np.float32))), (ModelFormatError, "m.keras", "'dense/kernel'", "NaN")),
    "keras-weights-strings": (lambda t: KERAS(t, weights=mf.keras_weights(kernel=np.array([b"a"] * 12).reshape(4, 3))), (ModelFormatError, "m.keras", "not a number")),
    # -- legacy .h5
    "h5-valid": (lambda t: mf.write_h5(t), None),
    "h5-not-hdf5": (lambda t: _raw(t / "m.h5", b"\x89HDF\r\n\x1a\n garbage"), (ModelFormatError, "m.h5", "not an HDF5 file")),
    "h5-truncated": (lambda t: _raw(t / "m.h5", mf.write_h5(t).read_bytes()[:2000]), (ModelFormatError, "m.h5")),
    "h5-external-link": (lambda t: h5_kernel(t, _external_link), (ModelFormatError, "m.h5", "'model_weights/dense/dense/kernel:0'", "external link", "other.h5")),
    "h5-soft-link": (lambda t: h5_kernel(t, _soft_link), (ModelFormatError, "m.h5", "soft link")),
    "h5-virtual-dataset": (lambda t: h5_kernel(t, lambda g, n, tmp: _virtual(g, n, tmp)), (ModelFormatError, "m.h5", "virtual dataset")),
    "h5-external-storage": (lambda t: h5_kernel(t, _external_storage), (ModelFormatError, "m.h5", "external file", "raw.bin")),
    "h5-plugin-filter-lzf": (lambda t: h5_kernel(t, _lzf), (ModelFormatError, "m.h5", "filter 32000", "plugin")),
    "h5-unwritten-gzip-chunks": (lambda t: h5_kernel(t, _unwritten_chunks), (ModelFormatError, "m.h5", "stores 0 bytes", "compressed")),
    "h5-unallocated-2**31-float64": (lambda t: mf.write_h5(t, extra=lambda f: f.create_dataset("model_weights/dense/huge", (2 ** 31,), "f8")), (ModelFormatError, "m.h5", "'model_weights/dense/huge'", "17,179,869,184 bytes", "stores 0 bytes")),
    "h5-no-model-config": (lambda t: _drop_config(mf.write_h5(t)), (ModelFormatError, "m.h5", "no model_config")),
    "h5-config-not-json": (lambda t: mf.write_h5(t, "{not json"), (ModelFormatError, "m.h5 model_config", "not valid JSON")),
    "h5-config-latin1": (lambda t: mf.write_h5(t, np.bytes_('{"a": "café"}'.encode("latin-1"))), (ModelFormatError, "m.h5 model_config", "not UTF-8")),
    "h5-config-30k-deep": (lambda t: mf.write_h5(t, _deep(30000)), (ModelFormatError, "m.h5 model_config", "30,000 deep")),
    "h5-config-a-number": (lambda t: mf.write_h5(t, "5"), (ModelFormatError, "m.h5 model_config", "expected an object")),
    "h5-config-missing-name": (lambda t: mf.write_h5(t, edit(config(), "config.layers.2.config.name", DELETE)), (ModelFormatError, "m.h5 model_config", "config.layers[2].config: missing the key 'name'")),
    "h5-units-10**9": (lambda t: mf.write_h5(t, _units(10 ** 9)), (ModelFormatError, "m.h5", "units=1000000000", "(4, 3)")),
    "h5-weight-listed-missing": (lambda t: mf.write_h5(t, names=[b"dense/kernel:0", b"dense/absent:0"]), (ModelFormatError, "m.h5", "'dense/absent:0'", "missing")),
    "h5-weight-listed-twice": (lambda t: mf.write_h5(t, names=[b"dense/kernel:0", b"dense/kernel:0"]), (ModelFormatError, "m.h5", "listed twice")),
    "h5-weight-name-a-number": (lambda t: mf.write_h5(t, names=np.array([1.5, 2.5])), (ModelFormatError, "m.h5", "not a string")),
    "h5-weight-infinite": (lambda t: mf.write_h5(t, kernel=np.full((4, 3), np.inf, np.float32)), (ModelFormatError, "m.h5", "'dense/kernel:0'", "infinite")),
    "h5-labels-index-twice": (lambda t: _with_labels(t, b"0 cat\n0 dog\n1 bird\n"), (ModelFormatError, "labels.txt", "index 0 is given twice")),
    "h5-labels-latin1": (lambda t: _with_labels(t, "0 café\n1 a\n2 b\n".encode("latin-1")), (ModelFormatError, "labels.txt", "not UTF-8")),
    "h5-labels-a-fifo-is-not-read": (lambda t: (_fifo(t / "labels.txt"), mf.write_h5(t))[1], None),
    # -- TF.js
    "tfjs-valid": (lambda t: mf.write_tfjs(t), None),
    "tfjs-valid-folder": (lambda t: mf.write_tfjs(t).parent, None),
    "tfjs-model-json-3GiB-sparse": (lambda t: _sparse(mf.write_tfjs(t), 3 * GiB), (ModelFormatError, "model.json", "3 GiB", "at most 64 MiB")),
    "tfjs-model-json-latin1": (lambda t: mf.write_tfjs(t, '{"a": "café"}'.encode("latin-1")), (ModelFormatError, "model.json", "not UTF-8")),
    "tfjs-model-json-deep": (lambda t: mf.write_tfjs(t, _deep(100000).encode()), (ModelFormatError, "model.json", "100,000 deep")),
    "tfjs-model-json-a-list": (lambda t: mf.write_tfjs(t, b"[]"), (ModelFormatError, "model.json", "expected an object")),
    "tfjs-no-topology": (lambda t: mf.write_tfjs(t, b"{}"), (ModelFormatError, "model.json", "no modelTopology")),
    "tfjs-graph-model": (lambda t: mf.write_tfjs(t, edit(mf.tfjs_doc(), "format", "graph-model")), (CapabilityError, "model.json", "graph-model")),
    "tfjs-manifest-a-dict": (lambda t: mf.write_tfjs(t, edit(mf.tfjs_doc(), "weightsManifest", {"paths": []})), (ModelFormatError, "model.json", "weightsManifest: expected a list")),
    "tfjs-paths-a-string": (lambda t: mf.write_tfjs(t, edit(mf.tfjs_doc(), "weightsManifest.0.paths", "group1-shard1of1.bin")), (ModelFormatError, "weightsManifest[0].paths: expected a list")),
    "tfjs-shape-4.5": (lambda t: mf.write_tfjs(t, _tfjs_spec("shape", [4.5, 3])), (ModelFormatError, "model.json", "weightsManifest[0].weights[0].shape[0]", "4.5")),
    "tfjs-shape-negative": (lambda t: mf.write_tfjs(t, _tfjs_spec("shape", [-4, -3])), (ModelFormatError, "shape[0]: expected an integer >= 0")),
    "tfjs-shape-huge": (lambda t: mf.write_tfjs(t, _tfjs_spec("shape", [10 ** 6, 10 ** 6])), (ModelFormatError, "model.json", "'dense/kernel'", "elements allowed")),
    "tfjs-dtype-complex": (lambda t: mf.write_tfjs(t, _tfjs_spec("dtype", "complex64")), (ModelFormatError, "weights[0].dtype: expected one of")),
    "tfjs-name-missing": (lambda t: mf.write_tfjs(t, _tfjs_spec("name", DELETE)), (ModelFormatError, "weights[0]: missing the key 'name'")),
    "tfjs-weight-twice": (lambda t: mf.write_tfjs(t, edit(mf.tfjs_doc(), "weightsManifest.0.weights.1.name", "dense/kernel")), (ModelFormatError, "model.json", "weight 'dense/kernel' appears twice")),
    "tfjs-scale-abc": (lambda t: mf.write_tfjs(t, _tfjs_quant({"dtype": "uint8", "scale": "abc", "min": 0})), (ModelFormatError, "quantization.scale: expected a finite number", "'abc'")),
    "tfjs-scale-missing": (lambda t: mf.write_tfjs(t, _tfjs_quant({"dtype": "uint8", "min": 0})), (ModelFormatError, "model.json", "without a scale")),
    "tfjs-units-10**9": (lambda t: mf.write_tfjs(t, edit(mf.tfjs_doc(), "modelTopology.model_config.config.layers.2.config.units", 10 ** 9)), (ModelFormatError, "model.json", "units=1000000000")),
    "tfjs-topology-path-named": (lambda t: mf.write_tfjs(t, edit(mf.tfjs_doc(), "modelTopology.model_config.config.layers.2.config.units", "abc")), (ModelFormatError, "modelTopology.model_config.config.layers[2].config.units")),
    "tfjs-shard-6GiB-sparse": (lambda t: _sparse(mf.write_tfjs(t).parent / "group1-shard1of1.bin", 6 * GiB) and t / "tfjs", (ModelFormatError, "model.json", "declares 60 bytes", "6442450944")),
    "tfjs-shard-short": (lambda t: mf.write_tfjs(t, shard=mf.SHARD[:-8]), (ModelFormatError, "model.json", "needs bytes")),
    "tfjs-shard-outside": (lambda t: mf.write_tfjs(t, edit(mf.tfjs_doc(), "weightsManifest.0.paths.0", "../../etc/passwd")), (ModelFormatError, "not a file name beside it")),
    "tfjs-shard-link-outside": (lambda t: _link_shard_outside(t), (ModelFormatError, "model.json", "missing")),
    "tfjs-shard-a-fifo": (lambda t: (_fifo(mf.write_tfjs(t).parent / "group1-shard1of1.bin"), t / "tfjs")[1], (ModelFormatError, "model.json", "not a regular file")),
    "tfjs-shard-nan": (lambda t: mf.write_tfjs(t, shard=np.full(15, np.nan, "<f4").tobytes()), (ModelFormatError, "model.json", "NaN")),
    "tfjs-metadata-labels-numbers": (lambda t: mf.write_tfjs(t, metadata={"labels": [1, 2, 3]}), (ModelFormatError, "metadata.json", "labels[0]: expected a string")),
    "tfjs-metadata-latin1": (lambda t: mf.write_tfjs(t, metadata='{"labels": ["café"]}'.encode("latin-1")), (ModelFormatError, "metadata.json", "not UTF-8")),
}
# fmt: on


def _twice(tmp: Path) -> Path:
    """A .keras whose directory lists config.json twice (zipfile warns, then writes it)."""
    import zipfile

    with pytest.warns(UserWarning), zipfile.ZipFile(tmp / "m.keras", "a") as z:
        z.writestr("config.json", json.dumps(config()))
    return tmp / "m.keras"


def _drop_config(path: Path) -> Path:
    with h5py.File(path, "a") as f:
        del f.attrs["model_config"]
    return path


def _link_shard_outside(tmp: Path) -> Path:
    path = mf.write_tfjs(tmp)
    (tmp / "secret.bin").write_bytes(mf.SHARD)
    shard = path.parent / "group1-shard1of1.bin"
    shard.unlink()
    shard.symlink_to(tmp / "secret.bin")
    return path


@pytest.mark.parametrize("case", list(CASES), ids=list(CASES))
def test_hostile_keras(tmp_path: Path, case: str) -> None:
    """Each file imports to the network it holds, or raises one error naming it and the problem."""
    write, expect = CASES[case]
    path = write(tmp_path)
    tracemalloc.start()
    try:
        if expect is None:
            net = xai.from_keras(path)
            np.testing.assert_allclose(net.predict(mf.X), mf.WANT, atol=1e-6)
            assert net.output_names is None  # nothing named by a file's metadata
        else:
            error, *words = expect
            with pytest.raises(error) as info:
                xai.from_keras(path)
            assert isinstance(info.value, xai.XaiError)
            for word in words:
                assert word in str(info.value), (word, str(info.value))
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert peak < 64 * 2**20  # never a declared gigabyte


def test_nothing_is_read_from_a_linked_file(tmp_path: Path) -> None:
    """The values a link points at never reach a network, whatever the error says."""
    for make in (_external_link, _virtual, _external_storage):
        path = h5_kernel(tmp_path, make)
        with pytest.raises(ModelFormatError):
            xai.from_keras(path)


def test_declared_weights_over_the_memory_limit_are_refused(tmp_path: Path) -> None:
    """An allocated dataset within the file, but over a lowered memory limit, is a ResourceError."""
    path = mf.write_h5(
        tmp_path, extra=lambda f: f.create_dataset("model_weights/dense/big", data=np.zeros(2**18))
    )
    with xai.resource_limits(max_bytes=2**20), pytest.raises(ResourceError, match="m.h5"):
        xai.from_keras(path)
    np.testing.assert_allclose(xai.from_keras(path).predict(mf.X), mf.WANT, atol=1e-6)


# -- fuzzing ------------------------------------------------------------------------------------
FUZZ = Path(__file__).resolve().parent / "fuzz_readers.py"


def run_fuzz(kind: str, sample: Path, examples: int = 60) -> None:
    """Run the fuzzer on ``sample`` in a subprocess (memory cap, time limit); fail on its failure."""
    import subprocess

    env = {
        **os.environ,
        "OPENBLAS_NUM_THREADS": "1",
        "OMP_NUM_THREADS": "1",
        "MKL_NUM_THREADS": "1",
    }
    proc = subprocess.run(
        [sys.executable, str(FUZZ), kind, str(sample), str(examples)],
        capture_output=True,
        text=True,
        timeout=600,
        env=env,
        cwd=sample.parent,
    )
    assert proc.returncode == 0, proc.stdout[-4000:] + proc.stderr[-8000:]
    assert "examples:" in proc.stdout


@pytest.mark.parametrize("kind", ["keras", "h5", "tfjs"])
def test_fuzz_keras_readers(tmp_path: Path, kind: str) -> None:
    """Truncated, bit-flipped and size-patched files give our own errors or a working network."""
    sample = {"keras": mf.write_keras, "h5": mf.write_h5, "tfjs": mf.write_tfjs}[kind](tmp_path)
    run_fuzz(kind, sample)
