"""One progress rule, one bar per call: ``progress=None`` shows a bar for long work only; True always; False never.

The first :func:`progress_bar` opened in a thread (or task) is the job's bar: the only one
drawn, counting what the user asked for (rows explained, epochs...). Bars opened while it
is open join it instead of drawing their own:

- A bar opened inside a :meth:`Bar.part` of the bar above it (``with bar.part(n):``, "the
  next ``n`` units are done by the call inside") maps its own units onto those ``n``:
  integrated gradients counting backward passes inside ``explain()``'s part of 4 rows
  moves the job's bar from 0 to 4 rows as its passes complete. When the part ends, the
  job has advanced by ``n`` whatever the inner call counted.
- A bar opened anywhere else (inside a loop whose owner counts its own units) is silent.

So ``compare_methods`` opens one bar over rows x methods, gives each ``explain()`` a part
of ``len(X)`` rows, and the methods' own bars drive it; ``explain(executor=...)`` counts
rows as chunks complete, in the caller's thread, whatever order they arrive in.

With ``progress=None`` a job's bar appears when the job is long by its own measure, or when
any bar that joins it finds its work long by its measure (and its ``progress`` is not
False), and only where someone can watch it: standard error is a terminal, or the code runs
in a Jupyter kernel (:func:`interactive`); a log, a pipe or a CI job gets no bar.
``progress=False`` on the job's bar hides it and everything that joins it;
``progress=True`` shows it from the start, wherever the output goes. A job's bar is a
``tqdm.auto`` bar (a widget in notebooks) created only when shown.

A job's bar is labelled by the job and counts what the user asked for: ``explain()`` on 40
rows is "IG 40 rows" over 40 rows (:func:`job_label`); ``compare_backends`` is "IG 5 rows
× 3 backends" over 15, and what it is doing now ("on tpu") is shown after the bar
(``bar.part(n, stage=...)``), never as a bar of its own.

The job is held in a :class:`contextvars.ContextVar`: a bar opened in another thread (a
thread pool's worker) starts a job of its own, which is why chunk workers get
``progress=False``.
"""

from __future__ import annotations

import contextvars
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from xai_core.validation import check_bool

__all__ = [
    "LONG_WORK_UNITS",
    "Bar",
    "count",
    "interactive",
    "job_label",
    "progress_bar",
    "show_progress",
]

#: With ``progress=None``, work of at least this many units (chunks, blocks, epochs) shows a bar.
LONG_WORK_UNITS = 10

#: The innermost bar of the running job that others may join (the job's bar or one joined
#: through a part); None outside any job.
_CURRENT: contextvars.ContextVar[Bar | None] = contextvars.ContextVar(
    "xai_core_progress_bar", default=None
)


def interactive() -> bool:
    """Whether a bar can be watched: standard error is a terminal, or this is a Jupyter kernel."""
    ipython = sys.modules.get("IPython")  # never imported here: only if the host already has
    if ipython is not None:
        try:
            shell = ipython.get_ipython()
        except Exception:  # noqa: BLE001 - a half-initialised IPython is no notebook
            shell = None
        if shell is not None and getattr(shell, "kernel", None) is not None:
            return True
    try:
        return bool(sys.stderr.isatty())
    except (AttributeError, ValueError):  # no stderr, or a closed one
        return False


def count(n: int, unit: str) -> str:
    """``"1 row"``, ``"40 rows"``."""
    return f"{n} {unit}" if n == 1 else f"{n} {unit}s"


def job_label(method: str, n: int, unit: str = "row") -> str:
    """A job's bar label: the method and how many units the user asked for, ``"IG 40 rows"``.

    Method names of at most four letters are acronyms and written in capitals (IG, SHAP,
    LIME, LRP, ALE); longer ones as they are named (``saliency``, ``occlusion``).
    """
    shown = method.upper() if len(method) <= 4 and method.isalpha() else method
    return f"{shown} {count(n, unit)}"


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


