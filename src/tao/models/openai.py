"""OpenAI and every OpenAI-compatible server (vLLM, Ollama, llama.cpp, ``tao serve``).

Real code against the official ``openai`` SDK: set ``OPENAI_API_KEY`` for
OpenAI itself, or pass ``base_url`` (``--base-url`` / ``OPENAI_BASE_URL``) for a
compatible server, where a key is usually not needed.

    model = OpenAIModel("gpt-4o-mini")
    model = OpenAIModel("qwen2.5", base_url="http://127.0.0.1:8000/v1")
    reply = model.complete(ModelRequest(messages=messages, tools=[calculator_spec]))
    reply = await model.acomplete(ModelRequest(messages=messages), on_text=print)  # streamed

Native tool calls, parallel calls, streaming (``on_text``) with usage. A server that
refuses ``stop`` (reasoning models) or streaming (``tao serve`` with tools) is asked
again without it, and remembered (:class:`tao.models.sdk.SdkModel`).
"""

from __future__ import annotations

import os
from typing import TYPE_CHECKING, Unpack

from tao.errors import ModelError, ModelUnavailableError
from tao.models import sdk
from tao.models.base import ModelReply, ModelRequest, OnText

if TYPE_CHECKING:
    from openai import AsyncOpenAI
    from openai.types import CompletionUsage
    from openai.types.chat import ChatCompletion, ChatCompletionChunk

#: OpenAI accepts at most four stop sequences.
MAX_STOP = 4


class OpenAIModel(sdk.SdkModel["AsyncOpenAI"]):
    """Chat completions through the official SDK, with client-side stop when refused."""

    def __init__(self, model: str, **options: Unpack[sdk.Options]) -> None:
        try:
            import openai
        except ImportError:  # pragma: no cover - openai is a core dependency
            raise ModelUnavailableError("the openai SDK is missing: pip install openai") from None
        self._openai = openai
        base_url = options.get("base_url") or os.environ.get("OPENAI_BASE_URL") or None
        api_key = options.get("api_key") or os.environ.get("OPENAI_API_KEY")
        if not api_key:
            if base_url is None:
                raise ModelUnavailableError(
                    "no OpenAI API key: set OPENAI_API_KEY, "
                    "or pass --base-url for a compatible server"
                )
            api_key = "not-needed"  # local servers ignore it; the SDK insists on one
        connection = sdk.Connection.of(options, base_url, api_key)
        super().__init__(f"openai:{model}", model, connection, "api.openai.com")

    def _client(self, connection: sdk.Connection) -> AsyncOpenAI:
        return sdk.stainless_client(self._openai.AsyncOpenAI, connection)

    def _call(self, request: ModelRequest, stream: bool) -> sdk.SdkCall:
        kwargs: dict[str, object] = {
            "model": self.model,
            "messages": list(request.messages),
            "temperature": request.temperature,
        }
        uses: list[str] = []
        if request.max_tokens is not None:
            # OpenAI's newer models want max_completion_tokens; compatible servers max_tokens.
            kwargs["max_tokens" if self.base_url else "max_completion_tokens"] = request.max_tokens
        if request.stop and "stop" not in self.refused:
            kwargs["stop"] = list(request.stop)[:MAX_STOP]
            uses.append("stop")
        if request.tools:
            kwargs["tools"] = [
                {
                    "type": "function",
                    "function": {
                        "name": t.name,
                        "description": t.description,
                        "parameters": t.parameters,
                    },
                }
                for t in request.tools
            ]
            if request.require_tool and "tool_choice" not in self.refused:
                kwargs["tool_choice"] = "required"
                uses.append("tool_choice")
        if request.timeout_s is not None:
            kwargs["timeout"] = request.timeout_s
        if request.cache_key and "prompt_cache_key" not in self.refused:
            # Routes a run's requests to the same cache shard: its prefix is read, not re-read.
            kwargs["prompt_cache_key"] = request.cache_key
            uses.append("prompt_cache_key")
        if stream:
            kwargs.update(stream=True, stream_options={"include_usage": True})
            uses.append("stream")
        return sdk.SdkCall(kwargs, tuple(uses), stream)

    async def _send(
        self, client: AsyncOpenAI, call: sdk.SdkCall, on_text: OnText | None
    ) -> ModelReply:
        completions = client.chat.completions
        if not call.stream:
            return self._reply(await completions.create(**call.kwargs))
        chunks = _Chunks(sdk.Draft(on_text))
        async with await completions.create(**call.kwargs) as stream:
            async for chunk in stream:
                chunks.add(chunk)
        return chunks.reply()

    def _failure(self, error: Exception) -> sdk.Failure | None:
        return sdk.stainless_failure(self._openai, error)

    def _reply(self, response: ChatCompletion) -> ModelReply:
        if not response.choices:
            raise ModelError(f"{self.name} returned no choices")
        choice = response.choices[0]
        draft = sdk.Draft(finish=choice.finish_reason)
        draft.text(choice.message.content)
        for call in choice.message.tool_calls or ():
            if call.type == "function":
                draft.call(call.id, call.function.name, call.function.arguments or "")
        _usage(draft, response.usage)
        return draft.reply()


def _usage(draft: sdk.Draft, usage: CompletionUsage | None) -> None:
    if usage is not None:
        draft.input_tokens = usage.prompt_tokens
        draft.output_tokens = usage.completion_tokens
        details = usage.prompt_tokens_details
        draft.cache_read_tokens = (details.cached_tokens or 0) if details is not None else 0


class _Chunks:
    """A streamed reply assembled chunk by chunk: text, tool calls by index, usage."""

    def __init__(self, draft: sdk.Draft) -> None:
        self.draft = draft
        self.calls: dict[int, list[str]] = {}  # index -> [id, name, arguments]

    def add(self, chunk: ChatCompletionChunk) -> None:
        _usage(self.draft, chunk.usage)
        for choice in chunk.choices[:1]:
            self.draft.finish = choice.finish_reason or self.draft.finish
            self.draft.text(choice.delta.content)
            for part in choice.delta.tool_calls or ():
                index = part.index if part.index is not None else len(self.calls)
                call = self.calls.setdefault(index, ["", "", ""])
                call[0] = part.id or call[0]
                if part.function is not None:
                    call[1] += part.function.name or ""
                    call[2] += part.function.arguments or ""

    def reply(self) -> ModelReply:
        for index, (call_id, name, arguments) in sorted(self.calls.items()):
            self.draft.call(call_id or f"call_{index}", name, arguments)
        return self.draft.reply()
