"""The hostile-input and fault suites: tables of cases, one table per entry point.

Each ``test_hostile_*.py`` module holds a dict of named cases for one entry point (what to
feed it, and what must come back: a value, or an error class with words its message must
hold) and one parametrised test over it. To cover a new hole, add a row to the table; to
cover a new entry point, add a table and a test. ``test_faults.py`` holds the writers (one
row per function that saves a file) and the faults injected into them (a full disk, an
interrupt), and checks that nothing is ever left half-written.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest


@pytest.fixture
def leftovers():
    """A function listing the files under a folder other than those named (temporaries)."""

    def find(folder: Path, *keep: str) -> list[str]:
        return sorted(
            str(p.relative_to(folder))
            for p in folder.rglob("*")
            if p.is_file() and p.name not in keep
        )

    return find


@pytest.fixture
def as_root() -> None:
    """Skip unless running as root (device nodes, mounts)."""
    if not hasattr(os, "getuid") or os.getuid() != 0:
        pytest.skip("needs root")
