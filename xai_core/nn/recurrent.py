"""Recurrent layers: LSTM and GRU, with ONNX's weights, gate orders and directions.

The recurrence loops over the steps (each step needs the last one's state); everything
inside a step is vectorised over the batch. The input projections of all steps are one
``backend.matmul`` before the loop; each step adds one product of the state by the
recurrent weights (two for a GRU without ``linear_before_reset``) and its gate arithmetic
as ``backend.elementwise`` calls, so every backend computes and counts every product in
its own numerics (bf16 on ``tpu``). The backward pass is backpropagation through time:
the steps in reverse, one product per step for the state's gradient, then one product
each for the input, weight and recurrent-weight gradients over all steps at once.

Weights follow ONNX (PyTorch's per-direction tensors stacked; its gate order differs):

===========  =====================  ==============================================
layer        gates (G)              ``weight`` (D, G*H, I), ``recurrent_weight``
                                    (D, G*H, H), ``bias`` (D, 2*G*H) = [Wb, Rb]
===========  =====================  ==============================================
``LSTM``     i, o, f, c (4)         PyTorch's order is i, f, c (g), o
``GRU``      z, r, h (3)            PyTorch's order is r, z, n
===========  =====================  ==============================================
"""

from __future__ import annotations

from typing import ClassVar

import numpy as np

from xai_core.errors import ShapeError, ValidationError
from xai_core.nn import _util
from xai_core.nn.layer import Layer
from xai_core.validation import check_int

__all__ = ["GRU", "LSTM"]

DIRECTIONS = ("forward", "reverse", "bidirectional")


def _sigmoid(x: np.ndarray) -> np.ndarray:
    # the two branches avoid exp overflow either way
    e = np.exp(-np.abs(x))
    return np.where(x >= 0, 1.0 / (1.0 + e), e / (1.0 + e))


def _add(a, b):
    return a + b


# -- LSTM step arithmetic (gates i, o, f, c) ----------------------------------------------
def _lstm_gates(p, q):
    """Activated gates ``[sigma(i, o, f), tanh(c)]`` of the pre-activations ``p + q``."""
    g = p + q
    h3 = g.shape[-1] // 4 * 3
    return np.concatenate([_sigmoid(g[:, :h3]), np.tanh(g[:, h3:])], axis=1)


def _lstm_cell(a, c):
    k = a.shape[1] // 4
    return a[:, 2 * k : 3 * k] * c + a[:, :k] * a[:, 3 * k :]


def _lstm_hidden(a, c):
    k = a.shape[1] // 4
    return a[:, k : 2 * k] * np.tanh(c)


def _lstm_dcell(a, c, dh, dc):
    """d loss / d c_t: the carried ``dc`` plus the path through ``h_t = o * tanh(c_t)``."""
    k = a.shape[1] // 4
    tc = np.tanh(c)
    return dc + dh * a[:, k : 2 * k] * (1 - tc * tc)


def _lstm_dgates(a, c_prev, c, dh, dcell):
    """d loss / d pre-activations (i, o, f, c) of one step."""
    k = a.shape[1] // 4
    i, o, f, g = a[:, :k], a[:, k : 2 * k], a[:, 2 * k : 3 * k], a[:, 3 * k :]
    return np.concatenate(
        [
            dcell * g * i * (1 - i),
            dh * np.tanh(c) * o * (1 - o),
            dcell * c_prev * f * (1 - f),
            dcell * i * (1 - g * g),
        ],
        axis=1,
    )


def _lstm_peephole_step(p, q, c_prev, pi, po, pf):
    """Activated gates and the new cell of a step with peepholes: i and f read
    ``c_{t-1}``, o reads ``c_t`` (ONNX's ``P`` = [Pi, Po, Pf])."""
    g = p + q
    k = g.shape[-1] // 4
    i = _sigmoid(g[:, :k] + pi * c_prev)
    f = _sigmoid(g[:, 2 * k : 3 * k] + pf * c_prev)
    cand = np.tanh(g[:, 3 * k :])
    c = f * c_prev + i * cand
    o = _sigmoid(g[:, k : 2 * k] + po * c)
    return np.concatenate([i, o, f, cand, c], axis=1)


def _lstm_peephole_dcell(a, c, dh, dc, po):
    """d loss / d c_t with peepholes: through ``h_t`` and through o's pre-activation."""
    k = a.shape[1] // 4
    o, tc = a[:, k : 2 * k], np.tanh(c)
    return dc + dh * o * (1 - tc * tc) + po * dh * tc * o * (1 - o)


