"""Files for other tools: the TensorBoard Projector's, and CSV / JSON for what it lacks.

TensorBoard's Projector reads a ``projector_config.pbtxt`` (protobuf text format) naming a
tensor TSV (one row per line, values separated by tabs, no header) and a metadata TSV (one
line per row; with several columns the first line is a header of column names, with one
column there is no header). It drops lines that are empty after trimming whitespace and
splits on tabs, so cell values have tabs and line breaks replaced by spaces, and a
``row`` column of indices is added when a line would otherwise be blank.
"""

from __future__ import annotations

import csv
import json
import os
import re
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from xai_core import CapabilityError, DataError, ValidationError
from xai_core.files import atomic_write, atomic_write_text
from xai_core.report import encode_png, to_pixels

__all__ = [
    "load_tensorboard",
    "tensorboard_bookmarks",
    "sanitize_cell",
    "write_coordinates_csv",
    "write_neighbors",
    "write_selections",
    "write_tensorboard",
]

CONFIG = "projector_config.pbtxt"
BOOKMARKS = "bookmarks.json"
#: TensorBoard's name of each projection method (``selectedProjection``), and its axis keys.
_TB_METHOD = {"pca": "pca", "tsne": "tsne", "umap": "umap", "custom": "custom", "linear": "custom"}
#: The key under which a record keeps this package's exact state (TensorBoard ignores it).
STATE_KEY = "xaiViewState"
_CELL = re.compile(r"[\t\r\n\v\f\x1c-\x1e\x85\u2028\u2029]")


def sanitize_cell(value: str) -> str:
    """``value`` with tabs and line breaks replaced by spaces (they would split a TSV cell)."""
    return _CELL.sub(" ", value)


def _blank(line: str) -> bool:
    """Whether TensorBoard sees ``line`` as empty: JavaScript's ``trim()`` also strips U+FEFF.

    Python's ``str.strip`` keeps U+FEFF, so a metadata cell of only U+FEFF looked like data
    here while TensorBoard dropped its row and shifted every label after it.
    """
    return not line.replace("\ufeff", "").strip()


def _pbtxt_string(text: str) -> str:
    out = text.replace("\\", "\\\\").replace('"', '\\"')
    return '"' + out.replace("\n", "\\n").replace("\r", "\\r").replace("\t", "\\t") + '"'


def _sprite(images: np.ndarray) -> np.ndarray:
    """Images (n, h, w) in [0, 1] tiled row by row into a square grid, uint8 (TensorBoard sprite)."""
    n, h, w = images.shape
    side = int(np.ceil(np.sqrt(n)))
    if side * max(h, w) > 8192:
        raise ValidationError(
            f"images of shape {images.shape} make a sprite of {side * h} x {side * w} pixels; "
            "TensorBoard accepts at most 8192 x 8192."
        )
    pixels = to_pixels(images)
    grid = np.zeros((side * side, h, w), dtype=np.uint8)
    grid[:n] = pixels
    return grid.reshape(side, side, h, w).transpose(0, 2, 1, 3).reshape(side * h, side * w)


