"""Options of explainers as data: constraints, aliases, and their one resolution in the core.

An explainer declares, as class data, a constraint per option (:attr:`Explainer.constraints`)
and the other spellings it accepts (:attr:`Explainer.aliases`). :func:`resolve_options`,
called once by :func:`xai_core.explain` before any model call, maps aliases to their
option, rejects unknown names (listing the valid ones) and checks every value given::

    class MyExplainer(xai.Explainer):
        name = "mine"
        constraints = {"steps": Int(minimum=1, also=("auto",)), "seed": Seed()}
        aliases = {"n_steps": Alias("steps", anchor="Captum")}

An alias with ``anchor=`` is another library's spelling of the same computation and is
accepted silently; ``deprecated=True`` marks an old name of this project, which warns.
"""

from __future__ import annotations

import warnings
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import numpy as np

from xai_core.errors import UnknownNameError, ValidationError
from xai_core.validation import check_bool, check_choice, check_float, check_int

if TYPE_CHECKING:
    from xai_core.attribution.explainer import Explainer

__all__ = [
    "Alias",
    "Bool",
    "Choice",
    "Constraint",
    "Float",
    "ImageShape",
    "Int",
    "Progress",
    "Seed",
    "TypeOf",
    "resolve_options",
]


class Constraint:
    """What values an option accepts; :meth:`check` returns the value (normalised) or raises."""

    def check(self, value: Any, name: str) -> Any:
        """Return ``value`` if the option ``name`` accepts it; otherwise raise :class:`ValidationError`."""
        raise NotImplementedError

    def describe(self) -> str:
        """A few words for documentation tables."""
        raise NotImplementedError


def _also(value: Any, also: Sequence[str]) -> bool:
    return isinstance(value, str) and value in also


@dataclass(frozen=True)
class Int(Constraint):
    """An integer ``>= minimum`` (and ``<= maximum``); ``None`` when ``allow_none``; the strings of ``also`` as they are.

    ``over``, given with ``maximum``, maps a value above it to a sentence saying what it
    would cost (the memory, the model rows), appended to the message.
    """

    minimum: int = 1
    allow_none: bool = False
    also: tuple[str, ...] = ()
    maximum: int | None = None
    over: Callable[[int], str] | None = field(default=None, compare=False)

    def check(self, value: Any, name: str) -> Any:
        if _also(value, self.also):
            return value
        words = "".join(f" or {a!r}" for a in self.also)
        try:
            checked = check_int(value, name, self.minimum, allow_none=self.allow_none)
        except ValidationError:
            if not self.also:
                raise
            raise ValidationError(
                f"{name} must be an integer >= {self.minimum}{words}; got {value!r}."
            ) from None
        if checked is not None and self.maximum is not None and checked > self.maximum:
            why = f" {self.over(checked)}" if self.over is not None else ""
            raise ValidationError(
                f"{name} must be an integer from {self.minimum} to {self.maximum:,}{words}; "
                f"got {checked:,}.{why}"
            )
        return checked

    def describe(self) -> str:
        first = f"int >= {self.minimum}"
        if self.maximum is not None:
            first = f"int in [{self.minimum}, {self.maximum:,}]"
        words = [first, *map(repr, self.also)]
        return " or ".join(words + (["None"] if self.allow_none else []))


@dataclass(frozen=True)
class Float(Constraint):
    """A finite number above ``low`` (``>=`` when ``inclusive``), at most ``high``."""

    low: float = 0.0
    inclusive: bool = False
    high: float | None = None
    allow_none: bool = False

    def check(self, value: Any, name: str) -> Any:
        return check_float(
            value,
            name,
            low=self.low,
            inclusive=self.inclusive,
            high=self.high,
            allow_none=self.allow_none,
        )

    def describe(self) -> str:
        text = f"float {'>=' if self.inclusive else '>'} {self.low:g}"
        text += f", <= {self.high:g}" if self.high is not None else ""
        return text + (" or None" if self.allow_none else "")


@dataclass(frozen=True)
class Bool(Constraint):
    """``True`` or ``False`` (or ``None`` when ``allow_none``)."""

    allow_none: bool = False

    def check(self, value: Any, name: str) -> Any:
        return check_bool(value, name, allow_none=self.allow_none)

    def describe(self) -> str:
        return "bool or None" if self.allow_none else "bool"


@dataclass(frozen=True)
class Choice(Constraint):
    """One of the strings ``choices``; instances of ``types`` pass as they are (a callable, say)."""

    choices: tuple[str, ...]
    types: tuple[type, ...] = ()
    allow_none: bool = False

    def check(self, value: Any, name: str) -> Any:
        if (value is None and self.allow_none) or (self.types and isinstance(value, self.types)):
            return value
        return check_choice(value, name, self.choices)

    def describe(self) -> str:
        return " | ".join(self.choices)


