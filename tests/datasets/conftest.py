"""Fixtures for the datasets tests: the shared IDX files, a no-internet guard, a local server."""

from __future__ import annotations

import socket
import threading
from collections.abc import Callable, Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from types import SimpleNamespace

import pytest

SHARED_DATA = Path(__file__).resolve().parents[2].parent / "shared" / "data"
_LOOPBACK = {"127.0.0.1", "::1", "localhost"}


@pytest.fixture(autouse=True)
def no_internet(monkeypatch: pytest.MonkeyPatch) -> None:
    """Fail any connection or name lookup that is not to the loopback interface."""
    real_connect = socket.socket.connect
    real_getaddrinfo = socket.getaddrinfo

    def connect(self: socket.socket, address: object) -> None:
        if isinstance(address, tuple) and address[0] not in _LOOPBACK:
            raise ConnectionRefusedError(f"test guard: no internet (connect to {address!r})")
        return real_connect(self, address)

    def getaddrinfo(host: object, *args: object, **kwargs: object) -> object:
        if host not in _LOOPBACK and host is not None:
            raise socket.gaierror(f"test guard: no internet (lookup of {host!r})")
        return real_getaddrinfo(host, *args, **kwargs)

    monkeypatch.setattr(socket.socket, "connect", connect)
    monkeypatch.setattr(socket, "getaddrinfo", getaddrinfo)
    for var in ("http_proxy", "https_proxy", "HTTP_PROXY", "HTTPS_PROXY", "all_proxy", "ALL_PROXY"):
        monkeypatch.delenv(var, raising=False)
    monkeypatch.setenv("no_proxy", "127.0.0.1,localhost")


@pytest.fixture
def shared_data() -> Path:
    """The shared IDX files (../shared/data next to the repository), or skip."""
    if not (SHARED_DATA / "mnist-sample").is_dir() or not (SHARED_DATA / "fashion-mnist").is_dir():
        pytest.skip(f"shared data not found: ../shared/data next to the repository ({SHARED_DATA})")
    return SHARED_DATA


@pytest.fixture
def no_backoff(monkeypatch: pytest.MonkeyPatch) -> list[float]:
    """Record the waits between download attempts instead of sleeping."""
    sleeps: list[float] = []
    monkeypatch.setattr("xai_datasets._download._sleep", sleeps.append)
    return sleeps


@pytest.fixture
def serve() -> Iterator[Callable[..., SimpleNamespace]]:
    """Start HTTP servers on 127.0.0.1 serving a folder's files, in a chosen failure mode.

    Modes: ``ok``; ``corrupt`` (one byte flipped); ``drop`` (every response stops halfway,
    with a full Content-Length); ``drop-once`` (only the first request per file);
    ``500-once`` (the first request per file gets HTTP 503); ``trickle`` (a full
    Content-Length, then one byte every 0.05 s, for at most 5 s).
    """
    servers: list[ThreadingHTTPServer] = []
    states: list[SimpleNamespace] = []

    def start(folder: Path, mode: str = "ok") -> SimpleNamespace:
        files = {p.name: p.read_bytes() for p in folder.iterdir() if p.is_file()}
        state = SimpleNamespace(mode=mode, requests=[], url="", stop=threading.Event())

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self) -> None:
                name = self.path.rsplit("/", 1)[-1]
                state.requests.append(name)
                first = state.requests.count(name) == 1
                body = files.get(name)
                if body is None:
                    self.send_error(404)
                    return
                if state.mode == "500-once" and first:
                    self.send_error(503)
                    return
                if state.mode == "corrupt":
                    body = body[:100] + bytes([body[100] ^ 0xFF]) + body[101:]
                self.send_response(200)
                self.send_header("Content-Type", "application/octet-stream")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                if state.mode == "trickle":
                    for i in range(100):
                        if state.stop.wait(0.05):
                            break
                        try:
                            self.wfile.write(body[i : i + 1])
                            self.wfile.flush()
                        except OSError:  # the client gave up
                            break
                    return
                drop = state.mode == "drop" or (state.mode == "drop-once" and first)
                self.wfile.write(body[: len(body) // 2] if drop else body)

            def log_message(self, *args: object) -> None:
                pass

        server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        threading.Thread(target=server.serve_forever, args=(0.05,), daemon=True).start()
        servers.append(server)
        states.append(state)
        state.url = f"http://127.0.0.1:{server.server_address[1]}/"
        return state

    yield start
    for state in states:
        state.stop.set()
    for server in servers:
        server.shutdown()
        server.server_close()
