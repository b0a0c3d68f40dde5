"""ONNX external data: tensors whose bytes are kept in files beside the model file.

A tensor with ``data_location = EXTERNAL`` names its file (``location``, relative to the
model's directory), where its bytes start (``offset``, default 0), how many there are
(``length``, default the rest of the file) and optionally the file's SHA-1
(``checksum``). The file is untrusted input: before an array is allocated the location
must be a relative path inside the model's directory (no absolute path, no ``..``, no
symbolic link leading out of it) naming a regular file, ``offset + length`` must lie
within the file, and ``length`` must be the tensor's dimensions times its element size
(the check :func:`~xai_core.importers.ir.check_size` makes of inline bytes). Only the
tensor's own bytes are read, straight into the array.
"""

from __future__ import annotations

import hashlib
import os
import stat
from pathlib import Path, PurePosixPath, PureWindowsPath
from typing import Any

import numpy as np

from xai_core.errors import ModelFormatError
from xai_core.importers.ir import check_size

__all__ = ["ExternalData"]

#: Bytes read at a time: one ``read`` call of Linux returns at most about 2 GiB.
_CHUNK = 2**30


class ExternalData:
    """The files beside one model file that its tensors' external data may name.

    Parameters
    ----------
    directory : path or None
        The model file's directory; None for a model read from bytes, a stream or a
        ``ModelProto``, whose external tensors are refused.
    where : str
        How messages name the model.
    """

    def __init__(self, directory: Any, where: str) -> None:
        self.where = where
        self.root = None if directory is None else Path(directory).resolve()
        self._files: dict[str, tuple[Path, int]] = {}  # location -> (real path, size)
        self._checked: set[Path] = set()  # files whose checksum matched

    def _refuse(self, name: str, location: str, text: str) -> ModelFormatError:
        return ModelFormatError(
            f"{self.where}: tensor {name!r} keeps its data in the external file "
            f"{location!r}, which {text}"
        )

    def _file(self, name: str, location: str) -> tuple[Path, int]:
        """The real path and size of ``location``, checked to be a file inside the root."""
        if location in self._files:
            return self._files[location]
        if self.root is None:
            raise ModelFormatError(
                f"{self.where}: tensor {name!r} keeps its data in the external file "
                f"{location!r}; external data is read from files beside a model file, so "
                "pass the .onnx file's path (not its bytes, a stream or a ModelProto)."
            )
        if not location or "\x00" in location:
            raise self._refuse(name, location, "is not a file name.")
        if (
            os.path.isabs(location)
            or PurePosixPath(location).is_absolute()
            or PureWindowsPath(location).anchor
        ):
            raise self._refuse(
                name,
                location,
                "is an absolute path; a location is relative to the model's directory.",
            )
        if ".." in PureWindowsPath(location).parts:  # splits on "/" and "\\" both
            raise self._refuse(
                name,
                location,
                "climbs out of the model's directory ('..'); a location stays inside it.",
            )
        try:
            real = (self.root / location).resolve()
        except (OSError, RuntimeError) as exc:  # a loop of symbolic links, a name too long
            raise self._refuse(name, location, f"cannot be resolved: {exc}.") from None
        if not real.is_relative_to(self.root):
            raise self._refuse(
                name,
                location,
                f"leads outside the model's directory (a symbolic link to "
                f"{str(real)!r}); a location stays inside it.",
            )
        try:
            st = real.stat()
        except FileNotFoundError:
            raise self._refuse(name, location, "does not exist beside the model.") from None
        except OSError as exc:
            raise self._refuse(name, location, f"cannot be read: {exc}.") from None
        if not stat.S_ISREG(st.st_mode):
            raise self._refuse(name, location, "is not a regular file.")
        self._files[location] = (real, st.st_size)
        return real, st.st_size

    def _checksum(self, name: str, location: str, path: Path, want: str) -> None:
        """Raise unless the SHA-1 of the whole file is ``want`` (checked once per file)."""
        if path in self._checked:
            return
        digest = hashlib.sha1(usedforsecurity=False)
        with open(path, "rb") as fh:
            while block := fh.read(2**24):
                digest.update(block)
        if digest.hexdigest() != want.strip().lower():
            raise self._refuse(
                name, location, f"has the SHA-1 {digest.hexdigest()}; the model declares {want!r}."
            )
        self._checked.add(path)

    def read(self, t: Any, dtype: np.dtype) -> np.ndarray:
        """The bytes of the external tensor ``t`` as a flat array of ``dtype``.

        Parameters
        ----------
        t : onnx.TensorProto
            With ``data_location = EXTERNAL``.
        dtype : numpy.dtype
            Of the tensor's elements.

        Returns
        -------
        ndarray of shape (length // dtype.itemsize,)

        Raises
        ------
        ModelFormatError
            No directory to read from; a location that is absolute, climbs out of the
            model's directory, or is missing or not a file; an offset or length that is
            not a whole number or lies beyond the file's end; a length other than the
            tensor's dimensions times its element size; a checksum that does not match.
        """
        info = {e.key: e.value for e in t.external_data}
        name, location = t.name, info.get("location", "")
        if "location" not in info:
            raise ModelFormatError(
                f"{self.where}: tensor {t.name!r} is stored in an external file but names "
                "none (no 'location' key)."
            )
        numbers: dict[str, int] = {}
        for key in ("offset", "length"):
            text = info.get(key)
            if text is None:
                continue
            if not text.strip().isdigit():
                raise self._refuse(
                    name, location, f"is given an {key} of {text!r}, not a whole number of bytes."
                )
            numbers[key] = int(text)
        path, size = self._file(name, location)
        offset = numbers.get("offset", 0)
        if offset > size:
            raise self._refuse(
                name,
                location,
                f"holds {size:,} bytes; the tensor's offset {offset:,} lies beyond its end.",
            )
        length = numbers.get("length", size - offset)
        if offset + length > size:
            raise self._refuse(
                name,
                location,
                f"holds {size:,} bytes; the tensor's bytes {offset:,} to "
                f"{offset + length:,} (offset {offset:,}, length {length:,}) run past its end.",
            )
        count = check_size(
            name, t.dims, length, dtype.itemsize, f"{self.where}, external file {location!r}"
        )
        if "checksum" in info:
            self._checksum(name, location, path, info["checksum"])
        out = np.empty(count, dtype=dtype)
        view = memoryview(out.view(np.uint8))
        filled = 0
        with open(path, "rb") as fh:
            fh.seek(offset)
            while filled < length:
                n = fh.readinto(view[filled : filled + _CHUNK])
                if not n:
                    break
                filled += n
        if filled != length:  # the file shrank while it was read
            raise self._refuse(
                name, location, f"ended after {filled:,} of the tensor's {length:,} bytes."
            )
        return out
