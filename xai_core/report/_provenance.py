"""What every report records about where it came from: versions, platform, time, per-result settings."""

from __future__ import annotations

import datetime as _dt
import importlib.metadata
import os
import platform
import sys
from collections.abc import Mapping
from typing import Any

__all__ = [
    "DEPENDENCIES",
    "WALL_CLOCK_KEYS",
    "creation_time",
    "source_date_epoch",
    "without_wall_clock",
    "environment_info",
    "package_versions",
    "explanation_provenance",
]

#: Distributions whose versions every report lists.
DEPENDENCIES: tuple[str, ...] = (
    "xai-core",
    "numpy",
    "scipy",
    "scikit-learn",
    "pandas",
    "shap",
    "lime",
    "ml_dtypes",
    "jinja2",
    "pluggy",
)


def package_versions(names: tuple[str, ...] = DEPENDENCIES) -> dict[str, str]:
    """Installed version of each distribution, or ``"not installed"``."""
    versions = {}
    for name in names:
        try:
            versions[name] = importlib.metadata.version(name)
        except importlib.metadata.PackageNotFoundError:
            versions[name] = "not installed"
    return versions


#: Meta keys that hold wall-clock durations (an explanation's ``seconds``, LIME's
#: ``timings``): left out of a report when ``SOURCE_DATE_EPOCH`` is set, so that it is the
#: same bytes on every run.
WALL_CLOCK_KEYS: frozenset[str] = frozenset({"seconds", "timings"})


def source_date_epoch() -> int | None:
    """``SOURCE_DATE_EPOCH`` as an int (seconds since 1970-01-01 UTC); None when unset or empty.

    The reproducible-builds.org convention: a build that finds it writes this time instead
    of the current one, and nothing else that differs from run to run.

    Raises
    ------
    ValidationError
        If it is set to anything but a non-negative integer (the convention asks a build to
        fail rather than guess).
    """
    raw = os.environ.get("SOURCE_DATE_EPOCH", "").strip()
    if not raw:
        return None
    if not (raw.isascii() and raw.isdigit()):
        from xai_core.errors import ValidationError

        raise ValidationError(
            "the environment variable SOURCE_DATE_EPOCH must be a whole number of seconds "
            f"since 1970-01-01 UTC (such as 1700000000); got {raw!r}."
        )
    return int(raw)


def creation_time() -> str:
    """Now in UTC, ISO 8601 to the second; ``SOURCE_DATE_EPOCH`` (seconds) instead when it is set.

    ``SOURCE_DATE_EPOCH`` is the reproducible-builds convention: with it (and a seed) two
    reports of the same results are the same bytes.
    """
    epoch = source_date_epoch()
    if epoch is not None:
        when = _dt.datetime.fromtimestamp(epoch, _dt.timezone.utc)
    else:
        when = _dt.datetime.now(_dt.timezone.utc)
    return when.isoformat(timespec="seconds")


def without_wall_clock(meta: Mapping[str, Any]) -> Mapping[str, Any]:
    """``meta`` without its :data:`WALL_CLOCK_KEYS` when ``SOURCE_DATE_EPOCH`` is set; else as it is."""
    if source_date_epoch() is None:
        return meta
    return {k: v for k, v in meta.items() if k not in WALL_CLOCK_KEYS}


def environment_info(seed: int | None, created: str | None = None) -> dict[str, Any]:
    """Python, platform, creation time (UTC, ISO 8601; now by default) and the report's seed."""
    return {
        "python": f"{platform.python_implementation()} {sys.version.split()[0]}",
        "platform": platform.platform(),
        "machine": platform.machine(),
        "created": created or creation_time(),
        "report seed": seed,
    }


def backend_numerics(backend: str, meta: Mapping[str, Any]) -> str | None:
    """The backend's numerics: from ``meta`` when recorded, else the registered backend's default."""
    for key in ("numerics", "backend_numerics", "dtype"):
        if meta.get(key) is not None:
            return str(meta[key])
    if not backend:
        return None
    try:
        from xai_core.plugin.resolve import backend_class

        describe = backend_class(backend)().describe()
        return str(describe.get("numerics")) if describe.get("numerics") else None
    except Exception:  # noqa: BLE001 - unknown or unbuildable backend: numerics unknown
        return None


def _summarize(value: Any) -> Any:
    from xai_core.report._summary import summarize

    return summarize(value)


def explanation_provenance(e: Any) -> dict[str, Any]:
    """Method, backend, numerics, seed, options and seconds of one explanation.

    ``seconds`` is None when ``SOURCE_DATE_EPOCH`` is set (see :func:`without_wall_clock`).
    """
    meta = without_wall_clock(e.meta)
    return {
        "method": e.method or None,
        "backend": e.backend or None,
        "numerics": backend_numerics(e.backend, meta),
        "seed": meta.get("seed"),
        "options": None if meta.get("options") is None else _summarize(meta.get("options")),
        "seconds": meta.get("seconds"),
    }