def _lstm_peephole_dprev(a, dcell, g, pi, pf):
    """d loss / d c_{t-1} with peepholes: through f, and i's and f's pre-activations."""
    k = a.shape[1] // 4
    return dcell * a[:, 2 * k : 3 * k] + pi * g[:, :k] + pf * g[:, 2 * k : 3 * k]


def _times(a, b):
    return a * b


# -- GRU step arithmetic (gates z, r, h) ---------------------------------------------------
def _gru_zr(p, q):
    return _sigmoid(p + q)


def _gru_candidate_lbr(p_h, zr, q_h):
    """``tanh(p_h + r * q_h)``: ``q_h = h_prev @ Rh.T + Rbh`` (``linear_before_reset``)."""
    k = p_h.shape[1]
    return np.tanh(p_h + zr[:, k:] * q_h)


def _gru_state(zr, hh, h_prev):
    k = hh.shape[1]
    z = zr[:, :k]
    return (1 - z) * hh + z * h_prev


def _gru_dpre(zr, hh, h_prev, dh):
    """``[d z_pre, d h_pre]``: through the sigmoid of z and the tanh of the candidate."""
    k = hh.shape[1]
    z = zr[:, :k]
    return np.concatenate([dh * (h_prev - hh) * z * (1 - z), dh * (1 - z) * (1 - hh * hh)], axis=1)


def _gru_dr(zr, d_rpath):
    """d loss / d r_pre from d loss / d r."""
    k = zr.shape[1] // 2
    r = zr[:, k:]
    return d_rpath * r * (1 - r)


def _blend(zr, dh):
    k = dh.shape[1]
    return dh * zr[:, :k]


