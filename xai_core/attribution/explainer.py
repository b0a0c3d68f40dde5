"""Explainer: the base class of every attribution method, and ``explain()`` which dispatches to them.

:func:`explain` is the one place where names are resolved (the method, ``"auto"``, the
backend, option aliases) and where arguments and the request's cost are checked, before
any model call; the computation itself is :func:`xai_core.attribution.run.run_explainer`,
in one call here or chunk by chunk (:mod:`xai_core.attribution.parallel`).
"""

from __future__ import annotations

import functools
import inspect
import math
from collections.abc import Mapping
from dataclasses import replace
from typing import Any, ClassVar

import numpy as np

from xai_core.attribution.cost import Cost, check_cost, explainer_cost
from xai_core.attribution.explanation import Explanation
from xai_core.attribution.guard import check_outputs
from xai_core.attribution.options import Alias, Constraint, resolve_options
from xai_core.attribution.parallel import check_parallel, explain_chunked
from xai_core.attribution.run import ExplainJob, read_only, run_explainer
from xai_core.attribution.seeds import resolve_seed, rngs_for_rows, row_seeds
from xai_core.errors import CapabilityError, ShapeError, ValidationError
from xai_core.model.base import gradients_on
from xai_core.model.runner import MAX_BATCH_ROWS, ModelRunner, predicted_class
from xai_core.plugin.resolve import (
    backends_with,
    default_explainer,
    explainer_class,
    explainer_classes,
    get_backend_for,
)
from xai_core.validation import check_int

__all__ = [
    "Explainer",
    "explain",
    "list_explainers",
    "predicted_class",
    "resolve_method",
    "CAPABILITIES",
    "DEFAULT_ROLES",
]

#: What a model on a backend can offer; explainers declare the subset they need.
CAPABILITIES = frozenset({"predict", "gradient", "activations"})

#: What an explainer can declare itself the default for, in :attr:`Explainer.default_for`:
#: ``method="auto"`` on a model with gradients (on a backend that has them), ``method="auto"``
#: on anything else, and the methods :func:`~xai_core.compare_methods` compares by default.
DEFAULT_ROLES = frozenset({"gradient", "black_box", "compare"})


@functools.lru_cache(maxsize=256)
def _init_options(init: Any) -> tuple[tuple[str, ...], dict[str, Any]]:
    """The option names of a constructor and the defaults of those that have one, read once."""
    params = tuple(inspect.signature(init).parameters.values())[1:]  # after ``self``
    names = tuple(p.name for p in params if p.kind in (p.KEYWORD_ONLY, p.POSITIONAL_OR_KEYWORD))
    return names, {p.name: p.default for p in params if p.default is not inspect.Parameter.empty}