def write_tensorboard(
    directory: str | os.PathLike[str],
    vectors: np.ndarray,
    columns: Mapping[str, Sequence[str]],
    *,
    tensor_name: str = "embedding",
    images: np.ndarray | None = None,
    bookmarks: list[dict[str, Any]] | None = None,
) -> dict[str, Path]:
    """Write ``tensors.tsv``, ``metadata.tsv`` (if any columns), ``sprite.png`` (if images),
    ``bookmarks.json`` (if bookmarks) and ``projector_config.pbtxt`` into ``directory``
    (created if missing).

    Each file is written atomically (:func:`xai_core.files.atomic_write`): on a full disk
    no file is left half-written, and the config, which names the others, comes last.

    Parameters
    ----------
    directory : path
    vectors : ndarray of shape (n_samples, n_features)
        Written with enough digits to read back exactly (9 for float32, 17 for float64).
    columns : mapping of str to sequence of str, each of length n_samples
    tensor_name : str
    images : ndarray of shape (n_samples, height, width), optional
        Grey images in [0, 1], tiled into a sprite.
    bookmarks : list of dict, optional
        TensorBoard ``State`` records (:func:`tensorboard_bookmarks`), named by the
        config's ``bookmarks_path``.

    Returns
    -------
    dict of str to pathlib.Path
        The files written, keyed ``tensors``, ``metadata``, ``sprite``, ``bookmarks``, ``config``.
    """
    out = Path(directory)
    out.mkdir(parents=True, exist_ok=True)
    n = vectors.shape[0]
    written: dict[str, Path] = {}
    fmt = "%.9g" if vectors.dtype == np.float32 else "%.17g"
    written["tensors"] = out / "tensors.tsv"
    atomic_write(
        written["tensors"],
        lambda fh: np.savetxt(fh, vectors, fmt=fmt, delimiter="\t", newline="\n", encoding="utf-8"),
    )
    names = [sanitize_cell(str(c)) for c in columns]
    cells = [[sanitize_cell(str(v)) for v in columns[c]] for c in columns]
    if cells:
        lines = ["\t".join(row) for row in zip(*cells)] if cells else []
        if any(_blank(line) for line in lines) or (len(cells) == 1 and _blank(names[0])):
            names = ["row", *names]
            cells = [[str(i) for i in range(n)], *cells]
            lines = ["\t".join(row) for row in zip(*cells)]
        if len(cells) > 1:
            lines = ["\t".join(names), *lines]
        written["metadata"] = out / "metadata.tsv"
        atomic_write_text(written["metadata"], "\n".join(lines) + "\n")
    body = [
        "embeddings {",
        f"  tensor_name: {_pbtxt_string(tensor_name)}",
        f"  tensor_path: {_pbtxt_string('tensors.tsv')}",
    ]
    if "metadata" in written:
        body.append(f"  metadata_path: {_pbtxt_string('metadata.tsv')}")
    body += [f"  tensor_shape: {n}", f"  tensor_shape: {vectors.shape[1]}"]
    if images is not None:
        written["sprite"] = out / "sprite.png"
        png = encode_png(_sprite(images))
        atomic_write(written["sprite"], lambda fh: fh.write(png))
        body += [
            "  sprite {",
            f"    image_path: {_pbtxt_string('sprite.png')}",
            f"    single_image_dim: {images.shape[2]}",
            f"    single_image_dim: {images.shape[1]}",
            "  }",
        ]
    if bookmarks is not None:
        written["bookmarks"] = out / BOOKMARKS
        atomic_write_text(written["bookmarks"], json.dumps(bookmarks, ensure_ascii=False))
        body.insert(
            4 if "metadata" in written else 3, f"  bookmarks_path: {_pbtxt_string(BOOKMARKS)}"
        )
    body.append("}")
    written["config"] = out / CONFIG
    atomic_write_text(written["config"], "\n".join(body) + "\n")
    return written


def tensorboard_bookmarks(p: Any, states: Sequence[Any]) -> list[dict[str, Any]]:
    """View states as TensorBoard projector ``State`` records (its ``bookmarks.json``).

    Each record has TensorBoard's fields: ``label``, ``selectedProjection`` (``"custom"``
    for ``method="custom"`` and ``"linear"``, with a custom projection's searches in
    ``customXLeftText`` ... ``customYUpText``), ``dataSetDimensions``, the projected coordinates of every
    point in ``projections`` (``{"pca-0": x, "pca-1": y}``; ``linear-x`` / ``linear-y``
    for the custom projection, as TensorBoard names them), ``selectedPoints``,
    ``filteredPoints`` (the search's matches, as TensorBoard's "isolate"), ``cameraDef``
    (orthographic in 2-D; position and target from the pan, zoom as the zoom),
    ``selectedColorOptionName`` and ``selectedLabelOption``; and the exact state under
    :data:`STATE_KEY`, which :func:`load_tensorboard` reads back.

    Parameters
    ----------
    p : Projection
    states : sequence of ViewState

    Returns
    -------
    list of dict
        JSON-ready records, one per state.
    """
    coords = p.coordinates
    if p.method in ("linear", "custom"):
        keys = ["linear-x", "linear-y", "linear-z"][: coords.shape[1]]
    else:
        keys = [f"{p.method}-{j}" for j in range(coords.shape[1])]
    custom = {}
    if p.method == "custom":  # the searches of the Projector's Custom tab
        options = p.meta.get("options", {})
        queries, fields = options.get("axes", [[None, None]] * 2), options.get("axes_fields")
        regex = bool(options.get("axes_regex"))
        names = (("customXLeft", "customXRight"), ("customYDown", "customYUp"))
        for (a, b), (qa, qb) in zip(names, queries, strict=True):
            custom.update({a + "Text": qa or "", a + "Regex": regex, b + "Text": qb or "",
                           b + "Regex": regex})  # fmt: skip
        if isinstance(fields, str):
            custom["customSelectedSearchByMetadataOption"] = fields
    projections = [{k: float(v) for k, v in zip(keys, row, strict=True)} for row in coords.tolist()]
    centre = (coords.min(axis=0) + coords.max(axis=0)) / 2
    span = float(np.max(np.ptp(coords[:, :2], axis=0))) or 1.0
    out = []
    for s in states:
        # The pan in frame pixels (640 x 480, the data's span filling 616) as data units.
        tx = float(centre[0]) - s.pan_x / (616 * s.zoom) * span
        ty = float(centre[1]) + s.pan_y / (616 * s.zoom) * span
        tz = float(centre[2]) if coords.shape[1] == 3 else 0.0
        three = s.dims == 3
        matches = None
        if s.search:
            fields = None if s.search_by is None else [s.search_by]
            try:
                matches = p.search(s.search, regex=s.regex, fields=fields).indices.tolist()
            except (ValidationError, CapabilityError):  # an RE2 pattern, without RE2 here
                matches = None
        record = {
            "label": s.name,
            "isSelected": False,
            "selectedProjection": _TB_METHOD.get(p.method, p.method),
            "dataSetDimensions": [len(p), int(p.vectors.shape[1])],
            "tSNEIteration": _tsne_iteration(p, s),
            "tSNEPerplexity": float(p.meta.get("options", {}).get("perplexity", 0) or 0),
            "tSNELearningRate": 0,
            "tSNEis3d": p.n_components == 3,
            "UMAPIteration": 0,
            "UMAPis3d": p.n_components == 3,
            "pcaComponentDimensions": list(range(p.n_components if three else 2)),
            "projections": projections,
            "selectedPoints": [] if s.selected is None else [int(s.selected)],
            "cameraDef": {
                "orthographic": not three,
                "position": {"x": tx, "y": ty, "z": tz + 3.0 * span / s.zoom},
                "target": {"x": tx, "y": ty, "z": tz},
                "zoom": s.zoom,
            },
            "selectedColorOptionName": "" if s.color_by == "none" else s.color_by,
            "forceCategoricalColoring": False,
            "selectedLabelOption": "" if s.label_by == "none" else s.label_by,
            **custom,
            STATE_KEY: s.to_dict(),
        }
        if matches is not None:
            record["filteredPoints"] = matches
        out.append(record)
    return out


