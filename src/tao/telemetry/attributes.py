"""What each span says, in the OpenTelemetry GenAI semantic conventions' words.

Plain functions from tao's types to attribute mappings, apart from OpenTelemetry itself
(nothing here imports it). Content (the task, messages, tool arguments and results) is
left out unless ``OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT=true``, as the
conventions ask; when it is in, it is redacted first (SPEC S5, S8), as everything tao
stores or shows is.
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Mapping, Sequence

from tao.models.backends import BACKENDS
from tao.models.base import Message, ModelReply, ModelRequest
from tao.redact.scan import redact
from tao.redact.structured import redact_json
from tao.state.calls import Ready
from tao.state.jsontypes import JSON, JSONObject
from tao.state.result import RunResult, Step

#: An attribute value as OpenTelemetry takes it.
Value = str | bool | int | float | Sequence[str] | Sequence[int]
Attributes = dict[str, Value]

#: The switch the GenAI conventions name for recording prompts, replies and tool payloads.
CAPTURE_VARIABLE = "OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT"
#: ``gen_ai.provider.name`` for each model spec prefix, from the backends' records (a custom
#: Model object, or a plugin's model: ``custom``).
PROVIDERS = {backend.prefix: backend.telemetry_name for backend in BACKENDS}
AGENT_NAME = "tao"
#: The longest error text put in a span's status (the rest is in the run log).
MAX_ERROR_CHARS = 300
_ERROR_TYPE = re.compile(r"Error: ([A-Za-z_][\w.]*(?:Error|Exception|Exit)):")


def capture_content() -> bool:
    return os.environ.get(CAPTURE_VARIABLE, "").strip().lower() in ("true", "1", "yes")


def model_names(spec: str) -> tuple[str, str]:
    """``(gen_ai.provider.name, gen_ai.request.model)`` for a model spec."""
    kind, colon, rest = spec.partition(":")
    if kind in PROVIDERS:
        return PROVIDERS[kind], rest or kind
    return "custom", spec if not colon else rest


def run_start(result: RunResult, capture: bool) -> Attributes:
    provider, model = model_names(result.model)
    attributes: Attributes = {
        "gen_ai.operation.name": "invoke_agent",
        "gen_ai.agent.name": AGENT_NAME,
        "gen_ai.conversation.id": result.run_id,
        "gen_ai.provider.name": provider,
        "gen_ai.request.model": model,
        "tao.run.id": result.run_id,
        # A continued run (tao resume) ran before: it has steps, or a duration from its pause.
        "tao.run.resumed": bool(result.steps) or result.duration_s > 0,
    }
    if capture:
        attributes["gen_ai.input.messages"] = _messages([{"role": "user", "content": result.task}])
    return attributes


def run_end(result: RunResult, capture: bool) -> Attributes:
    usage = result.usage
    attributes: Attributes = {
        "tao.run.status": str(result.status),
        "tao.run.steps": len(result.steps),
        "tao.usage.model_calls": usage.model_calls,
        "gen_ai.usage.input_tokens": usage.input_tokens,
        "gen_ai.usage.output_tokens": usage.output_tokens,
    }
    if result.stop_reason is not None:
        attributes["tao.run.stop_reason"] = result.stop_reason
    if result.pending:
        attributes["tao.run.pending_tools"] = [call.tool for call in result.pending]
    if capture and result.answer is not None:
        answer: Message = {"role": "assistant", "content": result.answer}
        attributes["gen_ai.output.messages"] = _messages([answer], "stop")
    return attributes


def step_end(steps: Sequence[Step]) -> Attributes:
    """One turn of the loop: a model reply and the steps it made (parallel calls: several)."""
    first = steps[0]
    attributes: Attributes = {
        "tao.step.kind": str(first.kind),
        "tao.step.calls": len(steps),
        "tao.step.forced": first.forced,
    }
    tools = [step.tool for step in steps if step.tool]
    if tools:
        attributes["tao.step.tools"] = tools
    repeats = [step.repeat_of for step in steps if step.repeat_of is not None]
    if repeats:
        attributes["tao.step.repeat_of"] = repeats
    if first.compactions:  # what was compacted before this turn's request (issue 27)
        attributes["tao.compaction.steps"] = [
            f"{c.first_step}-{c.last_step}" for c in first.compactions
        ]
        attributes["tao.compaction.policy"] = first.compactions[-1].policy
        attributes["tao.compaction.tokens_before"] = first.compactions[0].tokens_before
        attributes["tao.compaction.tokens_after"] = first.compactions[-1].tokens_after
    return attributes


def chat_start(model_spec: str, request: ModelRequest, capture: bool) -> Attributes:
    provider, model = model_names(model_spec)
    attributes: Attributes = {
        "gen_ai.operation.name": "chat",
        "gen_ai.provider.name": provider,
        "gen_ai.request.model": model,
        "gen_ai.request.temperature": request.temperature,
    }
    if request.max_tokens is not None:
        attributes["gen_ai.request.max_tokens"] = request.max_tokens
    if request.stop:
        attributes["gen_ai.request.stop_sequences"] = list(request.stop)
    if capture:
        attributes["gen_ai.input.messages"] = _messages(request.messages)
    return attributes


def chat_end(reply: ModelReply, capture: bool) -> Attributes:
    attributes: Attributes = {
        "gen_ai.usage.input_tokens": reply.input_tokens,
        "gen_ai.usage.output_tokens": reply.output_tokens,
    }
    if reply.finish_reason:
        attributes["gen_ai.response.finish_reasons"] = [reply.finish_reason]
    if reply.evaluated_tokens is not None:
        attributes["tao.usage.evaluated_tokens"] = reply.evaluated_tokens
    if capture:
        calls: list[JSON] = [
            {"type": "tool_call", "id": call.id, "name": call.name, "arguments": call.arguments}
            for call in reply.tool_calls
        ]
        message: JSONObject = {"role": "assistant", "parts": [_text(reply.text), *calls]}
        message["finish_reason"] = reply.finish_reason or "stop"
        attributes["gen_ai.output.messages"] = _dumps([message])
    return attributes


def tool_start(ready: Ready, step: int, capture: bool) -> Attributes:
    attributes: Attributes = {
        "gen_ai.operation.name": "execute_tool",
        "gen_ai.tool.name": ready.tool.name,
        "gen_ai.tool.type": "function",
        "tao.step.index": step,
    }
    if ready.call.call_id:
        attributes["gen_ai.tool.call.id"] = ready.call.call_id
    if ready.tool.effects:
        attributes["tao.tool.effects"] = list(ready.tool.effects)
    if capture:
        attributes["gen_ai.tool.call.arguments"] = _dumps(ready.arguments)
    return attributes


def tool_end(observation: str, capture: bool) -> Attributes:
    return {"gen_ai.tool.call.result": redact(observation)} if capture else {}


def tool_error(observation: str) -> str | None:
    """``error.type`` of a call that failed (its observation is tao's ``Error: ...``)."""
    if not observation.startswith("Error"):
        return None
    named = _ERROR_TYPE.match(observation)
    if named is not None:
        return named.group(1)
    return "timeout" if "did not finish within" in observation else "tool_error"


def error_text(text: str) -> str:
    """An error for a span's status: one line, redacted, short."""
    line = redact(text.strip().splitlines()[0] if text.strip() else text)
    return line if len(line) <= MAX_ERROR_CHARS else line[: MAX_ERROR_CHARS - 1] + "…"


def _messages(messages: Sequence[Message], finish: str | None = None) -> str:
    """Chat messages in the conventions' shape (role and parts), redacted, as JSON text."""
    shaped: list[JSON] = []
    for message in messages:
        parts: list[JSON] = []
        if message.get("content"):
            parts.append(_text(message.get("content") or ""))
        if message.get("role") == "tool":
            parts = [
                {
                    "type": "tool_call_response",
                    "id": message.get("tool_call_id", ""),
                    "response": message.get("content") or "",
                }
            ]
        for call in message.get("tool_calls", []):
            function = call["function"]
            parts.append(
                {
                    "type": "tool_call",
                    "id": call["id"],
                    "name": function["name"],
                    "arguments": function["arguments"],
                }
            )
        entry: JSONObject = {"role": message.get("role", "user"), "parts": parts}
        if finish is not None:
            entry["finish_reason"] = finish
        shaped.append(entry)
    return _dumps(shaped)


def _text(content: str) -> JSONObject:
    return {"type": "text", "content": content}


def _dumps(value: JSON | Mapping[str, JSON]) -> str:
    return json.dumps(redact_json(dict(value) if isinstance(value, Mapping) else value))