class Explainer:
    """Base class of attribution methods.

    Subclasses set :attr:`name` and :attr:`requires`, take their options as keyword
    arguments of ``__init__`` (stored, not acted on), declare the options' constraints and
    other spellings as class data, and implement :meth:`explain`.

    Attributes
    ----------
    name : str
        The ``method=`` string.
    requires : frozenset of str
        Capabilities needed, from ``{"predict", "gradient", "activations"}``; checked by
        :func:`explain` before any work.
    constraints : mapping of str to Constraint
        What each option accepts (:mod:`xai_core.attribution.options`); :func:`explain`
        checks every option given against it before any model call. ``seed`` and
        ``progress`` follow the common rules without being declared.
    aliases : mapping of str to Alias
        Other names of options: the anchors' spellings (``nsamples``, ``n_steps``...) and
        deprecated old names; resolved by :func:`explain`.
    row_index : ndarray of int64 of shape (n_samples,) or None
        Set by the core before :meth:`explain`: the global index, in the caller's data, of
        each row of ``X`` (chunks start past 0). Read it through :meth:`rows`.
    picks_target : bool
        Whether :meth:`explain` takes ``target=None`` for "the predicted class" and
        finds it in the model outputs it computes anyway (its Explanation's ``target``
        says which); :func:`explain` then makes no prediction of its own. Default False:
        the core resolves the target first.
    default_for : mapping of str to int
        Where the core picks this method when the user names none, each role with a rank
        (the lowest rank wins; equal ranks go to the first registered): ``"gradient"``,
        ``method="auto"`` for a model with gradients on a backend that has them;
        ``"black_box"``, ``method="auto"`` otherwise; ``"compare"``, the methods
        :func:`~xai_core.compare_methods` compares when given none, in rank order.
        Default: no role. The core names no method itself
        (:func:`~xai_core.plugin.resolve.default_explainer`).
    handles_missing : bool
        Whether the method explains rows with missing values (NaN) of a model that
        handles them (:attr:`~xai_core.model.base.Model.allow_nan`): it must never do
        arithmetic on the rows' values, only hand them to the model. Default False:
        :func:`explain` refuses such rows, naming them and the methods that can.
    """

    name: ClassVar[str] = ""
    requires: ClassVar[frozenset[str]] = frozenset({"predict"})
    picks_target: ClassVar[bool] = False
    constraints: ClassVar[Mapping[str, Constraint]] = {}
    aliases: ClassVar[Mapping[str, Alias]] = {}
    default_for: ClassVar[Mapping[str, int]] = {}
    handles_missing: ClassVar[bool] = False
    row_index: np.ndarray | None = None

    def __init__(self) -> None:
        """An explainer without options."""

    @classmethod
    def option_names(cls) -> list[str]:
        """The keyword arguments the constructor accepts."""
        return list(_init_options(cls.__init__)[0])

    @classmethod
    def option_defaults(cls) -> dict[str, Any]:
        """The constructor's default of each option that has one."""
        return dict(_init_options(cls.__init__)[1])

    def get_options(self) -> dict[str, Any]:
        """The options this explainer was built with (stored as attributes of the same name)."""
        names = _init_options(type(self).__init__)[0]
        return {name: getattr(self, name) for name in names if hasattr(self, name)}

    # -- randomness per row ---------------------------------------------------------------
    def rows(self, n: int) -> np.ndarray:
        """Global index of each of the ``n`` rows being explained (``0 .. n-1`` unless the core set them).

        Returns
        -------
        ndarray of int64 of shape (n,)
        """
        if self.row_index is not None and len(self.row_index) == n:
            return np.asarray(self.row_index, dtype=np.int64)
        return np.arange(n, dtype=np.int64)

    def run_seed(self) -> int:
        """The seed of this run: the ``seed`` option, drawn (and stored) when it is ``None``."""
        seed = getattr(self, "seed", None)
        if seed is None:
            self.seed = seed = resolve_seed(None)
        return int(seed)

    def row_rngs(self, n: int, *salt: int) -> list[np.random.Generator]:
        """One generator per row, from ``[seed, global row, *salt]`` (:func:`~xai_core.attribution.seeds.rngs_for_rows`)."""
        return rngs_for_rows(self.run_seed(), self.rows(n), *salt)

    def row_seeds(self, n: int, *salt: int) -> np.ndarray:
        """One 32-bit seed per row, for libraries that take an int (:func:`~xai_core.attribution.seeds.row_seeds`)."""
        return row_seeds(self.run_seed(), self.rows(n), *salt)

    def prepare(self, runner: ModelRunner, X: np.ndarray) -> dict[str, Any]:
        """Options to fix from all rows before they are split into chunks.

        A method whose defaults depend on ``X`` as a whole (a background summarised from
        ``X``, the range of its values) returns them here as options, so that every chunk
        uses what one call on all rows would. Default: none.

        Parameters
        ----------
        runner : ModelRunner
        X : ndarray of shape (n_samples, *input_shape)
            All the rows, read-only.

        Returns
        -------
        dict
            Options (by their own names) given to every chunk.
        """
        return {}

    def estimate_cost(self, runner: ModelRunner, X: np.ndarray) -> Cost | None:
        """The work and memory of explaining ``X``, estimated before any model call.

        :func:`explain` calls it once, on all rows, after the options are checked and before
        the first model call, and refuses a request over the session's limits
        (:mod:`xai_core.attribution.cost`) with :class:`~xai_core.errors.ResourceError`. It
        must not call the model; shapes and options are what it has. Default: ``None``, no
        estimate (nothing is checked).

        Parameters
        ----------
        runner : ModelRunner
            The model on its backend (``runner.n_outputs`` may still be ``None``).
        X : ndarray of shape (n_samples, *input_shape)
            The validated rows, read-only.

        Returns
        -------
        Cost or None
            ``Cost(model_rows, peak_bytes, detail, advice)``: rows the model will evaluate in
            all, the largest working memory held at once, how they were counted and which
            options to lower.
        """
        return None

    def explain(self, runner: ModelRunner, X: np.ndarray, target: np.ndarray) -> Explanation:
        """Attribute ``runner``'s output ``target`` of each row of ``X`` to its inputs.

        Parameters
        ----------
        runner : ModelRunner
            The model on its backend; use its ``predict``/``gradient`` in large batches.
        X : ndarray of shape (n_samples, *input_shape)
            Validated inputs, a read-only view of the caller's array.
        target : ndarray of int64 of shape (n_samples,), or None
            Output index per row; None (only when :attr:`picks_target`) for the predicted
            class of each row, checked finite as :func:`resolve_target` checks it.

        Returns
        -------
        Explanation
        """
        raise NotImplementedError

    def __repr__(self) -> str:
        opts = ", ".join(f"{k}={v!r}" for k, v in self.get_options().items())
        return f"{type(self).__name__}({opts})"


