"""Across packages only public names: no module imports another package's `_` module or name."""

from __future__ import annotations

import ast
from collections.abc import Iterator
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]


def project_modules(repo: Path) -> dict[str, tuple[Path, bool]]:
    """Dotted name -> (file, is a package) for every module of ``xai_core``, the datasets and the plugins."""
    tops = [repo / "xai_core"]
    for folder in ("datasets", "plugins"):
        tops += sorted(p.parent for p in (repo / folder).glob("*/__init__.py"))
    modules = {}
    for top in tops:
        for path in sorted(top.rglob("*.py")):
            parts = list(path.relative_to(top.parent).with_suffix("").parts)
            is_package = parts[-1] == "__init__"
            modules[".".join(parts[:-1] if is_package else parts)] = (path, is_package)
    return modules


def _private(part: str) -> bool:
    return part.startswith("_") and not (part.startswith("__") and part.endswith("__"))


def _imports(tree: ast.AST, package: str, modules: dict) -> Iterator[tuple[int, str, str | None]]:
    """(line, module, name or None) of every import in ``tree``, relative ones resolved."""
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                yield node.lineno, alias.name, None
        elif isinstance(node, ast.ImportFrom):
            module = node.module or ""
            if node.level:
                base = package.split(".")[: len(package.split(".")) - node.level + 1]
                module = ".".join(base + ([module] if module else []))
            for alias in node.names:
                full = f"{module}.{alias.name}"
                yield (
                    (node.lineno, full, None)
                    if full in modules
                    else (node.lineno, module, alias.name)
                )


def cross_package_private_imports(repo: Path) -> list[str]:
    """``path:line: what`` for each import of a ``_`` module or name from another package.

    A module's package is the folder it sits in. Inside one package, modules may use each
    other's private modules and names; from anywhere else (a sub-package, the parent, a
    sibling package, a plugin) only public ones.
    """
    modules = project_modules(repo)
    tops = {name.split(".")[0] for name in modules}
    found = []
    for name, (path, is_package) in modules.items():
        package = name if is_package else name.rpartition(".")[0]
        for line, module, attr in _imports(ast.parse(path.read_text()), package, modules):
            parts = module.split(".")
            if parts[0] not in tops:
                continue  # another distribution: not this rule's business
            owner = next(
                (".".join(parts[:i]) for i, part in enumerate(parts) if _private(part)), None
            )
            what = f"module {module}"
            if owner is None and attr is not None and _private(attr):
                owner = (
                    module if modules.get(module, (None, False))[1] else module.rpartition(".")[0]
                )
                what = f"{attr} from {module}"
            if owner is not None and owner != package:
                found.append(f"{path.relative_to(repo).as_posix()}:{line}: imports {what}")
    return list(dict.fromkeys(found))  # one line per import, whatever it names


def test_no_private_import_across_packages():
    """xai_core, the datasets and the plugins import only public names from each other's packages."""
    found = cross_package_private_imports(REPO)
    assert found == []


def _write(root: Path, files: dict[str, str]) -> Path:
    for name, text in files.items():
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_text(text)
    return root


def test_the_check_finds_each_kind_of_private_import(tmp_path):
    """Private modules and names from another package are found, inside functions too; siblings' are not."""
    repo = _write(
        tmp_path,
        {
            "xai_core/__init__.py": "from xai_core import _moved\n",
            "xai_core/_moved.py": "",
            "xai_core/report/__init__.py": "from xai_core.report._html import new_id\n",
            "xai_core/report/_html.py": "_hidden = 1\n",
            "xai_core/report/sections.py": "from . import _html\nfrom ._html import _hidden\n",
            "xai_core/compare/__init__.py": "",
            "xai_core/compare/sections.py": (
                "from __future__ import annotations\n"
                "import numpy._core\n"
                "from xai_core.report import new_id\n"
                "from xai_core.report._html import new_id\n"
                "from ..report import _html\n"
                "import xai_core.report._html\n"
                "from xai_core import _moved\n"
                "from xai_core.report.sections import _hidden\n"
            ),
            "datasets/xai_data/__init__.py": "from xai_data._load import load\n",
            "datasets/xai_data/_load.py": "",
            "plugins/xai_x/__init__.py": (
                "from xai_x._own import y\n"
                "def f():\n"
                "    from xai_core.report._html import _hidden\n"
                "    from xai_data import _load\n"
            ),
            "plugins/xai_x/_own.py": "",
        },
    )
    assert cross_package_private_imports(repo) == [
        "xai_core/compare/sections.py:4: imports module xai_core.report._html",
        "xai_core/compare/sections.py:5: imports module xai_core.report._html",
        "xai_core/compare/sections.py:6: imports module xai_core.report._html",
        "xai_core/compare/sections.py:7: imports module xai_core._moved",
        "xai_core/compare/sections.py:8: imports _hidden from xai_core.report.sections",
        "plugins/xai_x/__init__.py:3: imports module xai_core.report._html",
        "plugins/xai_x/__init__.py:4: imports module xai_data._load",
    ]
