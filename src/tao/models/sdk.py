"""What the provider backends (OpenAI, Anthropic, Gemini) share, so each one only maps.

A provider subclasses :class:`SdkModel` and writes four small things: ``_client`` (its
async SDK client for a :class:`Connection`), ``_call`` (a :class:`ModelRequest` as the
SDK's keyword arguments), ``_send`` (one SDK call, streamed or not, read into a
:class:`ModelReply` through a :class:`Draft`) and ``_failure`` (its SDK's exception as a
provider-neutral :class:`Failure`). This base does the rest, once, for all three:

- the async path; the sync one is derived from it (:mod:`tao.models.bridge`);
- one async client per event loop (an HTTP pool must not outlive its loop);
- ``ModelRequest.timeout_s`` as a bound on the whole call, retries included;
- a server that refuses ``stop``, ``temperature`` or streaming with a 400 naming it:
  the call is made again without it, and the refusal is remembered;
- SDK exceptions turned into one-line :class:`tao.ModelError` (``raise ... from``);
- a server on this machine (a loopback base URL) must accept the connection within
  seconds (:mod:`tao.models.loopback`).

Retries themselves are the SDKs' own (429, 408, 5xx with backoff), set at client creation.
"""

from __future__ import annotations

import asyncio
import dataclasses
import json
import threading
import weakref
from abc import abstractmethod
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from types import ModuleType
from typing import Any, Generic, Literal, TypedDict, TypeVar

import httpx2

from tao.errors import ModelError, ModelUnreachableError
from tao.models import pricing
from tao.models.base import Message, ModelReply, ModelRequest, OnText, ToolCall
from tao.models.bridge import AsyncFirstModel
from tao.models.loopback import QuickConnect, is_loopback
from tao.state.jsontypes import JSON, JSONObject

Client = TypeVar("Client")
Item = TypeVar("Item")

#: How long one call may take when the request does not say (seconds, per attempt).
DEFAULT_TIMEOUT_S = 120.0
#: How often the SDK retries a rate limit, a timeout or a server error.
DEFAULT_MAX_RETRIES = 3


class Options(TypedDict, total=False):
    """The keywords every provider backend takes, beside the model name."""

    #: A proxy, a compatible server or a test server instead of the provider's API.
    base_url: str | None
    #: The key; else the provider's environment variable.
    api_key: str | None
    #: How long one attempt may take (the SDK's client timeout).
    timeout_s: float
    #: How often the SDK retries a rate limit, a timeout or a server error.
    max_retries: int


@dataclass(frozen=True, slots=True)
class Connection:
    """Where and how a provider backend reaches its API, resolved from :class:`Options`."""

    base_url: str | None
    api_key: str
    timeout_s: float = DEFAULT_TIMEOUT_S
    max_retries: int = DEFAULT_MAX_RETRIES

    @classmethod
    def of(cls, options: Options, base_url: str | None, api_key: str) -> Connection:
        return cls(
            base_url,
            api_key,
            options.get("timeout_s", DEFAULT_TIMEOUT_S),
            options.get("max_retries", DEFAULT_MAX_RETRIES),
        )


@dataclass(frozen=True, slots=True)
class SdkCall:
    """One SDK call: its keyword arguments, and what in it a server may refuse."""

    #: Keyword arguments for the SDK method; their types are the SDK's to check.
    kwargs: dict[str, Any]
    #: Refusable features this call uses, in the order a refusal is matched against them.
    uses: tuple[str, ...] = ()
    #: Whether the reply streams (text reaches ``on_text`` as it arrives).
    stream: bool = False


@dataclass(frozen=True, slots=True)
class Failure:
    """An SDK exception in provider-neutral terms."""

    kind: Literal["status", "timeout", "connection", "other"]
    message: str
    #: The HTTP status, for ``kind == "status"``.
    status: int = 0

    def refused(self, uses: tuple[str, ...]) -> str | None:
        """The feature a 400 names (``stop``, ``stream``, ...), if the call used it."""
        if self.status != 400:
            return None
        said = self.message.lower()
        return next((feature for feature in uses if feature in said), None)

    def error(self, name: str, where: str) -> ModelError:
        """One clear line naming the backend and what went wrong; a failure another model
        might not have (no connection, a timeout, 404, 408, 429, 5xx) is a
        :class:`ModelUnreachableError`, which fallback models move on from."""
        text, status = self.message, self.status
        if self.kind == "timeout":
            return ModelUnreachableError(f"{name}: {where} timed out")
        if self.kind == "connection":
            return ModelUnreachableError(f"{name}: cannot reach {where} ({text})")
        if self.kind == "other":
            return ModelError(f"{name}: {text}")
        described = {
            401: f"{name}: the API key was rejected ({text})",
            403: f"{name}: permission denied ({text})",
            404: f"{name}: model or endpoint not found ({text})",
            400: f"{name} rejected the request: {text}",
            429: f"{name}: rate limited, retries exhausted ({text})",
        }
        line = described.get(status, f"{name}: server answered {status} ({text})")
        unreachable = status in (404, 408, 429) or status >= 500
        return ModelUnreachableError(line) if unreachable else ModelError(line)