def list_explainers() -> list[str]:
    """Names of the registered explainers, sorted."""
    return sorted(explainer_classes())


def resolve_method(method: Any, capabilities: frozenset[str]) -> type[Explainer]:
    """The explainer class of ``method``; ``"auto"`` picks by the model's capabilities.

    Parameters
    ----------
    method : str or Explainer subclass
        A registered name, ``"auto"`` or a class (returned as it is).
    capabilities : frozenset of str
        What the model on its backend offers.

    Returns
    -------
    type
        ``"auto"``: the registered default for a model with gradients on a backend that
        has them, else the default for black boxes (int8 models, inference-only backends),
        as the explainers declare in :attr:`Explainer.default_for`
        (:func:`~xai_core.plugin.resolve.default_explainer`).
    """
    if isinstance(method, str) and method == "auto":
        return default_explainer(capabilities)
    return explainer_class(method)


def explain(
    model: Any,
    X: Any,
    method: str = "auto",
    backend: Any = "cpu",
    target: Any = None,
    *,
    y: Any = None,
    output: str | int | None = None,
    feature_names: Any = None,
    output_names: Any = None,
    batch_size: int | None = None,
    executor: Any = None,
    chunk_size: int | None = None,
    blas_threads: int | None = 1,
    **options: Any,
) -> Explanation:
    """Explain ``model``'s outputs on ``X`` with the registered method ``method``.

    Parameters
    ----------
    model : Model, ModelRunner, torch.nn.Module, keras.Model, str, path, estimator or callable
        Imported once by :func:`xai_core.import_model` (and kept for the next call while
        the weights are unchanged): a torch module (traced on the first rows of ``X``;
        its input shape is their sample shape), a Keras model of one input, or a model
        file (``.onnx``, ``.tflite``, ``.keras``, ``.h5``, TF.js ``.json``, a saved
        ``.npz``, a Teachable Machine ``.zip`` or folder) becomes a native network, with
        gradients on every backend. A native network, an estimator or a function of a
        batch is taken as :func:`xai_core.as_model` takes it; a runner as it is (then
        ``backend`` is the runner's). To explain a torch module or Keras model as a black
        box instead (predictions only, on the host), pass
        ``xai.BlackBoxModel(module)``.
    X : array-like of shape (n_samples, *input_shape), a dataset, or list of str
        Rows to explain. Explainers see a read-only view: they cannot change it. A
        dataset (an object with ``X``, ``y``, ``class_names``, ``feature_names`` and
        ``image_shape``, such as ``xai_datasets``' ``Dataset``) gives its rows, its labels
        as ``y``, its feature names and its class names (when the model names no
        outputs). A list of
        strings (with ``tokenizer=``) is explained token by token at the model's embedding
        (:func:`xai_core.text.explain_text`, ``docs/text.md``), or with ``method="lime"``
        or ``"shap"`` by changing the texts (the model then may be any callable
        ``list[str] -> array``; the method's ``explain_texts``).
    method : str, default="auto"
        A registered explainer (:func:`list_explainers`) or an Explainer subclass.
        ``"auto"``: the registered default for models with gradients (integrated
        gradients, once installed), else the default for black boxes (SHAP); see
        :attr:`Explainer.default_for`.
    backend : str or Backend, default="cpu"
        Where the model runs: a registered name or a Backend instance; ``"cpu"`` runs a
        float64 network on the float64 CPU (``get_backend("cpu")`` for float32).
    target : int or array-like of shape (n_samples,), optional
        Output to explain per row; by default the predicted class (the only output
        for single-output models). With ``output=``, an index within that output.
    y : array-like of shape (n_samples,), optional
        True labels of the rows (class indices or names; values for a regression). The
        model's outputs at ``X`` are then recorded too (one more forward pass), as
        :meth:`Explanation.with_outcomes` records them: views head each row
        ``true 4 · predicted 6 (0.71)`` and mark misclassified rows.
    output : str or int, optional
        For a model with several outputs (a detection or landmark model, a graph with
        :meth:`~xai_core.nn.Graph.set_outputs`), the one to explain: a name in
        ``model.outputs`` or its index (:meth:`~xai_core.Model.with_output`). Default:
        the first.
    feature_names : sequence of str, optional
        One name per feature; taken from a DataFrame's columns when ``X`` is one.
    output_names : sequence of str, optional
        Class names of a model imported here (by default those a file holds, if any).
    batch_size : int, optional
        Rows per model call: by default 4096, fewer for a network with large layer
        outputs (:class:`~xai_core.ModelRunner`'s default).
    executor : concurrent.futures.Executor, distributed.Client or "processes", optional
        Explain the rows in chunks on this executor (``"processes"``: a process pool over
        all local cores); see :mod:`xai_core.attribution.parallel`.
    chunk_size : int, optional
        Rows per chunk. Given without ``executor``, the chunks run one after the other
        here. Neither given: no chunks. With the same seed, values are bit-identical
        whatever the chunk size and executor: random draws are made per row.
    blas_threads : int or None, default=1
        BLAS threads during the computation (:mod:`xai_core.attribution.blas`); the same
        count everywhere keeps values bit-identical across executors. ``None`` leaves the
        BLAS as configured (faster matrix products on many cores; the last bits may then
        depend on the thread count).
    **options
        Options of the method, by name or by a documented alias (shap's ``nsamples``,
        lime's ``num_samples``, Captum's ``n_steps``...); an unknown one is an error that
        lists the valid ones. ``seed=None`` draws a seed, recorded in ``meta["seed"]``.

    Returns
    -------
    Explanation

    Raises
    ------
    CapabilityError, ModelFormatError
        Importing ``model`` failed: the message names what failed (every unsupported
        operator or layer) and the black-box way out.
    ResourceError
        Before any model call, when the method's estimate of the work or memory
        (:meth:`Explainer.estimate_cost`) is over the limits of
        :func:`xai_core.set_resource_limits`; the message holds the estimate.
    ModelOutputError
        When the model returns NaN or infinity to the method; the message names the rows.
    """
    # -- names and arguments, all before any model call --------------------------------------
    batch_size = check_int(batch_size, "batch_size", 1, allow_none=True)
    blas = check_int(blas_threads, "blas_threads", 1, allow_none=True)
    text_rows = MAX_BATCH_ROWS if batch_size is None else batch_size  # (texts: rows per call)
    dataset_names = None
    if _is_dataset(X):
        X, y, feature_names, dataset_names = _from_dataset(X, y, feature_names)
    if "tokenizer" in options or (isinstance(X, (str, list, tuple)) and _texts(X)):
        from xai_core.text import explain_text

        if "tokenizer" not in options:
            raise ValidationError(
                "X is a list of strings: pass tokenizer= (a tokenizers.Tokenizer, a "
                "transformers tokenizer or a callable str -> list[int]); see docs/text.md."
            )
        _text_only(executor, chunk_size, output, feature_names, y)
        hook = _text_hook(model, method)
        if hook is not None:  # a perturbation method: the model is called on changed texts
            return hook(
                model,
                X,
                backend=backend,
                target=target,
                batch_size=text_rows,
                output_names=output_names,
                blas_threads=blas,
                **options,
            )
        return explain_text(
            model,
            X,
            method="ig" if method == "auto" else method,
            backend=backend,
            target=target,
            batch_size=text_rows,
            output_names=output_names,
            blas_threads=blas,
            **options,
        )
    chunked = executor is not None or chunk_size is not None
    if chunked:
        check_parallel(executor, chunk_size)
    if isinstance(model, ModelRunner):
        for given, why in (
            (
                output,
                "output= selects an output of a model; for a runner, make it of "
                "model.with_output(output) instead.",
            ),
            (
                output_names,
                "output_names names the outputs of a model explain imports; a "
                "ModelRunner holds its model already: give the names where the model is made.",
            ),
        ):
            if given is not None:
                raise ValidationError(why)
        runner: ModelRunner | None = model
        the_model, the_backend = model.model, model.backend
        capabilities = model.capabilities
    else:
        runner = None
        from xai_core.importers.direct import import_model

        the_model = import_model(model, X, output_names=output_names)
        if output is not None:
            the_model = the_model.with_output(output)
        from xai_core.text.explain import explain_text, reads_ids

        if reads_ids(the_model):  # token ids: attributed at the embedding they look up
            _text_only(executor, chunk_size, None, feature_names, y)
            return explain_text(
                the_model,
                X,
                method="ig" if method == "auto" else method,
                backend=backend,
                target=target,
                batch_size=text_rows,
                blas_threads=blas,
                **options,
            )
        the_backend = get_backend_for(the_model, backend)
        capabilities = frozenset(the_model.capabilities)
        if not gradients_on(the_model, the_backend):
            capabilities = capabilities - {"gradient"}
    cls = resolve_method(method, capabilities)
    resolved = resolve_options(cls, options)
    if "seed" in cls.option_names():
        resolved["seed"] = resolve_seed(resolved.get("seed", cls.option_defaults().get("seed")))
    if runner is None:
        has = "gradient" in the_model.capabilities  # a black box is refused below, as one
        if "gradient" in cls.requires and has and not gradients_on(the_model, the_backend):
            raise CapabilityError(
                f"method {cls.name!r} needs gradients, and the {the_backend.name!r} backend is "
                f"inference only; use one of: {', '.join(backends_with('gradient'))}."
            )
        runner = ModelRunner(the_model, the_backend, batch_size=batch_size)
    for capability in sorted(cls.requires):
        runner.require(capability)
    if feature_names is None and hasattr(X, "columns"):
        feature_names = [str(c) for c in X.columns]
    if feature_names is None:
        feature_names = getattr(runner.model, "feature_names", None)
    X = runner.check_X(X)
    if not cls.handles_missing:
        _refuse_missing(X, cls)
    n_features = math.prod(X.shape[1:])
    if feature_names is not None and len(feature_names) != n_features:
        raise ValidationError(
            f"feature_names must have {n_features} names, one per feature; got {len(feature_names)}."
        )
    if y is not None and np.shape(y) != (len(X),):
        raise ShapeError(
            f"y must have shape ({len(X)},), one label per row; got shape {np.shape(y)}."
        )
    probe = cls(**resolved)
    probe.row_index = np.arange(len(X), dtype=np.int64)
    cost = explainer_cost(probe, runner, read_only(X))
    if cost is not None:
        check_cost(cost, f"method {cls.name!r}")
    # -- the work ---------------------------------------------------------------------------
    if target is not None or chunked or not cls.picks_target:
        target = resolve_target(runner, X, target, method=cls.name)
    names = None if feature_names is None else tuple(str(f) for f in feature_names)
    job = ExplainJob(cls, resolved, feature_names=names, blas_threads=blas)
    if chunked:
        e = explain_chunked(runner, X, target, job, executor=executor, chunk_size=chunk_size)
    else:
        e = run_explainer(runner, X, target, job, np.arange(len(X), dtype=np.int64))
    outputs = None if y is None else runner.predict_validated(X)
    n_outputs = runner.n_outputs if outputs is None else outputs.reshape(len(X), -1).shape[1]
    if dataset_names and e.output_names is None and n_outputs == len(dataset_names):
        e = replace(e, output_names=dataset_names)
    if y is not None:
        from xai_core.attribution.outcomes import outputs_as_outcomes

        e = e.with_outcomes(np.asarray(y), **outputs_as_outcomes(outputs, y))
    return e


