"""Does the explanation survive the hardware, and do the methods agree?

:func:`compare_backends` computes one explanation on several backends (by default every
registered backend) and compares each with the fp32 CPU reference; :func:`compare_methods`
compares methods on one backend. Both use the row-wise figures of
:mod:`xai_core.compare.metrics`; their results are in :mod:`xai_core.compare.results`.
"""

from __future__ import annotations

import itertools
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from xai_core.attribution.explainer import Explainer, explain, resolve_method, resolve_target
from xai_core.attribution.explanation import Explanation
from xai_core.backends.base import Backend
from xai_core.compare import metrics
from xai_core.compare.results import BackendComparison, MethodComparison
from xai_core.compare.verdict import judge_noise
from xai_core.errors import CapabilityError, ShapeError, ValidationError
from xai_core.model.base import gradients_on
from xai_core.model.runner import ModelRunner
from xai_core.plugin.resolve import backend_classes, default_methods, explainer_class, get_backend
from xai_core.progress import Bar, count, job_label, progress_bar
from xai_core.validation import check_bool, check_positive_int

__all__ = ["BackendComparison", "MethodComparison", "compare_backends", "compare_methods"]

#: Per-row delta figures explainers report in ``meta``; the first one present is used.
DELTA_KEYS = ("convergence_delta", "additivity_error")


def _row_delta(e: Explanation) -> np.ndarray:
    for key in DELTA_KEYS:
        value = e.meta.get(key)
        if value is not None and np.shape(value) == (len(e),):
            return np.abs(np.asarray(value, dtype=np.float64))
    return np.full(len(e), np.nan)


def _explanation_counters(runner: ModelRunner, e: Explanation) -> dict[str, float]:
    """The work of an explanation: the runner's counters, or the chunks' summed when it ran in chunks.

    Only the additive counters (:attr:`Backend.COMMON_COUNTERS`) are summed over chunks; ratios
    such as utilisation do not add up.
    """
    chunks = e.meta.get("chunk_counters")
    if not chunks:
        return runner.counters
    return {key: float(sum(c.get(key, 0) for c in chunks)) for key in Backend.COMMON_COUNTERS}


def _power_watts(backend: Backend) -> float | None:
    info = backend.describe()
    if info.get("power_w"):
        return float(info["power_w"])
    if info.get("peak_tops") and info.get("tops_per_watt"):
        return float(info["peak_tops"]) / float(info["tops_per_watt"])
    return None


def _registered_backends(reference: Any) -> tuple[list[Any], dict[str, str]]:
    """Every registered backend that builds with its defaults, and why the others do not."""
    chosen: list[Any] = []
    skipped: dict[str, str] = {}
    for name, cls in backend_classes().items():
        if isinstance(reference, str) and name == reference:
            continue
        try:
            chosen.append(cls())
        except Exception as exc:  # noqa: BLE001 - a third party's backend may need settings
            skipped[name] = f"cannot build with its defaults: {type(exc).__name__}: {exc}"
    return chosen, skipped


def _backend_list(backends: Sequence[Any], reference: Any) -> list[tuple[str, Backend]]:
    """(label, backend) pairs, the reference first; a repeated name gets a ``#2`` suffix."""
    ref = get_backend(reference)
    pairs = [(ref.name, ref)]
    for b in backends:
        if isinstance(b, str) and b == ref.name and isinstance(reference, str):
            continue  # the reference itself, named again
        backend = get_backend(b)
        labels = {label for label, _ in pairs}
        label, i = backend.name, 2
        while label in labels:
            label, i = f"{backend.name}#{i}", i + 1
        pairs.append((label, backend))
    return pairs


def _compared_backends(
    backends: Sequence[Any] | None, reference: Any
) -> tuple[list[tuple[str, Backend]], dict[str, str]]:
    """(label, backend) pairs, the reference first, and the registered backends left out (why)."""
    skipped: dict[str, str] = {}
    if backends is None:
        backends, skipped = _registered_backends(reference)
    elif isinstance(backends, (str, Backend)) or not len(backends):
        raise ValidationError(
            "backends must be a non-empty sequence of backend names or instances, or None for "
            f"every registered backend; got {backends!r}."
        )
    return _backend_list(backends, reference), skipped


