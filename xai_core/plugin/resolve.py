"""Names resolved at the top: the names a user passes, turned into the objects they name.

Every call that takes a name enters here once: ``explain(method=, backend=)``,
``ModelRunner(backend=)``, ``get_backend``, ``compare_backends``, ``compare_methods``,
``Report.add`` (which section renders a result) and the ``xai`` command. Each resolves
its names against the session's registry (:func:`~xai_core.plugin.manager.get_registry`)
and hands the objects down: a runner holds a :class:`~xai_core.Backend` instance, an
explanation job an :class:`~xai_core.Explainer` class, and the layers below never look a
name up again.

The defaults the core offers come from what is registered, never from a plugin's name:
``method="auto"`` and the methods :func:`~xai_core.compare_methods` compares are the
explainers that declare themselves a default in :attr:`Explainer.default_for
<xai_core.Explainer.default_for>`; :func:`~xai_core.compare_backends` runs on every
registered backend.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from xai_core.errors import CapabilityError, UnknownNameError

if TYPE_CHECKING:
    from xai_core.attribution.explainer import Explainer
    from xai_core.backends.base import Backend
    from xai_core.plugin.records import CliCommand, ReportSection
    from xai_core.plugin.registry import Registry

__all__ = [
    "backend_class",
    "backend_classes",
    "backends_with",
    "cli_commands",
    "default_explainer",
    "default_methods",
    "explainer_class",
    "explainer_classes",
    "get_backend",
    "get_backend_for",
    "methods_within",
    "owner",
    "plugin_records",
    "report_sections",
]


def _registry() -> Registry:
    from xai_core.plugin.manager import get_registry

    return get_registry()


# -- backends -----------------------------------------------------------------------------


def get_backend(backend: str | Backend = "cpu", **settings: Any) -> Backend:
    """Return a backend instance.

    Parameters
    ----------
    backend : str or Backend, default="cpu"
        A registered name (``"cpu"``, ``"gpu"``, ``"tpu"``, ``"edgetpu"``, or a plugin's)
        or an instance, returned as it is.
    **settings
        Keyword arguments of the backend's constructor (``dtype=``, ``preset=``, ``array=``...).

    Returns
    -------
    Backend

    Raises
    ------
    UnknownNameError
        For a name no plugin registered; the message lists the registered ones.
    CapabilityError
        When ``settings`` are given with an instance.
    """
    from xai_core.backends.base import Backend

    if isinstance(backend, Backend):
        if settings:
            raise CapabilityError(
                f"settings {sorted(settings)} apply to a backend name; got an instance {backend!r}."
            )
        return backend
    return backend_class(backend)(**settings)


def get_backend_for(model: Any, backend: str | Backend = "cpu") -> Backend:
    """:func:`get_backend` for running ``model``: the plain name ``"cpu"`` gives the CPU at
    the model's own precision, so a float64 network runs in float64 unless a backend says
    otherwise (``get_backend("cpu")`` or ``"cpu"`` with settings stay float32).

    Parameters
    ----------
    model : Model
        A model whose ``dtype`` (a network's) is float64 gets ``CPUBackend(dtype="float64")``
        for ``backend="cpu"``; any other model, and any other backend, as :func:`get_backend`.
    backend : str or Backend, default="cpu"
    """
    import numpy as np

    dtype = getattr(model, "dtype", None)  # a network's numpy dtype (a torch module's is not one)
    if isinstance(backend, str) and backend == "cpu" and isinstance(dtype, np.dtype):
        if dtype == np.float64:
            return get_backend("cpu", dtype="float64")
    return get_backend(backend)


def backend_class(name: str) -> type[Backend]:
    """The backend class registered as ``name``; an unknown name lists the known ones."""
    return _registry().backend(name)


def backend_classes() -> dict[str, type[Backend]]:
    """Every registered backend class by name, in registration order (a copy)."""
    return dict(_registry().backends)


def backends_with(capability: str) -> list[str]:
    """Names of the registered backends that can compute ``capability``, sorted.

    Parameters
    ----------
    capability : str
        ``"gradient"`` (backends whose ``supports_gradients`` is true) or any other
        capability (every registered backend).

    Returns
    -------
    list of str
    """
    backends = _registry().backends
    if capability != "gradient":
        return sorted(backends)
    return sorted(n for n, cls in backends.items() if cls.supports_gradients)


# -- explainers ---------------------------------------------------------------------------


def explainer_class(method: str | type[Explainer]) -> type[Explainer]:
    """The explainer class registered as ``method``; a class is returned as it is.

    Raises
    ------
    UnknownNameError
        For a name no plugin registered; the message lists the registered ones.
    """
    from xai_core.attribution.explainer import Explainer

    if isinstance(method, type) and issubclass(method, Explainer):
        return method
    return _registry().explainer(method)


def explainer_classes() -> dict[str, type[Explainer]]:
    """Every registered explainer class by name, in registration order (a copy)."""
    return dict(_registry().explainers)


def methods_within(capabilities: frozenset[str]) -> list[str]:
    """Names of the registered explainers that need no more than ``capabilities``, sorted.

    Parameters
    ----------
    capabilities : frozenset of str
        What a model on a backend offers, e.g. ``frozenset({"predict"})`` for a black box.

    Returns
    -------
    list of str
    """
    return sorted(n for n, cls in _registry().explainers.items() if cls.requires <= capabilities)


def _ranked(role: str) -> list[type[Explainer]]:
    """The registered explainers declaring ``role`` in ``default_for``, by rank then registration."""
    declared = []
    for order, cls in enumerate(_registry().explainers.values()):
        rank = dict(getattr(cls, "default_for", None) or {}).get(role)
        if rank is not None:
            declared.append((rank, order, cls))
    return [cls for _, _, cls in sorted(declared, key=lambda d: (d[0], d[1]))]


def default_explainer(capabilities: frozenset[str]) -> type[Explainer]:
    """The explainer ``method="auto"`` means for a model with ``capabilities`` on its backend.

    With ``"gradient"`` among the capabilities: the best-ranked explainer declaring the
    ``"gradient"`` role (see :attr:`Explainer.default_for <xai_core.Explainer.default_for>`);
    otherwise, or when none declares it, the best-ranked one declaring ``"black_box"``.
    Only explainers whose ``requires`` the capabilities meet are picked.

    Parameters
    ----------
    capabilities : frozenset of str
        What the model on its backend offers (``ModelRunner.capabilities``).

    Returns
    -------
    type
        A registered :class:`~xai_core.Explainer` subclass.

    Raises
    ------
    UnknownNameError
        When no registered explainer is a default for such a model; the message lists
        the registered explainers, to name one instead.
    """
    roles = ("gradient", "black_box") if "gradient" in capabilities else ("black_box",)
    for role in roles:
        for cls in _ranked(role):
            if cls.requires <= capabilities:
                return cls
    raise UnknownNameError("explainer", "auto", list(_registry().explainers))


def default_methods(role: str = "compare") -> list[str]:
    """Names of the registered explainers declaring ``role``, best rank first.

    Parameters
    ----------
    role : {"compare", "gradient", "black_box"}, default="compare"
        ``"compare"``: the methods :func:`~xai_core.compare_methods` compares by default.

    Returns
    -------
    list of str
    """
    return [cls.name for cls in _ranked(role)]


# -- report sections, commands and the plugins themselves ---------------------------------


def report_sections() -> list[ReportSection]:
    """Every registered report section, in registration order."""
    return _registry().report_sections


def cli_commands() -> dict[str, CliCommand]:
    """Every registered ``xai`` sub-command by name."""
    return _registry().cli_commands


def owner(kind: str, name: str) -> str | None:
    """The plugin that registered ``name`` as a ``kind`` (``"backend"``, ``"command"``, ``"report section"``...)."""
    return _registry().owners.get((kind, name))


def plugin_records() -> list[dict[str, Any]]:
    """One record per plugin (:meth:`Registry.plugins <xai_core.plugin.registry.Registry.plugins>`)."""
    return _registry().plugins()
