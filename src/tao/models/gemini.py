"""Gemini through the official ``google-genai`` SDK (``pip install 'tao[gemini]'``).

Set ``GEMINI_API_KEY`` (or ``GOOGLE_API_KEY``); ``base_url`` (``--base-url``)
points it at a proxy or a test server.

    model = GeminiModel("gemini-3.8-flash")
    reply = model.complete(messages, tools=[ToolSpec("calculator", "...", schema)])

The loop's OpenAI-shaped history is translated here: system messages become the
``system_instruction``, assistant ``tool_calls`` become ``function_call`` parts
and ``tool`` messages ``function_response`` parts (named after the call they
answer). Gemini 3 wants each call's thought signature back: the backend keeps
the ones it received, and sends Google's documented placeholder for calls it
never saw (a history from another model, or a resumed run).
"""

from __future__ import annotations

import json
import os
import uuid
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from tao.errors import ModelError, ModelUnavailableError
from tao.models._common import PerLoop, decode_arguments, finish_reason
from tao.models.base import Completion, Message, OnText, ToolCall, ToolSpec

if TYPE_CHECKING:
    from google.genai import Client
    from google.genai.types import GenerateContentResponse

#: Calls Gemini returned without an id get one with this prefix; it never goes back.
MADE_UP_ID = "tao-call-"
#: Google's documented stand-in for a thought signature the client does not have.
NO_SIGNATURE = b"skip_thought_signature_validator"
#: Gemini accepts at most five stop sequences.
MAX_STOP = 5


class GeminiModel:
    """``generateContent``: native function calling, parallel calls, streaming, async."""

    supports_grammar = False
    supports_tools = True

    def __init__(
        self,
        model: str,
        *,
        base_url: str | None = None,
        api_key: str | None = None,
        timeout_s: float = 120.0,
        max_retries: int = 3,
        retry_delay_s: float = 1.0,
    ) -> None:
        try:
            from google import genai
            from google.genai import errors, types
        except ImportError:
            raise ModelUnavailableError(
                "the google-genai SDK is missing: pip install 'tao[gemini]'"
            ) from None
        api_key = api_key or os.environ.get("GEMINI_API_KEY") or os.environ.get("GOOGLE_API_KEY")
        if not api_key:
            raise ModelUnavailableError("no Gemini API key: set GEMINI_API_KEY (or GOOGLE_API_KEY)")
        self.name = f"gemini:{model}"
        self.model = model
        self.base_url = base_url
        self.supports_stop = True
        self._errors = errors
        self._signatures: dict[str, bytes] = {}
        options = types.HttpOptions(
            base_url=base_url,
            timeout=round(timeout_s * 1000),
            retry_options=types.HttpRetryOptions(
                attempts=max_retries + 1,  # 429, 408 and 5xx, with exponential backoff
                initial_delay=retry_delay_s,
                max_delay=max(retry_delay_s, 30.0 * retry_delay_s),
                jitter=retry_delay_s,
            ),
        )

        def client() -> Client:
            return genai.Client(vertexai=False, api_key=api_key, http_options=options)

        self._client = client()
        self._aclients = PerLoop(client)

    def complete(
        self,
        messages: Sequence[Message],
        *,
        stop: Sequence[str] = (),
        temperature: float = 0.0,
        max_tokens: int | None = None,
        grammar: str | None = None,
        tools: Sequence[ToolSpec] | None = None,
        on_text: OnText | None = None,
    ) -> Completion:
        request = self._request(messages, stop, temperature, max_tokens, tools)
        models = self._client.models
        while True:
            reply = _Reply(self._signatures)
            try:
                if on_text is None:
                    reply.add(models.generate_content(**request), None)
                else:
                    for chunk in models.generate_content_stream(**request):
                        reply.add(chunk, on_text)
                return reply.completion(self.name)
            except Exception as error:
                self._adapt(request, error)

    async def acomplete(
        self,
        messages: Sequence[Message],
        *,
        stop: Sequence[str] = (),
        temperature: float = 0.0,
        max_tokens: int | None = None,
        grammar: str | None = None,
        tools: Sequence[ToolSpec] | None = None,
        on_text: OnText | None = None,
    ) -> Completion:
        request = self._request(messages, stop, temperature, max_tokens, tools)
        models = self._aclients.get().aio.models
        while True:
            reply = _Reply(self._signatures)
            try:
                if on_text is None:
                    reply.add(await models.generate_content(**request), None)
                else:
                    async for chunk in await models.generate_content_stream(**request):
                        reply.add(chunk, on_text)
                return reply.completion(self.name)
            except Exception as error:
                self._adapt(request, error)

    def _request(
        self,
        messages: Sequence[Message],
        stop: Sequence[str],
        temperature: float,
        max_tokens: int | None,
        tools: Sequence[ToolSpec] | None,
    ) -> dict[str, Any]:
        system, contents = to_gemini(messages, self._signatures)
        config: dict[str, Any] = {"temperature": temperature}
        if max_tokens is not None:
            config["max_output_tokens"] = max_tokens
        if stop and self.supports_stop:
            config["stop_sequences"] = list(stop)[:MAX_STOP]
        if system:
            config["system_instruction"] = system
        if tools:
            declarations = [
                {
                    "name": t.name,
                    "description": t.description,
                    "parameters_json_schema": t.parameters,
                }
                for t in tools
            ]
            config["tools"] = [{"function_declarations": declarations}]
            config["automatic_function_calling"] = {"disable": True}
        return {"model": self.model, "contents": contents, "config": config}

    def _adapt(self, request: dict[str, Any], error: Exception) -> None:
        """Drop ``stop_sequences`` if refused, and remember; else one clear line."""
        errors, name = self._errors, self.name
        if not isinstance(error, errors.APIError):
            if type(error).__module__.split(".")[0] in {"httpx", "httpx2", "aiohttp"}:
                where = self.base_url or "generativelanguage.googleapis.com"
                raise ModelError(f"{name}: cannot reach {where} ({error})") from None
            raise error
        config = request["config"]
        said = " ".join(str(error.message or error.details).split())
        if error.code == 400 and "stop_sequences" in config and "stop" in said.lower():
            self.supports_stop = False  # the loop cuts client-side (L3)
            del config["stop_sequences"]
            return
        if error.code == 401 or (error.code == 400 and "api key" in said.lower()):
            raise ModelError(f"{name}: the API key was rejected ({said})") from None
        if error.code == 403:
            raise ModelError(f"{name}: permission denied ({said})") from None
        if error.code == 404:
            raise ModelError(f"{name}: model or endpoint not found ({said})") from None
        if error.code == 429:
            raise ModelError(f"{name}: rate limited, retries exhausted ({said})") from None
        if error.code == 400:
            raise ModelError(f"{name} rejected the request: {said}") from None
        raise ModelError(f"{name}: server answered {error.code} ({said})") from None


