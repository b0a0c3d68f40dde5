"""Hostile Teachable Machine exports (zips and folders): the right model or one clear error.

``CASES`` is one row per hostile export: a function writing it under ``tmp`` (returning the
path to give :func:`xai_core.from_teachable_machine`) and ``None`` for a model that predicts
:data:`model_files.WANT` with the classes :data:`model_files.LABELS`, or the error class
and words its message must hold. ``test_fuzz_teachable_zip`` mutates a valid zip at random
in a subprocess with a memory cap and a time limit.
"""

from __future__ import annotations

import json
import os
import sys
import tracemalloc
from collections.abc import Callable
from pathlib import Path

import numpy as np
import pytest

import xai_core as xai
from xai_core.errors import ModelFormatError

sys.path.insert(0, str(Path(__file__).resolve().parent))  # the file builders
import model_files as mf  # noqa: E402
from test_hostile_keras import run_fuzz  # noqa: E402

GiB = 2**30
TM = mf.tm_members


def zipped(tmp: Path, **members: bytes | None) -> Path:
    """The valid export as a zip, with members replaced (or removed, for None)."""
    files = {**TM(), **{k.replace("__", "."): v for k, v in members.items()}}
    return mf.write_tm_zip(tmp, {k: v for k, v in files.items() if v is not None})


def folder(tmp: Path, files: dict[str, bytes] | None = None) -> Path:
    out = tmp / "export"
    out.mkdir()
    for name, data in (TM() if files is None else files).items():
        (out / name).write_bytes(data)
    return out


def _raw(path: Path, data: bytes) -> Path:
    path.write_bytes(data)
    return path


def _fifo(path: Path) -> Path:
    os.mkfifo(path)
    return path


def _meta(**fields: object) -> bytes:
    return json.dumps({"labels": mf.LABELS, "imageSize": 2, **fields}).encode()


def _keras_export(tmp: Path) -> Path:
    """keras_model.h5 + labels.txt, as the Keras export holds them."""
    h5 = mf.write_h5(tmp, name="keras_model.h5").read_bytes()
    labels = "".join(f"{i} {n}\n" for i, n in enumerate(mf.LABELS)).encode()
    return mf.write_tm_zip(
        tmp, {"keras_model.h5": h5, "labels.txt": labels}, folder="converted_keras/"
    )


def _link_outside(tmp: Path) -> Path:
    out = folder(tmp, {k: v for k, v in TM().items() if k != "metadata.json"})
    (tmp / "secret.json").write_bytes(_meta())
    (out / "metadata.json").symlink_to(tmp / "secret.json")
    return out


def _ambiguous(tmp: Path) -> Path:
    members = {f"a/{k}": v for k, v in TM().items()}
    members["b/labels.txt"] = b"0 x\n1 y\n2 z\n"
    members["a/labels.txt"] = b"0 cat\n1 dog\n2 bird\n"
    return mf.write_zip(tmp / "export.zip", members)


LABELS = "".join(f"{i} {n}\n" for i, n in enumerate(mf.LABELS))

