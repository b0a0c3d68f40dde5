"""The xai command: plugins, backends, demo, and python -m xai_core."""

import json
import subprocess
import sys

import pytest

from xai_core.cli.main import main


def test_plugins_json(capsys):
    """`xai plugins --json` lists the built-ins and first-party plugins with their registrations."""
    assert main(["plugins", "--json"]) == 0
    records = {r["name"]: r for r in json.loads(capsys.readouterr().out)}
    assert records["xai_core.backends.cpu"]["registers"] == {"backend": ["cpu"]}
    assert records["xai_core.cli.commands"]["hooks"] == ["xai_register_cli_commands"]


def test_plugins_text(capsys):
    """The text listing names each plugin and its distribution."""
    assert main(["plugins"]) == 0
    assert "xai_core.backends.cpu  [xai-core" in capsys.readouterr().out


def test_backends(capsys):
    """`xai backends` shows each backend's numerics; --json is machine-readable."""
    assert main(["backends"]) == 0
    assert "cpu" in capsys.readouterr().out
    assert main(["backends", "--json"]) == 0
    rows = json.loads(capsys.readouterr().out)
    assert {"name": "cpu"}.items() <= rows[0].items() and "numerics" in rows[0]


def test_closed_pipe_is_no_traceback():
    """`xai backends | head -1`: the command stops quietly when its reader has gone."""
    proc = subprocess.Popen(
        [sys.executable, "-m", "xai_core", "backends"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    proc.stdout.close()  # the reader goes before the command writes anything
    stderr = proc.stderr.read().decode()
    assert proc.wait() == 141 and "Traceback" not in stderr


def test_no_command_prints_help(capsys):
    """Plain `xai` prints usage and exits 2."""
    assert main([]) == 2
    assert "usage: xai" in capsys.readouterr().out


def test_python_dash_m():
    """`python -m xai_core --version` works."""
    out = subprocess.run(
        [sys.executable, "-m", "xai_core", "--version"], capture_output=True, text=True, check=True
    )
    assert out.stdout.startswith("xai-core ")


def test_report_from_model_and_data(tmp_path, capsys):
    """`xai report --model m.npz --data d.npz` explains the rows and writes one offline page."""
    import numpy as np

    import xai_core as xai

    net = xai.nn.mlp(3, hidden=(4,), n_outputs=2, seed=0)
    net.save(tmp_path / "m.npz")
    np.savez(
        tmp_path / "d.npz",
        X=np.random.default_rng(0).random((8, 3)),
        feature_names=np.array(["a", "b", "c"]),
    )
    out = tmp_path / "r.html"
    assert (
        main(
            [
                "report",
                "--model",
                str(tmp_path / "m.npz"),
                "--data",
                str(tmp_path / "d.npz"),
                "--method",
                "ig",
                "--method",
                "saliency",
                "--rows",
                "2",
                "-o",
                str(out),
            ]
        )
        == 0
    )
    page = out.read_text()
    assert "ig on cpu: m.npz" in page and "saliency on cpu" in page and "https://" not in page
    assert "3 section(s)" in capsys.readouterr().out


@pytest.fixture
def mnist_files(tmp_path):
    """An MLP over 784 pixels saved as m.npz, and 6 MNIST rows as Dataset.to_frame() writes them."""
    import xai_core as xai
    from xai_datasets import load_mnist

    test = load_mnist("test").take(range(6))
    xai.nn.mlp(784, hidden=(4,), n_outputs=10, seed=0).save(tmp_path / "m.npz")
    test.to_frame().to_csv(tmp_path / "rows.csv", index=False)
    return tmp_path


@pytest.mark.parametrize("command", ["explain", "report"])
@pytest.mark.parametrize(
    ("target", "message"),
    [
        (
            "y",
            "--target 'y' is not a column of rows.csv (785 columns; the last, where "
            "Dataset.to_frame() writes the target, is 'label')",
        ),
        ("Label", "--target 'Label' is not a column of rows.csv (785 columns; closest: label)"),
        (
            None,
            "--data 'rows.csv' has 785 columns and the model takes 784 inputs: is 'label' "
            "its label column? Name it with --target label",
        ),
    ],
    ids=["unknown", "case", "missing"],
)
def test_csv_target_mistakes_are_one_short_line(mnist_files, capsys, command, target, message):
    """A wrong --target names the close columns, not 785 of them; a forgotten one says so."""
    d = mnist_files
    argv = [command, "--model", str(d / "m.npz"), "--data", str(d / "rows.csv")]
    argv += [] if target is None else ["--target", target]
    assert main([*argv, "-o", str(d / ("e.json" if command == "explain" else "r.html"))]) == 2
    err = capsys.readouterr().err
    assert message in err and len(err) < 300 and err.count("\n") == 1


def test_csv_with_target_label_is_explained(mnist_files, capsys):
    """--target label, the column Dataset.to_frame() writes, leaves the label out of the features."""
    d = mnist_files
    argv = ["explain", "--model", str(d / "m.npz"), "--data", str(d / "rows.csv")]
    assert main([*argv, "--target", "label", "--rows", "3", "-o", str(d / "e.json")]) == 0
    assert "values (3, 784)" in capsys.readouterr().out


def test_report_from_saved_explanations(tmp_path):
    """Saved explanations round-trip through JSON into a report."""
    import xai_core as xai

    e = xai.Explanation(
        values=[[1.0, -2.0]],
        base_values=[0.5],
        target=[1],
        feature_names=["<b>x</b>", "y"],
        method="m",
        meta={"seed": 3},
    )
    e.save(tmp_path / "e.json")
    back = xai.Explanation.load(tmp_path / "e.json")
    assert back.feature_names == e.feature_names and back.meta["seed"] == 3
    assert main(["report", str(tmp_path / "e.json"), "-o", str(tmp_path / "r.html")]) == 0
    assert "&lt;b&gt;x&lt;/b&gt;" in (tmp_path / "r.html").read_text()


def test_report_needs_input(tmp_path, capsys):
    """Nothing to report, or a model without data, is a one-line error and exit status 2."""
    assert main(["report", "-o", str(tmp_path / "r.html")]) == 2
    assert "xai report: error: nothing to report" in capsys.readouterr().err
    assert main(["report", "--model", "m.npz", "-o", str(tmp_path / "r.html")]) == 2
    assert "model and data go together" in capsys.readouterr().err


def test_explain_saves_json_that_report_reads(tmp_path, capsys):
    """`xai explain` explains saved rows with options and saves JSON that `xai report` renders."""
    import numpy as np

    import xai_core as xai

    xai.nn.mlp(3, hidden=(4,), n_outputs=2, seed=0).save(tmp_path / "m.npz")
    np.savez(tmp_path / "d.npz", X=np.random.default_rng(0).random((8, 3)))
    out = tmp_path / "e.json"
    argv = [
        "explain",
        "--model",
        str(tmp_path / "m.npz"),
        "--data",
        str(tmp_path / "d.npz"),
        "--method",
        "ig",
        "--option",
        "steps=8",
        "--option",
        "integration=riemann_middle",
        "--rows",
        "3",
        "-o",
        str(out),
    ]
    assert main(argv) == 0
    e = xai.Explanation.load(out)
    assert e.values.shape == (3, 3) and e.meta["options"]["steps"] == 8
    assert e.meta["options"]["integration"] == "riemann_middle"
    assert "ig on cpu: 3 row(s)" in capsys.readouterr().out
    assert main(["report", str(out), "-o", str(tmp_path / "r.html")]) == 0
    assert main(argv[:-2] + ["--option", "stepz=8", "-o", str(out)]) == 2
    assert "Unknown option of method 'ig' 'stepz'" in capsys.readouterr().err


def test_explain_and_report_take_an_onnx_file(tmp_path, capsys):
    """`xai explain --model m.onnx` explains as xai.explain(xai.from_onnx(path), X) does."""
    import numpy as np
    import pytest

    torch = pytest.importorskip("torch")
    pytest.importorskip("onnx")
    import xai_core as xai
    from xai_core.importers.torch_import import export_onnx

    torch.manual_seed(0)
    module = torch.nn.Sequential(torch.nn.Linear(3, 4), torch.nn.Tanh(), torch.nn.Linear(4, 2))
    X = np.random.default_rng(0).random((6, 3)).astype(np.float32)
    (tmp_path / "m.onnx").write_bytes(export_onnx(module, torch.from_numpy(X)))
    np.savez(tmp_path / "d.npz", X=X)
    out = tmp_path / "e.json"
    argv = ["explain", "--model", str(tmp_path / "m.onnx"), "--data", str(tmp_path / "d.npz")]
    assert main([*argv, "--method", "ig", "--rows", "4", "-o", str(out)]) == 0
    want = xai.explain(xai.from_onnx(tmp_path / "m.onnx"), X[:4], method="ig")
    assert np.array_equal(xai.Explanation.load(out).values, want.values)
    report = ["report", "--model", str(tmp_path / "m.onnx"), "--data", str(tmp_path / "d.npz")]
    assert main([*report, "-o", str(tmp_path / "r.html")]) == 0
    (tmp_path / "m.pt").write_bytes(b"\0")
    capsys.readouterr()
    assert main([*argv[:2], str(tmp_path / "m.pt"), *argv[3:], "-o", str(out)]) == 2
    assert "'m.pt' is not a model file" in capsys.readouterr().err
