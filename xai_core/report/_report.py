"""Report: results rendered into one self-contained, offline HTML file."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from markupsafe import Markup

from xai_core.errors import PluginError, UnknownNameError, ValidationError
from xai_core.files import atomic_write
from xai_core.plugin.records import ReportSection
from xai_core.report._html import (
    asset,
    environment,
    id_scope,
    isolate,
    new_id,
    scoped_css,
    script_hash,
)
from xai_core.report._provenance import (
    creation_time,
    environment_info,
    explanation_provenance,
    package_versions,
)

__all__ = ["Report", "find_section", "render_fragment"]


def _type_name(t: type | tuple[type, ...]) -> str:
    if isinstance(t, tuple):
        return " | ".join(_type_name(x) for x in t)
    return getattr(t, "__qualname__", repr(t))


def find_section(result: Any) -> ReportSection:
    """The first registered report section whose ``result_type`` matches ``result``.

    Raises
    ------
    UnknownNameError
        No section renders ``result``'s type; the message lists the types that have one.
    """
    from xai_core.plugin.resolve import report_sections

    sections = report_sections()
    for section in sections:
        if section.handles(result):
            return section
    known = [f"{_type_name(s.result_type)} (section {s.name!r})" for s in sections]
    raise UnknownNameError("report section for result type", type(result).__qualname__, known)


def _owner(section: ReportSection) -> str:
    """The plugin that registered ``section`` (its own name for an unregistered one)."""
    from xai_core.plugin.resolve import owner

    return owner("report section", section.name) or section.name


def _render_section(section: ReportSection, result: Any) -> Markup:
    try:
        html = section.render(result)
    except Exception as exc:
        raise PluginError(
            _owner(section),
            f"report section {section.name!r} failed on a {type(result).__qualname__}: {exc}",
        ) from exc
    if not isinstance(html, str):
        raise PluginError(
            _owner(section),
            f"report section {section.name!r} must return an HTML string; got {type(html).__name__}.",
        )
    return Markup(html)  # the section's contract: every user-supplied string already escaped


def _verdict_of(section: ReportSection, result: Any) -> tuple[str, tuple[str, ...]] | None:
    """(sentence, lines) of ``section.verdict(result)``, or None when it has none."""
    try:
        verdict = section.verdict(result)
    except Exception as exc:
        raise PluginError(
            _owner(section),
            f"report section {section.name!r}'s verdict failed on a "
            f"{type(result).__qualname__}: {exc}",
        ) from exc
    if verdict is None:
        return None
    if isinstance(verdict, str):
        return verdict, ()
    sentence, lines = getattr(verdict, "sentence", None), getattr(verdict, "lines", None)
    if not isinstance(sentence, str) or isinstance(lines, str) or lines is None:
        raise PluginError(
            _owner(section),
            f"report section {section.name!r}'s verdict must return None, a str or an object "
            f"with a str sentence and a sequence of str lines; got {type(verdict).__name__}.",
        )
    return sentence, tuple(str(line) for line in lines)


def _default_title(section: ReportSection, result: Any) -> str:
    base = section.title or section.name
    method, backend = getattr(result, "method", None), getattr(result, "backend", None)
    if isinstance(method, str) and isinstance(backend, str) and (method or backend):
        return f"{base}: {isolate(method or '?')} on {isolate(backend or '?')}"
    name = getattr(result, "name", None)
    if isinstance(name, str) and name:
        return f"{base}: {isolate(name)}"
    backend_name = getattr(backend, "name", None)
    if isinstance(backend_name, str):
        return f"{base}: {isolate(backend_name)}"
    return base


def _result_record(section: ReportSection, result: Any, title: str) -> dict[str, Any]:
    record: dict[str, Any] = {
        "title": title,
        "section": section.name,
        "type": type(result).__qualname__,
    }
    from xai_core.attribution.explanation import Explanation

    if isinstance(result, Explanation):
        record.update(explanation_provenance(result))
    return record


def _body(
    entries: list[tuple[ReportSection, Any, str]],
    title: str | None,
    seed: int | None,
    with_provenance: bool,
    inline_css: bool,
    created: str | None = None,
) -> tuple[str, str]:
    """The report's root element and the scope class of its style sheet."""
    env = environment()
    uid = new_id("report")
    scope = f"xai-scope-{uid}"
    sections, verdicts = [], []
    for section, result, section_title in entries:
        sections.append(
            {
                "id": new_id("section"),
                "name": section.name,
                "title": section_title,
                "html": _render_section(section, result),
            }
        )
        verdict = _verdict_of(section, result) if title is not None else None
        if verdict is not None:
            verdicts.append(
                {
                    "id": sections[-1]["id"],
                    "title": section_title,
                    "sentence": verdict[0],
                    "lines": verdict[1],
                }
            )
    provenance = Markup("")
    provenance_id = new_id("provenance")
    if with_provenance:
        info = environment_info(seed, created)
        versions = package_versions()
        records = [_result_record(s, r, t) for s, r, t in entries]
        columns = ["#", "title", "section", "method", "backend", "numerics", "seed", "seconds"]
        rows = [
            [{"text": str(i), "sort": i}]
            + [
                {"text": "–" if rec.get(c) is None else str(rec.get(c)), "sort": None}
                for c in columns[1:]
            ]
            for i, rec in enumerate(records, 1)
        ]
        provenance = Markup(
            env.get_template("provenance.html.j2").render(
                uid=provenance_id,
                environment_rows=[(k, "none" if v is None else str(v)) for k, v in info.items()],
                table={
                    "columns": ["package", "version"],
                    "rows": [
                        [{"text": k, "sort": None}, {"text": v, "sort": None}]
                        for k, v in versions.items()
                    ],
                    "note": "",
                },
                results={"columns": columns, "rows": rows, "note": ""},
                data={"environment": info, "versions": versions, "results": records},
            )
        )
    section_scripts = [Markup(js) for js in _section_scripts(entries)]
    body = env.get_template("body.html.j2").render(
        section_scripts=section_scripts,
        uid=uid,
        scope=scope,
        title=title,
        sections=sections,
        verdicts=verdicts,
        provenance=provenance,
        provenance_id=provenance_id,
        inline_css=inline_css,
        css=scoped_css(scope) if inline_css else "",
        js=Markup(asset("report.js")),
    )
    return body, scope