def _tsne_iteration(p: Any, state: Any) -> int:
    """The t-SNE iteration a state shows: its snapshot's, else the run's last."""
    if p.method != "tsne":
        return 0
    if state.frame is not None and p.snapshots is not None:
        return int(p.snapshots[0][state.frame])
    return int(p.meta.get("n_iter", 0))


def _read_bookmarks(path: Path) -> list[dict[str, Any]]:
    """View-state dicts of a TensorBoard ``bookmarks.json``: the exact state where this package
    wrote one, else what TensorBoard's fields say (projection, selection, colour, label)."""
    try:
        records = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise DataError(f"{str(path)!r}: not a readable bookmarks JSON file ({exc}).") from exc
    if not isinstance(records, list):
        raise DataError(f"{str(path)!r}: bookmarks must be a JSON list of states.")
    # "custom" is either of two methods here: such a state loads onto either.
    methods = {"pca": "pca", "tsne": "tsne", "umap": "umap"}
    out = []
    for r in records:
        if not isinstance(r, dict):
            raise DataError(f"{str(path)!r}: each bookmark must be a JSON object.")
        if isinstance(r.get(STATE_KEY), dict):
            out.append(dict(r[STATE_KEY]))
            continue
        picked = r.get("selectedPoints") or []
        cam = r.get("cameraDef") or {}
        zoom = cam.get("zoom", 1.0)
        projected = r.get("projections") or [{}]
        n_comp = 3 if isinstance(projected[0], dict) and len(projected[0]) == 3 else 2
        three = cam.get("orthographic") is False and n_comp == 3
        out.append(
            {
                "name": str(r.get("label", "")),
                "method": methods.get(r.get("selectedProjection"), ""),
                "n_components": n_comp,
                "dims": 3 if three else 2,
                "zoom": float(zoom)
                if isinstance(zoom, (int, float)) and 0.2 <= zoom <= 200
                else 1.0,
                "selected": int(picked[0]) if picked else None,
                "color_by": r.get("selectedColorOptionName") or "none",
                "label_by": r.get("selectedLabelOption") or "none",
            }
        )
    return out


_FIELD = re.compile(r'(\w+)\s*:\s*"((?:[^"\\]|\\.)*)"')


def _unescape(text: str) -> str:
    table = {"n": "\n", "r": "\r", "t": "\t", '"': '"', "\\": "\\", "'": "'"}
    return re.sub(r"\\(.)", lambda m: table.get(m.group(1), m.group(1)), text)


