"""Hostile download arguments: refused with a ValidationError before any connection."""

from __future__ import annotations

import socket
from pathlib import Path

import pytest

from xai_core.errors import ValidationError
from xai_datasets._download import fetch

GOOD = "0" * 64

#: name -> (fetch keyword arguments, words the ValidationError must hold).
CASES: dict[str, tuple[dict, tuple[str, ...]]] = {
    "sha256-non-hex": ({"sha256": "zz" * 32}, ("sha256", "64 hexadecimal")),
    "sha256-short": ({"sha256": "abc"}, ("sha256", "'abc'")),
    "sha256-not-a-string": ({"sha256": 12}, ("sha256",)),
    "sha256-with-spaces": ({"sha256": " " + GOOD[1:]}, ("sha256",)),
    "deadline-zero": ({"deadline": 0}, ("deadline",)),
    "deadline-negative": ({"deadline": -5}, ("deadline",)),
    "deadline-nan": ({"deadline": float("nan")}, ("deadline",)),
    "deadline-infinite": ({"deadline": float("inf")}, ("deadline",)),
    "deadline-text": ({"deadline": "10s"}, ("deadline",)),
    "timeout-zero": ({"timeout": 0}, ("timeout",)),
    "url-scheme": ({"url": "ftp://127.0.0.1/x.gz"}, ("base_url", "ftp")),
}


@pytest.mark.parametrize("case", list(CASES), ids=list(CASES))
def test_hostile_fetch_arguments(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, case: str
) -> None:
    """Each bad argument is refused, naming it, and no socket is ever opened."""

    def no_connect(*args: object, **kwargs: object) -> None:
        raise AssertionError("a connection was attempted")

    monkeypatch.setattr(socket.socket, "connect", no_connect)
    kwargs = {"url": "http://127.0.0.1:9/x.gz", "dest": tmp_path / "x.gz", "sha256": GOOD}
    kwargs.update(CASES[case][0])
    with pytest.raises(ValidationError) as info:
        fetch(**kwargs)
    for w in CASES[case][1]:
        assert w in str(info.value)
    assert list(tmp_path.iterdir()) == []