def _section_scripts(entries: list[tuple[ReportSection, Any, str]]) -> list[str]:
    """The distinct scripts of the sections used, in order of first use."""
    return list(dict.fromkeys(section.script for section, _, _ in entries if section.script))


def _batched(result: Any) -> Any:
    """An explanation's one row or feature (``e[0]``, ``e[:, "age"]``) as a batch; else ``result``."""
    from xai_core.attribution.explanation import Explanation

    return result.as_batch() if isinstance(result, Explanation) else result


def render_fragment(result: Any, title: str | None = None) -> str:
    """One result as a self-contained HTML fragment, for ``_repr_html_`` in notebooks.

    The fragment carries its own style sheet scoped under a class unique to this render,
    unique element ids, its data as JSON and the small script (which touches only this
    fragment and is optional: everything is rendered without it).
    """
    result = _batched(result)
    section = find_section(result)
    entry = (section, result, title or _default_title(section, result))
    body, _ = _body([entry], None, None, with_provenance=False, inline_css=True)
    return body


class Report:
    """Results rendered into one self-contained HTML file: no network, readable offline.

    Parameters
    ----------
    title : str
        The page title and heading.
    seed : int, optional
        Seeds the element ids, so every render of the report is the same bytes (the
        creation time is taken when the report is made; set ``SOURCE_DATE_EPOCH`` to fix
        it across reports too); it is recorded in the provenance. By default ids are random.

    Examples
    --------
    >>> r = xai.Report("MNIST on three backends")
    >>> r.add(e_cpu).add(e_tpu, title="bf16 on the TPU")
    >>> r.save("report.html")
    """

    def __init__(self, title: str = "xai-core report", *, seed: int | None = None) -> None:
        if not isinstance(title, str):
            raise ValidationError(f"title must be a str; got {type(title).__name__}.")
        if seed is not None and (isinstance(seed, bool) or not isinstance(seed, int) or seed < 0):
            raise ValidationError(f"seed must be a non-negative int or None; got {seed!r}.")
        self.title = title
        self.seed = seed
        self.created = creation_time()
        self._entries: list[tuple[ReportSection, Any, str]] = []

    def add(self, result: Any, title: str | None = None) -> Report:
        """Add a result as one section; returns the report, so calls chain.

        Parameters
        ----------
        result : object
            Anything a registered report section renders: an :class:`~xai_core.Explanation`,
            a dataset, a ``ModelRunner`` / ``Backend`` / mapping of counters, a pandas
            DataFrame, or a plugin's result type.
        title : str, optional
            The section heading; by default the section's title with the method and backend
            or the result's name.

        Raises
        ------
        UnknownNameError
            No section renders ``result``'s type (the message lists those that have one).
        """
        if title is not None and not isinstance(title, str):
            raise ValidationError(f"title must be a str or None; got {type(title).__name__}.")
        result = _batched(result)
        section = find_section(result)
        self._entries.append((section, result, title or _default_title(section, result)))
        return self

    def __len__(self) -> int:
        return len(self._entries)

    @property
    def sections(self) -> list[tuple[str, str]]:
        """(section name, title) of each added result, in order."""
        return [(s.name, t) for s, _, t in self._entries]

    def to_html(self) -> str:
        """The whole report as one HTML document (UTF-8 text)."""
        with id_scope(self.seed):
            body, scope = self._body(inline_css=False)
        scripts = [asset("report.js"), *_section_scripts(self._entries)]
        csp = (
            "default-src 'none'; img-src data:; style-src 'unsafe-inline'; "
            f"script-src {' '.join(script_hash(js) for js in scripts)}; base-uri 'none'; "
            "form-action 'none'"
        )
        from xai_core import __version__

        return (
            environment()
            .get_template("page.html.j2")
            .render(
                csp=csp,
                version=__version__,
                title=self.title,
                css=scoped_css(scope),
                body=Markup(body),
            )
        )

    def save(self, path: str | os.PathLike[str]) -> Path:
        """Write :meth:`to_html` to ``path`` atomically (a temporary file, then a rename).

        Returns
        -------
        pathlib.Path
            The path written.
        """
        path = Path(path)
        if path.is_dir():
            raise ValidationError(f"path must be a file path; got the directory {str(path)!r}.")
        text = self.to_html()
        return atomic_write(path, lambda fh: fh.write(text.encode("utf-8")))

    def _repr_html_(self) -> str:
        """The report's body for a notebook cell (scoped style, unique ids, provenance)."""
        return self._body(inline_css=True)[0]

    def _body(self, inline_css: bool) -> tuple[str, str]:
        return _body(self._entries, self.title, self.seed, True, inline_css, created=self.created)

    def __repr__(self) -> str:
        return f"Report({self.title!r}, sections={len(self)})"