def one_line(text: object) -> str:
    return " ".join(str(text).split())


def stainless_failure(sdk: ModuleType, error: Exception) -> Failure | None:
    """A :class:`Failure` for the Stainless-built SDKs (``openai``, ``anthropic``)."""
    if isinstance(error, sdk.APIStatusError):
        return Failure("status", _api_message(error), status=error.status_code)
    if isinstance(error, sdk.APITimeoutError):
        if isinstance(error.__cause__, httpx2.ConnectTimeout):
            return Failure("connection", "no connection within the connect timeout")
        return Failure("timeout", one_line(error))
    if isinstance(error, sdk.APIConnectionError):
        return Failure("connection", one_line(error))
    if isinstance(error, sdk.APIError):
        return Failure("other", one_line(error))
    return None


def stainless_client(make: Callable[..., Client], connection: Connection) -> Client:
    """An async client of a Stainless-built SDK (``openai.AsyncOpenAI``, ...); a server on
    this machine gets an HTTP client that connects quickly (:class:`QuickConnect`)."""
    quick = is_loopback(connection.base_url)
    return make(
        base_url=connection.base_url,
        api_key=connection.api_key,
        timeout=connection.timeout_s,
        max_retries=connection.max_retries,
        http_client=httpx2.AsyncClient(transport=QuickConnect(), follow_redirects=True)
        if quick
        else None,
    )


def _api_message(error: object) -> str:
    """The server's own message inside an SDK error, else the error's text."""
    body = getattr(error, "body", None)
    if isinstance(body, dict):
        inner = body.get("error", body)
        if isinstance(inner, dict) and inner.get("message"):
            return one_line(inner["message"])
    return one_line(getattr(error, "message", None) or error)


def decode_arguments(raw: JSON) -> JSONObject:
    """The JSON object a model wrote as arguments; ``{}`` if it is not one (never raises).

    History from the loop holds JSON text; a hand-written one may hold the object itself.
    """
    if isinstance(raw, dict):
        return raw
    try:
        value = json.loads(raw) if isinstance(raw, str) and raw.strip() else {}
    except ValueError:
        return {}
    return value if isinstance(value, dict) else {}


def content_text(content: object) -> str:
    """Message content as plain text; OpenAI-style lists of parts keep their text parts."""
    if content is None:
        return ""
    if isinstance(content, list):
        return "".join(str(p.get("text", "")) for p in content if isinstance(p, dict))
    return str(content)


class History(Generic[Item]):
    """A provider's history being built from the loop's OpenAI-shaped messages.

    System messages are set apart (both Anthropic and Gemini take them as one
    parameter); consecutive turns of one role merge, since roles must alternate.
    """

    def __init__(self) -> None:
        self.system: list[str] = []
        self.turns: list[tuple[str, list[Item]]] = []

    def read(self, messages: Sequence[Message]) -> Iterator[tuple[str, str, Message]]:
        """``(role, text, message)`` of each message to translate; system text is set apart."""
        for message in messages:
            role, text = message.get("role", ""), content_text(message.get("content"))
            if role in ("system", "developer"):
                self.system.append(text)
            else:
                yield role, text, message

    def push(self, role: str, items: list[Item]) -> None:
        if self.turns and self.turns[-1][0] == role:
            self.turns[-1][1].extend(items)
        elif items:
            self.turns.append((role, items))

    @property
    def system_text(self) -> str:
        return "\n\n".join(s for s in self.system if s)


def finish_reason(reason: str | None, has_calls: bool) -> str | None:
    """A provider's stop reason in the OpenAI vocabulary (stop, length, tool_calls, ...)."""
    if reason is None:
        return "tool_calls" if has_calls else None
    key = reason.lower()
    if has_calls and key in {"stop", "end_turn", "tool_use", "tool_calls"}:
        return "tool_calls"
    return FINISH_REASONS.get(key, key)


FINISH_REASONS = {
    "end_turn": "stop",
    "stop_sequence": "stop",
    "max_tokens": "length",
    "tool_use": "tool_calls",
    "refusal": "content_filter",
    "safety": "content_filter",
    "recitation": "content_filter",
    "blocklist": "content_filter",
    "prohibited_content": "content_filter",
    "spii": "content_filter",
}


@dataclass(slots=True)
class Draft:
    """A reply being put together, from one response or chunk by chunk."""

    on_text: OnText | None = None
    texts: list[str] = field(default_factory=list)
    calls: list[ToolCall] = field(default_factory=list)
    finish: str | None = None
    input_tokens: int = 0
    output_tokens: int = 0
    cache_read_tokens: int = 0
    cache_write_tokens: int = 0

    def text(self, piece: str | None) -> None:
        if piece:
            self.texts.append(piece)
            if self.on_text is not None:
                self.on_text(piece)

    def call(self, call_id: str, name: str, raw: str) -> None:
        """A tool call; ``raw`` is the JSON text of its arguments, kept even if it is broken."""
        self.calls.append(ToolCall(call_id, name, decode_arguments(raw), raw))

    def reply(self) -> ModelReply:
        return ModelReply(
            text="".join(self.texts),
            input_tokens=self.input_tokens,
            output_tokens=self.output_tokens,
            finish_reason=finish_reason(self.finish, bool(self.calls)),
            tool_calls=tuple(self.calls),
            cache_read_tokens=self.cache_read_tokens,
            cache_write_tokens=self.cache_write_tokens,
        )


