"""``xai demo``, ``xai explain`` and ``xai report``: the commands that work from data files.

The one first-party package that imports :mod:`xai_datasets`; the core never does.
"""

from __future__ import annotations

import argparse
import sys

from xai_core import CliCommand, hookimpl
from xai_core.errors import ValidationError
from xai_demo._args import existing_file, output_file, parse_options, parse_rows, select_rows

_ROWS_HELP = (
    "rows to explain: a count N for the first N rows (5), or indices and inclusive ranges "
    "such as 0,3,10-19"
)


def _status(out: str):  # noqa: ANN202
    """Where to print the closing line: stderr when the output itself is -o /dev/stdout."""
    from xai_core.files import writes_in_place

    return sys.stderr if writes_in_place(out) else sys.stdout


def _demo(args: argparse.Namespace) -> int:
    from xai_demo.demo import run_demo

    output_file(args.out, "--out")  # before minutes of training

    return run_demo(
        output=args.out,
        dataset=args.dataset,
        quick=args.quick,
        progress=False if args.no_progress else None,
    )


_MODEL_HELP = (
    "the model file: a network saved with net.save (.npz), .onnx, .tflite, .keras, .h5, a "
    "TF.js model.json or a Teachable Machine .zip"
)


def _demo_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "-o", "--out", default="report.html", help="where to write the report (report.html)"
    )
    parser.add_argument(
        "--dataset", default="mnist", choices=["mnist", "fashion-mnist"], help="image data"
    )
    parser.add_argument(
        "--quick", action="store_true", help="smaller sizes, for a first look (about a minute)"
    )
    parser.add_argument(
        "--no-progress",
        action="store_true",
        help="hide progress bars (shown on a terminal, never in a log)",
    )


def _explain(args: argparse.Namespace) -> int:
    import numpy as np

    from xai_core import import_model
    from xai_core.attribution.explainer import explain
    from xai_demo.build import check_label_column, load_data

    # Every path and option is checked before any work.
    existing_file(args.model, "--model")
    existing_file(args.data, "--data")
    output_file(args.out, "--out")
    rows = parse_rows(args.rows)
    options = parse_options(args.option)
    X, _, names = load_data(args.data, args.target, "--data", "--target")
    X = select_rows(X, rows)
    model = import_model(args.model, X)
    if args.target is None:
        check_label_column(model, X, names, args.data, "--data", "--target")
    e = explain(
        model,
        X,
        method=args.method,
        backend=args.backend,
        feature_names=names,
        **options,
    )
    path = e.save(args.out)
    total = np.abs(e.values).reshape(len(e), -1).sum(axis=1)
    print(
        f"{e.method} on {e.backend}: {len(e)} row(s), values {e.values.shape}, "
        f"mean sum |attribution| {total.mean():.4g}; saved to {path}",
        file=_status(args.out),
    )
    return 0


def _explain_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--model", required=True, help=_MODEL_HELP)
    parser.add_argument(
        "--data", required=True, help="rows: .npz with X (y, feature_names) or .csv"
    )
    parser.add_argument(
        "--target",
        help="the label column of a CSV data file, left out of the features (label for a "
        "CSV written by Dataset.to_frame())",
    )
    parser.add_argument(
        "--method", default="auto", help="explainer (auto: ig with gradients, shap otherwise)"
    )
    parser.add_argument("--backend", default="cpu", help="backend the model runs on (cpu)")
    parser.add_argument("--rows", default="5", help=_ROWS_HELP)
    parser.add_argument(
        "--option", action="append", help="method option name=value (JSON values; repeatable)"
    )
    parser.add_argument(
        "-o", "--out", default="explanation.json", help="where to save the explanation"
    )


def _report(args: argparse.Namespace) -> int:
    from xai_demo.build import build_report

    if (args.model is None) != (args.data is None):
        raise ValidationError(
            "--model and --data: model and data go together: give both, or neither."
        )
    for path in args.results:
        existing_file(path, "results")
    for path, flag in ((args.model, "--model"), (args.data, "--data")):
        if path is not None:
            existing_file(path, flag)
    output_file(args.out, "--out")
    parse_rows(args.rows)
    report = build_report(
        model=args.model,
        data=args.data,
        results=args.results,
        methods=args.method,
        backend=args.backend,
        rows=args.rows,
        target=args.target,
        title=args.title,
        data_argument="--data",
        target_argument="--target",
    )
    path = report.save(args.out)
    print(f"Report with {len(report)} section(s): {path}", file=_status(args.out))
    return 0


def _report_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "results", nargs="*", help="explanations saved with Explanation.save (JSON)"
    )
    parser.add_argument("--model", help=_MODEL_HELP)
    parser.add_argument("--data", help="rows to explain: .npz with X (y, feature_names) or .csv")
    parser.add_argument(
        "--target",
        help="the label column of a CSV data file, left out of the features (label for a "
        "CSV written by Dataset.to_frame())",
    )
    parser.add_argument(
        "--method", action="append", help="method to run on the model (repeatable; default ig)"
    )
    parser.add_argument("--backend", default="cpu", help="backend the model runs on (cpu)")
    parser.add_argument("--rows", default="5", help=_ROWS_HELP)
    parser.add_argument("--title", help="report title")
    parser.add_argument(
        "-o", "--out", default="report.html", help="where to write the report (report.html)"
    )


@hookimpl
def xai_register_cli_commands():
    """``xai demo``, ``xai explain`` and ``xai report``."""
    return [
        CliCommand(
            "demo",
            "train a small MNIST network and explain it on every backend",
            _demo,
            _demo_arguments,
        ),
        CliCommand(
            "explain",
            "explain a saved model on rows of a data file; save the explanation as JSON",
            _explain,
            _explain_arguments,
        ),
        CliCommand(
            "report",
            "build a report from saved explanations, or from a saved model and a data file",
            _report,
            _report_arguments,
        ),
    ]
