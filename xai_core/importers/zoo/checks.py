"""Each stage of the zoo's check on one model: what passes, what fails, what is refused.

:func:`check_model` builds the model and runs, in order:

``import``
    ``xai.from_torch`` (or ``xai.from_keras``): the export, ``from_onnx`` and
    ``from_torch``'s own check on its two batches.
``forward``
    the imported network's output on a new batch, within :data:`FORWARD_RTOL` of the
    source's (largest difference over the largest output).
``ig``
    ``xai.explain(net, X, method="ig", steps=...)``: finite attributions of the input's shape.
``tpu``
    ``ModelRunner(net, "tpu").predict``: bf16 products, within :data:`TPU_RTOL` of ``cpu``.
``edgetpu``
    ``xai.quantize(net, calibration rows)`` run on ``edgetpu``: finite outputs.
``tflite``
    ``xai.to_tflite`` of the quantised model, run by LiteRT's reference kernels: its
    integers within one step of ``edgetpu``'s.

A stage ends ``pass``, ``fail`` (wrong numbers, or an error the project did not mean),
``refused`` (a :class:`~xai_core.errors.CapabilityError`: something the project says
it does not support, such as an operator) or ``skipped`` (a stage it needs did not pass,
or it was not asked for). Nothing raises: each stage records the first line of its error
and its time.
"""

from __future__ import annotations

import contextlib
import tempfile
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from xai_core.errors import CapabilityError, ValidationError
from xai_core.importers.zoo import ZooModel

__all__ = [
    "FORWARD_RTOL",
    "STAGES",
    "TPU_RTOL",
    "StageResult",
    "ZooResult",
    "check_model",
]

#: Every stage, in the order they run.
STAGES: tuple[str, ...] = ("import", "forward", "ig", "tpu", "edgetpu", "tflite")
#: The stages each one needs to have passed.
NEEDS: dict[str, tuple[str, ...]] = {
    "import": (),
    "forward": ("import",),
    "ig": ("import",),
    "tpu": ("import",),
    "edgetpu": ("import",),
    "tflite": ("edgetpu",),
}
#: Largest difference from the source's output, over its largest output.
FORWARD_RTOL = 1e-4
#: Largest difference of ``tpu``'s (bf16) output from ``cpu``'s, over the largest output.
TPU_RTOL = 0.1


class StageFailure(Exception):
    """A stage ran but its numbers are wrong."""


@dataclass(frozen=True)
class StageResult:
    """One stage's outcome.

    Attributes
    ----------
    status : {"pass", "fail", "refused", "skipped"}
    seconds : float
    detail : str
        The first line of the error; for a pass, the figure measured (an error, a size).
    """

    status: str
    seconds: float = 0.0
    detail: str = ""


@dataclass
class ZooResult:
    """Every stage's outcome for one model (``stages[name]``)."""

    entry: ZooModel
    stages: dict[str, StageResult] = field(default_factory=dict)

    @property
    def passed(self) -> bool:
        """Whether every stage that ran passed."""
        ran = [s for s in self.stages.values() if s.status != "skipped"]
        return bool(ran) and all(s.status == "pass" for s in ran)

    def status(self, stage: str) -> str:
        return self.stages[stage].status if stage in self.stages else "skipped"


def _first_line(exc: BaseException) -> str:
    text = str(exc).strip().splitlines()
    return f"{type(exc).__name__}: {text[0] if text else ''}"[:300]


def _rel(got: np.ndarray, want: np.ndarray) -> float:
    got = np.asarray(got, dtype=np.float64).reshape(len(want), -1)
    want = np.asarray(want, dtype=np.float64).reshape(len(want), -1)
    if got.shape != want.shape:
        raise StageFailure(f"output shape {got.shape}; expected {want.shape}")
    if not np.isfinite(got).all():
        raise StageFailure("non-finite outputs")
    return float(np.abs(got - want).max() / max(np.abs(want).max(), 1e-30))


# -- the sources: importing a framework model, and its own forward -------------------------
def _import(entry: ZooModel, model: Any, X: np.ndarray) -> Any:
    import xai_core as xai

    if entry.source == "torch":
        import torch

        return xai.from_torch(model, torch.from_numpy(X))
    return xai.from_keras(model)


def _reference(entry: ZooModel, model: Any, X: np.ndarray) -> np.ndarray:
    if entry.source == "torch":
        import torch

        with torch.no_grad():
            out = model(torch.from_numpy(X))
        return out.detach().numpy().reshape(len(X), -1)
    return np.asarray(model(X, training=False)).reshape(len(X), -1)


# -- the stages ------------------------------------------------------------------------------
class _State:
    def __init__(self, entry: ZooModel, batch: int, steps: int, seed: int) -> None:
        rng = np.random.default_rng(seed)
        shape = (batch, *entry.input_shape)
        self.entry = entry
        self.steps = steps
        self.X = rng.standard_normal(shape).astype(np.float32)
        self.example = rng.standard_normal(shape).astype(np.float32)
        self.calibration = rng.standard_normal((8, *entry.input_shape)).astype(np.float32)
        self.model: Any = None
        self.net: Any = None
        self.qnet: Any = None
        self.edgetpu_q: np.ndarray | None = None


def _stage_import(s: _State) -> str:
    s.model = s.entry.build()
    s.net = _import(s.entry, s.model, s.example)
    return f"{len(s.net.nodes)} nodes"


def _stage_forward(s: _State) -> str:
    err = _rel(s.net.predict(s.X), _reference(s.entry, s.model, s.X))
    if not err <= FORWARD_RTOL:
        raise StageFailure(f"relative error {err:.2e} > {FORWARD_RTOL:g}")
    return f"rel {err:.1e}"