class PerLoop(Generic[Client]):
    """One async SDK client per event loop: an HTTP pool must not outlive its loop.

    The first client is made at once and goes to the first loop that asks: making one
    costs tens of milliseconds (TLS context), which then falls at construction, not
    inside a caller's first (timed) call.
    """

    def __init__(self, make: Callable[[], Client]) -> None:
        self._make = make
        self._spare: Client | None = make()
        self._clients: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, Client] = (
            weakref.WeakKeyDictionary()
        )
        self._lock = threading.Lock()

    def get(self) -> Client:
        loop = asyncio.get_running_loop()
        client = self._clients.get(loop)
        if client is None:
            with self._lock:
                client, self._spare = self._spare, None
            client = self._clients[loop] = client if client is not None else self._make()
        return client


class SdkModel(AsyncFirstModel, Generic[Client]):
    """The shared half of a provider backend; see the module docstring.

    A subclass resolves its SDK and key, then calls ``super().__init__``; the client
    is made by :meth:`_client`, once per event loop, from the :class:`Connection`.
    """

    supports_grammar = False
    supports_tools = True

    def __init__(self, name: str, model: str, connection: Connection, host: str) -> None:
        #: The spec this model was loaded from, e.g. ``"openai:gpt-4o-mini"``.
        self.name = name
        self.model = model
        self.base_url = connection.base_url
        #: Where and how it reaches its API (the window reader asks there too).
        self.connection = connection
        #: The host errors name: the base URL, or the provider's own API host.
        self.where = connection.base_url or host
        self.supports_stop = True
        #: Which list price its replies are charged at (:mod:`tao.models.pricing`).
        self.price = pricing.PriceKey(name.partition(":")[0], model, connection.base_url)
        #: Looked up now (the table loads once per process, ~0.3 s), not in a timed call.
        self._cost_known = pricing.known(self.price)
        #: Features the server refused (``stop``, ``stream``, ``temperature``); never sent again.
        self.refused: set[str] = set()
        self._clients = PerLoop(lambda: self._client(connection))

    async def acomplete(self, request: ModelRequest, on_text: OnText | None = None) -> ModelReply:
        try:
            async with asyncio.timeout(request.timeout_s):
                reply = await self._attempts(request, on_text)
        except TimeoutError as error:
            raise ModelUnreachableError(f"{self.name}: {self.where} timed out") from error
        return self._priced(reply)

    def cost_known(self) -> bool:
        """Whether the price table lists this model (``--max-cost`` needs it)."""
        return self._cost_known

    def _priced(self, reply: ModelReply) -> ModelReply:
        """``reply`` with what it cost, from its tokens, cached ones at their own rates."""
        if not self._cost_known:
            return reply  # unknown: ``cost_usd`` stays None
        tokens = pricing.Tokens(
            reply.input_tokens,
            reply.output_tokens,
            reply.cache_read_tokens,
            reply.cache_write_tokens,
        )
        return dataclasses.replace(reply, cost_usd=pricing.cost_usd(self.price, tokens))

    async def _attempts(self, request: ModelRequest, on_text: OnText | None) -> ModelReply:
        client = self._clients.get()
        while True:
            call = self._call(request, on_text is not None and "stream" not in self.refused)
            try:
                reply = await self._send(client, call, on_text if call.stream else None)
            except Exception as error:
                failure = self._failure(error)
                if failure is None:
                    raise
                feature = failure.refused(call.uses)
                if feature is None:
                    raise failure.error(self.name, self.where) from error
                self.refused.add(feature)
                self.supports_stop = "stop" not in self.refused  # the loop cuts (SPEC L3)
                continue
            if on_text is not None and not call.stream and reply.text:
                on_text(reply.text)  # a reply that could not stream arrives in one piece
            return reply

    @abstractmethod
    def _client(self, connection: Connection) -> Client:
        """A new async SDK client (made once per event loop)."""

    @abstractmethod
    def _call(self, request: ModelRequest, stream: bool) -> SdkCall:
        """``request`` as SDK arguments, leaving out what :attr:`refused` names."""

    @abstractmethod
    async def _send(self, client: Client, call: SdkCall, on_text: OnText | None) -> ModelReply:
        """Make the call; when ``call.stream``, text reaches ``on_text`` as it arrives."""

    @abstractmethod
    def _failure(self, error: Exception) -> Failure | None:
        """The SDK's exception as a :class:`Failure`; ``None`` for anything else."""
