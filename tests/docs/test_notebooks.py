"""The example notebooks: stored clean, open in Colab, and run headless without an error."""

from __future__ import annotations

import importlib.util
import json
import os
import re
import sys
from pathlib import Path

import pytest

NOTEBOOKS_DIR = Path(__file__).resolve().parents[2] / "docs" / "notebooks"
NAMES = (
    "quickstart",
    "third_party_plugin",
    "tabular_whatif",
    "projector",
    "import_pytorch",
    "edge_tpu",
    "whatif_editor",
    "playground",
    "text",
    "sound",
    "teachable",
)
COLAB_URL = "https://colab.research.google.com/github/xai-core/xai-core/blob/main/docs/notebooks/"
BADGE = (
    "[![Open In Colab](https://colab.research.google.com/assets/colab-badge.svg)]"
    f"({COLAB_URL}{{name}}.ipynb)"
)
#: Files each notebook writes into its working directory.
WRITES = {
    "quickstart": ["quickstart.html"],
    "tabular_whatif": ["tabular_whatif.html"],
    "import_pytorch": ["import_pytorch.html"],
    "edge_tpu": ["mnist_float.tflite", "mnist_int8.tflite", "edge_tpu.html"],
    "whatif_editor": ["whatif_editor.html"],
    "playground": ["playground.html"],
    "teachable": [
        "export/model.tflite",
        "export/model_int8.tflite",
        "export/labels.txt",
        "teachable.html",
    ],
}


def _load(name: str) -> dict:
    return json.loads((NOTEBOOKS_DIR / f"{name}.ipynb").read_text(encoding="utf-8"))


def _needs_jupyter():
    """nbformat, nbclient and ipykernel, or a skip (a failure where XAI_REQUIRE_NOTEBOOKS is set)."""
    missing = [
        m for m in ("nbformat", "nbclient", "ipykernel") if importlib.util.find_spec(m) is None
    ]
    if missing:
        reason = (
            f"{', '.join(missing)} not installed: pip install 'xai-core[notebook]' "
            "to run the example notebooks"
        )
        if os.environ.get("XAI_REQUIRE_NOTEBOOKS"):
            pytest.fail(f"notebook tests are required here but {reason}")
        pytest.skip(reason)
    import nbclient
    import nbformat

    return nbformat, nbclient


def _run(nb, path: Path, monkeypatch):
    """Execute ``nb`` in a fresh python3 kernel whose working directory is ``path``."""
    _, nbclient = _needs_jupyter()
    monkeypatch.setenv("JUPYTER_PREFER_ENV_PATH", "1")  # this environment's kernel spec first
    monkeypatch.delenv("XAI_DISABLE_PLUGIN_AUTOLOAD", raising=False)
    client = nbclient.NotebookClient(
        nb, timeout=300, kernel_name="python3", resources={"metadata": {"path": str(path)}}
    )
    client.execute()
    return nb


@pytest.mark.parametrize("name", NAMES, ids=NAMES)
def test_notebook_opens_in_colab_and_installs_only_there(name):
    """The first cell has the Colab badge for this file; the first code cell installs only in Colab."""
    nb = _load(name)
    assert nb["nbformat"] == 4 and nb["metadata"]["kernelspec"]["name"] == "python3"
    first = nb["cells"][0]
    assert first["cell_type"] == "markdown"
    assert BADGE.format(name=name) in "".join(first["source"])
    code = [c for c in nb["cells"] if c["cell_type"] == "code"]
    install = "".join(code[0]["source"])
    assert nb["cells"][1] is code[0]
    assert re.search(r'^if "google\.colab" in sys\.modules:', install, re.M)
    assert re.search(r"^    %pip install -q \"xai-core @ git\+https://github\.com/", install, re.M)
    assert not any("pip install" in "".join(c["source"]) for c in code[1:])


@pytest.mark.parametrize("name", NAMES, ids=NAMES)
def test_notebook_is_stored_without_outputs(name):
    """No outputs, no execution counts, and a valid nbformat 4 document."""
    nb = _load(name)
    for cell in nb["cells"]:
        if cell["cell_type"] == "code":
            assert cell["outputs"] == [] and cell["execution_count"] is None
            assert "execution" not in cell.get("metadata", {})
    if importlib.util.find_spec("nbformat") is not None:  # the schema check needs nbformat
        import nbformat

        nbformat.validate(nbformat.reads(json.dumps(nb), as_version=4))


def test_notebooks_match_their_build_script():
    """Each stored notebook is exactly what build_notebooks.py writes, and the README links each."""
    pytest.importorskip(
        "nbformat", reason="nbformat not installed: pip install 'xai-core[notebook]'"
    )
    spec = importlib.util.spec_from_file_location(
        "build_notebooks", NOTEBOOKS_DIR / "build_notebooks.py"
    )
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    assert tuple(module.NOTEBOOKS) == NAMES
    readme = (NOTEBOOKS_DIR / "README.md").read_text(encoding="utf-8")
    for name in NAMES:
        stored = (NOTEBOOKS_DIR / f"{name}.ipynb").read_text(encoding="utf-8")
        assert stored == module.render(name), f"{name}.ipynb differs: run build_notebooks.py"
        assert f"]({name}.ipynb)" in readme and f"{COLAB_URL}{name}.ipynb" in readme


def test_kernel_runs_this_python(tmp_path, monkeypatch):
    """The kernel nbclient starts runs this interpreter and environment, in the given directory."""
    nbformat, _ = _needs_jupyter()
    nb = nbformat.v4.new_notebook()
    source = "import os, sys\nprint(sys.executable, sys.prefix, os.getcwd(), sep='\\n')"
    nb.cells = [nbformat.v4.new_code_cell(source)]
    _run(nb, tmp_path, monkeypatch)
    executable, prefix, cwd = nb.cells[0].outputs[0]["text"].split("\n")[:3]
    assert (executable, prefix) == (sys.executable, sys.prefix)
    assert Path(cwd).resolve() == tmp_path.resolve()


@pytest.mark.slow
@pytest.mark.parametrize("name", NAMES, ids=NAMES)
def test_notebook_runs_headless(name, tmp_path, monkeypatch):
    """Every cell runs without an error; files go to the working directory, none into the repo."""
    nbformat, _ = _needs_jupyter()
    before = sorted(p.name for p in NOTEBOOKS_DIR.iterdir())
    nb = nbformat.read(NOTEBOOKS_DIR / f"{name}.ipynb", as_version=4)
    _run(nb, tmp_path, monkeypatch)  # raises CellExecutionError on the first failing cell
    code = [c for c in nb.cells if c.cell_type == "code"]
    assert all(c.execution_count is not None for c in code)
    assert not [o for c in code for o in c.outputs if o.output_type == "error"]
    for filename in WRITES.get(name, []):
        assert (tmp_path / filename).stat().st_size > 0
    assert sorted(p.name for p in NOTEBOOKS_DIR.iterdir()) == before