@dataclass(frozen=True)
class Seed(Constraint):
    """A non-negative integer or ``None`` (the core then draws one and records it in ``meta["seed"]``)."""

    def check(self, value: Any, name: str) -> Any:
        return check_int(value, name, 0, allow_none=True)

    def describe(self) -> str:
        return "int >= 0 or None"


@dataclass(frozen=True)
class Progress(Constraint):
    """``True``, ``False`` or ``None`` (bars for long work only)."""

    def check(self, value: Any, name: str) -> Any:
        return check_bool(value, name, allow_none=True)

    def describe(self) -> str:
        return "bool or None"


@dataclass(frozen=True)
class ImageShape(Constraint):
    """``(H, W)``, ``(H, W, C)`` or ``(C, H, W)`` of positive integers, or ``None``."""

    def check(self, value: Any, name: str) -> Any:
        if value is None:
            return None
        ok = (
            not isinstance(value, (str, bytes))
            and hasattr(value, "__len__")
            and len(value) in (2, 3)
            and all(
                not isinstance(d, bool) and isinstance(d, (int, np.integer)) and d >= 1
                for d in value
            )
        )
        if not ok:
            raise ValidationError(
                f"{name} must be (height, width), (height, width, channels) or "
                f"(channels, height, width) of positive integers, or None; got {value!r}."
            )
        return tuple(int(d) for d in value)

    def describe(self) -> str:
        return "(H, W), (H, W, C), (C, H, W) or None"


@dataclass(frozen=True)
class TypeOf(Constraint):
    """An instance of ``types`` (or ``None`` when ``allow_none``); ``what`` names them in messages."""

    types: tuple[type, ...]
    what: str
    allow_none: bool = True

    def check(self, value: Any, name: str) -> Any:
        if (value is None and self.allow_none) or isinstance(value, self.types):
            return value
        extra = " or None" if self.allow_none else ""
        raise ValidationError(f"{name} must be {self.what}{extra}; got {value!r}.")

    def describe(self) -> str:
        return self.what + (" or None" if self.allow_none else "")


@dataclass(frozen=True)
class Alias:
    """Another name of option ``name``, declared in an explainer's ``aliases``.

    A user who pastes a shap, lime or Captum call keeps that library's spelling and gets the
    same computation; an old spelling of this project keeps working with a warning.

    Attributes
    ----------
    name : str
        The option it stands for.
    anchor : str, optional
        The library whose spelling it is (``"shap"``, ``"lime"``, ``"Captum"``): accepted
        without a warning, as the same computation.
    deprecated : bool, default=False
        An old name of this project: accepted with a :class:`DeprecationWarning`.
    note : str, default=""
        Why a deprecated name went, added to its warning.
    """

    name: str
    anchor: str | None = None
    deprecated: bool = False
    note: str = field(default="", compare=False)


def resolve_options(
    cls: type[Explainer],
    options: Mapping[str, Any],
    method: str | None = None,
    *,
    kind: str | None = None,
) -> dict[str, Any]:
    """Options of ``cls`` by their own names, aliases resolved and values checked.

    Parameters
    ----------
    cls : Explainer subclass
    options : mapping
        As the caller typed them (aliases allowed).
    method : str, optional
        The ``method=`` name, for messages (default ``cls.name``).
    kind : str, optional
        What an option is, for messages (default ``"option of method '<method>'"``).

    Returns
    -------
    dict
        Only the options given, under their own names, normalised by their constraints.

    Raises
    ------
    UnknownNameError
        A name that is neither an option nor an alias; the message lists the valid ones.
    ValidationError
        A value its constraint rejects, or an option given under two names.
    """
    method = method or cls.name
    kind = kind or f"option of method {method!r}"
    valid = cls.option_names()
    aliases = dict(cls.aliases)
    out: dict[str, Any] = {}
    spelled: dict[str, str] = {}
    for key, value in options.items():
        name = key
        alias = aliases.get(key)
        if alias is not None and key not in valid:
            name = alias.name
            if alias.deprecated:
                warnings.warn(
                    f"{kind} {key!r} is deprecated; use {name}= "
                    f"(same meaning){'. ' + alias.note if alias.note else ''}.",
                    DeprecationWarning,
                    stacklevel=3,
                )
        if name not in valid:
            raise UnknownNameError(kind, key, valid + sorted(aliases))
        if name in out:
            raise ValidationError(
                f"{kind} {name!r} was given twice, as {spelled[name]}= and {key}=; give one of them."
            )
        out[name] = value
        spelled[name] = key
    constraints = {**_COMMON, **cls.constraints}
    for name, value in out.items():
        constraint = constraints.get(name)
        if constraint is not None:
            out[name] = constraint.check(value, name)
    return out


#: The rules every method shares, whether or not its class declares them.
_COMMON: dict[str, Constraint] = {"seed": Seed(), "progress": Progress()}
