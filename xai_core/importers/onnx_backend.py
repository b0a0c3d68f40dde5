"""xai-core as an ONNX backend: ``onnx.backend.base.Backend`` over :func:`from_onnx`.

Runtimes report how much of ONNX's backend test suite they pass through this interface:
``prepare(model)`` returns a :class:`XaiBackendRep` whose ``run(inputs)`` returns the
model's outputs. Here a model becomes a native network as :func:`~xai_core.from_onnx`
builds it, with two adaptations the native network asks for:

- the first axis of every tensor is the batch axis (a network maps samples independently);
  a model of elementwise operators alone (:data:`ELEMENTWISE`) whose inputs have fewer than
  two axes runs as one sample, its inputs given a leading axis of 1 (two for scalars); so
  does a model of those and the operators of
  :data:`~xai_core.importers.onnx_one_sample.LIFTABLE` (``ArgMax``, ``Concat``, ``CumSum``,
  ``Reduce*``, ``Slice``, ``Softmax``, ``Split``, ``Trilu``, normalisations; ``Einsum``,
  ``Gemm`` (as a ``MatMul``), ``Compress`` of the flattened tensor; ``Flatten``,
  ``Reshape``, ``Squeeze``, ``Tile``, ``Transpose``, ``Unsqueeze``; and shape arithmetic,
  :data:`~xai_core.importers.onnx_one_sample.FOLDED`, folded to constants first) that is refused
  at its shapes (it works on the first axis, or its inputs have no sample axis), its nodes'
  axes moved past the new one by :func:`~xai_core.importers.onnx_one_sample.lift` (past
  two, when one leaves the sample's outputs scalars); if that is refused too, the first
  refusal is raised; a time-major (``layout=0``) ``LSTM``,
  ``GRU`` or ``RNN`` whose ``X`` and initial states are graph inputs and whose outputs are
  graph outputs runs batch-first, those transposed before and after the run
  (:func:`~xai_core.importers.onnx_one_sample.batch_first`);
- the inputs are floating-point tensors sharing that batch axis: integer and boolean inputs
  (indices, shapes, axes), float ones of another first axis (a bias of shape (c,)
  broadcast against (n, c)), and those every node reads as a constant (a ``Conv``'s
  weights, an ``LSTM``'s initial state: :data:`WEIGHT_INPUTS`; ``CastLike``'s
  ``target_type``, read for its type alone), are constants of each run, folded into the model as initialisers
  before it is imported, so an operator that needs them constant sees them as such;
- a float input of a narrower type (float16, bfloat16, float8, float4: ml_dtypes') is fed
  as the float32 tensor of the same values, which holds each exactly;
- a model with no float input but integer (or boolean, as 1 and 0) ones, all of whose
  operators compute integers exactly in float64 (:data:`INTEGER_EXACT`: comparisons,
  logic, ``Max``, ``Trilu``, ``Where``, moves; ``Add``, ``Sub``, ``Mul``, ``Mod``; an
  integer ``Div`` followed by its truncation toward zero; ``DequantizeLinear``, whose float
  output is computed in float64: :data:`INTEGER_READ`), is fed those
  inputs as float64 (values up to 2**53); an integer output out of its type's range (ONNX
  would wrap it) is refused.

Outputs are returned in the dtype the model declares (a comparison's 0/1 as ``bool``, an
``ArgMax``'s as ``int64``, a cast's float8 as ``ml_dtypes.float8_e4m3fn``), as the suite
checks dtypes.

Examples
--------
>>> from xai_core.importers.onnx_backend import XaiBackend
>>> rep = XaiBackend.prepare(onnx.load("model.onnx"))
>>> (y,) = rep.run([x])
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from xai_core.errors import CapabilityError, ValidationError
from xai_core.importers.onnx_import import from_onnx
from xai_core.importers.onnx_one_sample import FOLDED, LIFTABLE, REDUCE, batch_first, lift
from xai_core.importers.onnx_ops import is_numeric
from xai_core.importers.onnx_reader import load_onnx_model
from xai_core.optional import require

__all__ = ["XaiBackend", "XaiBackendRep", "prepare", "run_model"]

try:  # onnx is optional: without it the classes stand alone (and nothing can be read)
    from onnx.backend.base import Backend as _Backend
    from onnx.backend.base import BackendRep as _BackendRep
except ImportError:  # pragma: no cover - the "import" extra is not installed
    _Backend = _BackendRep = object

_FLOATS = ("float32", "float64")

#: Operators that work elementwise, broadcasting as numpy does, with no axis attribute
#: (and ``Constant``, which reads nothing: a function body's ``alpha``):
#: a model made of these alone computes the same values with a leading axis of 1 added to
#: every input, which is how a case of 1-D (or 0-D) tensors runs as one sample.
ELEMENTWISE = frozenset(
    "Abs Acos Acosh Add Asin Asinh Atan Atanh Cast CastLike Ceil Celu Clip Constant Cos Cosh "
    "Div Elu Equal Erf Exp Floor Gelu Greater GreaterOrEqual HardSigmoid HardSwish Identity "
    "IsInf IsNaN LeakyRelu Less LessOrEqual Log Max Mean Min Mish Mod Mul Neg Pow PRelu "
    "Reciprocal Relu Round Selu Shrink Sigmoid Sign Sin Sinh Softplus Softsign Sqrt Sub Sum "
    "Swish Tan Tanh ThresholdedRelu Where".split()
)


def _onnx():
    return require("onnx", extra="import", need="the ONNX backend interface")


#: The inputs (by position) of operators whose converters take them as constants: weights,
#: biases, slopes, normalisation parameters, quantisation scales, recurrent initial states;
#: axes, split sizes, slice bounds, shapes and repeats.
WEIGHT_INPUTS: dict[str, frozenset[int]] = {
    op: frozenset(positions)
    for op, positions in {
        "Conv": (1, 2),
        "ConvTranspose": (1, 2),
        "Gemm": (1, 2),
        "PRelu": (1,),
        "LSTM": (1, 2, 3, 5, 6, 7),
        "GRU": (1, 2, 3, 5),
        "RNN": (1, 2, 3, 5),
        "BatchNormalization": (1, 2, 3, 4),
        "InstanceNormalization": (1, 2),
        "LayerNormalization": (1, 2),
        "GroupNormalization": (1, 2),
        "RMSNormalization": (1,),
        "QuantizeLinear": (1, 2),
        "DequantizeLinear": (1, 2),
        "CumSum": (1,),
        "Split": (1,),
        "Slice": (1, 2, 3, 4),
        **dict.fromkeys(("Expand", "Reshape", "Squeeze", "Tile", "Unsqueeze"), (1,)),
        **dict.fromkeys(REDUCE, (1,)),
    }.items()
}


#: Operators whose values on integers the network computes exactly in float64 (which holds
#: every integer up to 2**53): comparisons, logic, extremes, selections, moves, casts; and
#: Add, Sub, Mul, CumSum, ReduceSum while the result stays in the declared type's range
#: (checked, as ONNX wraps around) and within 2**53; ``Mod`` (``x - y * floor(x / y)``,
#: or ``trunc`` for ``fmod=1``: the float64 quotient of such integers rounds to the exact
#: one's floor and trunc); ``Pow`` (numpy's ``power``, within an ulp, so exact where the
#: power is a float64 integer; a negative exponent's fraction is refused with the output).
#: An integer ``Div`` is too, followed by its truncation toward zero
#: (:func:`_truncated_division`).
INTEGER_EXACT = frozenset(
    "Abs Add And ArgMax ArgMin Cast CastLike Ceil Clip Concat Constant CumSum DepthToSpace "
    "Equal Expand Flatten Floor Gather Greater GreaterOrEqual Identity Less LessOrEqual Max "
    "MaxPool Min Mod Mul Neg Not Or Pad Pow ReduceMax ReduceMin ReduceSum Relu Reshape Round Sign "
    "Slice SpaceToDepth Squeeze Sub Tile Transpose Trilu Unsqueeze Where Xor".split()
)


def _truncated_division(model: Any) -> tuple[Any, bool]:
    """A copy of ``model`` in which each ``Div`` whose output is an integer tensor (onnx's
    type inference) is followed by the truncation toward zero ONNX's integer ``Div`` does,
    ``sign(q) * floor(|q|)``; and whether every ``Div`` was.

    The float64 quotient of integers below 2**53 in magnitude truncates to the exact
    integer quotient: a non-integer ``a / b`` is at least ``1 / |b|`` from an integer, and
    its rounding error at most ``|a / b| * 2**-53``, which is less. A ``Div`` of another
    output type is left as it is (and keeps the model out of the integer mode).
    """
    onnx = _onnx()
    from onnx import helper

    copy = onnx.ModelProto()
    copy.CopyFrom(model)
    try:
        inferred = onnx.shape_inference.infer_shapes(copy).graph
    except Exception:
        return copy, False
    types = {
        vi.name: vi.type.tensor_type.elem_type
        for vi in [*inferred.input, *inferred.value_info, *inferred.output]
    } | {t.name: t.data_type for t in inferred.initializer}
    nodes = []
    every = True
    for node in copy.graph.node:
        elem = types.get(node.output[0]) if node.op_type == "Div" else None
        dtype = None
        if elem:
            try:
                dtype = np.dtype(helper.tensor_dtype_to_np_dtype(elem))
            except Exception:
                dtype = None
        if dtype is None or dtype.kind not in "iu":
            every = every and node.op_type != "Div"
            nodes.append(node)
            continue
        y = node.output[0]
        q, a, f, sg = (f"{y}__{part}" for part in ("quotient", "abs", "floor", "sign"))
        node.output[0] = q
        nodes.extend(
            [
                node,
                helper.make_node("Abs", [q], [a]),
                helper.make_node("Floor", [a], [f]),
                helper.make_node("Sign", [q], [sg]),
                helper.make_node("Mul", [sg, f], [y]),
            ]
        )
    del copy.graph.node[:]
    copy.graph.node.extend(nodes)
    return copy, every


#: Operators reading integers into a float output, computed in float64 and returned in the
#: declared float type: ``DequantizeLinear``'s ``(x - zero_point) * scale``.
INTEGER_READ = frozenset({"DequantizeLinear"})

#: The largest integer fed as a float64 (every integer up to it is one exactly).
_EXACT = 2**53


def _integer(dtype: np.dtype) -> bool:
    """Whether ``dtype`` is an integer type (numpy's, not bool, or ml_dtypes' int4, int2)."""
    return dtype.kind in "iu" or (dtype.kind != "b" and is_numeric(dtype) and not _floating(dtype))


def _floating(dtype: np.dtype) -> bool:
    """Whether ``dtype`` is a float type (numpy's or a narrow one of ml_dtypes)."""
    import ml_dtypes

    if dtype.kind == "f":
        return True
    try:
        ml_dtypes.finfo(dtype)
    except (TypeError, ValueError):
        return False
    return True


def _constant_only(model: Any, name: str) -> bool:
    """Whether every node reads the graph input ``name`` as a constant: for its type alone
    (``CastLike``'s second input) or as a weight (:data:`WEIGHT_INPUTS`)."""
    uses = [(n.op_type, i) for n in model.graph.node for i, x in enumerate(n.input) if x == name]
    return all(
        (op == "CastLike" and i == 1) or i in WEIGHT_INPUTS.get(op, ()) for op, i in uses
    ) and not any(vi.name == name for vi in model.graph.output)


def _elem_dtype(value_info: Any) -> np.dtype | None:
    """The numpy dtype a graph input or output declares (None: not a tensor)."""
    onnx = _onnx()
    t = value_info.type
    if not t.HasField("tensor_type"):
        return None
    try:
        return np.dtype(onnx.helper.tensor_dtype_to_np_dtype(t.tensor_type.elem_type))
    except Exception:
        return None


def _check_range(where: str, name: str, y: np.ndarray, dtype: np.dtype) -> None:
    """Refuse an integer output out of its type's range (ONNX would wrap it around)."""
    import ml_dtypes

    info = ml_dtypes.iinfo(dtype)
    lo, hi = max(int(info.min), -_EXACT), min(int(info.max), _EXACT)
    if y.size and (y.min() < lo or y.max() > hi or not np.all(y == np.round(y))):
        raise CapabilityError(
            f"{where}: the output {name!r} holds values outside [{lo}, {hi}] ({dtype}'s "
            "range, and what a float64 holds exactly), or not whole; integer overflow, which "
            "ONNX wraps around, is not computed."
        )


class XaiBackendRep(_BackendRep):
    """A prepared model: :meth:`run` imports it with each run's constant inputs folded in.

    Parameters
    ----------
    model : onnx.ModelProto
    """

    def __init__(self, model: Any) -> None:
        onnx = _onnx()
        # time-major recurrences run batch-first: their inputs and outputs transposed here
        rewritten = onnx.ModelProto()
        rewritten.CopyFrom(model)
        self.to_model, self.back = batch_first(rewritten)
        model = rewritten if self.back else model
        self.model = model
        inits = {t.name for t in model.graph.initializer}
        self.inputs = [vi for vi in model.graph.input if vi.name not in inits]
        self.outputs = list(model.graph.output)
        self.where = f"ONNX graph {model.graph.name!r}" if model.graph.name else "the ONNX model"
        bad = [
            f"{vi.name!r} ({_elem_dtype(vi)})"
            for vi in [*self.inputs, *self.outputs]
            if not is_numeric(_elem_dtype(vi))
        ]
        if bad:
            raise CapabilityError(
                f"{self.where}: inputs and outputs must be numeric tensors; "
                f"{', '.join(bad)} are not."
            )
        floats = [
            vi
            for vi in self.inputs
            if _floating(_elem_dtype(vi)) and not _constant_only(model, vi.name)
        ]
        # narrow floats are fed as float32 (which holds their values exactly)
        self.retyped = {
            vi.name: onnx.TensorProto.FLOAT for vi in floats if _elem_dtype(vi) not in _FLOATS
        }
        kinds = {_elem_dtype(vi) for vi in floats}
        self.dtype = "float64" if np.dtype("float64") in kinds else "float32"
        if not floats:
            # no float input: integer ones are fed as float64, if every operator computes
            # integers exactly that way
            floats = [
                vi
                for vi in self.inputs
                if (_integer(_elem_dtype(vi)) or _elem_dtype(vi).kind == "b")
                and not _constant_only(model, vi.name)
            ]
            exact = INTEGER_EXACT | INTEGER_READ
            if any(n.op_type == "Div" for n in model.graph.node):
                model, truncated = _truncated_division(model)
                self.model = model
                exact = exact | ({"Div"} if truncated else set())
            inexact = sorted({n.op_type for n in model.graph.node} - exact)
            if not floats or inexact:
                raise CapabilityError(
                    f"{self.where}: no floating-point input: the network's input is a float "
                    "tensor (integer inputs are folded in as constants, or computed as float64 "
                    "when every operator is one of INTEGER_EXACT"
                    + (f"; {', '.join(inexact)} are not" if floats and inexact else "")
                    + "), and this model's inputs are "
                    f"{', '.join(f'{vi.name!r} ({_elem_dtype(vi)})' for vi in self.inputs)}."
                )
            self.retyped = {vi.name: onnx.TensorProto.DOUBLE for vi in floats}
            self.dtype = "float64"
        self.float_inputs = [vi.name for vi in floats]
        self.elementwise = all(n.op_type in ELEMENTWISE for n in model.graph.node)
        self.liftable = all(n.op_type in ELEMENTWISE | LIFTABLE | FOLDED for n in model.graph.node)
        self.opset = next((o.version for o in model.opset_import if o.domain in ("", "ai.onnx")), 1)
        self._onnx = onnx
        self._nets: dict[bytes, Any] = {}

    def _network(
        self,
        constants: dict[str, np.ndarray],
        lifted: dict[str, tuple[int, ...]] | None = None,
        k: int = 0,
    ) -> Any:
        """The native network with ``constants`` as initialisers (one import per set), and
        the ``lifted`` inputs declared with their new shapes, ``k`` leading axes of 1 added
        (the nodes' axes shifted by :func:`~xai_core.importers.onnx_one_sample.lift`, the
        outputs' shapes left to infer)."""
        key = (
            b"".join(
                name.encode() + b"\0" + str(v.dtype).encode() + str(v.shape).encode() + v.tobytes()
                for name, v in sorted(constants.items())
            )
            + str(sorted((lifted or {}).items())).encode()
        )
        if key not in self._nets:
            model = self._onnx.ModelProto()
            model.CopyFrom(self.model)
            graph = model.graph
            kept = [vi for vi in graph.input if vi.name not in constants]
            del graph.input[:]
            graph.input.extend(kept)
            for name, v in constants.items():
                graph.initializer.append(self._onnx.numpy_helper.from_array(v, name))
            for vi in graph.input:
                if vi.name in self.retyped:
                    vi.type.tensor_type.elem_type = self.retyped[vi.name]
            if lifted and not self.elementwise:
                self._declare(graph, {m: shape[k:] for m, shape in lifted.items()})
                if not lift(model, k, self._shapes(model), self.opset, ELEMENTWISE):
                    raise CapabilityError(
                        f"{self.where}: its nodes' axes cannot be moved to run it as one sample."
                    )
            if lifted:
                self._declare(graph, lifted)
            for vi in graph.output if lifted else ():
                vi.type.tensor_type.ClearField("shape")
            self._nets[key] = from_onnx(model, dtype=self.dtype)
        return self._nets[key]

    @staticmethod
    def _declare(graph: Any, shapes: dict[str, tuple[int, ...]]) -> None:
        """Declare the graph inputs named in ``shapes`` of those shapes."""
        for vi in graph.input:
            if vi.name in shapes:
                dims = vi.type.tensor_type.shape.dim
                del dims[:]
                for d in shapes[vi.name]:
                    dims.add().dim_value = d

    def _shapes(self, model: Any) -> dict[str, tuple[int | None, ...]]:
        """The shape of every tensor of ``model`` that onnx's shape inference finds."""
        inferred = self._onnx.shape_inference.infer_shapes(model)
        g = inferred.graph
        return {
            vi.name: tuple(d.dim_value if d.HasField("dim_value") else None for d in dims)
            for vi in [*g.input, *g.value_info, *g.output]
            if vi.type.tensor_type.HasField("shape")
            for dims in [vi.type.tensor_type.shape.dim]
        } | {t.name: tuple(t.dims) for t in g.initializer}

    def run(self, inputs: Any, **kwargs: Any) -> tuple[np.ndarray, ...]:
        """The model's outputs for ``inputs`` (a list in graph-input order, or a dict).

        Returns
        -------
        tuple of ndarray
            One per graph output, of its full (batched) shape and declared dtype.
        """
        names = [vi.name for vi in self.inputs]
        if isinstance(inputs, dict):
            values = dict(inputs)
        else:
            inputs = list(inputs) if isinstance(inputs, (list, tuple)) else [inputs]
            if len(inputs) != len(names):
                raise ValidationError(
                    f"{self.where}: {len(names)} inputs ({', '.join(map(repr, names))}) are "
                    f"declared; {len(inputs)} arrived."
                )
            values = dict(zip(names, inputs, strict=True))
        values = {
            k: np.asarray(v).astype(self.dtype) if k in self.retyped else np.asarray(v)
            for k, v in values.items()
        }
        big = [
            k
            for k in self.float_inputs
            if k in values and values[k].size and np.abs(values[k]).max() > _EXACT
        ]
        if big:
            raise CapabilityError(
                f"{self.where}: the integer inputs {big} hold values beyond 2**53, which a "
                "float64 does not hold exactly."
            )
        missing = [n for n in names if n not in values]
        if missing:
            raise ValidationError(f"{self.where}: inputs {missing} are missing.")
        if self.back:
            values = {
                m: v.transpose(self.to_model[m]) if m in self.to_model else v
                for m, v in values.items()
            }
            ys = self._run(values)
            return tuple(
                y.transpose(self.back[vi.name]) if vi.name in self.back else y
                for y, vi in zip(ys, self.outputs, strict=True)
            )
        return self._run(values)

    def _run(self, values: dict[str, np.ndarray]) -> tuple[np.ndarray, ...]:
        """The outputs for ``values`` (every input's, as fed to the model)."""
        if self.elementwise and all(values[n].ndim < 2 for n in self.float_inputs):
            # one sample: a leading axis of 1 (two for scalars) on the float inputs
            return self._outputs(values, 2 - max(values[n].ndim for n in self.float_inputs))
        try:
            return self._outputs(values, 0)
        except CapabilityError as exc:
            if not self.liftable:
                raise
            refusal = exc
        # the batch axis touched, or no sample axis: the inputs as one sample, if that runs;
        # a second leading axis when the sample's outputs are scalars
        scalars = all(values[n].ndim == 0 for n in self.float_inputs)
        for k in (2,) if scalars else (1, 2):
            try:
                return self._outputs(values, k)
            except CapabilityError:
                continue
        raise refusal from None

    def _outputs(self, values: dict[str, np.ndarray], lift: int) -> tuple[np.ndarray, ...]:
        """The outputs for ``values``, run with ``lift`` leading axes of 1 on the float inputs
        (0: as given, their first axis the batch axis), removed from the outputs."""
        if lift:
            values = {
                m: v.reshape((1,) * lift + v.shape) if m in self.float_inputs else v
                for m, v in values.items()
            }
        batched = [n for n in self.float_inputs if values[n].ndim >= 2]
        if not batched:
            raise CapabilityError(
                f"{self.where}: no floating-point input has a batch axis and a sample axis "
                f"(shapes {[values[n].shape for n in self.float_inputs]}); a per-sample scalar "
                "is not supported."
            )
        n = values[batched[0]].shape[0]
        # float inputs sharing the first one's batch axis are inputs; the rest (and every
        # integer or boolean input) are constants of this run
        feeds = [m for m in batched if values[m].shape[0] == n]
        constants = {m: v for m, v in values.items() if m not in feeds}
        net = self._network(constants, {m: values[m].shape for m in feeds} if lift else None, lift)
        ys = net.predict_outputs({m: values[m].astype(self.dtype) for m in feeds}, allow_nan=True)
        out = []
        for node, vi in zip(net.outputs, self.outputs, strict=True):
            y = ys[node].reshape(n, *net.shape_of(node))
            if _integer(_elem_dtype(vi)):
                _check_range(self.where, vi.name, y, _elem_dtype(vi))
            y = y.astype(_elem_dtype(vi))
            out.append(y.reshape(y.shape[lift:]) if lift else y)
        return tuple(out)


class XaiBackend(_Backend):
    """The ``onnx.backend.base.Backend`` interface, on :func:`~xai_core.from_onnx`."""

    @classmethod
    def is_compatible(cls, model: Any, device: str = "CPU", **kwargs: Any) -> bool:
        return device == "CPU"

    @classmethod
    def supports_device(cls, device: str) -> bool:
        return device == "CPU"

    @classmethod
    def prepare(cls, model: Any, device: str = "CPU", **kwargs: Any) -> XaiBackendRep:
        """A :class:`XaiBackendRep` of ``model`` (a ModelProto, path or bytes)."""
        model, _ = load_onnx_model(model)
        return XaiBackendRep(model)

    @classmethod
    def run_model(
        cls, model: Any, inputs: Sequence[Any], device: str = "CPU", **kwargs: Any
    ) -> tuple[np.ndarray, ...]:
        return cls.prepare(model, device, **kwargs).run(inputs)

    @classmethod
    def run_node(cls, node: Any, inputs: Any, device: str = "CPU", **kwargs: Any) -> Any:
        raise CapabilityError(
            "run_node: nodes are run as one-node models (prepare(model)), not on their own."
        )


prepare = XaiBackend.prepare
run_model = XaiBackend.run_model
