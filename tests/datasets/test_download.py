"""Downloads against a local HTTP server: verified, atomic, retried; nothing corrupt cached."""

from __future__ import annotations

import socket
import sys
from pathlib import Path

import numpy as np
import pytest

from xai_core.errors import DataError, ValidationError, XaiWarning
from xai_datasets import load_fashion_mnist, load_mnist

pytestmark = pytest.mark.network

TEST_FILES = ["t10k-images-idx3-ubyte.gz", "t10k-labels-idx1-ubyte.gz"]


def _sums(folder: Path) -> dict[str, str]:
    lines = (folder / "SHA256SUMS").read_text().splitlines()
    return {name: digest for digest, name in (line.split() for line in lines if line.strip())}


@pytest.fixture
def mnist_dir(shared_data: Path) -> Path:
    """The shared MNIST sample folder that the local server publishes."""
    return shared_data / "mnist-sample"


def _files(folder: Path) -> list[str]:
    return sorted(p.name for p in folder.rglob("*") if p.is_file()) if folder.exists() else []


def test_download_verifies_caches_and_reuses(
    serve, mnist_dir: Path, tmp_path: Path, no_backoff: list[float]
) -> None:
    """download=True fetches the split's two files once, verified; later loads are offline."""
    server = serve(mnist_dir)
    cache = tmp_path / "cache"
    ds = load_mnist(
        "test", download=True, cache_dir=cache, base_url=server.url, sha256=_sums(mnist_dir)
    )
    assert len(ds) == 2000 and ds.X.dtype == np.float32 and server.url in ds.source
    assert sorted(server.requests) == TEST_FILES
    assert _files(cache) == TEST_FILES  # in cache/mnist/, no temporary files left
    reference = load_mnist("test", path=mnist_dir)
    np.testing.assert_array_equal(ds.X, reference.X)
    np.testing.assert_array_equal(ds.y, reference.y)
    again = load_mnist(
        "test", download=True, cache_dir=cache, base_url=server.url, sha256=_sums(mnist_dir)
    )
    assert len(server.requests) == 2  # served from the cache
    np.testing.assert_array_equal(again.y, ds.y)


