"""Gemini through the official ``google-genai`` SDK (``pip install 'tao[gemini]'``).

Set ``GEMINI_API_KEY`` (or ``GOOGLE_API_KEY``); ``base_url`` (``--base-url``)
points it at a proxy or a test server.

    model = GeminiModel("gemini-3.8-flash")
    reply = model.complete(ModelRequest(messages=messages, tools=[calculator_spec]))

The loop's OpenAI-shaped history is translated here: system messages become the
``system_instruction``, assistant ``tool_calls`` become ``function_call`` parts
and ``tool`` messages ``function_response`` parts (named after the call they
answer). Gemini 3 wants each call's thought signature back: the backend keeps
the ones it received, and sends Google's documented placeholder for calls it
never saw (a history from another model, or a resumed run).

Prompt caching is Gemini's implicit cache: it needs no marker, only a request that
starts with what an earlier one sent, which tao's prompt (it only grows at its end)
always does. The tokens it served are read from ``cached_content_token_count``
into ``ModelReply.cache_read_tokens`` and priced at the cache rate.
"""

from __future__ import annotations

import json
import os
import uuid
from collections.abc import Sequence
from typing import TYPE_CHECKING, TypedDict, Unpack

from tao.errors import ModelError, ModelUnavailableError
from tao.models import sdk
from tao.models.base import Message, ModelReply, ModelRequest, OnText
from tao.models.loopback import QuickConnect, is_loopback

if TYPE_CHECKING:
    from google.genai import Client
    from google.genai.types import GenerateContentResponse

#: Calls Gemini returned without an id get one with this prefix; it never goes back.
MADE_UP_ID = "tao-call-"
#: Google's documented stand-in for a thought signature the client does not have.
NO_SIGNATURE = b"skip_thought_signature_validator"
#: Gemini accepts at most five stop sequences.
MAX_STOP = 5
#: Exceptions of these HTTP libraries mean the server could not be reached.
TRANSPORTS = frozenset({"httpx", "httpx2", "aiohttp"})

#: A part of a Gemini ``Content``; thought signatures are bytes, so this is not JSON.
Part = dict[str, object]


class Content(TypedDict):
    role: str
    parts: list[Part]


class GeminiModel(sdk.SdkModel["Client"]):
    """``generateContent``: native function calling, parallel calls, streaming."""

    def __init__(
        self, model: str, *, retry_delay_s: float = 1.0, **options: Unpack[sdk.Options]
    ) -> None:
        try:
            from google import genai
            from google.genai import errors, types
        except ImportError:
            raise ModelUnavailableError(
                "the google-genai SDK is missing: pip install 'tao[gemini]'"
            ) from None
        self._genai, self._errors, self._types = genai, errors, types
        api_key = (
            options.get("api_key")
            or os.environ.get("GEMINI_API_KEY")
            or os.environ.get("GOOGLE_API_KEY")
        )
        if not api_key:
            raise ModelUnavailableError("no Gemini API key: set GEMINI_API_KEY (or GOOGLE_API_KEY)")
        self.retry_delay_s = retry_delay_s
        self._signatures: dict[str, bytes] = {}
        connection = sdk.Connection.of(options, options.get("base_url"), api_key)
        super().__init__(f"gemini:{model}", model, connection, "generativelanguage.googleapis.com")

    def _client(self, connection: sdk.Connection) -> Client:
        delay, types = self.retry_delay_s, self._types
        options = types.HttpOptions(
            base_url=connection.base_url,
            timeout=round(connection.timeout_s * 1000),
            async_client_args=(
                {"transport": QuickConnect()} if is_loopback(connection.base_url) else None
            ),
            retry_options=types.HttpRetryOptions(
                attempts=connection.max_retries + 1,  # 429, 408 and 5xx, exponential backoff
                initial_delay=delay,
                max_delay=max(delay, 30.0 * delay),
                jitter=delay,
            ),
        )
        return self._genai.Client(vertexai=False, api_key=connection.api_key, http_options=options)

    def _call(self, request: ModelRequest, stream: bool) -> sdk.SdkCall:
        system, contents = to_gemini(request.messages, self._signatures)
        config: dict[str, object] = {"temperature": request.temperature}
        uses: list[str] = []
        if request.max_tokens is not None:
            config["max_output_tokens"] = request.max_tokens
        if request.stop and "stop" not in self.refused:
            config["stop_sequences"] = list(request.stop)[:MAX_STOP]
            uses.append("stop")
        if system:
            config["system_instruction"] = system
        if request.tools:
            declarations = [
                {
                    "name": t.name,
                    "description": t.description,
                    "parameters_json_schema": t.parameters,
                }
                for t in request.tools
            ]
            config["tools"] = [{"function_declarations": declarations}]
            config["automatic_function_calling"] = {"disable": True}
        if request.timeout_s is not None:
            config["http_options"] = {"timeout": round(request.timeout_s * 1000)}
        kwargs: dict[str, object] = {"model": self.model, "contents": contents, "config": config}
        return sdk.SdkCall(kwargs, tuple(uses), stream)

    async def _send(self, client: Client, call: sdk.SdkCall, on_text: OnText | None) -> ModelReply:
        models = client.aio.models
        reply = _Reply(self._signatures, sdk.Draft(on_text))
        if not call.stream:
            reply.add(await models.generate_content(**call.kwargs))
        else:
            async for chunk in await models.generate_content_stream(**call.kwargs):
                reply.add(chunk)
        return reply.reply(self.name)

    def _failure(self, error: Exception) -> sdk.Failure | None:
        if isinstance(error, self._errors.APIError):
            said = sdk.one_line(error.message or error.details)
            status = error.code
            if status == 400 and "api key" in said.lower():
                status = 401  # Gemini answers a bad key with 400
            return sdk.Failure("status", said, status=status)
        if type(error).__module__.split(".")[0] in TRANSPORTS:
            kind = type(error).__name__
            if kind == "ConnectTimeout":
                return sdk.Failure("connection", "no connection within the connect timeout")
            said = sdk.one_line(error)
            return sdk.Failure("timeout" if "Timeout" in kind else "connection", said)
        return None


