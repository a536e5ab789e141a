"""The gate in front of both local servers, ``tao serve`` and ``tao ui`` (SPEC S9).

An ASGI middleware that every request passes before any route sees it:

1. ``Host`` must be a loopback name (``127.0.0.1``, ``localhost``, ``[::1]``, any port) or
   exactly the address the server was told to bind. Anything else, ``Host: evil.example``
   after a DNS rebinding, is refused (403) before a byte of the run log or the model is used.
2. A state-changing request (POST, PUT, PATCH, DELETE) from a browser must come from this
   very origin: a foreign or ``null`` ``Origin``, or ``Sec-Fetch-Site`` other than
   ``same-origin``/``none``, is refused (403). A request without ``Origin`` is taken only as
   JSON, which no cross-site page can send without a CORS preflight this server never grants.
3. Its body must be one of the media types the server takes (``application/json``, and for
   the web page's forms ``application/x-www-form-urlencoded``), in UTF-8; anything else is 415.
4. The body is read here, bounded while it streams (413 as soon as it passes the limit, or at
   once from ``Content-Length``) and in time (408 when it does not arrive), then handed on.
5. Every response gets the security headers (no sniffing, no framing, no referrer leaks).

    app = Guard(routes, policy=Policy(names=allowed_names("127.0.0.1"), ...))
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import anyio
from starlette.datastructures import Headers
from starlette.responses import Response
from starlette.types import ASGIApp, Message, Receive, Scope, Send

__all__ = [
    "FORM",
    "JSON_TYPE",
    "LOOPBACK_NAMES",
    "Guard",
    "Policy",
    "allowed_names",
    "host_name",
]

#: The names a loopback server answers to, whatever its port.
LOOPBACK_NAMES = frozenset({"127.0.0.1", "localhost", "[::1]"})
#: Addresses that mean "every interface": never a name a browser should be trusted under.
_WILDCARDS = frozenset({"", "0.0.0.0", "::", "[::]"})  # noqa: S104 - names, not a bind
JSON_TYPE = "application/json"
FORM = "application/x-www-form-urlencoded"
_UNSAFE_METHODS = frozenset({"POST", "PUT", "PATCH", "DELETE"})
_SAME_SITE = frozenset({"same-origin", "none"})

#: Renders a refusal in the server's own shape (OpenAI JSON error, an HTML page).
Refuse = Callable[[int, str], Response]


def allowed_names(bind_host: str) -> frozenset[str]:
    """The loopback names, plus ``bind_host`` itself when it names one address."""
    host = bind_host.strip().lower()
    if host in _WILDCARDS:
        return LOOPBACK_NAMES
    return LOOPBACK_NAMES | {f"[{host}]" if ":" in host else host}


def host_name(value: str) -> str | None:
    """The name of a ``Host`` value ``name[:port]`` (lower case), or ``None`` if malformed."""
    value = value.lower()
    if value.startswith("["):
        end = value.find("]")
        name, rest = (value[: end + 1], value[end + 1 :]) if end > 0 else ("", "")
    else:
        name, colon, port = value.partition(":")
        rest = colon + port
    if not name or (rest and not _is_port(rest[1:] if rest[0] == ":" else "x")):
        return None
    return name


def _is_port(text: str) -> bool:
    return text.isascii() and text.isdigit() and len(text) <= 5 and int(text) <= 65535


@dataclass(frozen=True, slots=True, kw_only=True)
class Policy:
    """What one server accepts."""

    #: Host names answered (see :func:`allowed_names`).
    names: frozenset[str]
    #: Media types a state-changing request may carry.
    media_types: frozenset[str] = frozenset({JSON_TYPE})
    #: Largest request body, in bytes.
    max_body: int = 1024 * 1024
    #: Seconds a client has to send the whole body.
    body_timeout: float = 15.0
    #: Added to every response (those the route set itself win).
    headers: tuple[tuple[str, str], ...] = ()
    refuse: Refuse


class _Refused(Exception):
    def __init__(self, status: int, message: str) -> None:
        super().__init__(message)
        self.status = status
        self.message = message


class Guard:
    """The ASGI middleware; see the module's docstring for what it checks, in order."""

    def __init__(self, app: ASGIApp, *, policy: Policy) -> None:
        self.app = app
        self.policy = policy
        self._extra = [
            (k.lower().encode("latin-1"), v.encode("latin-1")) for k, v in policy.headers
        ]

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            if scope["type"] == "lifespan":
                await self.app(scope, receive, send)
            return  # no websockets here
        send = self._with_headers(send)
        try:
            self._check_host(Headers(scope=scope))
            if scope["method"] in _UNSAFE_METHODS:
                receive = await self._checked_body(scope, receive)
        except _Refused as refused:
            response = self.policy.refuse(refused.status, refused.message)
            if refused.status in (408, 413):
                response.headers["Connection"] = "close"  # the rest of the body stays unread
            await response(scope, receive, send)
            return
        await self.app(scope, receive, send)

    def _with_headers(self, send: Send) -> Send:
        extra = self._extra

        async def sender(message: Message) -> None:
            if message["type"] == "http.response.start":
                headers = list(message.get("headers", []))
                present = {name.lower() for name, _ in headers}
                headers.extend(item for item in extra if item[0] not in present)
                message = {**message, "headers": headers}
            await send(message)

        return sender

    def _check_host(self, headers: Headers) -> None:
        hosts = headers.getlist("host")
        name = host_name(hosts[0].strip()) if len(hosts) == 1 else None
        if name is None or name not in self.policy.names:
            raise _Refused(403, "this server answers only to 127.0.0.1, localhost and [::1]")

    def _check_origin_and_type(self, scope: Scope, headers: Headers, media_type: str) -> None:
        origins = headers.getlist("origin")
        if len(origins) > 1 or (origins and not self._same_origin(scope, origins[0])):
            raise _Refused(403, "cross-site request refused (Origin)")
        if headers.get("sec-fetch-site", "same-origin").strip().lower() not in _SAME_SITE:
            raise _Refused(403, "cross-site request refused (Sec-Fetch-Site)")
        if media_type not in self.policy.media_types:
            wanted = " or ".join(sorted(self.policy.media_types))
            raise _Refused(415, f"send the body as {wanted} (UTF-8)")
        if not origins and media_type != JSON_TYPE:
            raise _Refused(403, "a form must come from this page (no Origin header)")

    def _same_origin(self, scope: Scope, origin: str) -> bool:
        scheme, sep, rest = origin.strip().lower().partition("://")
        name = host_name(rest) if sep and scheme == "http" and "/" not in rest else None
        if name is None or name not in self.policy.names:
            return False
        server = scope.get("server")
        port = rest.rsplit(":", 1)[1] if rest.rfind(":") > rest.rfind("]") else "80"
        return server is None or int(port) == int(server[1])

    async def _checked_body(self, scope: Scope, receive: Receive) -> Receive:
        headers = Headers(scope=scope)
        media_type = _media_type(headers.get("content-type", ""))
        self._check_origin_and_type(scope, headers, media_type)
        length = headers.get("content-length")
        if length is not None and length.strip().isdigit() and int(length) > self.policy.max_body:
            raise _Refused(413, f"request body over {self.policy.max_body} bytes")
        body = await self._read(receive)
        return _replay(body, receive)

    async def _read(self, receive: Receive) -> bytes:
        chunks: list[bytes] = []
        size = 0
        try:
            with anyio.fail_after(self.policy.body_timeout):
                while True:
                    message = await receive()
                    if message["type"] == "http.disconnect":
                        raise _Refused(400, "the client went away")
                    chunk = message.get("body", b"")
                    size += len(chunk)
                    if size > self.policy.max_body:
                        raise _Refused(413, f"request body over {self.policy.max_body} bytes")
                    chunks.append(chunk)
                    if not message.get("more_body", False):
                        return b"".join(chunks)
        except TimeoutError:
            raise _Refused(408, "the request body did not arrive in time") from None


def _media_type(value: str) -> str:
    """``application/json`` of ``application/json; charset=utf-8``; ``""`` if the charset
    is not UTF-8 (the only encoding read)."""
    media, *params = (part.strip().lower() for part in value.split(";"))
    for param in params:
        key, _, charset = param.partition("=")
        if key.strip() == "charset" and charset.strip().strip('"') not in ("utf-8", "utf8"):
            return ""
    return media


def _replay(body: bytes, receive: Receive) -> Receive:
    """A ``receive`` that gives the body read once, then waits for the disconnect."""
    given = False

    async def replay() -> Message:
        nonlocal given
        if given:
            return await receive()
        given = True
        return {"type": "http.request", "body": body, "more_body": False}

    return replay