class _Recurrent(Layer):
    """What LSTM and GRU share: directions, outputs, parameters and the per-direction loop."""

    regularized: ClassVar[tuple[str, ...]] = ("weight", "recurrent_weight")
    #: Gates per direction.
    n_gates: ClassVar[int] = 1
    #: Values ``output=`` accepts.
    outputs: ClassVar[tuple[str, ...]] = ("sequence", "hidden")

    def __init__(
        self,
        hidden_size: int,
        direction: str = "forward",
        output: str = "sequence",
        name: str | None = None,
    ) -> None:
        super().__init__(name)
        self.hidden_size = check_int(hidden_size, "hidden_size")
        if direction not in DIRECTIONS:
            raise ValidationError(
                f"direction must be one of {', '.join(DIRECTIONS)}; got {direction!r}."
            )
        if output not in self.outputs:
            raise ValidationError(
                f"output must be one of {', '.join(self.outputs)}; got {output!r}."
            )
        self.direction = direction
        self.output = output

    weight = _util.parameter("weight")
    recurrent_weight = _util.parameter("recurrent_weight")
    bias = _util.parameter("bias")

    #: A recurrent layer reads (steps, features) samples (:mod:`xai_core.series`).
    series_order: ClassVar[str] = "tc"

    @property
    def n_directions(self) -> int:
        return 2 if self.direction == "bidirectional" else 1

    def _steps_features(self, input_shape) -> tuple[int, int]:
        if len(input_shape) != 2:
            raise ShapeError(
                f"{type(self).__name__} layer {self.name!r} needs series of shape "
                f"(steps, features) per sample; got {tuple(input_shape)}. A series of shape "
                "(channels, steps) needs Transpose((1, 0)) first."
            )
        return int(input_shape[0]), int(input_shape[1])

    def compute_output_shape(self, input_shape):
        t, _ = self._steps_features(input_shape)
        d, h = self.n_directions, self.hidden_size
        return (t, d, h) if self.output == "sequence" else (d, h)

    def param_shapes(self) -> dict[str, tuple[int, ...]]:
        """Shapes of the parameters for the input shape set by ``build``."""
        _, i = self._steps_features(self.input_shape)
        d, gh = self.n_directions, self.n_gates * self.hidden_size
        return {
            "weight": (d, gh, i),
            "recurrent_weight": (d, gh, self.hidden_size),
            "bias": (d, 2 * gh),
        }

    def _state_names(self) -> tuple[str, ...]:
        return ("initial_h",)

    def build(self, input_shape, rng, dtype):
        out = super().build(input_shape, rng, dtype)
        shapes = self.param_shapes()
        h = self.hidden_size
        self.params = {
            "weight": _uniform(rng, shapes["weight"], h, dtype),
            "recurrent_weight": _uniform(rng, shapes["recurrent_weight"], h, dtype),
            "bias": _uniform(rng, shapes["bias"], h, dtype),
        }
        self.buffers = {
            key: np.zeros((self.n_directions, h), dtype=dtype) for key in self._state_names()
        }
        return out

    # -- the passes -------------------------------------------------------------------
    def _run(self, xs, d, backend, keep):  # pragma: no cover - each subclass defines it
        raise NotImplementedError

    def _back(self, xs, d, backend, memo, dys, dh, dc):  # pragma: no cover
        raise NotImplementedError

    def apply(self, x, backend, record):
        _util.rows(x, self.input_shape, self)
        outs, memos = [], []
        for d in range(self.n_directions):
            xs = x[:, ::-1] if d == 1 or self.direction == "reverse" else x
            seq, last, memo = self._run(np.ascontiguousarray(xs), d, backend, record is not None)
            if self.output == "sequence":
                outs.append(seq[:, ::-1] if xs is not x else seq)
            else:
                outs.append(last[self.output])
            memos.append(memo)
        if record is not None:
            record["x"], record["memos"] = x, memos
        axis = 2 if self.output == "sequence" else 1
        return np.ascontiguousarray(np.stack(outs, axis=axis))

    def vjp(self, grad, backend, record, *, param_grads=True, input_grad=True):
        record = self._need(record, self)
        x = record["x"]
        n = x.shape[0]
        h = self.hidden_size
        gx = np.zeros(x.shape, dtype=grad.dtype) if input_grad else None
        grads = {k: np.zeros_like(v) for k, v in self.params.items()} if param_grads else {}
        for d in range(self.n_directions):
            flipped = d == 1 or self.direction == "reverse"
            xs = np.ascontiguousarray(x[:, ::-1] if flipped else x)
            zeros = np.zeros((n, h), dtype=grad.dtype)
            dys, dh, dc = None, zeros, zeros
            if self.output == "sequence":
                dys = grad[:, ::-1, d] if flipped else grad[:, :, d]
            elif self.output == "hidden":
                dh = grad[:, d]
            else:
                dc = grad[:, d]
            dgx, dparams = self._back(
                xs, d, backend, record["memos"][d], dys, dh, dc, param_grads, input_grad
            )
            if input_grad:
                gx += dgx[:, ::-1] if flipped else dgx
            for key, value in dparams.items():
                grads[key][d] = value
        return gx, grads

    def _inputs(self, xs, d, backend):
        """The input projections of every step, ``xs @ W[d].T``: one product, (n, T, G*H)."""
        n, t, i = xs.shape
        return backend.matmul(xs.reshape(n * t, i), self.weight[d].T).reshape(n, t, -1)

    def _param_grads(self, xs, d, backend, dpre, dq, states, input_grad, rows=None):
        """Input and parameter gradients of all steps from the pre-activation gradients."""
        n, t, i = xs.shape
        gh = dpre.shape[-1]
        flat = dpre.reshape(n * t, gh)
        dx = backend.matmul(flat, self.weight[d]).reshape(n, t, i) if input_grad else None
        if states is None:
            return dx, {}
        w = backend.matmul(flat.T, xs.reshape(n * t, i))
        r = (
            rows
            if rows is not None
            else backend.matmul(dq.reshape(n * t, gh).T, states.reshape(n * t, -1))
        )
        b = np.concatenate(
            [backend.reduce(np.sum, flat, axis=0), backend.reduce(np.sum, dq.reshape(n * t, gh), 0)]
        )
        return dx, {"weight": w, "recurrent_weight": r, "bias": b}

    def get_config(self):
        return {"hidden_size": self.hidden_size, "direction": self.direction, "output": self.output}

    def macs_per_sample(self):
        if not self.input_shape:
            return 0
        t, i = self._steps_features(self.input_shape)
        gh = self.n_gates * self.hidden_size
        return self.n_directions * t * gh * (i + self.hidden_size)

    def _describe(self):
        i = self._steps_features(self.input_shape)[1] if self.input_shape else "?"
        return (
            f"{type(self).__name__}({i} -> {self.hidden_size}, direction={self.direction}, "
            f"output={self.output})"
        )


def _uniform(rng, shape, hidden, dtype):
    """PyTorch's initialisation: uniform in +-1/sqrt(hidden_size); zeros without ``rng``."""
    if rng is None:
        return np.zeros(shape, dtype=dtype)
    bound = 1.0 / np.sqrt(hidden)
    return rng.uniform(-bound, bound, size=shape).astype(dtype)