def _check_quantized(quantized: Any, model: Any) -> Any:
    """``quantized`` as an int8 model of ``model``'s input shape, or None when not given."""
    if quantized is None:
        return None
    from xai_core.importers.direct import import_model

    quantized = import_model(quantized)
    if not quantized.is_quantized:
        raise ValidationError(f"quantized must be an int8 model; got {quantized!r}.")
    if tuple(quantized.input_shape or ()) != tuple(model.input_shape or ()):
        raise ShapeError(
            f"quantized takes inputs of shape {quantized.input_shape}, model of shape "
            f"{model.input_shape}; they must be the same network's."
        )
    return quantized


def _quantize(model: Any, calibration: Any) -> Any:
    """``model`` quantised to int8 on ``calibration``, for the int8-only backends."""
    from xai_core.int8.quantize import quantize

    return quantize(model, calibration, progress=False)


def _skip_reason(model: Any, backend: Backend, requires: frozenset[str]) -> str | None:
    if "gradient" in requires and not gradients_on(model, backend):
        missing = getattr(model, "missing_backward", None)
        if model.is_quantized and missing:
            return (
                "the method needs gradients and the int8 model has operators without a "
                f"straight-through backward rule: {', '.join(missing)}"
            )
        return f"the method needs gradients and {backend.name} is inference only"
    if {"gradient", "activations"} <= requires and "straight_through" in model.capabilities:
        return (
            "the method needs hidden layers' gradients; an int8 model's straight-through "
            "gradients are its input's only"
        )
    if not model.runs_on_backend and not backend.runs_black_boxes:
        return "a black-box model runs on the host; only native networks run on simulated hardware"
    return None


@dataclass
class _Run:
    """One backend's explanation, its predicted classes and what the hardware counted."""

    explanation: Explanation
    prediction: np.ndarray
    costs: dict[str, Any]


def _run_on(
    model: Any,
    backend: Backend,
    X: np.ndarray,
    method: type[Explainer],
    target: np.ndarray,
    **explain_options: Any,
) -> _Run:
    """Predict and explain ``X`` on ``backend``, counting inference and explanation apart."""
    runner = ModelRunner(model, backend)
    runner.reset_counters()
    prediction = np.argmax(runner.predict(X), axis=1)
    inference = runner.counters
    runner.reset_counters()
    e = explain(runner, X, method=method, target=target, **explain_options)
    costs = {
        "inference": inference,
        "explanation": _explanation_counters(runner, e),
        "power_w": _power_watts(backend),
    }
    return _Run(e, prediction, costs)


def _seed_noise(
    model: Any,
    backend: Backend,
    X: np.ndarray,
    reference: Explanation,
    method: type[Explainer],
    target: np.ndarray,
    k: int,
    n_seeds: int,
    options: dict[str, Any],
    bar: Bar,
    **explain_options: Any,
) -> Any:
    """The reference's agreement with itself under ``n_seeds - 1`` other seeds, one row per (seed, row)."""
    import pandas as pd

    seed0 = options.get("seed", 0)
    tables = []
    for j in range(1, n_seeds):
        with bar.part(len(X), stage=f"on {backend.name}, seed {seed0 + j}"):
            rerun = explain(
                ModelRunner(model, backend),
                X,
                method=method,
                target=target,
                **explain_options,
                **{**options, "seed": seed0 + j},
            )
        tables.append(
            metrics.agreement(reference.values, rerun.values, k).assign(
                seed=seed0 + j, row=np.arange(len(X))
            )
        )
    return pd.concat(tables, ignore_index=True)


def _seed_spread(noise: Any) -> np.ndarray:
    """Per row, the largest ``max_rel_diff`` of the reference with itself over the other seeds.

    ``noise`` is a seed-noise table (one row per (seed, row)); the result has shape (n_rows,).
    """
    return noise.groupby("row")["max_rel_diff"].max().to_numpy()


def _agreement_rows(
    runs: dict[str, _Run],
    reference: str,
    k: int,
    seed_spread: np.ndarray | None,
    formats: Mapping[str, str],
) -> Any:
    """One row per (backend, sample): agreement with the reference, flips, delta, beyond noise.

    Noise is decided by :func:`~xai_core.compare.verdict.judge_noise`: the rounding of the
    coarser number format (``formats``), or the method's own ``seed_spread`` (shape
    (n_rows,)) when larger.
    """
    import pandas as pd

    ref = runs[reference]
    ref_format = formats.get(reference, "fp32")
    tables = []
    for name, run in runs.items():
        table = metrics.agreement(ref.explanation.values, run.explanation.values, k)
        table.insert(0, "row", np.arange(len(run.prediction)))
        table.insert(0, "backend", name)
        table["prediction"] = run.prediction
        table["reference_prediction"] = ref.prediction
        table["flipped"] = run.prediction != ref.prediction
        table["delta"] = _row_delta(run.explanation)
        tables.append(judge_noise(table, formats.get(name, "fp32"), ref_format, seed_spread))
    return pd.concat(tables, ignore_index=True)


