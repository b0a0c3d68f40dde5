"""Models and where they run: :class:`Model`, :class:`BlackBoxModel`, :func:`as_model` and
:class:`~xai_core.model.runner.ModelRunner` (a model on a backend)."""

from xai_core.model.base import BlackBoxModel, Model, as_model

__all__ = ["BlackBoxModel", "Model", "as_model"]
