"""Servers on this machine: a loopback base URL gets a short connect timeout (SPEC L5).

A server on 127.0.0.1 either accepts a connection at once or is not running (or is
wedged, its queue full). Waiting the whole call timeout for it, then retrying, turned one
typo'd port into minutes of nothing; :class:`QuickConnect` gives the connection
:data:`LOOPBACK_CONNECT_TIMEOUT_S` instead, whatever timeout the SDK set for the call.
Reading the reply keeps the call's own timeout (a local model may think for minutes),
and ``--max-seconds`` still bounds the whole run.

    httpx2.AsyncClient(transport=QuickConnect()) if is_loopback(base_url) else None
"""

from __future__ import annotations

import ipaddress
from urllib.parse import urlsplit

import httpx2

#: How long a server on this machine may take to accept a connection (seconds, per attempt).
LOOPBACK_CONNECT_TIMEOUT_S = 2.0


def is_loopback(base_url: str | None) -> bool:
    """Whether ``base_url`` names this machine: ``localhost``, 127.0.0.0/8 or ``::1``."""
    try:
        host = urlsplit(base_url).hostname if base_url else None
    except ValueError:
        return False
    if host is None:
        return False
    if host == "localhost" or host.endswith(".localhost"):
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


class QuickConnect(httpx2.AsyncHTTPTransport):
    """Connects within :data:`LOOPBACK_CONNECT_TIMEOUT_S`, whatever timeout the SDK gave
    the call (a per-call timeout replaces the client's, so the cap is applied here)."""

    async def handle_async_request(self, request: httpx2.Request) -> httpx2.Response:
        timeout = dict(request.extensions.get("timeout") or {})
        connect = timeout.get("connect")
        timeout["connect"] = min(connect or LOOPBACK_CONNECT_TIMEOUT_S, LOOPBACK_CONNECT_TIMEOUT_S)
        request.extensions["timeout"] = timeout
        return await super().handle_async_request(request)