def to_gemini(
    messages: Sequence[Message], signatures: dict[str, bytes]
) -> tuple[str, list[dict[str, Any]]]:
    """The loop's OpenAI-shaped history as Gemini's ``system_instruction`` and ``contents``."""
    system: list[str] = []
    contents: list[dict[str, Any]] = []
    names: dict[str, str] = {}  # call id -> function name, for the responses

    def push(role: str, parts: list[dict[str, Any]]) -> None:
        if contents and contents[-1]["role"] == role:
            contents[-1]["parts"].extend(parts)
        elif parts:
            contents.append({"role": role, "parts": parts})

    for message in messages:
        role, text = message.get("role"), _text(message.get("content"))
        if role in ("system", "developer"):
            system.append(text)
        elif role == "tool":
            call_id = str(message.get("tool_call_id", ""))
            answer: dict[str, Any] = {"name": names.get(call_id, ""), "response": {"output": text}}
            if call_id and not call_id.startswith(MADE_UP_ID):
                answer["id"] = call_id
            push("user", [{"function_response": answer}])
        elif role == "assistant":
            parts: list[dict[str, Any]] = [{"text": text}] if text else []
            for index, call in enumerate(message.get("tool_calls") or ()):
                call_id, function = str(call.get("id", "")), call.get("function") or {}
                names[call_id] = function.get("name", "")
                arguments = function.get("arguments")
                if not isinstance(arguments, dict):
                    arguments = decode_arguments(arguments or "")
                part: dict[str, Any] = {
                    "function_call": {"name": names[call_id], "args": arguments}
                }
                if call_id and not call_id.startswith(MADE_UP_ID):
                    part["function_call"]["id"] = call_id
                signature = signatures.get(call_id, NO_SIGNATURE if index == 0 else None)
                if signature:
                    part["thought_signature"] = signature
                parts.append(part)
            push("model", parts)
        elif text:
            push("user", [{"text": text}])
    return "\n\n".join(s for s in system if s), contents


def _text(content: Any) -> str:
    if content is None:
        return ""
    if isinstance(content, list):
        return "".join(str(p.get("text", "")) for p in content if isinstance(p, dict))
    return str(content)


class _Reply:
    """A reply read from one response or assembled from streamed chunks."""

    def __init__(self, signatures: dict[str, bytes]) -> None:
        self.signatures = signatures
        self.text: list[str] = []
        self.calls: list[ToolCall] = []
        self.finish: str | None = None
        self.blocked: str | None = None
        self.input_tokens = self.output_tokens = 0

    def add(self, response: GenerateContentResponse, on_text: OnText | None) -> None:
        if response.usage_metadata is not None:
            usage = response.usage_metadata
            self.input_tokens = usage.prompt_token_count or 0
            self.output_tokens = (usage.candidates_token_count or 0) + (
                usage.thoughts_token_count or 0
            )
        if not response.candidates:
            feedback = response.prompt_feedback
            if feedback is not None and feedback.block_reason is not None:
                self.blocked = str(feedback.block_reason.value)
            return
        candidate = response.candidates[0]
        if candidate.finish_reason is not None:
            self.finish = str(candidate.finish_reason.value)
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
                args = dict(call.args or {})
                raw = json.dumps(args, ensure_ascii=False)
                self.calls.append(ToolCall(call_id, call.name or "", args, raw))
            elif part.text:
                self.text.append(part.text)
                if on_text is not None:
                    on_text(part.text)

    def completion(self, name: str) -> Completion:
        if self.blocked and not self.text and not self.calls:
            raise ModelError(f"{name}: the prompt was blocked ({self.blocked})")
        return Completion(
            text="".join(self.text),
            input_tokens=self.input_tokens,
            output_tokens=self.output_tokens,
            finish_reason=finish_reason(self.finish, bool(self.calls)),
            tool_calls=tuple(self.calls),
        )
