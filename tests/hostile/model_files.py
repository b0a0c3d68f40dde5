"""Small valid model files built without Keras or TensorFlow, and ways to spoil them.

One network throughout: a ``(2, 2, 1)`` image, flattened, into ``Dense(3)`` with a known
kernel and bias, so every valid file must predict :data:`WANT` on :data:`X`. The builders
write it as a Keras 3 ``.keras`` archive, a legacy ``.h5`` file, a TF.js folder and a
Teachable Machine export, each with a hook to change one thing (a configuration field, an
HDF5 object, a manifest entry, a zip member) so a hostile case is one line of a table.
"""

from __future__ import annotations

import copy
import io
import json
import struct
import zipfile
import zlib
from collections.abc import Callable
from pathlib import Path
from typing import Any

import h5py
import numpy as np

KERNEL = (np.arange(12, dtype=np.float32).reshape(4, 3) / 10 - 0.5).astype(np.float32)
BIAS = np.array([0.1, -0.2, 0.3], np.float32)
X = np.random.default_rng(0).uniform(-1, 1, (5, 2, 2, 1)).astype(np.float32)
WANT = X.reshape(5, 4) @ KERNEL + BIAS
LABELS = ["cat", "dog", "bird"]


def _layer(kind: str, name: str, config: dict, inbound: str | None) -> dict:
    layer = {"module": "keras.layers", "class_name": kind, "config": {"name": name, **config}}
    layer["name"] = name
    layer["inbound_nodes"] = (
        [
            {
                "args": [
                    {
                        "class_name": "__keras_tensor__",
                        "config": {
                            "shape": [None, 4],
                            "dtype": "float32",
                            "keras_history": [inbound, 0, 0],
                        },
                    }
                ],
                "kwargs": {},
            }
        ]
        if inbound
        else []
    )
    return layer


def config(functional: bool = False, **dense: Any) -> dict:
    """The Keras 3 configuration of the network (Sequential, or functional), ``dense`` merged."""
    dense_cfg = {"units": 3, "activation": "linear", "use_bias": True, **dense}
    layers = [
        _layer("InputLayer", "image", {"batch_shape": [None, 2, 2, 1], "dtype": "float32"}, None),
        _layer("Flatten", "flat", {"data_format": "channels_last"}, "image"),
        _layer("Dense", "dense", dense_cfg, "flat"),
    ]
    if not functional:
        for layer in layers:
            del layer["inbound_nodes"], layer["name"]
        return {"class_name": "Sequential", "config": {"name": "net", "layers": layers}}
    return {
        "class_name": "Functional",
        "config": {
            "name": "net",
            "layers": layers,
            "input_layers": [["image", 0, 0]],
            "output_layers": [["dense", 0, 0]],
        },
    }


def edit(doc: dict, path: str, value: Any) -> dict:
    """A copy of ``doc`` with the item at ``path`` (``"config.layers.2.config.units"``) set
    (or deleted, when ``value`` is :data:`DELETE`)."""
    doc = copy.deepcopy(doc)
    *head, last = path.split(".")
    node: Any = doc
    for key in head:
        node = node[int(key)] if isinstance(node, list) else node[key]
    key = int(last) if isinstance(node, list) else last
    if value is DELETE:
        del node[key]
    else:
        node[key] = value
    return doc


DELETE = object()


def h5_bytes(fill: Callable[[h5py.File], None]) -> bytes:
    """An HDF5 file built in memory by ``fill``."""
    buf = io.BytesIO()
    with h5py.File(buf, "w") as f:
        fill(f)
    return buf.getvalue()


def keras_weights(kernel: Any = KERNEL, bias: Any = BIAS, extra: Callable | None = None) -> bytes:
    """``model.weights.h5`` as Keras 3 writes it: ``layers/dense/vars/0`` and ``/1``."""

    def fill(f: h5py.File) -> None:
        f.create_group("vars").attrs["name"] = "net"
        group = f.create_group("layers/dense/vars")
        group.attrs["name"] = "dense"
        f.create_group("layers/flatten/vars").attrs["name"] = "flat"
        if kernel is not None:
            group["0"] = kernel
        if bias is not None:
            group["1"] = bias
        if extra is not None:
            extra(f)

    return h5_bytes(fill)


def write_zip(path: Path, members: dict[str, bytes | str], **options: Any) -> Path:
    with zipfile.ZipFile(path, "w", **options) as z:
        for name, data in members.items():
            z.writestr(name, data)
    return path


def keras_members(cfg: Any = None, weights: bytes | None = None, metadata: Any = None) -> dict:
    cfg = config() if cfg is None else cfg
    meta = (
        {"keras_version": "3.15.1", "date_saved": "2026-01-01@00:00:00"}
        if metadata is None
        else metadata
    )
    return {
        "metadata.json": meta if isinstance(meta, (str, bytes)) else json.dumps(meta),
        "config.json": cfg if isinstance(cfg, (str, bytes)) else json.dumps(cfg),
        "model.weights.h5": keras_weights() if weights is None else weights,
    }


def write_keras(
    tmp: Path, cfg: Any = None, weights: bytes | None = None, metadata: Any = None
) -> Path:
    """A ``.keras`` archive: ``config.json``, ``metadata.json``, ``model.weights.h5``."""
    return write_zip(tmp / "m.keras", keras_members(cfg, weights, metadata))