def _is_dataset(X: Any) -> bool:
    """Whether ``X`` is a dataset object (rows, labels and names), not rows."""
    attrs = ("X", "y", "class_names", "feature_names", "image_shape")
    return not isinstance(X, (np.ndarray, type)) and all(hasattr(X, a) for a in attrs)


def _from_dataset(ds: Any, y: Any, feature_names: Any) -> tuple[Any, Any, Any, Any]:
    """A dataset's rows, labels, feature names and class names (those given win)."""
    names = tuple(str(c) for c in ds.class_names) or None
    return (
        ds.X,
        ds.y if y is None else y,
        feature_names if feature_names is not None else (tuple(ds.feature_names) or None),
        names,
    )


def _text_only(
    executor: Any, chunk_size: Any, output: Any, feature_names: Any, y: Any = None
) -> None:
    """Refuse the arguments text explanations do not take (yet), by name."""
    for name, given in (
        ("executor", executor),
        ("chunk_size", chunk_size),
        ("output", output),
        ("feature_names", feature_names),
        ("y", y),
    ):
        if given is not None:
            raise ValidationError(
                f"{name}= is not taken for texts or token ids: their features are the tokens "
                "(meta['tokens']), explained in one run on one output."
            )


def _text_hook(model: Any, method: Any) -> Any:
    """The ``explain_texts`` of a registered method other than the gradient ones, or None.

    ``"auto"`` is ``"shap"`` for a model of strings (it has no gradients), else ``"ig"``.
    """
    from xai_core.text.attribute import TEXT_METHODS
    from xai_core.text.perturb import is_string_model

    if method == "auto":
        if not is_string_model(model):
            return None
        method = "shap"
    if isinstance(method, str) and method in TEXT_METHODS:
        if is_string_model(model):
            raise CapabilityError(
                f"method {method!r} needs gradients at the model's embedding; a model of "
                "strings has none: use method='lime' or method='shap'."
            )
        return None
    cls = explainer_class(method)
    hook = getattr(cls, "explain_texts", None)
    if hook is None:
        texts = sorted(
            {
                *TEXT_METHODS,
                *(n for n, c in explainer_classes().items() if hasattr(c, "explain_texts")),
            }
        )
        raise CapabilityError(
            f"method {cls.name!r} does not explain texts; methods that do: {', '.join(texts)}."
        )
    return hook


