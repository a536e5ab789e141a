"""Raw HTTP/1.1 over a socket to 127.0.0.1, for requests no polite client would send.

reply = send(port, b"POST / HTTP/1.1\\r\\nHost: evil.example\\r\\n\\r\\n")
reply = request(port, "POST", "/v1/chat/completions", {"Host": "x"}, b"{}")
reply.status, reply.headers["content-type"], reply.body, reply.json()
"""

from __future__ import annotations

import http.client
import json
import socket
from dataclasses import dataclass
from email.message import Message
from typing import Any


@dataclass
class Reply:
    status: int
    headers: Message
    body: bytes

    def json(self) -> Any:
        return json.loads(self.body)

    @property
    def text(self) -> str:
        return self.body.decode("utf-8", "replace")


def send(port: int, raw: bytes, *, timeout: float = 20.0) -> Reply:
    """Send ``raw`` as it is, read one response."""
    with socket.create_connection(("127.0.0.1", port), timeout=timeout) as conn:
        conn.sendall(raw)
        response = http.client.HTTPResponse(conn)
        response.begin()
        return Reply(response.status, response.headers, response.read())


def request(
    port: int,
    method: str,
    path: str,
    headers: dict[str, str] | list[tuple[str, str]] | None = None,
    body: bytes = b"",
    *,
    host: str | None = None,
) -> Reply:
    """One request with exactly these headers (``Host`` defaults to 127.0.0.1:PORT;
    ``Content-Length`` is added for a body unless given)."""
    items = list(headers.items()) if isinstance(headers, dict) else list(headers or [])
    names = {name.lower() for name, _ in items}
    if "host" not in names:
        items.insert(0, ("Host", host or f"127.0.0.1:{port}"))
    if body and "content-length" not in names and "transfer-encoding" not in names:
        items.append(("Content-Length", str(len(body))))
    head = f"{method} {path} HTTP/1.1\r\n" + "".join(f"{k}: {v}\r\n" for k, v in items)
    return send(port, head.encode("latin-1") + b"Connection: close\r\n\r\n" + body)


def json_post(port: int, path: str, body: bytes, headers: dict[str, str] | None = None) -> Reply:
    """A POST of ``body`` as application/json, plus ``headers``."""
    return request(port, "POST", path, {"Content-Type": "application/json", **(headers or {})},
                   body)  # fmt: skip
