"""A moto S3 server behind a small HTTP proxy that injects the failures object stores have: 503
SlowDown, connections reset before the request reaches the store, and answers lost after the
store applied the request (the client cannot tell whether its write happened).

``plan(n, method, path)`` decides for the n-th request (from 1) what the proxy does: ``"pass"``,
``"503"``, ``"reset"`` or ``"lost"``. Used by tests/test_s3_faults.py and scripts/s3-fault-sweep.
"""

from __future__ import annotations

import contextlib
import http.client
import socket
import struct
import threading
from collections import Counter
from collections.abc import Callable
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from moto import server as moto_server

Plan = Callable[[int, str, str], str]

SLOW_DOWN = (
    b'<?xml version="1.0" encoding="UTF-8"?>\n<Error><Code>SlowDown</Code>'
    b"<Message>Please reduce your request rate.</Message><RequestId>proxy</RequestId></Error>"
)
_LINGER_RESET = struct.pack("ii", 1, 0)
_HOP_BY_HOP = {"connection", "keep-alive", "transfer-encoding", "proxy-connection", "content-length"}


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class FaultProxy:
    """A moto server on one port and the fault-injecting proxy on another; clients talk to
    :attr:`endpoint` (the proxy), :attr:`direct_endpoint` bypasses it."""

    def __init__(self) -> None:
        self.moto_port = free_port()
        self.moto = moto_server.ThreadedMotoServer(ip_address="127.0.0.1", port=self.moto_port, verbose=False)
        self.plan: Plan = lambda n, method, path: "pass"
        self.requests = 0
        self.log: list[tuple[str, str]] = []  # (method, path) of every request, in order
        self.injected: Counter[str] = Counter()
        self._lock = threading.Lock()
        proxy = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, format: str, *args: Any) -> None:
                pass

            def setup(self) -> None:
                super().setup()
                # An answer goes out as two writes (head, then body): with Nagle's algorithm the
                # body waits for the client's delayed ACK, ~40 ms a request on loopback.
                self.connection.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)

            def _body(self) -> bytes:
                if self.headers.get("Transfer-Encoding", "").lower() == "chunked":
                    chunks = []
                    while True:
                        size = int(self.rfile.readline().split(b";")[0].strip() or b"0", 16)
                        if size == 0:
                            while self.rfile.readline() not in (b"\r\n", b"\n", b""):
                                pass
                            return b"".join(chunks)
                        chunks.append(self.rfile.read(size))
                        self.rfile.readline()
                length = int(self.headers.get("Content-Length") or 0)
                return self.rfile.read(length) if length else b""

            def _handle(self) -> None:
                body = self._body()
                with proxy._lock:
                    proxy.requests += 1
                    n = proxy.requests
                    proxy.log.append((self.command, self.path))
                action = proxy.plan(n, self.command, self.path)
                if action != "pass":
                    with proxy._lock:
                        proxy.injected[action] += 1
                if action == "reset":
                    self._drop()
                    return
                if action == "503":
                    self.send_response(503, "Slow Down")
                    self.send_header("Content-Type", "application/xml")
                    self.send_header("Content-Length", str(len(SLOW_DOWN)))
                    self.end_headers()
                    self.wfile.write(SLOW_DOWN)
                    return
                status, reason, headers, data = proxy._forward(self.command, self.path, self.headers, body)
                if action == "lost":
                    self._drop()
                    return
                self.send_response(status, reason)
                for k, v in headers:
                    if k.lower() not in _HOP_BY_HOP:
                        self.send_header(k, v)
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                if self.command != "HEAD":
                    self.wfile.write(data)

            def _drop(self) -> None:
                self.close_connection = True
                # RST rather than FIN: the client sees "connection reset", as behind a load balancer.
                with contextlib.suppress(OSError):
                    self.connection.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, _LINGER_RESET)

            do_GET = do_PUT = do_POST = do_DELETE = do_HEAD = _handle

        self.proxy_port = free_port()
        self.server = ThreadingHTTPServer(("127.0.0.1", self.proxy_port), Handler)
        self.server.daemon_threads = True
        self._thread = threading.Thread(target=self.server.serve_forever, daemon=True)

    def _forward(self, method: str, path: str, headers: Any, body: bytes) -> tuple[int, str, list, bytes]:
        conn = http.client.HTTPConnection("127.0.0.1", self.moto_port, timeout=60)
        try:
            out = {k: v for k, v in headers.items() if k.lower() not in _HOP_BY_HOP}
            out["Content-Length"] = str(len(body))
            conn.request(method, path, body=body, headers=out)
            resp = conn.getresponse()
            data = resp.read()
            return resp.status, resp.reason, resp.getheaders(), data
        finally:
            conn.close()

    @property
    def endpoint(self) -> str:
        return f"http://127.0.0.1:{self.proxy_port}"

    @property
    def direct_endpoint(self) -> str:
        return f"http://127.0.0.1:{self.moto_port}"

    def storage_options(self, *, direct: bool = False, botocore_attempts: int = 1) -> dict[str, Any]:
        """s3fs options; ``botocore_attempts=1`` turns botocore's own retries off, so the failures
        reach s3fs and hudi-md's retry layer."""
        return {
            "key": "test",
            "secret": "test",
            "skip_instance_cache": True,
            "client_kwargs": {
                "endpoint_url": self.direct_endpoint if direct else self.endpoint,
                "region_name": "us-east-1",
            },
            "config_kwargs": {"retries": {"max_attempts": botocore_attempts, "mode": "standard"}},
        }

    def __enter__(self) -> FaultProxy:
        self.moto.start()
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.server.shutdown()
        self.server.server_close()
        self.moto.stop()