class Bar:
    """A progress bar of one call: the job's own (drawn), joined through a part, or silent.

    Made by :func:`progress_bar`. ``update(n)`` counts ``n`` of its units; a joined bar
    passes them on, scaled, to the bar whose part it runs in.

    Attributes
    ----------
    total : int
        Units this bar counts.
    done : float
        Units counted so far (joined bars' contributions can be fractions).
    """

    def __init__(
        self,
        total: int,
        *,
        progress: bool | None,
        desc: str,
        unit: str,
        long: bool | None,
        leave: bool,
    ) -> None:
        progress = check_bool(progress, "progress", allow_none=True)
        self.total = max(int(total), 0)
        self.desc, self.unit, self.leave = desc, unit, leave
        self.progress = progress
        self.done = 0.0
        self._tqdm: Any = None
        self._part_end: float | None = None
        self._child: Bar | None = None
        self._closed = False
        self._postfix: dict[str, Any] | None = None
        self._stage: str | None = None
        above = _CURRENT.get()
        if above is not None and above._closed:
            above = None  # left open by a call that failed without closing it
        self.parent: Bar | None = None
        self.scale = 0.0
        self.silent = False
        self._token: contextvars.Token | None = None
        if above is None:
            self.root: Bar = self
        elif above._part_end is not None and above._child is None:
            self.root, self.parent = above.root, above
            span = max(above._part_end - above.done, 0.0)
            self.scale = span / self.total if self.total else 0.0
            above._child = self
        else:
            self.root, self.silent = above.root, True
        if not self.silent:
            self._token = _CURRENT.set(self)
        if show_progress(progress, self.total, long=long):
            self.root._reveal(forced=progress is True)

    # -- what the caller sees --------------------------------------------------------------
    @property
    def n(self) -> int:
        """Whole units counted so far."""
        return int(self.done + 1e-9)

    @property
    def shown(self) -> bool:
        """Whether the job's bar is drawn."""
        return self.root._tqdm is not None

    @property
    def disable(self) -> bool:
        """``not shown``, as on a ``tqdm`` bar."""
        return not self.shown

    def _reveal(self, forced: bool) -> None:
        """Draw this job's bar from now on, unless the job said ``progress=False``.

        Drawn only where it can be watched (:func:`interactive`) unless ``forced`` (a
        ``progress=True``).
        """
        if self._tqdm is not None or self._closed or self.progress is False:
            return
        if not (forced or self.progress is True or interactive()):
            return
        from tqdm.auto import tqdm

        self._tqdm = tqdm(
            total=self.total, desc=self.desc, unit=self.unit, leave=self.leave, initial=self.n
        )
        if self._postfix:
            self._tqdm.set_postfix(self._postfix, refresh=False)
        elif self._stage:
            self._tqdm.set_postfix_str(self._stage, refresh=False)

    def _draw(self) -> None:
        bar = self._tqdm
        if bar is not None and self.n > bar.n:
            bar.update(self.n - bar.n)

    # -- counting --------------------------------------------------------------------------
    def update(self, n: float = 1) -> None:
        """Count ``n`` more units of this bar's work."""
        if not self.silent and not self._closed:
            self._advance(float(n))

    def _advance(self, n: float) -> None:
        before = self.done
        self.done = min(self.done + n, float(self.total))
        gained = self.done - before
        if gained <= 0:
            return
        if self.parent is not None:
            self.parent._advance(gained * self.scale)
        elif self.root is self:
            self._draw()

    @contextmanager
    def part(self, n: int, *, stage: str | None = None) -> Iterator[Bar]:
        """The next ``n`` units are done by the call inside; its bar, if it opens one, drives them.

        On a normal exit the bar has advanced by ``n`` units, whatever the inner call
        counted; after an error it stays where it was.

        Parameters
        ----------
        n : int
            Units of this bar the inner call does.
        stage : str, optional
            What the job does now ("on tpu", say), shown after the job's bar from now on;
            the job's label stays.
        """
        if stage is not None:
            self.set_stage(stage)
        if self.silent or self._closed:
            yield self
            return
        end = min(self.done + max(float(n), 0.0), float(self.total))
        outer, self._part_end = self._part_end, end
        try:
            yield self
        finally:
            self._part_end = outer
        if end > self.done:
            self._advance(end - self.done)

    def set_description(self, desc: str) -> None:
        """Describe the job from now on (only the job's own bar's description is drawn)."""
        if self.root is not self:
            return
        self.desc = desc
        if self._tqdm is not None:
            self._tqdm.set_description(desc, refresh=False)

    def set_stage(self, stage: str) -> None:
        """What the job does now, shown after the bar (the job's own bar only)."""
        if self.root is not self:
            return
        self._stage = stage
        if self._tqdm is not None and not self._postfix:
            self._tqdm.set_postfix_str(stage, refresh=False)

    def set_postfix(self, values: dict[str, Any]) -> None:
        """Figures shown after the bar (the loss of an epoch, say); the job's own bar only."""
        if self.root is not self:
            return
        self._postfix = dict(values)
        if self._tqdm is not None:
            self._tqdm.set_postfix(self._postfix, refresh=False)

    def close(self) -> None:
        """End this bar: the job's bar is cleared (or left, with ``leave=True``); a joined one leaves its part."""
        if self._closed:
            return
        self._closed = True
        if self._token is not None:
            try:
                _CURRENT.reset(self._token)
            except ValueError:  # closed in another context than it was opened in
                _CURRENT.set(self.parent)
        if self.parent is not None and self.parent._child is self:
            self.parent._child = None
        if self._tqdm is not None:
            self._tqdm.close()

    def __enter__(self) -> Bar:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __repr__(self) -> str:
        role = "job" if self.root is self else "silent" if self.silent else "joined"
        return f"Bar({self.desc!r}, {self.n}/{self.total} {self.unit}, {role})"


def progress_bar(
    total: int,
    *,
    progress: bool | None,
    desc: str,
    unit: str = "it",
    long: bool | None = None,
    leave: bool = False,
) -> Bar:
    """A bar over ``total`` units: the job's ``tqdm.auto`` bar, or one joining the job already open.

    Parameters
    ----------
    total : int
        Units of work the caller counts with :meth:`Bar.update`.
    progress : bool or None
        The caller's ``progress=`` (see :func:`show_progress` and the module's rule).
    desc, unit : str
        Shown by the job's bar.
    long : bool, optional
        The caller's judgement of "long" for ``progress=None``; default ``total >= 10``.
    leave : bool, default=False
        Whether the job's bar stays on screen once closed.

    Returns
    -------
    Bar
        Use it as a context manager (or call :meth:`Bar.close`).
    """
    return Bar(total, progress=progress, desc=desc, unit=unit, long=long, leave=leave)