def test_default_cache_is_xai_data_home(
    serve, mnist_dir: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Without cache_dir, files land in $XAI_DATA_HOME/mnist."""
    monkeypatch.setenv("XAI_DATA_HOME", str(tmp_path / "home"))
    server = serve(mnist_dir)
    load_mnist("test", download=True, base_url=server.url, sha256=_sums(mnist_dir))
    assert _files(tmp_path / "home" / "mnist") == TEST_FILES


@pytest.mark.skipif(sys.platform in ("win32", "darwin"), reason="XDG layout is Linux-only")
def test_default_cache_falls_back_to_xdg_cache_home(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Without $XAI_DATA_HOME, the cache is $XDG_CACHE_HOME/xai-core."""
    from xai_datasets._download import default_cache_dir

    monkeypatch.delenv("XAI_DATA_HOME", raising=False)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    assert default_cache_dir() == tmp_path / "xai-core"


def test_corrupt_download_is_refused_and_not_cached(
    serve, mnist_dir: Path, tmp_path: Path, no_backoff: list[float]
) -> None:
    """A file failing its SHA-256 raises DataError at once; the cache stays empty."""
    server = serve(mnist_dir, mode="corrupt")
    cache = tmp_path / "cache"
    with pytest.raises(DataError, match="t10k-images-idx3-ubyte.gz: SHA-256 checksum") as info:
        load_mnist(
            "test", download=True, cache_dir=cache, base_url=server.url, sha256=_sums(mnist_dir)
        )
    assert "Nothing was saved" in str(info.value)
    assert server.requests == ["t10k-images-idx3-ubyte.gz"]  # a bad checksum is not retried
    assert _files(cache) == []


def test_dropped_connection_is_retried_then_fails_clearly(
    serve, mnist_dir: Path, tmp_path: Path, no_backoff: list[float]
) -> None:
    """A connection that always dies mid-body is tried 3 times with doubling waits, then fails."""
    server = serve(mnist_dir, mode="drop")
    cache = tmp_path / "cache"
    with pytest.raises(DataError, match="after 3 attempts") as info:
        load_fashion_mnist(
            "test", download=True, cache_dir=cache, base_url=server.url, sha256=_sums(mnist_dir)
        )
    assert "connection closed after" in str(info.value)
    assert server.requests == ["t10k-images-idx3-ubyte.gz"] * 3
    assert no_backoff == [1.0, 2.0]
    assert _files(cache) == []


def test_connection_dropped_once_succeeds_on_retry(
    serve, mnist_dir: Path, tmp_path: Path, no_backoff: list[float]
) -> None:
    """A transient drop is retried and the verified file is used."""
    server = serve(mnist_dir, mode="drop-once")
    ds = load_mnist(
        "test", download=True, cache_dir=tmp_path, base_url=server.url, sha256=_sums(mnist_dir)
    )
    assert len(ds) == 2000
    assert sorted(server.requests) == sorted(TEST_FILES * 2)
    assert _files(tmp_path) == TEST_FILES


def test_http_503_is_retried(
    serve, mnist_dir: Path, tmp_path: Path, no_backoff: list[float]
) -> None:
    """A temporary server error (HTTP 503) is retried."""
    server = serve(mnist_dir, mode="500-once")
    ds = load_mnist(
        "test", download=True, cache_dir=tmp_path, base_url=server.url, sha256=_sums(mnist_dir)
    )
    assert len(ds) == 2000 and len(server.requests) == 4


def test_http_404_fails_without_retry(serve, tmp_path: Path, no_backoff: list[float]) -> None:
    """A missing file on the server (HTTP 404) fails at once, naming the URL."""
    empty = tmp_path / "empty"
    empty.mkdir()
    server = serve(empty)
    with pytest.raises(DataError, match=r"t10k-images-idx3-ubyte.gz: download: HTTP 404"):
        load_mnist("test", download=True, cache_dir=tmp_path / "c", base_url=server.url)
    assert len(server.requests) == 1 and _files(tmp_path / "c") == []


def test_refused_connection_fails_after_retries(tmp_path: Path, no_backoff: list[float]) -> None:
    """With nothing listening, every attempt fails and the error says what to do."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    with pytest.raises(DataError, match="after 3 attempts.*base_url=.*path="):
        load_mnist("test", download=True, cache_dir=tmp_path, base_url=f"http://127.0.0.1:{port}/")
    assert _files(tmp_path) == []


def test_corrupted_cache_file_is_replaced(
    serve, mnist_dir: Path, tmp_path: Path, no_backoff: list[float]
) -> None:
    """A cached file that no longer matches its checksum is deleted, re-fetched, and reported."""
    server = serve(mnist_dir)
    sums = _sums(mnist_dir)
    load_mnist("test", download=True, cache_dir=tmp_path, base_url=server.url, sha256=sums)
    cached = tmp_path / "mnist" / "t10k-labels-idx1-ubyte.gz"
    cached.write_bytes(cached.read_bytes()[:-3])
    with pytest.warns(XaiWarning, match="fails|SHA-256"):
        ds = load_mnist("test", download=True, cache_dir=tmp_path, base_url=server.url, sha256=sums)
    assert len(ds) == 2000 and server.requests.count("t10k-labels-idx1-ubyte.gz") == 2


def test_fashion_download_matches_the_folder(
    serve, shared_data: Path, tmp_path: Path, no_backoff: list[float]
) -> None:
    """Fashion-MNIST test files fetched from the server equal those read with path=."""
    folder = shared_data / "fashion-mnist"
    server = serve(folder)
    ds = load_fashion_mnist(
        "test", download=True, cache_dir=tmp_path, base_url=server.url, sha256=_sums(folder)
    )
    ref = load_fashion_mnist("test", path=folder)
    assert len(ds) == 10000 and ds.class_names[0] == "T-shirt/top"
    np.testing.assert_array_equal(ds.X, ref.X)
    assert _files(tmp_path) == TEST_FILES


def test_default_checksums_are_the_official_ones(
    serve, mnist_dir: Path, tmp_path: Path, no_backoff: list[float]
) -> None:
    """Without sha256=, files are checked against the official checksums (these differ)."""
    server = serve(mnist_dir)
    with pytest.raises(DataError, match="expected 8d422c7b0a1c1c79"):
        load_mnist("test", download=True, cache_dir=tmp_path, base_url=server.url)
    assert _files(tmp_path) == []


def test_official_tables_are_complete() -> None:
    """Each dataset has a mirror and a 64-hex-digit SHA-256 for each of its four files."""
    from xai_datasets._images import MIRRORS, OFFICIAL_SHA256

    for key in ("mnist", "fashion-mnist"):
        assert MIRRORS[key].startswith(("https://", "http://"))
        assert len(OFFICIAL_SHA256[key]) == 4
        assert all(len(v) == 64 and int(v, 16) >= 0 for v in OFFICIAL_SHA256[key].values())


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"base_url": "ftp://127.0.0.1/"}, "http, https or file URL"),
        ({"base_url": "http://127.0.0.1:9/", "sha256": {"x": "0" * 64}}, "must give a checksum"),
    ],
    ids=["scheme", "sha256-incomplete"],
)
def test_bad_download_arguments(tmp_path: Path, kwargs: dict, message: str) -> None:
    """A non-HTTP mirror or a checksum table without the needed file is refused up front."""
    with pytest.raises(ValidationError, match=message):
        load_mnist("test", download=True, cache_dir=tmp_path, **kwargs)


def test_trickling_server_is_abandoned_at_the_deadline(
    serve, mnist_dir: Path, tmp_path: Path, no_backoff: list[float]
) -> None:
    """A server sending one byte every 0.05 s is given up at deadline=, nothing cached."""
    server = serve(mnist_dir, "trickle")
    cache = tmp_path / "cache"
    with pytest.raises(DataError, match="deadline") as info:
        load_mnist(
            "test",
            download=True,
            cache_dir=cache,
            base_url=server.url,
            sha256=_sums(mnist_dir),
            deadline=0.5,
        )
    assert "too slow" in str(info.value) and "deadline=" in str(info.value)
    assert len(server.requests) == 1  # a passed deadline is not retried
    assert _files(cache) == []


@pytest.mark.parametrize(
    "digest", ["zz" * 32, "abc", 123, "0" * 63 + "g"], ids=["non-hex", "short", "int", "g"]
)
def test_malformed_sha256_is_refused_before_any_download(
    serve, mnist_dir: Path, tmp_path: Path, digest: object
) -> None:
    """A sha256= that is not 64 hex digits is a ValidationError before any request."""
    server = serve(mnist_dir)
    sums = _sums(mnist_dir)
    sums["t10k-labels-idx1-ubyte.gz"] = digest
    with pytest.raises(ValidationError, match="64 hexadecimal digits") as info:
        load_mnist("test", download=True, cache_dir=tmp_path, base_url=server.url, sha256=sums)
    assert "t10k-labels-idx1-ubyte.gz" in str(info.value)
    assert server.requests == []


@pytest.mark.parametrize("deadline", [0, -1, float("nan"), float("inf"), "soon", True])
def test_bad_deadline_is_refused_up_front(tmp_path: Path, deadline: object) -> None:
    """deadline= must be a positive finite number of seconds; checked before any request."""
    with pytest.raises(ValidationError, match="deadline"):
        load_mnist("test", download=True, cache_dir=tmp_path, deadline=deadline)
