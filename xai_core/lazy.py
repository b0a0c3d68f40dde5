"""Public names that import their module on first use (PEP 562), so a package imports fast.

The facade ``xai_core`` and the first-party plugins use it: ``import xai_core`` and ``xai
--help`` (which loads every plugin) import no explainer library. A plugin's ``__init__``
declares its hooks and lets its public names come on first use::

    import xai_core
    from xai_core import hookimpl

    __getattr__, __dir__, __all__ = xai_core.lazy_exports(
        __name__, {"explainer": ["Occlusion"]}, eager=["xai_register_explainers"]
    )


    @hookimpl
    def xai_register_explainers():
        from my_plugin.explainer import Occlusion

        return [Occlusion]
"""

from __future__ import annotations

import importlib
import sys
from collections.abc import Callable, Iterable, Mapping
from typing import Any

__all__ = ["lazy_exports"]


def lazy_exports(
    package: str,
    exports: Mapping[str, Iterable[str]],
    *,
    submodules: Iterable[str] = (),
    eager: Iterable[str] = (),
) -> tuple[Callable[[str], Any], Callable[[], list[str]], list[str]]:
    """The ``__getattr__``, ``__dir__`` and ``__all__`` of a package whose names load on first use.

    Parameters
    ----------
    package : str
        The package's ``__name__``.
    exports : mapping of str to iterable of str
        Submodule (relative to ``package``, dotted) -> the public names it defines. The first
        use of a name imports its submodule; the name is then kept on the package.
    submodules : iterable of str, optional
        Sub-packages reachable as attributes (``xai.nn``) before anyone imports them.
    eager : iterable of str, optional
        Names the package defines itself (its hooks) that belong in ``__all__``.

    Returns
    -------
    __getattr__ : callable
    __dir__ : callable
        The package's own names (pluggy finds hooks through ``dir()``) and the lazy ones.
    __all__ : list of str
        The lazy names, the submodules, then ``eager``.
    """
    where = {name: f"{package}.{sub}" for sub, names in exports.items() for name in names}
    subs = {name: f"{package}.{name}" for name in submodules}

    def __getattr__(name: str) -> Any:
        if name in where:
            value = getattr(importlib.import_module(where[name]), name)
        elif name in subs:
            value = importlib.import_module(subs[name])
        else:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        setattr(sys.modules[package], name, value)
        return value

    def __dir__() -> list[str]:
        return sorted(set(vars(sys.modules[package])) | set(where) | set(subs))

    return __getattr__, __dir__, [*where, *subs, *eager]
