"""One progress rule: ``progress=None`` shows a bar for long work only; True always; False never."""

from __future__ import annotations

from typing import Any

from xai_core.validation import check_bool

__all__ = ["LONG_WORK_UNITS", "progress_bar", "show_progress"]

#: With ``progress=None``, work of at least this many units (chunks, blocks, epochs) shows a bar.
LONG_WORK_UNITS = 10


def show_progress(progress: bool | None, units: int, *, long: bool | None = None) -> bool:
    """Whether to show a bar for ``units`` steps of work.

    Parameters
    ----------
    progress : bool or None
        The caller's ``progress=``: ``True`` always, ``False`` never, ``None`` for long work.
    units : int
        Steps the bar would count.
    long : bool, optional
        The caller's own judgement of "long" (a time estimate, say); default
        ``units >= LONG_WORK_UNITS``.
    """
    progress = check_bool(progress, "progress", allow_none=True)
    if progress is not None:
        return progress
    return bool(units >= LONG_WORK_UNITS if long is None else long)


def progress_bar(
    total: int,
    *,
    progress: bool | None,
    desc: str,
    unit: str = "it",
    long: bool | None = None,
    leave: bool = False,
) -> Any:
    """A ``tqdm.auto`` bar over ``total`` units, shown as :func:`show_progress` decides."""
    from tqdm.auto import tqdm

    shown = show_progress(progress, total, long=long)
    return tqdm(total=total, desc=desc, unit=unit, disable=not shown, leave=leave)
