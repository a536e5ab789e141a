"""Claude through the official ``anthropic`` SDK (``pip install 'tao[anthropic]'``).

Set ``ANTHROPIC_API_KEY``; ``base_url`` (``--base-url`` / ``ANTHROPIC_BASE_URL``)
points it at a proxy or a test server.

    model = AnthropicModel("claude-sonnet-5")
    reply = model.complete(ModelRequest(messages=messages, tools=[calculator_spec]))

The loop's OpenAI-shaped history is translated here: system messages become the
``system`` parameter, assistant ``tool_calls`` become ``tool_use`` blocks, and
consecutive ``tool`` messages one user turn of ``tool_result`` blocks. Models
that refuse ``temperature`` or ``stop_sequences`` are asked again without it.

Prompt caching: tao's prompt only grows at its end, so each request marks three
``cache_control`` breakpoints (:func:`cache_breakpoints`): the end of the system
prompt (instructions and few-shot examples), the end of the tools, and the end of the
transcript. The next step then reads everything before its new turn from the cache.
"""

from __future__ import annotations

import json
import os
from collections.abc import Sequence
from typing import TYPE_CHECKING, TypedDict, Unpack

from tao.errors import ModelUnavailableError
from tao.models import sdk
from tao.models.base import Message, ModelReply, ModelRequest, OnText
from tao.state.jsontypes import JSONObject

if TYPE_CHECKING:
    from anthropic import AsyncAnthropic
    from anthropic.types import Message as AnthropicMessage

#: Anthropic requires ``max_tokens``; this is used when the loop sets none.
DEFAULT_MAX_TOKENS = 1024


class Turn(TypedDict):
    """One entry of the Messages API's ``messages``: roles alternate, content is blocks."""

    role: str
    content: list[JSONObject]


class AnthropicModel(sdk.SdkModel["AsyncAnthropic"]):
    """The Messages API: native tool use, parallel calls, streaming."""

    def __init__(
        self, model: str, *, max_tokens: int = DEFAULT_MAX_TOKENS, **options: Unpack[sdk.Options]
    ) -> None:
        try:
            import anthropic
        except ImportError:
            raise ModelUnavailableError(
                "the anthropic SDK is missing: pip install 'tao[anthropic]'"
            ) from None
        self._anthropic = anthropic
        api_key = options.get("api_key") or os.environ.get("ANTHROPIC_API_KEY")
        if not api_key:
            raise ModelUnavailableError("no Anthropic API key: set ANTHROPIC_API_KEY")
        base_url = options.get("base_url") or os.environ.get("ANTHROPIC_BASE_URL") or None
        self.max_tokens = max_tokens
        connection = sdk.Connection.of(options, base_url, api_key)
        super().__init__(f"anthropic:{model}", model, connection, "api.anthropic.com")

    def _client(self, connection: sdk.Connection) -> AsyncAnthropic:
        return sdk.stainless_client(self._anthropic.AsyncAnthropic, connection)

    def _call(self, request: ModelRequest, stream: bool) -> sdk.SdkCall:
        system, turns = to_anthropic(request.messages)
        kwargs: dict[str, object] = {
            "model": self.model,
            "max_tokens": request.max_tokens or self.max_tokens,
            "messages": turns,
        }
        uses: list[str] = []
        blocks: list[JSONObject] = [{"type": "text", "text": system}] if system else []
        tools: list[JSONObject] = [
            {"name": t.name, "description": t.description, "input_schema": t.parameters}
            for t in request.tools or ()
        ]
        if "cache_control" not in self.refused:
            cache_breakpoints(blocks, tools, turns)
            uses.append("cache_control")
        if blocks:
            kwargs["system"] = blocks
        if "temperature" not in self.refused:
            # The SDK dropped `temperature` from its signature; the API takes it for most models.
            kwargs["extra_body"] = {"temperature": request.temperature}
            uses.append("temperature")
        if request.stop and "stop" not in self.refused:
            kwargs["stop_sequences"] = list(request.stop)
            uses.append("stop")
        if tools:
            kwargs["tools"] = tools
        if request.timeout_s is not None:
            kwargs["timeout"] = request.timeout_s
        return sdk.SdkCall(kwargs, tuple(uses), stream)

    async def _send(
        self, client: AsyncAnthropic, call: sdk.SdkCall, on_text: OnText | None
    ) -> ModelReply:
        if not call.stream:
            return _reply(await client.messages.create(**call.kwargs))
        async with client.messages.stream(**call.kwargs) as stream:
            async for text in stream.text_stream:
                if on_text is not None:
                    on_text(text)
            return _reply(await stream.get_final_message())

    def _failure(self, error: Exception) -> sdk.Failure | None:
        return sdk.stainless_failure(self._anthropic, error)


def to_anthropic(messages: Sequence[Message]) -> tuple[str, list[Turn]]:
    """The loop's OpenAI-shaped history as Anthropic's ``system`` and ``messages``."""
    history = sdk.History[JSONObject]()
    for role, text, message in history.read(messages):
        if role == "tool":
            call_id = message.get("tool_call_id", "")
            result: JSONObject = {"type": "tool_result", "tool_use_id": call_id, "content": text}
            history.push("user", [result])
            continue
        blocks: list[JSONObject] = [{"type": "text", "text": text}] if text.strip() else []
        calls = message.get("tool_calls") if role == "assistant" else None
        for call in calls or ():
            function = call.get("function") or {}
            blocks.append(
                {
                    "type": "tool_use",
                    "id": call.get("id", ""),
                    "name": function.get("name", ""),
                    "input": sdk.decode_arguments(function.get("arguments") or ""),
                }
            )
        history.push("assistant" if role == "assistant" else "user", blocks)
    turns: list[Turn] = [{"role": role, "content": blocks} for role, blocks in history.turns]
    return history.system_text, turns


#: What a breakpoint says: cache everything up to here, for the default five minutes.
EPHEMERAL: JSONObject = {"type": "ephemeral"}


def cache_breakpoints(system: list[JSONObject], tools: list[JSONObject], turns: list[Turn]) -> None:
    """Mark the stable prefix and the growing transcript for Anthropic's prompt cache.

    At most three of the four breakpoints the API allows: the last system block (the
    instructions and few-shot examples never change within a run), the last tool (the
    tools come before the system prompt in the cached prefix), and the last block of the
    last turn (the transcript only grows, so the next step's prefix is this whole
    request). A prefix shorter than the model's minimum is simply not cached.
    """
    for blocks in (system, tools, turns[-1]["content"] if turns else []):
        if blocks:
            blocks[-1]["cache_control"] = EPHEMERAL


def _reply(message: AnthropicMessage) -> ModelReply:
    draft = sdk.Draft(finish=message.stop_reason)
    for block in message.content:
        if block.type == "text":
            draft.text(block.text)
        elif block.type == "tool_use":
            draft.call(block.id, block.name, json.dumps(block.input, ensure_ascii=False))
    usage = message.usage
    draft.input_tokens = (
        usage.input_tokens
        + (usage.cache_creation_input_tokens or 0)
        + (usage.cache_read_input_tokens or 0)
    )
    draft.output_tokens = usage.output_tokens
    draft.cache_read_tokens = usage.cache_read_input_tokens or 0
    draft.cache_write_tokens = usage.cache_creation_input_tokens or 0
    return draft.reply()
