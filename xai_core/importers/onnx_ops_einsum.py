"""``Einsum`` as the batched products attention exports: transposes, reshapes and one MatMul.

MaxViT's attention exports ``"B G H I D, B G H J D -> B G H I J"`` (``q @ k^T``) and
``"B G H I J, B G H J D -> B G H I D"`` (``p @ v``). An equation of one or two operands is
lowered onto native layers, so forward, backward and every backend's counters are those of
:class:`~xai_core.nn.MatMul`, :class:`~xai_core.nn.Transpose`, :class:`~xai_core.nn.Reshape`
and :class:`~xai_core.nn.Reduce`:

- each index in one operand only and not in the output is summed there (a ``Reduce``);
- the indices of both operands and the output are batch indices, those of both but not the
  output are contracted, the rest free: the first operand is transposed to (batch, free,
  contracted), the second to (batch, contracted, free), each reshaped to three groups, one
  ``MatMul`` multiplies them, and the result is reshaped and transposed to the output's
  order.

An ellipsis (``...``) stands for as many indices as the operand has axes beyond its
letters, aligned from the right across operands as numpy aligns them, and leads the
implicit output. An index repeated within one operand (``ii->i``, a diagonal) takes the
diagonal first: that operand's axes of the index moved last, merged, and the diagonal's
positions gathered (a ``Gather``); summed afterwards if the output lacks it (a trace).

The first index of every operand computed at run time is the batch axis: it must be the
same index, the output's first, and in no constant operand. An ``Einsum`` of constants only
is folded at import (:mod:`xai_core.importers.onnx_fold`). Refused, naming the equation:
an index repeated in the output or on the batch axis, more than two operands, an index
moving the batch axis, a scalar per sample.
"""

from __future__ import annotations

import numpy as np

from xai_core import nn
from xai_core.errors import ModelFormatError
from xai_core.importers.ir import IRNode
from xai_core.importers.onnx_ops import Builder
from xai_core.importers.onnx_registry import register

__all__ = ["LETTERS", "parse_equation"]


def parse_equation(equation: str, ranks: list[int] | None = None) -> tuple[list[str], str] | None:
    """The operands' indices and the output's of an ``Einsum`` equation.

    Spaces are ignored. An ellipsis becomes letters the equation does not use, as many as
    each operand's rank in ``ranks`` leaves (aligned from the right: an operand of fewer
    such axes takes the last ones); the implicit form's output is the ellipsis' letters,
    then the indices seen once, sorted. None when the equation has an ellipsis and no
    ``ranks`` are given, or characters other than letters, commas, ``...`` and one ``->``,
    or a rank too small for its letters.
    """
    text = equation.replace(" ", "")
    if text.count("->") > 1 or ("..." in text and ranks is None):
        return None
    lhs, arrow, rhs = text.partition("->")
    operands = lhs.split(",")
    named = "".join(operands + [rhs]).replace("...", "")
    if not all(c.isalpha() and c.isascii() for c in named):
        return None
    dots = ""
    if "..." in text:
        if len(ranks) != len(operands):
            return None
        counts = [
            r - len(o.replace("...", "")) if "..." in o else 0 for o, r in zip(operands, ranks)
        ]
        if min(counts) < 0 or any(o.count("...") > 1 for o in operands):
            return None
        free = [c for c in LETTERS if c not in named]
        dots = "".join(free[: max(counts)])
        operands = [
            o.replace("...", dots[len(dots) - n :] if n else "") for o, n in zip(operands, counts)
        ]
        rhs = rhs.replace("...", dots)
    letters = "".join(operands)
    if not arrow:
        rhs = dots + "".join(
            sorted(c for c in set(letters) if letters.count(c) == 1 and c not in dots)
        )
    return operands, rhs


#: The letters an equation may use, in the order unused ones are taken.
LETTERS = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"


