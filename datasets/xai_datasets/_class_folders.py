"""Folders of examples, Teachable-Machine style: one sub-folder per class, the files inside."""

from __future__ import annotations

import os
from collections.abc import Sequence
from pathlib import Path

from xai_core.errors import DataError, ValidationError

__all__ = ["class_files"]


def _classes(classes: Sequence[str] | None, found: list[str], root: Path) -> list[str]:
    names = list(found if classes is None else classes)
    if classes is not None:
        if isinstance(classes, str) or any(not isinstance(c, str) for c in names):
            raise ValidationError(f"classes must be a sequence of folder names; got {classes!r}.")
        twice = sorted({c for c in names if names.count(c) > 1})
        if twice:
            raise ValidationError(
                f"classes must name each class folder once; {twice} appear more than once."
            )
    missing = [c for c in names if c not in found]
    if missing or not names:
        raise DataError(
            f"class folders {missing or '(none)'} not found in {str(root)!r}; found {found}."
        )
    return names


def class_files(
    path: str | os.PathLike[str],
    classes: Sequence[str] | None,
    suffixes: Sequence[str],
    kind: str,
    limit: int,
) -> tuple[Path, list[str], list[tuple[Path, int]]]:
    """The class folders of ``path`` and their files ending in ``suffixes``, with labels.

    Parameters
    ----------
    path : path-like
        A folder with one sub-folder per class.
    classes : sequence of str, optional
        The classes, in this order, each once; by default every sub-folder, sorted.
    suffixes : sequence of str
        File endings read (lower case, with the dot).
    kind : str
        What the files are, for messages: ``"PNG or JPEG images"``, ``"WAV files"``.
    limit : int
        Most files read.

    Returns
    -------
    root : Path
    names : list of str
        The class names.
    files : list of (Path, int)
        Each file and its class index, class by class, files sorted by name.

    Raises
    ------
    DataError
        Not a folder, a class folder missing or without such files, more than ``limit``.
    ValidationError
        ``classes`` naming a folder twice, or not a sequence of names.
    """
    root = Path(path)
    if not root.is_dir():
        raise DataError(
            f"path must be a folder with one sub-folder per class; {str(root)!r} is not a folder."
        )
    found = sorted(p.name for p in root.iterdir() if p.is_dir() and not p.name.startswith("."))
    names = _classes(classes, found, root)
    files: list[tuple[Path, int]] = []
    for label, name in enumerate(names):
        inside = sorted(p for p in (root / name).iterdir() if p.suffix.lower() in suffixes)
        if not inside:
            raise DataError(f"class folder {name!r} holds no {kind}.")
        files += [(p, label) for p in inside]
    if len(files) > limit:
        raise DataError(f"{str(root)!r} holds {len(files):,} {kind}; at most {limit:,} are read.")
    return root, names, files
