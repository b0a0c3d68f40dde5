"""The core runs without the import extra: nothing heavy is imported until an importer runs."""

from __future__ import annotations

import subprocess
import sys


def test_core_imports_none_of_the_import_extra():
    """import xai_core loads no torch, onnx, h5py, keras; without onnx, from_onnx says what to install."""
    script = (
        "import sys\n"
        "import xai_core as xai\n"
        "loaded = [m for m in ('torch', 'onnx', 'onnxruntime', 'h5py', 'keras') if m in sys.modules]\n"
        "assert not loaded, loaded\n"
        "sys.modules['onnx'] = None\n"
        "try:\n"
        "    xai.from_onnx(b'')\n"
        "except xai.CapabilityError as exc:\n"
        "    assert \"pip install 'xai-core[import]'\" in str(exc), exc\n"
        "else:\n"
        "    raise SystemExit('no error')\n"
    )
    subprocess.run([sys.executable, "-c", script], check=True, timeout=120)