class _Operand:
    """One operand: its indices and either its native node (a run-time tensor, the batch
    axis outside ``letters``) or its constant value."""

    def __init__(self, letters: str, node: str | None, value: np.ndarray | None) -> None:
        self.letters, self.node, self.value = letters, node, value

    def sizes(self, b: Builder) -> list[int]:
        return list(self.value.shape if self.node is None else b.g.shape_of(self.node))

    def diagonals(self, b: Builder, node: IRNode, tag: str) -> _Operand:
        """This operand with each repeated index taken once: its diagonal."""
        o = self
        for c in dict.fromkeys(x for x in self.letters if self.letters.count(x) > 1):
            kept = "".join(x for x in o.letters if x != c)
            sizes = {d for x, d in zip(o.letters, o.sizes(b)) if x == c}
            if len(sizes) != 1:
                raise ModelFormatError(
                    f"{b.where}: Einsum node {node.name!r}: index {c!r}, repeated in one "
                    f"operand, has sizes {sorted(sizes)}."
                )
            m, (n,) = o.letters.count(c), sizes
            if o.node is None:
                o = _Operand(kept + c, None, np.einsum(f"{o.letters}->{kept}{c}", o.value))
                continue
            perm = tuple(
                [i for i, x in enumerate(o.letters) if x != c]
                + [i for i, x in enumerate(o.letters) if x == c]
            )
            moved = b.add(node, nn.Transpose(perm), [o.node], suffix=f"/{tag}_{c}_moved")
            shape = tuple(o.sizes(b)[i] for i in perm[: len(kept)]) + (n**m,)
            merged = b.add(node, nn.Reshape(shape), [moved], suffix=f"/{tag}_{c}_merged")
            step = sum(n**j for j in range(m))  # (i, i, ..., i) in the merged axis
            layer = nn.Gather(len(kept), np.arange(n) * step)
            o = _Operand(kept + c, b.add(node, layer, [merged], suffix=f"/{tag}_{c}"), None)
        return o

    def sum_over(self, b: Builder, node: IRNode, drop: str, tag: str) -> _Operand:
        """This operand summed over the indices ``drop``."""
        if not drop:
            return self
        axes = tuple(self.letters.index(c) for c in drop)
        kept = "".join(c for c in self.letters if c not in drop)
        if self.node is None:
            return _Operand(kept, None, self.value.sum(axis=axes))
        layer = nn.Reduce("sum", axes, keepdims=False)
        return _Operand(kept, b.add(node, layer, [self.node], suffix=f"/{tag}"), None)

    def arranged(self, b: Builder, node: IRNode, order: str, tag: str) -> _Operand:
        """This operand with its axes in the order of the indices ``order``."""
        if order == self.letters:
            return self
        perm = tuple(self.letters.index(c) for c in order)
        if self.node is None:
            return _Operand(order, None, np.ascontiguousarray(self.value.transpose(perm)))
        return _Operand(order, b.add(node, nn.Transpose(perm), [self.node], suffix=f"/{tag}"), None)

    def reshaped(self, b: Builder, node: IRNode, shape: tuple[int, ...], tag: str) -> _Operand:
        """This operand reshaped (its indices then grouped: ``letters`` no longer one a axis)."""
        if tuple(self.sizes(b)) == shape:
            return self
        if self.node is None:
            return _Operand(self.letters, None, self.value.reshape(shape))
        return _Operand(
            self.letters, b.add(node, nn.Reshape(shape), [self.node], suffix=f"/{tag}"), None
        )


def _operands(b: Builder, node: IRNode, letters: list[str], equation: str) -> list[_Operand]:
    """Each operand, the batch index taken off the run-time ones."""
    acts = [i for i, name in enumerate(node.inputs) if b.is_act(name)]
    batch = {letters[i][:1] for i in acts}
    if len(batch) != 1 or not all(letters[i] for i in acts):
        raise b.fail(
            node,
            f"equation {equation!r}: every operand computed at run time must start with the "
            "same index (the batch axis).",
        )
    (s,) = batch
    out: list[_Operand] = []
    for i, (name, idx) in enumerate(zip(node.inputs, letters)):
        if i in acts:
            if s in idx[1:]:
                raise b.fail(node, f"equation {equation!r}: index {s!r} repeated.")
            shape = b.g.shape_of(b.node_of(node, name))
            if len(shape) + 1 != len(idx):
                raise ModelFormatError(
                    f"{b.where}: Einsum node {node.name!r}: operand {i} has {len(shape) + 1} "
                    f"axes; equation {equation!r} gives it {len(idx)}."
                )
            out.append(_Operand(idx[1:], b.node_of(node, name), None))
        else:
            value = np.asarray(b.numbers(node, name), dtype=b.g.dtype)
            if s in idx:
                raise b.fail(
                    node,
                    f"equation {equation!r}: a constant operand indexed by the batch axis {s!r}.",
                )
            if value.ndim != len(idx):
                raise ModelFormatError(
                    f"{b.where}: Einsum node {node.name!r}: operand {i} has {value.ndim} "
                    f"axes; equation {equation!r} gives it {len(idx)}."
                )
            out.append(_Operand(idx, None, value))
    return out