def _summary(rows: Any, runs: dict[str, _Run]) -> Any:
    """One row per backend: agreement figures and the cost of inference and explanation."""
    summary = rows.groupby("backend", sort=False).agg(
        mean_cosine=("cosine", "mean"),
        min_cosine=("cosine", "min"),
        mean_top_k_overlap=("top_k_overlap", "mean"),
        mean_spearman=("spearman", "mean"),
        max_abs_diff=("max_abs_diff", "max"),
        max_rel_diff=("max_rel_diff", "max"),
        flipped=("flipped", "sum"),
        beyond_noise=("beyond_noise", "sum"),
        mean_delta=("delta", "mean"),
    )
    for name, run in runs.items():
        power = run.costs["power_w"]
        for phase in ("inference", "explanation"):
            counted = run.costs[phase]
            seconds = counted.get("est_seconds", np.nan)
            summary.loc[name, f"{phase}_cycles"] = counted.get("cycles", np.nan)
            summary.loc[name, f"{phase}_est_seconds"] = seconds
            summary.loc[name, f"{phase}_energy_j"] = seconds * power if power else np.nan
    return summary


def compare_backends(
    model: Any,
    X: Any,
    method: str = "auto",
    backends: Sequence[Any] | None = None,
    *,
    reference: Any = "cpu",
    target: Any = None,
    k: int = 10,
    n_seeds: int = 1,
    calibration: Any = None,
    quantized: Any = None,
    executor: Any = None,
    chunk_size: int | None = None,
    **options: Any,
) -> BackendComparison:
    """The same explanation on each backend, compared with the reference (fp32 CPU).

    Parameters
    ----------
    model : Model, torch.nn.Module, keras.Model, str, path, estimator or callable
        Imported once as :func:`xai_core.explain` imports it
        (:func:`xai_core.import_model`). A native network runs on every backend; on ``edgetpu`` its int8 quantisation
        (``xai.quantize(model, calibration)``) runs. A black box runs on the host only.
    X : array-like of shape (n_samples, *input_shape), or texts
        Texts (with ``tokenizer=`` among the options), or token ids of a network whose
        input an :class:`~xai_core.nn.Embedding` reads: explained on each backend as
        :func:`xai_core.explain` explains texts (``docs/text.md``), the reference's
        predicted class the target of all; the explanations carry the tokens, and
        :meth:`BackendComparison.token_shifts` lists the tokens that moved.
    method : str or Explainer subclass, default="auto"
        A registered explainer; ``"auto"`` picks as :func:`xai_core.explain` does, for the
        model on the reference backend (integrated gradients for a native network, once
        installed). The name is resolved once, here; every backend runs the same class.
        For texts, a text method's name (``"ig"``, ``"saliency"``, ``"gradient_x_input"``,
        ``"smoothgrad"``).
    backends : sequence of str or Backend, optional
        By default every registered backend (``xai.list_backends()``, in registration
        order: a newly installed backend is compared too); one that cannot be built with
        its default settings is listed in ``skipped``.
    reference : str or Backend, default="cpu"
    target : int or array-like of shape (n_samples,), optional
        The explained output per row; by default the reference's predicted class, so
        every backend explains the same output.
    k : int, default=10
        Features compared by the top-k overlap.
    n_seeds : int, default=1
        For methods with a ``seed`` option: reference runs with this many seeds, so that
        a backend's difference counts (``beyond_noise``) only when it exceeds the
        method's own spread. Every difference must also exceed the rounding of the
        backend's number format (:mod:`xai_core.compare.verdict`), the only noise of a
        deterministic method.
    calibration : array-like, optional
        Rows for int8 quantisation; ``X`` by default.
    quantized : Model, str or path, optional
        The int8 model that int8-only backends (``edgetpu``) run: the ``.tflite`` file you
        deployed (its path, or ``xai.from_tflite``'s model) or ``xai.quantize``'s result. By default ``model`` is
        quantised on ``calibration``. Its inputs and outputs must match ``model``'s.
    executor : concurrent.futures.Executor, distributed.Client or "processes", optional
        Run each backend's explanation in chunks there (see :func:`xai_core.explain`).
    chunk_size : int, optional
        Rows per chunk (see :func:`xai_core.explain`).
    **options
        Options of the method.

    Returns
    -------
    BackendComparison
    """
    cls = None if isinstance(method, str) and method == "auto" else explainer_class(method)
    k = check_positive_int(k, "k")
    n_seeds = check_positive_int(n_seeds, "n_seeds")
    from xai_core.importers.direct import import_model
    from xai_core.text.explain import is_texts, reads_ids

    texts = "tokenizer" in options or is_texts(X)
    if not texts:
        model = import_model(model, X)
    pairs, skipped = _compared_backends(backends, reference)
    if texts or reads_ids(model):  # texts and token ids: explain's one text path per backend
        from xai_core.compare.texts import compare_texts

        refused = {"executor": executor, "chunk_size": chunk_size, "calibration": calibration}
        refused["quantized"] = quantized
        return compare_texts(
            model, X, method, pairs, skipped, target=target, k=k, n_seeds=n_seeds,
            refused=refused, **options,
        )  # fmt: skip
    ref_runner = ModelRunner(model, pairs[0][1])
    if cls is None:
        cls = resolve_method(method, ref_runner.capabilities)
    for capability in sorted(cls.requires):
        ref_runner.require(capability)
    X = ref_runner.check_X(X)
    target = resolve_target(ref_runner, X, target)
    parallel = {"executor": executor, "chunk_size": chunk_size}

    runs: dict[str, _Run] = {}
    quantized = _check_quantized(quantized, model)
    noisy = n_seeds > 1 and "seed" in cls.option_names()
    # one bar over every row explained: rows x backends, and x seeds on the reference
    bar = progress_bar(
        len(X) * (len(pairs) + (n_seeds - 1 if noisy else 0)),
        progress=options.get("progress"),
        desc=f"{job_label(cls.name, len(X))} × {count(len(pairs), 'backend')}"
        + (f", {n_seeds} seeds" if noisy else ""),
        unit="row",
        long=False,
    )
    with bar:
        for label, backend in pairs:
            reason = _skip_reason(model, backend, cls.requires)
            run_model = model
            if backend.requires_quantized and not model.is_quantized and model.runs_on_backend:
                if quantized is None:  # a native network, quantised here
                    try:
                        quantized = _quantize(model, X if calibration is None else calibration)
                    except CapabilityError:
                        if reason is None:
                            raise
                if quantized is not None:  # its own gradients may be straight-through
                    run_model = quantized
                    reason = _skip_reason(run_model, backend, cls.requires)
            if reason:
                skipped[label] = reason
                bar.update(len(X))
                continue
            with bar.part(len(X), stage=f"on {label}"):
                runs[label] = _run_on(run_model, backend, X, cls, target, **parallel, **options)

        ref_name = pairs[0][0]
        noise = spread = None
        if noisy:
            ref = runs[ref_name].explanation
            noise = _seed_noise(
                model, pairs[0][1], X, ref, cls, target, k, n_seeds, options, bar, **parallel
            )
            spread = _seed_spread(noise)
    formats = {label: backend.number_format for label, backend in pairs if label in runs}
    rows = _agreement_rows(runs, ref_name, k, spread, formats)
    return BackendComparison(
        method=cls.name,
        reference=ref_name,
        explanations={label: run.explanation for label, run in runs.items()},
        rows=rows,
        summary=_summary(rows, runs),
        skipped=skipped,
        noise=noise,
        options={"k": k, "n_seeds": n_seeds, **options},
        formats=formats,
        notes={
            label: str(run.explanation.meta["gradient"])
            for label, run in runs.items()
            if "gradient" in run.explanation.meta
        },
    )