#: name -> (write the export under tmp and return its path, None or (error class, *words))
# fmt: off
CASES: dict[str, tuple[Callable[[Path], Path], tuple | None]] = {
    "zip-valid": (lambda t: zipped(t), None),
    "folder-valid": (lambda t: folder(t), None),
    "zip-keras-export-valid": (lambda t: _keras_export(t), None),
    "zip-with-labels-txt-valid": (lambda t: zipped(t, labels__txt=LABELS.encode()), None),
    "not-a-zip": (lambda t: _raw(t / "export.zip", b"hello"), (ModelFormatError, "export.zip", "not a Teachable Machine export")),
    "zip-truncated": (lambda t: _raw(t / "export.zip", zipped(t).read_bytes()[:200]), (ModelFormatError, "export.zip", "not a Teachable Machine export")),
    "zip-a-fifo": (lambda t: _fifo(t / "export.zip"), (ModelFormatError, "export.zip", "FIFO")),
    "zip-bad-crc": (lambda t: _raw(t / "export.zip", mf.zip_flip_in(zipped(t).read_bytes(), "my_model/metadata.json")), (ModelFormatError, "export.zip", "'my_model/metadata.json'", "CRC")),
    "zip-encrypted": (lambda t: _raw(t / "export.zip", mf.zip_set_encrypted(zipped(t).read_bytes())), (ModelFormatError, "export.zip", "encrypted")),
    "zip-member-declares-3GiB": (lambda t: _raw(t / "export.zip", mf.zip_set_size(zipped(t).read_bytes(), "my_model/group1-shard1of1.bin", 3 * GiB)), (ModelFormatError, "export.zip", "the zip declares 3,221,226,258 bytes")),
    "zip-metadata-declares-100MiB": (lambda t: _raw(t / "export.zip", mf.zip_set_size(zipped(t).read_bytes(), "my_model/metadata.json", 100 * 2**20)), (ModelFormatError, "export.zip", "'my_model/metadata.json'", "104,857,600")),
    "zip-ambiguous-labels": (lambda t: _ambiguous(t), (ModelFormatError, "export.zip", "a/labels.txt", "b/labels.txt", "share the name")),
    "labels-index-twice": (lambda t: zipped(t, labels__txt=b"0 cat\n0 dog\n1 bird\n"), (ModelFormatError, "export.zip/labels.txt", "index 0 is given twice")),
    "labels-gap": (lambda t: zipped(t, labels__txt=b"0 cat\n2 dog\n3 bird\n"), (ModelFormatError, "labels.txt", "0 .. n-1")),
    "labels-latin1": (lambda t: zipped(t, labels__txt="0 caf\xe9\n1 a\n2 b\n".encode("latin-1")), (ModelFormatError, "export.zip/labels.txt", "not UTF-8", "0xe9")),
    "labels-too-few": (lambda t: zipped(t, labels__txt=b"0 cat\n1 dog\n"), (ModelFormatError, "3 outputs", "2 classes")),
    "metadata-not-json": (lambda t: zipped(t, metadata__json=b"{labels"), (ModelFormatError, "export.zip/metadata.json", "not valid JSON")),
    "metadata-latin1": (lambda t: zipped(t, metadata__json='{"labels": ["caf\xe9"]}'.encode("latin-1")), (ModelFormatError, "metadata.json", "not UTF-8")),
    "metadata-100k-deep": (lambda t: zipped(t, metadata__json=b"[" * 100_000 + b"]" * 100_000), (ModelFormatError, "metadata.json", "100,000 deep")),
    "metadata-a-list": (lambda t: zipped(t, metadata__json=b"[]"), (ModelFormatError, "metadata.json", "expected an object")),
    "metadata-labels-a-dict": (lambda t: zipped(t, metadata__json=b'{"labels": {"0": "cat"}}'), (ModelFormatError, "metadata.json", "labels: expected a list")),
    "metadata-labels-numbers": (lambda t: zipped(t, metadata__json=b'{"labels": [1, 2, 3]}'), (ModelFormatError, "metadata.json", "labels[0]: expected a string")),
    "metadata-imageSize-big": (lambda t: zipped(t, metadata__json=_meta(imageSize="big")), (ModelFormatError, "metadata.json", "imageSize: expected an integer >= 1", "'big'")),
    "metadata-imageSize-10**6": (lambda t: zipped(t, metadata__json=_meta(imageSize=10**6)), (ModelFormatError, "export.zip", "imageSize 1000000", "2 x 2")),
    "metadata-imageSize-4.5": (lambda t: zipped(t, metadata__json=_meta(imageSize=4.5)), (ModelFormatError, "imageSize: expected an integer", "4.5")),
    "metadata-duplicate-key": (lambda t: zipped(t, metadata__json=b'{"labels": ["a","b","c"], "labels": ["x"]}'), (ModelFormatError, "metadata.json", "'labels' twice")),
    "no-labels": (lambda t: zipped(t, metadata__json=b"{}"), (ModelFormatError, "no labels.txt")),
    "no-model": (lambda t: zipped(t, model__json=None), (ModelFormatError, "no Teachable Machine model")),
    "model-json-units-abc": (lambda t: zipped(t, model__json=json.dumps(mf.edit(mf.tfjs_doc(topology=mf.config()), "modelTopology.config.layers.2.config.units", "abc")).encode()), (ModelFormatError, "model.json", "modelTopology.config.layers[2].config.units")),
    "folder-link-outside-is-not-read": (lambda t: _link_outside(t), (ModelFormatError, "no labels.txt")),
    "folder-fifo-member-is-not-read": (lambda t: (_fifo(folder(t) / "notes.txt"), t / "export")[1], None),
}
# fmt: on


@pytest.mark.parametrize("case", list(CASES), ids=list(CASES))
def test_hostile_teachable(tmp_path: Path, case: str) -> None:
    """Each export loads with its labels and predictions, or raises one error naming the problem."""
    write, expect = CASES[case]
    path = write(tmp_path)
    tracemalloc.start()
    try:
        if expect is None:
            model = xai.from_teachable_machine(path)
            assert model.output_names == tuple(mf.LABELS)
            assert model.preprocessing["image_size"] == (2, 2)
            assert model.preprocessing["channels"] == 1
            np.testing.assert_allclose(model.predict(mf.X), mf.WANT, atol=1e-6)
        else:
            error, *words = expect
            with pytest.raises(error) as info:
                xai.from_teachable_machine(path)
            for word in words:
                assert word in str(info.value), (word, str(info.value))
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert peak < 64 * 2**20


def test_fuzz_teachable_zip(tmp_path: Path) -> None:
    """Truncated, bit-flipped and size-patched zips give our own errors or a working model."""
    run_fuzz("teachable", mf.write_tm_zip(tmp_path))