def _texts(X: Any) -> bool:
    from xai_core.text import is_texts

    return is_texts(X)


def _refuse_missing(X: np.ndarray, cls: type[Explainer]) -> None:
    """A clear error when ``X`` has missing values the method ``cls`` cannot explain."""
    missing = np.isnan(X.reshape(len(X), -1)).any(axis=1)
    if not missing.any():
        return
    rows = np.flatnonzero(missing)
    able = sorted(name for name, c in explainer_classes().items() if c.handles_missing)
    raise ValidationError(
        f"X has missing values (NaN) in {len(rows)} row(s), the first {rows[:5].tolist()}; "
        f"method {cls.name!r} does not explain rows with missing values. Methods that do: "
        f"{', '.join(able) or 'none installed'}; or impute the rows first."
    )


def resolve_target(
    runner: ModelRunner, X: np.ndarray, target: Any, *, method: str = "explain"
) -> np.ndarray:
    """Output index per row: ``target`` checked, or the predicted class by default.

    The model's outputs on ``X`` are checked finite (a NaN row would otherwise be given
    target 0, ``argmax`` of NaN): :class:`~xai_core.errors.ModelOutputError` names the rows.

    Returns
    -------
    ndarray of int64 of shape (n_samples,)
    """
    from xai_core.validation import check_target

    if target is None:
        out = runner.predict_validated(runner.check_X(X))  # checked here, with the method named
        return predicted_class(check_outputs(out, method, label=f"method {method!r}"))
    n_outputs = runner.n_outputs
    if n_outputs is None:
        n_outputs = runner.predict_validated(runner.check_X(X[:1])).shape[1]
    return check_target(target, len(X), n_outputs)