def load_tensorboard(
    path: str | os.PathLike[str], tensor_name: str | None = None
) -> dict[str, Any]:
    """Read back what :func:`write_tensorboard` (or TensorBoard's own tools) wrote.

    Parameters
    ----------
    path : path
        The directory holding ``projector_config.pbtxt``, or the config file itself.
    tensor_name : str, optional
        Which embedding; by default the first.

    Returns
    -------
    dict
        ``tensor_name``, ``vectors`` (ndarray of shape (n_samples, n_features), float64) and
        ``metadata`` (dict of column name to list of str; a single headerless column is
        named ``"label"``, as TensorBoard names it) and ``bookmarks`` (a list of view-state
        dicts, empty without a ``bookmarks_path``; ``ProjectionView.add_bookmarks`` takes
        them).
    """
    path = Path(path)
    config = path / CONFIG if path.is_dir() else path
    if not config.is_file():
        raise DataError(f"{str(config)!r}: no projector config file there.")
    text = config.read_text(encoding="utf-8")
    blocks = re.findall(r"embeddings\s*\{((?:[^{}]|\{[^{}]*\})*)\}", text)
    if not blocks:
        raise DataError(f"{str(config)!r}: no 'embeddings {{ ... }}' block.")
    infos = [
        {k: _unescape(v) for k, v in _FIELD.findall(re.sub(r"\{[^{}]*\}", "", b))} for b in blocks
    ]
    info = infos[0]
    if tensor_name is not None:
        found = [i for i in infos if i.get("tensor_name") == tensor_name]
        if not found:
            from xai_core import UnknownNameError

            raise UnknownNameError("tensor", tensor_name, [i.get("tensor_name", "") for i in infos])
        info = found[0]
    if "tensor_path" not in info:
        raise DataError(f"{str(config)!r}: the embedding has no tensor_path.")
    vectors = np.loadtxt(config.parent / info["tensor_path"], delimiter="\t", ndmin=2)
    metadata: dict[str, list[str]] = {}
    if "metadata_path" in info:
        raw = (config.parent / info["metadata_path"]).read_text(encoding="utf-8")
        lines = [line for line in raw.split("\n") if not _blank(line)]
        if lines and "\t" in lines[0]:
            names = lines[0].split("\t")
            rows = [line.split("\t") for line in lines[1:]]
            metadata = {
                name: [r[j] if j < len(r) else "" for r in rows] for j, name in enumerate(names)
            }
        else:
            metadata = {"label": lines}
    bookmarks = []
    if info.get("bookmarks_path"):
        bookmarks = _read_bookmarks(config.parent / info["bookmarks_path"])
    return {
        "tensor_name": info.get("tensor_name", ""),
        "vectors": vectors,
        "metadata": metadata,
        "bookmarks": bookmarks,
    }


def write_coordinates_csv(
    path: str | os.PathLike[str], coordinates: np.ndarray, columns: Mapping[str, Sequence[str]]
) -> Path:
    """Projected coordinates (n_samples, n_components) with the metadata, one CSV row per point.

    The header is ``index, x, y[, z], <metadata columns>``. Written atomically.
    """
    path = Path(path)
    axes = ["x", "y", "z"][: coordinates.shape[1]] or [f"c{j}" for j in range(coordinates.shape[1])]
    if coordinates.shape[1] > 3:
        axes = [f"c{j}" for j in range(coordinates.shape[1])]
    names = list(columns)

    def fill(fh: Any) -> None:
        writer = csv.writer(fh)
        writer.writerow(["index", *axes, *names])
        values = [columns[c] for c in names]
        writer.writerows(
            [i, *(repr(float(v)) for v in coordinates[i]), *(str(col[i]) for col in values)]
            for i in range(coordinates.shape[0])
        )

    atomic_write_text(path, fill, newline="")
    return path


def write_neighbors(path: str | os.PathLike[str], neighbors: Any) -> Path:
    """A :class:`~xai_projector.Neighbors` as JSON (``.json``) or CSV (any other suffix).

    CSV: one row per (query, rank) with ``index, rank, neighbor, distance``. JSON: the metric,
    k, recall and one record per query. Written atomically.
    """
    path = Path(path)
    if path.suffix.lower() == ".json":
        doc = {
            "metric": neighbors.metric,
            "k": neighbors.k,
            "approximate": neighbors.approximate,
            "recall": neighbors.recall,
            "neighbors": neighbors.to_records(),
        }
        atomic_write_text(path, json.dumps(doc))
        return path
    n, k = neighbors.indices.shape

    def fill(fh: Any) -> None:
        writer = csv.writer(fh)
        writer.writerow(["index", "rank", "neighbor", "distance"])
        writer.writerows(
            (
                int(neighbors.queries[i]),
                r + 1,
                int(neighbors.indices[i, r]),
                repr(float(neighbors.distances[i, r])),
            )
            for i in range(n)
            for r in range(k)
        )

    atomic_write_text(path, fill, newline="")
    return path


def write_selections(
    path: str | os.PathLike[str], selections: Sequence[Any], labels: Sequence[str] | None = None
) -> Path:
    """Selections (bookmarks) as JSON: name, query, indices and, if given, their labels."""
    path = Path(path)
    doc = []
    for s in selections:
        record = s.to_dict()
        if labels is not None:
            record["labels"] = [str(labels[i]) for i in s.indices]
        doc.append(record)
    atomic_write_text(path, json.dumps({"selections": doc}, ensure_ascii=False))
    return path