def _stage_ig(s: _State) -> str:
    import xai_core as xai

    e = xai.explain(s.net, s.X, method="ig", steps=s.steps)
    values = np.asarray(e.values)
    if values.shape != s.X.shape or not np.isfinite(values).all():
        raise StageFailure(
            f"attributions of shape {values.shape}, finite {np.isfinite(values).all()}"
        )
    return f"{s.steps} steps"


def _stage_tpu(s: _State) -> str:
    import xai_core as xai

    got = xai.ModelRunner(s.net, backend="tpu").predict(s.X)
    err = _rel(got, s.net.predict(s.X))
    if not err <= TPU_RTOL:
        raise StageFailure(f"bf16 relative error {err:.2e} > {TPU_RTOL:g}")
    return f"rel {err:.1e}"


def _stage_edgetpu(s: _State) -> str:
    import xai_core as xai

    s.qnet = xai.quantize(s.net, s.calibration, progress=False)
    runner = xai.ModelRunner(s.qnet, backend="edgetpu")
    out = np.asarray(runner.predict(s.X), dtype=np.float64)
    if not np.isfinite(out).all():
        raise StageFailure("non-finite outputs")
    Q = s.qnet.quantize_input(s.X)
    s.edgetpu_q = np.asarray(s.qnet.run(Q, runner.backend)[s.qnet.graph.outputs[0]])
    return f"rel {_rel(out, s.net.predict(s.X)):.1e} vs float"


def _litert(path: Path, Q: np.ndarray) -> np.ndarray:
    from xai_core.optional import require

    litert = require("ai_edge_litert.interpreter", extra="tflite", need="running LiteRT")
    it = litert.Interpreter(
        str(path), experimental_op_resolver_type=litert.OpResolverType.BUILTIN_REF
    )
    it.allocate_tensors()
    inp, out = it.get_input_details()[0]["index"], it.get_output_details()[0]["index"]
    rows = []
    for row in Q:  # the file's batch is 1
        it.set_tensor(inp, row[None])
        it.invoke()
        rows.append(it.get_tensor(out).copy())
    return np.concatenate(rows)


def _stage_tflite(s: _State) -> str:
    import xai_core as xai

    with tempfile.TemporaryDirectory() as tmp:
        path = xai.to_tflite(s.qnet, Path(tmp) / "model.tflite")
        size = path.stat().st_size
        theirs = _litert(path, s.qnet.quantize_input(s.X)).astype(np.int64)
    ours = np.asarray(s.edgetpu_q).reshape(theirs.shape).astype(np.int64)
    diff = int(np.abs(theirs - ours).max())
    if diff > 1:
        raise StageFailure(f"LiteRT's integers differ from edgetpu's by up to {diff}")
    return f"{size / 1e6:.1f} MB, max diff {diff}"


_RUN: dict[str, Callable[[_State], str]] = {
    "import": _stage_import,
    "forward": _stage_forward,
    "ig": _stage_ig,
    "tpu": _stage_tpu,
    "edgetpu": _stage_edgetpu,
    "tflite": _stage_tflite,
}


def check_model(
    entry: ZooModel,
    *,
    stages: Sequence[str] = STAGES,
    steps: int = 4,
    batch: int = 2,
    seed: int = 0,
) -> ZooResult:
    """Run the zoo's stages on one model; never raises for what a stage does.

    Parameters
    ----------
    entry : ZooModel
    stages : sequence of str, default=STAGES
        The stages to run (``"import"`` always runs when another is asked for); the rest
        are recorded ``skipped``.
    steps : int, default=4
        IG's quadrature steps.
    batch : int, default=2
        Rows of the random input batch, of shape (batch, *entry.input_shape).
    seed : int, default=0
        The inputs' generator.

    Returns
    -------
    ZooResult
        One :class:`StageResult` per stage of :data:`STAGES`.

    Raises
    ------
    ValidationError
        An unknown stage name (before anything runs).
    """
    unknown = [st for st in stages if st not in STAGES]
    if unknown:
        raise ValidationError(f"stages must be among {', '.join(STAGES)}; got {unknown}.")
    wanted = {"import", *stages}
    for st in list(wanted):
        wanted.update(NEEDS[st])
    s = _State(entry, batch, steps, seed)
    result = ZooResult(entry)
    with _one_torch_thread(entry):
        _run_stages(s, wanted, result)
    return result


@contextlib.contextmanager
def _one_torch_thread(entry: ZooModel) -> Iterator[None]:
    """torch on one thread while a torch model is checked (restored after): its reference
    passes are small, and on a busy machine its thread pool spends more time waiting than
    computing (a 64 px MNASNet's convolutions took 30x longer on two threads)."""
    if entry.source != "torch":
        yield
        return
    import torch

    was = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        yield
    finally:
        torch.set_num_threads(was)


def _run_stages(s: _State, wanted: set[str], result: ZooResult) -> None:
    for stage in STAGES:
        missing = [n for n in NEEDS[stage] if result.status(n) != "pass"]
        if stage not in wanted or missing:
            why = f"needs {', '.join(missing)}" if missing else "not asked for"
            result.stages[stage] = StageResult("skipped", 0.0, why)
            continue
        start = time.perf_counter()
        try:
            detail = _RUN[stage](s)
            status = "pass"
        except CapabilityError as exc:
            status, detail = "refused", _first_line(exc)
        except Exception as exc:  # noqa: BLE001 - every failure is recorded, none raised
            status, detail = "fail", _first_line(exc)
        result.stages[stage] = StageResult(status, time.perf_counter() - start, detail)
