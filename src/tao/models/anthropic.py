"""Claude through the official ``anthropic`` SDK (``pip install 'tao[anthropic]'``).

Set ``ANTHROPIC_API_KEY``; ``base_url`` (``--base-url`` / ``ANTHROPIC_BASE_URL``)
points it at a proxy or a test server.

    model = AnthropicModel("claude-sonnet-5")
    reply = model.complete(messages, tools=[ToolSpec("calculator", "...", schema)])

The loop's OpenAI-shaped history is translated here: system messages become the
``system`` parameter, assistant ``tool_calls`` become ``tool_use`` blocks, and
consecutive ``tool`` messages one user turn of ``tool_result`` blocks. Models
that refuse ``temperature`` or ``stop_sequences`` are asked again without it.
"""

from __future__ import annotations

import json
import os
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from tao.errors import ModelUnavailableError
from tao.models._common import PerLoop, decode_arguments, finish_reason, sdk_error
from tao.models.base import Completion, Message, OnText, ToolCall, ToolSpec

if TYPE_CHECKING:
    from anthropic.types import Message as AnthropicMessage

#: Anthropic requires ``max_tokens``; this is used when the loop sets none.
DEFAULT_MAX_TOKENS = 1024


class AnthropicModel:
    """The Messages API: native tool use, parallel calls, streaming, async."""

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
        max_tokens: int = DEFAULT_MAX_TOKENS,
    ) -> None:
        try:
            import anthropic
        except ImportError:
            raise ModelUnavailableError(
                "the anthropic SDK is missing: pip install 'tao[anthropic]'"
            ) from None
        api_key = api_key or os.environ.get("ANTHROPIC_API_KEY")
        if not api_key:
            raise ModelUnavailableError("no Anthropic API key: set ANTHROPIC_API_KEY")
        self.name = f"anthropic:{model}"
        self.model = model
        self.base_url = base_url or os.environ.get("ANTHROPIC_BASE_URL") or None
        self.max_tokens = max_tokens
        self.supports_stop = True
        #: False once the model refused ``temperature`` (newer Claude models do).
        self.supports_temperature = True
        self._anthropic = anthropic
        options: dict[str, Any] = {
            "api_key": api_key,
            "base_url": self.base_url,
            "timeout": timeout_s,
            "max_retries": max_retries,
        }
        self._client = anthropic.Anthropic(**options)
        self._aclients = PerLoop(lambda: anthropic.AsyncAnthropic(**options))

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
        while True:
            try:
                if on_text is None:
                    return _completion(self._client.messages.create(**request))
                with self._client.messages.stream(**request) as stream:
                    for text in stream.text_stream:
                        on_text(text)
                    return _completion(stream.get_final_message())
            except self._anthropic.AnthropicError as error:
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
        client = self._aclients.get()
        while True:
            try:
                if on_text is None:
                    return _completion(await client.messages.create(**request))
                async with client.messages.stream(**request) as stream:
                    async for text in stream.text_stream:
                        on_text(text)
                    return _completion(await stream.get_final_message())
            except self._anthropic.AnthropicError as error:
                self._adapt(request, error)

    def _request(
        self,
        messages: Sequence[Message],
        stop: Sequence[str],
        temperature: float,
        max_tokens: int | None,
        tools: Sequence[ToolSpec] | None,
    ) -> dict[str, Any]:
        system, turns = to_anthropic(messages)
        request: dict[str, Any] = {
            "model": self.model,
            "max_tokens": max_tokens or self.max_tokens,
            "messages": turns,
        }
        if system:
            request["system"] = system
        if stop and self.supports_stop:
            request["stop_sequences"] = list(stop)
        if tools:
            request["tools"] = [
                {"name": t.name, "description": t.description, "input_schema": t.parameters}
                for t in tools
            ]
        if self.supports_temperature:
            # The SDK dropped `temperature` from its signature; the API takes it for most models.
            request["extra_body"] = {"temperature": temperature}
        return request

    def _adapt(self, request: dict[str, Any], error: Exception) -> None:
        """Drop what the model refused (``temperature``, ``stop``) and remember; else raise."""
        if isinstance(error, self._anthropic.BadRequestError):
            said = str(error).lower()
            if "extra_body" in request and "temperature" in said:
                self.supports_temperature = False
                del request["extra_body"]
                return
            if "stop_sequences" in request and "stop" in said:
                self.supports_stop = False  # the loop cuts client-side (L3)
                del request["stop_sequences"]
                return
        raise sdk_error(
            self._anthropic, self.name, self.base_url or "api.anthropic.com", error
        ) from None


def to_anthropic(messages: Sequence[Message]) -> tuple[str, list[dict[str, Any]]]:
    """The loop's OpenAI-shaped history as Anthropic's ``system`` and ``messages``."""
    system: list[str] = []
    turns: list[dict[str, Any]] = []

    def push(role: str, blocks: list[dict[str, Any]]) -> None:
        if turns and turns[-1]["role"] == role:
            turns[-1]["content"].extend(blocks)  # roles must alternate: merge
        elif blocks:
            turns.append({"role": role, "content": blocks})

    for message in messages:
        role, text = message.get("role"), _text(message.get("content"))
        if role in ("system", "developer"):
            system.append(text)
        elif role == "tool":
            call_id = message.get("tool_call_id", "")
            push("user", [{"type": "tool_result", "tool_use_id": call_id, "content": text}])
        else:
            blocks: list[dict[str, Any]] = [{"type": "text", "text": text}] if text.strip() else []
            calls = message.get("tool_calls") if role == "assistant" else None
            for call in calls or ():
                function = call.get("function") or {}
                arguments = function.get("arguments")
                blocks.append(
                    {
                        "type": "tool_use",
                        "id": call.get("id", ""),
                        "name": function.get("name", ""),
                        "input": arguments
                        if isinstance(arguments, dict)
                        else decode_arguments(arguments or ""),
                    }
                )
            push("assistant" if role == "assistant" else "user", blocks)
    return "\n\n".join(s for s in system if s), turns


def _text(content: Any) -> str:
    """Message content as plain text; OpenAI-style lists of parts keep their text parts."""
    if content is None:
        return ""
    if isinstance(content, list):
        return "".join(str(p.get("text", "")) for p in content if isinstance(p, dict))
    return str(content)


def _completion(message: AnthropicMessage) -> Completion:
    text: list[str] = []
    calls: list[ToolCall] = []
    for block in message.content:
        if block.type == "text":
            text.append(block.text)
        elif block.type == "tool_use":
            arguments = block.input if isinstance(block.input, dict) else {}
            raw = json.dumps(block.input, ensure_ascii=False)
            calls.append(ToolCall(block.id, block.name, dict(arguments), raw))
    usage = message.usage
    return Completion(
        text="".join(text),
        input_tokens=usage.input_tokens
        + (usage.cache_creation_input_tokens or 0)
        + (usage.cache_read_input_tokens or 0),
        output_tokens=usage.output_tokens,
        finish_reason=finish_reason(message.stop_reason, bool(calls)),
        tool_calls=tuple(calls),
    )
