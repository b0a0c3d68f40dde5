"""The table of supported operators, generated from the importers' registries.

``python -m xai_core.importers.operators`` prints it; ``docs/operators.md`` is its output
(a test checks that the page and the registries agree, so the page cannot drift).
"""

from __future__ import annotations

__all__ = ["operators_markdown"]

_HEADER = """# Supported operators

Generated from the importers' registries by `python -m xai_core.importers.operators`; do
not edit by hand (`tests/importers/test_operators_doc.py` checks that this page matches).
A model that uses anything else is refused before anything is built, with one message
naming every unsupported operator in the file.
"""


def _escape(text: str) -> str:
    return text.replace("|", "\\\\|")


def _onnx() -> list[str]:
    from xai_core.importers.onnx_registry import operator_table

    rows = operator_table()
    lines = [
        "## ONNX",
        "",
        f"{len({r['op'] for r in rows})} operators of the default domain, each with the opset "
        "versions its converter implements (`13+`: from 13 on). `Constant` nodes are read "
        "as constants; a node of any operator listed whose inputs are all constants is "
        "evaluated once while importing (onnx's reference implementation), never run.",
        "",
        "| operator | opsets | kind | limits |",
        "|---|---|---|---|",
    ]
    lines += [
        f"| `{r['op']}` | {r['opsets']} | {r['kind']} | {_escape(r['limits']) or '-'} |"
        for r in rows
    ]
    return lines


def _tflite() -> list[str]:
    from xai_core.int8.kernels_float import FLOAT_KERNELS
    from xai_core.int8.kernels_int8 import INT8_KERNELS

    names = sorted({*FLOAT_KERNELS, *INT8_KERNELS}, key=str.upper)
    custom = [n for n in names if not n.isupper()]
    lines = [
        "## TFLite",
        "",
        f"{len(names) - len(custom)} builtin operators and {len(custom)} custom one "
        f"({', '.join(f'`{n}`' for n in custom)}, MediaPipe's), each run by TFLite's own "
        "kernels: int8 (bit-exact against LiteRT's reference kernels) and float32. "
        "`DEQUANTIZE` of a float16 constant, `DENSIFY` of a sparse constant and `SHAPE` (with "
        "`STRIDED_SLICE` and `PACK` of the shapes it gives) are folded into constants when "
        "the file is read.",
        "",
        "| operator | float32 | int8 |",
        "|---|---|---|",
    ]
    mark = {True: "yes", False: "-"}
    return lines + [
        f"| `{n}` | {mark[n in FLOAT_KERNELS]} | {mark[n in INT8_KERNELS]} |" for n in names
    ]


def _keras() -> list[str]:
    from xai_core.importers.keras_import import SUPPORTED_KERAS_LAYERS
    from xai_core.importers.keras_layers import ACTIVATIONS

    lines = ["## Keras", "", f"{len(SUPPORTED_KERAS_LAYERS)} layer classes.", ""]
    lines.append(", ".join(f"`{n}`" for n in SUPPORTED_KERAS_LAYERS))
    lines += ["", "Activations (`activation=` of a layer, or an `Activation` layer):", ""]
    return lines + [", ".join(f"`{n}`" for n in sorted(ACTIVATIONS))]


def operators_markdown() -> str:
    """The page ``docs/operators.md``: every importer's supported operators."""
    parts = [_HEADER.rstrip("\n"), *("\n".join(s) for s in (_onnx(), _tflite(), _keras()) if s)]
    return "\n\n".join(parts) + "\n"


if __name__ == "__main__":  # pragma: no cover - exercised by the docs test
    print(operators_markdown(), end="")
