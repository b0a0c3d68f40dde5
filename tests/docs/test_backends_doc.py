"""docs/backends.md: the TPU presets' table and the systolic-array sizes it states agree with the presets."""

from __future__ import annotations

import re
from pathlib import Path

from xai_core.backends.presets import TPU_PRESETS

DOC = Path(__file__).resolve().parents[2] / "docs" / "backends.md"


def test_tpu_preset_table_matches_the_presets():
    """Each row of the presets table gives the preset's array, MXUs and cores."""
    text = DOC.read_text(encoding="utf-8")
    for name, spec in TPU_PRESETS.items():
        row = re.search(rf"^\| `{name}` \| (\d+) x (\d+) \| (\d+) x (\d+) \|", text, re.M)
        assert row, name
        got = tuple(int(g) for g in row.groups())
        assert got == (*spec["array"], spec["mxus_per_core"], spec["cores"]), name


def test_doc_says_which_tpu_has_the_256_array():
    """256 x 256 is TPU v1's array; v2 and v3 have 128 x 128 MXUs of 16K MACs per cycle."""
    text = " ".join(DOC.read_text(encoding="utf-8").split())
    assert TPU_PRESETS["v1"]["array"] == (256, 256)
    assert TPU_PRESETS["v2"]["array"] == TPU_PRESETS["v3"]["array"] == (128, 128)
    assert "256 x 256 systolic array of the project's brief" in text
    assert "is TPU v1's: one int8 matrix unit of 65,536 MACs per cycle" in text
    assert f"TPU v2 and v3 have 128 x 128 MXUs, {128 * 128:,} (16K) bf16 MACs per cycle" in text