def to_gemini(
    messages: Sequence[Message], signatures: dict[str, bytes]
) -> tuple[str, list[Content]]:
    """The loop's OpenAI-shaped history as Gemini's ``system_instruction`` and ``contents``."""
    history = sdk.History[Part]()
    names: dict[str, str] = {}  # call id -> function name, for the responses
    for role, text, message in history.read(messages):
        if role == "tool":
            call_id = str(message.get("tool_call_id", ""))
            answer: Part = {"name": names.get(call_id, ""), "response": {"output": text}}
            if call_id and not call_id.startswith(MADE_UP_ID):
                answer["id"] = call_id
            history.push("user", [{"function_response": answer}])
        elif role == "assistant":
            parts: list[Part] = [{"text": text}] if text else []
            for index, call in enumerate(message.get("tool_calls") or ()):
                call_id, function = str(call.get("id", "")), call.get("function") or {}
                names[call_id] = function.get("name", "")
                parts.append(_call_part(call_id, names[call_id], function.get("arguments")))
                signature = signatures.get(call_id, NO_SIGNATURE if index == 0 else None)
                if signature:
                    parts[-1]["thought_signature"] = signature
            history.push("model", parts)
        elif text:
            history.push("user", [{"text": text}])
    contents: list[Content] = [{"role": role, "parts": parts} for role, parts in history.turns]
    return history.system_text, contents


def _call_part(call_id: str, name: str, arguments: str | None) -> Part:
    function_call: Part = {"name": name, "args": sdk.decode_arguments(arguments or "")}
    if call_id and not call_id.startswith(MADE_UP_ID):
        function_call["id"] = call_id
    return {"function_call": function_call}


class _Reply:
    """A reply read from one response or assembled from streamed chunks."""

    def __init__(self, signatures: dict[str, bytes], draft: sdk.Draft) -> None:
        self.signatures = signatures
        self.draft = draft
        self.blocked: str | None = None

    def add(self, response: GenerateContentResponse) -> None:
        draft = self.draft
        if response.usage_metadata is not None:
            usage = response.usage_metadata
            draft.input_tokens = usage.prompt_token_count or 0
            draft.output_tokens = (usage.candidates_token_count or 0) + (
                usage.thoughts_token_count or 0
            )
            draft.cache_read_tokens = usage.cached_content_token_count or 0
        if not response.candidates:
            feedback = response.prompt_feedback
            if feedback is not None and feedback.block_reason is not None:
                self.blocked = str(feedback.block_reason.value)
            return
        candidate = response.candidates[0]
        if candidate.finish_reason is not None:
            draft.finish = str(candidate.finish_reason.value)
        parts = candidate.content.parts if candidate.content is not None else None
        for part in parts or ():
            if part.thought:
                continue
            if part.function_call is not None:
                call = part.function_call
                call_id = call.id or f"{MADE_UP_ID}{uuid.uuid4().hex[:12]}"
                if part.thought_signature:
                    if len(self.signatures) > 10_000:
                        self.signatures.clear()
                    self.signatures[call_id] = part.thought_signature
                raw = json.dumps(dict(call.args or {}), ensure_ascii=False)
                draft.call(call_id, call.name or "", raw)
            else:
                draft.text(part.text)

    def reply(self, name: str) -> ModelReply:
        if self.blocked and not self.draft.texts and not self.draft.calls:
            raise ModelError(f"{name}: the prompt was blocked ({self.blocked})")
        return self.draft.reply()
