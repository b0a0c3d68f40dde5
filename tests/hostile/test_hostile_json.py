"""The one bounded JSON reader and its schema check, on hostile documents.

``DOCUMENTS`` is one row per document given to :func:`xai_core.jsonfile.read_json`: the
value it must parse to, or the words of the :class:`~xai_core.ModelFormatError` (always
naming the file). ``SCHEMAS`` is one row per value checked by
:func:`xai_core.jsonfile.check`: ``None`` when it matches, else the message, which names the
document, the path inside it, what was expected and what arrived. ``REPORTS`` feeds the same
faults to ``Explanation.load``, which ``xai report`` reads its input with.
"""

from __future__ import annotations

import math
import os
import tracemalloc
from pathlib import Path

import pytest

import xai_core as xai
from xai_core.errors import ModelFormatError, ValidationError
from xai_core.jsonfile import (
    ANYTHING,
    Bool,
    Either,
    Int,
    List,
    Num,
    Obj,
    Str,
    check,
    json_depth,
    parse_json,
    read_json,
)

GiB = 2**30


def _sparse(size: int):
    def make(path: Path) -> None:
        with open(path, "wb") as f:
            f.truncate(size)

    return make


def _bytes(data: bytes):
    return lambda path: path.write_bytes(data)


#: name -> (write the file, the parsed value or ("error", *words))
# fmt: off
DOCUMENTS: dict[str, tuple] = {
    "object": (_bytes(b'{"a": [1, 2.5, "x", null, true]}'), {"a": [1, 2.5, "x", None, True]}),
    "byte-order-mark": (_bytes(b'\xef\xbb\xbf{"a": 1}'), {"a": 1}),
    "brackets-in-strings": (_bytes(b'{"a": "[[[[{{{{", "b": "\\"[["}'), {"a": "[[[[{{{{", "b": '"[['}),
    "256-deep": (_bytes(b"[" * 256 + b"]" * 256), "deep-ok"),
    "257-deep": (_bytes(b"[" * 257 + b"]" * 257), ("error", "257 deep", "at most 256")),
    "100k-deep-arrays": (_bytes(b"[" * 100_000 + b"]" * 100_000), ("error", "100,000 deep")),
    "100k-deep-objects": (_bytes(b'{"a":' * 100_000 + b"1" + b"}" * 100_000), ("error", "100,000 deep")),
    "100k-deep-unclosed": (_bytes(b"[" * 100_000), ("error", "100,000 deep")),
    "unterminated-escapes": (_bytes(b'"' + b'\\"' * 50_000), ("error", "not valid JSON")),
    "latin1": (_bytes('{"name": "caf\xe9"}'.encode("latin-1")), ("error", "not UTF-8", "0xe9", "offset 13")),
    "utf16": (_bytes('{"a": 1}'.encode("utf-16")), ("error", "not UTF-8")),
    "duplicate-key": (_bytes(b'{"units": 3, "units": 1000000000}'), ("error", "'units' twice")),
    "truncated": (_bytes(b'{"a": [1, 2'), ("error", "not valid JSON", "line 1")),
    "empty": (_bytes(b""), ("error", "not valid JSON")),
    "5000-digit-integer": (_bytes(b"9" * 5000), ("error", "not valid JSON", "4300")),
    "nan-literal": (_bytes(b"[NaN]"), "nan"),
    "3GiB-sparse": (_sparse(3 * GiB), ("error", "3 GiB", "at most 64 MiB")),
    "fifo": (lambda p: os.mkfifo(p), ("error", "FIFO", "not a regular file")),
    "folder": (lambda p: p.mkdir(), ("error", "folder", "not a regular file")),
}
# fmt: on


@pytest.mark.parametrize("case", list(DOCUMENTS), ids=list(DOCUMENTS))
def test_hostile_json_documents(tmp_path: Path, case: str) -> None:
    """Each document parses to its value or is one ModelFormatError naming the file."""
    write, expect = DOCUMENTS[case]
    path = tmp_path / "doc.json"
    write(path)
    tracemalloc.start()
    try:
        if isinstance(expect, tuple):
            with pytest.raises(ModelFormatError) as info:
                read_json(path)
            assert "doc.json" in str(info.value)
            for word in expect[1:]:
                assert word in str(info.value), (word, str(info.value))
        elif expect == "deep-ok":
            assert json_depth(path.read_bytes()) == 256 and read_json(path) is not None
        elif expect == "nan":
            assert math.isnan(read_json(path)[0])
        else:
            assert read_json(path) == expect
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert peak < 32 * 2**20  # never the declared size


def test_errors_are_the_callers_class() -> None:
    """An argument's JSON is refused with ValidationError; bytes and text both parse."""
    with pytest.raises(ValidationError, match="arg is not valid JSON"):
        parse_json(b"{", "arg", error=ValidationError)
    assert parse_json('{"é": 1}', "arg") == parse_json('{"é": 1}'.encode(), "arg") == {"é": 1}
    with pytest.raises(ModelFormatError, match="holds 11 bytes of JSON; at most 10"):
        parse_json(b'"123456789"', "doc", max_bytes=10)


LAYER = Obj(required={"class_name": Str(), "config": Obj(required={"units": Int(lo=1)})})
PAIR = Either(Int(lo=1), List(Int(lo=1), min_len=2, max_len=2))
DOC = Obj(required={"layers": List(LAYER, min_len=1)}, optional={"scale": Num(), "on": Bool()})

