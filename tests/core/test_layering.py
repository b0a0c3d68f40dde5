"""Imports point down: kernels <- backends <- nn, int8 <- importers, every import read by ``ast``."""

from __future__ import annotations

import ast
from pathlib import Path
from types import ModuleType

import pytest

import xai_core

ROOT = Path(xai_core.__file__).parent

#: The leaf utilities every floor may use.
LEAVES = ("xai_core.errors", "xai_core.validation")
#: What the kernels may import: nothing of the project but the leaves and each other.
KERNELS_MAY_IMPORT = (*LEAVES, "xai_core.kernels")
#: The int8 modules that read native networks (quantisation); the rest is the int8 runtime.
INT8_CONVERTER = ("xai_core.int8.convert", "xai_core.int8.quantize")
#: Everything above the backends (the plugin markers in ``plugin.hookspecs`` are below them).
ABOVE_BACKENDS = (
    "xai_core.model",
    "xai_core.plugin.manager",
    "xai_core.plugin.registry",
    "xai_core.nn",
    "xai_core.int8",
    "xai_core.importers",
    "xai_core.attribution",
    "xai_core.compare",
    "xai_core.report",
    "xai_core.cli",
    "xai_core.testing",
    "xai_core.widgets",
)

#: Package (or module) -> what no module in it may import.
MUST_NOT_IMPORT = {
    "xai_core.backends": ABOVE_BACKENDS,
    "xai_core.nn": ("xai_core.importers", *INT8_CONVERTER),
    "xai_core.int8": ("xai_core.importers",),
    # int8's models are Model subclasses, so the model interface is below the importers; the
    # one conversion that imports users' models is xai_core.importers.direct.import_model.
    "xai_core.model.base": ("xai_core.importers", "xai_core.int8"),
    "xai_core.model.frameworks": ("xai_core.importers", "xai_core.int8"),
}

#: Imports against the arrows that are there on purpose: (module, what it imports) -> why.
KNOWN_UPWARD: dict[tuple[str, str], str] = {}


def _under(name: str, prefixes: tuple[str, ...]) -> bool:
    return any(name == p or name.startswith(p + ".") for p in prefixes)


def _modules() -> dict[str, Path]:
    """Every module of xai_core by dotted name."""
    out = {}
    for path in sorted(ROOT.rglob("*.py")):
        parts = path.relative_to(ROOT.parent).with_suffix("").parts
        if parts[-1] == "__init__":
            parts = parts[:-1]
        out[".".join(parts)] = path
    return out


def _facade(name: str) -> str:
    """What ``from xai_core import name`` imports: a subpackage, or the module that defines the name."""
    obj = getattr(xai_core, name, None)
    if isinstance(obj, ModuleType):
        return obj.__name__
    module = getattr(obj, "__module__", None)
    return module if isinstance(module, str) and _under(module, ("xai_core",)) else "xai_core"


def imports_of(source: str, module: str, is_package: bool = False) -> set[str]:
    """Every xai_core module ``source`` imports: at the top, inside functions, under
    ``TYPE_CHECKING``, and by ``importlib.import_module("...")`` with a literal name."""
    package = module if is_package else module.rpartition(".")[0]
    found: set[str] = set()
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                parts = package.split(".")[: len(package.split(".")) - node.level + 1]
                base = ".".join([*parts, base] if base else parts)
            if base == "xai_core":
                found.update(_facade(alias.name) for alias in node.names)
            else:
                found.add(base)
        elif (
            isinstance(node, ast.Call)
            and getattr(node.func, "attr", getattr(node.func, "id", None)) == "import_module"
            and node.args
            and isinstance(node.args[0], ast.Constant)
            and isinstance(node.args[0].value, str)
        ):
            found.add(node.args[0].value)
    return {m for m in found if _under(m, ("xai_core",))}


def _graph() -> dict[str, set[str]]:
    return {
        name: imports_of(path.read_text(encoding="utf-8"), name, path.name == "__init__.py")
        for name, path in _modules().items()
    }


GRAPH = _graph()


def _violations(modules, forbidden) -> list[str]:
    """What ``modules`` import from ``forbidden`` or from the facade ``xai_core`` itself."""
    return sorted(
        f"{m} imports {target}"
        for m in modules
        for target in GRAPH[m]
        if (target == "xai_core" or _under(target, forbidden)) and (m, target) not in KNOWN_UPWARD
    )


def test_the_walk_reads_every_kind_of_import():
    """Top-level, relative, function-level, facade and import_module imports are all found."""
    source = (
        "from __future__ import annotations\n"
        "import xai_core.kernels.scratch\n"
        "from . import conv_ops\n"
        "from xai_core import nn, quantize\n"
        "def f():\n"
        "    from xai_core.importers.tflite import reader\n"
        "    importlib.import_module('xai_core.report')\n"
    )
    found = imports_of(source, "xai_core.kernels.im2col")
    assert found == {
        "xai_core.kernels.scratch",
        "xai_core.kernels",
        "xai_core.nn",
        "xai_core.int8.quantize",
        "xai_core.importers.tflite",
        "xai_core.report",
    }
    assert {"xai_core.kernels.im2col", "xai_core.int8.convert", "xai_core.backends.cpu"} <= set(
        GRAPH
    )


def test_kernels_import_only_the_leaf_utilities():
    """No kernel imports nn, backends, int8, importers, model or anything else of the project."""
    bad = sorted(
        f"{m} imports {target}"
        for m in GRAPH
        if _under(m, ("xai_core.kernels",))
        for target in GRAPH[m]
        if not _under(target, KERNELS_MAY_IMPORT)
    )
    assert bad == []


@pytest.mark.parametrize("package", sorted(MUST_NOT_IMPORT))
def test_no_package_imports_a_floor_above_it(package):
    """backends never import nn, int8 or importers; nn, int8 and the model interface never import importers."""
    modules = [m for m in GRAPH if _under(m, (package,))]
    assert modules
    assert _violations(modules, MUST_NOT_IMPORT[package]) == []


def test_the_int8_runtime_reads_no_network():
    """Only int8's converter modules import nn, so nn may load a saved int8 model without a cycle."""
    runtime = [m for m in GRAPH if _under(m, ("xai_core.int8",)) and m not in INT8_CONVERTER]
    assert "xai_core.int8.model" in runtime and "xai_core.int8.quantized" in runtime
    assert _violations(runtime, ("xai_core.nn", *INT8_CONVERTER)) == []


def test_the_known_upward_imports_are_still_there():
    """An exception that is no longer needed is removed from KNOWN_UPWARD."""
    assert [key for key in KNOWN_UPWARD if key[1] not in GRAPH.get(key[0], ())] == []