def compare_methods(
    model: Any,
    X: Any,
    methods: Sequence[str] | None = None,
    *,
    backend: Any = "cpu",
    target: Any = None,
    k: int = 10,
    method_options: Mapping[str, Mapping[str, Any]] | None = None,
    progress: bool | None = None,
    quality: bool = False,
    n_seeds: int = 3,
    quality_options: Mapping[str, Any] | None = None,
) -> MethodComparison:
    """Several methods on the same rows and outputs, compared pairwise.

    Convention: every method's values are its signed attributions of the explained
    output (the target class's output) of each row. The figures are scale-free: cosine
    similarity and Spearman correlation ignore a positive factor between methods (SHAP and
    IG share a scale, the output difference they split; LIME's surrogate weights may not),
    and the top-k overlap ranks by absolute value.

    Parameters
    ----------
    model : Model, torch.nn.Module, keras.Model, str, path, estimator or callable
        Imported once as :func:`xai_core.explain` imports it (:func:`xai_core.import_model`).
    X : array-like of shape (n_samples, *input_shape)
    methods : sequence of str, optional
        Registered explainers, each resolved once, here. By default the explainers that
        declare the ``"compare"`` role (:attr:`xai_core.Explainer.default_for`), in rank
        order: SHAP, LIME and integrated gradients once installed. Methods that the model
        cannot run (gradients on a black box) are skipped, with the reason in ``skipped``.
    backend : str or Backend, default="cpu"
    target : int or array-like of shape (n_samples,), optional
        By default the predicted class, the same for every method.
    k : int, default=10
    method_options : mapping of method name to options, optional
    progress : bool or None, default=None
        One bar over rows x methods (``None``: when a method's work is long); a method's
        own ``progress`` option overrides it for that method.
    quality : bool, default=False
        Also measure how good each explanation is on its own
        (:func:`xai_core.compare.scorecard.quality_table`): complexity, sparseness,
        max-sensitivity, ROAD and, on native networks, model parameter randomisation, in
        ``quality`` (one row per method) and ``randomisation`` (the curves).
    n_seeds : int, default=3
        With ``quality``: runs of each method that has a ``seed`` option; the spread of each
        figure over them is reported beside it (``<figure>_seed_std``).
    quality_options : mapping, optional
        With ``quality``: overrides of :data:`xai_core.compare.scorecard.QUALITY_DEFAULTS`
        (``perturb_radius``, ``n_perturb_samples``, ``road_percentages``, ``road_noise``,
        ``seed``).

    Returns
    -------
    MethodComparison
    """
    import pandas as pd

    if methods is None:
        methods = tuple(default_methods("compare"))
    if isinstance(methods, str) or len(methods) < 2:
        raise ValidationError(f"methods must name at least two methods; got {methods!r}.")
    classes = {m: explainer_class(m) for m in methods}
    k = check_positive_int(k, "k")
    progress = check_bool(progress, "progress", allow_none=True)
    quality = check_bool(quality, "quality")
    n_seeds = check_positive_int(n_seeds, "n_seeds")
    method_options = dict(method_options or {})
    unknown = set(method_options) - set(methods)
    if unknown:
        raise ValidationError(f"method_options names methods not compared: {sorted(unknown)}.")
    runner = ModelRunner(model, backend, example=X)
    X = runner.check_X(X)
    target = resolve_target(runner, X, target)
    explanations: dict[str, Explanation] = {}
    skipped: dict[str, str] = {}
    bar = progress_bar(
        len(X) * len(classes),
        progress=progress,
        desc=f"{count(len(X), 'row')} × {count(len(classes), 'method')}",
        unit="row",
        long=False,
    )
    with bar:
        for name, cls in classes.items():
            missing = sorted(cls.requires - runner.capabilities)
            if missing:
                skipped[name] = (
                    f"needs {', '.join(missing)}, which this model on {runner.backend.name} lacks"
                )
                bar.update(len(X))
                continue
            opts = dict(method_options.get(name, {}))
            if "progress" in cls.option_names():
                opts.setdefault("progress", progress)
            with bar.part(len(X), stage=f"{name} on {runner.backend.name}"):
                explanations[name] = explain(runner, X, method=cls, target=target, **opts)
    if len(explanations) < 2:
        raise ValidationError(f"fewer than two methods could run; skipped: {skipped}.")
    tables = []
    for a, b in itertools.combinations(explanations, 2):
        t = metrics.agreement(explanations[a].values, explanations[b].values, k)
        t.insert(0, "row", np.arange(len(X)))
        t.insert(0, "method_b", b)
        t.insert(0, "method_a", a)
        tables.append(t)
    rows = pd.concat(tables, ignore_index=True)
    names = list(explanations)
    matrices = {}
    for figure in ("cosine", "top_k_overlap", "spearman"):
        m = pd.DataFrame(np.eye(len(names)), index=names, columns=names)
        means = rows.groupby(["method_a", "method_b"])[figure].mean()
        for (a, b), value in means.items():
            m.loc[a, b] = m.loc[b, a] = value
        matrices[figure] = m
    table, curves = None, {}
    if quality:
        from xai_core.compare.scorecard import quality_table

        table, curves = quality_table(
            runner,
            X,
            explanations,
            classes,
            target,
            method_options,
            n_seeds=n_seeds,
            quality_options=quality_options,
        )
    return MethodComparison(
        backend=runner.backend.name,
        explanations=explanations,
        rows=rows,
        matrices=matrices,
        skipped=skipped,
        quality=table,
        randomisation=curves,
    )