def _check(b: Builder, node: IRNode, letters: list[str], rhs: str, equation: str) -> None:
    def refuse(why: str):
        return b.fail(node, f"equation {equation!r}: {why} is not supported.")

    if len(letters) != len(node.inputs):
        raise ModelFormatError(
            f"{b.where}: Einsum node {node.name!r}: equation {equation!r} has {len(letters)} "
            f"operands; the node {len(node.inputs)} inputs."
        )
    if len(letters) > 2:
        raise refuse("more than two operands")
    if len(set(rhs)) != len(rhs):
        raise refuse(f"an index repeated in the output {rhs!r}")
    if set(rhs) - set("".join(letters)):
        raise ModelFormatError(
            f"{b.where}: Einsum node {node.name!r}: equation {equation!r} has output indices "
            "no operand has."
        )


def op_einsum(b: Builder, node: IRNode) -> None:
    """``Einsum`` of one or two operands, one at least computed at run time."""
    equation = str(node.attrs.get("equation", ""))
    ranks = [b.rank(node, i) if b.is_act(i) else np.ndim(b.numbers(node, i)) for i in node.inputs]
    parsed = parse_equation(equation, ranks)
    if parsed is None:
        raise b.fail(
            node,
            f"equation {equation!r}: notation not supported (letters, commas, one '->' and "
            "an ellipsis per operand are).",
        )
    letters, rhs = parsed
    _check(b, node, letters, rhs, equation)
    ops = [
        o.diagonals(b, node, f"diagonal{k}")
        for k, o in enumerate(_operands(b, node, letters, equation))
    ]
    s, out = rhs[:1], rhs[1:]
    if not out:
        raise b.fail(node, f"equation {equation!r}: a scalar per sample is not supported.")
    if not any(letters[i][:1] == s for i, o in enumerate(ops) if o.node is not None):
        raise b.fail(node, f"equation {equation!r}: the output must start with the batch index.")
    sizes: dict[str, int] = {}
    for o in ops:
        for c, d in zip(o.letters, o.sizes(b)):
            if sizes.setdefault(c, d) != d:
                raise ModelFormatError(
                    f"{b.where}: Einsum node {node.name!r}: index {c!r} of equation "
                    f"{equation!r} has sizes {sizes[c]} and {d}."
                )
    everywhere = "".join(o.letters for o in ops)
    ops = [
        o.sum_over(
            b,
            node,
            "".join(c for c in o.letters if c not in out and everywhere.count(c) == 1),
            f"sum{k}",
        )
        for k, o in enumerate(ops)
    ]
    if len(ops) == 1:
        (a,) = ops
        if a.node is None:
            raise b.fail(node, f"equation {equation!r}: no operand is computed at run time.")
        result = a.arranged(b, node, out, "transpose")
    else:
        result = _product(b, node, ops, out, sizes)
    if result.node in {b.act[i] for i in node.inputs if b.is_act(i)}:  # nothing to compute
        b.add(node, nn.Identity(), [result.node])
    else:
        b.act[node.outputs[0]] = result.node


def _product(b: Builder, node: IRNode, ops: list[_Operand], out: str, sizes: dict[str, int]):
    a, c = ops
    batch = "".join(x for x in out if x in a.letters and x in c.letters)
    contracted = "".join(x for x in a.letters if x in c.letters and x not in out)
    free_a = "".join(x for x in a.letters if x not in c.letters)
    free_c = "".join(x for x in c.letters if x not in a.letters)

    def prod(idx: str) -> int:
        return int(np.prod([sizes[x] for x in idx], dtype=np.int64))

    dims = tuple(sizes[x] for x in batch)
    a = a.arranged(b, node, batch + free_a + contracted, "a_transpose")
    a = a.reshaped(b, node, (*dims, prod(free_a), prod(contracted)), "a_reshape")
    c = c.arranged(b, node, batch + contracted + free_c, "b_transpose")
    c = c.reshaped(b, node, (*dims, prod(contracted), prod(free_c)), "b_reshape")
    rank = len(dims) + 3
    ins = [o.node if o.node is not None else b.value_node(node, o.value, rank) for o in (a, c)]
    y = _Operand(batch + free_a + free_c, b.add(node, nn.MatMul(), ins, suffix="/matmul"), None)
    y = y.reshaped(b, node, tuple(sizes[x] for x in y.letters), "reshape")
    return y.arranged(b, node, out, "transpose")


register(
    "Einsum",
    op_einsum,
    since=12,
    limits="one or two operands, the first index of each run-time operand the batch axis; "
    "ellipses, diagonals and traces; no index repeated in the output; of constants: folded",
)
