"""OpenAI and every OpenAI-compatible server (vLLM, Ollama, llama.cpp, ``tao serve``).

Real code against the official ``openai`` SDK: set ``OPENAI_API_KEY`` for
OpenAI itself, or pass ``base_url`` (``--base-url`` / ``OPENAI_BASE_URL``) for a
compatible server, where a key is usually not needed.

    model = OpenAIModel("gpt-4o-mini")
    model = OpenAIModel("qwen2.5", base_url="http://127.0.0.1:8000/v1")
    reply = model.complete(messages, tools=[ToolSpec("calculator", "...", schema)])
    reply = await model.acomplete(messages, on_text=print)   # streamed

Native tool calls, parallel calls, streaming (``on_text``) with usage, and an
async twin. A server that refuses ``stop`` (reasoning models) or streaming
(``tao serve`` with tools) is asked again without it, and remembered.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from tao.errors import ModelError, ModelUnavailableError
from tao.models._common import PerLoop, finish_reason, sdk_error, tool_call
from tao.models.base import Completion, Message, OnText, ToolSpec

if TYPE_CHECKING:
    from openai.types.chat import ChatCompletion, ChatCompletionChunk

#: OpenAI accepts at most four stop sequences.
MAX_STOP = 4


class OpenAIModel:
    """Chat completions through the official SDK, with client-side stop when refused."""

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
    ) -> None:
        try:
            import openai
        except ImportError:  # pragma: no cover - openai is a core dependency
            raise ModelUnavailableError("the openai SDK is missing: pip install openai") from None
        base_url = base_url or os.environ.get("OPENAI_BASE_URL") or None
        api_key = api_key or os.environ.get("OPENAI_API_KEY")
        if not api_key:
            if base_url is None:
                raise ModelUnavailableError(
                    "no OpenAI API key: set OPENAI_API_KEY, "
                    "or pass --base-url for a compatible server"
                )
            api_key = "not-needed"  # local servers ignore it; the SDK insists on one
        self.name = f"openai:{model}"
        self.model = model
        self.base_url = base_url
        self.supports_stop = True
        #: False once the server refused a streamed request; on_text then gets whole replies.
        self.supports_streaming = True
        self._openai = openai
        options: dict[str, Any] = {
            "base_url": base_url,
            "api_key": api_key,
            "timeout": timeout_s,
            "max_retries": max_retries,
        }
        self._client = openai.OpenAI(**options)
        self._aclients = PerLoop(lambda: openai.AsyncOpenAI(**options))

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
        request = self._request(messages, stop, temperature, max_tokens, tools, on_text)
        while True:
            try:
                if not request.get("stream"):
                    response = self._client.chat.completions.create(**request)
                    return _whole(self._completion(response), on_text)
                reply = _Reply()
                with self._client.chat.completions.create(**request) as stream:
                    for chunk in stream:
                        reply.add(chunk, on_text)
                return reply.completion()
            except self._openai.OpenAIError as error:
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
        request = self._request(messages, stop, temperature, max_tokens, tools, on_text)
        client = self._aclients.get()
        while True:
            try:
                if not request.get("stream"):
                    response = await client.chat.completions.create(**request)
                    return _whole(self._completion(response), on_text)
                reply = _Reply()
                async with await client.chat.completions.create(**request) as astream:
                    async for chunk in astream:
                        reply.add(chunk, on_text)
                return reply.completion()
            except self._openai.OpenAIError as error:
                self._adapt(request, error)

    def _request(
        self,
        messages: Sequence[Message],
        stop: Sequence[str],
        temperature: float,
        max_tokens: int | None,
        tools: Sequence[ToolSpec] | None,
        on_text: OnText | None,
    ) -> dict[str, Any]:
        request: dict[str, Any] = {
            "model": self.model,
            "messages": list(messages),
            "temperature": temperature,
        }
        if max_tokens is not None:
            # OpenAI's newer models want max_completion_tokens; compatible servers max_tokens.
            request["max_tokens" if self.base_url else "max_completion_tokens"] = max_tokens
        if stop and self.supports_stop:
            request["stop"] = list(stop)[:MAX_STOP]
        if tools:
            request["tools"] = [
                {
                    "type": "function",
                    "function": {
                        "name": t.name,
                        "description": t.description,
                        "parameters": t.parameters,
                    },
                }
                for t in tools
            ]
        if on_text is not None and self.supports_streaming:
            request["stream"] = True
            request["stream_options"] = {"include_usage": True}
        return request

    def _adapt(self, request: dict[str, Any], error: Exception) -> None:
        """Drop what a server refused (``stop``, streaming) and remember; else raise."""
        if isinstance(error, self._openai.BadRequestError):
            said = str(error).lower()
            if "stop" in request and "stop" in said:
                # Reasoning models reject `stop`: remember; the loop cuts client-side (L3).
                self.supports_stop = False
                del request["stop"]
                return
            if request.get("stream") and "stream" in said:
                self.supports_streaming = False
                del request["stream"], request["stream_options"]
                return
        raise sdk_error(self._openai, self.name, self.base_url or "api.openai.com", error) from None

    def _completion(self, response: ChatCompletion) -> Completion:
        if not response.choices:
            raise ModelError(f"{self.name} returned no choices")
        choice = response.choices[0]
        calls = tuple(
            tool_call(c.id, c.function.name, c.function.arguments or "")
            for c in choice.message.tool_calls or ()
            if c.type == "function"
        )
        usage = response.usage
        return Completion(
            text=choice.message.content or "",
            input_tokens=usage.prompt_tokens if usage else 0,
            output_tokens=usage.completion_tokens if usage else 0,
            finish_reason=finish_reason(choice.finish_reason, bool(calls)),
            tool_calls=calls,
        )


def _whole(completion: Completion, on_text: OnText | None) -> Completion:
    """A reply that could not stream reaches ``on_text`` in one piece."""
    if on_text is not None and completion.text:
        on_text(completion.text)
    return completion


class _Reply:
    """A streamed reply assembled chunk by chunk: text, tool calls by index, usage."""

    def __init__(self) -> None:
        self.text: list[str] = []
        self.calls: dict[int, list[str]] = {}  # index -> [id, name, arguments]
        self.finish: str | None = None
        self.input_tokens = self.output_tokens = 0

    def add(self, chunk: ChatCompletionChunk, on_text: OnText | None) -> None:
        if chunk.usage is not None:
            self.input_tokens = chunk.usage.prompt_tokens
            self.output_tokens = chunk.usage.completion_tokens
        for choice in chunk.choices[:1]:
            self.finish = choice.finish_reason or self.finish
            delta = choice.delta
            if delta.content:
                self.text.append(delta.content)
                if on_text is not None:
                    on_text(delta.content)
            for part in delta.tool_calls or ():
                index = part.index if part.index is not None else len(self.calls)
                call = self.calls.setdefault(index, ["", "", ""])
                call[0] = part.id or call[0]
                if part.function is not None:
                    call[1] += part.function.name or ""
                    call[2] += part.function.arguments or ""

    def completion(self) -> Completion:
        calls = tuple(
            tool_call(call_id or f"call_{index}", name, arguments)
            for index, (call_id, name, arguments) in sorted(self.calls.items())
        )
        return Completion(
            text="".join(self.text),
            input_tokens=self.input_tokens,
            output_tokens=self.output_tokens,
            finish_reason=finish_reason(self.finish, bool(calls)),
            tool_calls=calls,
        )
