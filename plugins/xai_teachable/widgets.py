"""The live preview of a trained project: pick a held-out sample or upload a file, the bars follow.

Driven from Python as by clicks: set ``widget.picker.value = k`` (the k-th held-out sample)
or call :meth:`TeachableWidget.show` with a file, and :attr:`TeachableWidget.bars` holds the
class probabilities shown.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from xai_core.errors import XaiError
from xai_core.report import isolate
from xai_core.widgets import require_widgets
from xai_teachable.render import render_bars

__all__ = ["TeachableWidget"]

_UPLOAD_ACCEPT = {"image": ".png,.jpg,.jpeg", "audio": ".wav"}


class TeachableWidget:
    """Teachable Machine's preview: a sample in, a probability bar per class out.

    Parameters
    ----------
    trainer : TeachableTrainer
        Trained.

    Attributes
    ----------
    picker : ipywidgets.Dropdown
        The held-out samples, by position in ``trainer.test_rows``.
    upload : ipywidgets.FileUpload or None
        An image (or WAV) file to classify; none for pose projects.
    bars : pandas.Series or None
        The probabilities shown now, indexed by class.
    output : ipywidgets.HTML
        The bars (or the error a bad file raised).
    """

    def __init__(self, trainer: Any) -> None:
        w = require_widgets()
        self.trainer = trainer
        names, y = trainer.class_names, trainer.samples.y
        options = [
            (f"held-out {k}: {names[int(y[row])]}", k) for k, row in enumerate(trainer.test_rows)
        ]
        self.picker = w.Dropdown(options=options, value=0, description="sample")
        accept = _UPLOAD_ACCEPT.get(trainer.kind)
        self.upload = w.FileUpload(accept=accept, multiple=False) if accept else None
        self.output = w.HTML()
        self.bars = None
        self.picker.observe(lambda change: self.show(change["new"]), names="value")
        if self.upload is not None:
            self.upload.observe(self._uploaded, names="value")
        controls = [self.picker] + ([self.upload] if self.upload is not None else [])
        self.box = w.VBox([w.HBox(controls), self.output])
        self.show(0)

    def show(self, item: Any) -> Any:
        """Classify ``item`` (see :meth:`TeachableTrainer.read`) and draw its bars; returns them."""
        from html import escape

        try:
            self.bars = self.trainer.predict_bars(item)
        except (XaiError, ValueError, OSError) as exc:  # a bad upload: say why, keep the view
            self.bars = None
            self.output.value = f"<p>Cannot classify this sample: {escape(isolate(str(exc)))}</p>"
            return None
        top = self.trainer.class_names[int(np.argmax(self.bars.to_numpy()))]
        self.output.value = f"<p>Prediction: {escape(isolate(top))}</p>" + render_bars(self.bars)
        return self.bars

    def _uploaded(self, change: Any) -> None:
        files = change["new"]
        if isinstance(files, dict):  # ipywidgets 7: {name: {"content": ...}}
            files = list(files.values())
        if files:
            self.show(bytes(files[-1]["content"]))

    def _repr_mimebundle_(self, **kwargs: Any) -> Any:
        return self.box._repr_mimebundle_(**kwargs)