#: name -> (value, schema, None or the exact message)
# fmt: off
SCHEMAS: dict[str, tuple] = {
    "valid": ({"layers": [{"class_name": "Dense", "config": {"units": 3}}]}, DOC, None),
    "extra-keys-allowed": ({"layers": [{"class_name": "D", "config": {"units": 1, "x": 0}}], "y": 1}, DOC, None),
    "units-abc": ({"layers": [{"class_name": "D", "config": {"units": 1}}, {"class_name": "D", "config": {"units": "abc"}}]}, DOC, "m.json: layers[1].config.units: expected an integer >= 1; got 'abc' (a string)."),
    "missing-layers": ({}, DOC, "m.json: missing the key 'layers' (a list of at least 1 items, each an object with 'class_name', 'config')."),
    "layers-a-dict": ({"layers": {"0": {}}}, DOC, "m.json: layers: expected a list of at least 1 items, each an object with 'class_name', 'config'; got an object with keys 0."),
    "layer-a-number": ({"layers": [7]}, DOC, "m.json: layers[0]: expected an object with 'class_name', 'config'; got 7 (an integer)."),
    "scale-abc": ({"layers": [{"class_name": "D", "config": {"units": 1}}], "scale": "abc"}, DOC, "m.json: scale: expected a finite number; got 'abc' (a string)."),
    "scale-inf": ({"layers": [{"class_name": "D", "config": {"units": 1}}], "scale": math.inf}, DOC, "m.json: scale: expected a finite number; got inf (a number)."),
    "scale-10**400": ({"layers": [{"class_name": "D", "config": {"units": 1}}], "scale": 10**400}, DOC, "m.json: scale: expected a finite number; got an integer of about 401 digits."),
    "bool-is-not-an-int": ({"layers": [{"class_name": "D", "config": {"units": True}}]}, DOC, "m.json: layers[0].config.units: expected an integer >= 1; got true (a boolean)."),
    "pair-int": (3, PAIR, None),
    "pair-list": ([3, 3], PAIR, None),
    "pair-4.5": ([4.5, 3], PAIR, "m.json: kernel_size[0]: expected an integer >= 1; got 4.5 (a number)."),
    "pair-three": ([3, 3, 3], PAIR, "m.json: kernel_size: expected a list of 2 items, each an integer >= 1; got a list of 3 items."),
    "pair-big": ("big", PAIR, "m.json: kernel_size: expected an integer >= 1 or a list of 2 items, each an integer >= 1; got 'big' (a string)."),
    "null-or-string": (None, Either(None, Str()), None),
    "choices": ("same", Str(choices=("valid", "same")), None),
    "not-a-choice": ("full", Str(choices=("valid", "same")), "m.json: kernel_size: expected one of 'valid', 'same'; got 'full' (a string)."),
    "anything": ({"x": [1]}, ANYTHING, None),
    "map-values": ({"a": 1, "b": "x"}, Obj(values=Num()), "m.json: kernel_size.b: expected a finite number; got 'x' (a string)."),
    "key-not-identifier": ({"mean radius": "x"}, Obj(values=Num()), "m.json: kernel_size['mean radius']: expected a finite number; got 'x' (a string)."),
    "long-string-shortened": ("x" * 100, Int(), "m.json: kernel_size: expected an integer; got '" + "x" * 37 + "...' (a string)."),
}
# fmt: on


@pytest.mark.parametrize("case", list(SCHEMAS), ids=list(SCHEMAS))
def test_schema_check(case: str) -> None:
    """A mismatch names the document, the path, what was expected and what arrived."""
    value, spec, message = SCHEMAS[case]
    path = "" if spec is DOC else "kernel_size"
    if message is None:
        assert check(value, spec, "m.json", path) is value
    else:
        with pytest.raises(ModelFormatError) as info:
            check(value, spec, "m.json", path)
        assert str(info.value) == message


#: name -> (the file's bytes, the words of the ValidationError from Explanation.load)
# fmt: off
REPORTS: dict[str, tuple[bytes, tuple]] = {
    "100k-deep": (b"[" * 100_000 + b"]" * 100_000, ("100,000 deep",)),
    "latin1": ('{"method": "caf\xe9"}'.encode("latin-1"), ("not UTF-8",)),
    "not-json": (b"{values", ("not valid JSON",)),
    "a-list": (b"[1, 2]", ("not a saved explanation", "list")),
    "missing-keys": (b'{"values": [1]}', ("base_values", "target")),
    "ragged-values": (b'{"values": [[1], [1, 2]], "base_values": [0, 0], "target": [0, 0]}', ("not a saved explanation",)),
    "values-strings": (b'{"values": [["a"]], "base_values": [0], "target": [0]}', ("not a saved explanation",)),
}
# fmt: on


@pytest.mark.parametrize("case", list(REPORTS), ids=list(REPORTS))
def test_hostile_report_input(tmp_path: Path, case: str) -> None:
    """`xai report`'s input (Explanation.load): every fault is one ValidationError naming the file."""
    data, words = REPORTS[case]
    path = tmp_path / "e.json"
    path.write_bytes(data)
    with pytest.raises(ValidationError) as info:
        xai.Explanation.load(path)
    assert "e.json" in str(info.value)
    for word in words:
        assert word in str(info.value), (word, str(info.value))
