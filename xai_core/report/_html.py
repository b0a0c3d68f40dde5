"""The rendering toolkit: Jinja2 environments, element ids, safe JSON for script blocks, numbers.

Every report section, built-in or a plugin's, renders through these: one autoescaping
Jinja2 configuration (:func:`environment`) that also isolates the direction of every
value it prints (:func:`isolate`), ids that follow ``Report(seed=)`` (:func:`new_id`),
JSON that cannot close its ``<script>`` element (:func:`json_for_script`) and one number
format (:func:`format_number`).
"""

from __future__ import annotations

import base64
import contextlib
import contextvars
import hashlib
import itertools
import json
import math
import random
import secrets
import unicodedata
from collections.abc import Iterator, Mapping
from functools import cache
from importlib import resources
from typing import TYPE_CHECKING, Any

import numpy as np
from markupsafe import Markup

if TYPE_CHECKING:
    import jinja2

__all__ = [
    "asset",
    "svg_data_uri",
    "environment",
    "format_number",
    "id_scope",
    "isolate",
    "json_for_script",
    "new_id",
    "plain",
    "script_hash",
    "scoped_css",
]

_COUNTER = itertools.count()
_SEEDED: contextvars.ContextVar[tuple[random.Random, Iterator[int]] | None] = (
    contextvars.ContextVar("xai_report_ids", default=None)
)


@contextlib.contextmanager
def id_scope(seed: int | None) -> Iterator[None]:
    """Within the block, :func:`new_id` is reproducible from ``seed`` (None: random, as outside)."""
    state = None if seed is None else (random.Random(seed), itertools.count())
    token = _SEEDED.set(state)
    try:
        yield
    finally:
        _SEEDED.reset(token)


def new_id(kind: str) -> str:
    """An element id unique per render: ``xai-<kind>-<8 hex digits><counter>``.

    Outside a seeded :func:`id_scope` the hex digits are random and the counter is
    process-wide, so two renders shown in one notebook page never share an id; inside one
    both come from the seed, so the same report renders the same ids in any process.
    """
    state = _SEEDED.get()
    if state is None:
        return f"xai-{kind}-{secrets.randbits(32):08x}{next(_COUNTER)}"
    rng, counter = state
    return f"xai-{kind}-{rng.getrandbits(32):08x}{next(counter)}"


def plain(value: Any) -> Any:
    """``value`` as JSON-ready Python: arrays to lists, non-finite floats to None, keys to str."""
    if isinstance(value, np.ndarray):
        return plain(value.tolist())
    if isinstance(value, np.generic):
        return plain(value.item())
    if isinstance(value, float):
        return value if math.isfinite(value) else None
    if isinstance(value, (bool, int, str)) or value is None:
        return value
    if isinstance(value, Mapping):
        return {str(k): plain(v) for k, v in value.items()}
    if isinstance(value, (list, tuple, set, frozenset)):
        return [plain(v) for v in value]
    if isinstance(value, bytes):
        return base64.b64encode(value).decode("ascii")
    return str(value)


_JSON_ESCAPES = {ord("<"): "\\u003c", ord(">"): "\\u003e", ord("&"): "\\u0026"}
_JSON_ESCAPES.update({0x2028: "\\u2028", 0x2029: "\\u2029"})


#: First Strong Isolate and Pop Directional Isolate: text between them is laid out on its own.
FSI, PDI = "\u2068", "\u2069"
_ISOLATE_OPENERS = frozenset("\u2066\u2067\u2068")  # LRI, RLI, FSI
#: Bidirectional classes that can reorder the text around them: right-to-left letters,
#: Arabic digits and the explicit embeddings, overrides and isolates (U+202A-E, U+2066-9).
_REORDERING = frozenset(
    {"R", "AL", "AN", "LRE", "RLE", "LRO", "RLO", "PDF", "LRI", "RLI", "FSI", "PDI"}
)


def isolate(text: Any) -> str:
    """``text`` as a directional isolate: it cannot reorder the page text around it.

    A name holding a right-to-left override (U+202E) would otherwise reverse everything
    after it up to the end of the paragraph, and Hebrew or Arabic letters pull neighbouring
    punctuation and numbers into their run. Text with such characters is wrapped in FSI ...
    PDI (what ``<bdi>`` does, but valid in attributes, ``<option>``, ``<title>`` and SVG
    text too); the PDI closes every embedding and override opened inside. A PDI in the text
    that would close the wrapper early is dropped, and isolates the text leaves open are
    closed before it. Other text (all of ASCII) is returned as
    it is, so the common case costs one ``str.isascii``; so is text that already is one
    isolate from end to end (``isolate(isolate(s)) == isolate(s)``).

    :func:`environment` applies it to every value a template prints; call it yourself on
    each user string you join into a larger one in Python (``", ".join(map(isolate, names))``).
    """
    s = str(text)
    if s.isascii() or not any(unicodedata.bidirectional(c) in _REORDERING for c in s):
        return s
    depth, kept, enclosed = 0, [], s[0] == FSI
    for i, c in enumerate(s):
        if c in _ISOLATE_OPENERS:
            depth += 1
        elif c == PDI:
            if depth == 0:
                continue  # it would close the wrapper: the rest would leak
            depth -= 1
            enclosed = enclosed and (depth > 0 or i == len(s) - 1)
        kept.append(c)
    if enclosed and depth == 0:  # already one isolate from end to end: as it is
        return "".join(kept)
    return FSI + "".join(kept) + PDI * depth + PDI  # isolates opened inside closed first


