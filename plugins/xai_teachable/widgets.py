"""The notebook views of a project: the live preview of the bars, and the whole page with the knobs.

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

__all__ = ["BATCH_SIZES", "TeachableApp", "TeachableWidget"]

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


#: The batch sizes Teachable Machine's training panel offers.
BATCH_SIZES = (16, 32, 64, 128, 256, 512)


class TeachableApp:
    """Teachable Machine's page in a notebook: the class counts, the training knobs, the scores, the preview.

    Parameters
    ----------
    trainer : TeachableTrainer
        Trained or not.
    export_folder : str, default="export"
        The folder the export button writes to (editable in the app).

    Attributes
    ----------
    epochs, batch_size, learning_rate, seed : ipywidgets widgets
        Teachable Machine's knobs (its defaults: 50, 16, 0.001).
    train_button, export_button : ipywidgets.Button
        ``app.train_button.click()`` trains as a click does.
    state : ipywidgets.HTML
        The trainer's section: counts, and once trained the accuracy per class, the
        confusion matrix and, once exported, the Edge TPU placement.
    preview : TeachableWidget or None
        The live bars, once trained.
    """

    def __init__(self, trainer: Any, *, export_folder: str = "export") -> None:
        from xai_teachable.render import render_teachable

        w = require_widgets()
        self.trainer = trainer
        self._render = render_teachable
        s = trainer.settings
        self.epochs = w.BoundedIntText(s.get("epochs", 50), min=1, max=10_000, description="epochs")
        self.batch_size = w.Dropdown(
            options=BATCH_SIZES, value=s.get("batch_size", 16), description="batch size"
        )
        self.learning_rate = w.BoundedFloatText(
            s.get("learning_rate", 0.001),
            min=1e-6,
            max=1.0,
            step=0.0001,
            description="learning rate",
        )
        self.seed = w.IntText(s.get("seed", 0), description="seed")
        self.train_button = w.Button(description="Train model", button_style="primary")
        self.folder = w.Text(export_folder, description="export to")
        self.export_button = w.Button(description="Export .tflite", disabled=not trainer.trained)
        self.message = w.HTML()
        self.state = w.HTML(render_teachable(trainer))
        self.preview = TeachableWidget(trainer) if trainer.trained else None
        self._preview_box = w.VBox([self.preview.box] if self.preview else [])
        self.train_button.on_click(lambda _: self.train())
        self.export_button.on_click(lambda _: self.export())
        knobs = w.VBox([self.epochs, self.batch_size, self.learning_rate, self.seed])
        actions = w.VBox([self.train_button, self.folder, self.export_button, self.message])
        self.box = w.VBox([w.HBox([knobs, actions]), self.state, self._preview_box])

    def train(self) -> Any:
        """Train with the knobs' values, then redraw the scores and open the preview."""
        self.message.value = "<p>Training…</p>"
        self.trainer.train(
            epochs=int(self.epochs.value),
            batch_size=int(self.batch_size.value),
            learning_rate=float(self.learning_rate.value),
            seed=int(self.seed.value),
        )
        self.preview = TeachableWidget(self.trainer)
        self._preview_box.children = [self.preview.box]
        self.export_button.disabled = False
        self.state.value = self._render(self.trainer)
        self.message.value = "<p>Trained.</p>"
        return self.trainer

    def export(self) -> Any:
        """Export to the folder typed in the app; the section then shows the placement."""
        from html import escape

        exported = self.trainer.export(self.folder.value)
        self.state.value = self._render(self.trainer)
        self.message.value = f"<p>Wrote {escape(isolate(str(exported.folder)))}.</p>"
        return exported

    def _repr_mimebundle_(self, **kwargs: Any) -> Any:
        return self.box._repr_mimebundle_(**kwargs)