class LSTM(_Recurrent):
    """Long short-term memory over the steps of a series (ONNX ``LSTM``).

    Parameters
    ----------
    hidden_size : int
        ``H``, the state width.
    direction : {"forward", "reverse", "bidirectional"}, default="forward"
    output : {"sequence", "hidden", "cell"}, default="sequence"
        What the layer returns: the hidden state of every step, shape (steps, directions,
        H) (ONNX's ``Y`` with the batch axis outside), or the last hidden or cell state,
        shape (directions, H) (``Y_h``, ``Y_c``). A reverse direction's last state is the
        one at step 0.
    peepholes : bool, default=False
        Gates that read the cell (ONNX's ``P``): i and f the last step's, o this step's.
    name : str, optional

    Attributes
    ----------
    weight : ndarray of shape (directions, 4 * H, features)
        ONNX's ``W``, gates i, o, f, c.
    recurrent_weight : ndarray of shape (directions, 4 * H, H)
        ONNX's ``R``.
    bias : ndarray of shape (directions, 8 * H)
        ONNX's ``B``: the input biases, then the recurrent ones.
    peephole : ndarray of shape (directions, 3 * H)
        ONNX's ``P`` (Pi, Po, Pf), with ``peepholes=True`` only.
    initial_h, initial_c : ndarray of shape (directions, H)
        Buffers: the states before the first step, the same for every sample (zeros).

    Notes
    -----
    Input per sample: (steps, features), the batch axis outside (``batch_first`` in
    PyTorch; a time-major ONNX tensor is the same values with its batch axis moved,
    which the ONNX importer reads as such). Per step ``t``, with ``g = x_t W.T + h R.T +
    Wb + Rb`` split into i, o, f, c: ``c_t = sigma(f) c_{t-1} + sigma(i) tanh(c)``,
    ``h_t = sigma(o) tanh(c_t)``. With peepholes, ``Pi c_{t-1}`` and ``Pf c_{t-1}`` join
    the pre-activations of i and f, and ``Po c_t`` that of o.
    """

    kind: ClassVar[str] = "lstm"
    n_gates: ClassVar[int] = 4
    outputs: ClassVar[tuple[str, ...]] = ("sequence", "hidden", "cell")

    def __init__(
        self,
        hidden_size: int,
        direction: str = "forward",
        output: str = "sequence",
        name: str | None = None,
        *,
        peepholes: bool = False,
    ) -> None:
        super().__init__(hidden_size, direction, output, name)
        self.peepholes = bool(peepholes)

    peephole = _util.parameter("peephole")

    def param_shapes(self) -> dict[str, tuple[int, ...]]:
        shapes = super().param_shapes()
        if self.peepholes:
            shapes["peephole"] = (self.n_directions, 3 * self.hidden_size)
        return shapes

    def build(self, input_shape, rng, dtype):
        out = super().build(input_shape, rng, dtype)
        if self.peepholes:
            shape = self.param_shapes()["peephole"]
            self.params["peephole"] = _uniform(rng, shape, self.hidden_size, dtype)
        return out

    def get_config(self):
        config = super().get_config()
        return {**config, "peepholes": True} if self.peepholes else config

    def _state_names(self):
        return ("initial_h", "initial_c")

    def _peepholes(self, d: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """``(Pi, Po, Pf)`` of direction ``d``, each (H,)."""
        pi, po, pf = np.split(self.peephole[d], 3)
        return pi, po, pf

    def _run(self, xs, d, backend, keep):
        n, t, _ = xs.shape
        h4 = 4 * self.hidden_size
        b = self.bias[d]
        p = backend.elementwise(_add, self._inputs(xs, d, backend), b[:h4] + b[h4:])
        h = np.broadcast_to(self.buffers["initial_h"][d], (n, self.hidden_size)).astype(p.dtype)
        c = np.broadcast_to(self.buffers["initial_c"][d], (n, self.hidden_size)).astype(p.dtype)
        hs, cs, acts = [h], [c], []
        rt = self.recurrent_weight[d].T
        peep = self._peepholes(d) if self.peepholes else None
        for step in range(t):
            q = backend.matmul(h, rt)
            if peep is None:
                a = backend.elementwise(_lstm_gates, p[:, step], q, ops=4)
                c = backend.elementwise(_lstm_cell, a, c, ops=3)
            else:
                ac = backend.elementwise(_lstm_peephole_step, p[:, step], q, c, *peep, ops=13)
                a, c = ac[:, :h4], ac[:, h4:]
            h = backend.elementwise(_lstm_hidden, a, c, ops=2)
            hs.append(h)
            cs.append(c)
            acts.append(a)
        memo = (np.stack(hs, 1), np.stack(cs, 1), np.stack(acts, 1)) if keep else None
        seq = np.stack(hs[1:], axis=1)
        return seq, {"hidden": h, "cell": c}, memo

    def _back(self, xs, d, backend, memo, dys, dh, dc, param_grads, input_grad):
        hs, cs, acts = memo
        t = xs.shape[1]
        r = self.recurrent_weight[d]
        dpre = np.empty(acts.shape, dtype=acts.dtype)
        peep = self._peepholes(d) if self.peepholes else None
        for step in range(t - 1, -1, -1):
            if dys is not None:
                dh = backend.elementwise(_add, dh, dys[:, step])
            a, c = acts[:, step], cs[:, step + 1]
            if peep is None:
                dcell = backend.elementwise(_lstm_dcell, a, c, dh, dc, ops=5)
            else:
                dcell = backend.elementwise(_lstm_peephole_dcell, a, c, dh, dc, peep[1], ops=10)
            g = backend.elementwise(_lstm_dgates, a, cs[:, step], c, dh, dcell, ops=12)
            dpre[:, step] = g
            if peep is None:
                dc = backend.elementwise(
                    _times, dcell, a[:, 2 * self.hidden_size : 3 * self.hidden_size]
                )
            else:
                dc = backend.elementwise(_lstm_peephole_dprev, a, dcell, g, peep[0], peep[2], ops=5)
            if step:
                dh = backend.matmul(g, r)
        states = hs[:, :-1] if param_grads else None
        dx, grads = self._param_grads(xs, d, backend, dpre, dpre, states, input_grad)
        if param_grads and peep is not None:  # sum over rows and steps of gate x cell
            k = self.hidden_size
            gates = (dpre[..., :k], dpre[..., k : 2 * k], dpre[..., 2 * k : 3 * k])
            cells = (cs[:, :-1], cs[:, 1:], cs[:, :-1])  # i, f read c_{t-1}; o reads c_t
            grads["peephole"] = np.concatenate(
                [
                    backend.reduce(np.sum, backend.elementwise(_times, g, c), (0, 1))
                    for g, c in zip(gates, cells)
                ]
            )
        return dx, grads


class GRU(_Recurrent):
    """Gated recurrent unit over the steps of a series (ONNX ``GRU``).

    Parameters
    ----------
    hidden_size : int
    direction : {"forward", "reverse", "bidirectional"}, default="forward"
    output : {"sequence", "hidden"}, default="sequence"
        As :class:`LSTM`'s.
    linear_before_reset : bool, default=False
        ONNX's ``linear_before_reset``: the reset gate multiplies ``h R_h.T + Rb_h`` (True,
        PyTorch's and Keras's ``reset_after``) or the state before the product (False,
        ONNX's default).
    name : str, optional

    Attributes
    ----------
    weight : ndarray of shape (directions, 3 * H, features)
        ONNX's ``W``, gates z, r, h.
    recurrent_weight : ndarray of shape (directions, 3 * H, H)
    bias : ndarray of shape (directions, 6 * H)
    initial_h : ndarray of shape (directions, H)

    Notes
    -----
    ``z = sigma(x Wz.T + h Rz.T + Wbz + Rbz)``, ``r`` alike, the candidate ``n = tanh(x Wh.T +
    Wbh + r (h Rh.T + Rbh))`` (``linear_before_reset``) or ``tanh(x Wh.T + Wbh + (r h) Rh.T +
    Rbh)``, and ``h_t = (1 - z) n + z h_{t-1}``.
    """

    kind: ClassVar[str] = "gru"
    n_gates: ClassVar[int] = 3

    def __init__(
        self,
        hidden_size: int,
        direction: str = "forward",
        output: str = "sequence",
        linear_before_reset: bool = False,
        name: str | None = None,
    ) -> None:
        super().__init__(hidden_size, direction, output, name)
        self.linear_before_reset = bool(linear_before_reset)

    def _run(self, xs, d, backend, keep):
        n, t, _ = xs.shape
        k = self.hidden_size
        b = self.bias[d]
        wb, rb = b[: 3 * k], b[3 * k :]
        lbr = self.linear_before_reset
        fixed = np.concatenate(
            [wb[: 2 * k] + rb[: 2 * k], wb[2 * k :] + (0 if lbr else rb[2 * k :])]
        )
        p = backend.elementwise(_add, self._inputs(xs, d, backend), fixed)
        h = np.broadcast_to(self.buffers["initial_h"][d], (n, k)).astype(p.dtype)
        r = self.recurrent_weight[d]
        rzr, rh = r[: 2 * k].T, r[2 * k :].T
        hs, zrs, hhs, mids = [h], [], [], []
        for step in range(t):
            if lbr:
                q = backend.matmul(h, r.T)
                zr = backend.elementwise(_gru_zr, p[:, step, : 2 * k], q[:, : 2 * k])
                mid = backend.elementwise(_add, q[:, 2 * k :], rb[2 * k :])
                hh = backend.elementwise(_gru_candidate_lbr, p[:, step, 2 * k :], zr, mid, ops=3)
            else:
                zr = backend.elementwise(_gru_zr, p[:, step, : 2 * k], backend.matmul(h, rzr))
                mid = backend.elementwise(_times, zr[:, k:], h)
                hh = backend.elementwise(
                    np.tanh, backend.elementwise(_add, p[:, step, 2 * k :], backend.matmul(mid, rh))
                )
            h = backend.elementwise(_gru_state, zr, hh, h, ops=3)
            hs.append(h)
            zrs.append(zr)
            hhs.append(hh)
            mids.append(mid)
        memo = tuple(np.stack(v, 1) for v in (hs, zrs, hhs, mids)) if keep else None
        return np.stack(hs[1:], axis=1), {"hidden": h}, memo

    def _back(self, xs, d, backend, memo, dys, dh, dc, param_grads, input_grad):
        hs, zrs, hhs, mids = memo
        n, t, _ = xs.shape
        k = self.hidden_size
        lbr = self.linear_before_reset
        r = self.recurrent_weight[d]
        dpre = np.empty((n, t, 3 * k), dtype=hs.dtype)  # d pre-activations of z, r, h
        dq = np.empty((n, t, 3 * k), dtype=hs.dtype)  # d of the recurrent products' outputs
        for step in range(t - 1, -1, -1):
            if dys is not None:
                dh = backend.elementwise(_add, dh, dys[:, step])
            zr, hh, h_prev, mid = zrs[:, step], hhs[:, step], hs[:, step], mids[:, step]
            zh = backend.elementwise(_gru_dpre, zr, hh, h_prev, dh, ops=8)
            dz, dah = zh[:, :k], zh[:, k:]
            carry = backend.elementwise(_blend, zr, dh)
            if lbr:
                dr = backend.elementwise(_gru_dr, zr, backend.elementwise(_times, dah, mid))
                dqh = backend.elementwise(_times, dah, zr[:, k:])
                g = np.concatenate([dz, dr, dqh], axis=1)
                dpre[:, step] = np.concatenate([dz, dr, dah], axis=1)
                dq[:, step] = g
                dh = backend.elementwise(_add, carry, backend.matmul(g, r))
            else:
                dmid = backend.matmul(dah, r[2 * k :])  # d loss / d (r * h_prev)
                dr = backend.elementwise(_gru_dr, zr, backend.elementwise(_times, dmid, h_prev))
                g = np.concatenate([dz, dr], axis=1)
                dpre[:, step] = np.concatenate([dz, dr, dah], axis=1)
                dq[:, step] = dpre[:, step]
                through = backend.elementwise(_times, dmid, zr[:, k:])
                dh = backend.elementwise(
                    _add, backend.elementwise(_add, carry, through), backend.matmul(g, r[: 2 * k])
                )
        if not param_grads:
            return self._param_grads(xs, d, backend, dpre, dq, None, input_grad)
        states = hs[:, :-1]
        rows = None
        if not lbr:
            flat = dq.reshape(n * t, 3 * k)
            rows = np.concatenate(
                [
                    backend.matmul(flat[:, : 2 * k].T, states.reshape(n * t, k)),
                    backend.matmul(flat[:, 2 * k :].T, mids.reshape(n * t, k)),
                ]
            )
        return self._param_grads(xs, d, backend, dpre, dq, states, input_grad, rows)

    def get_config(self):
        config = super().get_config()
        return {**config, "linear_before_reset": True} if self.linear_before_reset else config
