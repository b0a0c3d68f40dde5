"""Fuzz one model reader: ``python fuzz_readers.py KIND SAMPLE N``, run by the hostile tests.

Hypothesis mutates the valid ``SAMPLE`` (a ``.keras`` zip, an ``.h5`` file, a TF.js
``model.json`` beside its shard, a Teachable Machine zip) ``N`` times: truncation, bit
flips, a run of bytes overwritten, and integers written over what may be size fields
(zip headers, HDF5 addresses and lengths, JSON numbers). Each mutant must import to a
network that predicts an array of the right shape, or raise a subclass of
:class:`xai_core.errors.XaiError`; anything else (a raw ``KeyError``, a ``MemoryError``,
a crash) fails the run. The process caps its own address space (``RLIMIT_AS``) before
importing anything heavy, lowers the memory limit of :func:`xai_core.set_resource_limits`
under that cap, and is killed by the caller's time limit if it hangs.
"""

from __future__ import annotations

import os
import resource
import shutil
import struct
import sys
import tempfile
from pathlib import Path

#: Address space the fuzzed readers may use (the interpreter and its libraries included).
ADDRESS_SPACE = 3 * 2**30
#: The memory limit the readers are given: declared sizes past it must be refused.
READER_LIMIT = 256 * 2**20


def _cap_memory() -> None:
    soft, hard = resource.getrlimit(resource.RLIMIT_AS)
    cap = ADDRESS_SPACE if hard == resource.RLIM_INFINITY else min(ADDRESS_SPACE, hard)
    resource.setrlimit(resource.RLIMIT_AS, (cap, hard))


def main(kind: str, sample: Path, examples: int) -> int:
    _cap_memory()
    import numpy as np
    from hypothesis import HealthCheck, given, settings
    from hypothesis import strategies as st

    import xai_core as xai
    from xai_core.errors import XaiError

    xai.set_resource_limits(max_bytes=READER_LIMIT)
    X = np.random.default_rng(0).uniform(-1, 1, (2, 2, 2, 1)).astype(np.float32)
    files = {"model.json": sample, "shard": sample.parent / "group1-shard1of1.bin"}
    original = {k: p.read_bytes() for k, p in files.items()} if kind == "tfjs" else None
    data = sample.read_bytes()
    work = Path(tempfile.mkdtemp(prefix="fuzz-"))
    sizes = st.sampled_from(
        [0, 1, 2**16 - 1, 2**31 - 1, 2**31, 2**32 - 1, 2**40, 2**63 - 1, 2**64 - 1]
    )

    @st.composite
    def mutation(draw: st.DrawFn, n: int) -> tuple:
        how = draw(st.sampled_from(["truncate", "flip", "overwrite", "size", "digits"]))
        at = draw(st.integers(0, max(n - 1, 0)))
        if how == "truncate":
            return how, at, None
        if how == "flip":
            return how, at, draw(st.lists(st.integers(0, 7), min_size=1, max_size=8))
        if how == "overwrite":
            return how, at, draw(st.binary(min_size=1, max_size=16))
        if how == "size":
            return how, at, (draw(sizes), draw(st.sampled_from(["<H", "<I", "<Q", ">I", ">Q"])))
        return (
            how,
            at,
            draw(st.sampled_from([b"1e999", b"-1", b"99999999999", b"4.5", b'"x"', b"null", b"["])),
        )

    def apply(blob: bytes, m: tuple) -> bytes:
        how, at, arg = m
        out = bytearray(blob)
        if how == "truncate":
            return bytes(out[:at])
        if how == "flip":
            for bit in arg:
                out[at] ^= 1 << bit
        elif how == "overwrite":
            out[at : at + len(arg)] = arg
        elif how == "size":
            value, fmt = arg
            width = struct.calcsize(fmt)
            out[at : at + width] = struct.pack(fmt, value % (1 << (8 * width)))
        else:  # a JSON value in place of a digit run
            j = at
            while j < len(out) and not chr(out[j]).isdigit():
                j += 1
            k = j
            while k < len(out) and chr(out[k]).isdigit():
                k += 1
            out[j:k] = arg
        return bytes(out)

    def load(path: Path) -> None:
        try:
            if kind == "teachable":
                model = xai.from_teachable_machine(path)
            else:
                model = xai.from_keras(path)
        except XaiError:
            return
        out = model.predict(X.reshape(len(X), *model.input_shape)) if model.input_shape else None
        assert out is None or out.shape[0] == len(X), out.shape

    counted = [0]

    @settings(
        max_examples=examples,
        deadline=None,
        derandomize=True,
        database=None,
        suppress_health_check=list(HealthCheck),
    )
    @given(st.data())
    def run(draw: st.DataObject) -> None:
        counted[0] += 1
        if kind == "tfjs":
            which = draw.draw(st.sampled_from(["model.json", "shard"]))
            blob = original[which]
            folder = work / "tfjs"
            shutil.rmtree(folder, ignore_errors=True)
            folder.mkdir()
            (folder / "model.json").write_bytes(original["model.json"])
            (folder / "group1-shard1of1.bin").write_bytes(original["shard"])
            target = folder / ("model.json" if which == "model.json" else "group1-shard1of1.bin")
            target.write_bytes(apply(blob, draw.draw(mutation(len(blob)))))
            load(folder / "model.json")
            return
        path = work / sample.name
        path.write_bytes(apply(data, draw.draw(mutation(len(data)))))
        load(path)

    try:
        run()
    finally:
        shutil.rmtree(work, ignore_errors=True)
    print(f"examples: {counted[0]}")
    return 0


if __name__ == "__main__":
    os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
    sys.exit(main(sys.argv[1], Path(sys.argv[2]), int(sys.argv[3])))