def write_h5(
    tmp: Path,
    cfg: Any = None,
    *,
    kernel: Any = KERNEL,
    names: list[bytes] | None = None,
    extra: Callable[[h5py.File], None] | None = None,
    name: str = "m.h5",
) -> Path:
    """A legacy ``.h5``: ``model_config`` and ``model_weights/dense/dense/{kernel,bias}:0``."""
    cfg = config() if cfg is None else cfg
    path = tmp / name
    with h5py.File(path, "w") as f:
        f.attrs["model_config"] = (
            cfg if isinstance(cfg, (str, bytes, np.bytes_)) else json.dumps(cfg)
        )
        f.attrs["keras_version"] = "2.15.0"
        f.attrs["backend"] = "tensorflow"
        weights = f.create_group("model_weights")
        weights.create_group("flat").attrs["weight_names"] = np.zeros(0)
        dense = weights.create_group("dense")
        dense.attrs["weight_names"] = (
            [b"dense/kernel:0", b"dense/bias:0"] if names is None else names
        )
        if kernel is not None:
            dense["dense/kernel:0"] = kernel
        dense["dense/bias:0"] = BIAS
        if extra is not None:
            extra(f)
    return path


def tfjs_doc(specs: list[dict] | None = None, topology: Any = None) -> dict:
    specs = specs or [
        {"name": "dense/kernel", "shape": [4, 3], "dtype": "float32"},
        {"name": "dense/bias", "shape": [3], "dtype": "float32"},
    ]
    return {
        "format": "layers-model",
        "generatedBy": "keras",
        "modelTopology": {"model_config": config()} if topology is None else topology,
        "weightsManifest": [{"paths": ["group1-shard1of1.bin"], "weights": specs}],
    }


SHARD = KERNEL.astype("<f4").tobytes() + BIAS.astype("<f4").tobytes()


def write_tfjs(tmp: Path, doc: Any = None, shard: bytes = SHARD, metadata: Any = None) -> Path:
    """A TF.js folder: ``model.json`` and one shard (and ``metadata.json`` when given)."""
    folder = tmp / "tfjs"
    folder.mkdir(exist_ok=True)
    doc = tfjs_doc() if doc is None else doc
    (folder / "model.json").write_bytes(doc if isinstance(doc, bytes) else json.dumps(doc).encode())
    (folder / "group1-shard1of1.bin").write_bytes(shard)
    if metadata is not None:
        data = metadata if isinstance(metadata, bytes) else json.dumps(metadata).encode()
        (folder / "metadata.json").write_bytes(data)
    return folder / "model.json"


def tm_members(metadata: Any = None, labels: Any = None) -> dict[str, bytes]:
    """A Teachable Machine TF.js export: model.json, its shard, metadata.json (and labels)."""
    meta = (
        {"labels": LABELS, "imageSize": 2, "tfjsVersion": "1.3.1"} if metadata is None else metadata
    )
    members = {
        "model.json": json.dumps(tfjs_doc(topology=config())).encode(),
        "group1-shard1of1.bin": SHARD,
        "metadata.json": meta if isinstance(meta, bytes) else json.dumps(meta).encode(),
    }
    if labels is not None:
        members["labels.txt"] = labels if isinstance(labels, bytes) else labels.encode()
    return members


def write_tm_zip(
    tmp: Path, members: dict[str, bytes] | None = None, folder: str = "my_model/"
) -> Path:
    """The export as Teachable Machine downloads it: a zip with the files in a folder."""
    members = tm_members() if members is None else members
    return write_zip(tmp / "export.zip", {f"{folder}{k}": v for k, v in members.items()})


# -- spoiling zips ----------------------------------------------------------------------
def zip_set_size(data: bytes, member: str, size: int) -> bytes:
    """The archive with ``member``'s declared inflated size set to ``size`` (both headers)."""
    out = bytearray(data)
    name = member.encode()
    for sig, size_at, name_len_at, name_at in (
        (b"PK\x01\x02", 24, 28, 46),
        (b"PK\x03\x04", 22, 26, 30),
    ):
        start = 0
        while (i := out.find(sig, start)) >= 0:
            n = struct.unpack_from("<H", out, i + name_len_at)[0]
            if bytes(out[i + name_at : i + name_at + n]) == name:
                struct.pack_into("<I", out, i + size_at, size)
            start = i + 4
    return bytes(out)


def zip_set_encrypted(data: bytes) -> bytes:
    """The archive with every member flagged encrypted (both headers)."""
    out = bytearray(data)
    for sig, flag_at in ((b"PK\x01\x02", 8), (b"PK\x03\x04", 6)):
        start = 0
        while (i := out.find(sig, start)) >= 0:
            out[i + flag_at] |= 0x01
            start = i + 4
    return bytes(out)


def zip_flip_in(data: bytes, member: str) -> bytes:
    """The archive with one byte of ``member``'s stored data changed (a bad CRC)."""
    out = bytearray(data)
    start = 0
    while (i := out.find(b"PK\x03\x04", start)) >= 0:
        n, extra = struct.unpack_from("<HH", out, i + 26)
        if bytes(out[i + 30 : i + 30 + n]) == member.encode():
            out[i + 30 + n + extra] ^= 0xFF
            return bytes(out)
        start = i + 4
    raise AssertionError(f"no member {member!r}")


# -- images -------------------------------------------------------------------------------
def png_header(width: int, height: int) -> bytes:
    """A PNG that declares ``width`` x ``height`` grey pixels and holds almost none."""

    def chunk(kind: bytes, body: bytes) -> bytes:
        return (
            struct.pack(">I", len(body)) + kind + body + struct.pack(">I", zlib.crc32(kind + body))
        )

    ihdr = struct.pack(">IIBBBBB", width, height, 8, 0, 0, 0, 0)
    return (
        b"\x89PNG\r\n\x1a\n"
        + chunk(b"IHDR", ihdr)
        + chunk(b"IDAT", zlib.compress(b""))
        + chunk(b"IEND", b"")
    )
