"""Teachable Machine's loop: the first-party ``teachable_trainer`` tool.

``trainer = xai.teachable_trainer("photos/", kind="image")`` reads a folder of class
folders (images, WAV sounds) or a dataset (pose vectors); ``trainer.class_counts`` shows
the samples, ``trainer.train(epochs=50, batch_size=16, learning_rate=0.001)`` trains on
85 % of each class, ``trainer.accuracy_per_class`` and ``trainer.confusion_matrix`` score
the other 15 %, ``trainer.predict_bars(file)`` and ``trainer.widget()`` preview a sample,
``trainer.app()`` is the whole page with the knobs, and ``trainer.export(folder)`` writes ``model.tflite``, ``model_int8.tflite`` and ``labels.txt``
with the int8 file's Edge TPU placement. The trainer is a report section.
"""

from __future__ import annotations

import xai_core
from xai_core import ReportSection, Tool, hookimpl

__getattr__, __dir__, __all__ = xai_core.lazy_exports(
    __name__,
    {
        "trainer": ["TeachableTrainer", "held_out_split", "teachable_trainer"],
        "export": ["TeachableExport"],
        "widgets": ["TeachableApp", "TeachableWidget"],
    },
    eager=["xai_register_report_sections", "xai_register_tools"],
)


@hookimpl
def xai_register_tools():
    """The ``teachable_trainer`` tool."""
    from xai_teachable.trainer import teachable_trainer

    return [
        Tool(
            "teachable_trainer",
            teachable_trainer,
            "Teachable Machine's loop: train on class folders, score, preview, export",
        )
    ]


@hookimpl
def xai_register_report_sections():
    """The section of a TeachableTrainer."""
    from xai_teachable.render import render_teachable
    from xai_teachable.trainer import TeachableTrainer

    return [ReportSection("teachable", TeachableTrainer, render_teachable, "Teachable Machine")]
