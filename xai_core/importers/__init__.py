"""Bring users' own models in: from files and frameworks to native networks.

One module (or package) per source; each returns a :class:`~xai_core.model.base.Model`
that every explainer, backend and report section takes unchanged.
"""