def _finalize(value: Any) -> Any:
    """What a template prints: strings isolated (:func:`isolate`), Markup and numbers as they are."""
    if isinstance(value, str) and not hasattr(value, "__html__"):
        return isolate(value)
    return value


def _json_default(value: Any) -> Any:
    if isinstance(value, (np.ndarray, np.generic, bytes, set, frozenset)):
        return plain(value)
    raise TypeError  # anything else: convert the whole value with plain()


def json_for_script(value: Any) -> Markup:
    """JSON safe inside ``<script type="application/json">``.

    ``<``, ``>`` and ``&`` become ``\\u003c``, ``\\u003e`` and ``\\u0026`` (and the two
    Unicode line separators are escaped too), so no string, however hostile, can close
    the script element or open a comment; ``JSON.parse`` gives the original strings back.
    Arrays and numpy numbers become lists and numbers, NaN and infinities ``null``
    (see :func:`plain`); the text is compact (no spaces after separators).
    """
    try:
        text = json.dumps(
            value, ensure_ascii=False, allow_nan=False, separators=(",", ":"), default=_json_default
        )
    except (TypeError, ValueError):  # NaN, infinities, keys that are not str: the slow path
        text = json.dumps(plain(value), ensure_ascii=False, allow_nan=False, separators=(",", ":"))
    return Markup(text.translate(_JSON_ESCAPES))


def format_number(value: Any, digits: int = 4) -> str:
    """A number in ``digits`` significant figures; integers exactly; NaN and None as text."""
    if value is None:
        return "–"
    if isinstance(value, (bool, np.bool_)):
        return str(bool(value))
    if isinstance(value, (int, np.integer)):
        return f"{int(value):,}"
    try:
        f = float(value)
    except (TypeError, ValueError):
        return str(value)
    if math.isnan(f):
        return "NaN"
    return f"{f:.{digits}g}"


@cache
def asset(name: str) -> str:
    """The text of a file in ``xai_core/report/templates`` (package data)."""
    return resources.files("xai_core.report").joinpath("templates", name).read_text("utf-8")


def scoped_css(scope_class: str) -> Markup:
    """The report's style sheet with every rule under ``.<scope_class>.xai-root``.

    Two classes, so the rules outrank a host page's ``th`` / ``td`` / ``table`` rules of one
    class (JupyterLab's ``.jp-RenderedHTMLCommon td``, for example).
    """
    return Markup(asset("report.css").replace("SCOPE", f".{scope_class}.xai-root"))


_SVG_NS = 'xmlns="http://www.w3.org/2000/svg"'


def svg_data_uri(svg: str) -> str:
    """An SVG document as a ``data:image/svg+xml;base64,`` URI, for ``<img src=...>``.

    An SVG drawn as an image survives the HTML sanitisers of untrusted notebooks, which
    drop inline ``<svg>`` (and ``<style>``) but keep ``<img>`` with data URIs; it runs no
    script. The ``xmlns`` is added when missing.
    """
    text = str(svg).strip()
    if text.startswith("<svg") and "xmlns=" not in text[: text.find(">")]:
        text = f"<svg {_SVG_NS}" + text[4:]
    return "data:image/svg+xml;base64," + base64.b64encode(text.encode("utf-8")).decode("ascii")


def script_hash(text: str) -> str:
    """The Content-Security-Policy source (``'sha256-...'``) allowing one inline script."""
    digest = hashlib.sha256(text.encode("utf-8")).digest()
    return f"'sha256-{base64.b64encode(digest).decode('ascii')}'"


def _configure(loader: jinja2.BaseLoader) -> jinja2.Environment:
    import jinja2

    env = jinja2.Environment(
        loader=loader,
        autoescape=True,
        undefined=jinja2.StrictUndefined,
        trim_blocks=True,
        lstrip_blocks=True,
        keep_trailing_newline=False,
        finalize=_finalize,
    )
    env.filters["num"] = format_number
    env.filters["json_script"] = json_for_script
    env.filters["svg_uri"] = svg_data_uri
    return env


@cache
def _core_environment() -> jinja2.Environment:
    import jinja2

    return _configure(jinja2.PackageLoader("xai_core.report", "templates"))


def environment(templates: Mapping[str, str] | None = None) -> jinja2.Environment:
    """The Jinja2 environment every report section renders with.

    Autoescape is on (every value is HTML-escaped unless it is ``Markup``), every printed
    string is a directional isolate (:func:`isolate`: a U+202E in a name cannot reverse the
    text after it), an undefined name is an error, blocks are trimmed, and two filters are defined: ``num``
    (:func:`format_number`) and ``json_script`` (:func:`json_for_script`). The core's
    templates are loaded by name, so a section's own templates can
    ``{% from "macros.html.j2" import kv_table, data_block %}`` and
    ``{% include "table.html.j2" %}``.

    Parameters
    ----------
    templates : mapping of str to str, optional
        A section's own templates, name to source, looked up before the core's. Without
        it the environment is shared and cached; with it a new one is built, so keep it
        (for example in a ``functools.cache``-d function of your module).

    Returns
    -------
    jinja2.Environment
    """
    if templates is None:
        return _core_environment()
    import jinja2

    core = _core_environment().loader
    return _configure(jinja2.ChoiceLoader([jinja2.DictLoader(dict(templates)), core]))
