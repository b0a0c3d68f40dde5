"""Attribution: the :class:`~xai_core.attribution.explainer.Explainer` base class, the immutable
:class:`~xai_core.attribution.explanation.Explanation`, :func:`~xai_core.attribution.explainer.explain`
and chunked execution on executors (:mod:`~xai_core.attribution.parallel`).

(The package is not called ``explain`` so that ``xai_core.explain`` stays the function.)
"""
